"""Reading, validating and writing scene documents.

Validation reports *every* problem at once, each with the JSON path of the offending value, the value, and what
was expected; :class:`SceneError` carries them (the first :data:`~core.scene.limits.MAX_PROBLEMS`, and how many
more). It never raises anything else, whatever the bytes or the JSON: the limits of :mod:`core.scene.limits`
(size, encoding, nesting, counts, number ranges) are checked first, and an unexpected error inside the checks is
itself reported as a problem. Writing is atomic (temporary file in the same folder, fsync, then
rename), so a crash never leaves a half-written scene, and ``read_spec(save_spec(x)) == x``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..fileio import atomic_write_text, read_regular_file
from . import limits
from .limits import MAX_DOCUMENT_BYTES, MAX_PROBLEMS, name_list
from .paths import ROBOT_SECTIONS, ROBOT_SUFFIXES, relative_file, remap_path, resolve_file
from .schema import FORMAT_VERSION, Scene

__all__ = ["Problem", "SceneError", "parse_spec", "read_document", "read_spec", "save_spec", "spec_to_json",
           "internal_problem", "relocated", "robot_document", "use_robot_reader"]

_ROBOT_READER: list = []


def use_robot_reader(read) -> None:
    """Set how an included robot file is read (``read(include) -> Scene``): :mod:`core.scene.robots` does so when
    it is imported (``import core.scene`` imports it). The robot readers build on this module (its problems and
    :func:`parse_spec`), so this module is handed their entry point instead of importing them."""
    _ROBOT_READER[:] = [read]


def _robot_reader():
    if not _ROBOT_READER:
        raise RuntimeError("no robot reader: import core.scene (core.scene.robots registers it)")
    return _ROBOT_READER[0]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document: where (JSON path such as ``$.bodies[2].joint.axis``), what, and the value."""
    path: str
    message: str
    value: Any = None
    has_value: bool = False

    def __str__(self) -> str:
        shown = f" (got {_short(self.value)})" if self.has_value else ""
        return f"{self.path}: {self.message}{shown}"


class SceneError(ValueError):
    """A scene document that cannot be used; ``problems`` lists what is wrong with it — at most
    :data:`~core.scene.limits.MAX_PROBLEMS` of them, ``omitted`` counts the rest."""

    def __init__(self, problems: list[Problem], source: str = "<scene>", omitted: int = 0):
        problems = list(problems)
        self.problems = problems[:MAX_PROBLEMS]
        self.omitted = omitted + len(problems) - len(self.problems)
        self.source = source
        lines = "\n".join(f"  {p}" for p in self.problems)
        more = f"\n  and {self.omitted} more problem(s)" if self.omitted else ""
        total = len(self.problems) + self.omitted
        super().__init__(f"{source}: {total} problem(s):\n{lines}{more}")


def _short(value: Any, limit: int = 80) -> str:
    return limits.preview(value, limit)


def _json_path(raw: Any, loc: tuple) -> str:
    """Turn a pydantic location into a JSON path over the raw document, dropping union tags and validator names,
    and name the body a path points into: ``$.bodies[2].joint.axis (body 'link3')``."""
    parts, cur, body = ["$"], raw, None
    for n, el in enumerate(loc):
        if isinstance(el, int) and isinstance(cur, list) and 0 <= el < len(cur):
            parts.append(f"[{el}]")
            if len(parts) == 3 and parts[1] == ".bodies" and isinstance(cur[el], dict):
                body = cur[el].get("name")
            cur = cur[el]
        elif isinstance(el, str) and isinstance(cur, dict) and el in cur:
            parts.append(f".{el}")
            cur = cur[el]
        elif n == len(loc) - 1 and isinstance(el, str) and isinstance(cur, dict) and not _is_tag(el, cur):
            parts.append(f".{el}")                       # a missing field
        elif isinstance(el, int):
            parts.append(f"[{el}]")
    path = "".join(parts)
    return f"{path} (body {body!r})" if isinstance(body, str) else path


def _is_tag(el: str, cur: dict) -> bool:
    return cur.get("type") == el or "[" in el or "(" in el


def _reference_problems(raw: dict) -> list[Problem]:
    """Cross-reference checks the per-field schema cannot make: unique names, known parents, no cycles."""
    problems: list[Problem] = []
    bodies = raw.get("bodies", [])
    if not isinstance(bodies, list):                     # (reported by the schema; names of bodies unknown)
        return problems
    index: dict[str, int] = {}
    joint_index: dict[str, int] = {}
    for i, b in enumerate(bodies):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            continue
        name = b["name"]
        if name == "world":
            problems.append(Problem(f"$.bodies[{i}].name", "'world' is reserved for the fixed world frame", name, True))
        elif name in index:
            problems.append(Problem(f"$.bodies[{i}].name",
                                    f"duplicate body name (bodies[{index[name]}] has it too)", name, True))
        else:
            index[name] = i
        joint = b.get("joint")
        explicit = isinstance(joint, dict) and "name" in joint
        jname = joint["name"] if explicit else name
        if isinstance(jname, str):
            if jname in joint_index:
                where = f"$.bodies[{i}].joint.name" if explicit else f"$.bodies[{i}].joint"
                why = "" if explicit else " (a joint without a name takes its body's name)"
                problems.append(Problem(where, f"duplicate joint name{why}; the joint of "
                                        f"bodies[{joint_index[jname]}] has it too", jname, True))
            else:
                joint_index[jname] = i
    known = None
    for i, b in enumerate(bodies):
        if not isinstance(b, dict):
            continue
        parent = b.get("parent", "world")
        if isinstance(parent, str) and parent != "world" and parent not in index:
            known = known or name_list(index)
            problems.append(Problem(f"$.bodies[{i}].parent (body {_name(b)!r})",
                                    f"unknown parent body; expected 'world' or one of: {known}", parent, True))
    problems.extend(_entity_problems(raw, bodies, index, joint_index))
    problems.extend(_cycle_problems(bodies, index))
    return problems


def _name(item) -> Any:
    return item.get("name") if isinstance(item, dict) else None


def _cycle_problems(bodies: list, index: dict[str, int]) -> list[Problem]:
    """Parent chains that loop, each reported once at every body on the loop; linear in the number of bodies
    (every body is walked once: 0 unvisited, 1 on the current walk, 2 done)."""
    def parent_of(name: str):
        p = bodies[index[name]].get("parent", "world") if isinstance(bodies[index[name]], dict) else "world"
        return p if isinstance(p, str) and p in index else None

    problems: list[Problem] = []
    state = dict.fromkeys(index, 0)
    for start in index:
        walk, name = [], start
        while name is not None and state[name] == 0:
            state[name] = 1
            walk.append(name)
            name = parent_of(name)
        if name is not None and state[name] == 1:         # the walk met itself: walk[k:] is a loop
            loop = walk[walk.index(name):]
            shown = loop if len(loop) <= 12 else loop[:6] + ["…"] + loop[-5:]
            for member in loop[:MAX_PROBLEMS]:
                i = index[member]
                problems.append(Problem(f"$.bodies[{i}].parent (body {member!r})", "the parent chain loops back to "
                                        "this body: " + " → ".join(shown + [shown[0]]) +
                                        (f" ({len(loop)} bodies)" if len(loop) > 12 else ""),
                                        bodies[i].get("parent"), True))
        for name in walk:
            state[name] = 2
    return problems


_BODY_FIELDS = {"body": "point", "body_a": "point_a", "body_b": "point_b"}
_WORLD_ALLOWED = {("point_to_point", "body_b"), ("hinge", "body_b"), ("spring", "body_b")}


def _shared_name_problems(raw: dict) -> list[Problem]:
    """Constraints and contacts share one namespace in the records, the events and summary.json: a contact's
    points are ``<contact>.<k>``, so a constraint named ``ground`` or ``ground.0`` beside a contact ``ground``
    would give two columns and two summary keys one name."""
    constraints, contacts = raw.get("constraints"), raw.get("contacts")
    if not isinstance(constraints, list) or not isinstance(contacts, list):
        return []
    names = {c["name"]: n for n, c in enumerate(contacts) if isinstance(c, dict) and isinstance(c.get("name"), str)}
    problems = []
    for n, item in enumerate(constraints):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            continue
        for head, k in names.items():
            if name == head or name.startswith(head + "."):
                problems.append(Problem(f"$.constraints[{n}].name", f"clashes with contacts[{k}] {head!r}, whose "
                                        f"points are named {head}.0, {head}.1, …; rename one", name, True))
                break
    return problems


def _entity_problems(raw: dict, bodies: list, index: dict[str, int], joint_index: dict[str, int]) -> list[Problem]:
    """References from constraints, forces and contacts: bodies, their named points and joints must exist; names
    unique."""
    problems: list[Problem] = []
    points = {b["name"]: b.get("points", {}) for b in bodies
              if isinstance(b, dict) and isinstance(b.get("name"), str) and isinstance(b.get("points", {}), dict)}
    joint_types = {}
    for jname, i in joint_index.items():
        joint = bodies[i].get("joint") if isinstance(bodies[i], dict) else None
        kind = joint.get("type") if isinstance(joint, dict) else None
        joint_types[jname] = kind if isinstance(kind, str) else None
    known_bodies = known_joints = None
    problems += _shared_name_problems(raw)
    for section in ("constraints", "forces", "contacts"):
        items = raw.get(section)
        if not isinstance(items, list):
            continue
        seen: dict[str, int] = {}
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            here = f"$.{section}[{n}]"
            kind = item.get("type")
            kind = kind if isinstance(kind, str) else None
            name = item.get("name")
            if isinstance(name, str):
                if name in seen:
                    problems.append(Problem(f"{here}.name", f"duplicate name ({section}[{seen[name]}] has it too)",
                                            name, True))
                seen.setdefault(name, n)
            for body_field, point_field in _BODY_FIELDS.items():
                body = item.get(body_field)
                if not isinstance(body, str):
                    continue
                if body == "world":
                    if (kind, body_field) not in _WORLD_ALLOWED:
                        problems.append(Problem(f"{here}.{body_field}", "must be a body, not the world", body, True))
                    elif isinstance(item.get(point_field), str):
                        problems.append(Problem(f"{here}.{point_field}", "a point on the world must be given as "
                                                "world coordinates [x, y, z]", item.get(point_field), True))
                    continue
                if body not in index:
                    known_bodies = known_bodies or name_list(index)
                    problems.append(Problem(f"{here}.{body_field}", f"unknown body; expected one of: {known_bodies}",
                                            body, True))
                    continue
                point = item.get(point_field)
                if isinstance(point, str) and point not in points.get(body, {}):
                    known = name_list(points.get(body, {}))
                    problems.append(Problem(f"{here}.{point_field}", f"body {body!r} has no point of that name; "
                                            f"its points: {known}", point, True))
            body = item.get("body")
            if section == "contacts" and isinstance(item.get("impact_holds"), list):
                for k, joint in enumerate(item["impact_holds"]):
                    if isinstance(joint, str) and joint_types.get(joint, "") not in ("hinge", "slider"):
                        what = "unknown joint" if joint not in joint_types else f"a {joint_types[joint]} joint"
                        problems.append(Problem(f"{here}.impact_holds[{k}]", f"{what}; impacts hold hinge and "
                                                f"slider joints", joint, True))
            plane = item.get("plane")
            if section == "contacts" and isinstance(plane, dict) and isinstance(plane.get("body"), str):
                if plane["body"] not in index:
                    known_bodies = known_bodies or name_list(index)
                    problems.append(Problem(f"{here}.plane.body", f"unknown body; expected one of: {known_bodies}",
                                            plane["body"], True))
                elif plane["body"] == body:
                    problems.append(Problem(f"{here}.plane.body", "a body cannot touch its own plane; name another "
                                            "body (or none for the ground)", plane["body"], True))
            if section == "contacts" and isinstance(item.get("points"), list) and isinstance(body, str) \
                    and body in points:
                for k, point in enumerate(item["points"]):
                    if isinstance(point, str) and point not in points[body]:
                        known = name_list(points[body])
                        problems.append(Problem(f"{here}.points[{k}]", f"body {body!r} has no point of that name; "
                                                f"its points: {known}", point, True))
            if "body_a" in item and item.get("body_a") == item.get("body_b"):
                problems.append(Problem(f"{here}.body_b", "must differ from body_a", item.get("body_b"), True))
            if kind == "joint_space" and isinstance(item.get("expression"), str):
                problems.extend(_expression_problems(f"{here}.expression", item["expression"], joint_types))
            joint = item.get("joint")
            if isinstance(joint, str):
                if joint not in joint_types:
                    known_joints = known_joints or name_list(joint_types)
                    problems.append(Problem(f"{here}.joint", f"unknown joint; expected one of: {known_joints}",
                                            joint, True))
                elif joint_types[joint] not in ("hinge", "slider"):
                    problems.append(Problem(f"{here}.joint", f"applies to hinge and slider joints; this joint is "
                                            f"{joint_types[joint]!r}", joint, True))
    return problems


def _expression_problems(where: str, text: str, joint_types: dict) -> list[Problem]:
    """A joint-space expression may read only hinge and slider joints (its syntax is checked by the schema)."""
    import ast

    from ..joint_constraints import CONSTANTS, ExpressionError, parse_expression
    depth = limits.expression_depth(text)
    if depth is None or depth > limits.MAX_EXPRESSION_DEPTH:
        return []                                        # reported by the schema
    try:
        expr = parse_expression(text)
    except ExpressionError:
        return []                                        # reported by the schema with its column
    problems = []
    for name in sorted(expr.names):
        if name in joint_types and joint_types[name] in ("hinge", "slider"):
            continue
        usable = name_list(j for j, t in joint_types.items() if t in ("hinge", "slider"))
        if name in joint_types:
            problems.append(Problem(where, f"{name!r} is a {joint_types[name]} joint; an expression may read only "
                                    f"hinge and slider coordinates ({usable})", text, True))
        else:
            problems.append(Problem(where, f"unknown name {name!r}; an expression may use the hinge and slider "
                                    f"joints ({usable}), {', '.join(CONSTANTS)} and the functions "
                                    "sin cos tan sqrt exp log abs", text, True))
    used = {n.id for n in ast.walk(expr.tree) if isinstance(n, ast.Name)}
    for name in sorted(c for c in CONSTANTS if c in joint_types and c in used):
        problems.append(Problem(where, f"a joint is named {name!r}, which in an expression always means the "
                                "constant; rename the joint to read its coordinate", text, True))
    if not expr.names:
        problems.append(Problem(where, "reads no joint coordinate, so it constrains nothing", text, True))
    return problems


def parse_spec(raw: Any, source: str = "<scene>", folder: str | os.PathLike | None = None) -> Scene:
    """Validate a decoded JSON document and return the editable :class:`Scene` spec, or raise :class:`SceneError`
    listing every problem found — and nothing else, whatever ``raw`` holds (an unexpected error in a check is
    reported as a problem of the document, naming the check's error). A relative ``robot.file`` is resolved
    against ``folder`` (default: the folder of ``source`` if that is a file, else the current folder) and held as
    an absolute path."""
    try:
        return _parse_spec(raw, source, folder)
    except SceneError:
        raise
    except Exception as exc:                             # noqa: BLE001 — the validator never raises anything else
        raise SceneError([internal_problem("$", "validating", exc)], source) from None


def internal_problem(path: str, doing: str, exc: BaseException) -> Problem:
    """The problem that stands for an unexpected error met while ``doing`` something with a document (a bug in
    the checks: the document could not be used, and the message says what went wrong where)."""
    text = str(exc)
    text = text if len(text) <= 200 else text[:197] + "..."
    return Problem(path, f"this document could not be used: {type(exc).__name__} while {doing} it ({text}); "
                   "the validator should have named the problem — please report it")


def _parse_spec(raw: Any, source: str, folder) -> Scene:
    limit_problems, raw = limits.check_values(raw)
    if raw is None or not isinstance(raw, dict):
        if limit_problems:
            raise SceneError([Problem(p, m, v, h) for p, m, v, h in limit_problems], source)
        raise SceneError([Problem("$", "a scene document must be a JSON object", raw, True)], source)
    raw, robot, robot_problems = _robot(raw, source, folder)
    limit_problems = [Problem(_with_body(raw, p), m, v, h) for p, m, v, h in limit_problems]
    version = raw.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise SceneError([Problem("$.format_version", f"this program reads format_version {FORMAT_VERSION}; "
                                  "the document is newer", version, True)], source)
    problems: list[Problem] = []
    type_errors: set[int] = set()                        # (ids of problems that only say a value has a wrong type)
    spec, errors, schema_omitted = _validate_schema(raw, 10 * MAX_PROBLEMS)
    if errors:
        for err in errors:
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown field (check its spelling)"
            elif err["type"] == "string_pattern_mismatch":
                message = ("must be a name: a letter or '_', then letters, digits and '_', '-', '.', '/', "
                           "':'")
            has_value = err["type"] != "missing"
            problems.append(Problem(_json_path(raw, err["loc"]), message, err.get("input"), has_value))
            if err["type"].endswith("_type") or err["type"].startswith("union_tag"):
                type_errors.add(id(problems[-1]))
    if limit_problems:       # the schema's complaints about values replaced by None (or unions holding one)
        replaced = {p.path.split(" (body ")[0] for p in limit_problems}
        ancestors = {r[:k] for r in replaced for k in range(len(r)) if r[k] in ".["}
        problems = [p for p in problems if not _under(p.path, replaced)
                    and not (id(p) in type_errors and p.path.split(" (body ")[0] in ancestors)]
    if robot is None:
        problems.extend(_reference_problems(raw))
    else:                                                # the document's references may name the robot's parts
        flat = robot.model_dump(mode="json")
        counts = {key: len(flat[key]) for key in ROBOT_SECTIONS}
        combined = dict(raw)
        for key in ROBOT_SECTIONS:
            if isinstance(raw.get(key, []), list):
                combined[key] = flat[key] + list(raw.get(key, []))
        problems.extend(Problem(remap_path(p.path, counts), p.message, p.value, p.has_value)
                        for p in _reference_problems(combined))
    problems.extend(robot_problems)
    problems.extend(limit_problems)
    if problems:
        omitted = max(0, len(problems) - MAX_PROBLEMS) + schema_omitted
        problems = sorted(problems, key=lambda p: _sort_key(p.path))[:MAX_PROBLEMS]
        raise SceneError(problems, source, omitted)
    return spec


_SECTIONS = ("bodies", "constraints", "forces", "controllers")


def _mesh_files(raw: dict, folder) -> dict:
    """The document with the ``file`` of every mesh shape made absolute (relative to ``folder``)."""
    bodies = raw.get("bodies")
    if not isinstance(bodies, list):
        return raw
    out = []
    for b in bodies:
        shapes = b.get("shapes") if isinstance(b, dict) else None
        if isinstance(shapes, list) and any(isinstance(s, dict) and s.get("type") == "mesh"
                                            and isinstance(s.get("file"), str) and s["file"] for s in shapes):
            try:
                shapes = [{**s, "file": resolve_file(s["file"], folder)}
                          if isinstance(s, dict) and s.get("type") == "mesh" and isinstance(s.get("file"), str)
                          and s["file"] else s for s in shapes]
            except (ValueError, OSError):
                pass                                     # (a file name the schema or the drawing reports)
            b = {**b, "shapes": shapes}
        out.append(b)
    return {**raw, "bodies": out}


def _robot(raw: dict, source: str, folder) -> tuple[dict, Scene | None, list[Problem]]:
    """``(raw, robot, problems)``: the document with its ``robot.file`` and mesh files made absolute, the included
    robot's own scene (None if there is none or it cannot be read) and the problems of the include."""
    from .schema import RobotInclude
    robot_scene = _robot_reader()
    if folder is None:
        here = Path(source)
        folder = here.parent if source != "<scene>" and here.suffix else None
    raw = _mesh_files(raw, folder)
    include = raw.get("robot")
    if not isinstance(include, dict) or not isinstance(include.get("file"), str) or not include["file"]:
        return raw, None, []                             # (an include of the wrong form is reported by the schema)
    try:
        raw = {**raw, "robot": {**include, "file": resolve_file(include["file"], folder)}}
        checked = RobotInclude.model_validate(raw["robot"])
    except (ValidationError, ValueError, OSError):
        return raw, None, []                             # reported by the schema
    try:
        return raw, robot_scene(checked), []
    except SceneError as exc:
        problems = []
        for p in exc.problems:
            if p.path.startswith("q0["):
                where = f"$.robot.q0.{p.path[4:-2]}"
            elif p.path in ("base", "base_pose", "inertia"):
                where = f"$.robot.{p.path}"
            else:
                where = "$.robot.file"
                p = Problem(p.path, f"in the robot file {exc.source}: {p.path}: {p.message}", p.value, p.has_value)
            problems.append(Problem(where, p.message, p.value, p.has_value))
        if exc.omitted:
            problems.append(Problem("$.robot.file", f"and {exc.omitted} more problem(s) in the robot file"))
        return raw, None, problems


def _validate_schema(raw: dict, want: int) -> tuple[Scene | None, list[dict], int]:
    """``(spec, errors, omitted)``: the schema's verdict on ``raw`` — the spec if it is valid, else at most about
    ``want`` of its errors (pydantic's dicts) and how many more there are. A large document (over 1000 items in
    its lists of bodies, constraints, forces and controllers) is checked item by item, so that a million errors
    are counted without being turned into a million dicts (seconds and a gigabyte)."""
    from pydantic import TypeAdapter

    from . import schema
    if sum(len(raw[s]) for s in _SECTIONS if isinstance(raw.get(s), list)) <= 1000:
        try:
            return Scene.model_validate(raw), [], 0
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            return None, errors[:want], max(0, len(errors) - want)
    adapters = {"bodies": schema.Body, "constraints": schema.Constraint, "forces": schema.Force,
                "controllers": schema.Controller}
    errors: list[dict] = []
    omitted = 0
    top = {k: v for k, v in raw.items() if k not in _SECTIONS or not isinstance(v, list)}
    try:
        Scene.model_validate(top)
    except ValidationError as exc:
        errors.extend(exc.errors(include_url=False)[:want])
        omitted += exc.error_count() - len(errors)
    for section in _SECTIONS:
        items = raw.get(section)
        if not isinstance(items, list):
            continue
        adapter = TypeAdapter(adapters[section])
        for i, item in enumerate(items):
            try:
                adapter.validate_python(item)
            except ValidationError as exc:
                if len(errors) >= want:
                    omitted += exc.error_count()
                    continue
                for err in exc.errors(include_url=False):
                    errors.append({**err, "loc": (section, i) + tuple(err["loc"])})
    if errors or omitted:
        return None, errors, omitted
    return Scene.model_validate(raw), [], 0


def _with_body(raw: dict, path: str) -> str:
    """``path`` with the name of the body it points into, as the schema's paths have it."""
    import re
    m = re.match(r"^\$\.bodies\[(\d+)\]", path)
    bodies = raw.get("bodies")
    if m and isinstance(bodies, list) and int(m.group(1)) < len(bodies):
        name = _name(bodies[int(m.group(1))])
        if isinstance(name, str):
            return f"{path} (body {name!r})"
    return path


def _under(path: str, replaced: set[str]) -> bool:
    """Whether ``path`` (a schema problem) is at or inside one of the ``replaced`` paths."""
    bare = path.split(" (body ")[0]
    while True:
        if bare in replaced:
            return True
        cut = max(bare.rfind("."), bare.rfind("["))
        if cut <= 0:
            return False
        bare = bare[:cut]


def _sort_key(path: str):
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"\[(\d+)\]", path)]


def read_document(path: str | os.PathLike) -> Any:
    """The decoded JSON value of a scene file, or :class:`SceneError` saying why it cannot be read: missing,
    unreadable, a folder, larger than :data:`~core.scene.limits.MAX_DOCUMENT_BYTES`, not UTF-8, not JSON
    (:func:`core.scene.limits.decode_document`), a pipe or a device. Reads at most the limit plus one byte, so a
    huge file costs no more, and a pipe is refused before it could block."""
    path = Path(path)
    try:
        data = read_regular_file(path, MAX_DOCUMENT_BYTES)
    except OSError as exc:
        raise SceneError([Problem("$", f"cannot read the file: {exc.strerror or exc}")], str(path)) from None
    except Exception as exc:                             # noqa: BLE001 (e.g. a path with a NUL byte)
        raise SceneError([Problem("$", f"cannot read the file: {exc}")], str(path)) from None
    raw, problems = limits.decode_document(data)
    if problems:
        raise SceneError([Problem(p, m) for p, m in problems], str(path))
    return raw


def read_spec(path: str | os.PathLike) -> Scene:
    """Read and validate a scene file; a file that is missing, too large, not UTF-8 or not JSON is reported as a
    :class:`SceneError`, like any problem of the document. A robot file (``.urdf``) is read as the scene that
    includes it (:func:`robot_document`)."""
    if Path(path).suffix.lower() in ROBOT_SUFFIXES:
        return parse_spec(robot_document(path), str(path), Path.cwd())
    return parse_spec(read_document(path), str(path), Path(path).parent)


def robot_document(path: str | os.PathLike, inertia: str | None = None) -> dict:
    """The scene document of a robot file on its own: ``{"robot": {"file": <absolute path>}}``, named after the
    file, with the robot's gravity and time step (what ``python -m studio robot.urdf`` opens; saved, it is a JSON
    scene that includes the robot file); ``inertia``: the include's inertia policy (default ``refuse``)."""
    import re
    name = re.sub(r"[^A-Za-z0-9_\-]", "_", Path(path).stem) or "robot"
    name = name if re.match(r"[A-Za-z_]", name) else "_" + name
    doc = {"format_version": FORMAT_VERSION, "name": name[:128],
           "description": f"The robot file {Path(path).name}",
           "robot": {"file": resolve_file(str(path), Path.cwd()), **({"inertia": inertia} if inertia else {})}}
    try:                                     # the robot's own gravity and time step (an MJCF file has them)
        from .schema import RobotInclude
        robot = _robot_reader()(RobotInclude.model_validate(doc["robot"]))
    except (SceneError, ValidationError, ValueError):
        return doc                           # (reported when the document is validated)
    doc["gravity"] = list(robot.gravity)
    settings = robot.simulation.model_dump(mode="json", exclude_defaults=True)
    if settings:
        doc["simulation"] = settings
    return doc


def spec_to_json(spec: Scene, folder: str | os.PathLike | None = None) -> str:
    """The document text of a spec: fields left at their defaults are omitted; floats are written exactly. The
    included robot file is written relative to ``folder`` (the document's folder) when given."""
    spec = relocated(spec, folder)
    data = spec.model_dump(mode="json", exclude_defaults=True)
    data = {"format_version": spec.format_version, **data}
    return json.dumps(data, indent=2) + "\n"


def save_spec(spec: Scene, path: str | os.PathLike) -> Path:
    """Write ``spec`` to ``path`` atomically: a temporary file in the same folder, flushed to disk, renamed over
    the target. The previous file is untouched if anything fails."""
    return atomic_write_text(path, spec_to_json(spec, Path(path).absolute().parent))


def relocated(spec: Scene, folder: str | os.PathLike | None) -> Scene:
    """``spec`` with the files it refers to written relative to ``folder`` (as they are if ``folder`` is None)."""
    if folder is None:
        return spec
    update = {}
    if spec.robot is not None:
        update["robot"] = spec.robot.model_copy(update={"file": relative_file(spec.robot.file, folder)})
    if any(s.type == "mesh" for b in spec.bodies for s in b.shapes):
        update["bodies"] = [b.model_copy(update={"shapes": [
            s.model_copy(update={"file": relative_file(s.file, folder)}) if s.type == "mesh" else s
            for s in b.shapes]}) for b in spec.bodies]
    return spec.model_copy(update=update) if update else spec
