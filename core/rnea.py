"""Recursive Newton–Euler inverse dynamics (Todorov, "Recursive Newton-Euler algorithm"; RBDA Table 5.1), in
world coordinates like :mod:`core.aba` (Featherstone's absolute form, RBDA §5.3 and §7.3).

Notation: link i, parent λ; ``s_i`` its motion subspace and ``I_i`` its rigid-body inertia, both in world axes
about the world origin W (:func:`core.kinematics.world_frame`, which moves with link i, so ṡ_i = v_i × s_i). Velocities
and forces then pass between links without transforms. Gravity enters as a fictitious base acceleration
a_0 = [0; −g], so the returned τ includes it::

    forward   v_i = v_λ + s_i q̇_i,   a_i = a_λ + s_i q̈_i + v_i × s_i q̇_i,   f_i = I_i a_i + v_i ×* I_i v_i − f^x_i
    backward  τ_i = s_iᵀ f_i + a_i q̈_i,   f_λ += f_i      (a_i: the joint's armature)
"""
from __future__ import annotations

import numpy as np

from .jit import as_f64, cross_force, cross_motion, entry, matvec6, njit
from .kinematics import external_forces, fk_kernel, world_frame
from .layout import thread_work
from .model import Model

__all__ = ["inverse_dynamics", "nonlinear_effects", "rnea_entry", "rnea_passes"]


@njit(inline='always')
def rnea_passes(parent, Sw, v_start, nv_j, armature, I, gravity, qd, qdd, fx, v, a, f, tau, s6):
    """τ ← H q̈ + C q̇ + g − Σ J_iᵀ f^x_i by the two passes of the module docstring, from the world motion subspaces
    ``Sw`` and inertias ``I`` of :func:`core.kinematics.world_frame` and the external forces ``fx`` (N x 6, world axes
    about W); the joints' ``armature`` adds a_i q̈_i. ``v``, ``a``, ``f`` (N x 6) and ``s6`` (3 x 6) are scratch."""
    N = parent.shape[0]
    for i in range(N):                                       # forward pass: velocities and accelerations
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for c in range(6):                                   # s q̇_i and s q̈_i
            sv, sa = 0.0, 0.0
            for k in range(nv):
                sv += Sw[i, c, k] * qd[vs + k]
                sa += Sw[i, c, k] * qdd[vs + k]
            s6[0, c], s6[1, c] = sv, sa
            v[i, c] = sv if lam < 0 else v[lam, c] + sv
        cross_motion(v, i, s6, 0, s6, 2)                      # v_i × s q̇_i
        for c in range(6):
            if lam >= 0:
                base = a[lam, c]
            else:
                base = -gravity[c - 3] if c >= 3 else 0.0
            a[i, c] = base + s6[1, c] + s6[2, c]
        matvec6(I, i, a, i, f, i)                             # f_i = I a_i + v_i ×* I v_i − f^x_i
        matvec6(I, i, v, i, s6, 0)
        cross_force(v, i, s6, 0, s6, 1)
        for c in range(6):
            f[i, c] += s6[1, c] - fx[i, c]
    for i in range(N - 1, -1, -1):                           # backward pass: τ_i = s_iᵀ f_i, f_λ += f_i
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            s = armature[vs + k] * qdd[vs + k]
            for c in range(6):
                s += Sw[i, c, k] * f[i, c]
            tau[vs + k] = s
        if lam >= 0:
            for c in range(6):
                f[lam, c] += f[i, c]


@entry
def rnea_entry(tree, kin, aba, plant, q, qd, qdd, f_ext, use_f_ext, tau):
    """The entry point from Python: τ ← H q̈ + C q̇ + g − Σ J_iᵀ f_ext,i in the arrays of
    :func:`core.layout.thread_work` (``f_ext``: world forces about the world origin, N x 6, used when
    ``use_f_ext``)."""
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    world_frame(tree.S, tree.nv_j, tree.mass, tree.com, tree.inertia_com, kin.R_WL, kin.p_WL, aba.Sw, aba.IA)
    fx = plant.fx
    if use_f_ext:
        fx[:, :] = f_ext
    else:
        fx[:, :] = 0.0
    rnea_passes(tree.parent, aba.Sw, tree.v_start, tree.nv_j, tree.armature, aba.IA, tree.gravity, qd, qdd, fx,
                plant.v, plant.acc, plant.f, tau, plant.s6)


def inverse_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint forces ``τ = H(q) q̈ + C(q, q̇) q̇ + g(q) - Σ J_iᵀ f_ext,i`` (nv,).

    ``f_ext`` (optional, N x 6): external spatial force on each link in world coordinates about the world
    origin, ``[n_O; f]``.
    """
    tau = np.empty(model.nv)
    f, use = external_forces(model, f_ext)
    kin, aba, plant = thread_work(model.n_links)
    rnea_entry.fast(model.kernel_tree, kin, aba, plant, as_f64(q), as_f64(qd), as_f64(qdd), f, use, tau)
    return tau


def nonlinear_effects(model: Model, q: np.ndarray, qd: np.ndarray, f_ext: np.ndarray | None = None) -> np.ndarray:
    """``b(q, q̇) = C(q, q̇) q̇ + g(q) - Σ Jᵀ f_ext``: RNEA with q̈ = 0 (so that ``H q̈ + b = τ``)."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)
