"""Articulated-body algorithm: forward dynamics in O(N) (RBDA Table 7.1; the O(N) inversion of thesis §2.4.2
after Rodriguez and Kreutz-Delgado).

Notation: link i, parent λ, X_i the parent → link transform; I^A articulated inertia, p^A bias force,
c_i = v_i × S_i q̇_i (the joints' S is constant in link coordinates, so there is no Ṡ term); multi-dof joints use
D_i = S_iᵀ U_i (inverted by Gauss–Jordan, at most 6 x 6).
"""
from __future__ import annotations

import numpy as np

from .jit import cross_force, cross_motion, force_xt, inertia_xt, matvec6, motion_x, njit
from .kinematics import kinematics_with_forces, subspace_times
from .model import Model
from .rnea import _f_ext

__all__ = ["forward_dynamics", "aba_kernel"]


@njit
def _invert_small(D, n, out):
    """out[:n, :n] ← D[:n, :n]⁻¹ by Gauss–Jordan with partial pivoting (n ≤ 6)."""
    if n == 1:
        out[0, 0] = 1.0 / D[0, 0]
        return
    A = np.zeros((6, 12))
    for a in range(n):
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
def aba_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity,
               q, qd, tau, f_ext, use_f_ext, qdd):
    """q̈ ← H⁻¹(τ − b) by the articulated-body algorithm (f_ext: world coordinates about the world origin)."""
    N = parent.shape[0]
    E, r, R_WL, p_WL, fx = kinematics_with_forces(parent, jtype, axis, R_tree, p_tree, q_start, q, f_ext, use_f_ext)
    v, c, pA = np.empty((N, 6)), np.empty((N, 6)), np.empty((N, 6))
    IA = inertia.copy()
    vJ, tmp = np.empty(6), np.empty(6)
    for i in range(N):                                       # pass 1: velocities and bias terms
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        subspace_times(S, i, nv, qd, vs, vJ)
        if lam < 0:
            for a in range(6):
                v[i, a] = vJ[a]
        else:
            motion_x(E[i], r[i], v[lam], v[i])
            for a in range(6):
                v[i, a] += vJ[a]
        cross_motion(v[i], vJ, c[i])                          # c_i = v_i × v_J
        matvec6(IA[i], v[i], tmp)
        cross_force(v[i], tmp, pA[i])                         # p^A_i = v_i ×* I_i v_i − f^x_i
        for a in range(6):
            pA[i, a] -= fx[i, a]
    U, Dinv, u = np.zeros((N, 6, 6)), np.zeros((N, 6, 6)), np.zeros((N, 6))
    D = np.empty((6, 6))
    Ia, pa = np.empty((6, 6)), np.empty(6)
    t66, X, out = np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6))
    for i in range(N - 1, -1, -1):                           # pass 2: articulated inertias, leaves to root
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            for a in range(6):                                # U_i = I^A_i S_i
                s = 0.0
                for b in range(6):
                    s += IA[i, a, b] * S[i, b, k]
                U[i, a, k] = s
        for k in range(nv):
            for m in range(nv):                               # D_i = S_iᵀ U_i
                s = 0.0
                for a in range(6):
                    s += S[i, a, k] * U[i, a, m]
                D[k, m] = s
            s = tau[vs + k]                                   # u_i = τ_i − S_iᵀ p^A_i
            for a in range(6):
                s -= S[i, a, k] * pA[i, a]
            u[i, k] = s
        if nv > 0:
            _invert_small(D, nv, Dinv[i])
        if lam < 0:
            continue
        for a in range(6):                                    # I^a = I^A − U D⁻¹ Uᵀ
            for b in range(6):
                s = IA[i, a, b]
                for k in range(nv):
                    for m in range(nv):
                        s -= U[i, a, k] * Dinv[i, k, m] * U[i, b, m]
                Ia[a, b] = s
        matvec6(Ia, c[i], tmp)                                # p^a = p^A + I^a c + U D⁻¹ u
        for a in range(6):
            s = pA[i, a] + tmp[a]
            for k in range(nv):
                for m in range(nv):
                    s += U[i, a, k] * Dinv[i, k, m] * u[i, m]
            pa[a] = s
        inertia_xt(E[i], r[i], Ia, out, t66, X)               # I^A_λ += Xᵀ I^a X,  p^A_λ += Xᵀ p^a
        force_xt(E[i], r[i], pa, tmp)
        for a in range(6):
            pA[lam, a] += tmp[a]
            for b in range(6):
                IA[lam, a, b] += out[a, b]
    acc = np.empty((N, 6))
    a0 = np.zeros(6)
    a0[3], a0[4], a0[5] = -gravity[0], -gravity[1], -gravity[2]   # gravity as a base acceleration
    ap = np.empty(6)
    for i in range(N):                                       # pass 3: accelerations, root to leaves
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        motion_x(E[i], r[i], a0 if lam < 0 else acc[lam], ap)
        for a in range(6):
            ap[a] += c[i, a]                                  # a' = X a_λ + c_i
        for k in range(nv):                                   # q̈_i = D⁻¹(u − Uᵀ a')
            s = 0.0
            for m in range(nv):
                w = u[i, m]
                for a in range(6):
                    w -= U[i, a, m] * ap[a]
                s += Dinv[i, k, m] * w
            qdd[vs + k] = s
        for a in range(6):                                    # a_i = a' + S q̈_i
            s = ap[a]
            for k in range(nv):
                s += S[i, a, k] * qdd[vs + k]
            acc[i, a] = s


def forward_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint accelerations ``q̈ = H⁻¹ (τ - b)`` (nv,) by the articulated-body algorithm.

    ``f_ext`` (optional, N x 6) as in :func:`core.inverse_dynamics`: world coordinates about the world origin.
    """
    qdd = np.empty(model.nv)
    fx, use = _f_ext(model, f_ext)
    aba_kernel(*model.kernel_args, np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(qd, dtype=float),
               np.ascontiguousarray(tau, dtype=float), fx, use, qdd)
    return qdd
