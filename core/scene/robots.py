"""Scene documents that include a robot file: the ``robot`` section (:class:`core.scene.schema.RobotInclude`).

A document ``{"robot": {"file": "ur5.urdf", "base": "floating", "q0": {"elbow": 0.5}}, "constraints": […]}`` is
the robot's scene (:func:`core.scene.urdf.urdf_to_spec` or :func:`core.scene.mjcf.mjcf_to_spec`, with the
overrides) with the document on top: the robot's
bodies first, then the document's own bodies (which may hang from the robot's), the robot's mimic constraints
first, then the document's constraints, the robot's forces (its joints' motors, springs and dampers, MJCF actuators and gravity compensation) first, then the document's
forces; controllers, contacts, programs, gravity, the simulation settings and the view are the document's. :func:`expand` makes that flat scene (what is validated and compiled); the
document itself keeps only the include, so saving it writes the include, not the robot's bodies.

The file is resolved against the document's folder when the document is read and held as an absolute path in
memory; saving writes it relative to the saved document's folder again (:func:`relative_file`). A robot file
that changed on disk is read again (the cache is keyed on its path, size and modification time). What the
importer warned about reading it (``URDFWarning``, ``MJCFWarning``: what it dropped) is warned again on every read,
cached or not, so each opening of the file says it.
"""
from __future__ import annotations

import warnings
from functools import lru_cache
from pathlib import Path

from . import io
from .io import Problem, SceneError
from .paths import ROBOT_SECTIONS, ROBOT_SUFFIXES, relative_file, remap_path, resolve_file
from .schema import RobotInclude, Scene

__all__ = ["ROBOT_SUFFIXES", "IMPORT_WARNINGS", "robot_scene", "expand", "resolve_file", "relative_file", "remap_path",
           "plain_import_warnings"]

def robot_scene(include: RobotInclude) -> Scene:
    """The robot's own scene with the include's overrides (raises :class:`SceneError` naming the robot file's
    elements, with the robot file as its source)."""
    path = Path(include.file)
    if path.suffix.lower() not in ROBOT_SUFFIXES:
        raise SceneError([Problem("robot", f"not a robot file this program reads ({', '.join(ROBOT_SUFFIXES)})",
                                  path.name, True)], str(path))
    try:
        st = path.stat()
    except OSError as exc:
        raise SceneError([Problem("robot", f"cannot read the file: {exc.strerror or exc}")], str(path)) from None
    except ValueError as exc:                            # e.g. a NUL byte in the name
        raise SceneError([Problem("robot", f"cannot read the file: {exc}")], str(path)) from None
    key = (str(path), st.st_size, st.st_mtime_ns, include.base, include.inertia,
           tuple(sorted(include.q0.items())), include.base_pose)
    scene, said = _read(key)
    for message in said:
        warnings.warn(message, stacklevel=2)
    return scene


def _is_mjcf(file) -> bool:
    """Whether robot file ``file`` is MJCF (read through MuJoCo) rather than URDF."""
    return Path(file).suffix.lower() == ".xml"


@lru_cache(maxsize=8)
def _read(key) -> tuple[Scene, tuple[Warning, ...]]:
    """The robot's scene and the warnings its importer gave, in order."""
    file, _, _, base, inertia, q0, base_pose = key
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if _is_mjcf(file):
            scene = _mjcf(file, base, dict(q0), base_pose)
        else:
            from .urdf import urdf_to_spec
            scene = urdf_to_spec(file, floating_base=base == "floating", inertia=inertia, q0=dict(q0),
                                 base_pose=base_pose)
    return scene, tuple(w.message for w in caught)


def _mjcf(file: str, base: str, q0: dict, base_pose) -> Scene:
    """An MJCF robot (:mod:`core.scene.mjcf`): its joints are its own (``base`` and ``base_pose`` are refused;
    MuJoCo's compiler has checked its inertias); ``q0`` sets hinge and slide coordinates."""
    from .mjcf import mjcf_to_spec
    problems = []
    if base != "fixed":
        problems.append(Problem("base", "an MJCF model has its own joints (give its root body a <freejoint/> for a "
                                "floating base)", base, True))
    if base_pose is not None:
        problems.append(Problem("base_pose", "an MJCF model places its own bodies", list(base_pose), True))
    if problems:
        raise SceneError(problems, file)
    spec = mjcf_to_spec(file)
    if not q0:
        return spec
    data = spec.model_dump(mode="python")
    found = set()
    for b in data["bodies"]:
        j = b["joint"]
        if j["type"] in ("hinge", "slider") and j.get("name") in q0:
            j["q0"] = float(q0[j["name"]])
            found.add(j["name"])
            limits = j.get("limits")
            if limits is not None and not limits[0] <= j["q0"] <= limits[1]:
                problems.append(Problem(f"q0[{j['name']!r}]", f"lies outside the joint's range [{limits[0]:.6g}, "
                                        f"{limits[1]:.6g}] (MuJoCo's range minus its ref)", j["q0"], True))
    for name in q0:
        if name not in found:
            problems.append(Problem(f"q0[{name!r}]", "not a hinge or slide joint of this model", name, True))
    if problems:
        raise SceneError(problems, file)
    return Scene.model_validate(data)


def expand(spec: Scene) -> Scene:
    """The flat scene of a document with a ``robot`` include (the document itself if it has none)."""
    if spec.robot is None:
        return spec
    robot = robot_scene(spec.robot).model_dump(mode="python")
    data = spec.model_dump(mode="python", exclude={"robot"})
    for key in ROBOT_SECTIONS:
        data[key] = robot[key] + data[key]
    if data.get("ground") is None:                      # the robot's own floor (an MJCF world plane)
        data["ground"] = robot.get("ground")
    elif robot.get("ground") is not None:               # the document's ground stands for it: it touches what the
        data["ground"]["contype"] |= robot["ground"]["contype"]     # floor touched (its <pair> rules' geoms too)
    rules = robot.get("collisions")                     # an MJCF file's <exclude> pairs and its <pair> rules
    if data.get("collisions") is not None and rules:    # between a parent and its child, for the document's own
        for key in ("exclude_pairs", "include_pairs"):  # collisions (the robot's block collides nothing itself)
            taken = {frozenset(p) for p in data["collisions"][key]}
            data["collisions"][key] = list(data["collisions"][key]) + [
                p for p in rules[key] if frozenset(p) not in taken]
    free = [b["name"] for b in robot["bodies"] if b["parent"] == "world" and b["joint"]["type"] == "free"]
    if free and data.get("ground") is None and not data.get("contacts"):
        from .mjcf import MJCFWarning
        from .urdf import URDFWarning
        kind = MJCFWarning if _is_mjcf(spec.robot.file) else URDFWarning
        warnings.warn(f"{spec.robot.file}: the robot's {', '.join(free[:3])} floats free and nothing is under it: "
                      "it falls for ever; give the scene a ground (\"ground\": {} in the document, Add ▸ Ground in "
                      "the studio)", kind, stacklevel=2)
    return Scene.model_validate(data)


#: The warning classes of the robot importers (``URDFWarning``, ``MJCFWarning``), by name: each says what an
#: import dropped or approximated.
IMPORT_WARNINGS = ("URDFWarning", "MJCFWarning")


def plain_import_warnings(prefix: str) -> None:
    """Show the importers' notes (``URDFWarning``, ``MJCFWarning``) on stderr as one line each,
    ``<prefix>: warning: <message>``, instead of Python's form with a source line (for the command lines); each
    note once, however often the file is read (a command may read a robot file more than once)."""
    import sys
    import warnings
    shown = warnings.showwarning
    if getattr(shown, "plain_prefix", None) == prefix:
        return                                           # installed already (a second call in one process)
    said: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        if category.__name__ in IMPORT_WARNINGS:
            if str(message) not in said:
                said.add(str(message))
                print(f"{prefix}: warning: {message}", file=sys.stderr if file is None else file)
        else:
            shown(message, category, filename, lineno, file, line)
    show.plain_prefix = prefix
    warnings.showwarning = show


io.use_robot_reader(robot_scene)       # (the document layer reads includes through this module, not by importing it)
