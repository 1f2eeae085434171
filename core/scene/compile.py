"""Compile a validated scene spec into a frozen :class:`~core.model.Model`.

Links are ordered depth-first from the roots, children in document order (the same rule as URDF import), so
coordinates follow that order. Link inertias come from the explicit ``inertial`` or from the shapes (thesis
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


def _link_inertia(body: Body) -> np.ndarray:
    if body.inertial is not None:
        return inertial_to_spatial(body.inertial)
    parts = []
    for shape in body.shapes:
        if shape.type == "mesh":                         # drawn only (a body with only meshes is refused earlier)
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
            nb, nc = len(flat.bodies) - len(spec.bodies), len(flat.constraints) - len(spec.constraints)
            problems = [Problem(remap_path(p.path, nb, nc), p.message, p.value, p.has_value) for p in problems]
        if (exc.source == "<scene>" and source != "<scene>") or flat is not spec:
            raise SceneError(problems, exc.source if exc.source != "<scene>" else source, exc.omitted) from None
        raise
    except Exception as exc:                             # noqa: BLE001 — reported, never a traceback
        raise SceneError([internal_problem("$", "compiling", exc)], source) from None


def _compile_scene(spec: Scene, source: str) -> Model:
    order = _order(spec)
    link_of = {spec.bodies[i].name: k for k, i in enumerate(order)}
    lists = {key: [] for key in ("link_names", "parent", "joint_type", "joint_link_names", "axis", "R_tree",
                                 "p_tree", "inertia")}
    q0, qd0, shapes, points = [], [], [], {}
    for k, i in enumerate(order):
        body = spec.bodies[i]
        j = body.joint
        jt = JOINT_TYPES[j.type]
        R_PJ = quat_to_rotation(quat_normalize(np.array(j.orientation)))
        axis = np.array(getattr(j, "axis", (0.0, 0.0, 1.0)), dtype=float)
        axis /= np.linalg.norm(axis)
        lists["link_names"].append(body.name)
        lists["parent"].append(-1 if body.parent == "world" else link_of[body.parent])
        lists["joint_type"].append(jt)
        lists["joint_link_names"].append(j.name or body.name)
        lists["axis"].append(axis)
        lists["R_tree"].append(R_PJ)
        lists["p_tree"].append(np.array(j.position, dtype=float))
        lists["inertia"].append(_link_inertia(body))
        q0_j, qd0_j = _initial_joint_state(j, jt, R_PJ)
        q0.extend(q0_j)
        qd0.extend(qd0_j)
        for shape in body.shapes:
            R, p = _shape_pose(shape)
            rgba = tuple(shape.color) + ((1.0,) if len(shape.color) == 3 else ())
            shapes.append(Shape(k, shape.type, _shape_size(shape), R, p, rgba))
        for pname, p in body.points.items():
            points[(body.name, pname)] = (k, np.array(p, dtype=float))
    model = build_model(name=spec.name, gravity=np.array(spec.gravity, dtype=float), q0=q0, qd0=qd0,
                        named_points=points, shapes=shapes, settings=spec.simulation.model_dump(), spec=spec,
                        **lists)
    _check_inertia(model, spec, order, source)
    if spec.constraints or spec.forces:
        model = dataclasses.replace(model, constraints=compile_constraints(model, spec.constraints),
                                    forces=compile_forces(model, spec.forces))
    if any(getattr(b.joint, "limits", None) is not None for b in spec.bodies):
        limits, constraints = compile_limits(model, spec)
        model = dataclasses.replace(model, limits=limits, constraints=model.constraints + tuple(constraints))
    if spec.contacts:
        contacts, constraints, forces = compile_contacts(model, spec)
        model = dataclasses.replace(model, contacts=contacts, constraints=model.constraints + tuple(constraints),
                                    forces=model.forces + tuple(forces))
    if spec.view.follow is not None and spec.view.follow not in model.link_names:
        raise SceneError([Problem("$.view.follow", f"unknown body; expected one of: {', '.join(model.link_names)}",
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
            elif isinstance(cls.parameters[key], str) != isinstance(value, str):
                kind = "a name" if isinstance(cls.parameters[key], str) else "a number"
                problems.append(Problem(f"{here}.parameters.{key}", f"must be {kind}", value, True))
                bad = True
        if not bad:
            for key, message in cls.check(dict(entry.parameters), model):
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


def _check_inertia(model: Model, spec: Scene, order: list[int], source: str) -> None:
    problems = [Problem(f"$.bodies[{order[k]}].joint (body {spec.bodies[order[k]].name!r})",
                        f"a degree of freedom of joint {model.joint_link_names[k]!r} moves no mass or inertia at the "
                        "initial state (the joint-space inertia matrix is singular): give the body or its "
                        "descendants mass properties, or start from another pose (q0)")
                for k in singular_pivots(model, model.q0)]
    if problems:
        raise SceneError(problems, source)
