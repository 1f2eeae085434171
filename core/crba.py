"""Composite-rigid-body algorithm for the joint-space inertia matrix H(q) (Todorov, "Composite Rigid Body
algorithm"; RBDA Table 6.2; the factorization H = H Φ M Φᵀ Hᵀ of thesis eq. 2.34 computed recursively).
"""
from __future__ import annotations

import numpy as np

from .jit import as_f64, entry, force_xt, inertia_xt, njit
from .kinematics import fk_kernel
from .layout import thread_work
from .model import Model

__all__ = ["mass_matrix", "crba_entry", "mass_matrix_kernel"]


@njit
def mass_matrix_kernel(parent, S, v_start, nv_j, E, r, inertia, Ic, H, F, out, W):
    """H ← joint-space inertia (nv x nv) from the parent → link transforms ``E``, ``r`` of the forward
    kinematics: composite inertias I^c_λ += X_iᵀ I^c_i X_i (leaves to root), then H_ii = S_iᵀ I^c_i S_i and
    H_ij = (X…ᵀ I^c_i S_i)ᵀ S_j walking to the root. ``Ic`` (N x 6 x 6), ``F`` (6 x 6: row k is the force
    I^c_i S_i[:, k] carried to the root), ``out`` (6 x 6), ``W`` (3 x 3) are scratch."""
    N = parent.shape[0]
    Ic[:, :, :] = inertia
    for i in range(N - 1, -1, -1):                           # I^c_λ += X_iᵀ I^c_i X_i
        lam = parent[i]
        if lam >= 0:
            inertia_xt(E, r, i, Ic, i, out, W)
            for a in range(6):
                for b in range(6):
                    Ic[lam, a, b] += out[a, b]
    H[:, :] = 0.0
    for i in range(N):
        nv = nv_j[i]
        if nv == 0:
            continue
        vi = v_start[i]
        for k in range(nv):                                  # F = (I^c_i S_i)ᵀ
            for a in range(6):
                s = 0.0
                for c in range(6):
                    s += Ic[i, a, c] * S[i, c, k]
                F[k, a] = s
        for k in range(nv):                                  # H_ii = S_iᵀ F
            for m in range(nv):
                s = 0.0
                for a in range(6):
                    s += S[i, a, m] * F[k, a]
                H[vi + m, vi + k] = s
        j = i
        while parent[j] >= 0:                                # H_ij = Fᵀ S_j, F ← X_jᵀ F walking to the root
            for k in range(nv):
                force_xt(E, r, j, F, k, F, k)
            j = parent[j]
            vj = v_start[j]
            for k in range(nv):
                for m in range(nv_j[j]):
                    s = 0.0
                    for a in range(6):
                        s += F[k, a] * S[j, a, m]
                    H[vi + k, vj + m] = s
                    H[vj + m, vi + k] = s


@entry
def crba_entry(tree, kin, plant, q, H):
    """The entry point from Python: H ← joint-space inertia at q, in the arrays of :func:`core.layout.thread_work`."""
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    mass_matrix_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.E, kin.r, tree.inertia, plant.Ic, H,
                       plant.F6, plant.out6, plant.W3)


def mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia ``H(q)`` (nv x nv), symmetric positive definite; ``KE = ½ q̇ᵀ H q̇`` (eq. 2.34)."""
    H = np.empty((model.nv, model.nv))
    kin, _, plant = thread_work(model.n_links, model.nv)
    crba_entry(model.kernel_tree, kin, plant, as_f64(q), H)
    return H
