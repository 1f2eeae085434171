"""The solve stage of the compiled step: three formulations of the constrained dynamics on the same assembled
quantities (DESIGN.md, "One system, several formulations") — the articulated-body factorization of M (which
gives M⁻¹x in O(N)), or M itself when a formulation needs it, the bias b, the applied forces τ, and the stacked
constraint rows J, γ (D̈ = J q̈ + γ), D, Ḋ and the stabilization term of :mod:`core.constraints`.

Sign convention: ``M q̈ + b = τ + Jᵀ λ``; λ are the constraint forces on the constrained points (the force
vector on a point is E λ), so Jᵀλ is the generalized constraint force. (Aghili writes M q̈ + h = f − ℱ with
ℱ = Aᵀλ: his ℱ is our −Jᵀλ; McClamroch writes M q̈ + G = T + Jᵀf, as we do.)

1. ``dynamic_constraints`` (Barzel–Barr; Mitchell §2.2–2.4): A λ = −B, A = J M⁻¹Jᵀ, B = J M⁻¹(τ − b) + γ +
   2κḊ + κ²D (eq. 2.21–2.24, κ the stabilization rate), solved by SVD with force bounds (:mod:`core.solver`).
   M⁻¹Jᵀ comes from one O(N) solve per row with ABA's factorization (no mass matrix is formed).
2. ``multipliers`` (McClamroch's reduction, eq. 24–28): the same A and right-hand side with the Baumgarte terms,
   ``λ = (J M⁻¹ Jᵀ)⁻¹(−J M⁻¹(τ − b) − γ − 2κḊ − κ²D)`` (eq. 26), then ``M q̈ = τ − b + Jᵀλ`` (eq. 27). The
   reduction assumes J has full row rank; when it has not (see *Rank* below), A is singular or so ill-conditioned
   that λ would be noise amplified by 1/σ². Then the formulation says so (``rank_deficient``, a
   ``rank_deficient`` event in a run) and solves the reduced system of the r independent combinations Uᵣᵀ J of
   the rows (Uᵣ from the SVD of J): λ = Uᵣ λᵣ is the minimum-norm multiplier (the indeterminate part, Remark 4,
   set to zero) and the dropped directions are not enforced at that instant.
3. ``projection`` (Aghili, eq. 15–32): P = I − J⁺J from an SVD of J (eq. 4, 15), the normal acceleration
   C q̇ = −J⁺γ (eq. 16; γ includes the rheonomic terms of moving nails), and the direct dynamics
   Mc q̈ = P(τ − b) + Cc q̇ (eq. 22) with one of three constraint inertia matrices: Mc = M + PM − MP, Cc = MC
   (eq. 23–24); M′c = PMP + (I−P)M(I−P), C′c = (I − 2P)MC (eq. 27–28); M″c = PM + γ(I − P), C″c = γC with
   γ = ‖M‖₂ unless set (eq. 29). The generalized constraint force is recovered by projection (eq. 32, in our
   sign: Jᵀλ = (I − P)(M q̈ + b − τ)) and λ = J⁺ᵀ(Jᵀλ), the minimum-norm multipliers — unique only when J has
   full row rank (Remark 4). No Baumgarte term: drift is removed between steps by the Newton–Raphson position
   correction q ← q ⊕ (−J⁺Φ(q)) (eq. 39) and a velocity projection (:func:`project_state`).

Rank
----
One rule for "how many independent constraint rows": J = U Σ Vᵀ, and a singular value σᵢ counts when

    σᵢ > tolerance · σ_ref,      σ_ref = max(σ_max(J), scale)

where ``scale`` is the largest Jacobian scale of the active constraints (the norm of each constraint's rows at
the initial configuration, :mod:`core.constraints`). Relative to σ_max alone, the rule finds redundant rows
(three collinear hinges, a planar loop's out-of-plane row) at any size of the mechanism; the floor ``scale`` is
needed because a lone row whose Jacobian passes through zero (the slider-crank at q1 = π/2, where A = l c₁[2 1])
has σ = σ_max and would never look singular to a purely relative test — that is Aghili's absolute ε of eq. 70.
Tolerances:

- ``simulation.rank_tolerance`` (default 1e-3): the rank every formulation reports (``jacobian_rank``,
  ``rank_deficient``) and the one the multipliers formulation relies on. At 1e-3 the condition number of
  A = J M⁻¹Jᵀ relative to its scale stays below ~1e6.
- ``projection.tolerance`` (default: ``simulation.rank_tolerance``): Aghili's ε for P and J⁺ in the projection
  formulation and its Newton–Raphson and velocity corrections. Below it the direction is "virtually removed"
  (eq. 70: P = I at the slider-crank singularity). It must not be tiny: P itself stays a bounded projector
  however small σ gets, but C q̇ = −J⁺γ and the recovered λ = J⁺ᵀJᵀλ divide the integration error by σ (and
  λ by σ²). With ε = 1e-9 an RK4 step that lands 1.6e-5 rad from the slider-crank singularity recovers a
  slider force of 8e4 N (the physical one stays below 26 N) and jumps the energy by 1.6e-5 J; with 1e-3 the
  force stays physical and the energy drift over 5 s is 8e-9 J.
- ``solver.rcond`` (default 1e-12): the dynamic-constraints SVD of A, relative to each group's largest singular
  value (thesis §2.3.4), with the force bounds doing the rest.

Every function here is a stage of :func:`core.forward.evaluate` and works in the named workspace of
:mod:`core.layout`; it writes q̈, the multipliers λ (one per active row, in row order), the residual of the
equation it solved (per row), the singular values and the scalars of :data:`core.layout.SCALARS`.
"""
from __future__ import annotations

import numpy as np

from .aba import aba_solve, tree_span
from .constraints import POINT_VELOCITY, active_layout, rows_kernel
from .joint_constraints import JOINT_SPACE
from .jit import njit
from .kinematics import fk_kernel, integrate_kernel, normalize_kernel
from .layout import MC, MC_GAMMA, MC_SYMMETRIC
from .linalg import (VALUES_LAPACK_SIZE, cholesky_factor, cholesky_solve, lu_solve, numerical_rank, singular_values,
                     svd_columns, symmetric_product)
from .points import velocity_product_kernel
from .solver import (COMPRESS_ROWS, SVD, group_block, group_members, over_bound, range_basis, solve_groups,
                     symmetric_eigen)

FORMULATIONS = ("dynamic_constraints", "projection", "multipliers")
PROJECTION_VARIANTS = ("Mc", "Mc_symmetric", "Mc_gamma")
RANK_TOLERANCE = 1e-3

__all__ = ["FORMULATIONS", "PROJECTION_VARIANTS", "RANK_TOLERANCE", "CERTIFIED_TOLERANCE", "jacobian_svd",
           "pseudo_inverse", "minv_jt", "jacobian_singular_values", "certified_rank", "jacobian_rank",
           "dynamic_constraints", "multipliers", "projection", "project_state"]


# ---- shared pieces ----------------------------------------------------------------------------------------

@njit
def jacobian_svd(J, m, nv, dense):
    """The SVD of J[:m] (m x nv) into ``dense``: ``Ju`` ← Jᵀ, orthogonalized to UΣ (nv x m; column k is σ_k
    times the k-th right singular vector of J), ``Vj`` (m x m, J's left singular vectors) and ``sj`` (σ,
    descending): J = Vj Σ (Ju Σ⁻¹)ᵀ."""
    Ju = dense.Ju
    for a in range(m):
        for k in range(nv):
            Ju[k, a] = J[a, k]
    svd_columns(Ju, nv, m, dense.Vj, dense.sj)


@njit
def jacobian_singular_values(J, cons, rows, solve, dense, m, n_groups):
    """J's singular values into ``dense.sj[:m]`` (descending), group by group over the velocities each group
    spans (J is block diagonal over the groups, which share no tree, so these are J's; from the spans of
    :func:`dynamic_constraints`)."""
    idx, span, Ju, s, sj = solve.idx, solve.span, dense.Ju, solve.lam, dense.sj
    start, members = group_members(rows.group_of, cons.shape[0], n_groups)
    ns = 0
    for g in range(n_groups):
        n, c0, c1 = _group_rows(cons, rows, span, start, members, g, idx)
        if n == 0:
            continue
        p = c1 - c0
        if n >= VALUES_LAPACK_SIZE or (n <= p and n < COMPRESS_ROWS):   # Jᵀ's n columns (LAPACK's values from
            #                                                 VALUES_LAPACK_SIZE rows on, of any shape: no basis)
            for a in range(n):
                for k in range(p):
                    Ju[k, a] = J[idx[a], c0 + k]
            singular_values(Ju, p, n, dense.Vj, s)
        else:                                                 # J = Q₁ R: J's singular values are R's (r x p),
            Q1, R = solve.Q1, dense.Mc                        # the Gram–Schmidt's projections (Mc: nv x nv,
            r = range_basis(J, idx, n, c0, c1, Q1, R, True)   # free under dynamic constraints)
            for i in range(r):
                for k in range(p):
                    Ju[k, i] = R[i, k]                        # (Rᵀ: p x r)
            singular_values(Ju, p, r, dense.Vj, s)
            for a in range(r, n):
                s[a] = 0.0
        for a in range(n):
            sj[ns + a] = s[a]
        ns += n
    for a in range(1, ns):                                    # descending
        x = sj[a]
        b = a - 1
        while b >= 0 and sj[b] < x:
            sj[b + 1] = sj[b]
            b -= 1
        sj[b + 1] = x


#: From this rank tolerance up, :func:`jacobian_rank` may certify full rank from Gram matrices (which square J's
#: condition number: a certificate at tolerance τ asks for cond(G) < 1/τ², accurate to ~ε/τ² in double precision).
CERTIFIED_TOLERANCE = 1e-6


@njit
def _group_rows(cons, rows, span, start, members, g, idx):
    """The rows of group g (from :func:`core.solver.group_members`) into ``idx`` and the velocities they span:
    ``(n, c0, c1)``."""
    row_of = rows.row_of
    n = 0
    for j in range(start[g], start[g + 1]):
        c = members[j]
        for b in range(cons[c].rows):
            idx[n] = row_of[c] + b
            n += 1
    if n == 0:
        return 0, 0, 0
    c0, c1 = span[idx[0], 0], span[idx[0], 1]
    for a in range(1, n):
        c0, c1 = min(c0, span[idx[a], 0]), max(c1, span[idx[a], 1])
    return n, c0, c1


@njit
def _gram(J, idx, n, span, c0, c1, G):
    """G ← the Gram matrix of the rows ``idx[:n]`` of J over the velocities c0 … c1 − 1 (p of them): J Jᵀ (n x n)
    when n ≤ p, else Jᵀ J (p x p), each entry over the velocities the rows span; returns its size. Its nonzero
    eigenvalues are the squares of those rows' singular values."""
    p = c1 - c0
    if n <= p:
        group_block(J, J.T, span, idx, n, G)
        return n
    for i in range(p):
        for k in range(p):
            G[i, k] = 0.0
    for a in range(n):                                        # Σ over the rows of their outer products (upper)
        ra = idx[a]
        k0, k1 = span[ra, 0], span[ra, 1]
        for k in range(k0, k1):
            x = J[ra, k]
            if x != 0.0:
                for l in range(k, k1):
                    G[k - c0, l - c0] += x * J[ra, l]
    for i in range(p):
        for k in range(i):
            G[i, k] = G[k, i]
    return p


@njit
def certified_rank(G, n, above, below, piv, d, L, x):
    """The number of eigenvalues of the symmetric positive semi-definite ``G[:n, :n]`` above a threshold known to
    lie between ``below`` and ``above``, when a pivoted Cholesky factorization proves it, else −1. After k pivots
    (each the largest remaining diagonal entry of the Schur complement S; ``piv``: G's indices in their order) with
    factor L₁₁ of the pivots' principal block G₁₁: λ_k(G) ≥ λ_min(G₁₁) ≥ 1/tr(G₁₁⁻¹) = 1/‖L₁₁⁻¹‖_F² (Cauchy's
    interlacing) and λ_{k+1}(G) ≤ λ_max(S) ≤ tr(S) (Courant–Fischer on x₁ = −G₁₁⁻¹G₁₂x₂). The factorization stops
    at the first k where tr(S) < below / 2; the rank is k if then 1/tr(G₁₁⁻¹) > 2 above. Left-looking, G left as it
    is: L's column k in ``L[:, k]`` by G's index, S's diagonal in ``d``; ``x``: scratch (n)."""
    for a in range(n):
        piv[a] = a
        d[a] = G[a, a]
    k = 0
    while k < n:
        rest, best = 0.0, k
        for j in range(k, n):
            rest += d[piv[j]]
            if d[piv[j]] > d[piv[best]]:
                best = j
        if rest < 0.5 * below:
            break
        piv[k], piv[best] = piv[best], piv[k]
        p = piv[k]
        if not d[p] > 0.0:
            return -1
        lkk = np.sqrt(d[p])
        L[p, k] = lkk
        for j in range(k + 1, n):                             # column k of L below the pivot, S's diagonal updated
            i = piv[j]
            s = G[i, p]
            for t in range(k):
                s -= L[i, t] * L[p, t]
            L[i, k] = s / lkk
            d[i] -= L[i, k] * L[i, k]
        k += 1
    if k == 0:
        return 0
    total = 0.0                                               # tr(G₁₁⁻¹) = ‖L₁₁⁻¹‖_F²: forward substitutions
    for i in range(k):
        for j in range(i, k):
            s = 1.0 if j == i else 0.0
            for t in range(i, j):
                s -= L[piv[j], t] * x[t]
            x[j] = s / L[piv[j], j]
            total += x[j] * x[j]
    return k if 1.0 / total > 2.0 * above else -1


@njit
def jacobian_rank(J, cons, rows, solve, dense, m, n_groups, tolerance, scale):
    """J's rank by the one rule (module docstring, *Rank*), from the groups' spans of :func:`dynamic_constraints`.
    First a certificate that needs no singular value: σ_max² lies between the largest squared norm of a row and the
    largest ‖J_g‖_F² of a group, so the rule's threshold (τ · max(σ_max, scale))² between the two bounds these give,
    and :func:`certified_rank` counts the eigenvalues above it of each group's Gram matrix (:func:`_gram`: J's
    squared singular values) where its pivoted Cholesky factorization proves the count. Else — a group with a
    singular value near the threshold, a tolerance below :data:`CERTIFIED_TOLERANCE` — J's singular values decide
    (:func:`jacobian_singular_values`, ``dense.sj``)."""
    if tolerance >= CERTIFIED_TOLERANCE:
        idx, span = solve.idx, solve.span
        start, members = group_members(rows.group_of, cons.shape[0], n_groups)
        top, longest = 0.0, 0.0
        for g in range(n_groups):                             # the bounds of σ_max², from the rows' norms
            n, c0, c1 = _group_rows(cons, rows, span, start, members, g, idx)
            fro = 0.0
            for a in range(n):
                r2 = 0.0
                for k in range(span[idx[a], 0], span[idx[a], 1]):
                    r2 += J[idx[a], k] * J[idx[a], k]
                fro += r2
                longest = max(longest, r2)
            top = max(top, fro)
        above = (tolerance * max(np.sqrt(top), scale)) ** 2
        below = (tolerance * max(np.sqrt(longest), scale)) ** 2
        rank = 0
        for g in range(n_groups):
            n, c0, c1 = _group_rows(cons, rows, span, start, members, g, idx)
            if n == 0:
                continue
            if c1 <= c0:
                rank = -1
                break
            G = solve.Ag if n <= c1 - c0 else dense.Mc        # (n x n in the solve's m x m scratch, or p x p in
            size = _gram(J, idx, n, span, c0, c1, G)          # an nv x nv one, free under dynamic constraints)
            r = certified_rank(G, size, above, below, dense.piv, dense.y, solve.Q, dense.x)
            if r < 0:
                rank = -1
                break
            rank += r
        if rank >= 0:
            return rank
    jacobian_singular_values(J, cons, rows, solve, dense, m, n_groups)
    return numerical_rank(dense.sj, m, tolerance, scale)


@njit
def pseudo_inverse(dense, m, nv, r):
    """``dense.Jpinv`` ← J⁺ (nv x m) and ``dense.P`` ← I − J⁺J (Aghili eq. 4, 15) from :func:`jacobian_svd`,
    with the r largest singular values: J⁺ = Σ_{i<r} u_i σ_i⁻¹ v_iᵀ = Σ (Ju_i / σ_i²) Vj_iᵀ, P = I − Σ u_i u_iᵀ."""
    Ju, Vj, s, Jp, P = dense.Ju, dense.Vj, dense.sj, dense.Jpinv, dense.P
    for k in range(nv):
        for a in range(m):
            t = 0.0
            for i in range(r):
                t += Ju[k, i] * Vj[a, i] / (s[i] * s[i])
            Jp[k, a] = t
        for j in range(nv):
            t = 0.0
            for i in range(r):
                t += Ju[k, i] * Ju[j, i] / (s[i] * s[i])
            P[k, j] = (1.0 if k == j else 0.0) - t


@njit
def minv_jt(tree, aba, cons, rows, solve, m):
    """``solve.Y`` ← M⁻¹Jᵀ (nv x m): one articulated-body solve per row over the trees the row acts on, reusing
    the factorization of ABA's pass 2 at this q (:func:`core.aba.aba_solve`; no mass matrix is formed); each
    row's span of velocities goes into ``solve.span`` (its group: :func:`dynamic_constraints`), and Y's column
    stays zero outside it. A point constraint's rows act on the trees of its two links (no scan of the row); a
    joint-space constraint's on those of its nonzero entries. Trees of one body each (free bodies, a box on
    another box) take D⁻¹ of their joint, M⁻¹'s block (no solve)."""
    nv = solve.qdd_free.shape[0]
    J, Y, span, Dinv, col = rows.J, solve.Y, solve.span, aba.Dinv, solve.col    # (locals: loaded once)
    parent, root, v_start, nv_j, row_of = tree.parent, tree.root, tree.v_start, tree.nv_j, rows.row_of
    N = parent.shape[0]
    for c in range(cons.shape[0]):
        row = row_of[c]
        if row < 0:
            continue
        ka, kb = cons[c].link_a, cons[c].link_b
        points = cons[c].kind != JOINT_SPACE
        if points:                                            # the trees of links a and b (−1: the world)
            lo, hi = _link_trees(root, v_start, nv_j, N, ka, kb)
        for j in range(row, row + cons[c].rows):
            if not points:
                lo, hi = tree_span(parent, root, v_start, nv_j, J[j], nv)
            for k in range(span[j, 0], span[j, 1]):          # (column j is zero outside its last span)
                Y[k, j] = 0.0
            k0 = v_start[lo] if hi > lo else 0
            k1 = v_start[hi - 1] + nv_j[hi - 1] if hi > lo else 0
            span[j, 0], span[j, 1] = k0, k1
            lone = points and hi > lo
            for i in range(lo, hi):
                if root[i] != i:
                    lone = False
                    break
            if lone:                                          # bodies alone in their trees: M⁻¹ is block diagonal,
                for k in (ka, kb):                            # D⁻¹ of each joint, and J is zero but on a and b
                    if k >= 0 and nv_j[k] > 0:
                        a0, n = v_start[k], nv_j[k]
                        for a in range(n):
                            s = 0.0
                            for b in range(n):
                                s += Dinv[k, a, b] * J[j, a0 + b]
                            Y[a0 + a, j] = s
            elif hi > lo:
                aba_solve(parent, aba.Sw, v_start, nv_j, aba.U, aba.W, Dinv, J[j], col, aba.pA, aba.u, aba.acc,
                          aba.s6[0], aba.s6[1], lo, hi)
                for k in range(k0, k1):
                    Y[k, j] = col[k]


@njit
def _link_trees(root, v_start, nv_j, N, ka, kb):
    """The links ``(lo, hi)`` of the whole trees of links ka and kb that have velocities (either −1: the world;
    a tree that cannot move, a table welded to the world, adds no column)."""
    lo, hi = N, 0
    for k in (ka, kb):
        if k >= 0:
            r = root[k]
            end = k + 1
            while end < N and root[end] == r:                 # the rest of k's tree
                end += 1
            if v_start[end - 1] + nv_j[end - 1] > v_start[r]:
                lo, hi = min(lo, r), max(hi, end)
    return (lo, hi) if hi > lo else (0, 0)


@njit
def _right_hand_side(rows, solve, m, nv):
    """``solve.B`` ← J q̈_free + γ + 2κḊ + κ²D: A λ = −B asks for the stabilized constrained acceleration
    (eq. 2.24)."""
    J, gamma, stab, qdd_free, B = rows.J, rows.gamma, rows.stab, solve.qdd_free, solve.B   # (locals: loaded once)
    for a in range(m):
        s = gamma[a] + stab[a]
        for k in range(nv):
            s += J[a, k] * qdd_free[k]
        B[a] = s


# ---- 1. dynamic constraints ---------------------------------------------------------------------------------

@njit
def group_spans(cons, rows, solve, m):
    """``solve.span[row, 2]`` ← the group of each active row (``solve.span[:, :2]``, its velocities, from
    :func:`minv_jt`)."""
    row_of, group_of, span = rows.row_of, rows.group_of, solve.span
    for c in range(cons.shape[0]):
        row = row_of[c]
        if row >= 0:
            for b in range(cons[c].rows):
                span[row + b, 2] = group_of[c]


@njit
def _resting_group(J, B, idx, n, span, c0, c1, root, v_start, nv_j, Dinv, G, D6, x, w, Fg):
    """Fg[:n] ← the minimum-norm solution of the group's A F = −B without forming A, for a group with more rows than
    velocities (p = c1 − c0) whose bodies are each alone in their tree (boxes resting on each other and on the
    ground at their corners) and whose J (n x p) has full column rank: with G = JᵀJ positive definite,
    A = J M⁻¹Jᵀ has A⁺ = J G⁻¹ M G⁻¹ Jᵀ (A A⁺ = J G⁻¹ Jᵀ, the projector on J's range, and A⁺A the same), so
    F = −A⁺B = J G⁻¹ M x with x = −G⁻¹ Jᵀ B, which is q̈ − q̈_free: the rows determine the group's accelerations.
    M's blocks are those of the bodies' joints (D, the inverse of the articulated-body pivot ``Dinv``). About
    p³/3 + 2np flops where the compressed eigen- or Cholesky solve (:func:`core.solver.solve_groups`) takes ~2np²
    for its basis alone. False when a body is part of a larger tree or G or a D is not safely positive definite
    (:func:`core.linalg.cholesky_factor`): then the general solve. ``G`` (p x p), ``D6``, ``x``, ``w`` (p): scratch."""
    p = c1 - c0
    N = root.shape[0]
    for i in range(N):                                        # every moving body of the span alone in its tree
        if nv_j[i] > 0 and c0 <= v_start[i] < c1 and root[i] != i:
            return False
    _gram(J, idx, n, span, c0, c1, G)                         # (n > p: JᵀJ)
    if not cholesky_factor(G, p):
        return False
    for k in range(p):                                        # x = −G⁻¹ Jᵀ B
        x[k] = 0.0
    for a in range(n):
        ra = idx[a]
        b = B[ra]
        for k in range(span[ra, 0], span[ra, 1]):
            x[k - c0] -= J[ra, k] * b
    cholesky_solve(G, p, x)
    for i in range(N):                                        # w = M x, body by body: D⁻¹ w_i = x_i
        if nv_j[i] > 0 and c0 <= v_start[i] < c1:
            k0, d = v_start[i] - c0, nv_j[i]
            for a in range(d):
                w[k0 + a] = x[k0 + a]
                for b in range(d):
                    D6[a, b] = Dinv[i, a, b]
            if not cholesky_factor(D6, d):
                return False
            cholesky_solve(D6, d, w[k0:])
    cholesky_solve(G, p, w)                                   # F = J (G⁻¹ M x)
    for a in range(n):
        ra = idx[a]
        s = 0.0
        for k in range(span[ra, 0], span[ra, 1]):
            s += J[ra, k] * w[k - c0]
        Fg[a] = s
    return True


@njit
def _resting_groups(tree, aba, cons, rows, solve, dense, n_groups, F, solved):
    """The groups :func:`_resting_group` solves, forces within their bounds: their rows of F, and ``solved[g]``."""
    span, idx, Fg = solve.span, solve.idx, solve.Fg
    start, members = group_members(rows.group_of, cons.shape[0], n_groups)
    for g in range(n_groups):
        solved[g] = False
        n, c0, c1 = _group_rows(cons, rows, span, start, members, g, idx)
        if n <= c1 - c0 or c1 <= c0:
            continue
        if _resting_group(rows.J, solve.B, idx, n, span, c0, c1, tree.root, tree.v_start, tree.nv_j, aba.Dinv,
                          solve.C, aba.D6, dense.x, dense.y, Fg) \
                and not over_bound(cons, members, start[g], start[g + 1], Fg):
            for a in range(n):
                F[idx[a]] = Fg[a]
            solved[g] = True


@njit
def dynamic_constraints(tree, aba, cons, settings, rows, solve, dense, m, n_groups, full, out):
    """Barzel–Barr / Mitchell: A F = −B with force bounds, group by group (eq. 2.21–2.24, 2.41; §2.3.4); then
    q̈ = q̈_free + M⁻¹Jᵀ F. Needs ``solve.Y`` = M⁻¹Jᵀ (:func:`minv_jt`) and ``solve.qdd_free``. A is block
    diagonal over the groups (eq. 2.41: "a matrix block i, j will be zero if constraints i and j do not act on a
    common body"): only its blocks are formed (:func:`core.solver.solve_groups`), each over the velocities its
    rows span. Without ``full`` (an
    integrator's stage) a well-conditioned group may be solved by Cholesky instead of its eigen-decomposition
    (:func:`core.solver.solve_groups`), and A's singular values are not reported."""
    nv = solve.qdd_free.shape[0]
    J, Y, span, B, qdd_free = rows.J, solve.Y, solve.span, solve.B, solve.qdd_free   # (locals: loaded once)
    gamma, stab, qdd, residual = rows.gamma, rows.stab, out.qdd, out.residual_rows
    group_spans(cons, rows, solve, m)
    for a in range(m):                                        # B = J q̈_free + γ + 2κḊ + κ²D   (eq. 2.24)
        s = gamma[a] + stab[a]
        for k in range(span[a, 0], span[a, 1]):
            s += J[a, k] * qdd_free[k]
        B[a] = s
    sc = out.scalars[0]
    F = out.multipliers
    solved = np.zeros(n_groups, np.bool_)
    if not full and settings.method == SVD:                   # (a stage: no singular values to report)
        _resting_groups(tree, aba, cons, rows, solve, dense, n_groups, F, solved)
    rank, dropped, cutoff, ns = solve_groups(J, Y, B, cons, rows.row_of, rows.group_of, n_groups,
                                             settings.method, settings.rcond, settings.rho, F, solve.svals,
                                             solve.idx, solve.Ag, solve.Q, solve.lam, solve.QtB, solve.Fg, span,
                                             solve.Q1, solve.C, not full, solved)
    sc.rank, sc.dropped, sc.cutoff, sc.n_svals = rank, dropped, cutoff, ns
    svals, singular_values = solve.svals, out.singular_values
    for k in range(ns):
        singular_values[k] = svals[k]
    for k in range(nv):
        qdd[k] = qdd_free[k]
    for j in range(m):                                        # q̈ = q̈_free + M⁻¹Jᵀ F
        for k in range(span[j, 0], span[j, 1]):
            qdd[k] += Y[k, j] * F[j]
    for a in range(m):                                        # η = A F + B = J (q̈ − q̈_free) + B   (fig. 2.3)
        s = B[a]
        for k in range(span[a, 0], span[a, 1]):
            s += J[a, k] * (qdd[k] - qdd_free[k])
        residual[a] = s


# ---- 2. multipliers -----------------------------------------------------------------------------------------

@njit
def multipliers(settings, rows, solve, dense, m, scale, out):
    """McClamroch's reduction (eq. 24–28): λ = A⁻¹(−J q̈_free − γ − 2κḊ − κ²D), or, when J lost rank, the
    reduced system on the r independent row combinations Uᵣᵀ J (module docstring): λ = Uᵣ (Uᵣᵀ A Uᵣ)⁻¹ Uᵣᵀ rhs;
    then q̈ = q̈_free + M⁻¹Jᵀλ. Needs ``solve.Y`` = M⁻¹Jᵀ and J's SVD (:func:`jacobian_svd`)."""
    nv = solve.qdd_free.shape[0]
    A, B, Q, lam, Ag, F = solve.A, solve.B, solve.Q, solve.lam, solve.Ag, out.multipliers
    symmetric_product(rows.J, solve.Y, A, m, nv)            # A = B M⁻¹ Bᵀ   (McClamroch eq. 25)
    _right_hand_side(rows, solve, m, nv)               # rhs = −B   (eq. 24 with the Baumgarte terms)
    r = numerical_rank(dense.sj, m, settings.rank_tolerance, scale)
    Ur, x, y = dense.Vj, dense.ra, dense.rb                  # Uᵣ: J's first r left singular vectors
    full = r == m
    for a in range(r):                                        # Ag = Uᵣᵀ A Uᵣ and x = Uᵣᵀ rhs (A, −B at full rank)
        if full:
            x[a] = -B[a]
            for b in range(m):
                Ag[a, b] = A[a, b]
            continue
        s = 0.0
        for i in range(m):
            s -= Ur[i, a] * B[i]
        x[a] = s
        for b in range(r):
            s = 0.0
            for i in range(m):
                t = 0.0
                for j in range(m):
                    t += A[i, j] * Ur[j, b]
                s += Ur[i, a] * t
            Ag[a, b] = s
    symmetric_eigen(Ag, r, lam, Q)
    used_min = np.inf
    for a in range(r):                                        # y = Ag⁻¹ x = Q Λ⁻¹ Qᵀ x   (eq. 26)
        used_min = min(used_min, lam[a])
        s = 0.0
        for k in range(r):
            t = 0.0
            for b in range(r):
                t += Q[b, k] * x[b]
            s += Q[a, k] * t / lam[k]
        y[a] = s
    for i in range(m):                                        # λ = Uᵣ y
        if full:
            F[i] = y[i]
        else:
            s = 0.0
            for a in range(r):
                s += Ur[i, a] * y[a]
            F[i] = s
    sc = out.scalars[0]
    sc.rank, sc.dropped, sc.cutoff, sc.n_svals = r, 0, (used_min if r > 0 else np.nan), m
    for a in range(m):                                        # the reported singular values: |eig(A)|
        for b in range(m):
            Ag[a, b] = A[a, b]
    symmetric_eigen(Ag, m, lam, Q)
    for a in range(m):
        out.singular_values[a] = abs(lam[a])
    for k in range(nv):                                       # M q̈ = τ − b + Jᵀλ   (eq. 27)
        s = solve.qdd_free[k]
        for j in range(m):
            s += solve.Y[k, j] * F[j]
        out.qdd[k] = s
    for a in range(m):                                        # residual A λ − rhs = A λ + B
        s = B[a]
        for b in range(m):
            s += A[a, b] * F[b]
        out.residual_rows[a] = s


# ---- 3. projection ---------------------------------------------------------------------------------------

@njit
def projection(settings, rows, solve, plant, dense, m, scale, tau, out):
    """Aghili's projection (eq. 15–32): with M, b (``plant``) and J's SVD (:func:`jacobian_svd`), P = I − J⁺J,
    C q̇ = −J⁺γ, Mc q̈ = P(τ − b) + Cc q̇, Jᵀλ = (I − P)(M q̈ + b − τ), λ = J⁺ᵀJᵀλ."""
    nv = tau.shape[0]
    M, b = plant.M, plant.b
    P, Mc, K, T, x, y, w = dense.P, dense.Mc, dense.K, dense.T, dense.x, dense.y, dense.w
    eps = settings.projection_tolerance
    r = numerical_rank(dense.sj, m, eps, scale)
    pseudo_inverse(dense, m, nv, r)                           # J⁺, P = I − J⁺J   (eq. 4, 15)
    Jp = dense.Jpinv
    for k in range(nv):                                       # C q̇ = −J⁺γ   (eq. 16)
        s = 0.0
        for a in range(m):
            s -= Jp[k, a] * rows.gamma[a]
        x[k] = s
    variant = settings.variant
    g = settings.gamma
    if variant == MC_GAMMA and not g > 0.0:                   # γ = ‖M‖₂ by default   (eq. 29)
        g = _spectral_norm(M, nv, dense)
    for i in range(nv):                                       # T = P M, then Mc and K (Cc q̇ = K C q̇)
        for j in range(nv):
            s = 0.0
            for k in range(nv):
                s += P[i, k] * M[k, j]
            T[i, j] = s
    if variant == MC:                                         # Mc = M + PM − MP, K = M   (eq. 23–24)
        for i in range(nv):
            for j in range(nv):
                s = 0.0
                for k in range(nv):
                    s += M[i, k] * P[k, j]
                Mc[i, j] = M[i, j] + T[i, j] - s
                K[i, j] = M[i, j]
    elif variant == MC_SYMMETRIC:                             # M′c = PMP + QMQ, K = (I − 2P) M   (eq. 27–28)
        for i in range(nv):
            for j in range(nv):
                pmp = 0.0
                for k in range(nv):
                    pmp += T[i, k] * P[k, j]
                # QMQ = M − PM − MP + PMP
                mp = 0.0
                for k in range(nv):
                    mp += M[i, k] * P[k, j]
                Mc[i, j] = pmp + (M[i, j] - T[i, j] - mp + pmp)
                K[i, j] = M[i, j] - 2.0 * T[i, j]
    else:                                                     # M″c = PM + γ(I − P), K = γ I   (eq. 29)
        for i in range(nv):
            for j in range(nv):
                Mc[i, j] = T[i, j] + g * ((1.0 if i == j else 0.0) - P[i, j])
                K[i, j] = g if i == j else 0.0
    for i in range(nv):                                       # rhs = P(τ − b) + K C q̇   (eq. 22)
        s = 0.0
        for k in range(nv):
            s += P[i, k] * (tau[k] - b[k]) + K[i, k] * x[k]
        y[i] = s
    lu_solve(Mc, nv, y, out.qdd, dense.piv)
    for i in range(nv):                                       # w = M q̈ + b − τ
        s = b[i] - tau[i]
        for k in range(nv):
            s += M[i, k] * out.qdd[k]
        w[i] = s
    for i in range(nv):                                       # Jᵀλ = (I − P) w   (eq. 32)
        s = w[i]
        for k in range(nv):
            s -= P[i, k] * w[k]
        x[i] = s
    for a in range(m):                                        # λ = J⁺ᵀ Jᵀλ (minimum norm, Remark 4)
        s = 0.0
        for k in range(nv):
            s += Jp[k, a] * x[k]
        out.multipliers[a] = s
        t = rows.gamma[a]                                     # residual J q̈ + γ
        for k in range(nv):
            t += rows.J[a, k] * out.qdd[k]
        out.residual_rows[a] = t
    n_svals = min(m, nv)                                      # J (m x nv) has min(m, nv) singular values
    for a in range(n_svals):
        out.singular_values[a] = dense.sj[a]
    sc = out.scalars[0]
    sc.rank, sc.dropped, sc.cutoff, sc.n_svals = r, 0, (dense.sj[r - 1] if r > 0 else np.nan), n_svals


@njit
def _spectral_norm(M, nv, dense):
    """‖M‖₂ of the symmetric positive definite M: its largest eigenvalue (Jacobi, on a copy in ``dense.T``;
    ``dense.K`` and ``dense.w`` are overwritten)."""
    T = dense.T
    for i in range(nv):
        for j in range(nv):
            T[i, j] = M[i, j]
    lam = dense.w
    symmetric_eigen(T, nv, lam, dense.K)
    return abs(lam[0])


# ---- the projection formulation's drift removal, after a step ------------------------------------------

@njit
def project_state(tree, tab, ws, t, q, qd, active, scale):
    """Remove constraint drift after a step (Aghili §6), in place: Newton–Raphson ``q ← q ⊕ (−J⁺Φ(q))`` (eq. 39)
    while ‖Φ‖ exceeds ``position_tolerance`` (at most ``max_iterations``; the iterate with the smallest ‖Φ‖ is
    kept, so a step that does not converge never makes things worse), then project the velocity onto the
    constraints' null space, ``q̇ ← q̇ − J⁺ Ḋ`` (for velocity constraints, ``q̇ ← q̇ − J⁺ D``). J⁺ is Aghili's
    pseudo-inverse with the projection tolerance (module *Rank*); velocity constraints take no part in the
    position iteration. Returns the number of iterations."""
    st = tab.settings[0]
    cons = tab.constraints
    rows, dense = ws.rows, ws.dense
    nq, nv = q.shape[0], qd.shape[0]
    trial = ws.control.u                                      # nv scratch
    q_try = np.empty(nq)
    position = np.empty(cons.shape[0], np.bool_)
    for c in range(cons.shape[0]):                            # the position iteration's constraints
        position[c] = active[c] and cons[c].kind != POINT_VELOCITY
    m_pos, _ = active_layout(cons, tab.variables, tree.root, position, rows.row_of, rows.group_of, rows.uf)
    norm = _rows_at(tree, tab, ws, t, q, qd, m_pos)
    iterations = 0
    while norm > st.position_tolerance and iterations < st.max_iterations and m_pos > 0:
        jacobian_svd(rows.J, m_pos, nv, dense)
        pseudo_inverse(dense, m_pos, nv, numerical_rank(dense.sj, m_pos, st.projection_tolerance, scale))
        for k in range(nv):                                   # δ = −J⁺Φ(q)
            s = 0.0
            for a in range(m_pos):
                s -= dense.Jpinv[k, a] * rows.D[a]
            trial[k] = s
        integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, q, trial, 1.0, q_try)   # q ⊕ δ (eq. 39)
        normalize_kernel(tree.quat_starts, q_try)
        new = _rows_at(tree, tab, ws, t, q_try, qd, m_pos)
        iterations += 1
        if not new < norm:                                    # diverging or stalled: keep the best
            break
        q[:] = q_try
        norm = new
    m, _ = active_layout(cons, tab.variables, tree.root, active, rows.row_of, rows.group_of, rows.uf)
    if m > 0:                                                 # q̇ ← q̇ − J⁺ Ḋ  (velocity constraints: − J⁺ D)
        _rows_at(tree, tab, ws, t, q, qd, m)
        jacobian_svd(rows.J, m, nv, dense)
        pseudo_inverse(dense, m, nv, numerical_rank(dense.sj, m, st.projection_tolerance, scale))
        for c in range(cons.shape[0]):
            row = rows.row_of[c]
            if row >= 0 and cons[c].kind == POINT_VELOCITY:
                for b in range(cons[c].rows):
                    rows.D_rate[row + b] = rows.D[row + b]
        for k in range(nv):
            s = 0.0
            for a in range(m):
                s += dense.Jpinv[k, a] * rows.D_rate[a]
            qd[k] -= s
    return iterations


@njit
def _rows_at(tree, tab, ws, t, q, qd, m):
    """The rows of the laid-out constraints at (q, q̇) into ``ws.rows``; returns ‖D‖ of those rows."""
    kin, rows = ws.kin, ws.rows
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    velocity_product_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.E, kin.r, qd, kin.v, kin.c,
                            kin.a_vp)
    rows.J[:m, :] = 0.0
    K = tab.constraints.shape[0]                              # (deviation norms and end points: not needed)
    dev = np.empty(K)
    devr = np.empty(K)
    pa = np.empty((K, 3))
    rows_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, kin.v, kin.a_vp,
                tab.constraints, tab.tape, tab.variables, rows.row_of, t, q, qd, rows.J, rows.gamma, rows.D,
                rows.D_rate, rows.stab, dev, devr, pa, pa, pa, rows.P3, (rows.val, rows.d1, rows.d2, rows.grad,
                                                                        rows.xv, rows.vv), False)
    s = 0.0
    for a in range(m):
        s += rows.D[a] * rows.D[a]
    return np.sqrt(s)
