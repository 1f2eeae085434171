"""Whether a compiled tree's joint-space inertia H(q) is positive definite, in O(N) — without forming H.

H = L D Lᵀ in tree order, whose block pivots D_i = S_iᵀ I^A_i S_i are the joints' articulated inertias (the
``D_i`` of the articulated-body algorithm, RBDA Table 7.1 with q̇ = 0): H is positive definite exactly when
every D_i is. One backward pass computes them (I^A_λ += X_iᵀ (I^A_i − U_i D_i⁺ U_iᵀ) X_i, U_i = I^A_i S_i), and
the composite inertias I^c_i with them, whose projections S_iᵀ I^c_i S_i are H's diagonal blocks (their largest
entry is H's: the scale of the test). A dense eigen-decomposition of H would cost O(nv³) and nv² memory (a
10 000-body scene: 800 MB).
"""
from __future__ import annotations

import numpy as np

from ..model import BALL, FREE, HINGE, SLIDER, Model
from ..spatial import motion_transform, quat_to_rotation, rotation_about_axis

__all__ = ["singular_pivots"]


def singular_pivots(model: Model, q: np.ndarray, rtol: float = 1e-12) -> list[int]:
    """The links whose articulated inertia pivot D_i has an eigenvalue at or below ``rtol`` × max(1, max|H|) at
    configuration ``q`` (an empty list: H(q) is positive definite)."""
    N = model.n_links
    if N == 0 or model.nv == 0:
        return []
    X_up = _parent_to_link(model, q)
    IA = np.array(model.inertia, dtype=float)
    Ic = IA.copy()
    pivots: list[tuple[int, np.ndarray]] = []
    scale = 1.0
    with np.errstate(all="ignore"):
        for i in range(N - 1, -1, -1):
            nv = int(model.nv_j[i])
            Ia = IA[i]
            if nv:
                S = model.S[i][:, :nv]
                U = IA[i] @ S
                vs = int(model.v_start[i])
                D = S.T @ U + np.diag(model.armature[vs:vs + nv])        # the joint's armature is its own
                Dc = S.T @ Ic[i] @ S + np.diag(model.armature[vs:vs + nv])
                pivots.append((i, D))
                scale = max(scale, float(np.abs(Dc).max()))
                Ia = IA[i] - U @ np.linalg.pinv(D, rcond=1e-15, hermitian=True) @ U.T
            lam = int(model.parent[i])
            if lam >= 0:
                X = X_up[i]
                IA[lam] += X.T @ Ia @ X
                Ic[lam] += X.T @ Ic[i] @ X
    bad = []
    for i, D in pivots:
        D = 0.5 * (D + D.T)
        if not np.isfinite(D).all() or np.linalg.eigvalsh(D).min() <= rtol * scale:
            bad.append(i)
    return sorted(bad)


def _parent_to_link(model: Model, q: np.ndarray) -> np.ndarray:
    """``X_up[i]``, the motion transform from link i's parent to link i at q (N x 6 x 6), in one pass over the
    links' own arrays (the model's kernel arrays find each link's root by walking, O(N·depth))."""
    X = np.empty((model.n_links, 6, 6))
    for i in range(model.n_links):
        jt, qs, axis = int(model.joint_type[i]), int(model.q_start[i]), model.axis[i]
        R_J, p_J = np.eye(3), np.zeros(3)
        if jt == HINGE:
            R_J = rotation_about_axis(axis, float(q[qs]))
        elif jt == SLIDER:
            p_J = axis * float(q[qs])
        elif jt == BALL:
            R_J = quat_to_rotation(q[qs:qs + 4])
        elif jt == FREE:
            R_J, p_J = quat_to_rotation(q[qs + 3:qs + 7]), np.array(q[qs:qs + 3], dtype=float)
        R_tree = model.R_tree[i]
        X[i] = motion_transform(R_tree @ R_J, model.p_tree[i] + R_tree @ p_J)     # R_PC = R_PJ R_J, p_PC
    return X
