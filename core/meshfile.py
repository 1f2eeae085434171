"""Triangle meshes from files (STL, OBJ, DAE/COLLADA, glTF/GLB, PLY, OFF) through trimesh (pycollada for DAE):
the vertices, the triangles and the mesh's own colour, read once per file version and kept in a small cache.

The URDF importer measures a mesh's bounding box with it; the studio draws the triangles. Whatever the bytes, a
file that cannot be used raises :class:`MeshError` (a ``ValueError``) whose message names the file and why —
never another exception, and never unbounded work: files over :data:`MAX_MESH_BYTES` and meshes over
:data:`MAX_TRIANGLES` are refused before or right after parsing.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .fileio import read_regular_file

__all__ = ["MeshError", "MeshFile", "read_mesh", "MESH_SUFFIXES", "MAX_MESH_BYTES", "MAX_TRIANGLES"]

MESH_SUFFIXES = (".stl", ".obj", ".dae", ".gltf", ".glb", ".ply", ".off")
MAX_MESH_BYTES = 64 * 1024 * 1024      # a robot's part is a few MB at most
MAX_TRIANGLES = 4_000_000
_CACHE_SIZE = 256


class MeshError(ValueError):
    """A mesh file that cannot be used; the message names the file and why."""


@dataclass(frozen=True)
class MeshFile:
    """A mesh as read: ``vertices`` (n, 3) float64 in the file's units and frame, ``faces`` (m, 3) int64,
    ``rgba`` the mesh's own main colour in [0, 1] (from its material or vertex colours) or None."""
    vertices: np.ndarray
    faces: np.ndarray
    rgba: tuple | None

    def bounds(self, scale=(1.0, 1.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` corners of the box bounding the vertices scaled by ``scale``."""
        v = self.vertices * np.asarray(scale, dtype=float)
        return v.min(axis=0), v.max(axis=0)


_cache: OrderedDict = OrderedDict()


def read_mesh(path: str | os.PathLike, file_type: str | None = None) -> MeshFile:
    """The mesh of file ``path`` (its type from ``file_type`` or the suffix); raises :class:`MeshError`."""
    path = Path(path)
    try:
        st = path.stat()
    except (OSError, ValueError) as exc:
        raise MeshError(f"{path}: cannot read the file: {getattr(exc, 'strerror', None) or exc}") from None
    kind = (file_type or path.suffix.lstrip(".")).lower()
    if f".{kind}" not in MESH_SUFFIXES:
        raise MeshError(f"{path}: not a mesh format this program reads ({', '.join(MESH_SUFFIXES)})")
    if not path.is_file():
        raise MeshError(f"{path}: not a file")
    if st.st_size > MAX_MESH_BYTES:
        raise MeshError(f"{path}: {st.st_size} bytes, more than the {MAX_MESH_BYTES} a mesh file may have")
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, kind)
    if key in _cache:
        _cache.move_to_end(key)
        return _cache[key]
    mesh = _load(path, kind)
    _cache[key] = mesh
    while len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return mesh


def _bounded_resolver(trimesh):
    """trimesh's resolver of a mesh's side files (glTF buffers and images, OBJ materials and textures), reading
    each through :func:`core.fileio.read_regular_file`: a pipe or device is refused without blocking, and a file
    over :data:`MAX_MESH_BYTES` is refused instead of read whole."""

    class Bounded(trimesh.resolvers.FilePathResolver):
        def get(self, name: str):
            for candidate in (name.strip(), name.strip().lstrip("/"), os.path.split(name)[-1]):
                try:
                    file = self.absolute(candidate)
                except ValueError:
                    continue
                if os.path.lexists(file):
                    data = read_regular_file(file, MAX_MESH_BYTES)
                    if len(data) > MAX_MESH_BYTES:
                        raise MeshError(f"its side file {name} is larger than {MAX_MESH_BYTES} bytes")
                    return data
            self.absolute(name)                          # (a name that escapes the folder raises here)
            raise FileNotFoundError(name)
    return Bounded


def _load(path: Path, kind: str) -> MeshFile:
    try:
        import trimesh
    except ImportError:                                  # a runtime dependency; named if it is missing
        raise MeshError(f"{path}: reading meshes needs trimesh (pip install trimesh pycollada)") from None
    import logging
    logging.getLogger("trimesh").setLevel(logging.ERROR)
    try:
        data = read_regular_file(path, MAX_MESH_BYTES)
        import io
        resolver = _bounded_resolver(trimesh)(str(path))
        loaded = trimesh.load(io.BytesIO(data), file_type=kind, force="mesh", process=False, resolver=resolver)
        vertices = np.asarray(loaded.vertices, dtype=float).reshape(-1, 3)
        faces = np.asarray(loaded.faces, dtype=np.int64).reshape(-1, 3)
    except MemoryError:
        raise MeshError(f"{path}: the mesh is too large to read") from None
    except Exception as exc:                             # noqa: BLE001 — any bytes: a message, never a traceback
        text = str(exc)
        text = text if len(text) <= 200 else text[:197] + "..."
        raise MeshError(f"{path}: cannot read it as {kind.upper()}: {type(exc).__name__}: {text}") from None
    if len(faces) == 0 or len(vertices) == 0:
        raise MeshError(f"{path}: the mesh has no triangles")
    if len(faces) > MAX_TRIANGLES:
        raise MeshError(f"{path}: {len(faces)} triangles, more than the {MAX_TRIANGLES} a mesh may have")
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise MeshError(f"{path}: a triangle refers to a vertex the mesh does not have")
    if not np.isfinite(vertices).all():
        raise MeshError(f"{path}: the mesh has non-finite vertex coordinates")
    return MeshFile(vertices, faces, _colour(loaded))


def _colour(mesh) -> tuple | None:
    """The mesh's main colour: its material's (textured or PBR meshes) or its face and vertex colours'."""
    try:
        visual = mesh.visual
        if visual.kind == "texture":
            c = getattr(visual.material, "main_color", None)
        elif visual.kind in ("face", "vertex"):
            c = visual.main_color
        else:
            return None
        c = np.asarray(c, dtype=float).ravel()
        if c.size != 4 or not np.isfinite(c).all():
            return None
        return tuple(float(x) for x in np.clip(c / 255.0, 0.0, 1.0))
    except Exception:                                    # noqa: BLE001 — a colour is optional
        return None
