"""Model (compiled once, then frozen) and State (t, q, qd) of a kinematic forest.

All bodies of a scene live in one forest of *links* in generalized coordinates (DESIGN.md): every link has one
joint to its parent (another link, or the world), so a free rigid body is a one-link tree on a free joint and a
limb is a tree of hinge, slider and ball joints. Links are numbered so that ``parent[i] < i``.

A body welded to another body by a fixed joint is not a link: the compiler (:mod:`core.scene.compile`) merges it
into the link it is welded to (its mass into that link's inertia, its shapes and named points into the link's, as
Pinocchio and MuJoCo's ``fusestatic`` do), so the kernels pay only for links that move. ``Model.frames`` keeps
where each merged body sits in its link, and :meth:`Model.body_frame` / :meth:`Model.resolve_point` take any body
name, merged or not. A body welded to the world stays a link (a root without coordinates).

Joint conventions (child frame C, joint frame J fixed in the parent P at ``R_PJ``, ``p_PJ``; C = J at q = 0):

=========  ====  ====  ==============================================  ===================================
type       nq    nv    joint motion ``C`` relative to ``J``            velocity ``qd`` (expressed in C)
=========  ====  ====  ==============================================  ===================================
fixed      0     0     none                                            —
hinge      1     1     rotation by q about the unit ``axis``           angular rate about ``axis``
slider     1     1     translation by q along the unit ``axis``        rate along ``axis``
ball       4     3     rotation by the unit quaternion q (w, x, y, z)  angular velocity of C, in C
free       7     6     translation q[0:3] (in J), then quaternion      body twist [w_C; v_C] of C's origin,
                       q[3:7]                                          both in C (so S = 1₆)
=========  ====  ====  ==============================================  ===================================

so the motion subspace ``S`` (6 x nv, in C) of every joint is constant. Scene documents give initial velocities of
ball and free joints in the *parent* frame; :mod:`core.scene.compile` converts them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

FIXED, HINGE, SLIDER, BALL, FREE = 0, 1, 2, 3, 4
JOINT_TYPES = {"fixed": FIXED, "hinge": HINGE, "slider": SLIDER, "ball": BALL, "free": FREE}
_JOINT_TYPE_NAMES = {code: name for name, code in JOINT_TYPES.items()}
JOINT_NQ = {FIXED: 0, HINGE: 1, SLIDER: 1, BALL: 4, FREE: 7}
JOINT_NV = {FIXED: 0, HINGE: 1, SLIDER: 1, BALL: 3, FREE: 6}
POWER_SOURCES = ("dampers", "drag", "actuators", "external")     # the energy audit's non-conservative sources
N_POWER_SOURCES = len(POWER_SOURCES)

__all__ = ["Model", "State", "Tree", "Shape", "POWER_SOURCES", "FIXED", "HINGE", "SLIDER", "BALL", "FREE", "JOINT_TYPES"]


def _frozen(a, dtype=float) -> np.ndarray:
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


_IDENTITY, _ORIGIN = _frozen(np.eye(3)), _frozen(np.zeros(3))      # a link's own frame in itself


class Tree(NamedTuple):
    """The model's arrays as the compiled kernels take them (one argument, fields by name; see :class:`Model`
    for their meaning). Writable private copies of the frozen arrays: numba's dispatcher types a read-only
    array ~250 ns slower per argument. ``root`` (N,) is the root link of each link's tree; ``mass`` (N),
    ``com`` (N, 3) and ``inertia_com`` (N, 3, 3): each link's mass, centre of mass and rotational inertia about its
    centre of mass, in the link frame (the world-frame ABA builds its inertias from them); ``armature`` (nv) the
    joints' armature, added to the diagonal of H(q); ``lone`` (N): the lone free bodies (a free root joint, no
    children), whose ABA pivot D = I + diag(a) is constant, and its inverse ``lone_Dinv`` (N x 6 x 6)."""
    parent: np.ndarray
    joint_type: np.ndarray
    axis: np.ndarray
    R_tree: np.ndarray
    p_tree: np.ndarray
    S: np.ndarray
    q_start: np.ndarray
    v_start: np.ndarray
    nq_j: np.ndarray
    nv_j: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    quat_starts: np.ndarray
    root: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia_com: np.ndarray
    armature: np.ndarray
    lone: np.ndarray
    lone_Dinv: np.ndarray


@dataclass(frozen=True)
class Shape:
    """A drawable solid attached to a link: ``kind`` in box/cylinder/sphere/capsule/mesh, ``size`` (m) as in the
    scene (``size`` for boxes and meshes, whose bounding box it is, with their ``file``, ``scale`` and ``offset``;
    ``radius``/``length`` otherwise), pose in the link frame, RGBA colour in [0, 1]; ``body``: the document body it
    belongs to — the link's own name, or the name of a body merged into the link (what the studio picks and
    highlights); ``purpose``: ``both``, ``visual`` or ``collision`` (drawn when the viewer shows collision shapes)."""
    link: int
    kind: str
    size: dict
    R_LS: np.ndarray
    p_LS: np.ndarray
    rgba: tuple
    body: str = ""
    purpose: str = "both"


@dataclass(frozen=True, eq=False)
class Model:
    """The frozen, array-form description of a scene's kinematic forest and everything it carries.

    Per-link arrays (``N = n_links``, links ordered so ``parent[i] < i``):

    - ``parent`` (N,) int, -1 for the world; ``joint_type`` (N,) int; ``axis`` (N, 3) unit joint axis in J.
    - ``R_tree`` (N, 3, 3), ``p_tree`` (N, 3): joint frame J in the parent's link frame (``R_PJ``, ``p_PJ``).
    - ``S`` (N, 6, 6): motion subspace in C, columns ``0:nv_j[i]`` used; ``q_start``, ``v_start``, ``nq_j``,
      ``nv_j`` (N,) int: where each joint's coordinates sit in q and qd.
    - ``inertia`` (N, 6, 6): spatial inertia of each link about its own frame origin, in link axes (the bodies
      merged into the link included).
    - ``mass`` (N,), ``com`` (N, 3): mass and centre of mass in the link frame.
    - ``armature`` (nv,): each velocity coordinate's armature (a rotor inertia seen through its gearbox), added
      to the diagonal of the joint-space inertia H(q) by every algorithm (ABA's D_i, CRBA, RNEA, the energy).

    Names: ``link_names`` (N); ``joint_names`` lists only joints with coordinates, in coordinate order; use
    :meth:`q_slice` / :meth:`qd_slice` to find a joint's entries. ``named_points`` maps ``(body, point)`` to
    ``(link index, position in link frame)``. ``frames`` maps the name of each body merged into a link (welded to
    it by fixed joints) to ``(link index, R_LB, p_LB)``, the body's frame in the link frame; ``body_names`` lists
    the links and then the merged bodies, every name a scene may refer to, and :meth:`body_frame` gives any of
    them its link and pose there.

    ``constraints`` and ``forces`` are the compiled point constraints and force elements; ``settings`` holds the
    scene's simulation settings (dt, integrator, tolerance, solver).
    """
    name: str
    link_names: tuple[str, ...]
    parent: np.ndarray
    joint_type: np.ndarray
    joint_link_names: tuple[str, ...]          # name of the joint of each link (fixed joints included)
    axis: np.ndarray
    R_tree: np.ndarray
    p_tree: np.ndarray
    S: np.ndarray
    q_start: np.ndarray
    v_start: np.ndarray
    nq_j: np.ndarray
    nv_j: np.ndarray
    inertia: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    gravity: np.ndarray
    q0: np.ndarray
    qd0: np.ndarray
    quat_starts: np.ndarray                    # q index of every quaternion (ball and free joints), for renormalizing
    armature: np.ndarray                       # (nv,) each coordinate's armature, added to H's diagonal (schema)
    named_points: dict[tuple[str, str], tuple[int, np.ndarray]] = field(default_factory=dict)
    frames: dict[str, tuple[int, np.ndarray, np.ndarray]] = field(default_factory=dict)   # merged bodies
    shapes: tuple[Shape, ...] = ()
    constraints: tuple = ()                    # core.constraints.PointConstraint, in record-column order
    forces: tuple = ()                         # core.forces.AppliedForce
    controllers: tuple = ()                    # core.control controllers; State.z holds their integrated state
    contacts: tuple = ()                       # core.contacts.Contact: unilateral contacts (their rows are constraints)
    programs: tuple = ()                       # core.programs.ProgramSpec: control programs (Kearney §4)
    limits: tuple = ()                         # core.contacts.JointLimit: joint ranges as unilateral rows
    settings: dict[str, Any] = field(default_factory=dict)
    spec: Any = None                           # the editable scene spec this model was compiled from, if any

    # ---- sizes -------------------------------------------------------------------------------------------
    @functools.cached_property
    def n_links(self) -> int:
        return len(self.link_names)

    @functools.cached_property
    def nq(self) -> int:
        return int(self.nq_j.sum())

    @functools.cached_property
    def nv(self) -> int:
        return int(self.nv_j.sum())

    @property
    def joint_names(self) -> list[str]:
        """Joints that have coordinates, in the order of their coordinates."""
        return [self.joint_link_names[i] for i in range(self.n_links) if self.nv_j[i] > 0]

    @functools.cached_property
    def tree(self) -> Tree:
        """The arrays of the forest as every compiled kernel takes them (:class:`Tree`)."""
        root = np.arange(self.n_links, dtype=np.int64)      # in one pass: a parent comes before its children
        for i in range(self.n_links):
            p = int(self.parent[i])
            if p >= 0:
                root[i] = root[p] if p < i else self.root_of(i)
        inertia_com = np.array(self.inertia[:, :3, :3])
        for i in range(self.n_links):                      # Ī_c = Ī_O − m (|c|² 1 − c cᵀ)   (parallel axes)
            c = self.com[i]
            inertia_com[i] -= self.mass[i] * (c @ c * np.eye(3) - np.outer(c, c))
        # a lone free body (a root with a free joint and no children): its joint's articulated inertia is its own,
        # constant in its frame, D = Sᵀ I S + diag(a) (S = 1), so ABA takes D⁻¹ from here (core.aba)
        lone = np.zeros(self.n_links, np.bool_)
        lone_Dinv = np.zeros((self.n_links, 6, 6))
        has_child = np.zeros(self.n_links, np.bool_)
        has_child[[int(p) for p in self.parent if p >= 0]] = True
        for i in range(self.n_links):
            if self.joint_type[i] == FREE and self.parent[i] < 0 and not has_child[i]:
                vs = int(self.v_start[i])
                D = self.inertia[i] + np.diag(self.armature[vs:vs + 6])
                if np.all(np.isfinite(D)) and np.linalg.cond(D) < 1e12:
                    lone[i] = True
                    lone_Dinv[i] = np.linalg.inv(D)
        fields = Tree._fields[:Tree._fields.index("root")]
        return Tree(*(np.array(getattr(self, name)) for name in fields), root, np.array(self.mass),
                    np.array(self.com), inertia_com, np.array(self.armature), lone, lone_Dinv)

    @functools.cached_property
    def kernel_tree(self):
        """:attr:`tree` as one reference for the compiled pipeline (:class:`core.layout.TreeRef`)."""
        from .layout import TreeRef
        return TreeRef(*self.tree)

    # ---- look-ups ----------------------------------------------------------------------------------------
    def _joint_link(self, name: str) -> int:
        try:
            return self.joint_link_names.index(name)
        except ValueError:
            raise KeyError(f"model {self.name!r} has no joint {name!r}; joints: {', '.join(self.joint_link_names)}")

    def q_slice(self, joint: str) -> slice:
        """Where joint ``joint``'s entries sit in q (empty for a fixed joint)."""
        i = self._joint_link(joint)
        return slice(int(self.q_start[i]), int(self.q_start[i] + self.nq_j[i]))

    def qd_slice(self, joint: str) -> slice:
        """Where joint ``joint``'s entries sit in qd, qdd and tau."""
        i = self._joint_link(joint)
        return slice(int(self.v_start[i]), int(self.v_start[i] + self.nv_j[i]))

    @functools.cached_property
    def fixed_links(self) -> frozenset:
        """The links that cannot move: welded to the world, with every ancestor (a table, a box's walls)."""
        def fixed(i: int) -> bool:
            while i >= 0:
                if self.nv_j[i] > 0:
                    return False
                i = int(self.parent[i])
            return True
        return frozenset(i for i in range(self.n_links) if fixed(i))

    def root_of(self, link: int) -> int:
        """The root link of the tree that ``link`` belongs to (-1 for the world)."""
        while link >= 0 and self.parent[link] >= 0:
            link = int(self.parent[link])
        return link

    @property
    def joint_kinds(self) -> tuple[str, ...]:
        """The type of each link's joint by the names scene documents use: fixed, hinge, slider, ball, free."""
        return tuple(_JOINT_TYPE_NAMES[int(t)] for t in self.joint_type)

    @property
    def constraint_names(self) -> list[str]:
        return [c.name for c in self.constraints]

    @functools.cached_property
    def body_names(self) -> tuple[str, ...]:
        """Every body a scene may name: the links, then the bodies merged into them (:attr:`frames`)."""
        return self.link_names + tuple(self.frames)

    def link_index(self, body: int | str) -> int:
        """Index of the link a body moves with — its own, or the one it is merged into — given its name or a link
        index. Where the body's own frame matters (its points, directions, orientation) use :meth:`body_frame`."""
        if isinstance(body, (int, np.integer)):
            if not 0 <= body < self.n_links:
                raise IndexError(f"link index {body} out of range 0..{self.n_links - 1}")
            return int(body)
        if body in self.frames:
            return self.frames[body][0]
        try:
            return self.link_names.index(body)
        except ValueError:
            raise KeyError(f"model {self.name!r} has no body {body!r}; bodies: {', '.join(self.body_names)}")

    def body_frame(self, body: int | str) -> tuple[int, np.ndarray, np.ndarray]:
        """``(link index, R_LB, p_LB)``: the link a body moves with and the body's frame in that link's frame
        (identity for a link itself), so a point r or direction d in body coordinates is ``p_LB + R_LB r`` or
        ``R_LB d`` in the link's."""
        if isinstance(body, str) and body in self.frames:
            return self.frames[body]
        return self.link_index(body), _IDENTITY, _ORIGIN

    def resolve_point(self, body: int | str, point) -> tuple[int, np.ndarray]:
        """``(link index, point in link frame)`` for a body (a link or a merged body) and either a named point or
        a 3-vector in the body's frame."""
        k, R_LB, p_LB = self.body_frame(body)
        if isinstance(point, str):
            key = (body if isinstance(body, str) else self.link_names[k], point)
            if key not in self.named_points:
                names = [p for (b, p) in self.named_points if b == key[0]]
                raise KeyError(f"body {key[0]!r} has no point {point!r}; its points: {names}")
            return self.named_points[key]
        return k, p_LB + R_LB @ np.asarray(point, dtype=float).reshape(3)

    # ---- state -------------------------------------------------------------------------------------------
    def initial_state(self) -> "State":
        """A fresh :class:`State` at the scene's initial configuration and velocity (t = 0)."""
        z = np.concatenate([c.initial_state() for c in self.controllers]) if self.controllers else np.zeros(0)
        return State(t=0.0, q=np.array(self.q0), qd=np.array(self.qd0), z=z,
                     work=np.zeros(len(self.constraints) + N_POWER_SOURCES),
                     active=np.array([c.enabled for c in self.constraints], dtype=bool),
                     slip=np.zeros((sum(len(c.points) for c in self.contacts), 3)),
                     touched=np.full(sum(len(c.points) for c in self.contacts), np.nan))

    def complete(self, state: "State") -> "State":
        """``state`` with the fields it lacks (z, work, active) set as in :meth:`initial_state`."""
        if state.z is not None and state.work is not None and state.active is not None and state.slip is not None \
                and state.touched is not None:
            return state
        init = self.initial_state()
        return State(state.t, np.asarray(state.q, float), np.asarray(state.qd, float),
                     init.z if state.z is None else state.z, init.work if state.work is None else state.work,
                     init.active if state.active is None else state.active, state.corrections, state.step_size,
                     state.rank_deficient, state.projection_iterations,
                     init.slip if state.slip is None else state.slip,
                     init.touched if state.touched is None else state.touched, state.programs, state.controls,
                     state.energy_scale, state.event_work)

    def neutral_configuration(self) -> np.ndarray:
        """q with every joint at zero (identity quaternions)."""
        q = np.zeros(self.nq)
        q[self.quat_starts] = 1.0
        return q

    def __repr__(self) -> str:
        return f"Model({self.name!r}, links={self.n_links}, nq={self.nq}, nv={self.nv})"


@dataclass
class State:
    """What changes during a run, and all a step needs to go on from it:

    - ``t`` (s), configuration ``q`` (nq), velocity ``qd`` (nv);
    - ``z``: the controllers' integrated state (adaptive parameters, integrals; each controller owns a slice, in
      ``Model.controllers`` order);
    - ``work`` (K + 4): the energy audit's integrals (thesis §2.3.2) of the power of each constraint, then of the
      dampers, drag, actuators and external forces; ``corrections``: the energy changed by the projection
      formulation's position and velocity corrections;
    - ``active`` (K bools): which constraints act (constraints break and are added or removed at run time);
    - ``step_size``: the step the adaptive integrator tries next (cash_karp), NaN before its first step;
    - ``rank_deficient``: whether the constraint Jacobian had lost row rank when it was last reported (rank
      events report its changes);
    - ``projection_iterations``: the Newton–Raphson iterations of the projection formulation's correction that
      produced this state (0 for other formulations and the initial state);
    - ``slip`` (P x 3, one row per contact point of ``Model.contacts``): the unit direction of the Coulomb
      friction force on each slipping contact point (zero rows for points that are open, stick or frictionless);
    - ``touched`` (P): the time each contact point last touched down (NaN while open), for the lift-off delay;
    - ``programs``: the control programs (:mod:`core.programs`) with their own state, and ``controls``: their
      declarations in force (:class:`core.programs.Declarations`) — values a step never changes: the programs'
      event handlers work on copies.
    - ``energy_scale``: the largest |T| + |V_g| + |V_e| the run has been through, the energy audit's scale (a
      step whose audit error passes :data:`core.integrators.BOOKS_FACTOR` of it is refused as diverging).
    - ``event_work``: what the events of about the last :data:`core.plan.EVENT_WORK_WINDOW` steps cost, in steps
      (a run whose events cost more than :data:`core.plan.EVENT_WORK_PER_STEP` per step stops as chattering).

    ``model.initial_state()`` fills every field; a State made with only (t, q, qd) gets the scene's controller
    state, zero work and the scene's enabled constraints when a step first sees it."""
    t: float
    q: np.ndarray
    qd: np.ndarray
    z: np.ndarray | None = None
    work: np.ndarray | None = None
    active: np.ndarray | None = None
    corrections: float = 0.0
    step_size: float = float("nan")
    rank_deficient: bool = False
    projection_iterations: int = 0
    slip: np.ndarray | None = None
    touched: np.ndarray | None = None
    programs: tuple = ()
    controls: object = None
    energy_scale: float = 0.0
    event_work: float = 0.0

    def copy(self) -> "State":
        return State(self.t, self.q.copy(), self.qd.copy(), None if self.z is None else self.z.copy(),
                     None if self.work is None else self.work.copy(),
                     None if self.active is None else self.active.copy(), self.corrections, self.step_size,
                     self.rank_deficient, self.projection_iterations,
                     None if self.slip is None else self.slip.copy(),
                     None if self.touched is None else self.touched.copy(), self.programs, self.controls,
                     self.energy_scale, self.event_work)


def build_model(*, name, link_names, parent, joint_type, joint_link_names, axis, R_tree, p_tree, inertia,
                gravity, q0, qd0, named_points=None, frames=None, shapes=(), settings=None, spec=None,
                armature=None) -> Model:
    """Assemble a :class:`Model` from per-link lists (links already ordered with ``parent[i] < i``), the
    merged bodies' ``frames`` (name → (link, R_LB, p_LB)) and the joints' ``armature`` per velocity coordinate
    (nv; default zero)."""
    N = len(link_names)
    joint_type = np.asarray(joint_type, dtype=np.int64)
    nq_j = np.array([JOINT_NQ[int(t)] for t in joint_type], dtype=np.int64)
    nv_j = np.array([JOINT_NV[int(t)] for t in joint_type], dtype=np.int64)
    q_start = np.concatenate([[0], np.cumsum(nq_j)[:-1]]).astype(np.int64) if N else np.zeros(0, np.int64)
    v_start = np.concatenate([[0], np.cumsum(nv_j)[:-1]]).astype(np.int64) if N else np.zeros(0, np.int64)
    axis = np.asarray(axis, dtype=float).reshape(N, 3)
    S = np.zeros((N, 6, 6))
    quat_starts = []
    for i, jt in enumerate(joint_type):
        if jt == HINGE:
            S[i, :3, 0] = axis[i]
        elif jt == SLIDER:
            S[i, 3:, 0] = axis[i]
        elif jt == BALL:
            S[i, :3, :3] = np.eye(3)
            quat_starts.append(q_start[i])
        elif jt == FREE:
            S[i] = np.eye(6)
            quat_starts.append(q_start[i] + 3)
    inertia = np.asarray(inertia, dtype=float).reshape(N, 6, 6)
    mass = inertia[:, 3, 3].copy()
    com = np.zeros((N, 3))
    for i in range(N):
        if mass[i] > 0:
            C = inertia[i, :3, 3:] / mass[i]
            com[i] = (C[2, 1], C[0, 2], C[1, 0])
    frozen_points = {}
    for key, (k, p) in (named_points or {}).items():
        frozen_points[key] = (int(k), _frozen(p))
    return Model(
        name=name, link_names=tuple(link_names), parent=_frozen(parent, np.int64), joint_type=_frozen(joint_type, np.int64),
        joint_link_names=tuple(joint_link_names), axis=_frozen(axis), R_tree=_frozen(R_tree).reshape(N, 3, 3),
        p_tree=_frozen(p_tree).reshape(N, 3), S=_frozen(S), q_start=_frozen(q_start, np.int64),
        v_start=_frozen(v_start, np.int64), nq_j=_frozen(nq_j, np.int64), nv_j=_frozen(nv_j, np.int64),
        inertia=_frozen(inertia), mass=_frozen(mass), com=_frozen(com), gravity=_frozen(gravity),
        q0=_frozen(q0), qd0=_frozen(qd0), quat_starts=_frozen(quat_starts, np.int64),
        armature=_frozen(np.zeros(int(nv_j.sum())) if armature is None else armature),
        named_points=frozen_points,
        frames={name: (int(k), _frozen(R), _frozen(p)) for name, (k, R, p) in (frames or {}).items()},
        shapes=tuple(shapes), settings=dict(settings or {}), spec=spec)
