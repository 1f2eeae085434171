"""Point constraints, their deviation functions and their rows (thesis §2.2.2–2.2.4, §2.4.3; Barzel & Barr).

Every point constraint acts between a point on link ``a`` and a point on link ``b`` or a (possibly moving)
world point, and has ``m`` rows (3 for nail, point-to-point and velocity; 2 for point-on-line; 1 for
point-on-plane) picked by a constant world basis ``E`` (3 x m)::

    D = Eᵀ (x_a − x_b)          Ḋ = Eᵀ (ẋ_a − ẋ_b) = J q̇ − Eᵀ ẋ_b(world)          (position constraints)
    D̈ = J q̈ + γ,  J = Eᵀ (J_a − J_b),  γ = Eᵀ (J̇_a q̇ − J̇_b q̇ − ẍ_b(world))       (eq. 2.37–2.39, 2.59)

A velocity constraint has ``D = ẋ_a − v`` and ``Ḋ = J q̈ + γ``.

A constraint with ``body_basis`` (a contact against a plane fixed in body b) has its basis fixed in link b
(E_b, the world basis E = R_b E_b turning with it), and measures the motion of point a relative to the material
point of b that coincides with it — the point of b at x_a, whose velocity is v_b* = v_b + ω_b × (x_a − x_b)::

    D = Eᵀ (x_a − x_b)          Ḋ = Eᵀ w,  w = ẋ_a − v_b*(x_a)       (velocity rows: D = Eᵀ w)
    J = Eᵀ (J_a(x_a) − J_b(x_a)),   γ = Eᵀ (J̇_a q̇ − J̇_b(x_a) q̇) − 2 Eᵀ (ω_b × w)

(the last term: the Coriolis acceleration of the sliding point in b's turning frame; d/dt Eᵀw with
Ė = ω_b × E). A sliding contact point (a capsule's segment against a core's edge, ``slide_half`` > 0) takes as
point a, at each evaluation, the segment's material point of the nearest pair (:func:`_slide`); its γ adds the
terms of that point sliding, ṅ·ż + u̇ (n·ė) (:func:`core.geometry.crossing_rates`). The force on point a is E F and its opposite acts on b at x_a — the contact point. The constraint force on point a is ``E F`` (and
its opposite on point b); its generalized force is ``Jᵀ F`` ("apply point force", §2.4.3). Critically damped
stabilization asks for ``D̈ + 2κḊ + κ²D = 0`` (eq. 2.21; κ the constraint's stabilization rate, κD for a velocity
constraint), so each row carries ``stab = 2κḊ + κ²D``.

A hinge entity of a scene compiles to two point-to-point constraints on its axis (fig. 2.8), named
``<hinge>.p1`` and ``<hinge>.p2``. Joint-space constraints ``Φ(q) = value`` (:mod:`core.joint_constraints`) get
their one row here too, with exact J and γ, so every formulation handles both kinds alike.

Every constraint carries a ``jacobian_scale``: the Frobenius norm of its rows at the initial configuration (1 if
they vanish there), the floor of the rank tests (:mod:`core.formulations`).

The compiled step reads the constraints from a table, one row per constraint (:data:`CONSTRAINT`, built by
:func:`constraint_table`); which constraints are active is part of the state, and :func:`active_layout` gives
the active ones their rows and groups (constraints that share no tree are solved apart, eq. 2.41).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .geometry import (bounding_radius, core_coordinates, crossing_rates, curvature, feature, normal_rate,
                       slide_point, tangent_basis)
from .jit import inline, njit
from .joint_constraints import JOINT_SPACE, TAPE, JointSpaceConstraint, tape_jet
from .points import jacobian_columns, point_bias, point_state

NAIL, POINT_TO_POINT, POINT_ON_LINE, POINT_ON_PLANE, POINT_VELOCITY = range(5)
KIND_NAMES = {NAIL: "nail", POINT_TO_POINT: "point_to_point", POINT_ON_LINE: "point_on_line",
              POINT_ON_PLANE: "point_on_plane", POINT_VELOCITY: "point_velocity", JOINT_SPACE: "joint_space"}

__all__ = ["PointConstraint", "JointSpaceConstraint", "constraint_table", "constraint_links", "perpendicular_basis",
           "rows_kernel", "active_layout", "nail_target_kernel", "slide_frame", "slide_choice", "to_core_frame", "CONSTRAINT", "JOINT_VARIABLE",
           "NAIL", "POINT_TO_POINT", "POINT_ON_LINE", "POINT_ON_PLANE", "POINT_VELOCITY", "JOINT_SPACE",
           "KIND_NAMES"]

#: One constraint of the compiled step. Point constraints: ends ``r_a`` on ``link_a`` and ``r_b`` on ``link_b``
#: (a world point when ``link_b`` is −1), the basis E (its first ``rows`` columns), a prescribed nail path
#: n(t) = r_b + v t + a ∘ sin(2πf t + φ) when ``has_path``, the target velocity of a velocity constraint, and the
#: studio's drag (a nail put at ``drag_position`` at ``drag_t0``, moving with ``drag_velocity``) when
#: ``dragged``. Joint-space constraints: their program ``tape[tape_start : tape_start + tape_length]`` over the
#: variables ``variables[var_start : var_start + n_vars]`` (:data:`JOINT_VARIABLE`) and the ``value`` of Φ.
#: ``unilateral``: a contact's or joint limit's row, which events add and remove (:mod:`core.contacts`).
#: ``shape`` (> 0: :data:`core.geometry.POINT`, ``SEGMENT``, ``BOX``): a shape–shape contact's normal row — point a
#: (with its ball) against that core of link b, centred at ``r_b`` and turned by ``shape_R`` in b's frame, of
#: half-extents ``shape_half``; ``radius`` the two balls' radii together; its basis (b's frame) is the normal at
#: the last evaluation, which :func:`rows_kernel` writes. ``fixed_a``/``fixed_b``: that end's link cannot move
#: (welded to the world with its ancestors): it couples no trees, so the constraints of two balls resting on one
#: table are solved apart and their impacts are separate. ``normal_row``: a contact point's tangential rows name
#: its normal row (−1 otherwise): while that is inactive (the point open) they are not evaluated. ``part``: the
#: part of the core a shape contact in touch keeps over a step (:func:`core.geometry.feature`; −1: the nearest).
#: ``slide_half`` > 0: a sliding contact's normal row (:func:`core.geometry.crossing`) — point a slides on the
#: segment of link a centred at ``slide_centre`` along the unit ``slide_axis`` (link a's frame) with that
#: half-length; ``r_a`` is where it was at the last evaluation, ``slide_rate`` how fast it slid (m/s), ``part`` the
#: pair it keeps over a step; a box's edge (``slide_edge``) has its two faces' outward normals in ``slide_faces``
#: (link a's frame), and a segment against a box two sliding points, siblings (``slide_sibling``: the other's
#: normal row, −1 none; ``slide_rank`` 0 or 1: :func:`core.geometry.crossing`, :func:`slide_choice`). ``normal_rate``: how fast an active shape contact's normal turned relative to link b
#: at the last evaluation (b's frame; :func:`core.geometry.normal_rate`), which the stick rows' point ahead reads.
CONSTRAINT = np.dtype([
    ("kind", np.int64), ("link_a", np.int64), ("link_b", np.int64), ("rows", np.int64),
    ("r_a", np.float64, (3,)), ("r_b", np.float64, (3,)), ("basis", np.float64, (3, 3)),
    ("stabilization", np.float64), ("max_force", np.float64), ("max_deviation", np.float64),
    ("jacobian_scale", np.float64),
    ("has_path", np.bool_), ("path_velocity", np.float64, (3,)), ("path_amplitude", np.float64, (3,)),
    ("path_frequency", np.float64), ("path_phase", np.float64), ("target_velocity", np.float64, (3,)),
    ("dragged", np.bool_), ("drag_t0", np.float64), ("drag_position", np.float64, (3,)),
    ("drag_velocity", np.float64, (3,)),
    ("tape_start", np.int64), ("tape_length", np.int64), ("var_start", np.int64), ("n_vars", np.int64),
    ("value", np.float64), ("body_basis", np.bool_), ("unilateral", np.bool_),
    ("shape", np.int64), ("shape_R", np.float64, (3, 3)), ("shape_half", np.float64, (3,)), ("radius", np.float64),
    ("fixed_a", np.bool_), ("fixed_b", np.bool_), ("normal_row", np.int64), ("part", np.int64),
    ("slide_centre", np.float64, (3,)), ("slide_axis", np.float64, (3,)), ("slide_half", np.float64),
    ("slide_rate", np.float64), ("normal_rate", np.float64, (3,)), ("slide_faces", np.float64, (2, 3)),
    ("slide_edge", np.bool_), ("slide_sibling", np.int64), ("slide_rank", np.int64),
], align=True)

#: A joint coordinate a joint-space constraint reads: its entries in q and q̇ and the link it moves.
JOINT_VARIABLE = np.dtype([("q_index", np.int64), ("v_index", np.int64), ("link", np.int64)], align=True)


@dataclass(frozen=True, eq=False)
class PointConstraint:
    """A compiled point constraint. ``link_b = -1`` means the world, with ``r_b`` in world coordinates (the nail,
    the line or plane origin). ``path`` = (velocity, amplitude, frequency, phase) of a moving nail."""
    name: str
    entity: str
    kind: int
    link_a: int
    r_a: np.ndarray
    link_b: int
    r_b: np.ndarray
    basis: np.ndarray
    stabilization: float
    max_force: float
    max_deviation: float
    enabled: bool = True
    path: tuple | None = None
    target_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    jacobian_scale: float = 1.0
    body_basis: bool = False          # the basis is fixed in link b, and b's end is the point at x_a (docstring)
    shape: int = 0                    # > 0: a shape–shape contact's normal row against a core (CONSTRAINT)
    shape_R: np.ndarray = field(default_factory=lambda: np.eye(3))
    shape_half: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0
    slide_axis: np.ndarray = field(default_factory=lambda: np.zeros(3))
    slide_half: float = 0.0           # > 0: point a slides on a segment through r_a along slide_axis (CONSTRAINT)
    slide_faces: np.ndarray | None = None   # a box's edge: its two faces' outward normals (2 x 3, link a's frame)
    slide_sibling: int = -1           # the other sliding point on the same segment (its normal row; −1: none)
    slide_rank: int = 0               # which of the two it is (core.geometry.crossing's rank)

    @property
    def rows(self) -> int:
        return self.basis.shape[1]

    @property
    def first_order(self) -> bool:
        return self.kind == POINT_VELOCITY


def constraint_links(c) -> tuple:
    """The links whose motion a constraint's rows depend on (the world excluded): its two ends for a point
    constraint, the links of the joints it reads for a joint-space one."""
    if c.kind == JOINT_SPACE:
        return tuple(c.links)
    return (c.link_a,) + ((c.link_b,) if c.link_b >= 0 else ())


def perpendicular_basis(direction: np.ndarray) -> np.ndarray:
    """Two unit vectors (3 x 2) orthogonal to ``direction`` and to each other (:func:`core.geometry.tangent_basis`,
    which the compiled step uses for a shape contact's friction rows)."""
    E = np.zeros((3, 2))
    tangent_basis(np.asarray(direction, dtype=float) / np.linalg.norm(direction), E, 0)
    return E


def constraint_table(constraints, drags: dict | None = None, unilateral=frozenset(), fixed=frozenset(),
                     normal_of: dict | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(table, tape, variables)``: the :data:`CONSTRAINT` table of ``constraints``, the joint-space constraints'
    programs one after another (:data:`core.joint_constraints.TAPE`) and the joint variables they read
    (:data:`JOINT_VARIABLE`). ``drags``: the studio's dragged nails, name → (t0, position, velocity);
    ``unilateral``: the indices of the contacts' and joint limits' rows; ``fixed``: the links that cannot move;
    ``normal_of``: a contact point's stick rows → its normal row (:func:`core.contacts.stick_normals`)."""
    table = np.zeros(len(constraints), CONSTRAINT)
    tapes, variables = [np.zeros(0, TAPE)], [np.zeros(0, JOINT_VARIABLE)]
    n_tape = n_vars = 0
    for i, (row, c) in enumerate(zip(table, constraints)):
        row["kind"], row["link_a"], row["link_b"], row["rows"] = c.kind, c.link_a, c.link_b, c.rows
        row["unilateral"] = i in unilateral
        row["r_a"], row["r_b"] = c.r_a, c.r_b
        row["fixed_a"], row["fixed_b"] = c.link_a in fixed, c.link_b in fixed
        row["normal_row"] = (normal_of or {}).get(i, -1)
        row["part"] = -1
        row["basis"][:, :c.rows] = c.basis
        row["stabilization"], row["max_force"], row["max_deviation"] = c.stabilization, c.max_force, c.max_deviation
        row["jacobian_scale"] = c.jacobian_scale
        row["body_basis"] = getattr(c, "body_basis", False)
        row["shape"] = getattr(c, "shape", 0)
        if row["shape"]:
            row["shape_R"], row["shape_half"], row["radius"] = c.shape_R, c.shape_half, c.radius
        if getattr(c, "slide_half", 0.0) > 0.0:
            row["slide_centre"], row["slide_axis"], row["slide_half"] = c.r_a, c.slide_axis, c.slide_half
            row["slide_sibling"], row["slide_rank"] = c.slide_sibling, c.slide_rank
            if c.slide_faces is not None:
                row["slide_edge"], row["slide_faces"] = True, c.slide_faces
        else:
            row["slide_sibling"] = -1
        if c.path is not None:
            row["has_path"] = True
            row["path_velocity"], row["path_amplitude"], row["path_frequency"], row["path_phase"] = c.path
        if c.kind == JOINT_SPACE:
            v = np.zeros(len(c.names), JOINT_VARIABLE)
            v["q_index"], v["v_index"], v["link"] = c.q_index, c.v_index, c.links
            row["tape_start"], row["tape_length"], row["var_start"], row["n_vars"] = n_tape, len(c.tape), n_vars, len(v)
            row["value"] = c.value
            tapes.append(c.tape)
            variables.append(v)
            n_tape += len(c.tape)
            n_vars += len(v)
        else:
            row["target_velocity"] = c.target_velocity
        if drags and c.name in drags:
            t0, p, vel = drags[c.name]
            row["dragged"], row["drag_t0"], row["drag_position"], row["drag_velocity"] = True, t0, p, vel
    return table, np.concatenate(tapes), np.concatenate(variables)


# ---- compiled: the rows of every constraint at one state ----------------------------------------------------

@njit
def nail_target_kernel(con, t, x, xd, xdd):
    """World position, velocity and acceleration of constraint ``con``'s world end at time t: a dragged nail
    n = p + v (t − t0), a prescribed path n(t) = n0 + v t + a ∘ sin(2π f t + φ), or fixed."""
    if con.dragged:
        dt = t - con.drag_t0
        for a in range(3):
            x[a] = con.drag_position[a] + con.drag_velocity[a] * dt
            xd[a] = con.drag_velocity[a]
            xdd[a] = 0.0
    elif con.has_path:
        w = 2.0 * np.pi * con.path_frequency
        s, co = np.sin(w * t + con.path_phase), np.cos(w * t + con.path_phase)
        for a in range(3):
            x[a] = con.r_b[a] + con.path_velocity[a] * t + con.path_amplitude[a] * s
            xd[a] = con.path_velocity[a] + con.path_amplitude[a] * w * co
            xdd[a] = -con.path_amplitude[a] * w * w * s
    else:
        for a in range(3):
            x[a] = con.r_b[a]
            xd[a] = 0.0
            xdd[a] = 0.0


@njit
def active_layout(cons, variables, root, active, row_of, group_of, uf):
    """Rows and groups of the active constraints: ``row_of[c]`` the first row of constraint c (−1 if inactive),
    ``group_of[c]`` its group (−1 if inactive), numbered in constraint order. Constraints that touch a common
    tree (the roots ``root`` of their links) share a group, by union–find (``uf``: K scratch); A = J M⁻¹Jᵀ is
    block diagonal over the groups (eq. 2.41). Returns ``(rows m, number of groups)``."""
    K = cons.shape[0]
    m = 0
    for c in range(K):
        uf[c] = c
        row_of[c] = -1
        if active[c]:
            row_of[c] = m
            m += cons[c].rows
    n_active = 0
    for c in range(K):                                        # (group_of lists the active ones for the moment)
        if active[c]:
            group_of[n_active] = c
            n_active += 1
    for i in range(n_active):
        c = group_of[i]
        for j in range(i):
            d = group_of[j]
            if _share_tree(cons, variables, root, c, d):
                a, b = _find(uf, c), _find(uf, d)
                uf[max(a, b)] = min(a, b)
    for c in range(K):
        group_of[c] = -1
    n_groups = 0
    for c in range(K):
        if active[c]:
            r = _find(uf, c)
            if r == c:
                group_of[c] = n_groups
                n_groups += 1
            else:
                group_of[c] = group_of[r]                     # r < c: numbered already
    return m, n_groups


@njit
def _find(uf, c):
    while uf[c] != c:
        c = uf[c]
    return c


@njit
def _tree_of(cons, variables, root, c, k):
    """The root of the k-th link constraint c touches (−1 past the last)."""
    con = cons[c]
    if con.kind == JOINT_SPACE:
        return root[variables[con.var_start + k].link] if k < con.n_vars else -1
    a = root[con.link_a] if not con.fixed_a else -1           # (a link fixed in the world links nothing)
    b = root[con.link_b] if con.link_b >= 0 and not con.fixed_b else -1
    if k == 0:
        return a if a >= 0 else (b if b >= 0 else root[con.link_a])
    if k == 1 and a >= 0:
        return b
    return -1


@njit
def _share_tree(cons, variables, root, c, d):
    i = 0
    while True:
        a = _tree_of(cons, variables, root, c, i)
        if a < 0:
            return False
        j = 0
        while True:
            b = _tree_of(cons, variables, root, d, j)
            if b < 0:
                break
            if a == b:
                return True
            j += 1
        i += 1


@inline
def _set_row(con, r, d, dr, D, D_rate, stab):
    """Row r's deviation D, its rate Ḋ and its stabilization term: 2κḊ + κ²D (eq. 2.21), κD for a velocity
    constraint (first order)."""
    lam = con.stabilization
    D[r] = d
    D_rate[r] = dr
    stab[r] = lam * d if con.kind == POINT_VELOCITY else 2.0 * lam * dr + lam * lam * d


@njit
def rows_kernel(parent, S, v_start, nv_j, R_WL, p_WL, v, a_vp, cons, tape, variables, row_of, t, q, qd,
                J, gamma, D, D_rate, stab, deviation, deviation_rate, point_a, point_b, velocity_a, P3, regs, every):
    """Rows of the constraints: for every constraint its deviation norms and end points, and for the active ones
    (``row_of[c] ≥ 0``) their rows of J, γ, D, Ḋ and the stabilization term (module docstring)::

        D = Eᵀ(x_a − x_b),  Ḋ = Eᵀ(ẋ_a − ẋ_b),  J = Eᵀ(J_a − J_b),  γ = Eᵀ(J̇_a q̇ − J̇_b q̇ or n̈)   (eq. 2.37–2.39)
        stab = 2κḊ + κ²D  (D̈ + 2κḊ + κ²D = 0, eq. 2.21);   velocity constraint: D = Eᵀ(ẋ_a − v), stab = κD
        joint space: D = Φ(q) − value, Ḋ = ∇Φ·q̇, γ = q̇ᵀ∇²Φ q̇, J = ∇Φ  (exact, core.joint_constraints)

    J's rows must be zero on entry (they are accumulated). ``P3`` (≥ 22 x 3) and ``regs`` (val, d1, d2 (L),
    grad (L, n) of the longest program) are scratch. Without ``every`` (an integrator's stage, where only the
    dynamics is read) the inactive constraints are left as they were: their deviations, ends and a shape
    contact's normal are read only from a full evaluation (the witnesses, the records). An open contact against a
    shape's core that is outside the core's bounding ball gets a lower bound of its separation instead of the
    exact one (:func:`_apart`: the broad phase)."""
    xa, va, xb, vb, ba, bb = P3[0], P3[1], P3[2], P3[3], P3[4], P3[5]
    ys, zs = P3[6], P3[13]
    val, d1, d2, grad, xv, vv = regs
    for c in range(cons.shape[0]):
        con = cons[c]
        row = row_of[c]
        if row < 0 and not every:
            continue
        if row < 0 and con.normal_row >= 0 and row_of[con.normal_row] < 0:    # an open point's stick rows
            deviation[c] = 0.0
            deviation_rate[c] = 0.0
            continue
        if con.kind == JOINT_SPACE:
            for j in range(con.n_vars):
                var = variables[con.var_start + j]
                xv[j] = q[var.q_index]
                vv[j] = qd[var.v_index]
            phi, phi_dot, phi_ddot = tape_jet(tape, con.tape_start, con.tape_length, xv, vv, val, d1, d2, grad)
            d = phi - con.value
            deviation[c] = abs(d)
            deviation_rate[c] = abs(phi_dot)
            for a in range(3):
                point_a[c, a] = 0.0
                point_b[c, a] = 0.0
                velocity_a[c, a] = 0.0
            if row >= 0:
                gamma[row] = phi_ddot
                _set_row(con, row, d, phi_dot, D, D_rate, stab)
                last = con.tape_length - 1
                for j in range(con.n_vars):
                    J[row, variables[con.var_start + j].v_index] += grad[last, j]
            continue
        if con.body_basis:
            if row < 0 and con.shape > 0 and _apart(R_WL, p_WL, v, con, c, deviation, deviation_rate, point_a,
                                                    point_b, velocity_a, xa, va, ys, zs, xb, vb):
                continue
            skip, rank = slide_choice(cons, con)
            _body_basis_rows(parent, S, v_start, nv_j, R_WL, p_WL, v, a_vp, con, c, row, J, gamma, D, D_rate,
                             stab, deviation, deviation_rate, point_a, point_b, velocity_a, P3, skip, rank)
            continue
        ka, kb, m = con.link_a, con.link_b, con.rows
        E = con.basis
        point_state(R_WL, p_WL, v, ka, con.r_a, xa, va)
        if kb >= 0:
            point_state(R_WL, p_WL, v, kb, con.r_b, xb, vb)
        else:
            nail_target_kernel(con, t, xb, vb, bb)
        for a in range(3):
            point_a[c, a] = xa[a]
            point_b[c, a] = xb[a]
            velocity_a[c, a] = va[a]
        d2s = 0.0
        dr2 = 0.0
        for b in range(m):
            if con.kind == POINT_VELOCITY:
                tv = con.target_velocity
                d = E[0, b] * (va[0] - tv[0]) + E[1, b] * (va[1] - tv[1]) + E[2, b] * (va[2] - tv[2])
                dr = 0.0
            else:
                d = E[0, b] * (xa[0] - xb[0]) + E[1, b] * (xa[1] - xb[1]) + E[2, b] * (xa[2] - xb[2])
                dr = E[0, b] * (va[0] - vb[0]) + E[1, b] * (va[1] - vb[1]) + E[2, b] * (va[2] - vb[2])
            d2s += d * d
            dr2 += dr * dr
            if row >= 0:
                _set_row(con, row + b, d, dr, D, D_rate, stab)
        deviation[c] = np.sqrt(d2s)
        deviation_rate[c] = np.sqrt(dr2)
        if row < 0:
            continue
        point_bias(R_WL, v, a_vp, ka, con.r_a, ba)
        if kb >= 0:
            point_bias(R_WL, v, a_vp, kb, con.r_b, bb)        # (the world end's n̈ is already in bb)
        for b in range(m):
            gamma[row + b] = E[0, b] * (ba[0] - bb[0]) + E[1, b] * (ba[1] - bb[1]) + E[2, b] * (ba[2] - bb[2])
        jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, E, m, 1.0, J, row)
        if kb >= 0:
            jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, kb, xb, E, m, -1.0, J, row)


@inline
def _apart(R_WL, p_WL, v, con, c, deviation, deviation_rate, point_a, point_b, velocity_a, xa, va, y, z, xs, vs):
    """The broad phase, for an open contact against a shape's core: whether its point (a sliding point's segment
    centre) is farther from the core's centre than the core's bounding radius (a box's half-diagonal, a segment's
    half-length) plus the segment's half-length and both radii. Then its deviation is that excess, g = |x − c| −
    bounding radius − half-length − radii, a lower bound of its separation (all a touchdown's witness needs, exact
    again once inside), with the normal n = (x − c)/|x − c| (into the table, b's frame), the ends x and x − g n, and
    the velocity of x relative to b's point there (what :func:`_body_basis_rows` writes for a contact near its core).
    Taken before anything else of the contact is read (its rows' call and the views of its record's fields cost an
    open contact far from its core ~0.35 µs; this test ~5 ns). ``xa`` … ``vs``: scratch 3-vectors."""
    ka, kb = con.link_a, con.link_b
    L = con.slide_half
    point_state(R_WL, p_WL, v, ka, con.slide_centre if L > 0.0 else con.r_a, xa, va)
    cb = con.r_b
    for a in range(3):                                        # x − c, c the core's centre (world)
        z[a] = xa[a] - p_WL[kb, a] - R_WL[kb, a, 0] * cb[0] - R_WL[kb, a, 1] * cb[1] - R_WL[kb, a, 2] * cb[2]
    d = np.sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2])
    g = d - bounding_radius(con.shape, con.shape_half) - L - con.radius
    if not g > 0.0:
        return False
    for a in range(3):                                        # x in b's frame
        y[a] = R_WL[kb, 0, a] * (xa[0] - p_WL[kb, 0]) + R_WL[kb, 1, a] * (xa[1] - p_WL[kb, 1]) + \
            R_WL[kb, 2, a] * (xa[2] - p_WL[kb, 2])
    point_state(R_WL, p_WL, v, kb, y, xs, vs)                # b's point at x
    basis = con.basis
    rate = 0.0
    for a in range(3):
        n = z[a] / d
        basis[a, 0] = (R_WL[kb, 0, a] * z[0] + R_WL[kb, 1, a] * z[1] + R_WL[kb, 2, a] * z[2]) / d   # (b's frame)
        w = va[a] - vs[a]
        velocity_a[c, a] = w
        point_a[c, a] = xa[a]
        point_b[c, a] = xa[a] - g * n
        rate += n * w
    deviation[c] = g
    deviation_rate[c] = abs(rate)
    if L > 0.0:                                               # the sliding point rests at its segment's centre
        con.slide_rate = 0.0
        for a in range(3):
            con.r_a[a] = con.slide_centre[a]
    return True


@njit(inline="always")
def to_core_frame(R_WL, kb, shape_R, x, out):
    """out ← the world vector x in the frame of link kb's core turned by ``shape_R`` (no translation)."""
    for a in range(3):
        out[a] = 0.0
        for e in range(3):
            out[a] += shape_R[e, a] * (R_WL[kb, 0, e] * x[0] + R_WL[kb, 1, e] * x[1] + R_WL[kb, 2, e] * x[2])


@njit
def slide_frame(R_WL, p_WL, con, zc, ec, fc, y, x):
    """zc, ec ← a sliding contact's segment centre and unit axis in the frame of the core of link b, and fc (2 x 3)
    ← a box edge's faces' normals there (``y``, ``x``: scratch)."""
    _slide_centre(R_WL, p_WL, con, zc, y, x)
    _slide_axes(R_WL, con, ec, fc, y)


@njit(inline="always")
def _slide_centre(R_WL, p_WL, con, zc, y, x):
    """zc ← a sliding contact's segment centre in the frame of the core of link b."""
    ka, kb = con.link_a, con.link_b
    for a in range(3):
        x[a] = p_WL[ka, a] + R_WL[ka, a, 0] * con.slide_centre[0] + R_WL[ka, a, 1] * con.slide_centre[1] + \
            R_WL[ka, a, 2] * con.slide_centre[2]
    core_coordinates(R_WL, p_WL, kb, x, con.r_b, con.shape_R, y, zc)


@njit(inline="always")
def _slide_axes(R_WL, con, ec, fc, y):
    """ec, fc ← a sliding contact's segment axis and a box edge's faces' normals in the frame of link b's core."""
    ka, kb = con.link_a, con.link_b
    for a in range(3):
        y[a] = R_WL[ka, a, 0] * con.slide_axis[0] + R_WL[ka, a, 1] * con.slide_axis[1] + \
            R_WL[ka, a, 2] * con.slide_axis[2]
    to_core_frame(R_WL, kb, con.shape_R, y, ec)                     # the axis in the core's frame
    if con.slide_edge:
        for f in range(2):
            for a in range(3):
                y[a] = R_WL[ka, a, 0] * con.slide_faces[f, 0] + R_WL[ka, a, 1] * con.slide_faces[f, 1] + \
                    R_WL[ka, a, 2] * con.slide_faces[f, 2]
            to_core_frame(R_WL, kb, con.shape_R, y, fc[f])


@njit
def slide_choice(cons, con):
    """``(skip, rank)`` of a sliding point searching for its pair (:func:`core.geometry.crossing`): its sibling's
    edge while the sibling keeps a pair (in touch), else its own rank (both open: the first takes the least h,
    the second the next)."""
    if con.slide_sibling < 0:
        return -1, 0
    other = cons[con.slide_sibling].part
    if other >= 0:
        return other // 2, 0
    return -1, con.slide_rank


@njit
def _slide(R_WL, p_WL, con, row, P3, skip, rank):
    """A sliding contact's point (:func:`core.geometry.crossing`): its segment's centre and axis in b's core
    frame (``P3[16]``, ``P3[17]``), the pair it keeps (an active row's ``part``) or the shapes' nearest, ``con.r_a``
    ← the segment's point of that pair (link a's frame). Returns ``(h, valid)``: the pair's separation of the cores
    (radii not subtracted), with P3[14] (s) and P3[15] (n) the edge's point and the normal in the core's frame; an
    open row whose pair is not the shapes' nearest gets :data:`core.geometry.STAND_IN`-bounded stand-ins
    instead (its segment's ends' distances), and is not valid (far from the core, :func:`_apart` answers first)."""
    zc, ec, sc, nc, y, x, fc = P3[16], P3[17], P3[14], P3[15], P3[18], P3[19], P3[20:22]
    _slide_centre(R_WL, p_WL, con, zc, y, x)
    L = con.slide_half
    con.slide_rate = 0.0
    _slide_axes(R_WL, con, ec, fc, y)
    h, u, valid = slide_point(zc, ec, L, con.shape, con.shape_half, con.radius, con.part if row >= 0 else -1, nc,
                              sc, fc, con.slide_edge, skip, rank)
    for a in range(3):
        con.r_a[a] = con.slide_centre[a] + u * con.slide_axis[a]
    return h, valid


@njit
def _body_basis_rows(parent, S, v_start, nv_j, R_WL, p_WL, v, a_vp, con, c, row, J, gamma, D, D_rate, stab,
                     deviation, deviation_rate, point_a, point_b, velocity_a, P3, skip, rank):
    """:func:`rows_kernel` for a constraint whose basis is fixed in link b (module docstring): ``velocity_a``
    gets the velocity of point a relative to b's coincident point. A sliding contact's point is its segment's
    point nearest the other core's edge (:func:`_slide`), and its γ has the terms of the point's sliding
    (:func:`core.geometry.crossing_rates`)."""
    ka, kb, m = con.link_a, con.link_b, con.rows
    xa, va, xb, vb, ba, bs = P3[0], P3[1], P3[2], P3[3], P3[4], P3[5]
    rs, xs, vs, w = P3[6], P3[7], P3[11], P3[12]
    z, sc, nc = P3[13], P3[14], P3[15]
    E = P3[8:11]                                               # world basis: E[a, b] = (R_b E_b)[a, b]
    sliding = con.slide_half > 0.0
    phi, region, axis, valid = 0.0, 0, -1, False
    if sliding:
        phi, valid = _slide(R_WL, p_WL, con, row, P3, skip, rank)
    point_state(R_WL, p_WL, v, ka, con.r_a, xa, va)
    point_state(R_WL, p_WL, v, kb, con.r_b, xb, vb)
    core_coordinates(R_WL, p_WL, kb, xa, con.r_b, con.shape_R, rs, z)   # b's point at x_a (b's frame); z: the core's
    if con.shape > 0:                                          # against a core: the normal of this state
        if not sliding:
            phi, region, axis = feature(con.shape, con.shape_half, con.part, z, sc, nc)
        for a in range(3):                                     # n_b (b's frame) into the table; the core's point
            con.basis[a, 0] = con.shape_R[a, 0] * nc[0] + con.shape_R[a, 1] * nc[1] + con.shape_R[a, 2] * nc[2]
            vb[a] = con.r_b[a] + con.shape_R[a, 0] * sc[0] + con.shape_R[a, 1] * sc[1] + con.shape_R[a, 2] * sc[2]
    for a in range(3):
        for b in range(3):
            E[a, b] = R_WL[kb, a, 0] * con.basis[0, b] + R_WL[kb, a, 1] * con.basis[1, b] + \
                R_WL[kb, a, 2] * con.basis[2, b]
    if con.shape > 0:                                          # x_b: the core's point raised by both radii
        for a in range(3):
            xb[a] = p_WL[kb, a] + R_WL[kb, a, 0] * vb[0] + R_WL[kb, a, 1] * vb[1] + R_WL[kb, a, 2] * vb[2] + \
                con.radius * E[a, 0]
    point_state(R_WL, p_WL, v, kb, rs, xs, vs)
    for a in range(3):
        w[a] = va[a] - vs[a]
        point_a[c, a] = xa[a]
        point_b[c, a] = xb[a]
        velocity_a[c, a] = w[a]
    d2s = 0.0
    dr2 = 0.0
    for b in range(m):
        rel = E[0, b] * w[0] + E[1, b] * w[1] + E[2, b] * w[2]
        if con.kind == POINT_VELOCITY:
            d, dr = rel, 0.0
        else:
            d = E[0, b] * (xa[0] - xb[0]) + E[1, b] * (xa[1] - xb[1]) + E[2, b] * (xa[2] - xb[2])
            dr = rel
        d2s += d * d
        dr2 += dr * dr
        if row >= 0:
            _set_row(con, row + b, d, dr, D, D_rate, stab)
    deviation[c] = np.sqrt(d2s)
    deviation_rate[c] = np.sqrt(dr2)
    if row < 0:
        return
    point_bias(R_WL, v, a_vp, ka, con.r_a, ba)
    point_bias(R_WL, v, a_vp, kb, rs, bs)
    o0, o1, o2 = R_WL[kb, 0, 0] * v[kb, 0] + R_WL[kb, 0, 1] * v[kb, 1] + R_WL[kb, 0, 2] * v[kb, 2], \
        R_WL[kb, 1, 0] * v[kb, 0] + R_WL[kb, 1, 1] * v[kb, 1] + R_WL[kb, 1, 2] * v[kb, 2], \
        R_WL[kb, 2, 0] * v[kb, 0] + R_WL[kb, 2, 1] * v[kb, 1] + R_WL[kb, 2, 2] * v[kb, 2]
    c0, c1, c2 = o1 * w[2] - o2 * w[1], o2 * w[0] - o0 * w[2], o0 * w[1] - o1 * w[0]     # ω_b × w (world)
    for b in range(m):
        gamma[row + b] = E[0, b] * (ba[0] - bs[0] - 2.0 * c0) + E[1, b] * (ba[1] - bs[1] - 2.0 * c1) + \
            E[2, b] * (ba[2] - bs[2] - 2.0 * c2)
    nd = P3[13]
    for a in range(3):
        nd[a] = 0.0
    if con.shape > 0 and (region != 0 or sliding):             # the normal turning as the point moves (ṅ·ż)
        to_core_frame(R_WL, kb, con.shape_R, w, sc)                 # ż: w in the core's frame
        if not sliding:
            gamma[row] += curvature(phi, region, axis, nc, sc)
            normal_rate(phi, region, axis, nc, sc, nd)
        elif valid:                                            # ė = (ω_a − ω_b) × e, in the core's frame
            ed, ec, x = P3[18], P3[17], P3[19]
            for a in range(3):
                x[a] = R_WL[ka, a, 0] * v[ka, 0] + R_WL[ka, a, 1] * v[ka, 1] + R_WL[ka, a, 2] * v[ka, 2]
            x[0], x[1], x[2] = x[0] - o0, x[1] - o1, x[2] - o2           # ω_a − ω_b (world), then in the core's frame
            to_core_frame(R_WL, kb, con.shape_R, x, ed)
            x[0], x[1], x[2] = ed[1] * ec[2] - ed[2] * ec[1], ed[2] * ec[0] - ed[0] * ec[2], ed[0] * ec[1] - ed[1] * ec[0]
            extra, rate = crossing_rates(P3[16], ec, con.shape, con.shape_half, con.part, sc, x, nd)
            gamma[row] += extra
            con.slide_rate = rate
    if con.shape > 0:                                          # ṅ (core frame) into b's frame
        for a in range(3):
            con.normal_rate[a] = con.shape_R[a, 0] * nd[0] + con.shape_R[a, 1] * nd[1] + con.shape_R[a, 2] * nd[2]
    jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, ka, xa, E, m, 1.0, J, row)
    jacobian_columns(parent, S, v_start, nv_j, R_WL, p_WL, kb, xa, E, m, -1.0, J, row)
