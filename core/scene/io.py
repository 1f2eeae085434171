"""Reading, validating and writing scene documents.

Validation reports *every* problem at once, each with the JSON path of the offending value, the value, and what
was expected; :class:`SceneError` carries them. Writing is atomic (temporary file in the same folder, fsync, then
rename), so a crash never leaves a half-written scene, and ``read_spec(save_spec(x)) == x``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..fileio import atomic_write_text
from .schema import FORMAT_VERSION, Scene

__all__ = ["Problem", "SceneError", "parse_spec", "read_spec", "save_spec", "spec_to_json"]


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
    """A scene document that cannot be used; ``problems`` lists everything wrong with it."""

    def __init__(self, problems: list[Problem], source: str = "<scene>"):
        self.problems = list(problems)
        self.source = source
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n{lines}")


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value) if _jsonable(value) else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


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
    bodies = raw.get("bodies")
    if not isinstance(bodies, list):
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
    for i, b in enumerate(bodies):
        if not isinstance(b, dict):
            continue
        parent = b.get("parent", "world")
        if isinstance(parent, str) and parent != "world" and parent not in index:
            known = ", ".join(sorted(index)) or "none"
            problems.append(Problem(f"$.bodies[{i}].parent (body {b.get('name')!r})",
                                    f"unknown parent body; expected 'world' or one of: {known}", parent, True))
    problems.extend(_entity_problems(raw, bodies, index, joint_index))
    # cycles: follow parent links from every body
    for start, i in index.items():
        seen, name = [], start
        while name in index and name not in seen:
            seen.append(name)
            name = bodies[index[name]].get("parent", "world")
        if name in seen and name == start:
            problems.append(Problem(f"$.bodies[{i}].parent (body {start!r})",
                                    "the parent chain loops back to this body: " + " → ".join(seen + [start]),
                                    bodies[i].get("parent"), True))
    return problems


_BODY_FIELDS = {"body": "point", "body_a": "point_a", "body_b": "point_b"}
_WORLD_ALLOWED = {("point_to_point", "body_b"), ("hinge", "body_b"), ("spring", "body_b")}


def _entity_problems(raw: dict, bodies: list, index: dict[str, int], joint_index: dict[str, int]) -> list[Problem]:
    """References from constraints, forces and contacts: bodies, their named points and joints must exist; names
    unique."""
    problems: list[Problem] = []
    points = {b["name"]: b.get("points", {}) for b in bodies
              if isinstance(b, dict) and isinstance(b.get("name"), str) and isinstance(b.get("points", {}), dict)}
    joint_types = {}
    for jname, i in joint_index.items():
        joint = bodies[i].get("joint") if isinstance(bodies[i], dict) else None
        joint_types[jname] = joint.get("type") if isinstance(joint, dict) else None
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
                    known = ", ".join(sorted(index)) or "none"
                    problems.append(Problem(f"{here}.{body_field}", f"unknown body; expected one of: {known}", body, True))
                    continue
                point = item.get(point_field)
                if isinstance(point, str) and point not in points.get(body, {}):
                    known = ", ".join(sorted(points.get(body, {}))) or "none"
                    problems.append(Problem(f"{here}.{point_field}", f"body {body!r} has no point of that name; "
                                            f"its points: {known}", point, True))
            body = item.get("body")
            if section == "contacts" and isinstance(item.get("impact_holds"), list):
                for k, joint in enumerate(item["impact_holds"]):
                    if isinstance(joint, str) and joint_types.get(joint, "") not in ("hinge", "slider"):
                        what = "unknown joint" if joint not in joint_types else f"a {joint_types[joint]} joint"
                        problems.append(Problem(f"{here}.impact_holds[{k}]", f"{what}; impacts hold hinge and "
                                                f"slider joints", joint, True))
            if section == "contacts" and isinstance(item.get("points"), list) and body in points:
                for k, point in enumerate(item["points"]):
                    if isinstance(point, str) and point not in points[body]:
                        known = ", ".join(sorted(points[body])) or "none"
                        problems.append(Problem(f"{here}.points[{k}]", f"body {body!r} has no point of that name; "
                                                f"its points: {known}", point, True))
            if "body_a" in item and item.get("body_a") == item.get("body_b"):
                problems.append(Problem(f"{here}.body_b", "must differ from body_a", item.get("body_b"), True))
            if kind == "joint_space" and isinstance(item.get("expression"), str):
                problems.extend(_expression_problems(f"{here}.expression", item["expression"], joint_types))
            joint = item.get("joint")
            if isinstance(joint, str):
                if joint not in joint_types:
                    known = ", ".join(sorted(joint_types)) or "none"
                    problems.append(Problem(f"{here}.joint", f"unknown joint; expected one of: {known}", joint, True))
                elif joint_types[joint] not in ("hinge", "slider"):
                    problems.append(Problem(f"{here}.joint", f"applies to hinge and slider joints; this joint is "
                                            f"{joint_types[joint]!r}", joint, True))
    return problems


def _expression_problems(where: str, text: str, joint_types: dict) -> list[Problem]:
    """A joint-space expression may read only hinge and slider joints (its syntax is checked by the schema)."""
    import ast

    from ..joint_constraints import CONSTANTS, ExpressionError, parse_expression
    try:
        expr = parse_expression(text)
    except ExpressionError:
        return []                                        # reported by the schema with its column
    usable = ", ".join(sorted(j for j, t in joint_types.items() if t in ("hinge", "slider"))) or "none"
    problems = []
    for name in sorted(expr.names):
        if name in joint_types and joint_types[name] not in ("hinge", "slider"):
            problems.append(Problem(where, f"{name!r} is a {joint_types[name]} joint; an expression may read only "
                                    f"hinge and slider coordinates ({usable})", text, True))
        elif name not in joint_types:
            problems.append(Problem(where, f"unknown name {name!r}; an expression may use the hinge and slider "
                                    f"joints ({usable}), {', '.join(CONSTANTS)} and the functions "
                                    "sin cos tan sqrt exp log abs", text, True))
    used = {n.id for n in ast.walk(expr.tree) if isinstance(n, ast.Name)}
    for name in sorted(set(CONSTANTS) & set(joint_types) & used):
        problems.append(Problem(where, f"a joint is named {name!r}, which in an expression always means the "
                                "constant; rename the joint to read its coordinate", text, True))
    if not expr.names:
        problems.append(Problem(where, "reads no joint coordinate, so it constrains nothing", text, True))
    return problems


def parse_spec(raw: Any, source: str = "<scene>") -> Scene:
    """Validate a decoded JSON document and return the editable :class:`Scene` spec, or raise :class:`SceneError`
    listing every problem found."""
    if not isinstance(raw, dict):
        raise SceneError([Problem("$", "a scene document must be a JSON object", raw, True)], source)
    version = raw.get("format_version")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise SceneError([Problem("$.format_version", f"this program reads format_version {FORMAT_VERSION}; "
                                  "the document is newer", version, True)], source)
    problems: list[Problem] = []
    spec = None
    try:
        spec = Scene.model_validate(raw)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown field (check its spelling)"
            elif err["type"] == "string_pattern_mismatch":
                message = "must be a name: letters, digits, '_' and '-', not starting with a digit"
            has_value = err["type"] != "missing"
            problems.append(Problem(_json_path(raw, err["loc"]), message, err.get("input"), has_value))
    problems.extend(_reference_problems(raw))
    if problems:
        problems.sort(key=lambda p: _sort_key(p.path))
        raise SceneError(problems, source)
    return spec


def _sort_key(path: str):
    import re
    return [int(t) if t.isdigit() else t for t in re.split(r"\[(\d+)\]", path)]


def read_spec(path: str | os.PathLike) -> Scene:
    """Read and validate a scene file; a file that is missing or not JSON is reported as a :class:`SceneError`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SceneError([Problem("$", f"cannot read the file: {exc.strerror}")], str(path)) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SceneError([Problem("$", f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}")],
                         str(path)) from None
    return parse_spec(raw, str(path))


def spec_to_json(spec: Scene) -> str:
    """The document text of a spec: fields left at their defaults are omitted; floats are written exactly."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    data = {"format_version": spec.format_version, **data}
    return json.dumps(data, indent=2) + "\n"


def save_spec(spec: Scene, path: str | os.PathLike) -> Path:
    """Write ``spec`` to ``path`` atomically: a temporary file in the same folder, flushed to disk, renamed over
    the target. The previous file is untouched if anything fails."""
    return atomic_write_text(path, spec_to_json(spec))
