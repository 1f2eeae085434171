"""Explicit integrators over (q, q̇, w) with q̇_config = G(q) q̇ (quaternion joints: nq ≠ nv).

``f(t, q, qd, w) -> (q̈, ẇ)`` is one full evaluation (controllers, forces, dynamics, constraint solve); w is the
auxiliary vector ``[work integrals (K + 4), controller state z]``, integrated with the same weights as the
state so the energy books close to integration error and the adaptive parameters advance with the arm. Every
stage's configuration has its quaternions renormalized, and so has the result.

- ``rk4``: classical fourth order (tableau c = (0, ½, ½, 1), b = (1, 2, 2, 1)/6).
- ``cash_karp``: embedded Runge–Kutta 4(5) of Cash and Karp (the thesis's integrator); returns the fifth-order
  solution and its difference from the fourth-order one as the local error estimate.
- ``semi_implicit_euler``: q̇ ← q̇ + h q̈(q, q̇), then q ← q ⊕ q̇ h (first order); the work integrals take
  each power category's generalized force G at the step's start times the velocity the step moves with,
  h G q̇ (new), as core.integrators books them.

The first stage ``k1 = (q̈, ẇ, G)`` at the start of the step is passed in (it is the evaluation the step's events
were decided on).
"""
from __future__ import annotations

import numpy as np

import core

__all__ = ["rk4_step", "cash_karp_step", "semi_implicit_euler_step", "FIXED_STEP", "ADAPTIVE"]

RK4 = (np.array([0.0, 0.5, 0.5, 1.0]), [[], [0.5], [0.0, 0.5], [0.0, 0.0, 1.0]],
       np.array([1.0, 2.0, 2.0, 1.0]) / 6.0)
CK_A = [[], [1 / 5], [3 / 40, 9 / 40], [3 / 10, -9 / 10, 6 / 5], [-11 / 54, 5 / 2, -70 / 27, 35 / 27],
        [1631 / 55296, 175 / 512, 575 / 13824, 44275 / 110592, 253 / 4096]]
CK_C = np.array([0.0, 1 / 5, 3 / 10, 3 / 5, 1.0, 7 / 8])
CK_B5 = np.array([37 / 378, 0.0, 250 / 621, 125 / 594, 0.0, 512 / 1771])
CK_B4 = np.array([2825 / 27648, 0.0, 18575 / 48384, 13525 / 55296, 277 / 14336, 1 / 4])


def explicit_rk(model, f, t, q, qd, dt, c, A, weights_list, k1, w):
    """Stages of an explicit Runge–Kutta tableau; one ``(q, qd, Δw)`` per weight vector."""
    kq, kv, kw = [], [], []
    for i in range(len(c)):
        if i == 0:
            qdd, w_rate = k1[:2]
            qi, vi = q, qd
        else:
            qi = core.normalize_configuration(model, q + dt * sum(a * k for a, k in zip(A[i], kq)))
            vi = qd + dt * sum(a * k for a, k in zip(A[i], kv))
            wi = w + dt * sum(a * k for a, k in zip(A[i], kw))
            qdd, w_rate = f(t + c[i] * dt, qi, vi, wi)
        kq.append(core.configuration_derivative(model, qi, vi))
        kv.append(qdd)
        kw.append(np.asarray(w_rate, dtype=float))
    out = []
    for b in weights_list:
        q_new = core.normalize_configuration(model, q + dt * sum(x * k for x, k in zip(b, kq)))
        out.append((q_new, qd + dt * sum(x * k for x, k in zip(b, kv)), dt * sum(x * k for x, k in zip(b, kw))))
    return out


def rk4_step(model, f, t, q, qd, dt, k1, w):
    """``(q, qd, Δw)`` at t + dt."""
    c, A, b = RK4
    return explicit_rk(model, f, t, q, qd, dt, c, A, [b], k1, w)[0]


def cash_karp_step(model, f, t, q, qd, dt, k1, w):
    """Fifth-order ``(q, qd, Δw)`` and the error estimate ``(Δq, Δqd, Δw)`` (fifth minus fourth order)."""
    (q5, v5, w5), (q4, v4, w4) = explicit_rk(model, f, t, q, qd, dt, CK_C, CK_A, [CK_B5, CK_B4], k1, w)
    return (q5, v5, w5), (q5 - q4, v5 - v4, w5 - w4)


def semi_implicit_euler_step(model, f, t, q, qd, dt, k1, w):
    """``qd ← qd + dt q̈``, ``q ← q ⊕ qd dt``, the work ``dt G qd`` (new qd) and ``z ← z + dt ż``."""
    qdd, w_rate, G = k1
    qd_new = qd + dt * qdd
    q_new = core.normalize_configuration(model, core.integrate_configuration(model, q, qd_new, dt))
    dw = dt * np.asarray(w_rate, dtype=float)
    dw[:G.shape[0]] = dt * (G @ qd_new)
    return q_new, qd_new, dw


FIXED_STEP = {"rk4": rk4_step, "semi_implicit_euler": semi_implicit_euler_step}
ADAPTIVE = {"cash_karp": cash_karp_step}
