"""Joints posed by hand: the control panel's Joints sliders (as MuJoCo's ``simulate`` has a Joint panel beside its
Control panel).

Thread: any; no Qt. :func:`joint_spans` lists a model's hinge and slider joints with the range each slider spans
(the joint's ``limits`` as the compiled model keeps them, :attr:`core.Model.limits` — the scene's ``limits``, a
URDF ``<limit>``, an MJCF ``range`` — else ±π for a hinge and ±1 m for a slider); ball and free joints have no
slider. :func:`pose` runs on the worker thread (the :class:`~studio.run.messages.CommandKind` ``POSE``): it sets
joints' positions in the simulation's state, their velocities zeroed, the other joints as they were. The energy
the pose adds or takes is booked with the state's corrections, so the energy audit's error is what it was before
the pose (a pose is no energy "from no source", and the next step is not refused as diverging). A joint moved off
a bound of its limits leaves that bound (its unilateral row is no longer active); the others (constraints,
contacts) are left to the next step, which stabilizes the constraints and closes the contacts that now touch.

:func:`initial_pose_edit` turns the current joints into the document's initial ones (``q0`` of the document's own
joints, the robot include's ``q0`` for those of an included robot file): one edit of plain data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

__all__ = ["JointSpan", "joint_spans", "pose", "initial_pose_edit", "robot_joint_names", "HINGE_SPAN", "SLIDER_SPAN", "SLIDING"]

HINGE_SPAN = math.pi      # rad: an unlimited hinge's slider spans ± this
SLIDER_SPAN = 1.0         # m: an unlimited slider joint's slider spans ± this
SLIDING = ("hinge", "slider")


@dataclass(frozen=True)
class JointSpan:
    """One joint's slider: ``name``, ``kind`` (hinge or slider), its entry ``q`` in q and ``v`` in q̇, the range
    ``low`` … ``high`` (rad or m) and whether that range is the joint's ``limited`` one."""
    name: str
    kind: str
    q: int
    v: int
    low: float
    high: float
    limited: bool

    @property
    def unit(self) -> str:
        return "rad" if self.kind == "hinge" else "m"

    def clamp(self, value: float) -> float:
        return min(self.high, max(self.low, float(value))) if self.limited else float(value)


def joint_spans(model) -> tuple[tuple[JointSpan, ...], tuple[str, ...]]:
    """``(spans, skipped)``: a :class:`JointSpan` for each hinge and slider joint of ``model`` (coordinate
    order) and the names of its ball and free joints (no slider)."""
    bounds = {lim.joint: tuple(map(float, lim.bounds)) for lim in getattr(model, "limits", ())}
    kinds = model.joint_kinds
    spans, skipped = [], []
    for i in range(model.n_links):
        if int(model.nv_j[i]) == 0:
            continue
        name, kind = model.joint_link_names[i], kinds[i]
        if kind not in SLIDING:
            skipped.append(name)
            continue
        default = HINGE_SPAN if kind == "hinge" else SLIDER_SPAN
        low, high = bounds.get(name, (-default, default))
        spans.append(JointSpan(name, kind, int(model.q_start[i]), int(model.v_start[i]), low, high,
                               name in bounds))
    return tuple(spans), tuple(skipped)


def pose(sim, positions: dict) -> None:
    """Worker thread. Set each joint named in ``positions`` (name → rad or m; clamped to its limits) in
    ``sim``'s state, its velocity zeroed; the energy this adds is booked as a correction (module docstring)."""
    spans = {s.name: s for s in joint_spans(sim.model)[0]}
    unknown = [name for name in positions if name not in spans]
    if unknown:
        raise KeyError(f"no hinge or slider joint {', '.join(map(repr, unknown))} in model {sim.model.name!r}")
    values = {name: spans[name].clamp(v) for name, v in positions.items()}
    bad = [name for name, v in values.items() if not math.isfinite(v)]
    if bad:
        raise ValueError(f"a joint's position must be a finite number: {', '.join(bad)}")
    old = sim.state
    before = float(sim.data.energy_total)
    new = old.copy()
    for name, value in values.items():
        s = spans[name]
        new.q[s.q] = value
        new.qd[s.v] = 0.0
    if new.active is not None:
        for lim in sim.model.limits:
            if lim.joint in values:
                for k, (row, bound) in enumerate(zip(lim.rows, lim.bounds)):
                    if values[lim.joint] != bound:
                        new.active[row] = False     # off this bound: its row no longer holds the joint there
    sim.state = new
    try:
        after = float(sim.data.energy_total)
    except Exception:
        sim.state = old                             # a pose the dynamics cannot evaluate is refused
        raise
    sim.state = replace(new, corrections=float(old.corrections) + (after - before))   # (states are values)


def initial_pose_edit(data: dict, robot_joints, model, q) -> tuple[list, str]:
    """Write the joints of ``model`` at ``q`` as the initial pose into ``data`` (a document as plain data,
    changed in place): ``q0`` of each of the document's own hinge and slider joints, and the robot include's
    ``q0`` for the joints of its robot file (``robot_joints``: their names). Returns ``(changes, text)``: the
    ``(path, value)`` pairs written and a description."""
    at = {s.name: s.clamp(round(float(q[s.q]), 9)) for s in joint_spans(model)[0]}
    changes = []
    for i, body in enumerate(data.get("bodies") or []):
        joint = body.get("joint") or {}
        name = joint.get("name") or body.get("name")
        if joint.get("type") in SLIDING and name in at:
            joint["q0"] = at.pop(name)
            changes.append((("bodies", i, "joint", "q0"), joint["q0"]))
    robot = data.get("robot")
    if robot is not None:
        mine = {name: v for name, v in at.items() if name in set(robot_joints)}
        if mine:
            robot["q0"] = {**(robot.get("q0") or {}), **mine}
            changes.append((("robot", "q0"), dict(robot["q0"])))
    n = len(changes) - (robot is not None and bool(changes) and changes[-1][0] == ("robot", "q0"))
    parts = ([f"{n} joint{'s' if n != 1 else ''}"] if n else []) + \
        (["the robot's"] if changes and changes[-1][0] == ("robot", "q0") else [])
    return changes, f"Set the initial pose ({' and '.join(parts)})"


def robot_joint_names(robot) -> list[str]:
    """The hinge and slider joints of an included robot file's scene (``studio.document.robot.included_robot``)."""
    if robot is None:
        return []
    return [b.joint.name or b.name for b in robot.bodies if getattr(b.joint, "type", None) in SLIDING]
