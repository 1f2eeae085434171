"""The typed schema of a scene document (``format_version`` 1).

A scene is pure data (never code). Its top-level sections are::

    {
      "format_version": 1,
      "name": "three_link_arm", "description": "…",
      "gravity": [0, -9.81, 0],
      "simulation": {"dt": 0.001, "integrator": "rk4", "duration": 10},
      "bodies": [ {"name": …, "parent": "world" | <body>, "joint": {…}, "shapes": […], "inertial": {…},
                   "points": {"tip": [1, 0, 0]}}, … ],
      "constraints": [ {"type": "nail", "name": "tip_nail", "body": "link3", "point": "tip"}, … ],
      "forces": [ {"type": "spring", "name": "s", "body_a": "link3", "point_a": "tip", "stiffness": 10}, … ]
    }

``constraints`` and ``forces`` are lists of discriminated unions on ``type`` (like joints and shapes); later
sections (controllers, events) are added the same way. Every model forbids unknown fields, so a typo is an error.

Units are SI; angles in radians; quaternions are ``[w, x, y, z]``; colours are RGB or RGBA in [0, 1].

Limits (:mod:`core.scene.limits`, checked before the fields): a document has at most 16 MiB of UTF-8 text, 32
levels of nesting, 100 000 items in one array or object, 10 000 bodies and 10 000 each of constraints, forces and
controllers, field names of at most 128 characters; every number is finite, integer literals have at most 20
digits, and every number is 0 or has a magnitude between 1e-30 and 1e12 (so what the compiler and the step
compute from a few of them — volumes, inertias, norms, energies — stays finite); a joint-space expression has at
most 2000 characters and 64 levels of nesting. At most 100 problems are listed, then their count.
"""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FORMAT_VERSION = 1

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_\-./:]*$")]
"""A name: a letter or ``_``, then letters, digits and ``_ - . / :`` (URDF link and joint names such as
``joint_8.0`` or ``iris__/imu_link`` are names; a joint-space expression can read only joints whose name is also
a Python identifier)."""
Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]
Colour = Union[tuple[float, float, float], tuple[float, float, float, float]]


class Strict(BaseModel):
    """Base of every schema node: unknown fields are errors, NaN/inf are refused, assignments are validated."""
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_assignment=True)


def _unit_quaternion(q: Quat) -> Quat:
    n = sum(c * c for c in q) ** 0.5
    if abs(n - 1.0) > 1e-3:
        raise ValueError(f"must be a unit quaternion [w, x, y, z]; its norm is {n:.6g}")
    return q


def _nonzero_axis(a: Vec3) -> Vec3:
    n = sum(c * c for c in a) ** 0.5
    if n < 1e-9:
        raise ValueError("must be a non-zero direction")
    return a


def _colour(c):
    if any(not 0.0 <= x <= 1.0 for x in c):
        raise ValueError("colour components must lie in [0, 1]")
    return c


# ---------------------------------------------------------------------------------------------- shapes
class _ShapeBase(Strict):
    """Common fields of a solid shape. Its frame is at its centre of mass; cylinders and capsules lie along the
    shape frame's z axis, or along ``axis`` (a direction in the body frame) if that is given instead.

    ``purpose``: ``both`` (drawn, and touches the ground), ``visual`` (drawn only: a robot's detailed mesh) or
    ``collision`` (touches the ground, drawn only when the viewport shows collision shapes: a robot's simple
    stand-in). ``contype`` and ``conaffinity`` filter what touches what as in MuJoCo: a shape and the ground
    touch when ``contype & ground.conaffinity`` or ``ground.contype & conaffinity`` is non-zero."""
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat | None = None
    axis: Vec3 | None = None
    mass: Positive | None = None
    density: Positive | None = None
    color: Colour = (0.6, 0.6, 0.65)
    purpose: Literal["both", "visual", "collision"] = "both"
    contype: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1
    conaffinity: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1

    _check_orientation = field_validator("orientation")(lambda cls, v: v if v is None else _unit_quaternion(v))
    _check_axis = field_validator("axis")(lambda cls, v: v if v is None else _nonzero_axis(v))
    _check_color = field_validator("color")(lambda cls, v: _colour(v))

    @model_validator(mode="after")
    def _one_mass_source(self):
        if self.mass is not None and self.density is not None:
            raise ValueError("give either mass or density, not both")
        if self.orientation is not None and self.axis is not None:
            raise ValueError("give either orientation or axis, not both")
        return self


class Box(_ShapeBase):
    type: Literal["box"]
    size: tuple[Positive, Positive, Positive]

    @model_validator(mode="after")
    def _no_axis(self):
        if self.axis is not None:
            raise ValueError("axis applies to cylinders and capsules; orient a box with orientation")
        return self


class Sphere(_ShapeBase):
    type: Literal["sphere"]
    radius: Positive


class Cylinder(_ShapeBase):
    type: Literal["cylinder"]
    radius: Positive
    length: Positive


class Capsule(_ShapeBase):
    """A cylinder of ``length`` capped by two hemispheres of ``radius`` (total length ``length + 2 radius``)."""
    type: Literal["capsule"]
    radius: Positive
    length: Positive


class Mesh(_ShapeBase):
    """A triangle mesh from ``file`` (STL, OBJ, DAE, glTF/GLB, PLY, OFF; relative to the scene document's folder or
    absolute): it carries no mass (the body needs an ``inertial``). Its frame, like a box's, is at the centre of
    the box bounding the mesh, whose full edge lengths are ``size``; the mesh file's own origin lies at ``offset``
    in that frame, and its vertices are multiplied by ``scale`` (per axis) first. Picking and framing use the
    bounding box; its default contact points are vertices of its convex hull (:mod:`core.scene.collision`); a
    file that cannot be read is drawn as that box and touches at its corners."""
    type: Literal["mesh"]
    file: Annotated[str, Field(min_length=1, max_length=4096)]
    size: tuple[Positive, Positive, Positive]
    scale: Vec3 = (1.0, 1.0, 1.0)
    offset: Vec3 = (0.0, 0.0, 0.0)

    @model_validator(mode="after")
    def _drawn_only(self):
        if self.mass is not None or self.density is not None:
            raise ValueError("a mesh is drawn only and carries no mass; give the body an inertial")
        if self.axis is not None:
            raise ValueError("axis applies to cylinders and capsules; orient a mesh with orientation")
        return self


Shape = Annotated[Union[Box, Sphere, Cylinder, Capsule, Mesh], Field(discriminator="type")]


# ---------------------------------------------------------------------------------------------- inertia
class Inertial(Strict):
    """Explicit mass properties: mass (kg), centre of mass in the body frame (m), and the rotational inertia about
    the centre of mass in body axes, ``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]`` (kg·m²). A point mass has zero inertia."""
    mass: NonNegative
    com: Vec3 = (0.0, 0.0, 0.0)
    inertia: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    @field_validator("inertia")
    @classmethod
    def _physical(cls, v):
        import numpy as np

        from ..inertia import inertia_problem
        Ixx, Iyy, Izz, Ixy, Ixz, Iyz = v
        problem = inertia_problem(np.array([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]))
        if problem is not None:
            raise ValueError(problem)
        return v


# ---------------------------------------------------------------------------------------------- joints
class _JointBase(Strict):
    """Placement of the joint frame in the parent's frame; the child's frame coincides with it at q = 0.
    ``name`` defaults to the body's name."""
    name: Name | None = None
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat = (1.0, 0.0, 0.0, 0.0)

    _check_orientation = field_validator("orientation")(lambda cls, v: _unit_quaternion(v))


class FixedJoint(_JointBase):
    type: Literal["fixed"]


class _RangedJoint(_JointBase):
    """``limits``: the joint's range [lower, upper] (rad or m), unilateral rows added when the joint reaches a
    bound and removed when they would pull (:class:`core.contacts.JointLimit`), with Newton's
    ``limit_restitution`` at the impacts; ``q0`` must lie in the range. ``armature`` (kg·m² or kg): an inertia
    that moves with the joint's coordinate alone — a motor's rotor seen through its gearbox, MuJoCo's joint
    ``armature`` — added to the joint's diagonal of the joint-space inertia H(q) (and ½ a q̇² to the kinetic
    energy)."""
    axis: Vec3 = (0.0, 0.0, 1.0)
    q0: float = 0.0
    qd0: float = 0.0
    limits: tuple[float, float] | None = None
    limit_restitution: Annotated[float, Field(ge=0, le=1)] = 0.0
    armature: NonNegative = 0.0

    _check_axis = field_validator("axis")(lambda cls, v: _nonzero_axis(v))

    @model_validator(mode="after")
    def _in_range(self):
        if self.limits is not None:
            lower, upper = self.limits
            if not lower < upper:
                raise ValueError(f"limits must be [lower, upper] with lower < upper, got {list(self.limits)}")
            if not lower <= self.q0 <= upper:
                raise ValueError(f"q0 = {self.q0:g} lies outside the limits [{lower:g}, {upper:g}]")
        return self


class HingeJoint(_RangedJoint):
    """Rotation by ``q0`` (rad) about ``axis`` (joint frame); ``qd0`` in rad/s."""
    type: Literal["hinge"]


class SliderJoint(_RangedJoint):
    """Translation by ``q0`` (m) along ``axis`` (joint frame); ``qd0`` in m/s."""
    type: Literal["slider"]


class BallJoint(_JointBase):
    """Rotation by the unit quaternion ``q0``; ``qd0`` is the relative angular velocity in the parent frame."""
    type: Literal["ball"]
    q0: Quat = (1.0, 0.0, 0.0, 0.0)
    qd0: Vec3 = (0.0, 0.0, 0.0)

    _check_q0 = field_validator("q0")(lambda cls, v: _unit_quaternion(v))


class FreeJoint(_JointBase):
    """Six degrees of freedom. ``q0`` = body position and orientation in the parent frame
    ``[x, y, z, qw, qx, qy, qz]``; ``qd0`` = ``[ωx, ωy, ωz, vx, vy, vz]``, the angular velocity and the velocity of
    the body frame's origin, both in the parent frame."""
    type: Literal["free"]
    q0: tuple[float, float, float, float, float, float, float] = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    qd0: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    @field_validator("q0")
    @classmethod
    def _unit(cls, v):
        _unit_quaternion(v[3:])
        return v


Joint = Annotated[Union[FixedJoint, HingeJoint, SliderJoint, BallJoint, FreeJoint], Field(discriminator="type")]


# ---------------------------------------------------------------------------------------------- bodies
def _gives_mass(shape) -> bool:
    """Whether a shape's mass counts toward its body's (without an ``inertial``): a solid that is ``both`` drawn
    and touching (a ``visual`` or ``collision`` shape stands for a body another shape already gives mass to)."""
    return shape.type != "mesh" and shape.purpose == "both"


class Body(Strict):
    """A rigid link: its joint to ``parent`` ("world" or another body), its shapes, and either the shapes' mass
    properties (each shape that is ``both`` drawn and touching gives mass or density) or an explicit ``inertial``
    (then shapes carry no mass)."""
    name: Name
    parent: Name = "world"
    joint: Joint
    shapes: list[Shape] = Field(default_factory=list)
    inertial: Inertial | None = None
    points: dict[Name, Vec3] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _mass_source(self):
        if self.inertial is not None:
            bad = [i for i, s in enumerate(self.shapes) if s.mass is not None or s.density is not None]
            if bad:
                raise ValueError(f"shapes {bad} give mass or density, but the body has an explicit inertial; "
                                 "remove one of them")
        else:
            bad = [i for i, s in enumerate(self.shapes)
                   if s.mass is None and s.density is None and s.type != "mesh" and s.purpose == "both"]
            if bad:
                raise ValueError(f"shapes {bad} give neither mass nor density, and the body has no inertial")
            bad = [i for i, s in enumerate(self.shapes)
                   if (s.mass is not None or s.density is not None) and s.purpose != "both"]
            if bad:
                raise ValueError(f"shapes {bad} are {self.shapes[bad[0]].purpose} shapes, which carry no mass; "
                                 "give the mass to a shape that is both drawn and touching, or an inertial")
            if not any(_gives_mass(s) for s in self.shapes):
                raise ValueError("a body needs shapes with mass or density, or an explicit inertial")
        return self


# ---------------------------------------------------------------------------------------------- constraints
PointSpec = Union[Name, Vec3]
"""A point on a body: the name of one of its named points, or coordinates in its frame (world coordinates when
the body is ``world``)."""


class _ConstraintBase(Strict):
    """Fields every constraint has (thesis §2.2.2–2.3.4). ``stabilization`` is λ of the critically damped
    deviation dynamics D̈ + 2λḊ + λ²D = 0 (eq. 2.21; for a velocity constraint Ḋ + λD = 0), in 1/s, used by the
    dynamic-constraints and multipliers formulations (projection corrects positions instead);
    ``max_force`` (N) is the joint's strength, the bound on the magnitude of its force (for a joint-space
    constraint, on |λ|); ``max_deviation`` (m, m/s for a velocity constraint, Φ's unit for a joint-space one) is
    the deviation beyond which it breaks and is removed (never if omitted)."""
    name: Name
    enabled: bool = True
    stabilization: NonNegative = 10.0
    max_force: Positive = 1.0e6
    max_deviation: Positive | None = None


class NailPath(Strict):
    """Prescribed motion of a nail: ``n(t) = position + velocity t + amplitude ∘ sin(2π frequency t + phase)``."""
    velocity: Vec3 = (0.0, 0.0, 0.0)
    amplitude: Vec3 = (0.0, 0.0, 0.0)
    frequency: NonNegative = 0.0
    phase: float = 0.0


class NailConstraint(_ConstraintBase):
    """Point-to-nail: ``D = p − n(t)``. ``position`` is the nail in world coordinates (default: where the body
    point starts); the studio may move it at run time."""
    type: Literal["nail"]
    body: Name
    point: PointSpec
    position: Vec3 | None = None
    path: NailPath | None = None


class PointToPointConstraint(_ConstraintBase):
    """Point-to-point (a ball joint between two bodies): ``D = p_a − p_b``."""
    type: Literal["point_to_point"]
    body_a: Name
    point_a: PointSpec
    body_b: Name
    point_b: PointSpec


class HingeConstraint(_ConstraintBase):
    """A hinge between two bodies made of two point-to-point constraints on its axis (thesis §2.3.4, fig. 2.8),
    ``spacing`` apart and centred on ``anchor``. ``anchor`` and ``axis`` are given in world coordinates at the
    initial configuration and are fixed in both bodies from then on."""
    type: Literal["hinge"]
    body_a: Name
    body_b: Name
    anchor: Vec3
    axis: Vec3
    spacing: Positive = 0.2

    _check_axis = field_validator("axis")(lambda cls, v: _nonzero_axis(v))


class PointOnLineConstraint(_ConstraintBase):
    """A body point held on the world line through ``origin`` along ``direction`` (2 rows: D ⟂ the line)."""
    type: Literal["point_on_line"]
    body: Name
    point: PointSpec
    origin: Vec3
    direction: Vec3

    _check_axis = field_validator("direction")(lambda cls, v: _nonzero_axis(v))


class PointOnPlaneConstraint(_ConstraintBase):
    """A body point held on the world plane through ``origin`` with ``normal`` (1 row: D along the normal)."""
    type: Literal["point_on_plane"]
    body: Name
    point: PointSpec
    origin: Vec3
    normal: Vec3

    _check_axis = field_validator("normal")(lambda cls, v: _nonzero_axis(v))


class PointVelocityConstraint(_ConstraintBase):
    """The velocity of a body point held at ``velocity`` (world): ``D = ṗ − v``, stabilized to first order
    Ḋ + λD = 0 (thesis §2.2.4)."""
    type: Literal["point_velocity"]
    body: Name
    point: PointSpec
    velocity: Vec3 = (0.0, 0.0, 0.0)


def _expression(text: str) -> str:
    from ..joint_constraints import ExpressionError, parse_expression
    from .limits import MAX_EXPRESSION_DEPTH, expression_depth
    depth = expression_depth(text)
    if depth is not None and depth > MAX_EXPRESSION_DEPTH:
        raise ValueError(f"the expression is nested more than {MAX_EXPRESSION_DEPTH} levels deep")
    try:
        parse_expression(text)
    except ExpressionError as exc:
        raise ValueError(f"the expression {exc}") from None
    return text


class JointSpaceConstraint(_ConstraintBase):
    """A constraint given directly in joint space, ``Φ(q) = value`` (Aghili eq. 11, 67), one row. ``expression``
    is data, not code: numbers, names of hinge and slider joints (their coordinate, rad or m), ``+ - * / **``,
    unary minus, ``sin cos tan sqrt exp log abs`` and ``pi`` — e.g. the slider condition
    ``"sin(crank) + sin(crank + rod)"``. Its Jacobian and J̇q̇ are exact, by forward-mode Taylor arithmetic on the
    checked expression, compiled (:mod:`core.joint_constraints`); the expression must be differentiable at the
    initial configuration."""
    type: Literal["joint_space"]
    expression: Annotated[str, Field(min_length=1, max_length=2000)]
    value: float = 0.0

    _check_expression = field_validator("expression")(lambda cls, v: _expression(v))


Constraint = Annotated[Union[NailConstraint, PointToPointConstraint, HingeConstraint, PointOnLineConstraint,
                             PointOnPlaneConstraint, PointVelocityConstraint, JointSpaceConstraint],
                       Field(discriminator="type")]


# ---------------------------------------------------------------------------------------------- forces
class Spring(Strict):
    """A linear spring-damper between two body points (``body_b`` may be ``world``, with ``point_b`` in world
    coordinates): force magnitude ``k (ℓ − rest_length) + c ℓ̇`` along the line of centres (thesis §2.3.1)."""
    type: Literal["spring"]
    name: Name
    body_a: Name
    point_a: PointSpec
    body_b: Name = "world"
    point_b: PointSpec = (0.0, 0.0, 0.0)
    stiffness: NonNegative
    damping: NonNegative = 0.0
    rest_length: NonNegative = 0.0


class JointSpring(Strict):
    """A spring-damper on a hinge or slider joint: ``τ = −k (q − rest) − c q̇``."""
    type: Literal["joint_spring"]
    name: Name
    joint: Name
    stiffness: NonNegative = 0.0
    damping: NonNegative = 0.0
    rest: float = 0.0


class Drag(Strict):
    """Viscous drag on a body point: ``f = −(linear + quadratic |v|) v`` (linear in N·s/m, quadratic in N·s²/m²)."""
    type: Literal["drag"]
    name: Name
    body: Name
    point: PointSpec = (0.0, 0.0, 0.0)
    linear: NonNegative = 0.0
    quadratic: NonNegative = 0.0


class Actuator(Strict):
    """A joint force source on a hinge or slider, commanded by ``torque`` u (the studio's slider, a control
    program's servo; the scene's value is the command at the start). By default the force is the command,
    clipped to ±``limit`` (N·m or N). An actuator may also be an affine servo (MuJoCo's actuators with a joint
    transmission, :mod:`core.scene.mjcf`)::

        τ = clip(gain · clip(u, command_range) + bias[0] + bias[1] q + bias[2] q̇, force range)

    with ``gain`` (default 1), ``bias`` (default 0: a position servo of stiffness kp and damping kv is gain kp,
    bias [0, −kp, −kv]), ``command_range`` [lower, upper] (default none) and the force range ±``limit`` or
    ``force_range`` [lower, upper] (one of them; default none). The control equations of a control program solve
    for the commands of plain actuators only (gain 1, no bias, no ranges: the force is the command, ±limit)."""
    type: Literal["actuator"]
    name: Name
    joint: Name
    torque: float = 0.0
    limit: Positive | None = None
    force_range: tuple[float, float] | None = None
    command_range: tuple[float, float] | None = None
    gain: float = 1.0
    bias: Vec3 = (0.0, 0.0, 0.0)

    @model_validator(mode="after")
    def _ranges(self):
        if self.limit is not None and self.force_range is not None:
            raise ValueError("give either limit (±) or force_range [lower, upper], not both")
        for key in ("force_range", "command_range"):
            r = getattr(self, key)
            if r is not None and not r[0] <= r[1]:
                raise ValueError(f"{key} must be [lower, upper] with lower <= upper, got {list(r)}")
        return self


class PointForce(Strict):
    """A force ``force`` (N, world coordinates) applied at a body point while ``start <= t < stop``."""
    type: Literal["point_force"]
    name: Name
    body: Name
    point: PointSpec = (0.0, 0.0, 0.0)
    force: Vec3
    start: float = 0.0
    stop: float | None = None


Force = Annotated[Union[Spring, JointSpring, Drag, Actuator, PointForce], Field(discriminator="type")]


class SolverSettings(Strict):
    """How the constraint equation A F = −B is solved (thesis §2.3.4): ``svd`` drops singular values in ascending
    order while a force bound is exceeded; ``damped_least_squares`` replaces 1/σ by σ/(σ² + ρ²). Singular values
    below ``rcond`` × the largest are always treated as zero."""
    method: Literal["svd", "damped_least_squares"] = "svd"
    rcond: Annotated[float, Field(gt=0, lt=1)] = 1e-12
    rho: Positive = 1e-3


class ProjectionSettings(Strict):
    """The projection formulation (Aghili): which constraint inertia matrix (``Mc`` eq. 23, ``Mc_symmetric`` eq. 28,
    ``Mc_gamma`` eq. 29 with ``gamma`` (kg·m²) defaulting to ‖M‖₂), the rank tolerance ε of the SVD that gives
    P = I − J⁺J and J⁺ (eq. 4, 15, 70: singular values of J at or below ε·σ_ref are zero, σ_ref = max(σ_max(J),
    the constraints' Jacobian scale); default: ``simulation.rank_tolerance``; see :mod:`core.formulations`), and
    the Newton–Raphson position correction (eq. 39), run after a step while ‖Φ‖ exceeds ``position_tolerance``
    (in Φ's units, m for point constraints), at most ``max_iterations`` times, followed by the velocity
    projection."""
    variant: Literal["Mc", "Mc_symmetric", "Mc_gamma"] = "Mc"
    gamma: Positive | None = None
    tolerance: Annotated[float, Field(gt=0, lt=1)] | None = None
    position_tolerance: Positive = 1e-12
    max_iterations: Annotated[int, Field(ge=1, le=100)] = 20


class SimulationSettings(Strict):
    """Defaults for runs of this scene (the command line and the studio may override them).

    ``rank_tolerance`` defines the rank of the constraint Jacobian J that every formulation reports
    (``jacobian_rank``, ``rank_deficient`` and the rank events) and that the multipliers formulation relies on:
    a singular value σ of J counts when σ > rank_tolerance · σ_ref, σ_ref = max(σ_max(J), the largest Jacobian
    scale of the active constraints — the norm of their rows at the initial configuration). Below it the
    multipliers (McClamroch) would amplify errors by 1/σ², so that formulation drops the direction and flags it."""
    dt: Positive = 0.001                              # s; at least limits.MIN_DT (below)
    integrator: Literal["rk4", "cash_karp", "semi_implicit_euler", "implicitfast"] = "rk4"
    tolerance: Annotated[float, Field(ge=1e-14, le=1.0)] = 1e-8   # cash_karp's error tolerance (1e-14: a few
    #                                                                 ulps of a unit state; tighter is never met)
    formulation: Literal["dynamic_constraints", "projection", "multipliers"] = "dynamic_constraints"
    rank_tolerance: Annotated[float, Field(gt=0, lt=1)] = 1e-3
    solver: SolverSettings = Field(default_factory=SolverSettings)
    projection: ProjectionSettings = Field(default_factory=ProjectionSettings)
    duration: Positive = 10.0
    event_tolerance: Annotated[float, Field(ge=1e-15, le=1.0)] = 1e-9   # s: contact events isolated within it

    @field_validator("dt")
    @classmethod
    def _dt_moves_the_clock(cls, v):
        from .limits import MIN_DT
        if v < MIN_DT:
            raise ValueError(f"dt must be at least {MIN_DT:g} s (a shorter step cannot move the clock)")
        return v

    @field_validator("formulation")
    @classmethod
    def _fits_the_integrator(cls, v, info):           # (declared after the integrator: its value is known here)
        from ..layout import integrator_problem
        why = integrator_problem(info.data.get("integrator"), v)
        if why:
            raise ValueError(why)
        return v


# ---------------------------------------------------------------------------------------------- contacts
class ContactPlane(Strict):
    """The plane a contact's points touch: the half-space above ``origin`` along ``normal`` is free, the rest is
    solid. Without ``body``: a ground plane (world coordinates; ``normal`` by default against gravity, or +z
    without gravity). With ``body``: a plane fixed in that body, moving and turning with it, with ``origin`` and
    ``normal`` in the body's frame (default +z) — or, with ``face`` ("+x", "-x", "+y", "-y", "+z", "-z"), the
    outer face of the body's box shape number ``shape`` (then give neither origin nor normal). The contact's
    force then acts on both bodies."""
    origin: Vec3 | None = None
    normal: Vec3 | None = None
    body: Name | None = None
    face: Literal["+x", "-x", "+y", "-y", "+z", "-z"] | None = None
    shape: Annotated[int, Field(ge=0, le=10_000)] = 0

    _check_axis = field_validator("normal")(lambda cls, v: v if v is None else _nonzero_axis(v))

    @model_validator(mode="after")
    def _face_alone(self):
        if self.face is not None and self.body is None:
            raise ValueError("a face belongs to a body: give 'body' with 'face'")
        if self.face is not None and (self.origin is not None or self.normal is not None):
            raise ValueError("a face sets the plane: give 'face' without 'origin' and 'normal'")
        return self


class ContactSpec(Strict):
    """Unilateral contact of a body with a ground plane or another body's plane face (McClamroch §6 eq. 40–42; Kearney §3; see
    :mod:`core.contacts`). ``points``: the body's contact points, named points or body coordinates; by default
    those of its shapes — a box's eight corners, a sphere, a capsule's two end caps (cylinders need explicit
    points). ``restitution`` e: Newton's coefficient at impacts (post-impact normal velocity −e times the
    pre-impact one); ``friction`` μ: Coulomb's coefficient (0: frictionless; stick and slip otherwise);
    ``rest_speed`` (m/s): a rebound slower than this ends in a resting contact; ``stabilization`` (1/s): λ of
    the contact rows' critically damped deviation dynamics, as for constraints; ``impact_holds``: hinge or
    slider joints whose actuators hold their velocity through this contact's impacts (tightly coupled control
    at an impact, Kearney §4.2: a legged robot's knee does not fold when its foot strikes); ``liftoff_delay`` (s):
    a point that touched down cannot lift off before this has passed (Kearney §5: the leg loads first).""" 
    name: Name
    body: Name
    points: Annotated[list[PointSpec], Field(min_length=1, max_length=64)] | None = None
    plane: ContactPlane = Field(default_factory=ContactPlane)
    restitution: Annotated[float, Field(ge=0, le=1)] = 0.0
    friction: Annotated[float, Field(ge=0, le=100)] = 0.0
    rest_speed: Annotated[float, Field(gt=0, le=1e3)] = 0.01
    stabilization: NonNegative = 20.0
    impact_holds: Annotated[list[Name], Field(max_length=64)] = Field(default_factory=list)
    liftoff_delay: Annotated[float, Field(ge=0, le=10)] = 0.0


class GroundSpec(Strict):
    """A ground for the whole scene in one line: every body's shapes that touch (``purpose`` ``both`` or
    ``collision``, passing the ``contype``/``conaffinity`` filter) become a contact of that body with the plane
    through ``origin`` along ``normal`` (default: against gravity, or +z without gravity), named
    ``<body>.ground``, with the shapes' default contact points (:func:`core.scene.collision.contact_points`).
    ``bodies`` keeps only those bodies, ``exclude`` leaves those out; a body with a listed contact of its own
    against the same plane is left to that contact. ``restitution``, ``friction``,
    ``rest_speed``, ``stabilization`` and ``liftoff_delay`` as in a contact. A robot include's own ground (an
    MJCF floor) is used when the document gives none."""
    origin: Vec3 = (0.0, 0.0, 0.0)
    normal: Vec3 | None = None
    restitution: Annotated[float, Field(ge=0, le=1)] = 0.0
    friction: Annotated[float, Field(ge=0, le=100)] = 1.0
    rest_speed: Annotated[float, Field(gt=0, le=1e3)] = 0.01
    stabilization: NonNegative = 20.0
    liftoff_delay: Annotated[float, Field(ge=0, le=10)] = 0.0
    contype: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1
    conaffinity: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1
    bodies: Annotated[list[Name], Field(max_length=10000)] | None = None
    exclude: Annotated[list[Name], Field(max_length=10000)] = Field(default_factory=list)

    _check_axis = field_validator("normal")(lambda cls, v: v if v is None else _nonzero_axis(v))


class CollisionSpec(Strict):
    """Contacts between the bodies' shapes, found automatically (:func:`core.scene.collision.shape_contacts`):
    every two shapes that touch (``purpose`` ``both`` or ``collision``, MuJoCo's ``contype``/``conaffinity``
    filter between them) on two links that can move relative to each other and are not parent and child, with
    the same named, event-switched rows as a ground's (exact impacts, Coulomb friction, no penalty): a sphere
    touches with its surface, a capsule with its caps against the other's core and, where it crosses another
    capsule or lies across a box's edge, with the point of its segment nearest that edge (a sliding point), a box
    at its corners against the other's box (its faces have edges and corners). ``bodies`` keeps only those bodies, ``exclude`` leaves
    those out, ``exclude_pairs`` leaves out pairs of bodies, ``include_pairs`` keeps pairs of a parent and its
    child. ``restitution``, ``friction``, ``rest_speed`` and ``stabilization`` as in a contact."""
    restitution: Annotated[float, Field(ge=0, le=1)] = 0.0
    friction: Annotated[float, Field(ge=0, le=100)] = 0.5
    rest_speed: Annotated[float, Field(gt=0, le=1e3)] = 0.01
    stabilization: NonNegative = 20.0
    bodies: Annotated[list[Name], Field(max_length=10000)] | None = None
    exclude: Annotated[list[Name], Field(max_length=10000)] = Field(default_factory=list)
    exclude_pairs: Annotated[list[Annotated[list[Name], Field(min_length=2, max_length=2)]],
                             Field(max_length=10000)] = Field(default_factory=list)
    include_pairs: Annotated[list[Annotated[list[Name], Field(min_length=2, max_length=2)]],
                             Field(max_length=10000)] = Field(default_factory=list)


# ---------------------------------------------------------------------------------------------- controllers
Gain = Union[Annotated[float, Field(gt=0)], list[Annotated[float, Field(gt=0)]]]
"""A gain: one value for every controlled coordinate, or one value per coordinate."""


class SetPointTrajectory(Strict):
    """A constant desired configuration ``q`` (one value per controlled joint; rad or m)."""
    type: Literal["set_point"]
    q: list[float]
    time_scale: NonNegative = 1.0


class SinusoidTrajectory(Strict):
    """Thesis eq. 3.38–3.39: joint i follows ``alpha_i + beta_i (1 − cos(omega_i t))`` where ``one_minus_cos[i]``
    (default: the first joint only, as in the thesis) and ``alpha_i + beta_i cos(omega_i t)`` otherwise; omega in
    rad/s. The Sanner–Slotine task is alpha = [0, 0], beta = [1.33, 0.75], omega = [0.75π, 2π]."""
    type: Literal["sinusoid"]
    alpha: list[float]
    beta: list[float]
    omega: list[NonNegative]
    one_minus_cos: list[bool] | None = None
    time_scale: NonNegative = 1.0

    @model_validator(mode="after")
    def _same_length(self):
        n = len(self.alpha)
        for key in ("beta", "omega", "one_minus_cos"):
            v = getattr(self, key)
            if v is not None and len(v) != n:
                raise ValueError(f"{key} has {len(v)} values but alpha has {n}; give one per joint")
        return self


class PointToPointTrajectory(Strict):
    """Straight joint-space movements through ``points`` with bell-shaped speed profiles (thesis eq. 3.40–3.43):
    segment j takes ``durations[j]`` s with sigmoid rate ``rate`` λ (1/s; peak speed λ/4 times the step)."""
    type: Literal["point_to_point"]
    points: Annotated[list[list[float]], Field(min_length=2)]
    durations: Union[Positive, list[Positive]]
    rate: Union[Positive, list[Positive]] = 10.0
    time_scale: NonNegative = 1.0

    @model_validator(mode="after")
    def _shapes(self):
        n = len(self.points[0])
        if any(len(p) != n for p in self.points):
            raise ValueError("every point needs the same number of coordinates")
        for key in ("durations", "rate"):
            v = getattr(self, key)
            if isinstance(v, list) and len(v) != len(self.points) - 1:
                raise ValueError(f"{key} needs one value per segment ({len(self.points) - 1}), got {len(v)}")
        return self


TrajectorySpec = Annotated[Union[SetPointTrajectory, SinusoidTrajectory, PointToPointTrajectory],
                           Field(discriminator="type")]


class _ControllerBase(Strict):
    """Fields every controller has. ``joints`` are the hinge or slider joints it controls (default: every joint
    with coordinates, in coordinate order); the ``trajectory`` gives one desired coordinate per joint. ``kp``,
    ``kd``: the PD gains (N·m/rad and N·m·s/rad; λ = kp/kd is the sliding-surface slope, eq. 3.7);
    ``torque_limit`` (N·m) clips the actuator torques; without one, a joint that has an ``actuator`` with a
    ``limit`` (a URDF joint's effort) is clipped at that limit. Gains may be edited while a simulation runs."""
    name: Name
    joints: list[Name] | None = None
    trajectory: TrajectorySpec
    kp: Gain = 9.0
    kd: Gain = 1.0
    torque_limit: Gain | None = None
    enabled: bool = True


class PDControllerSpec(_ControllerBase):
    """PD control (thesis eq. 3.3 for a set point, 3.4 for tracking): ``τ = −kp e − kd ė``."""
    type: Literal["pd"]


class ComputedTorqueControllerSpec(_ControllerBase):
    """Computed torque / feedback linearization: ``τ = M (q̈_d − kd ė − kp e) + b``; here kp (1/s²) and kd (1/s)
    are the gains of the error dynamics ë + kd ė + kp e = 0. Needs every joint controlled. ``model_gravity``:
    whether b includes gravity."""
    type: Literal["computed_torque"]
    kp: Gain = 100.0
    kd: Gain = 20.0
    model_gravity: bool = True


class CustomParameters(Strict):
    """Adapted parameters written as linear combinations of the standard ones (``core.control.parameters``):
    ``inertial`` maps each parameter's name to an expression for M q̈_r + C q̇_r, ``gravity`` (optional, used only
    when gravity is modelled) to one for g(q). An expression uses the safe language of joint-space constraints
    (numbers, ``+ - * / **``, ``pi``, ``sqrt`` …) with the standard parameters ``<body>.<p>`` as its variables, p
    one of ``m hx hy hz Ixx Iyy Izz Ixy Ixz Iyz`` (mass; first moment h = m c; rotational inertia about the
    body's joint origin in body axes, e.g. ``Izz = I_c,zz + m (c_x² + c_y²)``), and must be linear in them:
    Slotine & Li's ``a1 = upper.Izz + effector.Izz + 1.0**2 * effector.m``."""
    type: Literal["custom"]
    inertial: Annotated[dict[Name, Annotated[str, Field(min_length=1, max_length=2000)]],
                        Field(min_length=1, max_length=1000)]
    gravity: Annotated[dict[Name, Annotated[str, Field(min_length=1, max_length=2000)]],
                       Field(max_length=1000)] = Field(default_factory=dict)


GainMatrix = Union[Annotated[float, Field(gt=0)], list[float], list[list[float]]]
"""Γ: a scalar, one value per adapted parameter (a diagonal) or a full symmetric positive-definite matrix."""


class SlotineLiControllerSpec(_ControllerBase):
    """Slotine–Li adaptive control (thesis eq. 3.17, 3.21): ``τ = −kd s + Y_p â``, ``â̇ = −eta Γ Y_pᵀ s``. Needs
    every joint controlled. ``parameters`` chooses what is adapted: ``"base"`` (the default: the arm's
    identifiable base parameters, found numerically), ``"standard"`` (ten per link: m, hx, hy, hz, Ixx, Iyy,
    Izz, Ixy, Ixz, Iyz) or ``{"type": "custom", …}`` (linear expressions of those; Slotine & Li's a1…a4 in the two
    arm scenes); ``python -m core parameters SCENE`` prints them. ``gamma``: the shape Γ of the adaptation gain
    (default the identity, so the gain is eta·1 as in the thesis). The parameters start at zero
    (``initial_parameters: "zero"``), at the arm's true values mapped to the parameterization (``"model"``), or
    at a given list (one per adapted parameter). ``model_gravity``: whether Y includes gravity; the thesis's
    choice, and the default, is false (gravity unmodelled: an external force the compensator cannot
    represent)."""
    type: Literal["slotine_li"]
    eta: NonNegative = 0.01
    model_gravity: bool = False
    parameters: Union[Literal["standard", "base"], CustomParameters] = "base"
    gamma: GainMatrix | None = None
    initial_parameters: Union[Literal["zero", "model"], list[float]] = "zero"


class CovarianceSpec(Strict):
    """What the recursive rule does with P (thesis eq. 3.28 decays P to zero, and adaptation stops):
    ``as_written`` (Ṗ = −PΦΦᵀP); ``forgetting`` (bounded-gain forgetting, Ṗ = ρP − PΦΦᵀP with
    ρ = forgetting_factor (1 − tr P / tr P(0)) ≥ 0 while tr P < tr P(0)); ``floor`` (P = p_min·1 + Q with
    Q̇ = −QΦΦᵀQ: P never falls below ``floor`` p_min, which must be below eta = P(0))."""
    rule: Literal["as_written", "forgetting", "floor"] = "as_written"
    forgetting_factor: NonNegative = 0.0
    floor: NonNegative = 0.0

    @model_validator(mode="after")
    def _needs(self):
        if self.rule == "forgetting" and not self.forgetting_factor > 0:
            raise ValueError("rule 'forgetting' needs a forgetting_factor > 0 (1/s)")
        if self.rule == "floor" and not self.floor > 0:
            raise ValueError("rule 'floor' needs a floor > 0")
        return self


class MixtureControllerSpec(_ControllerBase):
    """Mixture-of-experts compensator M_N (thesis eq. 3.11–3.15): ``τ = −kd s + Σ g_i(q) (A_i q̈_r + B_i q̇_r)`` with
    normalized Gaussian gates of width ``sigma`` (rad) at ``centres`` (one configuration per expert), or, if
    only ``experts`` N is given, on a grid over the trajectory's joint-space region (see
    ``core.control.controllers.grid_centres``). ``rule``: ``gradient`` (eq. 3.20) or ``recursive`` (eq. 3.27–3.28,
    P(0) = eta·1), whose P is treated as ``covariance`` says (:class:`CovarianceSpec`; default as written)."""
    type: Literal["mixture"]
    experts: Annotated[int, Field(ge=1, le=64)] | None = None
    centres: list[list[float]] | None = None
    sigma: Positive = 0.5
    eta: NonNegative = 0.01
    rule: Literal["gradient", "recursive"] = "gradient"
    covariance: CovarianceSpec | None = None

    @model_validator(mode="after")
    def _gates(self):
        if self.experts is None and self.centres is None:
            raise ValueError("give the number of experts or their centres")
        if self.centres is not None:
            if self.experts is not None and self.experts != len(self.centres):
                raise ValueError(f"experts is {self.experts} but {len(self.centres)} centres are given")
            if not self.centres or any(len(c) != len(self.centres[0]) for c in self.centres):
                raise ValueError("centres must be a non-empty list of configurations of equal length")
        if self.covariance is not None:
            if self.rule != "recursive":
                raise ValueError("covariance applies to the recursive rule only (rule: recursive)")
            if self.covariance.rule == "floor" and not self.covariance.floor < self.eta:
                raise ValueError(f"covariance.floor ({self.covariance.floor:g}) must be below eta = P(0) "
                                 f"({self.eta:g})")
        return self


class ProjectedInverseDynamicsControllerSpec(_ControllerBase):
    """Projected inverse-dynamics control of a constrained system (Aghili eq. 45–48): ``joints`` are the
    independent coordinates θ the trajectory drives (required); the torque is the minimum-norm one over all
    joints. ``actuated`` lists the joints with actuators (default all; the others are passive, eq. 55–62).
    ``desired_force`` maps constraint names to the force (N, world) each should exert on its body point,
    controlled with the PI gains ``force_gain`` G_F and ``force_integral_gain`` G_I (eq. 51–52). kp (1/s²) and
    kd (1/s) are G_P and G_D."""
    type: Literal["projected_inverse_dynamics"]
    joints: Annotated[list[Name], Field(min_length=1)]
    kp: Gain = 100.0
    kd: Gain = 20.0
    actuated: list[Name] | None = None
    desired_force: dict[Name, Vec3] | None = None
    force_gain: NonNegative = 0.0
    force_integral_gain: NonNegative = 0.0


Controller = Annotated[Union[PDControllerSpec, ComputedTorqueControllerSpec, SlotineLiControllerSpec,
                             MixtureControllerSpec, ProjectedInverseDynamicsControllerSpec],
                       Field(discriminator="type")]


class ProgramEntry(Strict):
    """A control program (Kearney §4, :mod:`core.programs`): ``program`` names a registered program class
    (e.g. ``raibert_hopper``), ``parameters`` sets any of its parameters (numbers, lists of numbers, or names of
    bodies, joints, actuators and contacts), and ``constraints`` lists the named constraints of the scene the
    program may add and remove at run time (declare them with ``"enabled": false`` to start removed)."""
    name: Name
    program: Name
    parameters: Annotated[dict[Name, Union[float, Name, list[float]]], Field(max_length=64)] = Field(
        default_factory=dict)
    constraints: Annotated[list[Name], Field(max_length=64)] = Field(default_factory=list)


class ViewSettings(Strict):
    """How the studio first shows the scene: ``follow`` names a body the camera follows (a hopper that travels)."""
    follow: Name | None = None


class RobotInclude(Strict):
    """A robot description file included in the scene (:mod:`core.scene.robots`): ``file`` is a URDF file
    (``.urdf``) or a MuJoCo model (MJCF, ``.xml``; needs the ``mjcf`` extra, and its joints are its own, so
    ``base`` and ``base_pose`` do not apply), relative to the scene document's folder or absolute. Its links become bodies (before the
    document's own ``bodies``, which may hang from them), its mimic joints joint-space constraints; the document's
    constraints, forces, controllers, contacts and programs may name its bodies and joints. Overrides: ``base``
    (``fixed``: the root link welded to the world; ``floating``: a free joint), ``base_pose`` (the root link's
    ``[x, y, z, qw, qx, qy, qz]`` in the world), ``q0`` (initial coordinates of hinge and slider joints by name, rad
    or m) and ``inertia`` (``refuse`` an unphysical link inertia, or ``repair`` it to the nearest physical one)."""
    file: Annotated[str, Field(min_length=1, max_length=4096)]
    base: Literal["fixed", "floating"] = "fixed"
    base_pose: tuple[float, float, float, float, float, float, float] | None = None
    q0: Annotated[dict[Name, float], Field(max_length=10000)] = Field(default_factory=dict)
    inertia: Literal["refuse", "repair"] = "refuse"

    @field_validator("base_pose")
    @classmethod
    def _unit(cls, v):
        if v is not None:
            _unit_quaternion(v[3:])
        return v


class Scene(Strict):
    """A whole scene document."""
    format_version: Literal[1]
    name: Name
    description: str = ""
    gravity: Vec3 = (0.0, 0.0, -9.81)
    simulation: SimulationSettings = Field(default_factory=SimulationSettings)
    bodies: list[Body] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    forces: list[Force] = Field(default_factory=list)
    controllers: list[Controller] = Field(default_factory=list)
    contacts: list[ContactSpec] = Field(default_factory=list)
    ground: GroundSpec | None = None
    collisions: CollisionSpec | None = None
    programs: Annotated[list[ProgramEntry], Field(max_length=16)] = Field(default_factory=list)
    view: ViewSettings = Field(default_factory=ViewSettings)
    robot: RobotInclude | None = None
