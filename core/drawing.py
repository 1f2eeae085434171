"""The draw list of a state: everything a viewer draws, computed once per drawn state by whoever owns the
simulation — every shape's pose, the link frames, the constraint ends (a nail, a ball joint's or hinge's world
point) with their forces and velocities (thesis fig. 2.9), the springs, broken constraints, the mouse spring, and
the contact points with their mode (open, stick, slip) and forces (normal and friction).

:func:`draw_list` reads a :class:`core.Simulation` at its current state (one forward kinematics, and
``Simulation.data``, which the step has already evaluated: constraint ends, forces and velocities as the step saw
them, dragged and moving nails included) and returns a frozen :class:`DrawList` of copies that may cross threads
(the studio makes it on its worker thread and draws it on the GUI thread, which computes no kinematics).
:func:`resting_draw_list` is the model at rest in its initial configuration, from its geometry alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .constraints import JOINT_SPACE, NAIL, POINT_TO_POINT
from .contacts import contact_rows, point_states
from .forces import SPRING
from .kinematics import forward_kinematics

__all__ = ["DrawList", "ContactDraw", "draw_list", "resting_draw_list", "contact_draw", "shape_poses",
           "frozen_copy"]


def frozen_copy(a, dtype=float) -> np.ndarray:
    """A read-only copy of ``a`` (what a draw list holds, so it can cross threads)."""
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class ContactDraw:
    """The contact points of a state (:func:`core.contacts.point_states`), P of them: ``labels`` (P,)
    ``<contact>.<i>``; ``position`` (P, 3) where each touches or would touch its plane (m); ``mode`` (P,)
    ``core.contacts`` OPEN, STICK, SLIP or FRICTIONLESS; ``normal`` and ``friction`` (P, 3): the plane's normal
    and friction force on the body at the point (N; zero when open); ``between_shapes`` (P,): the point is one of
    a scene's ``collisions`` (two shapes), whose open points a viewer leaves out (every ball would carry one grey
    dot per other shape)."""
    labels: tuple
    position: np.ndarray
    mode: np.ndarray
    normal: np.ndarray
    friction: np.ndarray
    between_shapes: np.ndarray | None = None


def contact_draw(model, state, data) -> ContactDraw | None:
    """The :class:`ContactDraw` of ``state`` (``data``: its evaluation, or None before there is one), or None
    for a scene without contacts."""
    if not getattr(model, "contacts", ()):
        return None
    ps = point_states(model, state, data)
    shapes = np.array([bool(c.shape) for c in model.contacts for _ in c.points], dtype=bool)
    return ContactDraw(ps["labels"], frozen_copy(ps["position"]), frozen_copy(ps["mode"], np.int64),
                       frozen_copy(ps["normal_force"]), frozen_copy(ps["friction_force"]),
                       frozen_copy(shapes, bool))


@dataclass(frozen=True)
class DrawList:
    """A state's draw list (frozen), everything in world coordinates (m, N, m/s) at time ``t``. K constraints,
    N links, S shapes, P springs.

    ``shape_poses`` (S, 4, 4): ``X_WS`` of every shape; ``link_R`` (N, 3, 3), ``link_p`` (N, 3): link frames;
    ``point_a`` (K, 3): each constraint's point on its first body; ``point_b`` (K, 3): its other end (the nail, a
    point on the second body, or the line/plane origin); ``world_b`` (K,): the other end is fixed in the world;
    ``anchor`` (K,): drawn as a sphere that can be dragged (a nail, or a point-to-point constraint — a ball joint,
    half a hinge — to the world); ``force`` (K, 3): constraint force on point a; ``ratio`` (K,): ‖force‖ /
    max_force; ``velocity`` (K, 3): velocity of point a; ``active`` (K,); ``broken`` (K,): enabled in the scene
    but removed at run time; ``has_point`` (K,): the constraint acts at a body point (joint-space constraints do
    not: nothing of theirs is drawn); ``springs`` (P, 2, 3): spring end points (a on a body, b on a body or the
    world); ``spring_names`` (P,); ``spring_world_b`` (P,): end b is a world point; ``pull`` (2, 3) or None: the
    grabbed body point and the mouse spring's target; ``contact_row`` (K,): the constraint is a contact point's
    or a joint limit's row (drawn at the contact, or not at all); ``contacts``: the contact points
    (:class:`ContactDraw`) or None."""
    names: tuple
    link_R: np.ndarray
    link_p: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    world_b: np.ndarray
    force: np.ndarray
    ratio: np.ndarray
    velocity: np.ndarray
    active: np.ndarray
    broken: np.ndarray
    springs: np.ndarray
    has_point: np.ndarray | None = None
    pull: np.ndarray | None = None
    shape_poses: np.ndarray | None = None
    anchor: np.ndarray | None = None
    spring_names: tuple = ()
    spring_world_b: np.ndarray | None = None
    t: float = 0.0
    contact_row: np.ndarray | None = None
    contacts: ContactDraw | None = None

    def nail_indices(self) -> list[int]:
        """Constraints whose world end is drawn as a sphere (nails, ball joints and hinges to the world)."""
        anchor = self.anchor if self.anchor is not None else self.world_b
        return [i for i in range(len(self.names)) if self.world_b[i] and anchor[i] and self.drawn(i)]

    def drawn(self, i: int) -> bool:
        return self.has_point is None or bool(self.has_point[i])


def shape_poses(model, R_WL: np.ndarray, p_WL: np.ndarray) -> np.ndarray:
    """``X_WS`` (S, 4, 4) of every shape from the link poses: ``R_WS = R_WL R_LS``, ``p_WS = p_WL + R_WL p_LS``."""
    X = np.zeros((len(model.shapes), 4, 4))
    X[:, 3, 3] = 1.0
    for k, s in enumerate(model.shapes):
        X[k, :3, :3] = R_WL[s.link] @ s.R_LS
        X[k, :3, 3] = p_WL[s.link] + R_WL[s.link] @ s.p_LS
    return X


def _at(R_WL, p_WL, link: int, r) -> np.ndarray:
    return p_WL[link] + R_WL[link] @ np.asarray(r, dtype=float)


def _static(model):
    """What does not change while a model runs: its constraints' flags and its springs (made once per model)."""
    cached = model.__dict__.get("_draw_static")
    if cached is not None:
        return cached
    K = len(model.constraints)
    has_point = np.array([c.kind != JOINT_SPACE for c in model.constraints], dtype=bool)
    world_b = np.array([getattr(c, "link_b", -1) < 0 for c in model.constraints], dtype=bool)
    anchor = np.array([c.kind in (NAIL, POINT_TO_POINT) for c in model.constraints], dtype=bool)
    springs = [f for f in model.forces if f.kind == SPRING]
    strength = np.array([c.max_force for c in model.constraints], dtype=float) if K else np.zeros(0)
    enabled = np.array([c.enabled for c in model.constraints], dtype=bool)
    rows = np.zeros(K, dtype=bool)
    rows[list(contact_rows(model))] = True
    cached = (has_point, world_b, anchor, springs, strength, enabled, rows)
    model.__dict__["_draw_static"] = cached
    return cached


def _springs(springs, R_WL, p_WL) -> np.ndarray:
    ends = [(_at(R_WL, p_WL, f.link_a, f.r_a), f.r_b if f.link_b < 0 else _at(R_WL, p_WL, f.link_b, f.r_b))
            for f in springs]
    return np.array(ends, dtype=float).reshape(-1, 2, 3)


def draw_list(sim) -> DrawList:
    """The draw list of a :class:`core.Simulation` at its current state (on the thread that owns it)."""
    model, s = sim.model, sim.state
    R_WL, p_WL, _ = forward_kinematics(model, np.asarray(s.q, dtype=float))
    d = sim.data
    has_point, world_b, anchor, springs, strength, enabled, rows = _static(model)
    K = len(model.constraints)
    a = np.where(has_point[:, None], np.asarray(d.point_a, dtype=float).reshape(K, 3), np.nan)
    b = np.where(has_point[:, None], np.asarray(d.point_b, dtype=float).reshape(K, 3), np.nan)
    v = np.where(has_point[:, None], np.asarray(d.velocity_a, dtype=float).reshape(K, 3), 0.0)
    force = np.where(has_point[:, None], np.asarray(d.constraint_force, dtype=float).reshape(K, 3), 0.0)
    pull = None
    if sim.pull is not None:                  # (link, point in the link frame, world target, stiffness, damping)
        link, r, target = sim.pull[:3]
        pull = frozen_copy([_at(R_WL, p_WL, link, r), target])
    active = np.asarray(sim.active, dtype=bool).copy()
    return DrawList(
        names=tuple(model.constraint_names), link_R=frozen_copy(R_WL), link_p=frozen_copy(p_WL),
        point_a=frozen_copy(a), point_b=frozen_copy(b), world_b=frozen_copy(world_b, bool),
        force=frozen_copy(force), ratio=frozen_copy(np.linalg.norm(force, axis=1) / strength if K else np.zeros(0)),
        velocity=frozen_copy(v), active=frozen_copy(active, bool), broken=frozen_copy(enabled & ~active, bool),
        springs=frozen_copy(_springs(springs, R_WL, p_WL)), has_point=frozen_copy(has_point, bool), pull=pull,
        shape_poses=frozen_copy(shape_poses(model, R_WL, p_WL)), anchor=frozen_copy(anchor, bool),
        spring_names=tuple(f.name for f in springs),
        spring_world_b=frozen_copy([f.link_b < 0 for f in springs], bool), t=float(s.t),
        contact_row=frozen_copy(rows, bool), contacts=contact_draw(model, s, d))


def resting_draw_list(model) -> DrawList:
    """The draw list of ``model`` at rest in its initial configuration, from its geometry alone (forward
    kinematics; no forces, no velocities): what a viewer shows before the simulation's first state is
    evaluated (while the kernels of the step are still being compiled)."""
    R_WL, p_WL, _ = forward_kinematics(model, np.asarray(model.q0, dtype=float))
    has_point, world_b, anchor, springs, _, enabled, rows = _static(model)
    try:                                  # the contact points where they start (open: no forces read)
        contacts = contact_draw(model, model.initial_state(), None)
    except (ValueError, IndexError, AttributeError):
        contacts = None
    K = len(model.constraints)
    a, b = np.full((K, 3), np.nan), np.full((K, 3), np.nan)
    for i, c in enumerate(model.constraints):
        if not has_point[i]:
            continue
        a[i] = _at(R_WL, p_WL, c.link_a, c.r_a)
        if c.link_b >= 0:
            b[i] = _at(R_WL, p_WL, c.link_b, c.r_b)
        else:                             # a world point; a moving nail where its path starts, n(0) = r + a ∘ sin φ
            b[i] = c.r_b if c.path is None else c.r_b + np.asarray(c.path[1], dtype=float) * np.sin(c.path[3])
    return DrawList(
        names=tuple(model.constraint_names), link_R=frozen_copy(R_WL), link_p=frozen_copy(p_WL),
        point_a=frozen_copy(a), point_b=frozen_copy(b), world_b=frozen_copy(world_b, bool),
        force=frozen_copy(np.zeros((K, 3))), ratio=frozen_copy(np.zeros(K)), velocity=frozen_copy(np.zeros((K, 3))),
        active=frozen_copy(enabled, bool), broken=frozen_copy(np.zeros(K), bool),
        springs=frozen_copy(_springs(springs, R_WL, p_WL)), has_point=frozen_copy(has_point, bool),
        shape_poses=frozen_copy(shape_poses(model, R_WL, p_WL)), anchor=frozen_copy(anchor, bool),
        spring_names=tuple(f.name for f in springs),
        spring_world_b=frozen_copy([f.link_b < 0 for f in springs], bool), t=0.0,
        contact_row=frozen_copy(rows, bool), contacts=contacts)
