"""The compiled constrained step: applied forces, dynamics, point-constraint rows, the bounded constraint solve
and all four RK4 stages in one call into compiled code (DESIGN.md's pipeline, thesis §2.4.3).

One evaluation at (t, q, q̇), the "dynamic constraints" formulation of :mod:`core.formulations`::

    τ            applied forces of the force elements (springs, joint springs, drag, actuators, point forces,
                 the studio's pull), as generalized forces Jᵀf  ("apply point force", §2.4.3)
    q̈_free      = M⁻¹(τ − b)                  articulated-body algorithm, O(N)
    J, γ, D, Ḋ   rows of the active point constraints (eq. 2.37–2.39, 2.59; :mod:`core.constraints`)
    Y            = M⁻¹Jᵀ, one O(N) ABA solve per row from the same factorization (no mass matrix is formed)
    A F = −B,    A = J Y,  B = J q̈_free + γ + 2κḊ + κ²D             (eq. 2.21–2.24, 2.41)
    q̈          = q̈_free + Y F

A F = −B is solved group by group (constraints that share no tree are independent, eq. 2.41) by the symmetric
eigen-decomposition of A (for a symmetric positive semi-definite A it is its SVD, σ = |λ|), dropping the
smallest kept singular value while a force exceeds its bound (Mitchell's iteration; :mod:`core.solver` holds the
rules and calls the same kernel). The work of every constraint and power source is integrated with the state,
as :class:`core.Simulation` does on its Python path.

Scenes with joint-space constraints, controllers or another formulation take the Python path of
:func:`core.dynamics.evaluate`; everything else steps here (:meth:`core.Simulation.step` chooses).

Tables (built by :class:`CompiledScene` from the model's compiled constraints and force elements; one row each):

- constraints ``ci`` (K x 6) int: kind, link a, link b (−1 world), rows m, first row (−1 if inactive), group;
  ``cf`` (K x 40) float: r_a [0:3], r_b [3:6], the basis E (3 x m, row-major in a 3 x 3 block) [6:15],
  stabilization κ [15], force bound [16], deviation bound [17], moving-nail flag [18], path velocity [19:22],
  amplitude [22:25], frequency [25], phase [26], target velocity of a velocity constraint [27:30]; a dragged
  nail's override (flag, t0, position, velocity) [32:40]. The last two columns of ``ci`` and the override
  change at run time (:meth:`CompiledScene.set_inputs`).
- forces ``fi`` (F x 4) int: kind, link a, link b, dof; ``ff`` (F x 24) float: r_a [0:3], r_b [3:6],
  stiffness, damping, rest, linear, quadratic, value (actuator command), limit [6:13], force [13:16], start,
  stop [16:18], the joint's q index [18].
"""
from __future__ import annotations

import numpy as np

from .aba import aba_accelerations, aba_inertias, aba_solve, aba_velocities, aba_workspace
from .constraints import POINT_VELOCITY
from .forces import ACTUATOR, DRAG, JOINT_SPRING, POINT_FORCE, PULL, SPRING
from .jit import as_f64, inline, motion_x, njit
from .kinematics import fk_kernel, normalize_kernel, qdot_kernel
from .layout import unpack_model
from .points import add_point_force, jacobian_columns, point_state, point_bias

__all__ = ["CompiledScene", "evaluate_kernel", "evaluate_entry", "rk4_kernel", "symmetric_eigen", "solve_groups",
           "point_rows_kernel", "forces_kernel", "eligible"]

# ---- point-constraint rows ------------------------------------------------------------------------------

@njit
def nail_target_kernel(cf, c, t, x, xd, xdd):
    """World position, velocity and acceleration of constraint c's world end at time t (see
    :func:`core.constraints.nail_target`: a dragged nail's override, a prescribed path, or fixed)."""
    if cf[c, 32] != 0.0:
        dt = t - cf[c, 33]
        for a in range(3):
            x[a] = cf[c, 34 + a] + cf[c, 37 + a] * dt
            xd[a] = cf[c, 37 + a]
            xdd[a] = 0.0
    elif cf[c, 18] != 0.0:                                    # n(t) = n0 + v t + a ∘ sin(2π f t + φ)
        w = 2.0 * np.pi * cf[c, 25]
        s, co = np.sin(w * t + cf[c, 26]), np.cos(w * t + cf[c, 26])
        for a in range(3):
            x[a] = cf[c, 3 + a] + cf[c, 19 + a] * t + cf[c, 22 + a] * s
            xd[a] = cf[c, 19 + a] + cf[c, 22 + a] * w * co
            xdd[a] = -cf[c, 22 + a] * w * w * s
    else:
        for a in range(3):
            x[a] = cf[c, 3 + a]
            xd[a] = 0.0
            xdd[a] = 0.0


@njit
def point_rows_kernel(parent, S, v_start, nv_j, R_WL, p_WL, v, a_vp, ci, cf, t,
                      J, gamma, D, D_rate, stab, deviation, deviation_rate, E, P3):
    """Rows of the point constraints (:mod:`core.constraints`): for every constraint its deviation norms, and
    for the active ones (first row ``ci[c, 4] ≥ 0``) their rows of J, γ, D, Ḋ and the stabilization term::

        D = Eᵀ(x_a − x_b),  Ḋ = Eᵀ(ẋ_a − ẋ_b),  J = Eᵀ(J_a − J_b),  γ = Eᵀ(J̇_a q̇ − J̇_b q̇ or n̈)
        stab = 2κḊ + κ²D  (D̈ + 2κḊ + κ²D = 0, eq. 2.21);   velocity constraint: D = Eᵀ(ẋ_a − v), stab = κD

    J's rows must be zero on entry (they are accumulated). ``E`` (3 x 3) and ``P3`` (≥ 6 x 3) are scratch."""
    xa, va, xb, vb, ba, bb = P3[0], P3[1], P3[2], P3[3], P3[4], P3[5]
    for c in range(ci.shape[0]):
        kind, ka, kb, m = ci[c, 0], ci[c, 1], ci[c, 2], ci[c, 3]
        for a in range(3):
            for b in range(3):
                E[a, b] = cf[c, 6 + 3 * a + b]
        ra, rb = cf[c, 0:3], cf[c, 3:6]
        point_state(R_WL, p_WL, v, ka, ra, xa, va)
        if kb >= 0:
            point_state(R_WL, p_WL, v, kb, rb, xb, vb)
        else:
            nail_target_kernel(cf, c, t, xb, vb, bb)
        row = ci[c, 4]
        d2 = 0.0
        dr2 = 0.0
        for b in range(m):
            if kind == POINT_VELOCITY:
                d = E[0, b] * (va[0] - cf[c, 27]) + E[1, b] * (va[1] - cf[c, 28]) + E[2, b] * (va[2] - cf[c, 29])
                dr = 0.0
            else:
                d = E[0, b] * (xa[0] - xb[0]) + E[1, b] * (xa[1] - xb[1]) + E[2, b] * (xa[2] - xb[2])
                dr = E[0, b] * (va[0] - vb[0]) + E[1, b] * (va[1] - vb[1]) + E[2, b] * (va[2] - vb[2])
            d2 += d * d
            dr2 += dr * dr
            if row >= 0:
                D[row + b] = d
                D_rate[row + b] = dr
                lam = cf[c, 15]
                stab[row + b] = lam * d if kind == POINT_VELOCITY else 2.0 * lam * dr + lam * lam * d
        deviation[c] = np.sqrt(d2)
        deviation_rate[c] = np.sqrt(dr2)
        if row < 0:
            continue
        point_bias(R_WL, v, a_vp, ka, ra, ba)
        if kb >= 0:
            point_bias(R_WL, v, a_vp, kb, rb, bb)              # (the world end's n̈ is already in bb)
        for b in range(m):
            gamma[row + b] = E[0, b] * (ba[0] - bb[0]) + E[1, b] * (ba[1] - bb[1]) + E[2, b] * (ba[2] - bb[2])
        jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, E, m, 1.0, J, row)
        if kb >= 0:
            jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, kb, xb, E, m, -1.0, J, row)


# ---- applied forces -------------------------------------------------------------------------------------

@njit
def forces_kernel(parent, S, v_start, nv_j, R_WL, p_WL, v, q, qd, t, fi, ff, tau, power, P3):
    """τ += the generalized forces of the force elements (:mod:`core.forces`); ``power`` (4,) += the power of
    dampers, drag, actuators, external; returns the elastic potential energy (``P3``: ≥ 5 x 3 scratch)."""
    potential = 0.0
    xa, va, xb, vb, f = P3[0], P3[1], P3[2], P3[3], P3[4]
    for e in range(fi.shape[0]):
        kind, ka, kb, dof = fi[e, 0], fi[e, 1], fi[e, 2], fi[e, 3]
        k, c = ff[e, 6], ff[e, 7]
        if kind == SPRING:
            point_state(R_WL, p_WL, v, ka, ff[e, 0:3], xa, va)
            if kb >= 0:
                point_state(R_WL, p_WL, v, kb, ff[e, 3:6], xb, vb)
            else:
                for a in range(3):
                    xb[a] = ff[e, 3 + a]
                    vb[a] = 0.0
            d0, d1, d2 = xa[0] - xb[0], xa[1] - xb[1], xa[2] - xb[2]
            e0, e1, e2 = va[0] - vb[0], va[1] - vb[1], va[2] - vb[2]
            rest = ff[e, 8]
            pd = 0.0
            if rest == 0.0:                                   # zero rest length: f = −k d − c ḋ
                f[0], f[1], f[2] = -k * d0 - c * e0, -k * d1 - c * e1, -k * d2 - c * e2
                potential += 0.5 * k * (d0 * d0 + d1 * d1 + d2 * d2)
                pd = -c * (e0 * e0 + e1 * e1 + e2 * e2)
            else:                                             # f = −(k(ℓ − ℓ0) + c ℓ̇) u
                length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                u0, u1, u2 = 0.0, 0.0, 0.0
                if length > 0:
                    u0, u1, u2 = d0 / length, d1 / length, d2 / length
                ld = e0 * u0 + e1 * u1 + e2 * u2
                s = -k * (length - rest) - c * ld
                f[0], f[1], f[2] = s * u0, s * u1, s * u2
                potential += 0.5 * k * (length - rest) ** 2
                pd = -c * ld * ld
            add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, tau)
            if kb >= 0:
                for a in range(3):
                    f[a] = -f[a]
                add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, kb, xb, f, tau)
            power[0] += pd
        elif kind == JOINT_SPRING:
            x, w = q[int(ff[e, 18])], qd[dof]
            tau[dof] += -k * (x - ff[e, 8]) - c * w
            potential += 0.5 * k * (x - ff[e, 8]) ** 2
            power[0] += -c * w * w
        elif kind == DRAG:
            point_state(R_WL, p_WL, v, ka, ff[e, 0:3], xa, va)
            speed = np.sqrt(va[0] ** 2 + va[1] ** 2 + va[2] ** 2)
            s = -(ff[e, 9] + ff[e, 10] * speed)
            for a in range(3):
                f[a] = s * va[a]
            add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, tau)
            power[1] += s * speed * speed
        elif kind == ACTUATOR:
            u = min(max(ff[e, 11], -ff[e, 12]), ff[e, 12])
            tau[dof] += u
            power[2] += u * qd[dof]
        elif kind == POINT_FORCE:
            if ff[e, 16] <= t < ff[e, 17]:
                point_state(R_WL, p_WL, v, ka, ff[e, 0:3], xa, va)
                for a in range(3):
                    f[a] = ff[e, 13 + a]
                add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, tau)
                power[3] += f[0] * va[0] + f[1] * va[1] + f[2] * va[2]
        elif kind == PULL:                                    # the user's mouse spring: external work
            point_state(R_WL, p_WL, v, ka, ff[e, 0:3], xa, va)
            for a in range(3):
                f[a] = k * (ff[e, 3 + a] - xa[a]) - c * va[a]
            add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, tau)
            power[3] += f[0] * va[0] + f[1] * va[1] + f[2] * va[2]
    return potential


# ---- the constraint solve ---------------------------------------------------------------------------------

@njit
def symmetric_eigen(A, n, lam, Q):
    """A[:n, :n] = Q diag(λ) Qᵀ by cyclic Jacobi rotations (A is overwritten; eigenpairs sorted by |λ|,
    largest first). Jacobi's small eigenvalues are accurate to ~ε‖A‖, as an SVD's are."""
    for a in range(n):
        for b in range(n):
            Q[a, b] = 1.0 if a == b else 0.0
    norm2 = 0.0
    for a in range(n):
        for b in range(n):
            norm2 += A[a, b] * A[a, b]
    for _ in range(100):
        off = 0.0
        for p in range(n):
            for r in range(p + 1, n):
                off += A[p, r] * A[p, r]
        if off <= 1e-32 * norm2 or off == 0.0:
            break
        for p in range(n - 1):
            for r in range(p + 1, n):
                apr = A[p, r]
                if apr == 0.0:
                    continue
                theta = (A[r, r] - A[p, p]) / (2.0 * apr)
                if abs(theta) > 1e150:
                    tt = 0.5 / theta
                else:
                    tt = (1.0 if theta >= 0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                cs = 1.0 / np.sqrt(tt * tt + 1.0)
                sn = tt * cs
                for k in range(n):
                    if k != p and k != r:
                        akp, akr = A[k, p], A[k, r]
                        A[k, p] = cs * akp - sn * akr
                        A[p, k] = A[k, p]
                        A[k, r] = sn * akp + cs * akr
                        A[r, k] = A[k, r]
                A[p, p] -= tt * apr
                A[r, r] += tt * apr
                A[p, r] = 0.0
                A[r, p] = 0.0
                for k in range(n):
                    qkp, qkr = Q[k, p], Q[k, r]
                    Q[k, p] = cs * qkp - sn * qkr
                    Q[k, r] = sn * qkp + cs * qkr
    for a in range(n):
        lam[a] = A[a, a]
    for a in range(n):                                        # selection sort by |λ|, descending
        best = a
        for b in range(a + 1, n):
            if abs(lam[b]) > abs(lam[best]):
                best = b
        if best != a:
            lam[a], lam[best] = lam[best], lam[a]
            for k in range(n):
                Q[k, a], Q[k, best] = Q[k, best], Q[k, a]


@njit
def solve_groups(A, B, ci, cf, n_groups, dls, rcond, rho, F, svals, idx, Ag, Q, lam, QtB, Fg):
    """A F = −B group by group with force bounds (:mod:`core.solver`). Returns ``(rank, dropped, min_kept,
    n_svals)``; ``svals[:n_svals]`` are the singular values of A (all groups, sorted descending). ``idx`` (int),
    ``lam``, ``QtB``, ``Fg`` (m) and ``Ag``, ``Q`` (m x m) are scratch."""
    rank_total, dropped_total, min_kept, ns = 0, 0, np.inf, 0
    for g in range(n_groups):
        n = 0
        for c in range(ci.shape[0]):                          # rows of the group, in constraint order
            if ci[c, 5] == g and ci[c, 4] >= 0:
                for b in range(ci[c, 3]):
                    idx[n] = ci[c, 4] + b
                    n += 1
        if n == 0:
            continue
        for a in range(n):
            for b in range(n):
                Ag[a, b] = A[idx[a], idx[b]]
        symmetric_eigen(Ag, n, lam, Q)
        smax = abs(lam[0])
        k = 0
        if smax > 0:
            for a in range(n):
                if abs(lam[a]) > rcond * smax:
                    k += 1
        rank = k
        for a in range(n):
            s = 0.0
            for b in range(n):
                s += Q[b, a] * B[idx[b]]
            QtB[a] = s
        while True:
            for a in range(n):                                # F = −Q Λ_k⁺ Qᵀ B  (or damped: λ/(λ² + ρ²))
                s = 0.0
                for b in range(k):
                    inv = lam[b] / (lam[b] * lam[b] + rho * rho) if dls else 1.0 / lam[b]
                    s += Q[a, b] * inv * QtB[b]
                Fg[a] = -s
            over = False
            pos = 0
            for c in range(ci.shape[0]):                      # Mitchell: a force beyond its bound?
                if ci[c, 5] != g or ci[c, 4] < 0:
                    continue
                mc = ci[c, 3]
                f2 = 0.0
                for a in range(3):
                    fa = 0.0
                    for b in range(mc):
                        fa += cf[c, 6 + 3 * a + b] * Fg[pos + b]
                    f2 += fa * fa
                if np.sqrt(f2) > cf[c, 16]:
                    over = True
                pos += mc
            if not over or k == 0:
                break
            k -= 1                                            # drop the smallest kept singular value
        for a in range(n):
            F[idx[a]] = Fg[a]
            svals[ns + a] = abs(lam[a])
        ns += n
        rank_total += rank
        dropped_total += rank - k
        if k > 0:
            min_kept = min(min_kept, abs(lam[k - 1]))
    svals[:ns] = np.sort(svals[:ns])[::-1]
    return rank_total, dropped_total, (min_kept if np.isfinite(min_kept) else np.nan), ns


# ---- one evaluation ---------------------------------------------------------------------------------------

@inline
def symmetric_product(J, Y, A):
    """A ← J Y for a product known to be symmetric (J M⁻¹Jᵀ, J Jᵀ): the upper triangle, mirrored."""
    m, nv = J.shape[0], J.shape[1]
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for k in range(nv):
                s += J[a, k] * Y[k, b]
            A[a, b] = s
            A[b, a] = s


@njit
def evaluate_workspace(N, nv, m):
    """Scratch of :func:`evaluate_kernel` for N links, nv dofs and m active constraint rows (allocated once per
    compiled call; an evaluation allocates nothing)."""
    return (aba_workspace(N), np.empty((N, 6)), np.zeros((m, nv)), np.empty((nv, m)), np.empty((m, m)),
            np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(nv), np.empty(nv),
            np.empty((N, 6)), np.empty(nv), np.empty(m), np.empty(max(m, 1)), np.empty((m, m)), np.empty((8, 3)),
            np.empty((3, 3)), np.empty(m, np.int64), np.empty((m, m)), np.empty(m), np.empty(m))


@njit
def evaluate_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity, ws,
                    ci, cf, n_groups, fi, ff, solver, t, q, qd, full,
                    qdd, power, out_F, out_residual, out_svals, out_dev, out_devrate, out_tau, out_scalars):
    """One evaluation (module docstring). Writes q̈ and the powers (K constraint powers F·(J q̇), then dampers,
    drag, actuators, external); with ``full`` also the diagnostics: F and η = A F + B (m), singular values of A
    (m), deviation norms (K), the applied τ (nv) and ``out_scalars`` = (rank, dropped, cutoff, jacobian rank,
    kinetic, gravity, elastic energy, number of singular values). ``solver`` = (dls, rcond, rho,
    rank_tolerance, scale). Returns False if the result is not finite."""
    (aw, a_vp, J, Y, A, B, gamma, D, D_rate, stab, tau, qdd_free, fx, col, eta, sv, Qm, P3, E3, idx, Ag, QtB,
     Fg) = ws
    E, r, R_WL, p_WL, _fx, v, c, pA, IA, U, W, Dinv, u, Ia, G, T3, D6, out6, s6 = aw
    N, nv, K, m = parent.shape[0], qd.shape[0], ci.shape[0], B.shape[0]
    fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL)
    fx[:, :] = 0.0
    aba_velocities(parent, S, v_start, nv_j, E, r, inertia, qd, fx, v, c, pA, s6[0], s6[1])
    tau[:] = 0.0
    pw = power[K:]
    pw[:] = 0.0
    elastic = forces_kernel(parent, S, v_start, nv_j, R_WL, p_WL, v, q, qd, t, fi, ff, tau, pw, P3)
    aba_inertias(parent, S, v_start, nv_j, E, r, inertia, tau, c, pA, IA, U, W, Dinv, u, Ia, G, T3, D6, out6,
                 s6[0], s6[1])
    a0 = s6[2]
    a0[0], a0[1], a0[2] = 0.0, 0.0, 0.0
    a0[3], a0[4], a0[5] = -gravity[0], -gravity[1], -gravity[2]
    aba_accelerations(parent, S, v_start, nv_j, E, r, a0, c, W, Dinv, u, qdd_free, pA, s6[0])
    for k in range(nv):
        qdd[k] = qdd_free[k]
    for k in range(K):
        power[k] = 0.0
    rank, dropped, cutoff, jrank, ns = 0, 0, np.nan, 0, 0
    if m > 0:
        for i in range(N):                                    # velocity-product accelerations (eq. 2.65)
            lam = parent[i]
            if lam < 0:
                for a in range(6):
                    a_vp[i, a] = c[i, a]
            else:
                motion_x(E[i], r[i], a_vp[lam], a_vp[i])
                for a in range(6):
                    a_vp[i, a] += c[i, a]
        J[:, :] = 0.0
    if m > 0 or (full and K > 0):                             # rows; with none active, the deviation norms
        point_rows_kernel(parent, S, v_start, nv_j, R_WL, p_WL, v, a_vp, ci, cf, t,
                          J, gamma, D, D_rate, stab, out_dev, out_devrate, E3, P3)
    if m > 0:
        for j in range(m):                                    # Y = M⁻¹Jᵀ, one O(N) solve per row
            aba_solve(parent, S, v_start, nv_j, E, r, W, Dinv, J[j], col, pA, u, fx, s6[0], s6[1], s6[2])
            for k in range(nv):
                Y[k, j] = col[k]
        for a in range(m):                                    # A = J M⁻¹ Jᵀ,  B = J q̈_free + γ + stab
            s = gamma[a] + stab[a]
            for k in range(nv):
                s += J[a, k] * qdd_free[k]
            B[a] = s
        symmetric_product(J, Y, A)
        rank, dropped, cutoff, ns = solve_groups(A, B, ci, cf, n_groups, solver[0] != 0.0, solver[1], solver[2],
                                                 out_F, sv, idx, Ag, Qm, eta, QtB, Fg)
        for k in range(nv):                                   # q̈ = q̈_free + M⁻¹Jᵀ F
            s = qdd[k]
            for j in range(m):
                s += Y[k, j] * out_F[j]
            qdd[k] = s
        for cc in range(K):                                   # constraint power F·(J q̇)
            row = ci[cc, 4]
            if row < 0:
                continue
            s = 0.0
            for b in range(ci[cc, 3]):
                jq = 0.0
                for k in range(nv):
                    jq += J[row + b, k] * qd[k]
                s += out_F[row + b] * jq
            power[cc] = s
        if full:
            for a in range(m):                                # η = A F + B
                s = B[a]
                for b in range(m):
                    s += A[a, b] * out_F[b]
                out_residual[a] = s
            for a in range(ns):
                out_svals[a] = sv[a]
            for cc in range(K):                               # velocity constraints: Ḋ = J q̈ + γ
                row = ci[cc, 4]
                if row >= 0 and ci[cc, 0] == POINT_VELOCITY:
                    s2 = 0.0
                    for b in range(ci[cc, 3]):
                        s = gamma[row + b]
                        for k in range(nv):
                            s += J[row + b, k] * qdd[k]
                        s2 += s * s
                    out_devrate[cc] = np.sqrt(s2)
            symmetric_product(J, J.T, A)                      # J's rank from J Jᵀ = U Σ² Uᵀ
            symmetric_eigen(A, m, eta, Qm)
            ref = max(np.sqrt(max(eta[0], 0.0)), solver[4])
            if ref > 0:
                for a in range(m):
                    if np.sqrt(max(eta[a], 0.0)) > solver[3] * ref:
                        jrank += 1
    if full:
        for k in range(nv):
            out_tau[k] = tau[k]
        ke = 0.0
        pe = 0.0
        for i in range(N):                                    # ½ vᵀ I v and −m g·c
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += inertia[i, a, b] * v[i, b]
                ke += 0.5 * v[i, a] * s
            mass = inertia[i, 3, 3]
            if mass > 0:
                # centre of mass from the inertia's coupling block m c^ (upper right, [0:3, 3:6])
                cx, cy, cz = inertia[i, 2, 4] / mass, inertia[i, 0, 5] / mass, inertia[i, 1, 3] / mass
                for a in range(3):
                    wa = p_WL[i, a] + R_WL[i, a, 0] * cx + R_WL[i, a, 1] * cy + R_WL[i, a, 2] * cz
                    pe -= mass * gravity[a] * wa
        out_scalars[0], out_scalars[1], out_scalars[2], out_scalars[3] = rank, dropped, cutoff, jrank
        out_scalars[4], out_scalars[5], out_scalars[6], out_scalars[7] = ke, pe, elastic, ns
    ok = True
    for k in range(nv):
        if not np.isfinite(qdd[k]):
            ok = False
    return ok


@inline
def raw_views(raw, nv, K, m):
    """The parts of an evaluation's output buffer (length 2nv + 3K + 3m + 12): ``(q̈ (nv), power (K + 4),
    F (m), residual η (m), singular values (m), deviation (K), deviation rate (K), applied τ (nv), scalars (8))``
    with scalars = (rank, dropped, cutoff, Jacobian rank, kinetic, gravity, elastic energy, number of singular
    values)."""
    o1 = nv + K + 4
    o2 = o1 + 3 * m
    o3 = o2 + 2 * K
    o4 = o3 + nv
    return (raw[0:nv], raw[nv:o1], raw[o1:o1 + m], raw[o1 + m:o1 + 2 * m], raw[o1 + 2 * m:o2], raw[o2:o2 + K],
            raw[o2 + K:o3], raw[o3:o4], raw[o4:o4 + 8])


def raw_size(nv: int, K: int, m: int) -> int:
    return 2 * nv + 3 * K + 3 * m + 12


@inline
def _active_rows(ci):
    m = 0
    for c in range(ci.shape[0]):
        if ci[c, 4] >= 0:
            m += ci[c, 3]
    return m


@njit
def evaluate_entry(ints, floats, ci, cf, n_groups, fi, ff, solver, t, q, qd, raw):
    """One full :func:`evaluate_kernel` call from Python, into ``raw`` (:func:`raw_views`)."""
    parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity = unpack_model(ints, floats)
    nv, K, m = qd.shape[0], ci.shape[0], _active_rows(ci)
    ws = evaluate_workspace(parent.shape[0], nv, m)
    qdd, power, F, res, sv, dev, devr, tau, sc = raw_views(raw, nv, K, m)
    full = np.array([True])[0]                                # a runtime bool, as in rk4_kernel
    return evaluate_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity, ws,
                           ci, cf, n_groups, fi, ff, solver, t, q, qd, full, qdd, power, F, res, sv, dev, devr, tau,
                           sc)


@njit
def rk4_kernel(ints, floats, quat_starts, ci, cf, n_groups, fi, ff, solver, t, q, qd, work, dt, n_steps, have_k1,
               deficient0, raw, state_out):
    """Up to ``n_steps`` classical RK4 steps with the work integrals (``work``: K constraints, then the four
    sources) integrated alongside, every stage an :func:`evaluate_kernel` call and the quaternions renormalized.
    ``raw`` is the evaluation at the start (reused when ``have_k1``); on return it holds the evaluation at the
    end, with its diagnostics; ``state_out`` = (q, q̇, work) after the last good step. Stops early after a step
    that ends with a constraint beyond its deviation bound or a change of the Jacobian's rank deficiency from
    ``deficient0`` (events :class:`core.Simulation` logs), or with a non-finite state or evaluation. Returns
    ``(good steps taken, status)``: status 0 ok, 1 event, 2 not finite (the step after the good ones; ``raw``
    is then not valid)."""
    parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity = unpack_model(ints, floats)
    N, nq, nv, K = parent.shape[0], q.shape[0], qd.shape[0], ci.shape[0]
    m = _active_rows(ci)
    ws = evaluate_workspace(N, nv, m)
    nw = work.shape[0]
    stage = np.empty(raw.shape[0])
    qdd, power, F, res, sv, dev, devr, tau, sc = raw_views(raw, nv, K, m)
    s_qdd, s_power, s_F, s_res, s_sv, s_dev, s_devr, s_tau, s_sc = raw_views(stage, nv, K, m)
    x, v, w = q.copy(), qd.copy(), work.copy()
    kq, kv, kw = np.empty((4, nq)), np.empty((4, nv)), np.empty((4, nw))
    qs, vs = np.empty(nq), np.empty(nv)
    weights = (0.0, 0.5, 0.5, 1.0)
    flags = np.array([False, True])                           # runtime bools: one compiled evaluate_kernel
    stage_only, full = flags[0], flags[1]                     # (literal True/False would compile two)
    taken, status = 0, 0
    tt = t
    for _ in range(n_steps):
        for st in range(4):
            if st == 0:
                qs[:] = x
                vs[:] = v
                if not have_k1:
                    if not evaluate_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia,
                                           gravity, ws, ci, cf, n_groups, fi, ff, solver, tt, qs, vs, stage_only,
                                           qdd, power, s_F, s_res, s_sv, s_dev, s_devr, s_tau, s_sc):
                        return taken, 2
                kv[0, :] = qdd
                kw[0, :] = power
            else:
                h = weights[st] * dt
                for k in range(nq):
                    qs[k] = x[k] + h * kq[st - 1, k]
                for k in range(nv):
                    vs[k] = v[k] + h * kv[st - 1, k]
                normalize_kernel(quat_starts, qs)
                if not evaluate_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia,
                                       gravity, ws, ci, cf, n_groups, fi, ff, solver, tt + h, qs, vs, stage_only,
                                       kv[st], kw[st], s_F, s_res, s_sv, s_dev, s_devr, s_tau, s_sc):
                    return taken, 2
            qdot_kernel(jtype, q_start, v_start, qs, vs, kq[st])
        for k in range(nq):
            x[k] += dt / 6.0 * (kq[0, k] + 2.0 * kq[1, k] + 2.0 * kq[2, k] + kq[3, k])
        for k in range(nv):
            v[k] += dt / 6.0 * (kv[0, k] + 2.0 * kv[1, k] + 2.0 * kv[2, k] + kv[3, k])
        for k in range(nw):
            w[k] += dt / 6.0 * (kw[0, k] + 2.0 * kw[1, k] + 2.0 * kw[2, k] + kw[3, k])
        normalize_kernel(quat_starts, x)
        tt += dt
        finite = True
        for k in range(nq):
            if not np.isfinite(x[k]):
                finite = False
        for k in range(nv):
            if not np.isfinite(v[k]):
                finite = False
        for k in range(nw):
            if not np.isfinite(w[k]):
                finite = False
        if not finite:
            return taken, 2
        if not evaluate_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity, ws,
                               ci, cf, n_groups, fi, ff, solver, tt, x, v, full,
                               qdd, power, F, res, sv, dev, devr, tau, sc):
            return taken, 2                                   # a finite state whose evaluation overflows
        state_out[:nq] = x
        state_out[nq:nq + nv] = v
        state_out[nq + nv:] = w
        taken += 1
        have_k1 = True
        for c in range(K):                                    # events at the step boundary
            if ci[c, 4] >= 0 and dev[c] > cf[c, 17]:
                status = 1
        if m > 0 and (sc[3] < m) != deficient0:
            status = 1
        if status:
            return taken, status
    return taken, status


def eligible(model, formulation: str, controllers) -> bool:
    """Whether a simulation's evaluations can run here: the dynamic-constraints formulation, point constraints
    only (no joint-space constraint), no controllers."""
    from .constraints import JOINT_SPACE
    return (formulation == "dynamic_constraints" and not controllers
            and not any(c.kind == JOINT_SPACE for c in model.constraints))


# ---- tables ---------------------------------------------------------------------------------------------------

def constraint_table(constraints, overrides: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(ci, cf)`` of point constraints (module docstring), all inactive; ``overrides`` are the dragged nails
    (``Simulation.nail_overrides``: name → (t0, position, velocity))."""
    K = len(constraints)
    ci = np.zeros((K, 6), np.int64)
    cf = np.zeros((K, 40))
    for k, c in enumerate(constraints):
        m = c.rows
        ci[k] = (c.kind, c.link_a, c.link_b, m, -1, -1)
        cf[k, 0:3] = c.r_a
        cf[k, 3:6] = c.r_b
        E = np.zeros((3, 3))
        E[:, :m] = c.basis
        cf[k, 6:15] = E.ravel()
        cf[k, 15], cf[k, 16], cf[k, 17] = c.stabilization, c.max_force, c.max_deviation
        if c.path is not None:
            vel, amp, freq, phase = c.path
            cf[k, 18] = 1.0
            cf[k, 19:22], cf[k, 22:25], cf[k, 25], cf[k, 26] = vel, amp, freq, phase
        cf[k, 27:30] = c.target_velocity
        if overrides and c.name in overrides:
            t0, p, v = overrides[c.name]
            cf[k, 32], cf[k, 33], cf[k, 34:37], cf[k, 37:40] = 1.0, t0, p, v
    return ci, cf


def force_table(elements, actuator_values: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(fi, ff)`` of force elements (module docstring); actuators carry their current command."""
    F = len(elements)
    fi = np.zeros((F, 4), np.int64)
    ff = np.zeros((F, 24))
    for k, e in enumerate(elements):
        fi[k] = (e.kind, e.link_a, e.link_b, e.dof)
        if e.r_a is not None:
            ff[k, 0:3] = e.r_a
        if e.r_b is not None:
            ff[k, 3:6] = e.r_b
        value = (actuator_values or {}).get(e.name, e.torque)
        ff[k, 6:13] = (e.stiffness, e.damping, e.rest, e.linear, e.quadratic, value, e.limit)
        if e.force is not None:
            ff[k, 13:16] = e.force
        ff[k, 16], ff[k, 17], ff[k, 18] = e.start, e.stop, e.qdof
    return fi, ff


def active_layout(model, active) -> tuple[np.ndarray, np.ndarray, int, int, float]:
    """``(row_of, group_of, n_groups, m, scale)`` for the active constraints: each one's first row (−1 if
    inactive), its group (constraints that share a tree, by :func:`core.solver.constraint_groups`),
    the number of rows and the largest Jacobian scale (the rank test's floor, :mod:`core.formulations`)."""
    from .constraints import constraint_links
    from .solver import constraint_groups
    K = len(model.constraints)
    row_of = np.full(K, -1, np.int64)
    group_of = np.full(K, -1, np.int64)
    on = [k for k in range(K) if active[k]]
    m, scale = 0, 0.0
    for k in on:
        c = model.constraints[k]
        row_of[k] = m
        m += c.rows
        scale = max(scale, c.jacobian_scale)
    rows = [np.arange(row_of[k], row_of[k] + model.constraints[k].rows) for k in on]
    trees = [{model.root_of(link) for link in constraint_links(model.constraints[k])} for k in on]
    members = constraint_groups(rows, trees)[1] if on else []
    for g, group in enumerate(members):
        for j in group:
            group_of[on[j]] = g
    return row_of, group_of, len(members), m, scale


class CompiledScene:
    """A model's tables for the compiled evaluation and step, and the run-time inputs they carry (active
    constraints, dragged nails, actuator commands, the pull, solver settings). :class:`core.Simulation` keeps one
    and calls :meth:`evaluate` and :meth:`step`; an evaluation's result is one flat ``raw`` buffer
    (:func:`raw_views`), turned into a :class:`core.dynamics.Data` by :meth:`data` only when asked for."""

    def __init__(self, model):
        self.model = model
        self.ints, self.floats = model.kernel_pack
        self.quat_starts = model.kernel_quat_starts
        self.K = len(model.constraints)
        self.total_rows = sum(c.rows for c in model.constraints)
        self.set_inputs(np.array([c.enabled for c in model.constraints], bool), {}, {}, None,
                        model.settings.get("solver", {}))

    def set_inputs(self, active, overrides: dict, actuator_values: dict, pull, solver: dict) -> None:
        """Rebuild the run-time tables (after any change of the active set, nails, actuators, pull or solver)."""
        model = self.model
        self.active = np.array(active, bool)
        self.ci, self.cf = constraint_table(model.constraints, overrides)
        row_of, group_of, self.n_groups, self.m, scale = active_layout(model, self.active)
        self.ci[:, 4], self.ci[:, 5] = row_of, group_of
        elements = model.forces + ((pull,) if pull is not None else ())
        self.fi, self.ff = force_table(elements, actuator_values)
        self.solver = np.array([1.0 if solver.get("method", "svd") == "damped_least_squares" else 0.0,
                                solver.get("rcond", 1e-12), solver.get("rho", 1e-3),
                                model.settings.get("rank_tolerance", 1e-3), scale])
        self.raw_size = raw_size(model.nv, self.K, self.m)

    def views(self, raw):
        """``raw_views`` in Python: (q̈, power, F, η, σ, deviation, deviation rate, τ, scalars)."""
        nv, K, m = self.model.nv, self.K, self.m
        o1 = nv + K + 4
        o2 = o1 + 3 * m
        o3 = o2 + 2 * K
        o4 = o3 + nv
        return (raw[0:nv], raw[nv:o1], raw[o1:o1 + m], raw[o1 + m:o1 + 2 * m], raw[o1 + 2 * m:o2], raw[o2:o2 + K],
                raw[o2 + K:o3], raw[o3:o4], raw[o4:o4 + 8])

    def data(self, raw) -> "Data":
        """A :class:`core.dynamics.Data` (copies) from an evaluation's raw output."""
        from .dynamics import Data
        qdd, power, F, residual, svals, dev, devrate, tau, sc = self.views(raw)
        K = self.K
        force = np.zeros((K, 3))
        res = np.full(K, np.nan)
        for k, c in enumerate(self.model.constraints):
            r = self.ci[k, 4]
            if r >= 0:
                force[k] = c.basis @ F[r:r + c.rows]
                res[k] = np.linalg.norm(residual[r:r + c.rows])
        sv = np.full(self.total_rows, np.nan)
        ns = int(sc[7])
        sv[:ns] = svals[:ns]
        return Data(qdd=qdd.copy(), tau_applied=tau.copy(), constraint_force=force,
                    constraint_force_magnitude=np.linalg.norm(force, axis=1), deviation=dev.copy(),
                    deviation_rate=devrate.copy(), residual=res, singular_values=sv, rank=int(sc[0]),
                    dropped=int(sc[1]), singular_value_cutoff=float(sc[2]), jacobian_rank=int(sc[3]),
                    rank_deficient=self.deficient(raw), power_constraints=power[:K].copy(),
                    power_sources=power[K:].copy(), energy_kinetic=float(sc[4]), energy_gravity=float(sc[5]),
                    energy_elastic=float(sc[6]), tau_control=None, controller_rate=np.zeros(0))

    def deficient(self, raw) -> bool:
        """Whether the active constraints' Jacobian lost row rank at an evaluation."""
        return bool(self.m > 0 and raw[self.raw_size - 5] < self.m)

    def deviation(self, raw) -> np.ndarray:
        return self.views(raw)[5]

    def evaluate(self, t: float, q, qd):
        """One full evaluation at (t, q, q̇): ``(raw, ok)``."""
        raw = np.zeros(self.raw_size)
        ok = evaluate_entry(self.ints, self.floats, self.ci, self.cf, self.n_groups, self.fi, self.ff, self.solver,
                            float(t), as_f64(q), as_f64(qd), raw)
        return raw, ok

    def step(self, t: float, q, qd, work, dt: float, n_steps: int, raw, deficient: bool):
        """Up to ``n_steps`` RK4 steps (:func:`rk4_kernel`) from (t, q, q̇) with the work integrals ``work``.
        ``raw``: the full evaluation at the start (overwritten with the one at the end), or None. Returns
        ``(q, qd, work, steps, status, raw)``."""
        nq, nv = q.shape[0], qd.shape[0]
        state_out = np.empty(nq + nv + work.shape[0])
        have = raw is not None
        if not have:
            raw = np.zeros(self.raw_size)
        steps, status = rk4_kernel(self.ints, self.floats, self.quat_starts, self.ci, self.cf, self.n_groups,
                                   self.fi, self.ff, self.solver, float(t), as_f64(q), as_f64(qd), as_f64(work),
                                   float(dt), int(n_steps), have, bool(deficient), raw, state_out)
        return state_out[:nq], state_out[nq:nq + nv], state_out[nq + nv:], steps, status, raw
