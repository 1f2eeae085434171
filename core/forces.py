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

from .points import LinkKinematics

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


def applied_forces(model, kin: LinkKinematics | None, q: np.ndarray, qd: np.ndarray, t: float, elements,
                   actuator_values: dict | None = None) -> AppliedResult:
    """Generalized forces, powers and elastic energy of all force elements at one state, by the compiled
    :func:`core.stepper.forces_kernel` (the one implementation the compiled step uses). ``kin`` needs the link
    velocities (:func:`core.points.link_kinematics` with q̇); it may be None when there are no elements."""
    tau = np.zeros(model.nv)
    power = np.zeros(len(POWER_SOURCES))
    if not elements:
        return AppliedResult(tau, power, 0.0)
    from .jit import as_f64
    from .stepper import force_table, forces_kernel
    fi, ff = force_table(tuple(elements), actuator_values)
    ka = model.kernel_args
    potential = forces_kernel(ka.parent, ka.S, ka.v_start, ka.nv_j, kin.R_WL, kin.p_WL, kin.v, as_f64(q),
                              as_f64(qd), float(t), fi, ff, tau, power, np.empty((8, 3)))
    return AppliedResult(tau, power, float(potential))
