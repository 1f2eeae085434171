"""What the viewport draws on top of the shapes, read off a simulation: nails, springs, constraint forces and the
velocities of constrained points (thesis fig. 2.9), link frames, broken constraints and the mouse spring.

Thread: worker. :func:`overlay` reads the simulation the worker owns (through the core's public API) and returns a
frozen :class:`Overlay` of copies, which then crosses to the GUI thread inside a snapshot. The constraints' ends,
their forces and the velocities of their points come from ``core.Data`` (``point_a``, ``point_b``,
``velocity_a``, ``constraint_force``: dragged and moving nails included, as the step saw them); the link frames,
the springs' ends and the mouse spring's grabbed point from the link poses (forward kinematics).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.constraints import JOINT_SPACE, NAIL, POINT_TO_POINT
from core.forces import SPRING
from core.points import link_kinematics, position_at

from .messages import frozen_copy

__all__ = ["Overlay", "overlay", "resting_overlay", "ANCHOR_KINDS"]

#: Constraint kinds whose world end is drawn as a small sphere (a nail, or a ball joint to the world).
ANCHOR_KINDS = (NAIL, POINT_TO_POINT)


@dataclass(frozen=True)
class Overlay:
    """Any thread (frozen; made on the worker, drawn on the GUI thread). Everything in world coordinates
    (m, N, m/s). K constraints, N links, S springs.

    ``link_R`` (N, 3, 3), ``link_p`` (N, 3): link frames; ``point_a`` (K, 3): each constraint's point on its first
    body; ``point_b`` (K, 3): its other end (the nail, a point on the second body, or the line/plane origin);
    ``world_b`` (K,) bool: the other end is fixed in the world; ``kinds`` (K,) core constraint kinds;
    ``force`` (K, 3): constraint force on point a; ``ratio`` (K,): ‖force‖ / max_force (the joint's strength);
    ``velocity`` (K, 3): velocity of point a; ``active`` (K,); ``broken`` (K,): enabled in the scene but removed
    at run time; ``has_point`` (K,): the constraint acts at a body point (joint-space constraints do not: their
    rows are NaN and nothing of theirs is drawn); ``springs`` (S, 2, 3): spring end points; ``pull`` (2, 3) or
    None: the grabbed body point and the mouse spring's target."""
    names: tuple
    link_R: np.ndarray
    link_p: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    world_b: np.ndarray
    kinds: np.ndarray
    force: np.ndarray
    ratio: np.ndarray
    velocity: np.ndarray
    active: np.ndarray
    broken: np.ndarray
    springs: np.ndarray
    has_point: np.ndarray | None = None
    pull: np.ndarray | None = None

    def nail_indices(self) -> list[int]:
        """Constraints whose world end is drawn as a sphere (nails, ball joints to the world)."""
        return [i for i in range(len(self.names))
                if self.world_b[i] and self.kinds[i] in ANCHOR_KINDS and self.drawn(i)]

    def drawn(self, i: int) -> bool:
        return self.has_point is None or bool(self.has_point[i])


def overlay(sim) -> Overlay:
    """The overlay of a ``core.Simulation`` at its current state (worker thread)."""
    model, s = sim.model, sim.state
    kin = link_kinematics(model, s.q)
    d = sim.data
    K = len(model.constraints)
    has_point = np.array([c.kind != JOINT_SPACE for c in model.constraints], dtype=bool)
    a = np.where(has_point[:, None], np.asarray(d.point_a, dtype=float).reshape(K, 3), np.nan)
    b = np.where(has_point[:, None], np.asarray(d.point_b, dtype=float).reshape(K, 3), np.nan)
    v = np.where(has_point[:, None], np.asarray(d.velocity_a, dtype=float).reshape(K, 3), 0.0)
    strength = np.array([c.max_force for c in model.constraints], dtype=float)
    force = np.where(has_point[:, None], np.asarray(d.constraint_force, dtype=float).reshape(K, 3), 0.0)
    springs = []
    for f in model.forces:
        if f.kind == SPRING:
            end_b = f.r_b if f.link_b < 0 else position_at(kin, f.link_b, f.r_b)
            springs.append((position_at(kin, f.link_a, f.r_a), end_b))
    pull = None
    if sim.pull is not None:                  # (link, point in the link frame, world target, stiffness, damping)
        link, r, target = sim.pull[:3]
        pull = frozen_copy([position_at(kin, link, np.asarray(r, dtype=float)), target])
    enabled = np.array([c.enabled for c in model.constraints], dtype=bool)
    active = np.asarray(sim.active, dtype=bool).copy()
    return Overlay(
        names=tuple(model.constraint_names), link_R=frozen_copy(kin.R_WL), link_p=frozen_copy(kin.p_WL),
        point_a=frozen_copy(a), point_b=frozen_copy(b),
        world_b=frozen_copy([getattr(c, "link_b", -1) < 0 for c in model.constraints], bool),
        kinds=frozen_copy([c.kind for c in model.constraints], int), force=frozen_copy(force),
        ratio=frozen_copy(np.linalg.norm(force, axis=1) / strength if K else np.zeros(0)),
        velocity=frozen_copy(v), active=frozen_copy(active, bool), broken=frozen_copy(enabled & ~active, bool),
        springs=frozen_copy(np.array(springs).reshape(-1, 2, 3)), has_point=frozen_copy(has_point, bool), pull=pull)


def resting_overlay(model) -> Overlay:
    """The overlay of ``model`` at rest in its initial configuration, from its geometry alone (forward kinematics;
    no forces, no velocities): what the viewport shows before the simulation's first snapshot, while the kernels
    of the step are still being compiled (any thread)."""
    kin = link_kinematics(model, np.asarray(model.q0, dtype=float))
    K = len(model.constraints)
    has_point = np.array([c.kind != JOINT_SPACE for c in model.constraints], dtype=bool)
    a, b = np.full((K, 3), np.nan), np.full((K, 3), np.nan)
    for i, c in enumerate(model.constraints):
        if not has_point[i]:
            continue
        a[i] = position_at(kin, c.link_a, c.r_a)
        if c.link_b >= 0:
            b[i] = position_at(kin, c.link_b, c.r_b)
        else:                             # a world point; a moving nail where its path starts, n(0) = r + a ∘ sin φ
            b[i] = c.r_b if c.path is None else c.r_b + np.asarray(c.path[1], dtype=float) * np.sin(c.path[3])
    springs = [(position_at(kin, f.link_a, f.r_a), f.r_b if f.link_b < 0 else position_at(kin, f.link_b, f.r_b))
               for f in model.forces if f.kind == SPRING]
    enabled = np.array([c.enabled for c in model.constraints], dtype=bool)
    return Overlay(
        names=tuple(model.constraint_names), link_R=frozen_copy(kin.R_WL), link_p=frozen_copy(kin.p_WL),
        point_a=frozen_copy(a), point_b=frozen_copy(b),
        world_b=frozen_copy([getattr(c, "link_b", -1) < 0 for c in model.constraints], bool),
        kinds=frozen_copy([c.kind for c in model.constraints], int), force=frozen_copy(np.zeros((K, 3))),
        ratio=frozen_copy(np.zeros(K)), velocity=frozen_copy(np.zeros((K, 3))), active=frozen_copy(enabled, bool),
        broken=frozen_copy(np.zeros(K), bool), springs=frozen_copy(np.array(springs).reshape(-1, 2, 3)),
        has_point=frozen_copy(has_point, bool))
