"""Unilateral contacts of body points with planes — a ground plane, or a plane fixed in another body (a box's
face): touchdown, impact, resting contact, Coulomb stick and slip, lift-off (McClamroch §6, eq. 40–42; Kearney,
Hansen & Cremer §3–4).

A contact point is a body-fixed point (a named point, a box corner) or the centre of a sphere of some radius (a
sphere shape, a capsule's end cap). Against a plane through ``origin`` with unit normal n its separation is
``h = n·(x − origin) − radius`` and the unilateral conditions are (McClamroch eq. 40–42)::

    h ≥ 0,    N ≥ 0,    h N = 0                    (N the normal contact force)

A plane fixed in a body b turns and moves with it: its normal n = R_b n_b and origin are those of the moment,
the rows measure point a relative to the material point of b it touches (:mod:`core.constraints`,
``body_basis``), the contact force acts on both bodies at the contact point, and a slipping point's Coulomb
force has its reaction on b. Everything below holds with n, the separation and the velocities taken that way
(relative to b).

The contact rows are named constraints of the model, solved by whichever formulation like every other
constraint, and switched by events (Kearney §3) — they are never a penalty or a complementarity solve inside the
step:

- ``<contact>.<i>``: the normal row, a point-on-plane constraint of the point (of the sphere's centre against
  the plane raised by its radius); active while the point is in contact;
- ``<contact>.<i>.stick`` (when μ > 0): the two tangential rows, a point-velocity constraint holding the
  tangential velocity of the material point at the contact at zero (first-order stabilized); active while the
  point sticks;
- ``<contact>.<i>.friction`` (when μ > 0): a force element carrying the Coulomb force ``μ N`` opposing the slip
  of a slipping point (booked with the external forces in the energy audit). Its value is part of the state
  (:attr:`core.model.State.slip`), refreshed after every step from the normal force and slip velocity at the
  step's end: friction is explicit in time over a step.

A point's mode is open (no rows), stick (normal + tangential rows), slip (normal row + friction force) or, with
μ = 0, frictionless (normal row). The modes change only at events, which the step (:mod:`core.step`) triggers,
isolates in time and resolves with the functions here:

- touchdown: an open point's separation turns negative → an impact (:func:`impact`): impulses P on the touching
  points and every active constraint, from the impulse–momentum equations M Δq̇ = Jᵀ P, with Newton's
  restitution on the normal rows (post-impact normal velocity −e times the pre-impact one), zero post-impact
  tangential velocity within the friction cone ‖P_t‖ ≤ μ P_n (sliding impact outside it) and P_n ≥ 0; a point
  that rebounds slower than ``rest_speed`` stays in contact (a ball coming to rest ends in a resting contact,
  not an endless sequence of ever smaller bounces);
- lift-off: an active point's normal force turns tensile (N < 0) → its rows are removed;
- slip: a sticking point's tangential force leaves the friction cone (‖F_t‖ > μ N) → it slips, the friction
  force continuing the stick force's direction with magnitude μ N;
- stick: a slipping point's slip velocity reverses against its friction force → it sticks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .constraints import JOINT_SPACE, POINT_ON_PLANE, POINT_VELOCITY, PointConstraint, perpendicular_basis
from .crba import mass_matrix
from .forces import POINT_FORCE, AppliedForce
from .joint_constraints import tape_jet
from .points import jacobian_at, link_kinematics

__all__ = ["Contact", "ContactPoint", "contact_elements", "point_modes", "OPEN", "STICK", "SLIP", "FRICTIONLESS",
           "MODE_NAMES", "separations", "normal_forces", "tangential_velocity", "contact_rows", "triggers",
           "slipping_away", "impact", "constraint_jacobian",
           "point_states", "JointLimit", "limit_triggers", "plane_frames", "relative_jacobian"]

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

    def plane(self, kin) -> tuple[np.ndarray, np.ndarray]:
        """The plane's world unit normal and origin at the link kinematics ``kin``."""
        if self.plane_link < 0:
            return self.normal, self.origin
        R = kin.R_WL[self.plane_link]
        return R @ self.normal, kin.p_WL[self.plane_link] + R @ self.origin

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


def limit_triggers(model, state, out) -> list[tuple]:
    """The joint-limit events whose trigger holds at ``state``: ``("limit", lim, k, g)`` for a joint past its
    bound k (0 lower, 1 upper) by more than :data:`PENETRATION` (g the signed distance into the range plus it),
    ``("limit-release", lim, k, N)`` for an active bound whose force N (on the joint, into the range) turned
    negative."""
    found = []
    for lim in model.limits:
        for k in (0, 1):
            s = 1.0 if k == 0 else -1.0
            i = lim.rows[k]
            if not state.active[i]:
                h = s * (float(state.q[lim.q]) - lim.bounds[k])
                if h < -PENETRATION:
                    found.append(("limit", lim, k, h + PENETRATION))
            else:
                N = s * float(out.constraint_force[i][0])
                if N < 0:
                    found.append(("limit-release", lim, k, N))
    return found


class _Bound:
    """A joint bound in the impact solve, shaped like a contact and its point."""

    def __init__(self, lim: JointLimit, k: int):
        self.name = self.label = lim.label(k)
        self.friction, self.restitution, self.rest_speed = 0.0, lim.restitution, lim.rest_speed
        self.normal, self.stick, self.holds = lim.rows[k], -1, ()
        self.lim, self.k = lim, k


def contact_elements(name: str, body: str, link: int, points, normal, origin, restitution: float, friction: float,
                     rest_speed: float, stabilization: float, first_constraint: int, first_force: int,
                     first_slot: int, holds: tuple = (), liftoff_delay: float = 0.0, plane_link: int = -1,
                     plane_body: str = "world") -> tuple[Contact, list, list]:
    """The :class:`Contact` of a body's ``points`` ((r, radius) pairs in the body frame) and its constraints and
    force elements, to be appended to a model whose constraints, forces and contact points so far number
    ``first_constraint``, ``first_force`` and ``first_slot``; against the plane fixed in link ``plane_link``
    (``normal``, ``origin`` in its frame) when that is ≥ 0, else the world's. The rows start inactive; they
    never break."""
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    origin = np.asarray(origin, float)
    tangent = perpendicular_basis(n)
    on_body = plane_link >= 0
    constraints, forces, cps = [], [], []
    k, f = first_constraint, first_force
    for i, (r, radius) in enumerate(points):
        r = np.asarray(r, float)
        label = f"{name}.{i}"
        constraints.append(PointConstraint(label, name, POINT_ON_PLANE, link, r, plane_link, origin + radius * n,
                                           n.reshape(3, 1), stabilization, np.inf, np.inf, enabled=False,
                                           body_basis=on_body))
        normal_row, stick, fric, reaction = k, -1, -1, -1
        k += 1
        if friction > 0:
            constraints.append(PointConstraint(f"{label}.stick", name, POINT_VELOCITY, link, r.copy(), plane_link,
                                               origin.copy(), tangent, stabilization, np.inf, np.inf, enabled=False,
                                               body_basis=on_body))
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
        cps.append(ContactPoint(label, link, r, float(radius), normal_row, stick, fric, first_slot + i, reaction))
    return (Contact(name, body, link, n, origin, float(restitution), float(friction), float(rest_speed), tuple(cps),
                    tuple(holds), float(liftoff_delay), int(plane_link), plane_body), constraints, forces)


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


# ---- what an evaluation says about the contacts -------------------------------------------------------------

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
        c = pairs[k][0]
        out[k] = kin.R_WL[c.plane_link] @ c.normal
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


def _normals(model, normals) -> np.ndarray:
    _, _, fixed, moving = _tables(model)
    if normals is not None:
        return normals
    if len(moving):
        raise ValueError("the model has contacts against bodies' planes: give their normals at the state "
                         "(plane_frames(model, q))")
    return fixed


def separations(model, out, normals: np.ndarray | None = None) -> np.ndarray:
    """The separation h of every contact point (m; negative: penetration) from an evaluation's outputs
    (``normals``: :func:`plane_frames` at its state; needed only when a plane is a body's)."""
    rows = _tables(model)[1]
    normals = _normals(model, normals)
    return np.einsum("pi,pi->p", normals, np.asarray(out.point_a)[rows] - np.asarray(out.point_b)[rows])


def normal_forces(model, out, normals: np.ndarray | None = None) -> np.ndarray:
    """The normal contact force N of every contact point (N; zero when open, negative: tensile; ``normals`` as
    for :func:`separations`)."""
    rows = _tables(model)[1]
    normals = _normals(model, normals)
    return np.einsum("pi,pi->p", normals, np.asarray(out.constraint_force)[rows])


def tangential_velocity(n: np.ndarray, out, p: ContactPoint) -> np.ndarray:
    """The velocity along the plane (world normal ``n``) of the material point where ``p`` touches (its stick
    rows' point), relative to the plane's body, from an evaluation's outputs."""
    v = out.velocity_a[p.stick]
    return v - n * (n @ v)


def relative_jacobian(model, kin, c: Contact, p: ContactPoint, x: np.ndarray | None = None) -> np.ndarray:
    """The Jacobian (3 x nv) of the velocity of contact point ``p``'s material point where it touches (world
    point ``x``, else its own) relative to the plane's body's material point there."""
    n, _ = c.plane(kin)
    r = contact_point_body(p, kin.R_WL[p.link], n)
    J = jacobian_at(model, kin, p.link, r)
    if c.plane_link >= 0:
        if x is None:
            x = kin.p_WL[p.link] + kin.R_WL[p.link] @ r
        rb = kin.R_WL[c.plane_link].T @ (x - kin.p_WL[c.plane_link])
        J = J - jacobian_at(model, kin, c.plane_link, rb)
    return J


def slipping_away(model, state) -> set:
    """The slots of the slipping points whose slip velocity opposes their friction force at ``state`` — the
    points that may stick during a step from ``state`` (a slip that has just begun from rest may not)."""
    kin = None
    out = set()
    for c in model.contacts:
        for p in c.points:
            if p.stick < 0 or not state.active[p.normal] or state.active[p.stick]:
                continue
            f = state.slip[p.slot]
            if not f.any():
                continue
            if kin is None:
                kin = link_kinematics(model, state.q, state.qd)
            n, _ = c.plane(kin)
            v = relative_jacobian(model, kin, c, p) @ state.qd
            if -(v - n * (n @ v)) @ f > 0:                               # (at the state, not an evaluation)
                out.add(p.slot)
    return out


def _loading(c: Contact, p: ContactPoint, state) -> bool:
    """Whether point ``p`` is still within its contact's lift-off delay after touching down (Kearney §5: "the
    event to detect liftoff was activated only after a short waiting period", so the leg loads first)."""
    if c.liftoff_delay <= 0 or state.touched is None:
        return False
    t0 = state.touched[p.slot]
    return bool(np.isfinite(t0) and state.t - t0 < c.liftoff_delay)


def touch_times(model, before: np.ndarray, state) -> np.ndarray:
    """``state.touched`` after a change of the active rows from ``before``: the time for points that touched down,
    NaN for open ones."""
    touched = np.array(state.touched, dtype=float, copy=True)
    for c in model.contacts:
        for p in c.points:
            if not state.active[p.normal]:
                touched[p.slot] = np.nan
            elif not before[p.normal]:
                touched[p.slot] = state.t
    return touched


def triggers(model, state, out, before=None, eligible=None, held=frozenset()) -> list[tuple]:
    """The contact events whose trigger predicate holds at ``state`` (``out``: its evaluation), as
    ``(kind, contact, point, g)`` with ``g`` the event function (positive before the event, ≤ 0 at and after):

    - ``touchdown``: an open point's separation h < −:data:`PENETRATION` while it approaches the plane (g = h +
      PENETRATION: a point that has just lifted off, still at h ≈ 0 with the stabilization's round-off, does not
      touch down again at once; nor does one that lifted off while still inside the plane by the rows' deviation
      and now moves out of it — it is separating, and touching it down would only lift it off again);
    - ``lift-off``: an active point's normal force N < 0 (g = N), once its contact's ``liftoff_delay`` has passed
      since it touched down;
    - ``slip``: a sticking point's tangential force beyond the cone, ‖F_t‖ > μN (g = μN − ‖F_t‖);
    - ``stick``: a slipping point's slip velocity no longer opposes its friction force (g = −v_t·f̂, f̂ the
      friction direction of ``before``, the state the step started from, else of ``state``) — a crossing: only
      for the points of ``eligible`` (slots; :func:`slipping_away` at ``before``), when given. Points of
      ``held`` (slots) do not slip: the step holds a point that has switched between stick and slip too often
      inside it (chatter at the cone's edge) in stick until the step ends."""
    found = []
    slip_state = state if before is None else before
    pairs, rows, _, _ = _tables(model)
    active = state.active[rows]
    normals = plane_frames(model, state.q)
    h, N = separations(model, out, normals), normal_forces(model, out, normals)
    # only the points where something may happen: open ones that penetrate, active ones (vectorized above)
    for k in np.flatnonzero(active | (h < -PENETRATION)):
        c, p = pairs[k]
        if not active[k]:
            if float(normals[k] @ out.velocity_a[p.normal]) < 0:
                found.append(("touchdown", c, p, float(h[k]) + PENETRATION))
            continue
        if N[k] < 0 and not _loading(c, p, state):
            found.append(("lift-off", c, p, float(N[k])))
            continue
        if p.stick < 0:
            continue
        if state.active[p.stick]:
            g = c.friction * float(N[k]) - float(np.linalg.norm(out.constraint_force[p.stick]))
            if g < 0 and p.slot not in held:
                found.append(("slip", c, p, g))
        elif eligible is None or p.slot in eligible:
            f = slip_state.slip[p.slot]
            fn = np.linalg.norm(f)
            if fn > 0:
                g = -float(tangential_velocity(normals[k], out, p) @ f) / fn
                if g < 0:
                    found.append(("stick", c, p, g))
    return found


# ---- impacts ------------------------------------------------------------------------------------------------

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
        return (R @ c.basis).T @ (Ja - jacobian_at(model, kin, c.link_b, R.T @ (xa - p)))
    if c.link_b >= 0:
        Ja = Ja - jacobian_at(model, kin, c.link_b, c.r_b)
    return c.basis.T @ Ja


def contact_point_body(p: ContactPoint, R_WL: np.ndarray, normal: np.ndarray, omega=None,
                       lead: float = 0.0) -> np.ndarray:
    """The body-frame coordinates of the material point at which point ``p`` touches the plane with world unit
    ``normal`` (its sphere's lowest point along the normal; the point itself when its radius is zero), for the
    link rotation R_WL — or, given the link's angular velocity relative to the plane ``omega`` (link frame),
    the one that touches ``lead`` seconds later (to first order: the body-frame normal turns as
    dn/dt = −ω × n). A step holds the point that touches at its middle, so a rolling sphere's contact point is
    held with no bias of first order in the step."""
    if p.radius == 0:
        return p.r
    n = R_WL.T @ normal
    if lead and omega is not None:
        n = n - lead * np.cross(omega, n)
        n /= np.linalg.norm(n)
    return p.r - p.radius * n


def impact(model, state, touching: list, contact_rows: set, limits: list = ()) -> tuple[np.ndarray, dict]:
    """Resolve an impact at ``state``: the post-impact velocity q̇⁺ and, per point of ``touching`` (the
    (contact, point) pairs that touch: colliding or resting), ``(P_n, P_t vector, v_n⁻, mode)`` with the mode
    after the impact: :data:`OPEN` when it leaves the plane at its rest speed or faster, else in contact
    (stick, slip or frictionless).

    Impulse–momentum (McClamroch §6; Kearney §3): M (q̇⁺ − q̇⁻) = Jᵀ P over the rows of every active constraint
    that is not a contact (``contact_rows``: the indices of the contacts' constraints) and of the joints the
    touching contacts hold (:attr:`Contact.holds`) — whose velocity the impact leaves unchanged — and of the
    touching points: normal rows with v_n⁺ = −e v_n⁻ (0 for a
    resting point) and P_n ≥ 0, tangential rows with v_t⁺ = 0 while ‖P_t‖ ≤ μ P_n, else a sliding impact with
    P_t = −μ P_n t̂ (t̂ the pre-impact slip direction). Points whose P_n would be negative separate and are
    dropped, one at a time, and a dropped point that the others' impulses leave moving into the plane is taken
    back (an active-set solution of the complementarity conditions: without friction no touching point leaves
    the impact moving into its plane; with friction, sliding impulses along the pre-impact slip can leave a point
    moving in, or even add energy. When they do — about one random eight-corner impact in five, μ = 0.3–1 — the
    impact is solved again as the complementarity problem with Coulomb's cone, :func:`_frictional_impact`).
    ``limits``: (joint limit, bound) pairs at their bounds, solved alike with the rows ±e_j (their info keyed by
    the bound's label). ``info["energy_change"]`` is the kinetic energy the impact changes (≤ 0 but for e = 1,
    where it is zero)."""
    q, v = state.q, state.qd
    kin = link_kinematics(model, q)
    M = mass_matrix(model, q)
    bilateral = [constraint_jacobian(model, kin, q, model.constraints[i]) for i in np.flatnonzero(state.active)
                 if i not in contact_rows]
    held = sorted({j for c, _ in touching for j in c.holds})
    for j in held:                                             # joints an actuator holds through the impact
        row = np.zeros((1, model.nv))
        row[0, j] = 1.0
        bilateral.append(row)
    Jb = np.vstack(bilateral) if bilateral else np.zeros((0, model.nv))
    info = {}
    pts = []
    entries = [(c, p) for c, p in touching] + [(b, b) for b in (_Bound(lim, k) for lim, k in limits)]
    for c, p in entries:
        if isinstance(c, _Bound):
            Jn = np.zeros(model.nv)
            Jn[c.lim.v] = 1.0 if c.k == 0 else -1.0
            Et, Jt = np.zeros((3, 2)), np.zeros((2, model.nv))
        else:
            n, _ = c.plane(kin)
            Jp = relative_jacobian(model, kin, c, p)
            Jn = n @ Jp
            Et = perpendicular_basis(n)
            Jt = Et.T @ Jp
        vn = float(Jn @ v)
        vt = Jt @ v
        colliding = vn < 0 and not state.active[p.normal]
        target = -c.restitution * vn if colliding and c.restitution * -vn >= c.rest_speed else 0.0
        pts.append({"c": c, "p": p, "Jn": Jn, "Jt": Jt, "Et": Et, "vn": vn, "vt": vt, "target": target,
                    "sliding": False, "in": True})
    Minv = np.linalg.inv(M)
    for _ in range(8 * len(pts) + 8):
        rows, cols, rhs, kinds = [Jb], [Jb], [np.zeros(Jb.shape[0])], []
        for k, d in enumerate(pts):
            if not d["in"]:
                continue
            mu = d["c"].friction
            col = d["Jn"]
            if mu > 0 and d["sliding"]:
                t = d["vt"] / max(np.linalg.norm(d["vt"]), 1e-300)
                col = d["Jn"] - mu * (t @ d["Jt"])
            rows.append(d["Jn"][None])
            cols.append(col[None])
            rhs.append(np.array([d["target"] - d["vn"]]))
            kinds.append((k, "n"))
            if mu > 0 and not d["sliding"]:
                rows.append(d["Jt"])
                cols.append(d["Jt"])
                rhs.append(-d["vt"])
                kinds.extend([(k, "t"), (k, "t")])
        R, C, b = np.vstack(rows), np.vstack(cols), np.concatenate(rhs)
        A = R @ Minv @ C.T
        P = np.linalg.lstsq(A, b, rcond=1e-10)[0] if A.size else np.zeros(0)
        m0 = Jb.shape[0]
        Pn, Pt = {}, {}
        for j, (k, what) in enumerate(kinds):
            if what == "n":
                Pn[k] = P[m0 + j]
            else:
                Pt.setdefault(k, []).append(P[m0 + j])
        worst = min(Pn, key=lambda k: Pn[k], default=None)
        if worst is not None and Pn[worst] < -1e-12 * max(1.0, max(abs(x) for x in Pn.values())):
            pts[worst]["in"] = False                            # it separates: drop it and solve again
            continue
        over = [k for k in Pt if np.linalg.norm(Pt[k]) > pts[k]["c"].friction * max(Pn[k], 0.0) * (1 + 1e-9)
                and np.linalg.norm(pts[k]["vt"]) > 0]
        if over:
            for k in over:
                pts[k]["sliding"] = True                         # outside the friction cone: a sliding impact
            continue
        # a point dropped earlier that the others' impulses leave moving into the plane takes part again (the
        # active set grows as well as shrinks; each point comes back at most four times, so the search ends)
        after = v + Minv @ (C.T @ P) if len(P) else v
        back = [(float(d["Jn"] @ after), k) for k, d in enumerate(pts)
                if not d["in"] and d.get("back", 0) < 4 and float(d["Jn"] @ after) < -1e-9 * (1.0 + abs(d["vn"]))]
        if back:
            k = min(back)[1]
            pts[k]["in"], pts[k]["back"] = True, pts[k].get("back", 0) + 1
            continue
        break
    qd = v + Minv @ (C.T @ P) if len(P) else v.copy()
    if any(d["c"].friction > 0 for d in pts) and (
            any(float(d["Jn"] @ qd) < d["target"] * d["in"] - 1e-9 * (1.0 + abs(d["vn"])) for d in pts)
            or float(qd @ M @ qd) > float(v @ M @ v) * (1 + 1e-9) + 1e-12):
        qd, Pn, Pt = _frictional_impact(Jb, pts, Minv, v)       # the active set left a point moving in, or
    info["energy_change"] = 0.5 * float(qd @ M @ qd - v @ M @ v)  # its sliding impulses added energy
    for k, d in enumerate(pts):
        after = float(d["Jn"] @ qd)
        if after >= d["c"].rest_speed:                          # it rebounds (or separates): open
            mode = OPEN
        elif d["p"].stick < 0:
            mode = FRICTIONLESS
        else:
            mode = SLIP if d["sliding"] or not d["in"] else STICK
        if not d["in"]:
            info[(d["c"].name, d["p"].label)] = (0.0, np.zeros(3), d["vn"], mode)
            continue
        pn = float(Pn.get(k, 0.0))
        if d["sliding"]:
            t = d["vt"] / max(np.linalg.norm(d["vt"]), 1e-300)
            pt = -d["c"].friction * pn * (d["Et"] @ t)
        else:
            pt = d["Et"] @ np.asarray(Pt.get(k, [0.0, 0.0]))
        info[(d["c"].name, d["p"].label)] = (pn, pt, d["vn"], mode)
    return qd, info


def _frictional_impact(Jb: np.ndarray, pts: list, Minv: np.ndarray, v: np.ndarray, sweeps: int = 5000,
                       tol: float = 1e-12) -> tuple[np.ndarray, dict, dict]:
    """The impact as the complementarity problem with Coulomb's cone, by projected Gauss–Seidel over every
    touching point (:func:`impact` calls it when its active set leaves a frictional point moving into its plane).

    With the rows R = [J_b; J_n,k; J_t,k] and W = R M⁻¹ Rᵀ, the impulses x give q̇⁺ = q̇⁻ + M⁻¹ Rᵀ x and row
    velocities R q̇⁻ + W x. The bilateral rows keep their velocity (J_b Δq̇ = 0); each point has
    v_n⁺ ≥ target, P_n ≥ 0, P_n (v_n⁺ − target) = 0, and a tangential impulse within the disc ‖P_t‖ ≤ μ P_n
    that stops the slip or, on the disc's edge, opposes it. Sweeps update each row (bilateral, normal) or 2 × 2
    tangential block against the others' latest impulses and project onto those sets, until no impulse moves by
    more than ``tol`` relative to the largest. Returns ``(q̇⁺, P_n by point, P_t (2,) by point)``; the points'
    ``sliding`` flags are set for the impulses on the cone's edge."""
    nb = Jb.shape[0]
    rows = [Jb] + [np.vstack([d["Jn"][None], d["Jt"]]) for d in pts]
    R = np.vstack(rows)
    W = R @ Minv @ R.T
    base = R @ v
    target = base.copy()                                    # bilateral rows: their velocity unchanged
    for k, d in enumerate(pts):
        o = nb + 3 * k
        target[o], target[o + 1:o + 3] = d["target"], 0.0
    x, y = np.zeros(len(base)), base.copy()                 # y = R q̇⁺ = R q̇⁻ + W x
    for _ in range(sweeps):
        moved, largest = 0.0, 0.0
        for i in range(nb):
            if W[i, i] > 0:
                dx = (target[i] - y[i]) / W[i, i]
                x[i] += dx
                y += W[:, i] * dx
                moved, largest = max(moved, abs(dx)), max(largest, abs(x[i]))
        for k, d in enumerate(pts):
            o = nb + 3 * k
            xn = max(0.0, x[o] + (target[o] - y[o]) / W[o, o])
            dn = xn - x[o]
            x[o] = xn
            y += W[:, o] * dn
            mu = d["c"].friction
            dt = np.zeros(2)
            if mu > 0:
                B = W[o + 1:o + 3, o + 1:o + 3]
                xt = x[o + 1:o + 3] - np.linalg.lstsq(B, y[o + 1:o + 3], rcond=1e-12)[0]
                norm = float(np.hypot(xt[0], xt[1]))
                if norm > mu * xn:
                    xt *= mu * xn / norm
                dt = xt - x[o + 1:o + 3]
                x[o + 1:o + 3] = xt
                y += W[:, o + 1:o + 3] @ dt
            moved = max(moved, abs(dn), float(np.abs(dt).max()))
            largest = max(largest, abs(xn))
        if moved <= tol * max(largest, 1e-300):
            break
    Pn, Pt = {}, {}
    for k, d in enumerate(pts):
        o = nb + 3 * k
        d["in"] = True
        Pn[k], Pt[k] = float(x[o]), x[o + 1:o + 3].copy()
        mu = d["c"].friction
        d["sliding"] = mu > 0 and Pn[k] > 0 and float(np.hypot(*Pt[k])) >= mu * Pn[k] * (1 - 1e-9)
        if d["sliding"]:                                    # (so that impact() reports P_t as it is)
            d["vt"] = -Pt[k]
    return v + Minv @ (R.T @ x), Pn, Pt


# ---- what a viewer draws ------------------------------------------------------------------------------------

def point_states(model, state, out) -> dict:
    """Every contact point at ``state`` (``out``: its evaluation, a :class:`core.Data` or the step's outputs), in
    ``Model.contacts`` order, for drawing and reports: ``labels`` (P,) (``<contact>.<i>``); ``position`` (P, 3),
    the world point where it touches or would touch the plane (a sphere's lowest point along the normal);
    ``mode`` (P,) (:data:`OPEN`, :data:`STICK`, :data:`SLIP`, :data:`FRICTIONLESS`); ``normal_force`` (P, 3)
    and ``friction_force`` (P, 3), the plane's forces on the body at the point (N; zero when open): the normal
    row's constraint force, and the stick rows' force while it sticks or the Coulomb force μN of
    :attr:`core.model.State.slip` while it slips; ``separation`` (P,) h (m)."""
    pts = [(c, p) for c in model.contacts for p in c.points]
    P = len(pts)
    position, normal, friction = np.zeros((P, 3)), np.zeros((P, 3)), np.zeros((P, 3))
    separation = np.zeros(P)
    modes = point_modes(model, state) if P else np.zeros(0, np.int64)
    kin = link_kinematics(model, np.asarray(state.q, dtype=float)) if P else None
    for k, (c, p) in enumerate(pts):
        n, o = c.plane(kin)
        position[k] = kin.p_WL[p.link] + kin.R_WL[p.link] @ p.r - p.radius * n
        separation[k] = float(n @ (position[k] - o))
        if modes[k] == OPEN:
            continue
        normal[k] = out.constraint_force[p.normal]
        if modes[k] == STICK:
            friction[k] = out.constraint_force[p.stick]
        elif modes[k] == SLIP:
            friction[k] = state.slip[p.slot]
    return {"labels": tuple(p.label for _, p in pts), "position": position, "mode": modes,
            "normal_force": normal, "friction_force": friction, "separation": separation}
