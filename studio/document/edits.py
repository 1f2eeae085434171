"""Edits of a scene spec as pure functions: each takes a validated ``core.Scene`` and returns a new validated one,
or raises ``core.SceneError`` whose problems name the JSON path of what is wrong.

Thread: any; no Qt. :mod:`studio.qt.document.document` wraps each edit in an undoable command.

Items are addressed by *paths*, tuples into the document: ``()`` the scene itself, ``("simulation",)``,
``("bodies", 2)``, ``("bodies", 2, "joint")``, ``("bodies", 2, "shapes", 0)``, ``("bodies", 2, "points", "tip")``,
``("constraints", 0)``, ``("forces", 1)``, ``("contacts", 0)`` (and ``("controllers", k)`` once the schema has
them). A field is the
item's path plus the field name, e.g. ``("bodies", 2, "joint", "axis")``.

Every edit re-validates the whole document (schema, cross references, and compilation, which catches a joint that
moves no mass), so the spec the GUI holds is always one the worker can run.
"""
from __future__ import annotations

import copy
import re

import core
from core.scene import parse_spec
from core.scene.io import Problem, SceneError

from studio.document.kinds import MOVING_JOINTS, joint_kinds

__all__ = ["to_data", "validate", "compiled", "get", "resolve", "set_value", "rename", "delete", "duplicate", "add",
           "json_path", "field_problems", "unique_name", "item_name", "change_type", "use_controller", "ADDABLE",
           "SECTIONS", "CONTROLLER_TYPES", "TRAJECTORY_TYPES", "move_spring_end", "move_nail", "unpack_robot"]

SECTIONS = ("bodies", "constraints", "forces", "controllers", "contacts")
_BODY_REFS = ("body", "body_a", "body_b")
_POINT_OF = {"body": "point", "body_a": "point_a", "body_b": "point_b"}


# ---- documents as plain data ----------------------------------------------------------------------------------
def to_data(spec) -> dict:
    """The spec as a plain JSON-like dict (every field, defaults included)."""
    return spec.model_dump(mode="json")


_COMPILED: list = []          # (spec, model) of the latest validations, newest last


def validate(data: dict, source: str = "<edit>"):
    """Parse and compile ``data``; the validated spec, or ``SceneError`` listing every problem. The model compiled
    on the way is kept for :func:`compiled` (so the worker need not compile the edited scene again)."""
    spec = parse_spec(data, source)
    model = core.compile_scene(spec, source)
    _COMPILED.append((spec, model))
    del _COMPILED[:-16]
    return spec


def compiled(spec):
    """The model :func:`validate` compiled from ``spec`` (this very object), or None."""
    for s, model in reversed(_COMPILED):
        if s is spec:
            return model
    return None


def get(data, path: tuple):
    for key in path:
        data = data[key]
    return data


def resolve(spec, path: tuple):
    """The spec object (a schema node, or a point's coordinates) at ``path``."""
    node = spec
    for key in path:
        node = node[key] if isinstance(key, int) or isinstance(node, dict) else getattr(node, key)
    return node


def json_path(path: tuple) -> str:
    """``("bodies", 2, "joint", "axis")`` → ``$.bodies[2].joint.axis``."""
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)


def field_problems(error: SceneError, path: tuple) -> list[str]:
    """The messages of ``error`` that concern the field at ``path`` (or everything, if none points there)."""
    target = json_path(path)
    mine, other = [], []
    for p in error.problems:
        where = re.sub(r" \(body '[^']*'\)$", "", p.path)
        text = p.message + (f" (got {p.value!r})" if p.has_value and where != target else "")
        if where == target or where.startswith(target + ".") or where.startswith(target + "["):
            mine.append(text)
        else:
            other.append(f"{where}: {text}")
    return mine or other


def unique_name(taken, base: str) -> str:
    taken = set(taken)
    base = re.sub(r"_\d+$", "", base) or "item"
    if base not in taken:
        return base
    n = 2
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def item_name(data: dict, path: tuple) -> str | None:
    """The user-facing name of the item at ``path`` (None for unnamed items such as shapes)."""
    if len(path) == 4 and path[2] == "points":
        return path[3]
    if len(path) == 3 and path[2] == "joint":
        joint = get(data, path)
        return joint.get("name") or get(data, path[:2])["name"]
    node = get(data, path) if path else data
    return node.get("name") if isinstance(node, dict) else None


def _names(data: dict, section: str) -> list[str]:
    return [item.get("name") for item in data.get(section) or []]


def _joint_names(data: dict) -> list[str]:
    return [b["joint"].get("name") or b["name"] for b in data["bodies"]]


# ---- editing a field ------------------------------------------------------------------------------------------
def set_value(spec, path: tuple, value):
    """Set the field at ``path`` to ``value`` (plain JSON-like data; None removes an optional field)."""
    data = to_data(spec)
    parent = get(data, path[:-1])
    if isinstance(parent, list) and not isinstance(path[-1], int):
        raise SceneError([Problem(json_path(path), "not a field")])
    parent[path[-1]] = value
    return validate(data)


# ---- renaming -------------------------------------------------------------------------------------------------
def rename(spec, path: tuple, new: str):
    """Rename the item at ``path``, updating every reference to it (parents, constraint and force ends, joints
    named by actuators and joint springs, named points)."""
    data = to_data(spec)
    old = item_name(data, path)
    if old is None:
        raise SceneError([Problem(json_path(path), "this item has no name")])
    if new == old:
        return validate(data)
    if len(path) == 2 and path[0] == "bodies":
        body = get(data, path)
        body["name"] = new
        for b in data["bodies"]:
            if b.get("parent") == old:
                b["parent"] = new
        for item in _entities(data):
            for field in _BODY_REFS:
                if item.get(field) == old:
                    item[field] = new
        if not body["joint"].get("name"):                # the joint was named after its body
            _rename_joint_refs(data, old, new)
    elif len(path) == 3 and path[2] == "joint":
        get(data, path)["name"] = new
        _rename_joint_refs(data, old, new)
    elif len(path) == 4 and path[2] == "points":
        body = get(data, path[:2])
        points = body["points"]
        if new in points:
            raise SceneError([Problem(json_path(path[:3] + (new,)), f"body {body['name']!r} already has a point "
                                      "of that name", new, True)])
        body["points"] = {(new if k == old else k): v for k, v in points.items()}
        for item in _entities(data):
            for field, point_field in _POINT_OF.items():
                if item.get(field) == body["name"] and item.get(point_field) == old:
                    item[point_field] = new
        for item in data.get("contacts") or []:           # a contact names its body's points in a list
            if item.get("body") == body["name"] and isinstance(item.get("points"), list):
                item["points"] = [new if p == old else p for p in item["points"]]
    else:
        get(data, path)["name"] = new
        if path[0] == "constraints":                        # a controller's desired force names its constraint
            for item in data.get("controllers") or []:
                forces = item.get("desired_force")
                if isinstance(forces, dict) and old in forces:
                    item["desired_force"] = {(new if k == old else k): v for k, v in forces.items()}
    return validate(data)


def _entities(data: dict):
    for section in ("constraints", "forces", "controllers", "contacts"):
        yield from data.get(section) or []


def _rename_joint_refs(data: dict, old: str, new: str) -> None:
    for item in _entities(data):
        if item.get("joint") == old:
            item["joint"] = new
        for key in ("joints", "actuated"):                  # controllers name their joints in lists
            if isinstance(item.get(key), list):
                item[key] = [new if j == old else j for j in item[key]]


# ---- deleting -------------------------------------------------------------------------------------------------
def delete(spec, path: tuple):
    """Delete the item at ``path`` and whatever cannot exist without it; ``(new spec, [what else went])``."""
    data = to_data(spec)
    gone: list[str] = []
    if len(path) == 2 and path[0] == "bodies":
        doomed = _subtree(data, get(data, path)["name"])
        joints = {b["joint"].get("name") or b["name"] for b in data["bodies"] if b["name"] in doomed}
        gone += [f"body {n!r}" for n in doomed[1:]]
        data["bodies"] = [b for b in data["bodies"] if b["name"] not in doomed]
        _drop_entities(data, gone, lambda item: any(item.get(f) in doomed for f in _BODY_REFS)
                       or item.get("joint") in joints or bool(joints & set(item.get("joints") or ())))
    elif len(path) == 3 and path[2] == "joint":
        raise SceneError([Problem(json_path(path), "every body has a joint: change its type to 'fixed', or delete "
                                  "the body")])
    elif len(path) == 4 and path[2] == "points":
        body = get(data, path[:2])
        del body["points"][path[3]]
        _drop_entities(data, gone, lambda item: any(item.get(f) == body["name"] and item.get(p) == path[3]
                                                     for f, p in _POINT_OF.items()))
        for item in data.get("contacts") or []:           # its contacts lose that point (and go with their last)
            if item.get("body") == body["name"] and isinstance(item.get("points"), list):
                item["points"] = [p for p in item["points"] if p != path[3]]
        _drop_entities(data, gone, lambda item: item.get("points") == [])
    else:
        del get(data, path[:-1])[path[-1]]
    _drop_desired_forces(data)
    return validate(data), gone


def _subtree(data: dict, root: str) -> list[str]:
    names, frontier = [root], [root]
    while frontier:
        children = [b["name"] for b in data["bodies"] if b.get("parent") in frontier]
        names += children
        frontier = children
    return names


def _drop_desired_forces(data: dict) -> None:
    """A controller's desired forces may name only constraints that exist."""
    names = {c.get("name") for c in data.get("constraints") or []}
    for item in data.get("controllers") or []:
        forces = item.get("desired_force")
        if isinstance(forces, dict):
            kept = {k: v for k, v in forces.items() if k in names}
            item["desired_force"] = kept or None


def _drop_entities(data: dict, gone: list, doomed) -> None:
    for section in ("constraints", "forces", "controllers", "contacts"):
        items = data.get(section)
        if not items:
            continue
        gone += [f"{section[:-1]} {item.get('name')!r}" for item in items if doomed(item)]
        data[section] = [item for item in items if not doomed(item)]


# ---- duplicating ----------------------------------------------------------------------------------------------
def duplicate(spec, path: tuple):
    """Copy the item at ``path`` next to it under a new name; ``(new spec, path of the copy)``."""
    data = to_data(spec)
    if len(path) == 4 and path[2] == "points":
        points = get(data, path[:3])
        name = unique_name(points, path[3])
        points[name] = list(points[path[3]])
        return validate(data), path[:3] + (name,)
    if len(path) != 2 and not (len(path) == 4 and path[2] == "shapes"):
        raise SceneError([Problem(json_path(path), "only bodies, shapes, points, constraints and forces can be "
                                  "duplicated")])
    items = get(data, path[:-1])
    item = copy.deepcopy(items[path[-1]])
    section = path[0]
    if "name" in item and len(path) == 2:
        item["name"] = unique_name(_names(data, section), item["name"])
    if section == "bodies" and len(path) == 2 and item["joint"].get("name"):
        item["joint"]["name"] = unique_name(_joint_names(data), item["joint"]["name"])
    items.insert(path[-1] + 1, item)
    return validate(data), path[:-1] + (path[-1] + 1,)


# ---- adding ---------------------------------------------------------------------------------------------------
#: What can be added: (section, kind) → menu label.
ADDABLE = {
    ("bodies", "free"): "Body on a free joint", ("bodies", "hinge"): "Body on a hinge",
    ("shapes", "box"): "Box shape", ("shapes", "sphere"): "Sphere shape", ("shapes", "cylinder"): "Cylinder shape",
    ("shapes", "capsule"): "Capsule shape", ("points", "point"): "Named point",
    ("constraints", "nail"): "Nail", ("constraints", "point_to_point"): "Point-to-point",
    ("constraints", "hinge"): "Hinge (two points)", ("constraints", "point_on_line"): "Point on line",
    ("constraints", "point_on_plane"): "Point on plane", ("constraints", "point_velocity"): "Point velocity",
    ("constraints", "joint_space"): "Joint-space expression Φ(q) = value",
    ("forces", "spring"): "Spring", ("forces", "joint_spring"): "Joint spring", ("forces", "drag"): "Drag",
    ("forces", "actuator"): "Actuator", ("forces", "point_force"): "Point force",
}
if "contacts" in core.Scene.model_fields:
    ADDABLE[("contacts", "ground")] = "Ground contact (the body's corners, spheres and caps)"


def add(spec, section: str, kind: str, body: str | None = None):
    """Add a new item of ``kind`` to ``section`` (on ``body``, the selected body, where it needs one);
    ``(new spec, path of the new item)``."""
    data = to_data(spec)
    bodies = data["bodies"]
    names = [b["name"] for b in bodies]
    if body is None and section in ("shapes", "points", "constraints", "forces", "contacts") and names:
        body = names[-1]
    if section == "controllers":
        data.setdefault("controllers", []).append(_controller_template(data, kind))
        return validate(data), ("controllers", len(data["controllers"]) - 1)
    if section != "bodies" and body is None:
        raise SceneError([Problem("$.bodies", "add a body first")])
    if section == "bodies":
        parent = body if (kind == "hinge" and body is not None) else "world"
        joint = {"type": kind}
        if kind == "hinge":
            joint.update(axis=[0.0, 0.0, 1.0])
        new = {"name": unique_name(names, "body"), "parent": parent, "joint": joint,
               "shapes": [{"type": "box", "size": [0.2, 0.2, 0.2], "mass": 1.0}]}
        bodies.append(new)
        return validate(data), ("bodies", len(bodies) - 1)
    i = names.index(body)
    if section == "shapes":
        shape = {"type": kind, **{"box": {"size": [0.2, 0.2, 0.2]}, "sphere": {"radius": 0.1}}.get(
            kind, {"radius": 0.05, "length": 0.3})}
        if bodies[i].get("inertial") is None:
            shape["mass"] = 1.0
        bodies[i]["shapes"].append(shape)
        return validate(data), ("bodies", i, "shapes", len(bodies[i]["shapes"]) - 1)
    if section == "points":
        name = unique_name(bodies[i]["points"], "point")
        bodies[i]["points"][name] = [0.0, 0.0, 0.0]
        return validate(data), ("bodies", i, "points", name)
    if section == "contacts":
        item = {"name": unique_name(_names(data, "contacts"), "ground"), "body": body}
        data.setdefault("contacts", []).append(item)
        try:
            return validate(data), ("contacts", len(data["contacts"]) - 1)
        except SceneError:                       # its shapes give no points (a cylinder): its origin, to edit
            item["points"] = [[0.0, 0.0, 0.0]]
            return validate(data), ("contacts", len(data["contacts"]) - 1)
    item = _entity_template(data, section, kind, body)
    data.setdefault(section, []).append(item)
    return validate(data), (section, len(data[section]) - 1)


def _entity_template(data: dict, section: str, kind: str, body: str) -> dict:
    name = unique_name(_names(data, section), kind)
    origin = [0.0, 0.0, 0.0]
    templates = {
        "nail": {"body": body, "point": origin},
        "point_to_point": {"body_a": body, "point_a": origin, "body_b": "world", "point_b": origin},
        "hinge": {"body_a": body, "body_b": "world", "anchor": origin, "axis": [0.0, 0.0, 1.0]},
        "point_on_line": {"body": body, "point": origin, "origin": origin, "direction": [1.0, 0.0, 0.0]},
        "point_on_plane": {"body": body, "point": origin, "origin": origin, "normal": [0.0, 0.0, 1.0]},
        "point_velocity": {"body": body, "point": origin},
        "spring": {"body_a": body, "point_a": origin, "body_b": "world", "point_b": origin, "stiffness": 10.0},
        "drag": {"body": body, "linear": 0.1},
        "point_force": {"body": body, "force": [0.0, 0.0, 1.0]},
    }
    if kind == "joint_space":                    # the joint held where it starts: Φ(q) = q_joint
        joint = _movable_joint(data, body)
        q0 = next(float(b["joint"].get("q0") or 0.0) for b in data["bodies"] if (b["joint"].get("name") or b["name"])
                  == joint)
        return {"type": kind, "name": name, "expression": joint, "value": q0}
    if kind in ("actuator", "joint_spring"):
        joint = _movable_joint(data, body)
        return {"type": kind, "name": name, "joint": joint,
                **({"limit": 10.0} if kind == "actuator" else {"stiffness": 1.0})}
    return {"type": kind, "name": name, **templates[kind]}


def _movable_joint(data: dict, body: str) -> str:
    """The joint of ``body`` if it is a hinge or slider, else the first such joint of the scene."""
    candidates = sorted(data["bodies"], key=lambda b: b["name"] != body)
    for b in candidates:
        if b["joint"]["type"] in ("hinge", "slider"):
            return b["joint"].get("name") or b["name"]
    raise SceneError([Problem("$.bodies", "no hinge or slider joint to act on")])


# ---- changing the type of a joint or shape --------------------------------------------------------------------
_JOINT_COMMON = ("name", "position", "orientation")
_SHAPE_COMMON = ("position", "orientation", "axis", "mass", "density", "color")
_SHAPE_SIZE = {"box": {"size": [0.2, 0.2, 0.2]}, "sphere": {"radius": 0.1},
               "cylinder": {"radius": 0.05, "length": 0.3}, "capsule": {"radius": 0.05, "length": 0.3}}


def change_type(spec, path: tuple, new_type: str):
    """Turn the joint or shape at ``path`` into another type, keeping its placement (and a shape's mass and
    colour; a hinge's axis and coordinates when it becomes a slider and back)."""
    data = to_data(spec)
    node = get(data, path)
    old_type = node.get("type")
    if new_type == old_type:
        return validate(data)
    if len(path) == 3 and path[2] == "joint":
        new = {"type": new_type, **{k: node[k] for k in _JOINT_COMMON if node.get(k) is not None}}
        if {old_type, new_type} <= {"hinge", "slider"}:
            new.update(axis=node["axis"], q0=node["q0"], qd0=node["qd0"])
    elif len(path) == 4 and path[2] == "shapes":
        new = {"type": new_type, **{k: node[k] for k in _SHAPE_COMMON if node.get(k) is not None},
               **_SHAPE_SIZE[new_type]}
        if new_type in ("box", "sphere"):
            new.pop("axis", None)
    elif len(path) == 3 and path[0] == "controllers" and path[2] == "trajectory":
        new = _trajectory(data, path, node, new_type)
    else:
        raise SceneError([Problem(json_path(path + ("type",)), "only joints, shapes and trajectories can change "
                                  "type")])
    get(data, path[:-1])[path[-1]] = new
    return validate(data)


# ---- controllers (when the core's schema has them) ------------------------------------------------------------
#: Controllers that can be added, by type (empty for a core without controllers).
CONTROLLER_TYPES = {"pd": "PD", "computed_torque": "Computed torque", "slotine_li": "Slotine–Li (adaptive)",
                    "mixture": "Mixture of experts M_N", "projected_inverse_dynamics": "Projected inverse dynamics"} \
    if "controllers" in core.Scene.model_fields else {}
ADDABLE.update({("controllers", kind): label for kind, label in CONTROLLER_TYPES.items()})


def _controller_template(data: dict, kind: str) -> dict:
    """A controller holding the hinge and slider joints where they start (a set point), in coordinate order."""
    model = core.compile_scene(parse_spec(data))
    kinds = joint_kinds(model)
    joints = [model.joint_link_names[i] for i in range(model.n_links) if kinds[i] in MOVING_JOINTS]
    if not joints:
        raise SceneError([Problem("$.bodies", "controllers drive hinge and slider joints; the scene has none")])
    if kind == "projected_inverse_dynamics":
        joints = joints[:1]
    q = [float(model.q0[model.q_slice(j).start]) for j in joints]
    item = {"type": kind, "name": unique_name(_names(data, "controllers"), kind), "joints": joints,
            "trajectory": {"type": "set_point", "q": q}}
    if kind == "mixture":
        item["experts"] = 4
    return item


#: The desired motions a controller can follow, by type.
TRAJECTORY_TYPES = {"set_point": "set point", "sinusoid": "sinusoids (thesis eq. 3.38)",
                    "point_to_point": "point to point (eq. 3.40)"}


def _trajectory(data: dict, path: tuple, old: dict, kind: str) -> dict:
    """A trajectory of ``kind`` for the controller at ``path[:2]``, starting where the old one starts (the
    set point, the sinusoids' offsets or the first point)."""
    if kind not in TRAJECTORY_TYPES:
        raise SceneError([Problem(json_path(path + ("type",)), f"unknown trajectory type; expected one of: "
                                  f"{', '.join(TRAJECTORY_TYPES)}", kind, True)])
    start = old.get("q") or old.get("alpha") or (old.get("points") or [None])[0]
    if not start:
        controller = get(data, path[:2])
        model = core.compile_scene(parse_spec(data))
        joints = controller.get("joints") or [j for j, k in zip(model.joint_link_names, joint_kinds(model))
                                              if k in MOVING_JOINTS]
        start = [float(model.q0[model.q_slice(j).start]) for j in joints]
    start = [float(x) for x in start]
    n = len(start)
    new = {"type": kind, "time_scale": old.get("time_scale", 1.0)}
    if kind == "set_point":
        new["q"] = start
    elif kind == "sinusoid":
        new.update(alpha=start, beta=[0.5] * n, omega=[1.0] * n)
    else:
        new.update(points=[start, [x + 0.5 for x in start]], durations=2.0)
    return new


def use_controller(spec, name: str | None):
    """Enable the controller ``name`` and disable the others (None: disable them all)."""
    data = to_data(spec)
    for item in data.get("controllers") or []:
        item["enabled"] = item["name"] == name
    return validate(data)


# ---- an included robot's links, made the document's own ---------------------------------------------------------
def unpack_robot(spec):
    """The document with its ``robot`` include replaced by the robot's bodies and constraints, with the include's
    overrides applied (base, base pose, q0, inertia policy): every link then is edited one by one, and the
    document no longer follows the robot file (:func:`core.scene.robots.expand`)."""
    if getattr(spec, "robot", None) is None:
        raise SceneError([Problem("$.robot", "the scene includes no robot file")])
    from core.scene.robots import expand
    return validate(to_data(expand(spec)))


def add_ground(spec):
    """The document with a ground (``"ground": {}``: the plane through the origin against gravity, which every
    body's touching shapes rest on; :mod:`core.scene.collision`); refused if it has one already."""
    if spec.ground is not None:
        raise SceneError([Problem("$.ground", "the scene has a ground already")])
    data = to_data(spec)
    data["ground"] = {}
    return validate(data)


def add_collisions(spec):
    """The document with ``"collisions": {}`` (every two shapes that touch collide: :mod:`core.scene.collision`);
    refused if it has them already."""
    if spec.collisions is not None:
        raise SceneError([Problem("$.collisions", "the scene's shapes collide already")])
    data = to_data(spec)
    data["collisions"] = {}
    return validate(data)


# ---- handles dragged in the viewport ----------------------------------------------------------------------------
def move_spring_end(spec, name: str, end: str, body: str, point):
    """Put end ``end`` ("a" or "b") of spring ``name`` on ``body`` ("world" for a world point) at ``point``
    (body frame, or world coordinates); ``(new spec, path of the spring)``."""
    data = to_data(spec)
    forces = data.get("forces") or []
    k = next((i for i, f in enumerate(forces) if f.get("name") == name and f.get("type") == "spring"), None)
    if k is None:
        raise SceneError([Problem("$.forces", f"no spring named {name!r}")])
    if end not in ("a", "b"):
        raise SceneError([Problem(json_path(("forces", k)), f"a spring has ends 'a' and 'b', not {end!r}")])
    forces[k][f"body_{end}"] = body
    forces[k][f"point_{end}"] = [round(float(x), 6) for x in point]
    return validate(data), ("forces", k)


def move_nail(spec, name: str, position):
    """Put nail ``name`` at world ``position`` (where its path, if it has one, starts); ``(new spec, path of the
    nail's position)``."""
    data = to_data(spec)
    constraints = data.get("constraints") or []
    k = next((i for i, c in enumerate(constraints) if c.get("name") == name and c.get("type") == "nail"), None)
    if k is None:
        raise SceneError([Problem("$.constraints", f"no nail named {name!r}")])
    constraints[k]["position"] = [round(float(x), 6) for x in position]
    return validate(data), ("constraints", k, "position")
