"""Composite-rigid-body algorithm for the joint-space inertia matrix H(q) (Todorov, "Composite Rigid Body
algorithm"; RBDA Table 6.2; the factorization H = H Φ M Φᵀ Hᵀ of thesis eq. 2.34 computed recursively).
"""
from __future__ import annotations

import numpy as np

from .kinematics import forward_kinematics
from .model import Model

__all__ = ["mass_matrix"]


def mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia ``H(q)`` (nv x nv), symmetric positive definite; ``KE = ½ q̇ᵀ H q̇`` (eq. 2.34)."""
    N = model.n_links
    _, _, X_up = forward_kinematics(model, q)
    Ic = np.array(model.inertia)                            # composite inertias, link coordinates
    for i in range(N - 1, -1, -1):                          # I^c_λ += X_{i,λ}ᵀ I^c_i X_{i,λ}
        lam = model.parent[i]
        if lam >= 0:
            Ic[lam] += X_up[i].T @ Ic[i] @ X_up[i]
    H = np.zeros((model.nv, model.nv))
    for i in range(N):
        nv_i = model.nv_j[i]
        if nv_i == 0:
            continue
        vi = slice(model.v_start[i], model.v_start[i] + nv_i)
        F = Ic[i] @ model.S[i, :, :nv_i]                    # F = I^c_i S_i
        H[vi, vi] = model.S[i, :, :nv_i].T @ F              # H_ii = S_iᵀ I^c_i S_i
        j = i
        while model.parent[j] >= 0:                         # walk to the root: H_ij = Fᵀ S_j
            F = X_up[j].T @ F
            j = model.parent[j]
            nv_j = model.nv_j[j]
            if nv_j == 0:
                continue
            vj = slice(model.v_start[j], model.v_start[j] + nv_j)
            H[vi, vj] = F.T @ model.S[j, :, :nv_j]
            H[vj, vi] = H[vi, vj].T
    return H
