"""Articulated-body algorithm: forward dynamics in O(N) (RBDA Table 7.1; the O(N) inversion of thesis §2.4.2
after Rodriguez and Kreutz-Delgado), in world coordinates.

Notation: link i, parent λ. Every spatial quantity here is expressed in world axes about the world origin W
(Featherstone's "absolute" form of the algorithm, RBDA §7.3): the motion subspace ``s_i = X_{W←i} S_i`` (6 x nv_i,
it moves with link i, so ṡ_i = v_i × s_i), the rigid-body inertia ``I_i`` of link i about W, the articulated
inertia I^A and bias force p^A. Velocities then add without transforms, ``v_i = v_λ + s_i q̇_i``, and an
articulated inertia passes to the parent as it is, ``I^A_λ += I^a_i`` — the 6 x 6 transform XᵀIX per link that
link coordinates need is gone. The price is round-off that grows with the distance from W (it stays at ~1e-15
relative for mechanisms within a few metres of the origin, as every scene here).

    pass 1  (root → leaves)  v_i = v_λ + s_i q̇_i,   c_i = v_i × s_i q̇_i,   p^A_i = v_i ×* I_i v_i − f^x_i
    pass 2  (leaves → root)  U_i = I^A_i s_i,  D_i = s_iᵀ U_i,  u_i = τ_i − s_iᵀ p^A_i,  W_i = U_i D_i⁻¹
                             I^A_λ += I^A_i − W_i U_iᵀ,   p^A_λ += p^A_i + I^a_i c_i + W_i u_i
    pass 3  (root → leaves)  a'_i = a_λ + c_i (a_0 = [0; −g]),  q̈_i = D_i⁻¹(u_i − U_iᵀ a'_i),  a_i = a'_i + s_i q̈_i

Multi-dof joints invert D_i (at most 6 x 6) by Gauss–Jordan. The passes are separate kernels so that the
constrained step reuses the factorization of pass 2, which depends on q only: :func:`aba_solve` then gives M⁻¹τ
for any further τ in O(N) (the response to a unit constraint force, for A = J M⁻¹ Jᵀ), with no mass matrix.
"""
from __future__ import annotations

import numpy as np

from .jit import as_f64, cross_force, cross_motion, entry, matvec6, njit
from .kinematics import external_forces, fk_kernel, world_frame
from .layout import thread_work
from .model import Model

__all__ = ["forward_dynamics", "aba_entry", "aba_passes", "aba_velocities", "aba_inertias", "aba_accelerations", "aba_solve",
           "tree_span"]


@njit
def _invert_small(D, n, out, A):
    """out[:n, :n] ← D[:n, :n]⁻¹ by Gauss–Jordan with partial pivoting (n ≤ 6; ``A`` a 6 x 12 scratch array)."""
    if n == 1:
        out[0, 0] = 1.0 / D[0, 0]
        return
    for a in range(n):
        for b in range(2 * n):
            A[a, b] = 0.0
        for b in range(n):
            A[a, b] = D[a, b]
        A[a, n + a] = 1.0
    for c in range(n):
        p = c
        for a in range(c + 1, n):
            if abs(A[a, c]) > abs(A[p, c]):
                p = a
        if p != c:
            for b in range(2 * n):
                A[c, b], A[p, b] = A[p, b], A[c, b]
        piv = A[c, c]
        for b in range(2 * n):
            A[c, b] /= piv
        for a in range(n):
            if a != c:
                m = A[a, c]
                for b in range(2 * n):
                    A[a, b] -= m * A[c, b]
    for a in range(n):
        for b in range(n):
            out[a, b] = A[a, n + b]


@njit(inline='always')
def aba_velocities(parent, Sw, v_start, nv_j, I, qd, fx, v, c, pA, s6):
    """Pass 1, root to leaves: v_i = v_λ + s_i q̇_i, c_i = v_i × s_i q̇_i, p^A_i = v_i ×* I_i v_i − f^x_i (world
    axes about W; ``fx``: external forces the same way; ``s6``: scratch, rows 0 and 1)."""
    for i in range(parent.shape[0]):
        lam, vs, nv = parent[i], v_start[i], nv_j[i]
        for a in range(6):
            s = 0.0
            for k in range(nv):
                s += Sw[i, a, k] * qd[vs + k]
            s6[0, a] = s
            v[i, a] = s if lam < 0 else v[lam, a] + s
        cross_motion(v, i, s6, 0, c, i)                       # c = v × s q̇
        matvec6(I, i, v, i, s6, 1)                            # p^A = v ×* I v − f^x
        cross_force(v, i, s6, 1, pA, i)
        for a in range(6):
            pA[i, a] -= fx[i, a]


@njit(inline='always')
def aba_inertias(parent, Sw, v_start, nv_j, armature, tau, c, pA, IA, U, W, Dinv, u, G, D, lone, lone_Dinv):
    """Pass 2, leaves to root (thesis eq. 2.77; RBDA Table 7.1), in world axes about W::

        U_i = I^A_i s_i,  D_i = s_iᵀ U_i + diag(a_i),  W_i = U_i D_i⁻¹,  u_i = τ_i − s_iᵀ p^A_i

    (a_i: the joint's armature, which moves with its coordinate alone, so it enters D_i only).
        I^A_λ += I^A_i − W_i U_iᵀ,   p^A_λ += p^A_i + I^a_i c_i + W_i u_i

    On entry ``IA`` holds the links' rigid-body inertias and ``pA`` pass 1's bias forces; both accumulate here.
    ``U``, ``W``, ``Dinv`` depend on q only (the factorization :func:`aba_solve` reuses); ``u`` on τ and q̇ too.
    ``G`` (6 x 12) and ``D`` (6 x 6) are scratch. A lone free body's D⁻¹ is a constant of the model
    (``lone_Dinv``: D = Sᵀ I S + diag(a) with S = 1 in its own frame, the same in world axes)."""
    for i in range(parent.shape[0] - 1, -1, -1):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        if nv == 1:                                           # hinges and sliders: D is a scalar
            su = tau[vs]
            d = armature[vs]
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += IA[i, a, b] * Sw[i, b, 0]
                U[i, a, 0] = s
                su -= Sw[i, a, 0] * pA[i, a]
                d += Sw[i, a, 0] * s
            u[i, 0] = su
            Dinv[i, 0, 0] = 1.0 / d
            for a in range(6):
                W[i, a, 0] = U[i, a, 0] / d
        else:
            for k in range(nv):
                for a in range(6):                            # U_i = I^A_i s_i
                    s = 0.0
                    for b in range(6):
                        s += IA[i, a, b] * Sw[i, b, k]
                    U[i, a, k] = s
                s = tau[vs + k]                               # u_i = τ_i − s_iᵀ p^A_i
                for a in range(6):
                    s -= Sw[i, a, k] * pA[i, a]
                u[i, k] = s
            if lone[i]:
                for k in range(6):
                    for m in range(6):
                        Dinv[i, k, m] = lone_Dinv[i, k, m]
            else:
                for k in range(nv):
                    for m in range(nv):                       # D_i = s_iᵀ U_i + diag(a_i)
                        s = armature[vs + k] if k == m else 0.0
                        for a in range(6):
                            s += Sw[i, a, k] * U[i, a, m]
                        D[k, m] = s
                if nv > 0:
                    _invert_small(D, nv, Dinv[i], G)
            if nv > 0 and lam >= 0:                           # (a root passes nothing on: pass 3 needs U, D⁻¹)
                for a in range(6):                            # W_i = U_i D_i⁻¹
                    for k in range(nv):
                        s = 0.0
                        for m in range(nv):
                            s += U[i, a, m] * Dinv[i, m, k]
                        W[i, a, k] = s
        if lam < 0:
            continue
        # I^a = I^A − W Uᵀ,  p^a = p^A + I^a c + W u;  I^A_λ += I^a,  p^A_λ += p^a — in one sweep over I^a, which
        # is never stored. For one degree of freedom W Uᵀ = U Uᵀ / d, formed as (U_a U_b)/d: exactly symmetric.
        if nv == 1:
            dinv, ui = Dinv[i, 0, 0], u[i, 0]
            for a in range(6):
                Ua = U[i, a, 0]
                s = pA[i, a] + W[i, a, 0] * ui
                for b in range(6):
                    x = IA[i, a, b] - Ua * U[i, b, 0] * dinv
                    s += x * c[i, b]
                    IA[lam, a, b] += x
                pA[lam, a] += s
        else:
            for a in range(6):
                s = pA[i, a]
                for k in range(nv):
                    s += W[i, a, k] * u[i, k]
                for b in range(6):
                    x = IA[i, a, b]
                    for k in range(nv):
                        x -= W[i, a, k] * U[i, b, k]
                    s += x * c[i, b]
                    if b >= a:                                # the upper triangle, mirrored: exactly symmetric
                        IA[lam, a, b] += x
                        if b > a:
                            IA[lam, b, a] += x
                pA[lam, a] += s


@njit(inline='always')
def aba_accelerations(parent, Sw, v_start, nv_j, a0, c, U, Dinv, u, qdd, acc, r, lo, hi):
    """Pass 3, root to leaves: a'_i = a_λ + c_i, q̈_i = D_i⁻¹(u_i − U_iᵀ a'_i) (= D_i⁻¹u_i − W_iᵀ a'_i), a_i = a'_i +
    s_i q̈_i (``a0``: the base acceleration, [0; −g] for gravity; ``r``: scratch, 6), over the links lo … hi − 1
    (whole trees)."""
    for i in range(lo, hi):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for a in range(6):
            acc[i, a] = (a0[a] if lam < 0 else acc[lam, a]) + c[i, a]
        for m in range(nv):
            s = u[i, m]
            for a in range(6):
                s -= U[i, a, m] * acc[i, a]
            r[m] = s
        for k in range(nv):
            s = 0.0
            for m in range(nv):
                s += Dinv[i, k, m] * r[m]
            qdd[vs + k] = s
        for k in range(nv):
            for a in range(6):
                acc[i, a] += Sw[i, a, k] * qdd[vs + k]


@njit
def aba_solve(parent, Sw, v_start, nv_j, U, W, Dinv, tau, x, pA, u, acc, zero6, r, lo, hi):
    """x ← M(q)⁻¹ τ in O(N) from pass 2's factorization at the same q: the articulated-body algorithm with no
    velocity, gravity or external force, so only u and p^A change (p^a_i = p^A_i + W_i u_i; RBDA §7.3), then pass
    3 with c = 0 and a_0 = 0 — over the links lo … hi − 1, whole trees (depth-first order keeps a tree's links
    together), outside which τ is zero: x is written on their velocities only (M is block diagonal over the
    trees). ``pA``, ``u``, ``acc`` (N x 6) and ``r`` (6) are scratch; ``zero6`` (6) is set to zero."""
    for i in range(lo, hi):
        for a in range(6):
            pA[i, a] = 0.0
    for i in range(hi - 1, lo - 1, -1):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            s = tau[vs + k]
            for a in range(6):
                s -= Sw[i, a, k] * pA[i, a]
            u[i, k] = s
        if lam < 0:
            continue
        for a in range(6):
            s = pA[i, a]
            for k in range(nv):
                s += W[i, a, k] * u[i, k]
            pA[lam, a] += s
    for a in range(6):
        zero6[a] = 0.0
    for i in range(lo, hi):                                   # now the zero c_i of pass 3
        for a in range(6):
            pA[i, a] = 0.0
    aba_accelerations(parent, Sw, v_start, nv_j, zero6, pA, U, Dinv, u, x, acc, r, lo, hi)


@njit
def tree_span(parent, root, v_start, nv_j, row, nv):
    """The links ``(lo, hi)`` of the whole trees that the nonzero entries of ``row`` (nv) act on: the range
    :func:`aba_solve` needs for M⁻¹ row (``(0, 0)`` for a zero row)."""
    N = parent.shape[0]
    first, last = -1, -1
    for k in range(nv):
        if row[k] != 0.0:
            if first < 0:
                first = k
            last = k
    if first < 0:
        return 0, 0
    lo, hi = N, 0
    for i in range(N):
        if v_start[i] + nv_j[i] > first and v_start[i] <= last:
            lo = min(lo, root[i])
            hi = i + 1
    r = root[hi - 1]
    while hi < N and root[hi] == r:                           # the rest of the last tree
        hi += 1
    return lo, hi


@njit
def aba_passes(tree, kin, aba, qd, tau, qdd, framed, armature):
    """q̈ ← H⁻¹(τ − b) by the three passes, at the link poses ``kin.R_WL``, ``kin.p_WL`` (:func:`fk_kernel`) with
    the external forces ``aba.fx`` (world axes about W), H taken with the joints' ``armature`` (``tree.armature``,
    or the ``implicitfast`` step's, which adds h·c: :func:`core.forward.evaluate`); leaves the factorization
    (U, W, D⁻¹) in ``aba``. With
    ``framed`` the links' world subspaces and inertias are in ``aba.Sw`` and ``aba.IA`` already (the plant stage
    made them, :func:`core.forward.plant_stage`), else :func:`world_frame` makes them here."""
    if not framed:
        world_frame(tree.S, tree.nv_j, tree.mass, tree.com, tree.inertia_com, kin.R_WL, kin.p_WL, aba.Sw, aba.IA)
    aba_velocities(tree.parent, aba.Sw, tree.v_start, tree.nv_j, aba.IA, qd, aba.fx, aba.v, aba.c, aba.pA, aba.s6)
    aba_inertias(tree.parent, aba.Sw, tree.v_start, tree.nv_j, armature, tau, aba.c, aba.pA, aba.IA, aba.U,
                 aba.W, aba.Dinv, aba.u, aba.G, aba.D6, tree.lone, tree.lone_Dinv)
    a0 = aba.s6[2]                                            # gravity as a base acceleration
    a0[0], a0[1], a0[2] = 0.0, 0.0, 0.0
    a0[3], a0[4], a0[5] = -tree.gravity[0], -tree.gravity[1], -tree.gravity[2]
    aba_accelerations(tree.parent, aba.Sw, tree.v_start, tree.nv_j, a0, aba.c, aba.U, aba.Dinv, aba.u, qdd,
                      aba.acc, aba.s6[3], 0, tree.parent.shape[0])


@entry
def aba_entry(tree, kin, aba, q, qd, tau, f_ext, use_f_ext, qdd):
    """The entry point from Python: q̈ ← H⁻¹(τ + Σ J_iᵀ f_ext,i − b) in the arrays of
    :func:`core.layout.thread_work` (``f_ext``: world forces about the world origin, N x 6, used when
    ``use_f_ext``)."""
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    if use_f_ext:
        aba.fx[:, :] = f_ext
    else:
        aba.fx[:, :] = 0.0
    aba_passes(tree, kin, aba, qd, tau, qdd, False, tree.armature)


def forward_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint accelerations ``q̈ = H⁻¹ (τ - b)`` (nv,) by the articulated-body algorithm.

    ``f_ext`` (optional, N x 6) as in :func:`core.inverse_dynamics`: world coordinates about the world origin.
    """
    qdd = np.empty(model.nv)
    f, use = external_forces(model, f_ext)
    kin, aba, _ = thread_work(model.n_links)
    aba_entry.fast(model.kernel_tree, kin, aba, as_f64(q), as_f64(qd), as_f64(tau), f, use, qdd)
    return qdd
