"""Articulated-body algorithm: forward dynamics in O(N) (RBDA Table 7.1; the O(N) inversion of thesis §2.4.2
after Rodriguez and Kreutz-Delgado).

Notation: link i, parent λ, X_up[i] = X_{i,λ}; I^A articulated inertia, p^A bias force, c_i = v_i × S_i q̇_i
(the joints' S is constant in link coordinates, so there is no Ṡ term); multi-dof joints use D_i = S_iᵀ U_i.
"""
from __future__ import annotations

import numpy as np

from .kinematics import forward_kinematics, link_forces_from_world
from .model import Model
from .spatial import crf, crm

__all__ = ["forward_dynamics"]


def forward_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint accelerations ``q̈ = H⁻¹ (τ - b)`` (nv,) by the articulated-body algorithm.

    ``f_ext`` (optional, N x 6) as in :func:`core.inverse_dynamics`: world coordinates about the world origin.
    """
    N = model.n_links
    R_WL, p_WL, X_up = forward_kinematics(model, q)
    fx = link_forces_from_world(R_WL, p_WL, f_ext)
    v = np.zeros((N, 6))
    c = np.zeros((N, 6))
    IA = np.array(model.inertia)
    pA = np.zeros((N, 6))
    for i in range(N):                                      # pass 1: velocities and bias terms
        vs, nv = model.v_start[i], model.nv_j[i]
        vJ = model.S[i, :, :nv] @ qd[vs:vs + nv]
        lam = model.parent[i]
        v[i] = (X_up[i] @ v[lam] if lam >= 0 else 0.0) + vJ
        c[i] = crm(v[i]) @ vJ                               # c_i = v_i × v_J
        pA[i] = crf(v[i]) @ (IA[i] @ v[i])                  # p^A_i = v_i ×* I_i v_i - f^x_i
        if fx is not None:
            pA[i] -= fx[i]
    U = np.zeros((N, 6, 6))
    Dinv = np.zeros((N, 6, 6))
    u = np.zeros((N, 6))
    for i in range(N - 1, -1, -1):                          # pass 2: articulated inertias, leaves to root
        vs, nv = model.v_start[i], model.nv_j[i]
        S = model.S[i, :, :nv]
        lam = model.parent[i]
        if nv > 0:
            U[i, :, :nv] = IA[i] @ S                                        # U_i = I^A_i S_i
            Dinv[i, :nv, :nv] = np.linalg.inv(S.T @ U[i, :, :nv])           # D_i = S_iᵀ U_i
            u[i, :nv] = tau[vs:vs + nv] - S.T @ pA[i]                       # u_i = τ_i - S_iᵀ p^A_i
        if lam >= 0:
            Ui, Di = U[i, :, :nv], Dinv[i, :nv, :nv]
            Ia = IA[i] - Ui @ Di @ Ui.T                                     # I^a = I^A - U D⁻¹ Uᵀ
            pa = pA[i] + Ia @ c[i] + Ui @ (Di @ u[i, :nv])                  # p^a = p^A + I^a c + U D⁻¹ u
            IA[lam] += X_up[i].T @ Ia @ X_up[i]
            pA[lam] += X_up[i].T @ pa
    a = np.zeros((N, 6))
    qdd = np.zeros(model.nv)
    a0 = np.concatenate([np.zeros(3), -model.gravity])      # gravity as a base acceleration
    for i in range(N):                                      # pass 3: accelerations, root to leaves
        vs, nv = model.v_start[i], model.nv_j[i]
        lam = model.parent[i]
        a_prime = X_up[i] @ (a[lam] if lam >= 0 else a0) + c[i]
        if nv > 0:
            qdd_i = Dinv[i, :nv, :nv] @ (u[i, :nv] - U[i, :, :nv].T @ a_prime)  # q̈_i = D⁻¹(u - Uᵀ a')
            qdd[vs:vs + nv] = qdd_i
            a[i] = a_prime + model.S[i, :, :nv] @ qdd_i
        else:
            a[i] = a_prime
    return qdd
