"""Where a body's shapes touch a plane: the contact points of its collision shapes, and the ground of a scene.

A contact (:mod:`core.contacts`) is a set of body-fixed points — each a point or the centre of a sphere of some
radius — against a plane. Which points stand for a shape:

- a sphere: its centre, with its radius (the plane touches its surface wherever it rolls: exact);
- a capsule: its two cap centres, with its radius (exact);
- a box: its eight corners (exact: a box meets a plane at a corner, an edge or a face);
- a cylinder: :data:`RIM_POINTS` points evenly spaced on each of its two rims (a cylinder meets a plane on a
  rim; the regular polygon inscribed in the rim stands for it, so a cylinder lying on its side rests on a prism's
  edge up to ``radius (1 − cos(π / RIM_POINTS))`` lower than the true one, 7.6 % of the radius);
- a mesh: the vertices of its convex hull that are furthest along the 14 directions of a 14-sided discrete
  orientation polytope (the axes and the corner diagonals of its frame), at most 14 points, fewer where two
  directions share a vertex or two picked vertices lie within 5 % of the mesh's extent of each other (a convex
  mesh meets a plane at a hull vertex; these are exact when the plane's normal is one of those directions in
  the mesh's frame — a foot or a sole standing as modelled — and otherwise stand for the hull as a 14-DOP
  does); its bounding box's corners if its file cannot be read.

Only shapes that touch count: ``purpose`` ``both`` or ``collision``, and, against a ground, MuJoCo's filter
``(contype & ground.conaffinity) or (ground.contype & conaffinity)``.

:func:`ground_contacts` turns a scene's ``ground`` into one contact per body that has such shapes. Shape–shape
contacts (a broad phase and a narrow phase between shapes) are not built yet: shapes touch planes only.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .io import Problem
from .placement import shape_pose

__all__ = ["RIM_POINTS", "MESH_DIRECTIONS", "shape_points", "body_points", "ground_contacts", "touches",
           "world_plane"]

RIM_POINTS = 8
#: The 14 directions whose furthest hull vertices stand for a mesh (a 14-DOP), unit vectors in the mesh's frame.
MESH_DIRECTIONS = np.vstack([np.eye(3), -np.eye(3), np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
                             / math.sqrt(3.0)])
MERGE_FRACTION = 0.05


def touches(shape, ground=None) -> bool:
    """Whether ``shape`` touches planes (its ``purpose``), and the ``ground`` (its contype/conaffinity filter)."""
    if shape.purpose == "visual":
        return False
    if ground is None:
        return True
    return bool((shape.contype & ground.conaffinity) or (ground.contype & shape.conaffinity))


def _mesh_points(shape) -> np.ndarray | None:
    """The 14-DOP support vertices of a mesh shape's convex hull, in the shape's frame (None: unreadable)."""
    from ..meshfile import MeshError, read_mesh
    try:
        mesh = read_mesh(shape.file)
    except (MeshError, OSError, ValueError):
        return None
    v = np.asarray(mesh.vertices, dtype=float) * np.asarray(shape.scale, dtype=float)
    if v.shape[0] == 0 or not np.all(np.isfinite(v)):
        return None
    v = v + np.asarray(shape.offset, dtype=float)          # the shape's frame (the file's origin at ``offset``)
    if v.shape[0] > 4:
        try:
            from scipy.spatial import ConvexHull
            v = v[ConvexHull(v).vertices]
        except Exception:                               # noqa: BLE001 — flat or degenerate: all its vertices
            pass
    extent = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    kept: list[np.ndarray] = []
    for d in MESH_DIRECTIONS:
        x = v[int(np.argmax(v @ d))]
        if all(np.linalg.norm(x - y) > MERGE_FRACTION * extent for y in kept):
            kept.append(x)
    return np.array(kept)


def shape_points(shape) -> list[tuple[np.ndarray, float]]:
    """(point, radius) pairs standing for one shape (module docstring), in its body's frame."""
    R, p = shape_pose(shape)
    if shape.type == "sphere":
        return [(p.copy(), float(shape.radius))]
    if shape.type == "capsule":
        return [(p + R @ np.array([0.0, 0.0, s * shape.length]), float(shape.radius)) for s in (-0.5, 0.5)]
    if shape.type == "cylinder":
        out = []
        for s in (-0.5, 0.5):
            for k in range(RIM_POINTS):
                a = 2.0 * math.pi * k / RIM_POINTS
                local = np.array([shape.radius * math.cos(a), shape.radius * math.sin(a), s * shape.length])
                out.append((p + R @ local, 0.0))
        return out
    if shape.type == "mesh":
        local = _mesh_points(shape)
        if local is not None:
            return [(p + R @ x, 0.0) for x in local]
    h = 0.5 * np.array(shape.size, dtype=float)           # a box, or a mesh read as its bounding box
    return [(p + R @ (h * np.array(s)), 0.0) for s in itertools.product((-1.0, 1.0), repeat=3)]


def body_points(body, ground=None) -> list[tuple[np.ndarray, float]]:
    """(point, radius) of the shapes of ``body`` that touch (``ground``: and pass its filter), in its frame."""
    return [pt for shape in body.shapes if touches(shape, ground) for pt in shape_points(shape)]


def world_plane(normal, origin, gravity) -> tuple[np.ndarray, np.ndarray]:
    """``(unit normal, origin)`` of a plane fixed in the world: ``normal`` if given, else against ``gravity``, else
    +z; ``origin`` if given, else the world's origin."""
    if normal is not None:
        n = np.array(normal, dtype=float)
    elif np.linalg.norm(gravity) > 0:
        n = -np.asarray(gravity, dtype=float)
    else:
        n = np.array([0.0, 0.0, 1.0])
    return n / np.linalg.norm(n), np.array(origin if origin is not None else (0.0, 0.0, 0.0), dtype=float)


def _same_plane(a, b) -> bool:
    (n1, o1), (n2, o2) = a, b
    return float(n1 @ n2) > 1.0 - 1e-12 and abs(float(n1 @ (o2 - o1))) <= 1e-12 * (1.0 + np.linalg.norm(o2 - o1))


def ground_contacts(spec) -> tuple[list, list, list[Problem]]:
    """``(contacts, points, problems)`` of the scene's ``ground``: one :class:`ContactSpec` per body with shapes
    that touch it (named ``<body>.ground``), the (point, radius) list of each, and what is wrong with the
    ground's references (a body it names that does not exist, a name taken)."""
    from .schema import ContactPlane, ContactSpec
    g = spec.ground
    if g is None:
        return [], [], []
    problems = []
    names = {b.name for b in spec.bodies}
    for key in ("bodies", "exclude"):
        for i, name in enumerate(getattr(g, key) or ()):
            if name not in names:
                problems.append(Problem(f"$.ground.{key}[{i}]", "no such body", name, True))
    taken = {c.name for c in spec.contacts} | {c.name for c in spec.constraints}
    contacts, points = [], []
    chosen = set(g.bodies) if g.bodies is not None else None
    plane = world_plane(g.normal, g.origin, spec.gravity)
    own = {c.body for c in spec.contacts if c.plane.body is None
           and _same_plane(plane, world_plane(c.plane.normal, c.plane.origin, spec.gravity))}
    for body in spec.bodies:
        if body.name in g.exclude or body.name in own or (chosen is not None and body.name not in chosen):
            continue
        pts = body_points(body, g)
        if not pts:
            continue
        name = f"{body.name}.ground"
        if name in taken:
            problems.append(Problem("$.ground", f"the ground's contact with body {body.name!r} would be named "
                                    f"{name!r}, which the scene already uses; rename that one", name, True))
            continue
        contacts.append(ContactSpec(name=name, body=body.name,
                                    plane=ContactPlane(origin=g.origin, normal=g.normal),
                                    restitution=g.restitution, friction=g.friction, rest_speed=g.rest_speed,
                                    stabilization=g.stabilization, liftoff_delay=g.liftoff_delay))
        points.append(pts)
    return contacts, points, problems
