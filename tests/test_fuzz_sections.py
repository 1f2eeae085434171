"""A seeded, structure-aware fuzzer of the contact, joint-limit, collision, control-program and robot-include
sections (issue 28), beside the whole-document fuzzer of ``tests/test_fuzz_scenes.py``: whatever a mutant holds, it is
refused by validation with named problems (``core.scene.SceneError``; ``python -m core run`` exit 2) or it runs
a short, bounded run to its end (exit 0) or to a stop with a named reason (exit 3: diverged, the energy books,
chatter, the events' cost, the step budget) — never a traceback, an error the checks did not name, or a hang.

The mutations know the sections: a contact's restitution, friction, rest speed, stabilization and lift-off
delay set to the edges of their ranges and past them, its points emptied, duplicated or named from another
body, its plane moved to a body's face or flipped, its body and impact holds renamed; a joint's limits reversed,
closed, widened past the number limits, with q0 outside them and a restitution of 1; a program's kind, parameters
(numbers scaled to 0, negative or 1e6, names swapped for other names of the scene: a spring as an actuator, a
body as a joint) and constraints; a robot include's file (another robot, a missing one, paths outside its folder,
a folder, a device), base, base pose, q0 and inertia policy; the run's dt, integrator, tolerance and event
tolerance; a scene's ``collisions`` and ``ground`` by the generic mutations at their paths. Robot files themselves are mutated too (URDF and MJCF: attributes given odd values, elements removed
or repeated, mesh and include paths pointed outside the folder) and included from a mutated scene. Each trial
also takes the generic mutations of the whole-document fuzzer at a path inside its section.

The in-process check runs the command line's own ``main(["run", …])`` for part of the trials (exit code, no
traceback) and the same functions for the rest. Run a longer campaign with ``tests/fuzz_campaign.py``.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from core import Simulation
from core.programs import PROGRAMS
from core.scene import SceneError, compile_scene, parse_spec
from core.scene.limits import decode_document
from core.simulation import DivergenceError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_fuzz_scenes import mutate_document  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = {
    "contacts": ["bouncing_ball", "sliding_block", "box_of_balls", "block_lifted", "block_on_sprung_table",
                 "raibert_hopper", "anthropomorphic_hopper", "kearney_flip"],
    "limits": ["pendulum_joint_limit"],
    "collisions": ["balls_in_a_box", "ball_off_table", "boxes_crossing", "sticks_on_a_table"],
    "programs": ["raibert_hopper", "anthropomorphic_hopper", "kearney_particle", "kearney_flip"],
    "robot": ["robot_arm_computed_torque", "urdf:assets/urdf/twin_arm_torso.urdf", "urdf:tests/data/boom_payload.urdf",
              "mjcf:pendulum"],
}
#: The simulated seconds a trial runs at most, and the steps it may take (a mutated dt or tolerance cannot make a
#: trial long: the step budget stops it with its named reason).
TRIAL_SECONDS = 0.25
TRIAL_STEPS = 600

#: A small MJCF robot (MuJoCo's own compiler reads it): a limited, damped hinge pendulum with a mesh-free
#: capsule and an actuator; mutated like the URDF files.
MJCF_PENDULUM = """<mujoco model="pendulum">
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="swing" type="hinge" axis="0 1 0" range="-1 1" limited="true" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.03" mass="0.5"/>
      <body name="forearm" pos="0 0 -0.5">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05" pos="0 0 -0.3" mass="0.2"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="drive" joint="swing" gear="1" ctrlrange="-5 5" ctrllimited="true"/>
  </actuator>
</mujoco>
"""

#: Paths a hostile robot file or include may name: outside its folder (existing and not), a folder, devices,
#: package paths that climb, URLs, very long names.
HOSTILE_PATHS = ["/etc/passwd", "/etc/no_such_file.stl", "/dev/zero", "/dev/null", "/proc/self/environ", "/",
                 "../../../../../../etc/passwd", "../../../../../../etc/nope.stl", "meshes/../../../../etc/hosts",
                 "package://etc/passwd", "package://etc/nope.stl", "package://urdf/../../../../etc/hosts",
                 "file:///etc/passwd", "file:///dev/urandom", "http://example.com/a.stl", "", " ", "\x00.stl",
                 "a" * 5000 + ".stl", "meshes/head.stl", "package://urdf/meshes/head.stl", "missing.stl",
                 "~/.ssh/id_rsa", "robot.urdf"]

_NUMBER_EDGES = [0, -0.0, 1e-30, -1e-30, 1e-31, 1e-15, 1e-12, 1e-6, 1e-3, 0.5, 0.999999, 1, 1.0000001, 2, 10, 10.5,
                 100, 100.1, 1e3, 1000.1, 1e6, 1e12, 1.1e12, -1, -1e12, 5e-324, 1e300]
_FIELD_VALUES = {
    "restitution": [0, 1, 0.999999, 1.0000001, -0.1, 2, 1e-30, "0.5", None],
    "friction": [0, 1e-30, 0.3, 100, 100.1, 1e12, -1],
    "rest_speed": [1e-30, 1e-12, 1e-6, 1e3, 1000.5, 0, -1],
    "stabilization": [0, 1e-30, 1e6, 1e12, -1],
    "liftoff_delay": [0, 1e-30, 0.5, 10, 10.5, -1],
    "limit_restitution": [0, 1, 0.999, 1.5, -1, 1e-30],
    "dt": [1e-6, 1e-5, 0.01, 0.05, 0.5, 1.0, 1e-30, 0],
    "event_tolerance": [1e-15, 1e-14, 1e-12, 1e-3, 0.1, 1.0, 2.0, 1e-16],
    "tolerance": [1e-14, 1e-10, 1e-3, 1.0, 1e-15],
    "integrator": ["rk4", "cash_karp", "semi_implicit_euler", "euler", None],
    "formulation": ["dynamic_constraints", "projection", "multipliers", "none"],
    "duration": [1e-30, 1e-6, 0.01, 1e6, 1e12, 0, -1],
    "base": ["fixed", "floating", "free", None, 1],
    "inertia": ["refuse", "repair", "fix"],
    "base_pose": [[0, 0, 0, 1, 0, 0, 0], [0, 0, 1e12, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 2, 0, 0, 0],
                  [0, 0, 0, 1, 0, 0], [1e-30] * 7, None],
    "face": ["+x", "-x", "+y", "-y", "+z", "-z", "z", None],
    "shape": [0, 1, 2, 10_000, 10_001, -1],
    "normal": [[0, 0, 1], [0, 0, -1], [0, 0, 0], [1e-30, 0, 0], [1e12, 1e12, 1e12], [0, 1, 0], [0, 0]],
    "origin": [[0, 0, 0], [0, 0, 1e12], [0, 0, -1e12], [0, 0, 0.5], [0, 0]],
    "coupling": ["tight", "loose", "both"],
    "stance_control": ["virtual_leg", "contact_force", "none"],
}


# ---------------------------------------------------------------------------------------------- the corpus
def corpus(workdir: Path) -> dict[str, list[tuple[str, dict]]]:
    """The documents of each section, by name: shipped scenes (a robot include made absolute), and scenes
    that include a robot file alone (URDF, and a small MJCF model written into ``workdir``)."""
    out: dict[str, list[tuple[str, dict]]] = {}
    (workdir / "pendulum.xml").write_text(MJCF_PENDULUM)
    for section, names in SECTIONS.items():
        docs = []
        for name in names:
            if name.startswith(("urdf:", "mjcf:")):
                file = workdir / "pendulum.xml" if name.startswith("mjcf:") else ROOT / name[5:]
                doc = {"format_version": 1, "name": Path(file).stem, "robot": {"file": str(file)},
                       "simulation": {"duration": 1.0, "dt": 0.002 if name.startswith("mjcf:") else 0.001}}
            else:
                doc = json.loads((ROOT / "scenes" / f"{name}.json").read_text())
                if "robot" in doc:
                    doc["robot"]["file"] = str((ROOT / "scenes" / doc["robot"]["file"]).resolve())
            docs.append((Path(name).stem, doc))
        out[section] = docs
    return out


# ---------------------------------------------------------------------------------------------- mutations
def _paths(node, keys=()):
    """Every key path under ``node`` (iteratively), with ``keys`` as the prefix."""
    out, stack = [], [(keys, node)]
    while stack:
        k, n = stack.pop()
        out.append(k)
        if isinstance(n, dict):
            stack.extend((k + (key,), v) for key, v in n.items())
        elif isinstance(n, list):
            stack.extend((k + (i,), v) for i, v in enumerate(n))
    return out


def _get(doc, keys):
    for k in keys:
        doc = doc[k]
    return doc


def _names(doc) -> dict[str, list[str]]:
    """The names a document gives, by kind (bodies, joints, forces, actuators, contacts, constraints, points)."""
    out = {k: [] for k in ("bodies", "joints", "forces", "actuators", "contacts", "constraints", "points")}
    for b in doc.get("bodies", []) if isinstance(doc.get("bodies"), list) else []:
        if isinstance(b, dict):
            out["bodies"].append(b.get("name"))
            j = b.get("joint")
            if isinstance(j, dict):
                out["joints"].append(j.get("name"))
            if isinstance(b.get("points"), dict):
                out["points"].extend(b["points"])
    for key in ("forces", "contacts", "constraints"):
        for item in doc.get(key, []) if isinstance(doc.get(key), list) else []:
            if isinstance(item, dict):
                out[key].append(item.get("name"))
                if key == "forces" and item.get("type") == "actuator":
                    out["actuators"].append(item.get("name"))
    robot = doc.get("robot")
    if isinstance(robot, dict) and isinstance(robot.get("q0"), dict):
        out["joints"].extend(robot["q0"])
    return {k: [n for n in v if isinstance(n, str)] or ["nope"] for k, v in out.items()}


def _section_paths(doc, section: str) -> list[tuple]:
    """The key paths a mutation of ``section`` may act on."""
    if section == "limits":
        paths = []
        for i, b in enumerate(doc.get("bodies", []) if isinstance(doc.get("bodies"), list) else []):
            if isinstance(b, dict) and isinstance(b.get("joint"), dict):
                j = b["joint"]
                paths += [("bodies", i, "joint", k) for k in ("limits", "limit_restitution", "q0", "qd0", "type")
                          if k in j or k in ("limits", "limit_restitution")]
                if isinstance(j.get("limits"), list):
                    paths += [("bodies", i, "joint", "limits", n) for n in range(len(j["limits"]))]
        return paths
    keys = {"contacts": ("contacts",), "programs": ("programs", "forces"), "robot": ("robot",),
            "collisions": ("collisions", "ground")}[section]
    paths = [p for key in keys if key in doc for p in _paths(doc[key], (key,))]
    return paths or [(keys[0],)]


def _odd_number(value, rng: random.Random):
    if rng.random() < 0.5:
        return rng.choice(_NUMBER_EDGES)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value * rng.choice((0.0, -1.0, 1e-6, 1e-3, 0.5, 2.0, 1e3, 1e6, 1e12))
    return rng.choice(_NUMBER_EDGES)


def _set(doc, keys, value) -> None:
    if not keys:
        return
    parent = _get(doc, keys[:-1])
    parent[keys[-1]] = value


def mutate_section(doc: dict, section: str, rng: random.Random, robot_files: list[str]) -> dict:
    """One to three structure-aware mutations of ``section`` (and now and then of the run's settings) of a copy
    of ``doc``."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        names = _names(doc)
        paths = [p for p in _section_paths(doc, section) if p]
        if rng.random() < 0.15:                              # the run's settings, which the events depend on
            sim = doc.setdefault("simulation", {})
            if isinstance(sim, dict):
                key = rng.choice(["dt", "event_tolerance", "tolerance", "integrator", "formulation", "duration"])
                sim[key] = copy.deepcopy(rng.choice(_FIELD_VALUES[key]))
                if key == "tolerance" and rng.random() < 0.7:
                    sim["integrator"] = "cash_karp"
            continue
        if not paths:
            continue
        keys = rng.choice(paths)
        try:
            parent, last = _get(doc, keys[:-1]), keys[-1]
            value = parent[last]
        except (KeyError, IndexError, TypeError):
            continue
        op = rng.choice((0, 0, 1, 1, 2, 3, 3, 3, 4, 5, 6, 7))   # (the sections' own changes the most often)
        field = last if isinstance(last, str) else (keys[-2] if len(keys) > 1 and isinstance(keys[-2], str) else "")
        if op == 0 and field in _FIELD_VALUES:               # an edge of the field's range, or past it
            parent[last] = copy.deepcopy(rng.choice(_FIELD_VALUES[field]))
        elif op == 1 and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[last] = _odd_number(value, rng)
        elif op == 2 and isinstance(value, str):             # a name of another kind, or of nothing
            kind = rng.choice(list(names))
            parent[last] = rng.choice(names[kind] + ["nope", "world", "ground.0", value + ".0"])
        elif op == 3:                                        # a section-specific change
            _special(doc, section, keys, rng, names, robot_files)
        elif op == 4 and isinstance(value, list):            # emptied, doubled, or one item repeated
            parent[last] = rng.choice(([], value + value, value[:1] * 65 if value else [], value[::-1]))
        elif op == 5 and isinstance(parent, list):           # an item duplicated (same names) or removed
            if rng.random() < 0.5:
                parent.insert(last, copy.deepcopy(value))
            else:
                del parent[last]
        elif op == 6 and isinstance(parent, dict):           # a field removed
            del parent[last]
        else:                                                # the whole-document fuzzer's mutations, here
            sub = mutate_document({"x": value}, rng)
            if isinstance(sub, dict) and "x" in sub:
                parent[last] = sub["x"]
    return doc


def _special(doc, section, keys, rng, names, robot_files) -> None:
    """Mutations only a section has."""
    if section == "contacts" and isinstance(doc.get("contacts"), list) and doc["contacts"]:
        c = rng.choice(doc["contacts"])
        if not isinstance(c, dict):
            return
        choice = rng.randrange(8)
        if choice == 0:
            c["points"] = rng.choice(([], [[0, 0, 0]], [[0, 0, -1e12]], [[0, 0]], names["points"][:1] * 2,
                                      [rng.choice(names["points"])], [[0, 0, -0.1]] * 64, [[0, 0, 0]] * 65))
        elif choice == 1:
            c["plane"] = rng.choice(({"body": rng.choice(names["bodies"]), "face": rng.choice(["+z", "-z", "+x"])},
                                     {"body": rng.choice(names["bodies"])}, {"normal": [0, 0, -1]},
                                     {"origin": [0, 0, 0.5], "normal": [0, 1, 1]}, {"face": "+z"},
                                     {"body": c.get("body"), "normal": [0, 0, 1]}))
        elif choice == 2:
            c["impact_holds"] = rng.choice((names["joints"][:3], ["nope"], names["bodies"][:1], names["joints"] * 30))
        elif choice == 3:
            c["body"] = rng.choice(names["bodies"] + ["world", "nope"])
        elif choice == 4:                                    # a second contact on the same body, or the same name
            twin = copy.deepcopy(c)
            if rng.random() < 0.5:
                twin["name"] = twin.get("name", "c") + "_twin"
            doc["contacts"].append(twin)
        elif choice == 5:
            c["name"] = rng.choice(names["constraints"] + names["bodies"] + ["world"])
        elif choice == 6:                                    # a chattering contact
            c.update(restitution=rng.choice((0.5, 0.9, 1.0)), rest_speed=rng.choice((1e-30, 1e-6, 0.001)))
        else:
            for k in ("restitution", "friction", "rest_speed", "stabilization", "liftoff_delay"):
                if rng.random() < 0.4:
                    c[k] = copy.deepcopy(rng.choice(_FIELD_VALUES[k]))
    elif section == "limits":
        for b in doc.get("bodies", []):
            j = b.get("joint") if isinstance(b, dict) else None
            if not isinstance(j, dict):
                continue
            lim = j.get("limits")
            choice = rng.randrange(6)
            if choice == 0 and isinstance(lim, list) and len(lim) == 2:
                j["limits"] = lim[::-1]
            elif choice == 1 and isinstance(lim, list) and lim:
                j["limits"] = [lim[0], lim[0]]
            elif choice == 2:
                j["limits"] = rng.choice(([-1e12, 1e12], [-1e-30, 1e-30], [0.3], [0.3, 1.5, 2.0], [None, 1], "0 1"))
            elif choice == 3:
                j["q0"] = rng.choice((1.5, 0.3, 1.5000001, 0.2999999, -3.0, 1e12, [1.2]))
            elif choice == 4:
                j["qd0"] = rng.choice((100.0, -100.0, 1e6, 1e12, [0.0]))
            else:
                j["limit_restitution"] = rng.choice((1, 1.0, 0.999999, 1e-30))
                if isinstance(lim, list) and len(lim) == 2:
                    j["limits"] = [0.3, 0.3000001]
    elif section == "programs" and isinstance(doc.get("programs"), list) and doc["programs"]:
        p = rng.choice(doc["programs"])
        if not isinstance(p, dict):
            return
        choice = rng.randrange(6)
        if choice == 0:
            p["program"] = rng.choice(sorted(PROGRAMS) + ["nope", ""])
        elif choice == 1 and p.get("program") in PROGRAMS:  # a parameter the program has, set oddly
            params = p.setdefault("parameters", {})
            if isinstance(params, dict):
                name, default = rng.choice(sorted(PROGRAMS[p["program"]].parameters.items()))
                if isinstance(default, str):
                    kind = rng.choice(list(names))
                    params[name] = rng.choice(names[kind] + ["nope", default])
                elif isinstance(default, list):
                    params[name] = rng.choice(([0, 0, 0], [1e12, 0, 0], [0, 0], [], [1e-30] * 3))
                else:
                    params[name] = _odd_number(default, rng)
        elif choice == 2:
            p["parameters"] = rng.choice(({}, {"nope": 1}, {"speed": "fast"}, {"leg_actuator": "air_spring"},
                                          {"foot": rng.choice(names["contacts"])}, {"joint": "nope"}))
        elif choice == 3:
            p["constraints"] = rng.choice((names["constraints"][:1], ["nope"], names["contacts"][:1], ["x"] * 65))
        elif choice == 4:                                    # the program's actuator removed or made a spring
            forces = doc.get("forces")
            if isinstance(forces, list) and forces:
                f = rng.choice(forces)
                if isinstance(f, dict):
                    f["type"] = rng.choice(("joint_spring", "actuator", "drag"))
                    if rng.random() < 0.5:
                        f["limit"] = rng.choice((0, 1e-30, 1e12, -1))
        else:
            doc["programs"].append(copy.deepcopy(p))
    elif section == "robot":
        robot = doc.get("robot")
        if not isinstance(robot, dict):
            doc["robot"] = {"file": rng.choice(robot_files)}
            return
        choice = rng.randrange(5)
        if choice in (0, 1):
            robot["file"] = rng.choice(HOSTILE_PATHS + robot_files if choice == 0 else robot_files)
        elif choice == 2:
            robot["q0"] = rng.choice(({}, {"joint2": 1e12}, {"nope": 1.0}, {j: 3.0 for j in names["joints"]},
                                      {"swing": 5.0}, {"slew": -1e-30}))
        elif choice == 3:
            robot["base"] = rng.choice(("floating", "fixed"))
            if rng.random() < 0.5:
                robot["base_pose"] = copy.deepcopy(rng.choice(_FIELD_VALUES["base_pose"]))
        else:
            robot["inertia"] = rng.choice(("repair", "refuse"))


def mutate_xml(text: str, rng: random.Random) -> str:
    """A structure-aware mutation of a robot file's XML (URDF or MJCF): an attribute given an odd value, an
    element removed or repeated, a mesh or include pointed elsewhere, or the bytes cut."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return text
    nodes = list(root.iter())
    for _ in range(rng.choice((1, 1, 2, 3))):
        node = rng.choice(nodes)
        op = rng.randrange(7)
        if op == 0 and node.attrib:                          # an attribute: an odd number or text
            key = rng.choice(sorted(node.attrib))
            node.set(key, rng.choice(("0", "-1", "1e12", "1e-31", "nan", "inf", "-0", "1e308", "", "x",
                                      "1 2", "0 0 0", "1e400", "0 0 0 0", "-1e12 1e12", "3.141592653589793")))
        elif op == 1 and len(node):                          # a child removed
            node.remove(rng.choice(list(node)))
        elif op == 2 and len(node):                          # a child repeated
            node.append(copy.deepcopy(rng.choice(list(node))))
        elif op == 3:                                        # a mesh, or an include
            parent = rng.choice(nodes)
            path = rng.choice(HOSTILE_PATHS)
            if root.tag == "robot":
                ET.SubElement(ET.SubElement(ET.SubElement(parent, "visual"), "geometry"), "mesh", filename=path)
            elif rng.random() < 0.5:
                asset = root.find("asset")
                asset = ET.SubElement(root, "asset") if asset is None else asset
                ET.SubElement(asset, "mesh", name=f"m{rng.randrange(1000)}", file=path)
            else:
                ET.SubElement(root, "include", file=path)
        elif op == 4 and node is not root:                   # an element renamed
            node.tag = rng.choice(("link", "joint", "body", "geom", "replicate", "flexcomp", "mimic", "x"))
        elif op == 5:                                        # a nest of repeats (MJCF) or a long chain
            if root.tag == "mujoco":
                wb = root.find("worldbody")
                if wb is not None:
                    rep = ET.SubElement(wb, "replicate", count=rng.choice(("2", "1000", "100000", "-1", "x")))
                    ET.SubElement(ET.SubElement(rep, "body", name="r"), "geom", size="0.1")
            else:
                node.set("name", rng.choice(("", "world", "a b", "link1", "é")))
        else:
            node.text = rng.choice(("", "x" * 100, "1e12"))
    data = ET.tostring(root, encoding="unicode")
    if rng.random() < 0.05:
        data = data[:rng.randrange(len(data) + 1)]
    return data


# ---------------------------------------------------------------------------------------------- the check
NAMED_STOPS = ("non-finite", "energy audit", "chatter", "took its", "could not be evaluated", "diverging")


def _assert_named(exc: SceneError) -> None:
    assert exc.problems, "a SceneError without problems"
    for p in exc.problems:
        assert p.path.startswith("$") or p.path, p
        assert p.message, p
        assert "please report it" not in p.message, f"the checks did not name this problem: {p}"


def check_document(data: bytes, folder: Path, source: str, seconds: float = TRIAL_SECONDS,
                   max_steps: int = TRIAL_STEPS, steps: list | None = None) -> tuple[str, str]:
    """Validate, compile and run ``data`` (a scene document) as ``python -m core run`` does, for at most
    ``seconds`` of simulated time and ``max_steps`` steps. Returns ``(outcome, reason)``: ("invalid", the first
    problem), ("complete", ""), or ("stopped", the named reason). Raises AssertionError for an unnamed problem;
    any other exception is the bug the fuzzer looks for. ``steps``, a list, gets the steps taken, the simulated
    time reached, and the model's links, velocities and formulation."""
    raw, problems = decode_document(data)
    if problems:
        return "invalid", problems[0][1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = compile_scene(parse_spec(raw, source, folder), source)
    except SceneError as exc:
        _assert_named(exc)
        return "invalid", str(exc.problems[0])
    try:
        sim = Simulation(model)
    except ValueError as exc:                                # (the command line's exit 2)
        return "invalid", str(exc)
    duration = min(model.settings.get("duration", 10.0), seconds)
    try:
        sim.run(duration, sink=lambda chunk: None, max_steps=max_steps)
    except DivergenceError as exc:
        message = str(exc)
        assert any(s in message for s in NAMED_STOPS), f"a stop without a named reason: {message}"
        return "stopped", message
    finally:
        if steps is not None:
            steps[:] = [sim.steps_taken, sim.state.t, model.n_links, model.nv, sim.formulation]
    return "complete", ""


def check_command_line(data: bytes, folder: Path, out: Path, seconds: float = TRIAL_SECONDS,
                       max_steps: int = TRIAL_STEPS) -> tuple[str, str]:
    """``python -m core run`` on ``data`` written into ``folder``, in this process (its own ``main``): exit 0, 2
    or 3 with the reason on stderr, never an exception. Returns ``(outcome, stderr)``."""
    from core.__main__ import main
    scene = folder / "mutant.json"
    scene.write_bytes(data)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["run", str(scene), "--duration", repr(seconds), "--out", str(out), "--force", "--quiet",
                     "--max-steps", str(max_steps)])
    text = err.getvalue()
    assert code in (0, 2, 3), (code, text)
    assert "Traceback" not in text, text
    if code == 2:
        assert text.strip(), "exit 2 without a message"
    return {0: "complete", 2: "invalid", 3: "stopped"}[code], text


class Trials:
    """The mutants of a seeded campaign: :meth:`make` gives trial k's (section, scene name, bytes, folder), with
    any mutated robot file written into a folder of its own under ``workdir``."""

    def __init__(self, seed: int, workdir: Path):
        self.seed, self.workdir = seed, Path(workdir)
        self.docs = corpus(self.workdir)
        self.robot_files = [str(ROOT / "assets" / "urdf" / "lsa7_arm.urdf"),
                            str(ROOT / "assets" / "urdf" / "twin_arm_torso.urdf"),
                            str(ROOT / "tests" / "data" / "boom_payload.urdf"), str(self.workdir / "pendulum.xml")]

    def make(self, k: int) -> tuple[str, str, bytes, Path]:
        rng = random.Random(f"{self.seed}:{k}")
        section = rng.choice(sorted(SECTIONS))
        name, doc = rng.choice(self.docs[section])
        folder = self.workdir / f"t{k % 64}"
        folder.mkdir(exist_ok=True)
        robot_files = self.robot_files
        if section == "robot" and rng.random() < 0.4:       # a mutated copy of a robot file, beside its meshes
            original = Path(rng.choice(self.robot_files))
            copy_to = folder / ("robot" + original.suffix)
            copy_to.write_text(mutate_xml(original.read_text(), rng))
            if original.parent.name == "urdf" and not (folder / "meshes").exists():
                (folder / "meshes").symlink_to(original.parent / "meshes")
            doc = copy.deepcopy(doc)
            doc["robot"] = {**(doc.get("robot") or {}), "file": copy_to.name}
            robot_files = [str(copy_to)]
            if rng.random() < 0.5:
                return section, name, json.dumps(doc).encode(), folder
        mutant = mutate_section(doc, section, rng, robot_files)
        return section, name, json.dumps(mutant, indent=rng.choice((None, 2))).encode(), folder


def fuzz(n: int, seed: int, budget_s: float = math.inf, command_line_every: int = 8) -> dict:
    """``n`` trials (or as many as ``budget_s`` allows): counts of each outcome by section, the slowest trial."""
    np.seterr(all="ignore")
    counts: dict = {}
    slowest = (0.0, "")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="limbstudio-fuzz-") as tmp, contextlib.chdir(tmp):
        trials = Trials(seed, Path(tmp))                     # (in tmp: MuJoCo writes MUJOCO_LOG.TXT where it runs)
        for k in range(n):
            if time.perf_counter() - start > budget_s:
                break
            section, name, data, folder = trials.make(k)
            label = f"{section}/{name} mutant {k} (seed {seed})"
            t0 = time.perf_counter()
            try:
                if k % command_line_every == 0:
                    outcome, _ = check_command_line(data, folder, Path(tmp) / "out")
                else:
                    outcome, _ = check_document(data, folder, label)
            except Exception as exc:                          # noqa: BLE001 — the failure the fuzzer looks for
                raise AssertionError(f"{label}: {type(exc).__name__}: {exc}\n{data[:3000]!r}") from exc
            key = (section, outcome)
            counts[key] = counts.get(key, 0) + 1
            slowest = max(slowest, (time.perf_counter() - t0, label))
    return {"counts": counts, "slowest_s": slowest[0], "slowest": slowest[1], "trials": sum(counts.values()),
            "seconds": time.perf_counter() - start}


def test_fuzz_contact_limit_collision_program_and_robot_sections():
    # (seed 32: 3 of 300 trials stop, every section fuzzed 52-67 times; seeds 33 and 34 pass too, with 2 stopped;
    # seed 31, used before the collisions section, has none stopped now)
    result = fuzz(int(os.environ.get("LIMBSTUDIO_FUZZ_SECTIONS", "300")), seed=32, budget_s=20.0)
    counts = result["counts"]
    for section in SECTIONS:                                 # every section fuzzed, each outcome seen
        assert sum(v for (s, _), v in counts.items() if s == section) >= 10, result
    for outcome in ("invalid", "complete", "stopped"):
        assert sum(v for (_, o), v in counts.items() if o == outcome) > 0, result
    assert result["slowest_s"] < 5.0, result


def test_fuzz_sections_through_the_command_line(tmp_path):
    """A handful of mutants through ``python -m core validate`` in a subprocess: exit 0 or 2, each file named, no
    traceback."""
    trials = Trials(11, tmp_path)
    files = []
    for k in range(10):
        _, _, data, folder = trials.make(k)
        file = folder / f"mutant_{k}.json"
        file.write_bytes(data)
        files.append(str(file))
    proc = subprocess.run([sys.executable, "-m", "core", "validate", *files], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for f in files:
        assert f"{f}: " in proc.stdout


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print(fuzz(n, seed))
