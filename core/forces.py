"""Applied forces: springs, joint springs and dampers, drag, actuators and external point forces, with the power
each delivers and the potential energy of the elastic ones (thesis §2.3.1–2.3.2: "keep track of all possible
energy sources"). A point force f at body point x becomes the generalized force Jᵀf ("apply point force",
§2.4.3).

Power categories (the energy audit's non-conservative sources, :data:`core.model.POWER_SOURCES`): ``dampers``
(spring and joint dampers), ``drag``, ``actuators``, ``external``. Springs' elastic forces are conservative:
their work is −ΔPE, and their potential energy is part of the total energy instead. The kernel keeps each
category's generalized force τ_s apart (a point force's f·ẋ is (Jᵀf)·q̇), so that its power is τ_s · v at
whatever velocity v the integrator moves the system with: the state's own for the Runge–Kutta stages, the step's
end velocity for a first-order step (:mod:`core.integrators`).

The compiled step reads the elements from a table, one row per element (:data:`FORCE`, built by
:func:`force_table`), so that an actuator command or the studio's mouse spring changes between steps without
compiling anything.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .jit import njit
from .points import add_point_force, point_state

SPRING, JOINT_SPRING, DRAG, ACTUATOR, POINT_FORCE, PULL = range(6)
DAMPERS, DRAG_POWER, ACTUATORS, EXTERNAL = range(4)        # indices into the power sources (POWER_SOURCES)

__all__ = ["AppliedForce", "pull_force", "force_table", "forces_kernel", "FORCE",
           "SPRING", "JOINT_SPRING", "DRAG", "ACTUATOR", "POINT_FORCE", "PULL"]

#: One force element of the compiled step. ``link_b = -1`` is the world (``r_b`` then a world point; for the
#: pull, the target). ``dof``/``qdof``: a joint's entry in q̇ and q. ``command``: an actuator's current value u;
#: an actuator's force is ``clip(gain · clip(u, command_lo, command_hi) + bias · (1, q, q̇), force_lo,
#: force_hi)``, and ``limit`` is its symmetric bound (what the control equations clip their commands at).
FORCE = np.dtype([
    ("kind", np.int64), ("link_a", np.int64), ("link_b", np.int64), ("dof", np.int64), ("qdof", np.int64),
    ("r_a", np.float64, (3,)), ("r_b", np.float64, (3,)),
    ("stiffness", np.float64), ("damping", np.float64), ("rest", np.float64),
    ("linear", np.float64), ("quadratic", np.float64), ("command", np.float64), ("limit", np.float64),
    ("force", np.float64, (3,)), ("start", np.float64), ("stop", np.float64),
    ("gain", np.float64), ("bias", np.float64, (3,)), ("command_lo", np.float64), ("command_hi", np.float64),
    ("force_lo", np.float64), ("force_hi", np.float64),
], align=True)


@dataclass(frozen=True, eq=False)
class AppliedForce:
    """A compiled force element; which fields matter depends on ``kind`` (see :mod:`core.scene.schema`).
    ``link_b = -1`` is the world (``r_b`` then in world coordinates); ``dof`` is a joint's index in qd/q."""
    name: str
    kind: int
    link_a: int = -1
    r_a: np.ndarray | None = None
    link_b: int = -1
    r_b: np.ndarray | None = None
    dof: int = -1
    qdof: int = -1
    stiffness: float = 0.0
    damping: float = 0.0
    rest: float = 0.0
    linear: float = 0.0
    quadratic: float = 0.0
    torque: float = 0.0
    limit: float = np.inf
    force: np.ndarray | None = None
    start: float = 0.0
    stop: float = np.inf
    gain: float = 1.0
    bias: tuple = (0.0, 0.0, 0.0)
    command_range: tuple = (-np.inf, np.inf)
    force_range: tuple | None = None          # an actuator's [lower, upper] force; None: ±limit


def pull_force(link: int, r, target, stiffness: float, damping: float) -> AppliedForce:
    """A spring-damper from body point r of ``link`` to a world ``target`` whose work is booked as external (the
    studio's mouse drag): ``f = k (target − x) − c ẋ``."""
    return AppliedForce("pull", PULL, link, np.asarray(r, float), -1, np.asarray(target, float),
                        stiffness=stiffness, damping=damping)


def force_table(elements, actuator_values: dict | None = None) -> np.ndarray:
    """The :data:`FORCE` table of ``elements``; actuators carry their current command (``actuator_values``,
    name → value, else the scene's)."""
    table = np.zeros(len(elements), FORCE)
    for row, e in zip(table, elements):
        row["kind"], row["link_a"], row["link_b"], row["dof"], row["qdof"] = e.kind, e.link_a, e.link_b, e.dof, e.qdof
        if e.r_a is not None:
            row["r_a"] = e.r_a
        if e.r_b is not None:
            row["r_b"] = e.r_b
        row["stiffness"], row["damping"], row["rest"] = e.stiffness, e.damping, e.rest
        row["linear"], row["quadratic"], row["limit"] = e.linear, e.quadratic, e.limit
        row["command"] = (actuator_values or {}).get(e.name, e.torque)
        if e.force is not None:
            row["force"] = e.force
        row["start"], row["stop"] = e.start, e.stop
        row["gain"], row["bias"] = e.gain, e.bias
        row["command_lo"], row["command_hi"] = e.command_range
        row["force_lo"], row["force_hi"] = (-e.limit, e.limit) if e.force_range is None else e.force_range
    return table


@njit
def _pair_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, kb, xb, f, out):
    """out += J(x_a)ᵀ f − J(x_b)ᵀ f: world force f on point x_a of link ka and −f on x_b of link kb (kb = −1: the
    world, which takes nothing). Leaves f negated when kb ≥ 0."""
    add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, out)
    if kb >= 0:
        for a in range(3):
            f[a] = -f[a]
        add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, kb, xb, f, out)


@njit
def forces_kernel(parent, S, v_start, nv_j, R_WL, p_WL, v, q, qd, t, forces, tau, sources, P3, extra, programs,
                  damping):
    """The generalized forces of the elements of ``forces`` (:data:`FORCE`), split as the energy audit books
    them: ``tau`` (nv) += the conservative ones (the springs' elastic forces, whose work is −ΔPE), ``sources``
    (4 x nv) += the others, one row per power source (dampers, drag, actuators, external); the applied force is
    their sum and a source's power at any velocity v is ``sources[s] · v`` (:func:`core.forward.powers`), so one
    force serves the power at the state (f·ẋ = (Jᵀf)·q̇) and the work a first-order step books at its end
    velocity (:mod:`core.integrators`). Returns the elastic potential energy (``P3``: ≥ 6 x 3 scratch). With
    ``programs``, an actuator whose ``extra`` entry is a number takes it as its command (a control program's
    servo or control equation, :mod:`core.programs.kernels`). ``damping`` (4 x nv, or 4 x 0: not asked)
    += −∂τ/∂q̇ of the joint forces by source, whose only dependence on q̇ is their own joint's: a joint damper's c
    (dampers) and an actuator's −b₂ while its force is inside its range (actuators); the ``implicitfast`` step
    takes them implicitly."""
    rates = damping.shape[1] > 0
    potential = 0.0
    xa, va, xb, vb, f, fd = P3[0], P3[1], P3[2], P3[3], P3[4], P3[5]
    elastic, dampers = tau, sources[DAMPERS]
    for e in range(forces.shape[0]):
        el = forces[e]
        kind, ka, kb, dof = el.kind, el.link_a, el.link_b, el.dof
        k, c = el.stiffness, el.damping
        if kind == SPRING:
            point_state(R_WL, p_WL, v, ka, el.r_a, xa, va)
            if kb >= 0:
                point_state(R_WL, p_WL, v, kb, el.r_b, xb, vb)
            else:
                for a in range(3):
                    xb[a] = el.r_b[a]
                    vb[a] = 0.0
            d0, d1, d2 = xa[0] - xb[0], xa[1] - xb[1], xa[2] - xb[2]
            e0, e1, e2 = va[0] - vb[0], va[1] - vb[1], va[2] - vb[2]
            rest = el.rest
            if rest == 0.0:                                   # zero rest length: f = −k d, its damper −c ḋ
                f[0], f[1], f[2] = -k * d0, -k * d1, -k * d2
                fd[0], fd[1], fd[2] = -c * e0, -c * e1, -c * e2
                potential += 0.5 * k * (d0 * d0 + d1 * d1 + d2 * d2)
            else:                                             # f = −k(ℓ − ℓ0) u, its damper −c ℓ̇ u
                length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                u0, u1, u2 = 0.0, 0.0, 0.0
                if length > 0:
                    u0, u1, u2 = d0 / length, d1 / length, d2 / length
                s = -k * (length - rest)
                sd = -c * (e0 * u0 + e1 * u1 + e2 * u2)
                f[0], f[1], f[2] = s * u0, s * u1, s * u2
                fd[0], fd[1], fd[2] = sd * u0, sd * u1, sd * u2
                potential += 0.5 * k * (length - rest) ** 2
            if k != 0.0:
                _pair_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, kb, xb, f, elastic)
            if c != 0.0:
                _pair_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, kb, xb, fd, dampers)
        elif kind == JOINT_SPRING:                            # τ = −k (q − q_rest) − c q̇
            elastic[dof] += -k * (q[el.qdof] - el.rest)
            dampers[dof] += -c * qd[dof]
            if rates:
                damping[DAMPERS, dof] += c
            potential += 0.5 * k * (q[el.qdof] - el.rest) ** 2
        elif kind == DRAG:                                    # f = −(c₁ + c₂‖ẋ‖) ẋ
            point_state(R_WL, p_WL, v, ka, el.r_a, xa, va)
            speed = np.sqrt(va[0] ** 2 + va[1] ** 2 + va[2] ** 2)
            s = -(el.linear + el.quadratic * speed)
            for a in range(3):
                f[a] = s * va[a]
            add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, sources[DRAG_POWER])
        elif kind == ACTUATOR:                                # τ = clip(gain clip(u) + b0 + b1 q + b2 q̇)
            u = el.command if not programs or np.isnan(extra[e]) else extra[e]
            u = min(max(u, el.command_lo), el.command_hi)
            b = el.bias
            u = el.gain * u + b[0] + b[1] * q[el.qdof] + b[2] * qd[dof]
            if rates and el.force_lo < u < el.force_hi:
                damping[ACTUATORS, dof] -= b[2]
            u = min(max(u, el.force_lo), el.force_hi)
            sources[ACTUATORS, dof] += u
        elif kind == POINT_FORCE:                             # (a zero force, a sticking point's friction: nothing)
            if el.start <= t < el.stop and (el.force[0] != 0.0 or el.force[1] != 0.0 or el.force[2] != 0.0):
                point_state(R_WL, p_WL, v, ka, el.r_a, xa, va)
                for a in range(3):
                    f[a] = el.force[a]
                add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, sources[EXTERNAL])
        elif kind == PULL:                                    # the user's mouse spring: f = k (target − x) − c ẋ
            point_state(R_WL, p_WL, v, ka, el.r_a, xa, va)
            for a in range(3):
                f[a] = k * (el.r_b[a] - xa[a]) - c * va[a]
            add_point_force(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, f, sources[EXTERNAL])
    return potential
