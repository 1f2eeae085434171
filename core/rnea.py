"""Recursive Newton–Euler inverse dynamics (Todorov, "Recursive Newton-Euler algorithm"; RBDA Table 5.1).

Notation: link i with parent λ(i), motion subspace S_i (link coordinates), X_i the parent → link transform.
Gravity enters as a fictitious base acceleration a_0 = [0; −g], so the returned τ includes it.
"""
from __future__ import annotations

import numpy as np

from .jit import cross_force, cross_motion, force_xt, matvec6, motion_x, njit
from .kinematics import external_forces, kinematics_with_forces, subspace_times
from .model import Model

__all__ = ["inverse_dynamics", "nonlinear_effects", "rnea_kernel", "rnea_passes"]


@njit
def rnea_passes(parent, S, v_start, nv_j, E, r, inertia, gravity, qd, qdd, fx, v, a, f, tau, vJ, tmp, Iv):
    """τ ← H q̈ + C q̇ + g − Σ J_iᵀ f^x_i from the parent → link transforms ``E``, ``r`` of the forward kinematics
    (RBDA Table 5.1): forward pass v_i = X v_λ + S q̇_i, a_i = X a_λ + S q̈_i + v_i × S q̇_i (a_0 = [0; −g]),
    f_i = I a_i + v_i ×* I v_i − f^x_i; backward pass τ_i = S_iᵀ f_i, f_λ += X_iᵀ f_i. ``v``, ``a``, ``f`` (N x 6)
    and ``vJ``, ``tmp``, ``Iv`` (6) are scratch; ``fx`` (N x 6) the external forces in link coordinates."""
    N = parent.shape[0]
    a0 = Iv
    for c in range(6):
        a0[c] = 0.0
    a0[3], a0[4], a0[5] = -gravity[0], -gravity[1], -gravity[2]
    for i in range(N):                                       # forward pass: velocities and accelerations
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        subspace_times(S, i, nv, qd, vs, vJ)
        if lam < 0:
            motion_x(E[i], r[i], a0, a[i])                    # a_i = X a_0 + …
            for c in range(6):
                v[i, c] = vJ[c]
        else:
            motion_x(E[i], r[i], v[lam], v[i])                # v_i = X v_λ + S q̇_i
            for c in range(6):
                v[i, c] += vJ[c]
            motion_x(E[i], r[i], a[lam], a[i])                # a_i = X a_λ + …
        cross_motion(v[i], vJ, tmp)                           # … + S q̈_i + v_i × S q̇_i
        for c in range(6):
            s = tmp[c]
            for k in range(nv):
                s += S[i, c, k] * qdd[vs + k]
            a[i, c] += s
    for i in range(N):
        matvec6(inertia[i], a[i], f[i])                       # f_i = I a_i + v_i ×* I v_i − f^x_i
        matvec6(inertia[i], v[i], Iv)
        cross_force(v[i], Iv, tmp)
        for c in range(6):
            f[i, c] += tmp[c] - fx[i, c]
    for i in range(N - 1, -1, -1):                           # backward pass: τ_i = S_iᵀ f_i, f_λ += Xᵀ f_i
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            s = 0.0
            for c in range(6):
                s += S[i, c, k] * f[i, c]
            tau[vs + k] = s
        if lam >= 0:
            force_xt(E[i], r[i], f[i], tmp)
            for c in range(6):
                f[lam, c] += tmp[c]


@njit
def rnea_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity,
                q, qd, qdd, f_ext, use_f_ext, tau):
    """τ ← H(q) q̈ + C(q, q̇) q̇ + g(q) − Σ J_iᵀ f_ext,i (f_ext: world coordinates about the world origin)."""
    N = parent.shape[0]
    E, r, R_WL, p_WL, fx = kinematics_with_forces(parent, jtype, axis, R_tree, p_tree, q_start, q, f_ext, use_f_ext)
    rnea_passes(parent, S, v_start, nv_j, E, r, inertia, gravity, qd, qdd, fx, np.empty((N, 6)),
                np.empty((N, 6)), np.empty((N, 6)), tau, np.empty(6), np.empty(6), np.empty(6))


def inverse_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint forces ``τ = H(q) q̈ + C(q, q̇) q̇ + g(q) - Σ J_iᵀ f_ext,i`` (nv,).

    ``f_ext`` (optional, N x 6): external spatial force on each link in world coordinates about the world
    origin, ``[n_O; f]``.
    """
    tau = np.empty(model.nv)
    fx, use = external_forces(model, f_ext)
    t = model.tree
    rnea_kernel(t.parent, t.joint_type, t.axis, t.R_tree, t.p_tree, t.S, t.q_start, t.v_start, t.nv_j, t.inertia,
                t.gravity, np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(qd, dtype=float),
                np.ascontiguousarray(qdd, dtype=float), fx, use, tau)
    return tau


def nonlinear_effects(model: Model, q: np.ndarray, qd: np.ndarray, f_ext: np.ndarray | None = None) -> np.ndarray:
    """``b(q, q̇) = C(q, q̇) q̇ + g(q) - Σ Jᵀ f_ext``: RNEA with q̈ = 0 (so that ``H q̈ + b = τ``)."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)
