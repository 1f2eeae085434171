"""Applied forces: springs, joint springs and dampers, drag, actuators and external point forces, with the power
each delivers and the potential energy of the elastic ones (thesis §2.3.1–2.3.2: "keep track of all possible
energy sources"). A point force f at body point x becomes the generalized force Jᵀf ("apply point force",
§2.4.3).

Power categories (the energy audit's non-conservative sources): ``dampers`` (spring and joint dampers),
``drag``, ``actuators``, ``external``. Springs' elastic forces are conservative: their work is −ΔPE, and their
potential energy is part of the total energy instead.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .points import LinkKinematics, jacobian_at, position_at, velocity_at

SPRING, JOINT_SPRING, DRAG, ACTUATOR, POINT_FORCE, PULL = range(6)
POWER_SOURCES = ("dampers", "drag", "actuators", "external")

__all__ = ["AppliedForce", "AppliedResult", "applied_forces", "pull_force", "POWER_SOURCES"]


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


def pull_force(link: int, r, target, stiffness: float, damping: float) -> AppliedForce:
    """A spring-damper from body point r of ``link`` to a world ``target`` whose work is booked as external (the
    studio's mouse drag): ``f = k (target − x) − c ẋ``."""
    return AppliedForce("pull", PULL, link, np.asarray(r, float), -1, np.asarray(target, float),
                        stiffness=stiffness, damping=damping)


@dataclass
class AppliedResult:
    """Generalized applied force ``tau`` (nv,), power per source (see POWER_SOURCES), elastic potential energy,
    and the world force vector of each point-force element (for drawing)."""
    tau: np.ndarray
    power: np.ndarray
    potential: float


def _point_force(model, kin, tau, k, r, f):
    """Add Jᵀ f for force f (world) at body point r of link k; returns the point's velocity."""
    tau += jacobian_at(model, kin, k, r).T @ f
    return velocity_at(kin, k, r)


def applied_forces(model, kin: LinkKinematics, q: np.ndarray, qd: np.ndarray, t: float, elements,
                   actuator_values: dict | None = None) -> AppliedResult:
    """Generalized forces, powers and elastic energy of all force elements at one state."""
    tau = np.zeros(model.nv)
    power = np.zeros(len(POWER_SOURCES))
    potential = 0.0
    for e in elements:
        if e.kind == SPRING:
            xa, va = position_at(kin, e.link_a, e.r_a), velocity_at(kin, e.link_a, e.r_a)
            if e.link_b >= 0:
                xb, vb = position_at(kin, e.link_b, e.r_b), velocity_at(kin, e.link_b, e.r_b)
            else:
                xb, vb = e.r_b, np.zeros(3)
            d, dd = xa - xb, va - vb
            length = np.linalg.norm(d)
            if e.rest == 0.0:                                   # zero rest length: f = −k d − c ḋ
                f_el, f_damp = -e.stiffness * d, -e.damping * dd
                potential += 0.5 * e.stiffness * (d @ d)
            else:                                               # f = −(k(ℓ − ℓ0) + c ℓ̇) u
                u = d / length if length > 0 else np.zeros(3)
                f_el, f_damp = -e.stiffness * (length - e.rest) * u, -e.damping * (dd @ u) * u
                potential += 0.5 * e.stiffness * (length - e.rest) ** 2
            f = f_el + f_damp
            tau += jacobian_at(model, kin, e.link_a, e.r_a).T @ f
            if e.link_b >= 0:
                tau -= jacobian_at(model, kin, e.link_b, e.r_b).T @ f
            power[0] += f_damp @ dd
        elif e.kind == JOINT_SPRING:
            x, v = q[e.qdof], qd[e.dof]
            tau[e.dof] += -e.stiffness * (x - e.rest) - e.damping * v
            potential += 0.5 * e.stiffness * (x - e.rest) ** 2
            power[0] += -e.damping * v * v
        elif e.kind == DRAG:
            v = velocity_at(kin, e.link_a, e.r_a)
            f = -(e.linear + e.quadratic * np.linalg.norm(v)) * v
            _point_force(model, kin, tau, e.link_a, e.r_a, f)
            power[1] += f @ v
        elif e.kind == ACTUATOR:
            value = (actuator_values or {}).get(e.name, e.torque)
            u = float(np.clip(value, -e.limit, e.limit))
            tau[e.dof] += u
            power[2] += u * qd[e.dof]
        elif e.kind == POINT_FORCE:
            if e.start <= t < e.stop:
                v = _point_force(model, kin, tau, e.link_a, e.r_a, e.force)
                power[3] += e.force @ v
        elif e.kind == PULL:                                    # the user's mouse spring: external work
            x, v = position_at(kin, e.link_a, e.r_a), velocity_at(kin, e.link_a, e.r_a)
            f = e.stiffness * (e.r_b - x) - e.damping * v
            _point_force(model, kin, tau, e.link_a, e.r_a, f)
            power[3] += f @ v
    return AppliedResult(tau, power, potential)
