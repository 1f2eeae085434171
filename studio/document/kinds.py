"""What kind each joint, constraint and force of a compiled model is, by the names the scene documents use
("hinge", "nail", "spring" …), read through the core's public face (``Model.joint_kinds``, its scene spec), never
the core's internal kind numbers.

Thread: any. Plain Python over a frozen ``core.Model``; results are cached per model.
"""
from __future__ import annotations

__all__ = ["joint_kinds", "constraint_kinds", "force_kinds", "MOVING_JOINTS"]

#: Joints with one coordinate that the plots show and controllers drive.
MOVING_JOINTS = ("hinge", "slider")

_CACHE: dict = {}


def _cached(model, key, make):
    entry = _CACHE.get((id(model), key))
    if entry is not None and entry[0] is model:
        return entry[1]
    value = make(model)
    if len(_CACHE) > 64:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[(id(model), key)] = (model, value)
    return value


def joint_kinds(model) -> tuple[str, ...]:
    """The type of each link's joint: fixed, hinge, slider, ball or free (:attr:`core.Model.joint_kinds`)."""
    return model.joint_kinds


def constraint_kinds(model) -> tuple[str, ...]:
    """The scene-document type of each compiled constraint (a hinge of the document compiles into two
    point-to-point constraints, both "hinge"); for a constraint the document does not declare (an included
    robot's mimic joints, or a model without a spec) "joint_space" or "point" by its compiled kind."""
    from core.joint_constraints import JointSpaceConstraint

    def make(m):
        spec = getattr(m, "spec", None)
        types = {c.name: c.type for c in (spec.constraints if spec is not None else ())}
        return tuple(types.get(getattr(c, "entity", c.name),
                               "joint_space" if isinstance(c, JointSpaceConstraint) else "point")
                     for c in m.constraints)
    return _cached(model, "constraints", make)


def force_kinds(model) -> tuple[str, ...]:
    """The scene-document type of each force element ("spring", "drag" …; "force" without a spec)."""
    def make(m):
        spec = getattr(m, "spec", None)
        types = {f.name: f.type for f in (spec.forces if spec is not None else ())}
        return tuple(types.get(f.name, "force") for f in m.forces)
    return _cached(model, "forces", make)
