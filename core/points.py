"""Kinematics of points fixed on links: position, velocity, the point Jacobian J(x, k) of thesis eq. 2.37, and
the velocity-dependent acceleration J̇q̇ of eq. 2.65–2.67. All results are in world coordinates.

A point is given as ``(body, point)``: a body name or index, and either a named point of that body or a
3-vector in the body's link frame.
"""
from __future__ import annotations

import numpy as np

from .kinematics import forward_kinematics, link_velocities
from .model import Model
from .spatial import crm

__all__ = ["point_position", "point_velocity", "point_jacobian", "point_bias_acceleration", "point_acceleration"]


def point_position(model: Model, q: np.ndarray, body, point) -> np.ndarray:
    """World position ``x = p_k + R_k r`` of point r on link k (3,)."""
    k, r = model.resolve_point(body, point)
    R_WL, p_WL, _ = forward_kinematics(model, q)
    return p_WL[k] + R_WL[k] @ r


def point_jacobian(model: Model, q: np.ndarray, body, point) -> np.ndarray:
    """Point Jacobian ``J(x, k)`` (3 x nv) with ``ẋ = J q̇`` (thesis eq. 2.37).

    Column block of each ancestor joint j of link k: with the joint's subspace in world axes, ``ω = R_j S_ω`` and
    ``v = R_j S_v`` (at j's origin), the point moves at ``v + ω × (x - p_j)``.
    """
    k, r = model.resolve_point(body, point)
    R_WL, p_WL, _ = forward_kinematics(model, q)
    x = p_WL[k] + R_WL[k] @ r
    J = np.zeros((3, model.nv))
    j = k
    while j >= 0:
        nv = model.nv_j[j]
        if nv:
            S = model.S[j, :, :nv]
            w = R_WL[j] @ S[:3]
            vO = R_WL[j] @ S[3:]
            J[:, model.v_start[j]:model.v_start[j] + nv] = vO + np.cross(w.T, x - p_WL[j]).T
        j = model.parent[j]
    return J


def point_velocity(model: Model, q: np.ndarray, qd: np.ndarray, body, point) -> np.ndarray:
    """World velocity ``ẋ`` of a point on a link (3,)."""
    k, r = model.resolve_point(body, point)
    R_WL, _, X_up = forward_kinematics(model, q)
    v = link_velocities(model, X_up, qd)[k]
    return R_WL[k] @ (v[3:] + np.cross(v[:3], r))


def _link_accelerations(model: Model, X_up: np.ndarray, v: np.ndarray, qdd: np.ndarray | None) -> np.ndarray:
    """Spatial accelerations a_i = X_up a_λ + S q̈_i + v_i × S q̇_i without gravity (eq. 2.65), link coords."""
    a = np.zeros((model.n_links, 6))
    for i in range(model.n_links):
        lam, nv = model.parent[i], model.nv_j[i]
        vs = model.v_start[i]
        vJ = v[i] - (X_up[i] @ v[lam] if lam >= 0 else 0.0)
        a[i] = (X_up[i] @ a[lam] if lam >= 0 else 0.0) + crm(v[i]) @ vJ
        if qdd is not None and nv:
            a[i] += model.S[i, :, :nv] @ qdd[vs:vs + nv]
    return a


def point_acceleration(model: Model, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray | None, body, point) -> np.ndarray:
    """World acceleration ``ẍ = J q̈ + J̇ q̇`` of a point on a link (3,); ``qdd=None`` gives J̇q̇.

    From the spatial acceleration a = [α; a_O] and velocity v = [ω; v_O] of link k (link coordinates) the
    classical acceleration of body point r is ``a_O + α × r + ω × (v_O + ω × r)`` (thesis eq. 2.66–2.67).
    """
    k, r = model.resolve_point(body, point)
    R_WL, _, X_up = forward_kinematics(model, q)
    v = link_velocities(model, X_up, qd)
    a = _link_accelerations(model, X_up, v, qdd)[k]
    w, vO = v[k, :3], v[k, 3:]
    return R_WL[k] @ (a[3:] + np.cross(a[:3], r) + np.cross(w, vO + np.cross(w, r)))


def point_bias_acceleration(model: Model, q: np.ndarray, qd: np.ndarray, body, point) -> np.ndarray:
    """``J̇ q̇`` (3,): the acceleration of the point when q̈ = 0 ("accel from velocity", thesis §2.4.3)."""
    return point_acceleration(model, q, qd, None, body, point)
