"""Units of the scene document's fields, as the inspector shows them (SI, angles in radians; see
``core/scene/schema.py``).

Thread: any. Plain data.
"""
from __future__ import annotations

__all__ = ["unit_of"]

_UNITS = {
    "gravity": "m/s²", "position": "m", "size": "m", "radius": "m", "length": "m", "mass": "kg",
    "density": "kg/m³", "com": "m", "inertia": "kg·m²", "anchor": "m", "spacing": "m", "origin": "m",
    "stabilization": "1/s", "max_force": "N", "max_deviation": "m", "force": "N", "start": "s", "stop": "s",
    "rest_length": "m", "linear": "N·s/m", "quadratic": "N·s²/m²", "frequency": "Hz", "phase": "rad",
    "amplitude": "m", "velocity": "m/s", "dt": "s", "duration": "s", "rho": "", "point": "m", "point_a": "m",
    "point_b": "m", "rest_speed": "m/s",
}

# (item type, field) → unit, where the field's unit depends on the item
_BY_TYPE = {
    ("spring", "stiffness"): "N/m", ("spring", "damping"): "N·s/m",
    ("joint_spring", "stiffness"): "N·m/rad", ("joint_spring", "damping"): "N·m·s/rad",
    ("joint_spring", "rest"): "rad",
    ("hinge", "q0"): "rad", ("hinge", "qd0"): "rad/s", ("slider", "q0"): "m", ("slider", "qd0"): "m/s",
    ("hinge", "armature"): "kg·m²", ("slider", "armature"): "kg",
    ("ball", "qd0"): "rad/s", ("free", "q0"): "m, –", ("free", "qd0"): "rad/s, m/s",
    ("actuator", "torque"): "N·m or N", ("actuator", "limit"): "N·m or N",
    ("point_velocity", "max_deviation"): "m/s",
}


def unit_of(item_type: str | None, field: str) -> str:
    """The unit of ``field`` of an item whose ``type`` is ``item_type`` ('' for dimensionless or unknown)."""
    return _BY_TYPE.get((item_type, field), _UNITS.get(field, ""))
