"""Explicit integrators over the state (q, qd) with q̇ = G(q) qd (quaternion joints, nq ≠ nv).

``f(t, q, qd) -> (qdd, w_rate)`` is evaluated inside every stage (forces and constraints included); ``w_rate``
are the powers whose integrals the energy audit keeps, integrated with the same weights as the state so the
books close to integration error. Every stage's configuration has its quaternions renormalized.

- ``rk4``: classical fourth order, fixed step.
- ``cash_karp``: embedded Runge–Kutta 4(5) of Cash and Karp (the thesis's integrator), returning the fifth-order
  solution and an error estimate for step-size control.
- ``semi_implicit_euler``: first order, symplectic for unconstrained systems.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .kinematics import (configuration_derivative, integrate_configuration, normalize_configuration,
                         normalize_kernel)
from .model import Model

Deriv = Callable[[float, np.ndarray, np.ndarray], tuple]

__all__ = ["explicit_rk", "rk4_step", "cash_karp_step", "semi_implicit_euler_step", "FIXED_STEP", "ADAPTIVE"]

RK4 = (np.array([0.0, 0.5, 0.5, 1.0]),
       [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]],
       np.array([1.0, 2.0, 2.0, 1.0]) / 6.0)

_CK_A = [[], [1 / 5], [3 / 40, 9 / 40], [3 / 10, -9 / 10, 6 / 5], [-11 / 54, 5 / 2, -70 / 27, 35 / 27],
         [1631 / 55296, 175 / 512, 575 / 13824, 44275 / 110592, 253 / 4096]]
_CK_C = np.array([0.0, 1 / 5, 3 / 10, 3 / 5, 1.0, 7 / 8])
_CK_B5 = np.array([37 / 378, 0.0, 250 / 621, 125 / 594, 0.0, 512 / 1771])
_CK_B4 = np.array([2825 / 27648, 0.0, 18575 / 48384, 13525 / 55296, 277 / 14336, 1 / 4])


def explicit_rk(model: Model, f: Deriv, t, q, qd, dt, c, A, weights_list, k1=None, w=None):
    """Run the stages of an explicit Runge–Kutta tableau; return one ``(q, qd, Δw)`` per weight vector.

    ``w`` (optional) is the auxiliary vector at the start of the step. When given, it is integrated as part of
    the state: ``f`` is called as ``f(t, q, qd, w_i)`` with each stage's value ``w_i = w + dt Σ a_ij k_w,j`` (the
    controllers' adaptive state feeds back into the dynamics); without it, ``f(t, q, qd)``."""
    kq, kv, kw = [], [], []
    for i in range(len(c)):
        if i == 0 and k1 is not None:
            qdd, w_rate = k1
            qi, vi = q, qd
        else:
            qi = q + dt * sum(a * k for a, k in zip(A[i], kq)) if i else q
            vi = qd + dt * sum(a * k for a, k in zip(A[i], kv)) if i else qd
            qi = normalize_configuration(model, qi) if i else qi
            if w is None:
                qdd, w_rate = f(t + c[i] * dt, qi, vi)
            else:
                wi = w + dt * sum(a * k for a, k in zip(A[i], kw)) if i else w
                qdd, w_rate = f(t + c[i] * dt, qi, vi, wi)
        kq.append(configuration_derivative(model, qi, vi))
        kv.append(qdd)
        kw.append(np.asarray(w_rate, dtype=float))
    out = []
    for b in weights_list:
        q_new = normalize_configuration(model, q + dt * sum(w * k for w, k in zip(b, kq)))
        out.append((q_new, qd + dt * sum(w * k for w, k in zip(b, kv)), dt * sum(w * k for w, k in zip(b, kw))))
    return out


def rk4_step(model: Model, f: Deriv, t, q, qd, dt, k1=None, w=None):
    """Classical fourth-order Runge–Kutta step: ``(q, qd, Δw)`` at ``t + dt``."""
    c, A, b = RK4
    return explicit_rk(model, f, t, q, qd, dt, c, A, [b], k1, w)[0]


def cash_karp_step(model: Model, f: Deriv, t, q, qd, dt, k1=None, w=None):
    """Cash–Karp embedded RK4(5): the fifth-order ``(q, qd, Δw)`` and the difference from the fourth-order
    solution ``(Δq, Δqd, Δw)`` as the local error estimate."""
    (q5, v5, w5), (q4, v4, w4) = explicit_rk(model, f, t, q, qd, dt, _CK_C, _CK_A, [_CK_B5, _CK_B4], k1, w)
    return (q5, v5, w5), (q5 - q4, v5 - v4, w5 - w4)


def semi_implicit_euler_step(model: Model, f: Deriv, t, q, qd, dt, k1=None, w=None):
    """Semi-implicit Euler: ``qd ← qd + dt q̈(q, qd)``, then ``q ← q ⊕ qd dt``; first order."""
    qdd, w_rate = k1 if k1 is not None else (f(t, q, qd) if w is None else f(t, q, qd, w))
    qd_new = qd + dt * qdd
    q_new = normalize_configuration(model, integrate_configuration(model, q, qd_new, dt))
    return q_new, qd_new, dt * np.asarray(w_rate, dtype=float)


FIXED_STEP = {"rk4": rk4_step, "semi_implicit_euler": semi_implicit_euler_step}
ADAPTIVE = {"cash_karp": cash_karp_step}
