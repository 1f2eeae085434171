"""Composite-rigid-body algorithm for the joint-space inertia matrix H(q) (Todorov, "Composite Rigid Body
algorithm"; RBDA Table 6.2; the factorization H = H Φ M Φᵀ Hᵀ of thesis eq. 2.34 computed recursively), in world
coordinates like :mod:`core.aba` (RBDA §6.2's absolute form).

With every link's motion subspace s_i and inertia I_i in world axes about the world origin
(:func:`core.kinematics.world_frame`), composite inertias add without transforms and an off-diagonal block is a plain
product::

    I^c_λ += I^c_i  (leaves → root),   H_ii = s_iᵀ I^c_i s_i + diag(a_i),   H_ij = (I^c_i s_i)ᵀ s_j  (j an ancestor)

(a_i: the joint's armature, :attr:`core.Model.armature`).
"""
from __future__ import annotations

import numpy as np

from .jit import as_f64, entry, njit
from .kinematics import fk_kernel, world_frame
from .layout import thread_work
from .model import Model

__all__ = ["mass_matrix", "crba_entry", "mass_matrix_kernel"]


@njit(inline='always')
def mass_matrix_kernel(parent, Sw, v_start, nv_j, armature, I, Ic, H, F):
    """H ← joint-space inertia (nv x nv) by the recursion of the module docstring, from the world motion subspaces
    ``Sw`` and inertias ``I`` of :func:`core.kinematics.world_frame`, and the joints' ``armature`` on the
    diagonal. ``Ic`` (N x 6 x 6) and ``F`` (6 x 6: row k is
    I^c_i s_i[:, k]) are scratch."""
    N = parent.shape[0]
    Ic[:, :, :] = I
    for i in range(N - 1, -1, -1):                           # I^c_λ += I^c_i
        lam = parent[i]
        if lam >= 0:
            for a in range(6):
                for b in range(6):
                    Ic[lam, a, b] += Ic[i, a, b]
    H[:, :] = 0.0
    for i in range(N):
        nv = nv_j[i]
        if nv == 0:
            continue
        vi = v_start[i]
        for k in range(nv):                                  # F = (I^c_i s_i)ᵀ
            for a in range(6):
                s = 0.0
                for c in range(6):
                    s += Ic[i, a, c] * Sw[i, c, k]
                F[k, a] = s
        for k in range(nv):                                  # H_ii = s_iᵀ F + diag(a_i) (the armature)
            for m in range(nv):
                s = armature[vi + k] if k == m else 0.0
                for a in range(6):
                    s += Sw[i, a, m] * F[k, a]
                H[vi + m, vi + k] = s
        j = parent[i]
        while j >= 0:                                        # H_ij = Fᵀ s_j for every ancestor j
            vj = v_start[j]
            for k in range(nv):
                for m in range(nv_j[j]):
                    s = 0.0
                    for a in range(6):
                        s += F[k, a] * Sw[j, a, m]
                    H[vi + k, vj + m] = s
                    H[vj + m, vi + k] = s
            j = parent[j]


@entry
def crba_entry(tree, kin, aba, plant, q, H):
    """The entry point from Python: H ← joint-space inertia at q, in the arrays of :func:`core.layout.thread_work`."""
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    world_frame(tree.S, tree.nv_j, tree.mass, tree.com, tree.inertia_com, kin.R_WL, kin.p_WL, aba.Sw, aba.IA)
    mass_matrix_kernel(tree.parent, aba.Sw, tree.v_start, tree.nv_j, tree.armature, aba.IA, plant.Ic, H, plant.F6)


def mass_matrix(model: Model, q: np.ndarray) -> np.ndarray:
    """Joint-space inertia ``H(q)`` (nv x nv), symmetric positive definite; ``KE = ½ q̇ᵀ H q̇`` (eq. 2.34)."""
    H = np.empty((model.nv, model.nv))
    kin, aba, plant = thread_work(model.n_links)
    crba_entry.fast(model.kernel_tree, kin, aba, plant, as_f64(q), H)
    return H
