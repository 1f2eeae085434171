"""Compile a validated scene spec into a frozen :class:`~core.model.Model`.

Links are ordered depth-first from the roots, children in document order (the same rule as URDF import), so
coordinates follow that order. A body welded to another body by a fixed joint is no link: it is merged into the
link of its nearest ancestor that is one (as Pinocchio does, and MuJoCo's ``fusestatic``) — its inertia moved into
that link's frame and added, its shapes and named points placed in that frame, its pose kept in
``Model.frames`` — so the kernels pay only for links that move (Talos: 60 bodies, 33 links) and every reference
to it by name (constraints, forces, contacts, programs, the studio) goes through ``Model.body_frame``. Bodies
welded to the world stay links. Body inertias come from the explicit ``inertial`` or from the shapes (thesis
§2.8.3, eq. 2.77–2.78). The compiled model is checked for a positive-definite joint-space inertia at its initial
state (in O(N), :mod:`core.scene.pivots`), so a joint that moves no mass is reported with its path instead of
failing later inside a solve. :func:`compile_scene` raises :class:`SceneError` and nothing else: an unexpected
error while compiling is reported as a problem of the document.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..inertia import composite_inertia, shape_spatial_inertia, shape_volume
from ..model import BALL, FREE, JOINT_TYPES, Model, Shape, build_model
from ..spatial import quat_normalize, quat_to_rotation, spatial_inertia
from .entities import compile_constraints, compile_contacts, compile_forces, compile_limits
from .control import with_controllers
from .io import Problem, SceneError, internal_problem
from .placement import rotation_z_to, shape_pose as _shape_pose
from .paths import ROBOT_SECTIONS
from .robots import expand, remap_path
from .pivots import singular_pivots
from .schema import Body, Inertial, Scene

__all__ = ["compile_scene", "rotation_z_to"]


def _shape_size(shape) -> dict:
    if shape.type == "box":
        return {"size": tuple(shape.size)}
    if shape.type == "mesh":
        return {"size": tuple(shape.size), "file": shape.file, "scale": tuple(shape.scale),
                "offset": tuple(shape.offset)}
    if shape.type == "sphere":
        return {"radius": shape.radius}
    return {"radius": shape.radius, "length": shape.length}


def _body_inertia(body: Body) -> np.ndarray:
    """Spatial inertia of one document body about its own origin, in its axes: its ``inertial``, or its shapes'
    (a link's is the sum of its own and those of the bodies merged into it)."""
    if body.inertial is not None:
        return inertial_to_spatial(body.inertial)
    parts = []
    for shape in body.shapes:
        if shape.type == "mesh" or shape.purpose != "both":   # no mass (a body with none is refused earlier)
            continue
        size = _shape_size(shape)
        mass = shape.mass if shape.mass is not None else shape.density * shape_volume(shape.type, size)
        R, p = _shape_pose(shape)
        parts.append((shape_spatial_inertia(shape.type, size, mass), R, p))
    return composite_inertia(parts)


def inertial_to_spatial(inertial: Inertial) -> np.ndarray:
    """Spatial inertia about the body origin from explicit mass, centre of mass and inertia about the com."""
    Ixx, Iyy, Izz, Ixy, Ixz, Iyz = inertial.inertia
    I = np.array([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]])
    return spatial_inertia(inertial.mass, np.array(inertial.com), I)


def _order(spec: Scene) -> list[int]:
    """Body indices depth-first from the roots, children in document order."""
    children: dict[str, list[int]] = {}
    for i, b in enumerate(spec.bodies):
        children.setdefault(b.parent, []).append(i)
    order: list[int] = []
    stack = list(reversed(children.get("world", [])))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children.get(spec.bodies[i].name, [])))
    return order


def compile_scene(spec: Scene, source: str = "<scene>") -> Model:
    """Build the frozen :class:`Model` of a validated spec (raises :class:`SceneError` if its inertia is
    singular at the initial state, or a reference or an expression cannot be compiled — and nothing else)."""
    flat = spec
    try:
        if spec.robot is not None:
            flat = expand(spec)
        with np.errstate(all="ignore"):
            model = _compile_scene(flat, source)
        return model if flat is spec else dataclasses.replace(model, spec=spec)
    except SceneError as exc:
        problems = exc.problems
        if flat is not spec:                             # paths into the flat scene, as paths into the document
            counts = {key: len(getattr(flat, key)) - len(getattr(spec, key)) for key in ROBOT_SECTIONS}
            problems = [Problem(remap_path(p.path, counts), p.message, p.value, p.has_value) for p in problems]
        if (exc.source == "<scene>" and source != "<scene>") or flat is not spec:
            raise SceneError(problems, exc.source if exc.source != "<scene>" else source, exc.omitted) from None
        raise
    except Exception as exc:                             # noqa: BLE001 — reported, never a traceback
        raise SceneError([internal_problem("$", "compiling", exc)], source) from None


def _body_frames(spec: Scene, order: list[int]) -> tuple[list[int], dict[str, tuple[int, np.ndarray, np.ndarray]]]:
    """``(links, frames)``: the document index of each link's body, in link order, and for every body ``(link,
    R_LB, p_LB)``, its link and its frame in that link's frame. A body welded by a fixed joint to another body is
    merged into the link of its nearest ancestor that is a link; a fixed joint's child frame is its joint frame, so
    its pose composes the placements on the way down: ``R_LB = R_LP R_PB``, ``p_LB = p_LP + R_LP p_PB`` (``R_PB``,
    ``p_PB`` from the joint's ``orientation`` and ``position``). Every other body — one welded to the world
    included — is a link, in its own frame."""
    links: list[int] = []
    frames: dict[str, tuple[int, np.ndarray, np.ndarray]] = {}
    for i in order:                                      # depth-first: a parent comes before its children
        body = spec.bodies[i]
        if body.joint.type == "fixed" and body.parent != "world":
            k, R_LP, p_LP = frames[body.parent]
            R_PB = quat_to_rotation(quat_normalize(np.array(body.joint.orientation)))
            frames[body.name] = (k, R_LP @ R_PB, p_LP + R_LP @ np.array(body.joint.position, dtype=float))
        else:
            frames[body.name] = (len(links), np.eye(3), np.zeros(3))
            links.append(i)
    return links, frames


def _compile_scene(spec: Scene, source: str) -> Model:
    order = _order(spec)
    links, frames = _body_frames(spec, order)
    lists = {key: [] for key in ("link_names", "parent", "joint_type", "joint_link_names", "axis", "R_tree",
                                 "p_tree")}
    q0, qd0, armature = [], [], []
    for k, i in enumerate(links):
        body = spec.bodies[i]
        j = body.joint
        jt = JOINT_TYPES[j.type]
        R_PJ = quat_to_rotation(quat_normalize(np.array(j.orientation)))
        axis = np.array(getattr(j, "axis", (0.0, 0.0, 1.0)), dtype=float)
        axis /= np.linalg.norm(axis)
        # the joint frame in the parent's link: a parent merged into a link carries its placement there
        parent, R_LP, p_LP = (-1, np.eye(3), np.zeros(3)) if body.parent == "world" else frames[body.parent]
        lists["link_names"].append(body.name)
        lists["parent"].append(parent)
        lists["joint_type"].append(jt)
        lists["joint_link_names"].append(j.name or body.name)
        lists["axis"].append(axis)
        lists["R_tree"].append(R_LP @ R_PJ)
        lists["p_tree"].append(p_LP + R_LP @ np.array(j.position, dtype=float))
        q0_j, qd0_j = _initial_joint_state(j, jt, R_PJ)
        q0.extend(q0_j)
        qd0.extend(qd0_j)
        armature.extend([getattr(j, "armature", 0.0)] * len(qd0_j))
    # every body's mass, shapes and named points, moved into its link's frame (a link's own: the identity)
    parts: list[list] = [[] for _ in links]
    shapes, points = [], {}
    for i in order:
        body = spec.bodies[i]
        k, R_LB, p_LB = frames[body.name]
        parts[k].append((_body_inertia(body), R_LB, p_LB))          # thesis eq. 2.77, then additivity
        for shape in body.shapes:
            R, p = _shape_pose(shape)
            rgba = tuple(shape.color) + ((1.0,) if len(shape.color) == 3 else ())
            shapes.append(Shape(k, shape.type, _shape_size(shape), R_LB @ R, p_LB + R_LB @ p, rgba, body.name,
                                shape.purpose))
        for pname, p in body.points.items():
            points[(body.name, pname)] = (k, p_LB + R_LB @ np.array(p, dtype=float))
    lists["inertia"] = [composite_inertia(link_parts) for link_parts in parts]
    merged = {name: frame for name, frame in frames.items() if name not in lists["link_names"]}
    model = build_model(name=spec.name, gravity=np.array(spec.gravity, dtype=float), q0=q0, qd0=qd0,
                        named_points=points, frames=merged, shapes=shapes, settings=spec.simulation.model_dump(),
                        spec=spec, armature=armature, **lists)
    _check_inertia(model, spec, links, source)
    if spec.constraints or spec.forces:
        model = dataclasses.replace(model, constraints=compile_constraints(model, spec.constraints),
                                    forces=compile_forces(model, spec.forces))
    if any(getattr(b.joint, "limits", None) is not None for b in spec.bodies):
        limits, constraints = compile_limits(model, spec)
        model = dataclasses.replace(model, limits=limits, constraints=model.constraints + tuple(constraints))
    if spec.contacts or spec.ground is not None or spec.collisions is not None:
        contacts, constraints, forces = compile_contacts(model, spec)
        model = dataclasses.replace(model, contacts=contacts, constraints=model.constraints + tuple(constraints),
                                    forces=model.forces + tuple(forces))
    if spec.view.follow is not None and spec.view.follow not in model.body_names:
        raise SceneError([Problem("$.view.follow", f"unknown body; expected one of: {', '.join(model.body_names)}",
                                  spec.view.follow, True)], source)
    model = with_controllers(model, spec.controllers, source)
    if spec.programs:
        model = dataclasses.replace(model, programs=_programs(model, spec, source))
    return model


def _programs(model: Model, spec: Scene, source: str) -> tuple:
    """The control programs of the spec (:mod:`core.programs`): registered kinds, known parameters of the right
    type, values their class accepts, owned constraints that exist."""
    from ..programs import PROGRAMS, ProgramSpec
    problems, out = [], []
    names = set(model.constraint_names)
    for i, entry in enumerate(spec.programs):
        here = f"$.programs[{i}]"
        cls = PROGRAMS.get(entry.program)
        if cls is None:
            problems.append(Problem(f"{here}.program", f"unknown program; registered: {', '.join(sorted(PROGRAMS))}",
                                    entry.program, True))
            continue
        bad = False
        for key, value in entry.parameters.items():
            if key not in cls.parameters:
                problems.append(Problem(f"{here}.parameters.{key}", f"{entry.program} has no such parameter; its "
                                        f"parameters: {', '.join(cls.parameters)}", value, True))
                bad = True
            else:
                default = cls.parameters[key]
                if isinstance(default, str):
                    kind, ok = "a name", isinstance(value, str)
                elif isinstance(default, (list, tuple)):
                    kind, ok = f"a list of {len(default)} numbers", isinstance(value, list) and len(value) == len(default)
                else:
                    kind, ok = "a number", isinstance(value, (int, float)) and not isinstance(value, bool)
                if not ok:
                    problems.append(Problem(f"{here}.parameters.{key}", f"must be {kind}", value, True))
                    bad = True
        if not bad:
            checked = cls.check(dict(entry.parameters), model)
            flagged = {key for key, _ in checked}
            checked += [(key, message) for key, message in cls.check_owned(dict(entry.parameters),
                                                                          tuple(entry.constraints))
                        if key not in flagged]
            for key, message in checked:
                problems.append(Problem(f"{here}.parameters.{key}", message,
                                        entry.parameters.get(key, cls.parameters.get(key)), True))
        for k, name in enumerate(entry.constraints):
            if name not in names:
                problems.append(Problem(f"{here}.constraints[{k}]", "unknown constraint; a program owns constraints "
                                        "the scene declares", name, True))
        out.append(ProgramSpec(entry.name, entry.program, dict(entry.parameters), tuple(entry.constraints)))
    if problems:
        raise SceneError(problems, source)
    return tuple(out)


def _initial_joint_state(j, jt: int, R_PJ: np.ndarray) -> tuple[list[float], list[float]]:
    """q0 and qd0 of one joint in model coordinates (velocities of ball and free joints moved into the child
    frame: ω_C = R_PCᵀ ω_P, v_C = R_PCᵀ v_P)."""
    if jt == JOINT_TYPES["fixed"]:
        return [], []
    if jt == BALL:
        quat = quat_normalize(np.array(j.q0))
        R_PC = R_PJ @ quat_to_rotation(quat)
        return list(quat), list(R_PC.T @ np.array(j.qd0))
    if jt == FREE:
        quat = quat_normalize(np.array(j.q0[3:]))
        R_PC = R_PJ @ quat_to_rotation(quat)
        w, v = np.array(j.qd0[:3]), np.array(j.qd0[3:])
        return list(j.q0[:3]) + list(quat), list(R_PC.T @ w) + list(R_PC.T @ v)
    return [j.q0], [j.qd0]


def _check_inertia(model: Model, spec: Scene, links: list[int], source: str) -> None:
    """Refuse a model whose joint-space inertia is singular at q0, naming the joint (``links[k]``: the document
    index of link k's body)."""
    problems = [Problem(f"$.bodies[{links[k]}].joint (body {spec.bodies[links[k]].name!r})",
                        f"a degree of freedom of joint {model.joint_link_names[k]!r} moves no mass or inertia at the "
                        "initial state (the joint-space inertia matrix is singular): give the body or its "
                        "descendants mass properties, or start from another pose (q0)")
                for k in singular_pivots(model, model.q0)]
    if problems:
        raise SceneError(problems, source)
