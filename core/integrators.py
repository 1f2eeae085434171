"""Fixed-step integrators over the state (q, qd) with q̇ = G(q) qd (quaternion joints, nq ≠ nv).

``accel(t, q, qd) -> qdd`` is evaluated inside every stage, and every stage's configuration has its quaternions
renormalized (DESIGN.md, conventions).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .kinematics import configuration_derivative, integrate_configuration, normalize_configuration
from .model import Model

Accel = Callable[[float, np.ndarray, np.ndarray], np.ndarray]

__all__ = ["rk4_step", "semi_implicit_euler_step", "INTEGRATORS"]


def rk4_step(model: Model, accel: Accel, t: float, q: np.ndarray, qd: np.ndarray, dt: float):
    """Classical fourth-order Runge–Kutta step; returns ``(q, qd)`` at ``t + dt``."""
    def stage(tq, qq, vv):
        return configuration_derivative(model, qq, vv), accel(tq, qq, vv)

    k1q, k1v = stage(t, q, qd)
    k2q, k2v = stage(t + 0.5 * dt, normalize_configuration(model, q + 0.5 * dt * k1q), qd + 0.5 * dt * k1v)
    k3q, k3v = stage(t + 0.5 * dt, normalize_configuration(model, q + 0.5 * dt * k2q), qd + 0.5 * dt * k2v)
    k4q, k4v = stage(t + dt, normalize_configuration(model, q + dt * k3q), qd + dt * k3v)
    q_new = normalize_configuration(model, q + dt / 6.0 * (k1q + 2.0 * k2q + 2.0 * k3q + k4q))
    qd_new = qd + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    return q_new, qd_new


def semi_implicit_euler_step(model: Model, accel: Accel, t: float, q: np.ndarray, qd: np.ndarray, dt: float):
    """Symplectic (semi-implicit) Euler: ``qd ← qd + dt q̈(q, qd)``, then ``q ← q ⊕ qd dt``; first order."""
    qd_new = qd + dt * accel(t, q, qd)
    return normalize_configuration(model, integrate_configuration(model, q, qd_new, dt)), qd_new


INTEGRATORS = {"rk4": rk4_step, "semi_implicit_euler": semi_implicit_euler_step}
