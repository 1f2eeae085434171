"""Unilateral contacts of body points with planes — a ground plane, or a plane fixed in another body (a box's
face) — and joint limits: what they are in the model, and the tables the compiled step reads (McClamroch §6,
eq. 40–42; Kearney, Hansen & Cremer §3–4).

A contact point is a body-fixed point (a named point, a box corner) or the centre of a sphere of some radius (a
sphere shape, a capsule's end cap) — or, against another shape's core, a *sliding* point: the point of a capsule's
segment nearest that core's edge (``ContactPoint.axis``, ``half_length``; :func:`core.geometry.crossing`), whose
rows use the material point there at each evaluation. Against a plane through ``origin`` with unit normal n its separation is
``h = n·(x − origin) − radius`` and the unilateral conditions are (McClamroch eq. 40–42)::

    h ≥ 0,    N ≥ 0,    h N = 0                    (N the normal contact force)

A plane fixed in a body b turns and moves with it: its normal n = R_b n_b and origin are those of the moment,
the rows measure point a relative to the material point of b it touches (:mod:`core.constraints`,
``body_basis``), the contact force acts on both bodies at the contact point, and a slipping point's Coulomb
force has its reaction on b.

The contact rows are named constraints of the model, solved by whichever formulation like every other
constraint, and switched by events (Kearney §3) — never a penalty or a complementarity solve inside the step:

- ``<contact>.<i>``: the normal row, a point-on-plane constraint of the point (of the sphere's centre against
  the plane raised by its radius); active while the point is in contact;
- ``<contact>.<i>.stick`` (when μ > 0): the tangential rows, a point-velocity constraint holding the tangential
  velocity of the material point at the contact at zero (first-order stabilized); active while the point sticks;
- ``<contact>.<i>.friction`` (when μ > 0): a force element carrying the Coulomb force ``μ N`` opposing the slip
  of a slipping point (booked with the external forces in the energy audit). Its value is part of the state
  (:attr:`core.model.State.slip`), refreshed after every step from the normal force and slip velocity at the
  step's end: friction is explicit in time over a step.

A point's mode is open (no rows), stick (normal + tangential rows), slip (normal row + friction force) or, with
μ = 0, frictionless (normal row). The modes change only at events, which the compiled step triggers, isolates in
time and resolves (:mod:`core.witnesses`; impacts in :mod:`core.impacts`): touchdown (an open point's separation
turns negative while it approaches: an impact), lift-off (an active point's normal force turns tensile), slip (a
sticking point's tangential force leaves the cone ‖F_t‖ ≤ μN), stick (a slipping point's slip velocity reverses).
A joint with ``limits`` has two joint-space rows that the same events add and remove (:class:`JointLimit`).

The compiled step reads the points and limits from tables (:data:`CONTACT_POINT`, :data:`LIMIT`, built once per
model by :func:`contact_tables`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .constraints import JOINT_SPACE, POINT_ON_PLANE, POINT_VELOCITY, PointConstraint, perpendicular_basis
from .forces import POINT_FORCE, AppliedForce
from .geometry import distance, slide_point
from .joint_constraints import tape_jet
from .points import jacobian_at, link_kinematics

__all__ = ["Contact", "ContactPoint", "JointLimit", "contact_elements", "point_modes", "point_states",
           "plane_frames", "contact_rows", "constraint_jacobian", "contact_tables", "CONTACT_POINT", "LIMIT",
           "OPEN", "STICK", "SLIP", "FRICTIONLESS", "MODE_NAMES", "PENETRATION", "stick_normals", "core_distance",
           "segment_separation"]

OPEN, STICK, SLIP, FRICTIONLESS = range(4)
#: m: the penetration beyond which an open point touches down (the isolation's tolerance on the separation).
PENETRATION = 1e-9
MODE_NAMES = ("open", "stick", "slip", "frictionless")


@dataclass(frozen=True, eq=False)
class ContactPoint:
    """One contact point: body point ``r`` of ``link`` (a sphere's centre when ``radius`` > 0), the index of its
    normal row (``normal``), of its tangential rows (``stick``, −1 when frictionless) in ``Model.constraints``
    and of its friction force element (``friction``, −1 when frictionless) in ``Model.forces`` — and of the
    element carrying that force's reaction on the plane's body (``reaction``, −1 for a ground plane); ``slot``:
    its row in :attr:`core.model.State.slip`."""
    label: str
    link: int
    r: np.ndarray
    radius: float
    normal: int
    stick: int
    friction: int
    slot: int
    reaction: int = -1
    axis: np.ndarray | None = None    # a sliding point: the unit axis of its segment through r (body frame)
    half_length: float = 0.0          # and its half-length (core.geometry.crossing)
    ends: tuple = (-1, -1)            # and the slots of the points at its segment's ends (−1: none), which it
    #                                   takes over from where it touches (core.witnesses.resolve)
    faces: np.ndarray | None = None   # a box's edge: its two faces' outward normals (2 x 3, body frame)


@dataclass(frozen=True, eq=False)
class Contact:
    """A body's contact points against the plane through ``origin`` with unit ``normal`` (world), with Newton's
    coefficient of ``restitution``, Coulomb ``friction`` μ and the ``rest_speed`` below which a rebound ends in
    a resting contact — or against a plane fixed in link ``plane_link`` (≥ 0; ``plane_body`` its name), with
    ``normal`` and ``origin`` in that link's frame (:func:`plane_frames` gives them in the world at a state);
    ``holds``: the velocity coordinates of joints whose actuators hold them through this
    contact's impacts (Kearney's tightly coupled control at an impact: the actuator answers the impulse, so a
    bent knee does not fold when the foot strikes)."""
    name: str
    body: str
    link: int
    normal: np.ndarray
    origin: np.ndarray
    restitution: float
    friction: float
    rest_speed: float
    points: tuple
    holds: tuple = ()                 # velocity indices of the joints its impacts leave unchanged
    liftoff_delay: float = 0.0        # s: a point that touched down does not lift off before this has passed
    plane_link: int = -1              # the link the plane is fixed in (−1: the world)
    plane_body: str = "world"
    shape: int = 0                    # > 0: against a core of plane_link's shape (core.geometry), not a plane
    shape_R: np.ndarray = field(default_factory=lambda: np.eye(3))
    shape_half: np.ndarray = field(default_factory=lambda: np.zeros(3))
    shape_radius: float = 0.0

    def plane(self, kin) -> tuple[np.ndarray, np.ndarray]:
        """The plane's world unit normal and origin at the link kinematics ``kin`` (a plane contact's)."""
        if self.shape:
            raise ValueError(f"contact {self.name!r} is between two shapes: its normal is each point's "
                             "(Contact.touching)")
        if self.plane_link < 0:
            return self.normal, self.origin
        R = kin.R_WL[self.plane_link]
        return R @ self.normal, kin.p_WL[self.plane_link] + R @ self.origin

    def touching(self, kin, point) -> tuple[np.ndarray, np.ndarray, float]:
        """``(n, x, h)`` of one of its points at the link kinematics ``kin``: the world unit normal (from the plane
        or the other shape to the point), where the point touches or would touch (on its own surface: a sphere's
        point nearest the other side) and the separation h (m)."""
        centre = kin.p_WL[point.link] + kin.R_WL[point.link] @ point.r
        if point.half_length > 0:                            # a sliding point: its segment's, at the pair
            return self._sliding(kin, point)
        if not self.shape:
            n, o = self.plane(kin)
            x = centre - point.radius * n
            return n, x, float(n @ (x - o))
        phi, n = core_distance(kin, centre, self.plane_link, self.origin, self.shape_R, self.shape, self.shape_half)
        return n, centre - point.radius * n, phi - point.radius - self.shape_radius

    def _sliding(self, kin, point) -> tuple[np.ndarray, np.ndarray, float]:
        """:meth:`touching` of a sliding point (:func:`segment_separation`)."""
        R_b = kin.R_WL[self.plane_link]
        R_core = R_b @ self.shape_R
        origin = kin.p_WL[self.plane_link] + R_b @ self.origin
        R_a = kin.R_WL[point.link]
        c = R_core.T @ (kin.p_WL[point.link] + R_a @ point.r - origin)
        e = R_core.T @ (R_a @ point.axis)
        faces = None if point.faces is None else (R_core.T @ R_a @ point.faces.T).T
        h, u, n = segment_separation(self.shape, self.shape_half, c, e, point.half_length,
                                     point.radius + self.shape_radius, faces)
        n_w = R_core @ n
        return n_w, origin + R_core @ (c + u * e) - point.radius * n_w, h


def segment_separation(kind: int, half, c, e, half_length: float, radii: float,
                       faces=None) -> tuple[float, float, np.ndarray]:
    """``(h, u, n)`` of an open sliding contact point — a segment of centre ``c`` and unit axis ``e`` (the core's
    frame) swept by a ball, the radii of both sides ``radii``; a box's edge with its faces' normals ``faces``
    (2 x 3, the core's frame) — against a core, as the compiled step measures it (:func:`core.geometry.slide_point`,
    the pair of least separation): the separation, the segment's parameter u and the core's normal n."""
    n, s = np.zeros(3), np.zeros(3)
    edge = faces is not None
    fc = np.asarray(faces, dtype=float) if edge else np.zeros((2, 3))
    h, u, _ = slide_point(*(np.asarray(x, dtype=float) for x in (c, e)), float(half_length), int(kind),
                          np.asarray(half, dtype=float), float(radii), -1, n, s, fc, edge, -1, 0)
    return float(h - radii), float(u), n


@dataclass(frozen=True, eq=False)
class JointLimit:
    """A hinge's or slider's range [lower, upper] as two unilateral rows (Kearney §3; McClamroch eq. 40–42 with
    the separation q − lower ≥ 0 and upper − q ≥ 0): the joint-space constraints ``<joint>.lower`` (q = lower)
    and ``<joint>.upper`` (q = upper) of ``Model.constraints`` (indices ``rows``), added when the joint reaches
    its bound (an impact with Newton's ``restitution``; a rebound slower than ``rest_speed`` ends at the bound)
    and removed when the limit's force would pull. ``q``/``v``: the joint's entries in q and q̇."""
    joint: str
    q: int
    v: int
    rows: tuple
    bounds: tuple
    restitution: float
    rest_speed: float
    angular: bool = True              # a hinge (impulses in N·m·s, forces in N·m), else a slider (N·s, N)

    def label(self, k: int) -> str:
        return f"{self.joint}.{('lower', 'upper')[k]}"



def contact_elements(name: str, body: str, link: int, points, normal, origin, restitution: float, friction: float,
                     rest_speed: float, stabilization: float, first_constraint: int, first_force: int,
                     first_slot: int, holds: tuple = (), liftoff_delay: float = 0.0, plane_link: int = -1,
                     plane_body: str = "world", core: tuple | None = None) -> tuple[Contact, list, list]:
    """The :class:`Contact` of a body's ``points`` ((r, radius) pairs in the body frame) and its constraints and
    force elements, to be appended to a model whose constraints, forces and contact points so far number
    ``first_constraint``, ``first_force`` and ``first_slot``; against the plane fixed in link ``plane_link``
    (``normal``, ``origin`` in its frame) when that is ≥ 0, else the world's — or, with ``core`` = (kind, R,
    half, radius) (:mod:`core.geometry`), against that core of link ``plane_link``'s shape, centred at
    ``origin`` and turned by R in the link's frame (``normal`` is then only where the rows start). The rows
    start inactive; they never break."""
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    origin = np.asarray(origin, float)
    tangent = perpendicular_basis(n)
    on_body = plane_link >= 0
    kind, core_R, half, core_radius = core if core is not None else (0, np.eye(3), np.zeros(3), 0.0)
    if kind and not on_body:
        raise ValueError("a contact against a shape needs the shape's link")
    constraints, forces, cps = [], [], []
    k, f = first_constraint, first_force
    stride = 2 if friction > 0 else 1                         # rows per point: its normal row, its stick rows
    for i, point in enumerate(points):
        r, radius = np.asarray(point[0], float), point[1]
        axis, length = (np.asarray(point[2], float), float(point[3])) if len(point) > 2 else (None, 0.0)
        faces = None if len(point) <= 4 or point[4] is None else np.asarray(point[4], float)
        rank = int(point[5]) if len(point) > 5 else -1
        # the other sliding point on the same segment: the next point for rank 0, the one before for rank 1
        # (core.scene.collision.sliding_points lists a segment's two together)
        sibling = -1 if rank < 0 else first_constraint + stride * (i + 1 - 2 * rank)
        label = f"{name}.{i}"
        if kind:
            constraints.append(PointConstraint(label, name, POINT_ON_PLANE, link, r, plane_link, origin.copy(),
                                               n.reshape(3, 1).copy(), stabilization, np.inf, np.inf,
                                               enabled=False, body_basis=True, shape=int(kind),
                                               shape_R=np.asarray(core_R, float),
                                               shape_half=np.asarray(half, float),
                                               radius=float(radius) + float(core_radius),
                                               slide_axis=axis if axis is not None else np.zeros(3),
                                               slide_half=length, slide_faces=faces, slide_sibling=sibling,
                                               slide_rank=max(rank, 0)))
        else:
            constraints.append(PointConstraint(label, name, POINT_ON_PLANE, link, r, plane_link,
                                               origin + radius * n, n.reshape(3, 1), stabilization, np.inf,
                                               np.inf, enabled=False, body_basis=on_body))
        normal_row, stick, fric, reaction = k, -1, -1, -1
        k += 1
        if friction > 0:
            constraints.append(PointConstraint(f"{label}.stick", name, POINT_VELOCITY, link, r.copy(), plane_link,
                                               origin.copy(), tangent.copy(), stabilization, np.inf, np.inf,
                                               enabled=False, body_basis=on_body))
            forces.append(AppliedForce(f"{label}.friction", POINT_FORCE, link, r.copy(), force=np.zeros(3),
                                       start=-np.inf, stop=np.inf))
            stick, fric = k, f
            k += 1
            f += 1
            if on_body:                                       # Coulomb's reaction on the plane's body
                forces.append(AppliedForce(f"{label}.friction_reaction", POINT_FORCE, plane_link, origin.copy(),
                                           force=np.zeros(3), start=-np.inf, stop=np.inf))
                reaction = f
                f += 1
        ends = (-1, -1)
        if axis is not None:                                  # its caps: the points at centre ∓ L axis
            ends = tuple(next((first_slot + j for j, other in enumerate(points) if len(other) == 2
                               and np.allclose(np.asarray(other[0], float), r + side * length * axis, atol=1e-12)),
                              -1) for side in (-1.0, 1.0))
        cps.append(ContactPoint(label, link, r, float(radius), normal_row, stick, fric, first_slot + i, reaction,
                                axis, length, ends, faces))
    return (Contact(name, body, link, n, origin, float(restitution), float(friction), float(rest_speed), tuple(cps),
                    tuple(holds), float(liftoff_delay), int(plane_link), plane_body, int(kind),
                    np.asarray(core_R, float), np.asarray(half, float), float(core_radius)), constraints, forces)


def all_points(model) -> list:
    return [p for c in model.contacts for p in c.points]


def point_modes(model, state) -> np.ndarray:
    """The mode of every contact point at ``state`` (:data:`OPEN`, :data:`STICK`, :data:`SLIP`,
    :data:`FRICTIONLESS`), in ``Model.contacts`` order."""
    modes = []
    for p in all_points(model):
        if not state.active[p.normal]:
            modes.append(OPEN)
        elif p.stick < 0:
            modes.append(FRICTIONLESS)
        else:
            modes.append(STICK if state.active[p.stick] else SLIP)
    return np.array(modes, dtype=np.int64)


# ---- reading the model at a state ----------------------------------------------------------------------

def _tables(model) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """Per model (made once): the (contact, point) pairs in slot order, their normal rows' indices, their
    planes' unit normals (P x 3; in the plane's body frame for a body's plane) and the indices of the points
    whose plane is a body's, for the vectorized separations and normal forces the step reads every step."""
    tables = model.__dict__.get("_contact_point_tables")
    if tables is None:
        pairs = [(c, p) for c in model.contacts for p in c.points]
        rows = np.array([p.normal for _, p in pairs], dtype=np.int64)
        normals = np.array([c.normal for c, _ in pairs], dtype=float).reshape(len(pairs), 3)
        moving = np.array([k for k, (c, _) in enumerate(pairs) if c.plane_link >= 0], dtype=np.int64)
        tables = (pairs, rows, normals, moving)
        model.__dict__["_contact_point_tables"] = tables
    return tables


def plane_frames(model, q) -> np.ndarray:
    """The world unit normal of every contact point's plane at configuration ``q`` (P x 3, in
    ``Model.contacts`` order): constant for ground planes, turned with the body for a body's plane."""
    pairs, _, normals, moving = _tables(model)
    if not len(moving):
        return normals
    kin = link_kinematics(model, np.asarray(q, dtype=float))
    out = normals.copy()
    for k in moving:
        c, p = pairs[k]
        out[k] = c.touching(kin, p)[0] if c.shape else kin.R_WL[c.plane_link] @ c.normal
    return out


def contact_rows(model) -> frozenset:
    """The indices in ``Model.constraints`` of every contact point's rows and every joint limit's: the rows the
    events switch (an impact treats them apart from the other, bilateral, constraints; the studio draws them at
    the contact, not as constraints)."""
    rows = model.__dict__.get("_contact_rows")
    if rows is None:
        rows = frozenset(i for c in model.contacts for p in c.points for i in (p.normal, p.stick) if i >= 0) \
            | frozenset(i for lim in getattr(model, "limits", ()) for i in lim.rows)
        model.__dict__["_contact_rows"] = rows
    return rows


def stick_normals(model) -> dict:
    """Each contact point's stick rows → its normal row (indices in ``Model.constraints``): while the normal row is
    inactive (the point open) the compiled step does not evaluate the stick rows."""
    return {p.stick: p.normal for c in model.contacts for p in c.points if p.stick >= 0}


def core_distance(kin, x, link, centre, R, kind: int, half) -> tuple[float, np.ndarray]:
    """``(φ, n)``: the signed distance from world point ``x`` to the core of link ``link``'s shape centred at
    ``centre`` and turned by ``R`` in its frame (:func:`core.geometry.distance`), and the world unit normal."""
    R_core = kin.R_WL[link] @ R
    phi, _, n = distance(kind, half, R_core.T @ (x - kin.p_WL[link] - kin.R_WL[link] @ centre))
    return phi, R_core @ n


def constraint_jacobian(model, kin, q, c) -> np.ndarray:
    """The rows J (rows x nv) of constraint ``c`` at configuration q (``kin``: its link kinematics)."""
    if c.kind == JOINT_SPACE:
        n = len(c.names)
        L = len(c.tape)
        xv = np.array([q[i] for i in c.q_index], float)
        J = np.zeros((1, model.nv))
        regs = (np.zeros(L), np.zeros(L), np.zeros(L), np.zeros((L, n)))
        tape_jet(c.tape, 0, L, xv, np.zeros(n), *regs)
        for j, vi in enumerate(c.v_index):
            J[0, vi] += regs[3][L - 1, j]
        return J
    Ja = jacobian_at(model, kin, c.link_a, c.r_a)
    if c.body_basis:                                           # b's point at x_a, the basis turned with b
        R, p = kin.R_WL[c.link_b], kin.p_WL[c.link_b]
        xa = kin.p_WL[c.link_a] + kin.R_WL[c.link_a] @ c.r_a
        E = R @ c.basis
        if getattr(c, "shape", 0):                             # against a core: the normal at q
            E = core_distance(kin, xa, c.link_b, c.r_b, c.shape_R, c.shape, c.shape_half)[1].reshape(3, 1)
        return E.T @ (Ja - jacobian_at(model, kin, c.link_b, R.T @ (xa - p)))
    if c.link_b >= 0:
        Ja = Ja - jacobian_at(model, kin, c.link_b, c.r_b)
    return c.basis.T @ Ja



# ---- the tables the compiled step reads ------------------------------------------------------------------

#: One contact point: body point ``r`` of ``link`` (a sphere's centre when ``radius`` > 0); the indices of its
#: ``normal`` row and ``stick`` rows (−1: frictionless) in the constraint table, of its ``friction`` force element
#: and of that force's ``reaction`` on the plane's body (−1: a ground plane) in the force table; its ``contact``;
#: the plane: ``plane_link`` (−1: the world) with ``plane_normal`` and ``plane_origin`` in that link's frame (else
#: the world's); Newton's ``restitution``, Coulomb's ``mu``, the ``rest_speed`` below which a rebound ends in
#: contact, the ``liftoff_delay``, and the joints an actuator holds through its impacts
#: (``holds[holds_start : holds_start + holds_count]``, velocity indices); a sliding point's ``ends``: the slots
#: of the points at its segment's ends (−1: none).
CONTACT_POINT = np.dtype([
    ("link", np.int64), ("r", np.float64, (3,)), ("radius", np.float64), ("normal", np.int64), ("stick", np.int64),
    ("friction", np.int64), ("reaction", np.int64), ("contact", np.int64), ("plane_link", np.int64),
    ("plane_normal", np.float64, (3,)), ("plane_origin", np.float64, (3,)), ("restitution", np.float64),
    ("mu", np.float64), ("rest_speed", np.float64), ("liftoff_delay", np.float64), ("holds_start", np.int64),
    ("holds_count", np.int64), ("ends", np.int64, (2,)),
], align=True)

#: One joint limit: the joint's entries ``q`` and ``v`` in q and q̇, its rows ``lower_row`` and ``upper_row`` in
#: the constraint table, the bounds, Newton's ``restitution`` and the ``rest_speed``.
LIMIT = np.dtype([
    ("q", np.int64), ("v", np.int64), ("lower_row", np.int64), ("upper_row", np.int64), ("lower", np.float64),
    ("upper", np.float64), ("restitution", np.float64), ("rest_speed", np.float64),
], align=True)


def contact_tables(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(points, limits, holds)``: the :data:`CONTACT_POINT` table of every contact point in slot order, the
    :data:`LIMIT` table of the joint limits, and the pool of held joints' velocity indices."""
    points = np.zeros(sum(len(c.points) for c in model.contacts), CONTACT_POINT)
    holds: list[int] = []
    for ci, c in enumerate(model.contacts):
        start = len(holds)
        holds.extend(int(j) for j in c.holds)
        for p in c.points:
            row = points[p.slot]
            row["link"], row["r"], row["radius"] = p.link, p.r, p.radius
            row["normal"], row["stick"], row["friction"], row["reaction"] = p.normal, p.stick, p.friction, p.reaction
            row["contact"], row["plane_link"] = ci, c.plane_link
            row["plane_normal"], row["plane_origin"] = c.normal, c.origin
            row["restitution"], row["mu"], row["rest_speed"] = c.restitution, c.friction, c.rest_speed
            row["liftoff_delay"] = c.liftoff_delay
            row["holds_start"], row["holds_count"] = start, len(c.holds)
            row["ends"] = p.ends
    limits = np.zeros(len(model.limits), LIMIT)
    for row, lim in zip(limits, model.limits):
        row["q"], row["v"], row["lower_row"], row["upper_row"] = lim.q, lim.v, lim.rows[0], lim.rows[1]
        row["lower"], row["upper"] = lim.bounds
        row["restitution"], row["rest_speed"] = lim.restitution, lim.rest_speed
    return points, limits, np.array(holds, dtype=np.int64)

# ---- what a viewer draws ------------------------------------------------------------------------------------

def point_states(model, state, out) -> dict:
    """Every contact point at ``state`` (``out``: its evaluation, a :class:`core.Data` or the step's outputs), in
    ``Model.contacts`` order, for drawing and reports: ``labels`` (P,) (``<contact>.<i>``); ``position`` (P, 3),
    the world point where it touches or would touch the plane (a sphere's lowest point along the normal);
    ``mode`` (P,) (:data:`OPEN`, :data:`STICK`, :data:`SLIP`, :data:`FRICTIONLESS`); ``normal_force`` (P, 3)
    and ``friction_force`` (P, 3), the plane's forces on the body at the point (N; zero when open): the normal
    row's constraint force, and the stick rows' force while it sticks or the Coulomb force μN of
    :attr:`core.model.State.slip` while it slips; ``separation`` (P,) h (m).

    Two shapes apart (an open point of a shape–shape contact, which a viewer does not draw) are not measured again
    when ``out`` is given: their ``position`` is NaN and their ``separation`` the step's own deviation of the
    normal row (exact near the shape, a lower bound outside its bounding ball: ``core.geometry``). A box of
    twenty balls has 290 such pairs, and measuring each in Python took longer than the step."""
    pts = [(c, p) for c in model.contacts for p in c.points]
    P = len(pts)
    position, normal, friction = np.zeros((P, 3)), np.zeros((P, 3)), np.zeros((P, 3))
    separation = np.zeros(P)
    modes = point_modes(model, state) if P else np.zeros(0, np.int64)
    kin = link_kinematics(model, np.asarray(state.q, dtype=float)) if P else None
    deviation = None if out is None else np.asarray(out.deviation, dtype=float)
    for k, (c, p) in enumerate(pts):
        if c.shape and modes[k] == OPEN and deviation is not None:
            position[k], separation[k] = np.nan, deviation[p.normal]
            continue
        _, position[k], separation[k] = c.touching(kin, p)
        if modes[k] == OPEN:
            continue
        normal[k] = out.constraint_force[p.normal]
        if modes[k] == STICK:
            friction[k] = out.constraint_force[p.stick]
        elif modes[k] == SLIP:
            friction[k] = state.slip[p.slot]
    return {"labels": tuple(p.label for _, p in pts), "position": position, "mode": modes,
            "normal_force": normal, "friction_force": friction, "separation": separation}
