"""Recursive Newton–Euler inverse dynamics (Todorov, "Recursive Newton-Euler algorithm"; RBDA Table 5.1).

Notation: link i with parent λ(i), motion subspace S_i (link coordinates), X_i the parent → link transform.
Gravity enters as a fictitious base acceleration a_0 = [0; −g], so the returned τ includes it.
"""
from __future__ import annotations

import numpy as np

from .jit import as_f64, cross_force, cross_motion, entry, force_xt, matvec6, motion_x, njit
from .kinematics import external_forces, fk_kernel, link_forces_kernel
from .layout import thread_work
from .model import Model

__all__ = ["inverse_dynamics", "nonlinear_effects", "rnea_entry", "rnea_passes"]


@njit
def rnea_passes(parent, S, v_start, nv_j, E, r, inertia, gravity, qd, qdd, fx, v, a, f, tau, s6):
    """τ ← H q̈ + C q̇ + g − Σ J_iᵀ f^x_i from the parent → link transforms ``E``, ``r`` of the forward kinematics
    (RBDA Table 5.1): forward pass v_i = X v_λ + S q̇_i, a_i = X a_λ + S q̈_i + v_i × S q̇_i (a_0 = [0; −g]),
    f_i = I a_i + v_i ×* I v_i − f^x_i; backward pass τ_i = S_iᵀ f_i, f_λ += X_iᵀ f_i. ``v``, ``a``, ``f`` (N x 6)
    and ``s6`` (3 x 6; rows: S q̇_i, a product, a_0 then I v_i) are scratch; ``fx`` (N x 6) the external forces in
    link coordinates."""
    N = parent.shape[0]
    for c in range(6):
        s6[2, c] = 0.0
    s6[2, 3], s6[2, 4], s6[2, 5] = -gravity[0], -gravity[1], -gravity[2]
    for i in range(N):                                       # forward pass: velocities and accelerations
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for c in range(6):                                   # S q̇_i
            s = 0.0
            for k in range(nv):
                s += S[i, c, k] * qd[vs + k]
            s6[0, c] = s
        if lam < 0:
            motion_x(E, r, i, s6, 2, a, i)                    # a_i = X a_0 + …
            for c in range(6):
                v[i, c] = s6[0, c]
        else:
            motion_x(E, r, i, v, lam, v, i)                   # v_i = X v_λ + S q̇_i
            for c in range(6):
                v[i, c] += s6[0, c]
            motion_x(E, r, i, a, lam, a, i)                   # a_i = X a_λ + …
        cross_motion(v, i, s6, 0, s6, 1)                      # … + S q̈_i + v_i × S q̇_i
        for c in range(6):
            s = s6[1, c]
            for k in range(nv):
                s += S[i, c, k] * qdd[vs + k]
            a[i, c] += s
    for i in range(N):
        matvec6(inertia, i, a, i, f, i)                       # f_i = I a_i + v_i ×* I v_i − f^x_i
        matvec6(inertia, i, v, i, s6, 2)
        cross_force(v, i, s6, 2, s6, 1)
        for c in range(6):
            f[i, c] += s6[1, c] - fx[i, c]
    for i in range(N - 1, -1, -1):                           # backward pass: τ_i = S_iᵀ f_i, f_λ += Xᵀ f_i
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            s = 0.0
            for c in range(6):
                s += S[i, c, k] * f[i, c]
            tau[vs + k] = s
        if lam >= 0:
            force_xt(E, r, i, f, i, s6, 1)
            for c in range(6):
                f[lam, c] += s6[1, c]


@entry
def rnea_entry(tree, kin, plant, q, qd, qdd, f_ext, use_f_ext, tau):
    """The entry point from Python: τ ← H q̈ + C q̇ + g − Σ J_iᵀ f_ext,i in the arrays of
    :func:`core.layout.thread_work` (``f_ext``: world forces about the world origin, N x 6, used when
    ``use_f_ext``)."""
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    fx = plant.fx
    if use_f_ext:
        link_forces_kernel(kin.R_WL, kin.p_WL, f_ext, fx)
    else:
        fx[:, :] = 0.0
    rnea_passes(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.E, kin.r, tree.inertia, tree.gravity, qd, qdd, fx,
                plant.v, plant.acc, plant.f, tau, plant.s6)


def inverse_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint forces ``τ = H(q) q̈ + C(q, q̇) q̇ + g(q) - Σ J_iᵀ f_ext,i`` (nv,).

    ``f_ext`` (optional, N x 6): external spatial force on each link in world coordinates about the world
    origin, ``[n_O; f]``.
    """
    tau = np.empty(model.nv)
    f, use = external_forces(model, f_ext)
    kin, _, plant = thread_work(model.n_links, model.nv)
    rnea_entry(model.kernel_tree, kin, plant, as_f64(q), as_f64(qd), as_f64(qdd), f, use, tau)
    return tau


def nonlinear_effects(model: Model, q: np.ndarray, qd: np.ndarray, f_ext: np.ndarray | None = None) -> np.ndarray:
    """``b(q, q̇) = C(q, q̇) q̇ + g(q) - Σ Jᵀ f_ext``: RNEA with q̈ = 0 (so that ``H q̈ + b = τ``)."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)
