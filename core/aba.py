"""Articulated-body algorithm: forward dynamics in O(N) (RBDA Table 7.1; the O(N) inversion of thesis §2.4.2
after Rodriguez and Kreutz-Delgado).

Notation: link i, parent λ, X_i the parent → link transform; I^A articulated inertia, p^A bias force,
c_i = v_i × S_i q̇_i (the joints' S is constant in link coordinates, so there is no Ṡ term); multi-dof joints use
D_i = S_iᵀ U_i (inverted by Gauss–Jordan, at most 6 x 6) and W_i = U_i D_i⁻¹.

The three passes are separate kernels so that the constrained step (:mod:`core.stepper`) can reuse the
factorization of pass 2, which depends on q only: :func:`aba_solve` then gives M⁻¹τ for any further τ in O(N)
(the response to a unit constraint force, for A = J M⁻¹ Jᵀ), with no mass matrix formed.
"""
from __future__ import annotations

import numpy as np

from .jit import as_f64, carve, cross_force, cross_motion, entry, force_xt, inertia_xt, matvec6, motion_x, njit
from .kinematics import external_forces, fk_kernel, link_forces_kernel, subspace_times
from .model import Model

__all__ = ["forward_dynamics", "aba_entry", "aba_eval", "aba_workspace", "aba_velocities", "aba_inertias",
           "aba_accelerations", "aba_solve", "aba_bias_forces"]


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


@njit
def aba_velocities(parent, S, v_start, nv_j, E, r, inertia, qd, fx, v, c, pA, vJ, tmp):
    """Pass 1, root to leaves: v_i = X_i v_λ + S_i q̇_i, c_i = v_i × S_i q̇_i and the bias force
    p^A_i = v_i ×* I_i v_i − f^x_i (``fx``: external forces in link coordinates; ``vJ``, ``tmp``: scratch 6)."""
    for i in range(parent.shape[0]):
        lam = parent[i]
        subspace_times(S, i, nv_j[i], qd, v_start[i], vJ)
        if lam < 0:
            for a in range(6):
                v[i, a] = vJ[a]
        else:
            motion_x(E[i], r[i], v[lam], v[i])
            for a in range(6):
                v[i, a] += vJ[a]
        cross_motion(v[i], vJ, c[i])
        matvec6(inertia[i], v[i], tmp)
        cross_force(v[i], tmp, pA[i])
        for a in range(6):
            pA[i, a] -= fx[i, a]


@njit
def aba_bias_forces(inertia, v, fx, pA, tmp):
    """Pass 1's bias forces from given link velocities: p^A_i = v_i ×* I_i v_i − f^x_i (``tmp``: 6 scratch)."""
    for i in range(v.shape[0]):
        matvec6(inertia[i], v[i], tmp)
        cross_force(v[i], tmp, pA[i])
        for a in range(6):
            pA[i, a] -= fx[i, a]


@njit
def aba_workspace(N):
    """The arrays of one ABA evaluation, cut from one allocation: ``(E, r, R_WL, p_WL, fx, v, c, pA, IA, U, W,
    Dinv, u, Ia, G, T3, D, out, s6)`` (see :func:`aba_eval`; the last six are scratch)."""
    buf = np.empty(198 * N + 36 + 72 + 9 + 72 + 48)
    E, o = carve(buf, 0, 9 * N, (N, 3, 3))
    r, o = carve(buf, o, 3 * N, (N, 3))
    R_WL, o = carve(buf, o, 9 * N, (N, 3, 3))
    p_WL, o = carve(buf, o, 3 * N, (N, 3))
    fx, o = carve(buf, o, 6 * N, (N, 6))
    v, o = carve(buf, o, 6 * N, (N, 6))
    c, o = carve(buf, o, 6 * N, (N, 6))
    pA, o = carve(buf, o, 6 * N, (N, 6))
    IA, o = carve(buf, o, 36 * N, (N, 6, 6))
    U, o = carve(buf, o, 36 * N, (N, 6, 6))
    W, o = carve(buf, o, 36 * N, (N, 6, 6))
    Dinv, o = carve(buf, o, 36 * N, (N, 6, 6))
    u, o = carve(buf, o, 6 * N, (N, 6))
    Ia, o = carve(buf, o, 36, (6, 6))
    G, o = carve(buf, o, 72, (6, 12))
    T3, o = carve(buf, o, 9, (3, 3))
    D, o = carve(buf, o, 36, (6, 6))
    out, o = carve(buf, o, 36, (6, 6))
    s6, o = carve(buf, o, 48, (8, 6))
    return E, r, R_WL, p_WL, fx, v, c, pA, IA, U, W, Dinv, u, Ia, G, T3, D, out, s6


@njit
def aba_inertias(parent, S, v_start, nv_j, E, r, inertia, tau, c, pA, IA, U, W, Dinv, u, Ia, G, T3, D, out, pa,
                 tmp):
    """Pass 2, leaves to root: articulated inertias and bias forces (thesis eq. 2.77; RBDA Table 7.1)::

        U_i = I^A_i S_i,  D_i = S_iᵀ U_i,  W_i = U_i D_i⁻¹,  u_i = τ_i − S_iᵀ p^A_i
        I^a_i = I^A_i − W_i U_iᵀ,  p^a_i = p^A_i + I^a_i c_i + W_i u_i
        I^A_λ += X_iᵀ I^a_i X_i,   p^A_λ += X_iᵀ p^a_i

    On entry ``pA`` holds pass 1's bias forces; ``IA`` is filled from ``inertia`` here. ``U``, ``W``, ``Dinv``
    depend on q only (the factorization :func:`aba_solve` reuses); ``u`` on τ and q̇ too. ``Ia``, ``D``,
    ``out`` (6x6), ``G`` (6x12), ``T3`` (3x3), ``pa``, ``tmp`` (6) are scratch."""
    N = parent.shape[0]
    IA[:, :, :] = inertia
    for i in range(N - 1, -1, -1):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        if nv == 1:                                           # hinges and sliders: D is a scalar
            su = tau[vs]
            d = 0.0
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += IA[i, a, b] * S[i, b, 0]
                U[i, a, 0] = s
                su -= S[i, a, 0] * pA[i, a]
            for a in range(6):
                d += S[i, a, 0] * U[i, a, 0]
            u[i, 0] = su
            Dinv[i, 0, 0] = 1.0 / d
            for a in range(6):
                W[i, a, 0] = U[i, a, 0] / d
        else:
            for k in range(nv):
                for a in range(6):                                # U_i = I^A_i S_i
                    s = 0.0
                    for b in range(6):
                        s += IA[i, a, b] * S[i, b, k]
                    U[i, a, k] = s
                s = tau[vs + k]                                   # u_i = τ_i − S_iᵀ p^A_i
                for a in range(6):
                    s -= S[i, a, k] * pA[i, a]
                u[i, k] = s
            for k in range(nv):
                for m in range(nv):                               # D_i = S_iᵀ U_i
                    s = 0.0
                    for a in range(6):
                        s += S[i, a, k] * U[i, a, m]
                    D[k, m] = s
            if nv > 0:
                _invert_small(D, nv, Dinv[i], G)
                for a in range(6):                                # W_i = U_i D_i⁻¹
                    for k in range(nv):
                        s = 0.0
                        for m in range(nv):
                            s += U[i, a, m] * Dinv[i, m, k]
                        W[i, a, k] = s
        if lam < 0:
            continue
        for a in range(6):                                    # I^a = I^A − W Uᵀ (symmetric)
            for b in range(a, 6):
                s = IA[i, a, b]
                for k in range(nv):
                    s -= W[i, a, k] * U[i, b, k]
                Ia[a, b] = s
                Ia[b, a] = s
        matvec6(Ia, c[i], tmp)                                # p^a = p^A + I^a c + W u
        for a in range(6):
            s = pA[i, a] + tmp[a]
            for k in range(nv):
                s += W[i, a, k] * u[i, k]
            pa[a] = s
        inertia_xt(E[i], r[i], Ia, out, T3)                   # I^A_λ += Xᵀ I^a X,  p^A_λ += Xᵀ p^a
        force_xt(E[i], r[i], pa, tmp)
        for a in range(6):
            pA[lam, a] += tmp[a]
            for b in range(6):
                IA[lam, a, b] += out[a, b]


@njit
def aba_accelerations(parent, S, v_start, nv_j, E, r, a0, c, W, Dinv, u, qdd, acc, ap):
    """Pass 3, root to leaves: a'_i = X_i a_λ + c_i, q̈_i = D_i⁻¹u_i − W_iᵀ a'_i, a_i = a'_i + S_i q̈_i
    (``a0``: the base acceleration, −g for gravity; ``ap``: scratch 6)."""
    for i in range(parent.shape[0]):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        motion_x(E[i], r[i], a0 if lam < 0 else acc[lam], ap)
        for a in range(6):
            ap[a] += c[i, a]
        for k in range(nv):
            s = 0.0
            for m in range(nv):
                s += Dinv[i, k, m] * u[i, m]
            for a in range(6):
                s -= W[i, a, k] * ap[a]
            qdd[vs + k] = s
        for a in range(6):
            s = ap[a]
            for k in range(nv):
                s += S[i, a, k] * qdd[vs + k]
            acc[i, a] = s


@njit
def aba_solve(parent, S, v_start, nv_j, E, r, W, Dinv, tau, x, pA, u, acc, pa, tmp, ap):
    """x ← M(q)⁻¹ τ in O(N) from pass 2's factorization at the same q: the articulated-body algorithm with no
    velocity, gravity or external force, so only u and p^A change (p^a_i = p^A_i + W_i u_i; RBDA §7.3).
    ``pA``, ``u``, ``acc`` (N x 6) and ``pa``, ``tmp``, ``ap`` (6) are scratch."""
    N = parent.shape[0]
    for i in range(N):
        for a in range(6):
            pA[i, a] = 0.0
    for i in range(N - 1, -1, -1):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            s = tau[vs + k]
            for a in range(6):
                s -= S[i, a, k] * pA[i, a]
            u[i, k] = s
        if lam < 0:
            continue
        for a in range(6):
            s = pA[i, a]
            for k in range(nv):
                s += W[i, a, k] * u[i, k]
            pa[a] = s
        force_xt(E[i], r[i], pa, tmp)
        for a in range(6):
            pA[lam, a] += tmp[a]
    pA[:, :] = 0.0                                            # now the zero c_i of pass 3, and pa the zero a_0
    pa[:] = 0.0
    aba_accelerations(parent, S, v_start, nv_j, E, r, pa, pA, W, Dinv, u, x, acc, ap)


@njit
def aba_eval(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity, ws,
             q, qd, tau, f_ext, use_f_ext, qdd):
    """q̈ ← H⁻¹(τ − b) by the articulated-body algorithm, in the arrays of ``ws`` (:func:`aba_workspace`), which
    then hold the kinematics (E, r, R_WL, p_WL), the velocities and the factorization for :func:`aba_solve`.
    ``f_ext``: world forces about the world origin, used when ``use_f_ext``."""
    E, r, R_WL, p_WL, fx, v, c, pA, IA, U, W, Dinv, u, Ia, G, T3, D, out, s6 = ws
    fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL)
    if use_f_ext:
        link_forces_kernel(R_WL, p_WL, f_ext, fx)
    else:
        fx[:, :] = 0.0
    aba_velocities(parent, S, v_start, nv_j, E, r, inertia, qd, fx, v, c, pA, s6[0], s6[1])
    aba_inertias(parent, S, v_start, nv_j, E, r, inertia, tau, c, pA, IA, U, W, Dinv, u, Ia, G, T3, D, out,
                 s6[0], s6[1])
    a0 = s6[2]                                                # gravity as a base acceleration
    a0[0], a0[1], a0[2] = 0.0, 0.0, 0.0
    a0[3], a0[4], a0[5] = -gravity[0], -gravity[1], -gravity[2]
    aba_accelerations(parent, S, v_start, nv_j, E, r, a0, c, W, Dinv, u, qdd, pA, s6[0])   # pA reused for a_i


@entry
def aba_entry(tree, q, qd, tau, f_ext, use_f_ext, qdd):
    """The entry point from Python: q̈ ← H⁻¹(τ − b)."""
    ws = aba_workspace(tree.parent.shape[0])
    aba_eval(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.S, tree.q_start, tree.v_start,
             tree.nv_j, tree.inertia, tree.gravity, ws, q, qd, tau, f_ext, use_f_ext, qdd)


def forward_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint accelerations ``q̈ = H⁻¹ (τ - b)`` (nv,) by the articulated-body algorithm.

    ``f_ext`` (optional, N x 6) as in :func:`core.inverse_dynamics`: world coordinates about the world origin.
    """
    qdd = np.empty(model.nv)
    fx, use = external_forces(model, f_ext)
    aba_entry(model.tree, as_f64(q), as_f64(qd), as_f64(tau), fx, use, qdd)
    return qdd
