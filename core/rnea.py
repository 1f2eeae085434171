"""Recursive Newton–Euler inverse dynamics (Todorov, "Recursive Newton-Euler algorithm"; RBDA Table 5.1).

Notation: link i with parent λ(i), motion subspace S_i (in link coordinates), X_up[i] = X_{i,λ(i)}.
Gravity enters as a fictitious base acceleration a_0 = [0; -g], so the returned τ includes it.
"""
from __future__ import annotations

import numpy as np

from .kinematics import forward_kinematics, link_forces_from_world
from .model import Model
from .spatial import crf, crm

__all__ = ["inverse_dynamics", "nonlinear_effects"]


def inverse_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint forces ``τ = H(q) q̈ + C(q, q̇) q̇ + g(q) - Σ J_iᵀ f_ext,i`` (nv,).

    ``f_ext`` (optional, N x 6): external spatial force on each link in world coordinates about the world
    origin, ``[n_O; f]``.
    """
    N = model.n_links
    R_WL, p_WL, X_up = forward_kinematics(model, q)
    fx = link_forces_from_world(R_WL, p_WL, f_ext)
    a0 = np.concatenate([np.zeros(3), -model.gravity])
    v = np.zeros((N, 6))
    a = np.zeros((N, 6))
    f = np.zeros((N, 6))
    for i in range(N):                                      # forward pass: velocities and accelerations
        vs, nv = model.v_start[i], model.nv_j[i]
        S = model.S[i, :, :nv]
        vJ = S @ qd[vs:vs + nv]
        lam = model.parent[i]
        v_parent = v[lam] if lam >= 0 else np.zeros(6)
        a_parent = a[lam] if lam >= 0 else a0
        v[i] = X_up[i] @ v_parent + vJ                      # v_i = X v_λ + S q̇_i
        a[i] = X_up[i] @ a_parent + S @ qdd[vs:vs + nv] + crm(v[i]) @ vJ   # a_i = X a_λ + S q̈_i + v_i × S q̇_i
        I = model.inertia[i]
        f[i] = I @ a[i] + crf(v[i]) @ (I @ v[i])            # f_i = I a_i + v_i ×* I v_i
        if fx is not None:
            f[i] -= fx[i]
    tau = np.zeros(model.nv)
    for i in range(N - 1, -1, -1):                          # backward pass: accumulate, project
        vs, nv = model.v_start[i], model.nv_j[i]
        tau[vs:vs + nv] = model.S[i, :, :nv].T @ f[i]       # τ_i = S_iᵀ f_i
        lam = model.parent[i]
        if lam >= 0:
            f[lam] += X_up[i].T @ f[i]                      # f_λ += X_{i,λ}ᵀ f_i
    return tau


def nonlinear_effects(model: Model, q: np.ndarray, qd: np.ndarray, f_ext: np.ndarray | None = None) -> np.ndarray:
    """``b(q, q̇) = C(q, q̇) q̇ + g(q) - Σ Jᵀ f_ext``: RNEA with q̈ = 0 (so that ``H q̈ + b = τ``)."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)
