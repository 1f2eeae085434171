"""Triangle meshes of a model's shapes, built once per shape and then only moved (:mod:`studio.qt.viewport.viewport`).

Thread: any. These are plain data builders (NumPy and :class:`pyqtgraph.opengl.MeshData`); nothing here touches an
OpenGL context.

Every mesh is in the shape's own frame S: centred on its origin, with cylinders and capsules along local z
(``core.model.Shape``: a box's ``size`` holds full edge lengths; a capsule's ``length`` excludes its caps). Faces
are wound counter-clockwise seen from outside, so the normals MeshData derives point outwards; each flat face has
its own vertices, so smooth shading keeps box edges and cylinder rims sharp.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from pyqtgraph.opengl import MeshData

from studio.geometry.framing import shape_half_extents

__all__ = ["shape_mesh", "shape_half_extents", "box_mesh", "sphere_mesh", "cylinder_mesh", "capsule_mesh",
           "file_mesh", "decimate", "MAX_VIEW_TRIANGLES", "vertex_normals"]

MAX_VIEW_TRIANGLES = 20_000   # a mesh file with more is decimated for the viewport (vertex clustering)

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
    if shape.kind == "mesh":
        try:
            return file_mesh(size["file"], tuple(size["scale"]), tuple(size["offset"]))
        except ValueError as exc:                        # gone or changed since the import: its bounding box
            _warn_once(str(exc))
            return box_mesh(size["size"])
    raise ValueError(f"cannot draw a shape of kind {shape.kind!r} (box, sphere, cylinder, capsule or mesh)")


_warned: set = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        import sys
        print(f"limbstudio: {message}; drawn as its bounding box", file=sys.stderr)


@lru_cache(maxsize=512)
def _file_mesh(key, scale: tuple, offset: tuple) -> MeshData:
    from core.meshfile import read_mesh
    mesh = read_mesh(key[0])
    v = mesh.vertices * np.asarray(scale, dtype=float) + np.asarray(offset, dtype=float)
    f = mesh.faces
    if np.linalg.det(np.diag(scale)) < 0:            # a mirroring scale turns the faces inside out: turn them back
        f = f[:, ::-1]
    v, f = decimate(v, f, MAX_VIEW_TRIANGLES)
    corners = v[f].reshape(-1, 3)                    # own vertices per face: flat shading keeps CAD edges sharp
    return MeshData(vertexes=corners.astype(np.float32), faces=np.arange(len(corners), dtype=np.uint32).reshape(-1, 3))


def file_mesh(path: str, scale=(1.0, 1.0, 1.0), offset=(0.0, 0.0, 0.0)) -> MeshData:
    """The triangles of mesh file ``path`` (:func:`core.meshfile.read_mesh`), scaled then moved by ``offset`` into
    the shape frame, decimated to at most :data:`MAX_VIEW_TRIANGLES`; built once per file version. Raises
    ``ValueError`` (``core.meshfile.MeshError``) naming the file if it cannot be read."""
    import os
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the mesh: {exc.strerror or exc}") from None
    return _file_mesh((str(path), st.st_size, st.st_mtime_ns), tuple(map(float, scale)), tuple(map(float, offset)))


def decimate(vertices: np.ndarray, faces: np.ndarray, max_faces: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_faces`` triangles approximating the mesh, by vertex clustering: vertices in one cell of a
    grid over the bounding box merge into their mean, triangles that collapse are dropped (and duplicates once);
    the grid is coarsened until the budget holds. A mesh within the budget is returned as it is."""
    faces = np.asarray(faces, dtype=np.int64)
    if len(faces) <= max_faces:
        return vertices, faces
    lo = vertices.min(axis=0)
    extent = float((vertices.max(axis=0) - lo).max()) or 1.0
    cells = 512
    while True:
        key = np.floor((vertices - lo) / (extent / cells)).astype(np.int64)
        _, cluster = np.unique(key, axis=0, return_inverse=True)
        cluster = cluster.ravel()
        f = cluster[faces]
        f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
        _, first = np.unique(np.sort(f, axis=1), axis=0, return_index=True)
        f = f[np.sort(first)]
        if len(f) <= max_faces or cells <= 2:
            counts = np.bincount(cluster)
            v = np.zeros((len(counts), 3))
            np.add.at(v, cluster, vertices)
            return v / np.maximum(counts, 1)[:, None], f[:max_faces]
        cells //= 2


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


def vertex_normals(verts: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Smooth vertex normals (V, 3): the normalized sum of the area-weighted normals of the faces around each
    vertex (what :meth:`pyqtgraph.opengl.MeshData.vertexNormals` computes, vectorized)."""
    tri = verts[faces].astype(np.float64)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    acc = np.zeros(verts.shape, dtype=np.float64)
    for k in range(3):
        np.add.at(acc, faces[:, k], n)
    acc /= np.maximum(np.linalg.norm(acc, axis=1), 1e-30)[:, None]
    return acc.astype(np.float32)
