"""The typed schema of a scene document (``format_version`` 1).

A scene is pure data (never code). Its top-level sections are::

    {
      "format_version": 1,
      "name": "three_link_arm", "description": "…",
      "gravity": [0, -9.81, 0],
      "simulation": {"dt": 0.001, "integrator": "rk4", "duration": 10},
      "bodies": [ {"name": …, "parent": "world" | <body>, "joint": {…}, "shapes": […], "inertial": {…},
                   "points": {"tip": [1, 0, 0]}}, … ]
    }

Later sections (constraints, forces, controllers, events) are added as further lists of discriminated unions on
``type``, in the same way as joints and shapes here. Every model forbids unknown fields, so a typo is an error.

Units are SI; angles in radians; quaternions are ``[w, x, y, z]``; colours are RGB or RGBA in [0, 1].
"""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FORMAT_VERSION = 1

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$")]
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
    shape frame's z axis, or along ``axis`` (a direction in the body frame) if that is given instead."""
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat | None = None
    axis: Vec3 | None = None
    mass: Positive | None = None
    density: Positive | None = None
    color: Colour = (0.6, 0.6, 0.65)

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


Shape = Annotated[Union[Box, Sphere, Cylinder, Capsule], Field(discriminator="type")]


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
        Ixx, Iyy, Izz, Ixy, Ixz, Iyz = v
        I = np.array([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]])
        eig = np.linalg.eigvalsh(I)
        scale = max(1.0, float(abs(eig).max()))
        if eig.min() < -1e-12 * scale:
            raise ValueError(f"inertia must be positive semi-definite; its principal moments are {eig.round(12).tolist()}")
        a, b, c = eig
        if a + b < c - 1e-9 * scale:
            raise ValueError(f"principal moments {eig.round(12).tolist()} violate the triangle inequality "
                             "(no physical body has them)")
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


class HingeJoint(_JointBase):
    """Rotation by ``q0`` (rad) about ``axis`` (joint frame); ``qd0`` in rad/s."""
    type: Literal["hinge"]
    axis: Vec3 = (0.0, 0.0, 1.0)
    q0: float = 0.0
    qd0: float = 0.0

    _check_axis = field_validator("axis")(lambda cls, v: _nonzero_axis(v))


class SliderJoint(_JointBase):
    """Translation by ``q0`` (m) along ``axis`` (joint frame); ``qd0`` in m/s."""
    type: Literal["slider"]
    axis: Vec3 = (0.0, 0.0, 1.0)
    q0: float = 0.0
    qd0: float = 0.0

    _check_axis = field_validator("axis")(lambda cls, v: _nonzero_axis(v))


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
class Body(Strict):
    """A rigid link: its joint to ``parent`` ("world" or another body), its shapes, and either the shapes' mass
    properties (each shape gives mass or density) or an explicit ``inertial`` (then shapes are visual only)."""
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
            bad = [i for i, s in enumerate(self.shapes) if s.mass is None and s.density is None]
            if bad:
                raise ValueError(f"shapes {bad} give neither mass nor density, and the body has no inertial")
            if not self.shapes:
                raise ValueError("a body needs shapes with mass or density, or an explicit inertial")
        return self


class SimulationSettings(Strict):
    """Defaults for runs of this scene (the command line and the studio may override them)."""
    dt: Positive = 0.001
    integrator: Literal["rk4", "semi_implicit_euler"] = "rk4"
    duration: Positive = 10.0


class Scene(Strict):
    """A whole scene document."""
    format_version: Literal[1]
    name: Name
    description: str = ""
    gravity: Vec3 = (0.0, 0.0, -9.81)
    simulation: SimulationSettings = Field(default_factory=SimulationSettings)
    bodies: list[Body] = Field(default_factory=list)
