"""Compile the constraint and force entities of a validated spec into the arrays the step uses.

Points are resolved against the model's named points; points and directions given in the frame of a body merged
into a link (a contact's shape corners, a plane fixed in the body) are moved into that link's frame
(:meth:`core.model.Model.body_frame`); world-fixed quantities given "at the initial configuration" (a hinge's
anchor and axis, a nail's default position) are moved into link coordinates with the forward kinematics of q0.

Every compiled constraint gets its ``jacobian_scale`` (the Frobenius norm of its rows at q0, 1 if they vanish
there: the floor of the rank tests, :mod:`core.formulations`). A joint-space constraint's expression is checked
to be differentiable at q0 (:func:`core.joint_constraints.derivative_problems`); a problem raises
:class:`SceneError` with the JSON path of the expression.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..constraints import (NAIL, POINT_ON_LINE, POINT_ON_PLANE, POINT_TO_POINT, POINT_VELOCITY, PointConstraint,
                           perpendicular_basis)
from ..contacts import constraint_jacobian
from ..forces import ACTUATOR, DRAG, JOINT_SPRING, POINT_FORCE, SPRING, AppliedForce
from ..joint_constraints import JointSpaceConstraint, derivative_problems, joint_space_rows, parse_expression
from ..kinematics import normalize_configuration
from ..points import link_kinematics, position_at
from . import limits
from .collision import body_points, ground_contacts, shape_contacts, world_plane
from .io import Problem, SceneError
from .placement import shape_pose

__all__ = ["compile_constraints", "compile_forces"]


def _end(model, body: str, point):
    """(link, point) of one end; the world is link -1 with the point in world coordinates."""
    if body == "world":
        return -1, np.array(point, dtype=float)
    return model.resolve_point(body, point)


def _common(c) -> dict:
    return dict(stabilization=float(c.stabilization), max_force=float(c.max_force),
                max_deviation=float(c.max_deviation) if c.max_deviation is not None else np.inf, enabled=c.enabled)


def _joint_space(model, c, n: int):
    """Compile a joint-space constraint (names already checked to be hinge or slider joints)."""
    expr = parse_expression(c.expression)
    names = tuple(sorted(expr.names))
    q_index = np.array([model.q_slice(j).start for j in names], dtype=np.int64)
    v_index = np.array([model.qd_slice(j).start for j in names], dtype=np.int64)
    links = tuple(model.joint_link_names.index(j) for j in names)
    out = JointSpaceConstraint(c.name, c.name, expr, names, q_index, v_index, links, float(c.value),
                               **_common(c))
    problems = derivative_problems(out, model.q0)
    if problems:
        raise SceneError([Problem(f"$.constraints[{n}].expression", p, c.expression, True) for p in problems])
    J = joint_space_rows(out, model.q0, np.zeros(model.nv), model.nv)[2]
    return dataclasses.replace(out, jacobian_scale=_scale(J))


def _scale(J: np.ndarray) -> float:
    """The Jacobian scale of a constraint: the norm of its rows at q0, or 1 where they vanish."""
    s = float(np.linalg.norm(J))
    return s if s > 1e-12 else 1.0


def _point_scale(model, kin, c: PointConstraint) -> PointConstraint:
    return dataclasses.replace(c, jacobian_scale=_scale(constraint_jacobian(model, kin, model.q0, c)))


def compile_constraints(model, specs) -> tuple:
    kin = link_kinematics(model, model.q0)
    return tuple(c if not isinstance(c, PointConstraint) else _point_scale(model, kin, c)
                 for c in _compile(model, kin, specs))


def _compile(model, kin, specs) -> list:
    out = []
    I3 = np.eye(3)
    for n, c in enumerate(specs):
        if c.type == "joint_space":
            out.append(_joint_space(model, c, n))
            continue
        if c.type == "hinge":
            axis = np.array(c.axis, dtype=float)
            axis /= np.linalg.norm(axis)
            la, lb = model.link_index(c.body_a), (-1 if c.body_b == "world" else model.link_index(c.body_b))
            for n, sign in ((1, -0.5), (2, 0.5)):
                x = np.array(c.anchor) + sign * c.spacing * axis
                r_a = kin.R_WL[la].T @ (x - kin.p_WL[la])
                r_b = x if lb < 0 else kin.R_WL[lb].T @ (x - kin.p_WL[lb])
                out.append(PointConstraint(f"{c.name}.p{n}", c.name, POINT_TO_POINT, la, r_a, lb, r_b, I3,
                                           **_common(c)))
            continue
        if c.type == "point_to_point":
            la, ra = _end(model, c.body_a, c.point_a)
            lb, rb = _end(model, c.body_b, c.point_b)
            out.append(PointConstraint(c.name, c.name, POINT_TO_POINT, la, ra, lb, rb, I3, **_common(c)))
            continue
        la, ra = _end(model, c.body, c.point)
        if c.type == "nail":
            position = position_at(kin, la, ra) if c.position is None else np.array(c.position, dtype=float)
            path = None
            if c.path is not None:
                path = (np.array(c.path.velocity), np.array(c.path.amplitude), c.path.frequency, c.path.phase)
            out.append(PointConstraint(c.name, c.name, NAIL, la, ra, -1, position, I3, path=path, **_common(c)))
        elif c.type == "point_on_line":
            basis = perpendicular_basis(np.array(c.direction, dtype=float))
            out.append(PointConstraint(c.name, c.name, POINT_ON_LINE, la, ra, -1, np.array(c.origin, dtype=float),
                                       basis, **_common(c)))
        elif c.type == "point_on_plane":
            n = np.array(c.normal, dtype=float)
            basis = (n / np.linalg.norm(n)).reshape(3, 1)
            out.append(PointConstraint(c.name, c.name, POINT_ON_PLANE, la, ra, -1, np.array(c.origin, dtype=float),
                                       basis, **_common(c)))
        elif c.type == "point_velocity":
            out.append(PointConstraint(c.name, c.name, POINT_VELOCITY, la, ra, -1, np.zeros(3), I3,
                                       target_velocity=np.array(c.velocity, dtype=float), **_common(c)))
    return out


def compile_forces(model, specs) -> tuple[AppliedForce, ...]:
    out = []
    for f in specs:
        if f.type == "spring":
            la, ra = _end(model, f.body_a, f.point_a)
            lb, rb = _end(model, f.body_b, f.point_b)
            out.append(AppliedForce(f.name, SPRING, la, ra, lb, rb, stiffness=f.stiffness, damping=f.damping,
                                    rest=f.rest_length))
        elif f.type == "joint_spring":
            out.append(AppliedForce(f.name, JOINT_SPRING, dof=model.qd_slice(f.joint).start,
                                    qdof=model.q_slice(f.joint).start, stiffness=f.stiffness, damping=f.damping,
                                    rest=f.rest))
        elif f.type == "drag":
            la, ra = _end(model, f.body, f.point)
            out.append(AppliedForce(f.name, DRAG, la, ra, linear=f.linear, quadratic=f.quadratic))
        elif f.type == "actuator":
            lo, hi = f.force_range if f.force_range is not None else (-np.inf, np.inf)
            limit = f.limit if f.limit is not None else hi if f.force_range is not None and lo == -hi else np.inf
            out.append(AppliedForce(f.name, ACTUATOR, dof=model.qd_slice(f.joint).start,
                                    qdof=model.q_slice(f.joint).start, torque=f.torque, limit=limit,
                                    gain=f.gain, bias=tuple(f.bias),
                                    command_range=tuple(f.command_range or (-np.inf, np.inf)),
                                    force_range=None if f.force_range is None else tuple(f.force_range)))
        elif f.type == "point_force":
            la, ra = _end(model, f.body, f.point)
            out.append(AppliedForce(f.name, POINT_FORCE, la, ra, force=np.array(f.force, dtype=float),
                                    start=f.start, stop=f.stop if f.stop is not None else np.inf))
    return tuple(out)


def compile_contacts(model, spec) -> tuple[tuple, list, list]:
    """``(contacts, constraints, forces)`` of the spec's contacts (:mod:`core.contacts`) and of its ground
    (:func:`core.scene.collision.ground_contacts`): their rows and friction elements are appended after the
    model's own constraints and forces."""
    from ..contacts import contact_elements
    contacts, constraints, forces = [], [], []
    bodies = {b.name: b for b in spec.bodies}
    gravity = np.array(spec.gravity, dtype=float)
    kin = link_kinematics(model, model.q0)
    grounds, ground_points, problems = ground_contacts(spec, model)
    slot = 0
    listed = [(c, f"$.contacts[{n}]", None) for n, c in enumerate(spec.contacts)]
    for c, here, given in listed + [(c, "$.ground", p) for c, p in zip(grounds, ground_points)]:
        link, R_LB, p_LB = model.body_frame(c.body)
        if c.points is None:
            points = body_points(bodies[c.body]) if given is None else given
            if not points:
                problems.append(Problem(f"{here}.points", "the body has no shapes that touch (its shapes are "
                                        "visual only, or it has none): list the points", None))
                continue
            points = [(p_LB + R_LB @ r, radius) for r, radius in points]
        else:
            points = [(model.resolve_point(c.body, p)[1], 0.0) for p in c.points]
        if slot + len(points) > limits.MAX_CONTACT_POINTS:
            where = here + (".points" if c.points is not None else "")
            problems.append(Problem(where,
                                    f"the contacts so far have {slot + len(points)} points (this one "
                                    f"{len(points)}{', its shapes’ corners' if c.points is None else ''}), more "
                                    f"than the {limits.MAX_CONTACT_POINTS} a scene may have; "
                                    + ("name the bodies that should touch it in the ground's 'bodies' (or leave "
                                       "some out with 'exclude')" if here == "$.ground" else
                                       "list the points it should use"), len(points)))
            break
        plane = _contact_plane(c, bodies, gravity, here, problems)
        if plane is None:
            continue
        normal, origin = plane
        plane_link = -1
        if c.plane.body is not None:                     # the plane's body frame, in the frame of its link
            plane_link, R_LP, p_LP = model.body_frame(c.plane.body)
            normal, origin = R_LP @ normal, p_LP + R_LP @ origin
        contact, rows, elements = contact_elements(
            c.name, c.body, link, points, normal, origin, c.restitution, c.friction, c.rest_speed,
            c.stabilization, len(model.constraints) + len(constraints), len(model.forces) + len(forces), slot,
            tuple(model.qd_slice(j).start for j in c.impact_holds), c.liftoff_delay, plane_link,
            c.plane.body or "world")
        slot += len(contact.points)
        contacts.append(contact)
        constraints.extend(_point_scale(model, kin, _in_reach(model, r)) for r in rows)
        forces.extend(elements)
    pairs, more, notes = shape_contacts(spec, model)
    problems.extend(more)
    for note in notes:
        warnings.warn(f"collisions: {note}", stacklevel=4)
    g = spec.collisions
    for sc in pairs:
        if slot + len(sc.points) > limits.MAX_CONTACT_POINTS:
            problems.append(Problem("$.collisions", f"the contacts so far have {slot + len(sc.points)} points, more "
                                    f"than the {limits.MAX_CONTACT_POINTS} a scene may have; name the bodies that "
                                    "should collide in 'bodies' (or leave some out with 'exclude' or "
                                    "'exclude_pairs')", slot + len(sc.points)))
            break
        link, R_LB, p_LB = model.body_frame(sc.body)
        other, R_LO, p_LO = model.body_frame(sc.other)
        kind, R_core, centre, half, radius = sc.core
        points = [(p_LB + R_LB @ pt[0], pt[1]) + ((R_LB @ pt[2], pt[3], None if pt[4] is None else pt[4] @ R_LB.T,
                                                   pt[5]) if len(pt) > 2 else ()) for pt in sc.points]
        contact, rows, elements = contact_elements(
            sc.name, sc.body, link, points, (0.0, 0.0, 1.0), p_LO + R_LO @ centre, g.restitution, g.friction,
            g.rest_speed, g.stabilization, len(model.constraints) + len(constraints), len(model.forces) + len(forces),
            slot, plane_link=other, plane_body=sc.other, core=(kind, R_LO @ R_core, half, radius))
        slot += len(contact.points)
        contacts.append(contact)
        constraints.extend(_point_scale(model, kin, r) for r in rows)
        forces.extend(elements)
    if problems:
        raise SceneError(problems)
    return tuple(contacts), constraints, forces


_FACES = {"+x": (0, 1.0), "-x": (0, -1.0), "+y": (1, 1.0), "-y": (1, -1.0), "+z": (2, 1.0), "-z": (2, -1.0)}


def _contact_plane(c, bodies: dict, gravity: np.ndarray, here: str, problems: list):
    """(normal, origin) of contact ``c``'s plane — world coordinates for a ground plane, the plane body's frame
    otherwise (a box face: from the shape's pose and size); None with a problem added if it cannot be made."""
    plane = c.plane
    if plane.body is None:
        return world_plane(plane.normal, plane.origin, gravity)
    if plane.face is None:
        return (np.array(plane.normal or (0.0, 0.0, 1.0), dtype=float),
                np.array(plane.origin or (0.0, 0.0, 0.0), dtype=float))
    shapes = bodies[plane.body].shapes
    if plane.shape >= len(shapes) or shapes[plane.shape].type != "box":
        problems.append(Problem(f"{here}.plane.shape", f"body {plane.body!r} has no box shape number "
                                f"{plane.shape} (it has {len(shapes)} shapes); a face is a box's", plane.shape))
        return None
    shape = shapes[plane.shape]
    R, p = shape_pose(shape)
    axis, sign = _FACES[plane.face]
    e = np.zeros(3)
    e[axis] = sign
    return R @ e, p + R @ (0.5 * float(shape.size[axis]) * e)


def _in_reach(model, c):
    """A contact's tangential rows without the directions its point can never move in (a planar model's
    out-of-plane direction): a basis column whose row of J vanishes at q0 and at a perturbed configuration is
    dropped, so a planar hopper's contact has one friction row, not a row that is always zero."""
    if c.kind != POINT_VELOCITY or c.basis.shape[1] < 2:
        return c
    rng = np.random.default_rng(0)
    rows = []
    for q in (model.q0, normalize_configuration(model, model.q0 + 0.3 * rng.standard_normal(model.nq))):
        rows.append(constraint_jacobian(model, link_kinematics(model, q), q, c))
    scale = max(float(np.abs(np.vstack(rows)).max()), 1e-300)
    keep = [j for j in range(c.basis.shape[1]) if max(np.abs(r[j]).max() for r in rows) > 1e-12 * scale]
    if not keep or len(keep) == c.basis.shape[1]:
        return c
    return dataclasses.replace(c, basis=c.basis[:, keep])


def compile_limits(model, spec) -> tuple[tuple, list]:
    """``(limits, constraints)`` of the joints with ``limits`` (:class:`core.contacts.JointLimit`): two
    joint-space rows per joint, ``<joint>.lower`` (q = lower) and ``<joint>.upper`` (q = upper), inactive until
    the joint reaches them; they never break. Appended after the model's constraints."""
    from ..contacts import JointLimit
    limits, constraints = [], []
    for body in spec.bodies:
        j = body.joint
        if getattr(j, "limits", None) is None:
            continue
        name = j.name or body.name
        qi, vi = model.q_slice(name).start, model.qd_slice(name).start
        link = model.joint_link_names.index(name)
        rows = []
        var = name if name.isidentifier() else "q"     # (the row's own variable: a name such as joint_8.0 is none)
        for side, value in zip(("lower", "upper"), j.limits):
            rows.append(len(model.constraints) + len(constraints))
            constraints.append(JointSpaceConstraint(f"{name}.{side}", name, parse_expression(var), (var,),
                                                    np.array([qi]), np.array([vi]), (link,), float(value), 20.0,
                                                    np.inf, np.inf, enabled=False))
        limits.append(JointLimit(name, qi, vi, tuple(rows), tuple(float(x) for x in j.limits),
                                 float(j.limit_restitution), 0.01, j.type == "hinge"))
    return tuple(limits), constraints
