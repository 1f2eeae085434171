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

:func:`ground_contacts` turns a scene's ``ground`` into one contact per body that has such shapes.

Between shapes (a scene's ``collisions``, :func:`shape_contacts`), each shape is also a *core* swept by a radius
(:mod:`core.geometry`): a sphere a point, a capsule a segment, a box a box. Two shapes touch where the points
standing for one (above) meet the other's core raised by its radius: a sphere's centre against the other's core
(exact for a sphere, a capsule or a box — a ball rolls over a box's edge), a capsule's two cap centres against
the other's core and its segment's sliding points (:func:`sliding_points`, :func:`core.geometry.crossing`: where
two capsules cross side by side or a capsule lies across a box's edge, the point inside the segment nearest the
other's edge; once against a capsule, on the one that can move, twice against a box), a box's corners against the
other's box and the other's corners against it, and one box's twelve edges sliding on the other's edges where
they cross (twice each: a plank's edge lying across a beam crosses both its top edges), a cylinder's rim points or
a mesh's hull points against a sphere's, capsule's or box's core. A cylinder
or a mesh against a cylinder or a mesh has no core on either side: such a pair is named in a warning and does
not collide; two shapes that overlap at the start (deeper than :data:`OVERLAP`) do not collide either, named in a
warning. The pairs are fixed when the scene compiles (every pair of touching shapes on two links that can
move relative to each other, not a parent and its child); the compiled step checks each one's exact distance
at every evaluation.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .io import Problem
from .placement import shape_pose

__all__ = ["RIM_POINTS", "MESH_DIRECTIONS", "shape_points", "sliding_points", "body_points", "ground_contacts", "touches",
           "world_plane", "shape_core", "shape_contacts", "ShapeContact"]

RIM_POINTS = 8
#: m: two shapes that overlap deeper than this at the start do not collide (named in a warning): an exact contact
#: cannot start inside a shape (links overlapping at a joint, a body added where another is).
OVERLAP = 1e-6
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


def ground_contacts(spec, model) -> tuple[list, list, list[Problem]]:
    """``(contacts, points, problems)`` of the scene's ``ground``: one :class:`ContactSpec` per body with shapes
    that touch it and that can move (not welded to the world; named ``<body>.ground``), the (point, radius) list of each, and what is wrong with the
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
    fixed = model.fixed_links                            # bodies welded to the world: they cannot fall onto it
    welded = {b.name for b in spec.bodies if model.body_frame(b.name)[0] in fixed}
    for body in spec.bodies:
        if body.name in g.exclude or body.name in own or body.name in welded or \
                (chosen is not None and body.name not in chosen):
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


# ---- shape against shape ---------------------------------------------------------------------------------

def shape_core(shape) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, float] | None:
    """``(kind, R, centre, half, radius)`` of a shape's core in its body's frame (:mod:`core.geometry`), None
    for a cylinder or a mesh (no core: they touch with their points only)."""
    from ..geometry import BOX, POINT, SEGMENT
    R, p = shape_pose(shape)
    if shape.type == "sphere":
        return POINT, R, p, np.zeros(3), float(shape.radius)
    if shape.type == "capsule":
        return SEGMENT, R, p, np.array([0.0, 0.0, 0.5 * shape.length]), float(shape.radius)
    if shape.type == "box":
        return BOX, R, p, 0.5 * np.array(shape.size, dtype=float), 0.0
    return None


@dataclass(frozen=True)
class ShapeContact:
    """One contact of the scene's ``collisions``: the points standing for shape ``shape_a`` of body ``body``
    (``points``, (r, radius) in its body frame) against the core of shape ``shape_b`` of body ``other``
    (``core`` = (kind, R, centre, half, radius) in that body's frame)."""
    name: str
    body: str
    shape_a: int
    other: str
    shape_b: int
    points: list
    core: tuple


def _filtered(a, b) -> bool:
    """MuJoCo's filter between two shapes: ``(contype_a & conaffinity_b) or (contype_b & conaffinity_a)``."""
    return bool((a.contype & b.conaffinity) or (b.contype & a.conaffinity))


def shape_contacts(spec, model) -> tuple[list[ShapeContact], list[Problem], list[str]]:
    """``(contacts, problems, notes)`` of the scene's ``collisions`` (module docstring): one
    :class:`ShapeContact` per pair of shapes that can touch, named ``<body>.<other>`` (``.<k>`` after it when
    the two bodies have more than one), what is wrong with its references, and the pairs left out (a cylinder
    or mesh against a cylinder or mesh)."""
    g = spec.collisions
    if g is None:
        return [], [], []
    problems: list[Problem] = []
    names = {b.name for b in spec.bodies}
    for key in ("bodies", "exclude"):
        for i, name in enumerate(getattr(g, key) or ()):
            if name not in names:
                problems.append(Problem(f"$.collisions.{key}[{i}]", "no such body", name, True))
    for key in ("exclude_pairs", "include_pairs"):
        for i, pair in enumerate(getattr(g, key)):
            for j, name in enumerate(pair):
                if name not in names:
                    problems.append(Problem(f"$.collisions.{key}[{i}][{j}]", "no such body", name, True))
    excluded = {frozenset(p) for p in g.exclude_pairs}
    included = {frozenset(p) for p in g.include_pairs}
    chosen = set(g.bodies) if g.bodies is not None else None
    bodies = [b for b in spec.bodies if b.name not in g.exclude and (chosen is None or b.name in chosen)
              and any(touches(s) for s in b.shapes)]
    link_of = {b.name: model.body_frame(b.name)[0] for b in bodies}
    fixed = model.fixed_links
    from ..points import link_kinematics
    kin = link_kinematics(model, model.q0)
    taken = {c.name for c in spec.contacts} | {c.name for c in spec.constraints}
    out: list[ShapeContact] = []
    notes: list[str] = []
    for i, A in enumerate(bodies):
        for B in bodies[i + 1:]:
            la, lb = link_of[A.name], link_of[B.name]
            pair = frozenset((A.name, B.name))
            if la == lb or pair in excluded or (la in fixed and lb in fixed):
                continue
            related = int(model.parent[la]) == lb or int(model.parent[lb]) == la
            if related and pair not in included:
                continue
            found = []
            for ia, sa in enumerate(A.shapes):
                for ib, sb in enumerate(B.shapes):
                    if not (touches(sa) and touches(sb) and _filtered(sa, sb)):
                        continue
                    sides = _sides(A, ia, sa, B, ib, sb, la in fixed, lb in fixed)
                    if not sides:
                        notes.append(f"shapes {A.name}[{ia}] ({sa.type}) and {B.name}[{ib}] ({sb.type}) do not "
                                     "collide: neither is a sphere, a capsule or a box")
                        continue
                    depth = max(_overlap(model, kin, side) for side in sides)
                    if depth > OVERLAP:
                        notes.append(f"shapes {A.name}[{ia}] ({sa.type}) and {B.name}[{ib}] ({sb.type}) overlap by "
                                     f"{depth:.3g} m at the start: they do not collide (move one apart, or list "
                                     "the pair in the collisions' exclude_pairs)")
                        continue
                    found.extend(sides)
            for k, (body, ia, other, ib, points, core) in enumerate(found):
                name = f"{A.name}.{B.name}" + (f".{k}" if len(found) > 1 else "")
                if name in taken:
                    problems.append(Problem("$.collisions", f"the contact between {A.name!r} and {B.name!r} would be "
                                            f"named {name!r}, which the scene already uses; rename that one",
                                            name, True))
                    continue
                out.append(ShapeContact(name, body.name, ia, other.name, ib, points, core))
    return out, problems, notes


def sliding_points(shape, other: str = "capsule") -> list[tuple]:
    """A shape's sliding contact points against a shape of type ``other`` (:func:`core.geometry.crossing`), as
    ``(centre, radius, unit axis, half-length, faces, rank)`` in its body's frame: a capsule's segment (faces
    None) against a capsule once (rank −1: no sibling), against a box twice (ranks 0 and 1: a segment lying
    across a box's face crosses two of its edges); a box's twelve edges (radius 0, with their two faces' outward
    normals) twice each against a box; none otherwise. A segment's two (its siblings) come together, rank 0 first
    (:func:`core.contacts.contact_elements` pairs them so)."""
    R, p = shape_pose(shape)
    if shape.type == "capsule" and other in ("capsule", "box"):
        segment = (p.copy(), float(shape.radius), R[:, 2].copy(), 0.5 * float(shape.length), None)
        return [segment + (-1,)] if other == "capsule" else [segment + (0,), segment + (1,)]
    if shape.type != "box" or other != "box":
        return []
    h = 0.5 * np.asarray(shape.size, dtype=float)
    out = []
    for a in range(3):
        i1, i2 = (a + 1) % 3, (a + 2) % 3
        for s1, s2 in itertools.product((-1.0, 1.0), repeat=2):
            centre, f1, f2 = np.zeros(3), np.zeros(3), np.zeros(3)
            centre[i1], centre[i2] = s1 * h[i1], s2 * h[i2]
            f1[i1], f2[i2] = s1, s2
            edge = (p + R @ centre, 0.0, R[:, a].copy(), float(h[a]), np.array([R @ f1, R @ f2]))
            out.extend([edge + (0,), edge + (1,)])
    return out


def _sides(A, ia, sa, B, ib, sb, fixed_a=False, fixed_b=False) -> list[tuple]:
    """How two shapes touch: (point body, its shape, core body, its shape, points, core) for each side whose
    points meet the other's core (module docstring); a capsule against a capsule or a box also slides its segment's
    points on the other's edges, and a box against a box its edges on the other's, on one side of the pair (the
    capsule against a box; of two capsules or two boxes, the one that can move, of one welded to the world and
    one free: ``fixed_a``, ``fixed_b``)."""
    ca, cb = shape_core(sa), shape_core(sb)
    if sa.type == "sphere" and cb is not None:
        return [(A, ia, B, ib, shape_points(sa), cb)]
    if sb.type == "sphere" and ca is not None:
        return [(B, ib, A, ia, shape_points(sb), ca)]
    # the sliding point on the capsule that moves: where the core's body turns under a sliding point (a log rolling
    # under a bar's point), the stick rows hold the slip to first order in dt only, on the moving side to second
    slide_on_b = (sb.type == "capsule" and sa.type != "capsule") or \
        (sb.type == sa.type and fixed_a and not fixed_b)
    out = []
    if cb is not None:
        out.append((A, ia, B, ib, shape_points(sa) + ([] if slide_on_b else sliding_points(sa, sb.type)), cb))
    if ca is not None and (cb is None or sb.type in ("capsule", "box")):
        out.append((B, ib, A, ia, shape_points(sb) + (sliding_points(sb, sa.type) if slide_on_b and cb is not None
                                                      else []), ca))
    return out


def _overlap(model, kin, side) -> float:
    """How deep the points of one side of a shape pair (:func:`_sides`) are inside the other shape at the
    configuration of ``kin`` (m; 0 when none is)."""
    from ..contacts import core_distance, segment_separation
    body, _, other, _, points, (kind, R, centre, half, radius) = side
    la, R_LA, p_LA = model.body_frame(body.name)
    lb, R_LB, p_LB = model.body_frame(other.name)
    deepest = 0.0
    R_core = kin.R_WL[lb] @ R_LB @ R
    origin = kin.p_WL[lb] + kin.R_WL[lb] @ (p_LB + R_LB @ centre)
    for point in points:
        r, rad = point[0], point[1]
        x = kin.p_WL[la] + kin.R_WL[la] @ (p_LA + R_LA @ r)
        if len(point) > 2:                                    # a sliding point: its segment against the core
            e = kin.R_WL[la] @ R_LA @ point[2]
            faces = None if point[4] is None else (R_core.T @ kin.R_WL[la] @ R_LA @ np.asarray(point[4]).T).T
            h = segment_separation(kind, half, R_core.T @ (x - origin), R_core.T @ e, point[3], rad + radius,
                                   faces)[0]
            deepest = max(deepest, -h)
            continue
        phi = core_distance(kin, x, lb, p_LB + R_LB @ centre, R_LB @ R, kind, half)[0]
        deepest = max(deepest, rad + radius - phi)
    return deepest
