"""Kinematics of points fixed on links: position, velocity, the point Jacobian J(x, k) of thesis eq. 2.37, and
the velocity-dependent acceleration J̇q̇ of eq. 2.65–2.67. All results are in world coordinates.

A point is given as ``(body, point)``: a body name or index, and either a named point of that body or a
3-vector in the body's link frame. The ``*_at`` functions take a :class:`LinkKinematics` computed once per
state, so that many points (all the constraints of a scene) share one forward-kinematics pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jit import cross_motion, inline, motion_x, njit
from .kinematics import fk_kernel
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
def velocity_product_kernel(parent, S, v_start, nv_j, E, r, qd, v, c, a):
    """Root to leaves: v_i = X_i v_λ + S_i q̇_i, c_i = v_i × S_i q̇_i and a_i = X_i a_λ + c_i (the link
    accelerations at q̈ = 0 without gravity, eq. 2.65). All in link coordinates (S_i q̇_i is held in c_i's row
    until the cross product replaces it)."""
    for i in range(parent.shape[0]):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(6):
            s = 0.0
            for j in range(nv):
                s += S[i, k, j] * qd[vs + j]
            c[i, k] = s
        if lam < 0:
            for k in range(6):
                v[i, k] = c[i, k]
                a[i, k] = 0.0
        else:
            motion_x(E, r, i, v, lam, v, i)
            motion_x(E, r, i, a, lam, a, i)
            for k in range(6):
                v[i, k] += c[i, k]
        cross_motion(v, i, c, i, c, i)
        for k in range(6):
            a[i, k] += c[i, k]


def link_kinematics(model: Model, q: np.ndarray, qd: np.ndarray | None = None) -> LinkKinematics:
    """Forward kinematics, and with ``qd`` the link velocities and velocity-product accelerations."""
    N = model.n_links
    E, r = np.empty((N, 3, 3)), np.empty((N, 3))
    R_WL, p_WL = np.empty((N, 3, 3)), np.empty((N, 3))
    ka = model.tree
    fk_kernel(ka.parent, ka.joint_type, ka.axis, ka.R_tree, ka.p_tree, ka.q_start,
              np.ascontiguousarray(q, dtype=float), E, r, R_WL, p_WL)
    if qd is None:
        return LinkKinematics(R_WL, p_WL, E, r)
    v, a = np.empty((N, 6)), np.empty((N, 6))
    velocity_product_kernel(ka.parent, ka.S, ka.v_start, ka.nv_j, E, r,
                            np.ascontiguousarray(qd, dtype=float), v, np.empty((N, 6)), a)
    return LinkKinematics(R_WL, p_WL, E, r, v, a)


def position_at(kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """World position ``x = p_k + R_k r`` of body point r on link k."""
    return kin.p_WL[k] + kin.R_WL[k] @ r


@inline
def point_state(R_WL, p_WL, v, k, r, x, xd):
    """World position x and velocity ẋ of body point r of link k (v: link velocities in link coordinates)."""
    w0, w1, w2 = v[k, 0], v[k, 1], v[k, 2]
    t0 = v[k, 3] + w1 * r[2] - w2 * r[1]                      # v_O + ω × r (link coordinates)
    t1 = v[k, 4] + w2 * r[0] - w0 * r[2]
    t2 = v[k, 5] + w0 * r[1] - w1 * r[0]
    for a in range(3):
        x[a] = p_WL[k, a] + R_WL[k, a, 0] * r[0] + R_WL[k, a, 1] * r[1] + R_WL[k, a, 2] * r[2]
        xd[a] = R_WL[k, a, 0] * t0 + R_WL[k, a, 1] * t1 + R_WL[k, a, 2] * t2


@inline
def point_bias(R_WL, v, a_vp, k, r, out):
    """J̇q̇ of body point r of link k: R (a_O + α × r + ω × (v_O + ω × r))   (thesis eq. 2.66–2.67)."""
    w0, w1, w2 = v[k, 0], v[k, 1], v[k, 2]
    t0 = v[k, 3] + w1 * r[2] - w2 * r[1]
    t1 = v[k, 4] + w2 * r[0] - w0 * r[2]
    t2 = v[k, 5] + w0 * r[1] - w1 * r[0]
    b0 = a_vp[k, 3] + a_vp[k, 1] * r[2] - a_vp[k, 2] * r[1] + w1 * t2 - w2 * t1
    b1 = a_vp[k, 4] + a_vp[k, 2] * r[0] - a_vp[k, 0] * r[2] + w2 * t0 - w0 * t2
    b2 = a_vp[k, 5] + a_vp[k, 0] * r[1] - a_vp[k, 1] * r[0] + w0 * t1 - w1 * t0
    for a in range(3):
        out[a] = R_WL[k, a, 0] * b0 + R_WL[k, a, 1] * b1 + R_WL[k, a, 2] * b2


@inline
def jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, k, x, E, m, sign, J, row0):
    """J[row0:row0+m] += sign · Eᵀ J(x, k): the point Jacobian of world point x moving with link k (eq. 2.37:
    column of joint j's dof = R_j S_v + R_j S_ω × (x − p_j)), projected on the m basis columns of E (3 x 3)."""
    j = k
    while j >= 0:
        d0, d1, d2 = x[0] - p_WL[j, 0], x[1] - p_WL[j, 1], x[2] - p_WL[j, 2]
        for mm in range(nv_j[j]):
            col = v_start[j] + mm
            w0 = R_WL[j, 0, 0] * S[j, 0, mm] + R_WL[j, 0, 1] * S[j, 1, mm] + R_WL[j, 0, 2] * S[j, 2, mm]
            w1 = R_WL[j, 1, 0] * S[j, 0, mm] + R_WL[j, 1, 1] * S[j, 1, mm] + R_WL[j, 1, 2] * S[j, 2, mm]
            w2 = R_WL[j, 2, 0] * S[j, 0, mm] + R_WL[j, 2, 1] * S[j, 1, mm] + R_WL[j, 2, 2] * S[j, 2, mm]
            c0 = R_WL[j, 0, 0] * S[j, 3, mm] + R_WL[j, 0, 1] * S[j, 4, mm] + R_WL[j, 0, 2] * S[j, 5, mm]
            c1 = R_WL[j, 1, 0] * S[j, 3, mm] + R_WL[j, 1, 1] * S[j, 4, mm] + R_WL[j, 1, 2] * S[j, 5, mm]
            c2 = R_WL[j, 2, 0] * S[j, 3, mm] + R_WL[j, 2, 1] * S[j, 4, mm] + R_WL[j, 2, 2] * S[j, 5, mm]
            c0 += w1 * d2 - w2 * d1
            c1 += w2 * d0 - w0 * d2
            c2 += w0 * d1 - w1 * d0
            for b in range(m):
                J[row0 + b, col] += sign * (E[0, b] * c0 + E[1, b] * c1 + E[2, b] * c2)
        j = parent[j]


@njit
def add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, k, x, f, tau):
    """τ += J(x, k)ᵀ f: the generalized force of world force f at world point x moving with link k."""
    j = k
    while j >= 0:
        d0, d1, d2 = x[0] - p_WL[j, 0], x[1] - p_WL[j, 1], x[2] - p_WL[j, 2]
        for mm in range(nv_j[j]):
            s = 0.0
            for a in range(3):
                w_a = R_WL[j, a, 0] * S[j, 0, mm] + R_WL[j, a, 1] * S[j, 1, mm] + R_WL[j, a, 2] * S[j, 2, mm]
                c_a = R_WL[j, a, 0] * S[j, 3, mm] + R_WL[j, a, 1] * S[j, 4, mm] + R_WL[j, a, 2] * S[j, 5, mm]
                s += c_a * f[a]
                # (ω × d) · f = ω · (d × f)
                if a == 0:
                    s += w_a * (d1 * f[2] - d2 * f[1])
                elif a == 1:
                    s += w_a * (d2 * f[0] - d0 * f[2])
                else:
                    s += w_a * (d0 * f[1] - d1 * f[0])
            tau[v_start[j] + mm] += s
        j = parent[j]


@njit
def velocity_kernel(R_WL, p_WL, v, k, r, out):
    """out ← R_k (v_O + ω × r): the world velocity of body point r of link k."""
    x = np.empty(3)
    point_state(R_WL, p_WL, v, k, r, x, out)


@njit
def bias_kernel(R_WL, v, a_vp, k, r, out):
    """out ← J̇q̇ of body point r of link k (eq. 2.66–2.67)."""
    point_bias(R_WL, v, a_vp, k, r, out)


@njit
def jacobian_kernel(parent, S, v_start, nv_j, R_WL, p_WL, k, r, J):
    """J ← the point Jacobian of body point r on link k (3 x nv, zero outside k's ancestors; eq. 2.37)."""
    x, xd = np.empty(3), np.empty(3)
    zero = np.zeros((parent.shape[0], 6))
    point_state(R_WL, p_WL, zero, k, r, x, xd)
    J[:, :] = 0.0
    jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, k, x, np.eye(3), 3, 1.0, J, 0)


def velocity_at(kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """World velocity ``R_k (v_O + ω × r)`` of body point r on link k."""
    out = np.empty(3)
    velocity_kernel(kin.R_WL, kin.p_WL, kin.v, int(k), np.asarray(r, dtype=float), out)
    return out


def jacobian_at(model: Model, kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """Point Jacobian ``J(x, k)`` (3 x nv), ``ẋ = J q̇`` (thesis eq. 2.37).

    Column block of each ancestor joint j of link k: with the joint's subspace in world axes, ``ω = R_j S_ω`` and
    ``v = R_j S_v`` (at j's origin), the point moves at ``v + ω × (x - p_j)``.
    """
    J = np.empty((3, model.nv))
    ka = model.tree
    jacobian_kernel(ka.parent, ka.S, ka.v_start, ka.nv_j, kin.R_WL, kin.p_WL, int(k),
                    np.asarray(r, dtype=float), J)
    return J


def bias_acceleration_at(kin: LinkKinematics, k: int, r: np.ndarray) -> np.ndarray:
    """``J̇q̇``: from the velocity-product acceleration a = [α; a_O] and velocity v = [ω; v_O] of link k, the
    classical acceleration of body point r is ``a_O + α × r + ω × (v_O + ω × r)`` (thesis eq. 2.66–2.67)."""
    out = np.empty(3)
    bias_kernel(kin.R_WL, kin.v, kin.a_vp, int(k), np.asarray(r, dtype=float), out)
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
