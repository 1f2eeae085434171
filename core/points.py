"""Kinematics of points fixed on links: position, velocity, the point Jacobian J(x, k) of thesis eq. 2.37, and
the velocity-dependent acceleration J̇q̇ of eq. 2.65–2.67. All results are in world coordinates.

A point is given as ``(body, point)``: a body name or index, and either a named point of that body or a
3-vector in the body's link frame. The ``*_at`` functions take a :class:`LinkKinematics` computed once per
state, so that many points (all the constraints of a scene) share one forward-kinematics pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jit import cross_motion, motion_x, njit
from .kinematics import fk_kernel, subspace_times
from .model import Model

__all__ = ["LinkKinematics", "link_kinematics", "position_at", "velocity_at", "jacobian_at",
           "bias_acceleration_at", "point_position", "point_velocity", "point_jacobian", "point_bias_acceleration",
           "point_acceleration"]


@dataclass
class LinkKinematics:
    """Per-link quantities at one state: world poses ``R_WL`` (N,3,3), ``p_WL`` (N,3); the parent → link
    transforms as ``E`` (N,3,3) = R_PCᵀ and ``r`` (N,3) = p_PC; spatial velocities ``v`` (N,6) and
    velocity-product accelerations ``a_vp`` (N,6) in link coordinates (``a_vp`` is the link acceleration when
    q̈ = 0 and gravity is off, eq. 2.65), or None without q̇."""
    R_WL: np.ndarray
    p_WL: np.ndarray
    E: np.ndarray
    r: np.ndarray
    v: np.ndarray | None = None
    a_vp: np.ndarray | None = None


@njit
def velocity_product_kernel(parent, S, v_start, nv_j, E, r, qd, v, a):
    """v_i = X v_λ + S q̇_i and a_i = X a_λ + v_i × (S q̇_i) (eq. 2.65 with q̈ = 0, no gravity)."""
    vJ, tmp = np.empty(6), np.empty(6)
    for i in range(parent.shape[0]):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        subspace_times(S, i, nv, qd, vs, vJ)
        if lam < 0:
            for c in range(6):
                v[i, c] = vJ[c]
                a[i, c] = 0.0
        else:
            motion_x(E[i], r[i], v[lam], v[i])
            motion_x(E[i], r[i], a[lam], a[i])
            for c in range(6):
                v[i, c] += vJ[c]
        cross_motion(v[i], vJ, tmp)
        for c in range(6):
            a[i, c] += tmp[c]


def link_kinematics(model: Model, q: np.ndarray, qd: np.ndarray | None = None) -> LinkKinematics:
    """Forward kinematics, and with ``qd`` the link velocities and velocity-product accelerations."""
    N = model.n_links
    E, r = np.empty((N, 3, 3)), np.empty((N, 3))
    R_WL, p_WL = np.empty((N, 3, 3)), np.empty((N, 3))
    ka = model.kernel_args
    fk_kernel(ka.parent, ka.joint_type, ka.axis, ka.R_tree, ka.p_tree, ka.q_start,
              np.ascontiguousarray(q, dtype=float), E, r, R_WL, p_WL)
    if qd is None:
        return LinkKinematics(R_WL, p_WL, E, r)
    v, a = np.empty((N, 6)), np.empty((N, 6))
    velocity_product_kernel(ka.parent, ka.S, ka.v_start, ka.nv_j, E, r,
                            np.ascontiguousarray(qd, dtype=float), v, a)
    return LinkKinematics(R_WL, p_WL, E, r, v, a)


def position_at(kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """World position ``x = p_k + R_k r`` of body point r on link k."""
    return kin.p_WL[k] + kin.R_WL[k] @ r


@njit
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit
def _rotate(R, x, out):
    for a in range(3):
        out[a] = R[a, 0] * x[0] + R[a, 1] * x[1] + R[a, 2] * x[2]


@njit
def velocity_kernel(R, v, r, out):
    """out ← R (v_O + ω × r)."""
    t = np.empty(3)
    _cross(v[:3], r, t)
    for a in range(3):
        t[a] += v[3 + a]
    _rotate(R, t, out)


@njit
def bias_kernel(R, a, v, r, out):
    """out ← R (a_O + α × r + ω × (v_O + ω × r))   (eq. 2.66–2.67)."""
    t, u, w = np.empty(3), np.empty(3), np.empty(3)
    _cross(v[:3], r, t)
    for c in range(3):
        t[c] += v[3 + c]                                      # v_O + ω × r
    _cross(v[:3], t, u)                                       # ω × (…)
    _cross(a[:3], r, w)                                       # α × r
    for c in range(3):
        t[c] = a[3 + c] + w[c] + u[c]
    _rotate(R, t, out)


@njit
def jacobian_kernel(parent, S, v_start, nv_j, R_WL, p_WL, k, r, J):
    """J ← the point Jacobian of body point r on link k (3 x nv, zero outside k's ancestors; eq. 2.37)."""
    x = np.empty(3)
    _rotate(R_WL[k], r, x)
    for a in range(3):
        x[a] += p_WL[k, a]
    J[:, :] = 0.0
    w, vO, d, c = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    j = k
    while j >= 0:
        for a in range(3):
            d[a] = x[a] - p_WL[j, a]
        for m in range(nv_j[j]):
            _rotate(R_WL[j], S[j, :3, m], w)                  # ω = R_j S_ω
            _rotate(R_WL[j], S[j, 3:, m], vO)                 # v = R_j S_v
            _cross(w, d, c)
            for a in range(3):
                J[a, v_start[j] + m] = vO[a] + c[a]           # v + ω × (x − p_j)
        j = parent[j]


def velocity_at(kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """World velocity ``R_k (v_O + ω × r)`` of body point r on link k."""
    out = np.empty(3)
    velocity_kernel(kin.R_WL[k], kin.v[k], np.asarray(r, dtype=float), out)
    return out


def jacobian_at(model: Model, kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """Point Jacobian ``J(x, k)`` (3 x nv), ``ẋ = J q̇`` (thesis eq. 2.37).

    Column block of each ancestor joint j of link k: with the joint's subspace in world axes, ``ω = R_j S_ω`` and
    ``v = R_j S_v`` (at j's origin), the point moves at ``v + ω × (x - p_j)``.
    """
    J = np.empty((3, model.nv))
    ka = model.kernel_args
    jacobian_kernel(ka.parent, ka.S, ka.v_start, ka.nv_j, kin.R_WL, kin.p_WL, int(k),
                    np.asarray(r, dtype=float), J)
    return J


def bias_acceleration_at(kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """``J̇q̇``: from the velocity-product acceleration a = [α; a_O] and velocity v = [ω; v_O] of link k, the
    classical acceleration of body point r is ``a_O + α × r + ω × (v_O + ω × r)`` (thesis eq. 2.66–2.67)."""
    out = np.empty(3)
    bias_kernel(kin.R_WL[k], kin.a_vp[k], kin.v[k], np.asarray(r, dtype=float), out)
    return out


def point_position(model: Model, q: np.ndarray, body, point) -> np.ndarray:
    """World position of a body point (3,)."""
    k, r = model.resolve_point(body, point)
    return position_at(link_kinematics(model, q), k, r)


def point_jacobian(model: Model, q: np.ndarray, body, point) -> np.ndarray:
    """Point Jacobian ``J(x, k)`` (3 x nv), world frame: ``ẋ = J q̇`` (thesis eq. 2.37)."""
    k, r = model.resolve_point(body, point)
    return jacobian_at(model, link_kinematics(model, q), k, r)


def point_velocity(model: Model, q: np.ndarray, qd: np.ndarray, body, point) -> np.ndarray:
    """World velocity ``ẋ`` of a body point (3,)."""
    k, r = model.resolve_point(body, point)
    return velocity_at(link_kinematics(model, q, qd), k, r)


def point_bias_acceleration(model: Model, q: np.ndarray, qd: np.ndarray, body, point) -> np.ndarray:
    """``J̇ q̇`` (3,): the acceleration of the point when q̈ = 0 ("accel from velocity", thesis §2.4.3)."""
    k, r = model.resolve_point(body, point)
    return bias_acceleration_at(link_kinematics(model, q, qd), k, r)


def point_acceleration(model: Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray | None, body, point) -> np.ndarray:
    """World acceleration ``ẍ = J q̈ + J̇ q̇`` of a body point (3,) (thesis eq. 2.59); ``qdd=None`` gives J̇q̇."""
    k, r = model.resolve_point(body, point)
    kin = link_kinematics(model, q, qd)
    acc = bias_acceleration_at(kin, k, r)
    return acc if qdd is None else acc + jacobian_at(model, kin, k, r) @ qdd
