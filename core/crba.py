"""Composite-rigid-body algorithm for the joint-space inertia matrix H(q) (Todorov, "Composite Rigid Body
algorithm"; RBDA Table 6.2; the factorization H = H Φ M Φᵀ Hᵀ of thesis eq. 2.34 computed recursively).
"""
from __future__ import annotations

import numpy as np

from .jit import force_xt, inertia_xt, njit
from .kinematics import fk_kernel
from .model import Model

__all__ = ["mass_matrix", "crba_kernel", "mass_matrix_kernel"]


@njit
def mass_matrix_kernel(parent, S, v_start, nv_j, E, r, inertia, Ic, H, F, col, out, W):
    """H ← joint-space inertia (nv x nv) from the parent → link transforms ``E``, ``r`` of the forward
    kinematics: composite inertias I^c_λ += X_iᵀ I^c_i X_i (leaves to root), then H_ii = S_iᵀ I^c_i S_i and
    H_ij = (X…ᵀ I^c_i S_i)ᵀ S_j walking to the root. ``Ic`` (N x 6 x 6), ``F``, ``out`` (6 x 6), ``col`` (6),
    ``W`` (3 x 3) are scratch."""
    N = parent.shape[0]
    Ic[:, :, :] = inertia
    for i in range(N - 1, -1, -1):                           # I^c_λ += X_iᵀ I^c_i X_i
        lam = parent[i]
        if lam >= 0:
            inertia_xt(E[i], r[i], Ic[i], out, W)
            for a in range(6):
                for b in range(6):
                    Ic[lam, a, b] += out[a, b]
    H[:, :] = 0.0
    for i in range(N):
        nv = nv_j[i]
        if nv == 0:
            continue
        vi = v_start[i]
        for k in range(nv):                                  # F = I^c_i S_i
            for a in range(6):
                s = 0.0
                for c in range(6):
                    s += Ic[i, a, c] * S[i, c, k]
                F[a, k] = s
        for k in range(nv):                                  # H_ii = S_iᵀ F
            for m in range(nv):
                s = 0.0
                for a in range(6):
                    s += S[i, a, m] * F[a, k]
                H[vi + m, vi + k] = s
        j = i
        while parent[j] >= 0:                                # H_ij = Fᵀ S_j, F ← X_jᵀ F walking to the root
            for k in range(nv):
                force_xt(E[j], r[j], F[:, k], col)
                F[:, k] = col
            j = parent[j]
            vj = v_start[j]
            for k in range(nv):
                for m in range(nv_j[j]):
                    s = 0.0
                    for a in range(6):
                        s += F[a, k] * S[j, a, m]
                    H[vi + k, vj + m] = s
                    H[vj + m, vi + k] = s


@njit
def crba_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, q, H):
    """H ← joint-space inertia at q (nv x nv)."""
    N = parent.shape[0]
    E, r = np.empty((N, 3, 3)), np.empty((N, 3))
    R_WL, p_WL = np.empty((N, 3, 3)), np.empty((N, 3))
    fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL)
    mass_matrix_kernel(parent, S, v_start, nv_j, E, r, inertia, np.empty((N, 6, 6)), H, np.empty((6, 6)),
                       np.empty(6), np.empty((6, 6)), np.empty((3, 3)))


def mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia ``H(q)`` (nv x nv), symmetric positive definite; ``KE = ½ q̇ᵀ H q̇`` (eq. 2.34)."""
    H = np.empty((model.nv, model.nv))
    t = model.tree
    crba_kernel(t.parent, t.joint_type, t.axis, t.R_tree, t.p_tree, t.S, t.q_start, t.v_start, t.nv_j, t.inertia,
                np.ascontiguousarray(q, dtype=float), H)
    return H
