"""Triangle meshes of a model's shapes, built once per shape and then only moved (:mod:`studio.viewport`).

Thread: any. These are plain data builders (NumPy and :class:`pyqtgraph.opengl.MeshData`); nothing here touches an
OpenGL context.

Every mesh is in the shape's own frame S: centred on its origin, with cylinders and capsules along local z
(``core.model.Shape``: a box's ``size`` holds full edge lengths; a capsule's ``length`` excludes its caps). Faces
are wound counter-clockwise seen from outside, so the normals MeshData derives point outwards; each flat face has
its own vertices, so smooth shading keeps box edges and cylinder rims sharp.
"""
from __future__ import annotations

import numpy as np
from pyqtgraph.opengl import MeshData

from .framing import shape_half_extents

__all__ = ["shape_mesh", "shape_half_extents", "box_mesh", "sphere_mesh", "cylinder_mesh", "capsule_mesh"]

COLS = 40          # segments around a round shape's axis
ROWS_SPHERE = 20   # latitude bands of a sphere
ROWS_CAP = 10      # latitude bands of each hemispherical cap of a capsule


def shape_mesh(shape) -> MeshData:
    """The mesh of a ``core.model.Shape`` in its own frame."""
    size = shape.size
    if shape.kind == "box":
        return box_mesh(size["size"])
    if shape.kind == "sphere":
        return sphere_mesh(size["radius"])
    if shape.kind == "cylinder":
        return cylinder_mesh(size["radius"], size["length"])
    if shape.kind == "capsule":
        return capsule_mesh(size["radius"], size["length"])
    raise ValueError(f"cannot draw a shape of kind {shape.kind!r} (box, sphere, cylinder or capsule)")


def box_mesh(size) -> MeshData:
    """A box with full edge lengths ``size`` (3,): 6 faces of 4 own vertices each."""
    h = 0.5 * np.asarray(size, dtype=float)
    verts, faces = [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.roll(n, 1)                 # u × v = n for both signs: counter-clockwise seen from outside
            v = np.cross(n, u)
            c = n * h
            hu, hv = abs(u @ h), abs(v @ h)
            base = len(verts)
            verts += [c - u * hu - v * hv, c + u * hu - v * hv, c + u * hu + v * hv, c - u * hu + v * hv]
            faces += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
    return MeshData(vertexes=np.array(verts, dtype=np.float32), faces=np.array(faces, dtype=np.uint32))


def sphere_mesh(radius: float) -> MeshData:
    """A sphere of ``radius`` (pyqtgraph's builder, faces turned outwards)."""
    md = MeshData.sphere(ROWS_SPHERE, COLS, radius=float(radius))
    return _outward(md.vertexes(), md.faces())


def cylinder_mesh(radius: float, length: float) -> MeshData:
    """A closed solid cylinder along z, centred: pyqtgraph's open tube plus two flat end discs."""
    tube = MeshData.cylinder(1, COLS, radius=[float(radius), float(radius)], length=float(length))
    tube_v = tube.vertexes().astype(float) - [0.0, 0.0, 0.5 * length]
    parts = [(tube_v, tube.faces())]
    th = np.linspace(0.0, 2.0 * np.pi, COLS, endpoint=False)
    ring = np.column_stack([radius * np.cos(th), radius * np.sin(th), np.zeros(COLS)])
    for z in (0.5 * length, -0.5 * length):
        v = np.vstack([[0.0, 0.0, z], ring + [0.0, 0.0, z]])
        f = np.column_stack([np.zeros(COLS, int), 1 + np.arange(COLS), 1 + (np.arange(COLS) + 1) % COLS])
        parts.append((v, f))
    return _outward(*_merge(parts))


def capsule_mesh(radius: float, length: float) -> MeshData:
    """A capsule along z: a cylinder of ``length`` between two hemispheres of ``radius`` (total length
    ``length + 2 radius``), one smooth surface of revolution."""
    phi = np.linspace(0.0, 0.5 * np.pi, ROWS_CAP + 1)
    top_r, top_z = radius * np.sin(phi), 0.5 * length + radius * np.cos(phi)
    r = np.concatenate([top_r, top_r[::-1]])
    z = np.concatenate([top_z, -top_z[::-1]])
    return _outward(*_lathe(r, z))


def _lathe(r: np.ndarray, z: np.ndarray):
    """Surface of revolution about z of the profile (r_k, z_k), listed from top to bottom; ends with r = 0 become
    single pole vertices. Faces wound outwards."""
    th = np.linspace(0.0, 2.0 * np.pi, COLS, endpoint=False)
    verts, faces, rings = [], [], []
    for rk, zk in zip(r, z):
        start = len(verts)
        if rk == 0.0:
            verts.append([0.0, 0.0, zk])
            rings.append(np.full(COLS, start))
        else:
            verts += np.column_stack([rk * np.cos(th), rk * np.sin(th), np.full(COLS, zk)]).tolist()
            rings.append(start + np.arange(COLS))
    for a, b in zip(rings[:-1], rings[1:]):   # ring a above ring b
        a1, b1 = np.roll(a, -1), np.roll(b, -1)
        for tri in (np.column_stack([a, b, b1]), np.column_stack([a, b1, a1])):
            keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
            faces.append(tri[keep])
    return np.array(verts, dtype=float), np.vstack(faces)


def _merge(parts):
    verts, faces, offset = [], [], 0
    for v, f in parts:
        verts.append(np.asarray(v, dtype=float))
        faces.append(np.asarray(f, dtype=np.int64) + offset)
        offset += len(v)
    return np.vstack(verts), np.vstack(faces)


def _outward(verts, faces) -> MeshData:
    """MeshData of a convex mesh centred on the origin, every face turned so its normal points away from it."""
    verts = np.asarray(verts, dtype=np.float32)
    faces = np.asarray(faces, dtype=np.int64).copy()
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    inward = np.einsum("ij,ij->i", np.cross(b - a, c - a), a + b + c) < 0
    faces[inward] = faces[inward][:, ::-1]
    return MeshData(vertexes=verts, faces=faces.astype(np.uint32))
