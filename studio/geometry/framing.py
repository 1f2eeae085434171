"""Where the model's shapes are, which way is up on screen, and how to frame the camera on the scene.

Thread: any. Plain NumPy on a frozen ``core.Model`` (read only) and a configuration ``q``; nothing here touches
Qt or OpenGL. Frames: W world, L link, S shape, D display. The display frame is the world turned so that "up"
(against gravity) is display +z, because pyqtgraph's camera orbits about z; a scene with gravity along −y (the
planar examples) is therefore shown standing up. Only the drawing is turned, never the physics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import core

from studio.document.kinds import constraint_kinds, force_kinds, joint_kinds


__all__ = ["shape_half_extents", "shape_poses", "display_rotation", "planar_normal", "scene_spheres", "Framing",
           "frame_scene", "frame_motion", "nice_step"]

FOV_DEG = 60.0            # pyqtgraph's default horizontal field of view
MARGIN = 1.12             # the framed box fills at most 1/MARGIN of the view
DEFAULT_AZIMUTH = -60.0   # degrees, display frame: camera in front (−y) and to the right (+x)
DEFAULT_ELEVATION = 25.0
MAX_ELEVATION = 75.0
PLANAR_TILT = (15.0, 12.0)  # (azimuth, elevation) offsets from face-on, so a planar scene still looks solid


def shape_half_extents(shape) -> np.ndarray:
    """Half edge lengths (3,) of the shape's bounding box in its own frame."""
    size = shape.size
    if shape.kind in ("box", "mesh"):                   # a mesh: its bounding box, centred on the shape frame
        return 0.5 * np.asarray(size["size"], dtype=float)
    r = float(size["radius"])
    if shape.kind == "sphere":
        return np.array([r, r, r])
    half = 0.5 * float(size["length"]) + (r if shape.kind == "capsule" else 0.0)
    return np.array([r, r, half])



def shape_poses(model, q: np.ndarray) -> np.ndarray:
    """Homogeneous poses ``X_WS`` (n_shapes, 4, 4) of every shape in the world at configuration ``q``:
    ``R_WS = R_WL R_LS``, ``p_WS = p_WL + R_WL p_LS``."""
    R_WL, p_WL, _ = core.forward_kinematics(model, np.asarray(q, dtype=float))
    return core.drawing.shape_poses(model, R_WL, p_WL)


def display_rotation(gravity) -> np.ndarray:
    """``R_DW`` (3, 3): the smallest rotation taking the world's up (−gravity; +z without gravity) to display +z."""
    g = np.asarray(gravity, dtype=float)
    norm = np.linalg.norm(g)
    up = -g / norm if norm > 0 else np.array([0.0, 0.0, 1.0])
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(up, z)
    s, c = np.linalg.norm(axis), float(up @ z)
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])   # up = −z: half a turn about x
    k = axis / s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * K + (1 - c) * K @ K                         # Rodrigues


def planar_normal(model, q: np.ndarray) -> np.ndarray | None:
    """The common world axis of a planar mechanism (every joint a hinge about one axis n, or a slider
    perpendicular to n), or None when the scene is not planar."""
    R_WL, _, _ = core.forward_kinematics(model, np.asarray(q, dtype=float))
    n = None
    sliders = []
    for i, jt in enumerate(joint_kinds(model)):
        if jt == "fixed":
            continue
        if jt == "slider":
            sliders.append(R_WL[i] @ model.axis[i])
            continue
        if jt != "hinge":
            return None
        a = R_WL[i] @ model.axis[i]
        if n is None:
            n = a / np.linalg.norm(a)
        elif np.linalg.norm(np.cross(n, a)) > 1e-9 * np.linalg.norm(a):
            return None
    if n is None or any(abs(n @ a) > 1e-9 for a in sliders):
        return None
    return n


@dataclass(frozen=True)
class Framing:
    """Any thread (a frozen value). Camera and floor for a scene, in the display frame D (lengths in metres, angles
    in degrees)."""
    center: tuple[float, float, float]
    distance: float
    azimuth: float
    elevation: float
    floor_z: float          # height of the ground grid: just under everything the scene can reach
    grid_size: tuple[float, float]   # edge lengths of the grid (display x, y)
    grid_spacing: float
    axis_length: float      # length of the drawn world axes
    lo: tuple[float, float, float]   # the framed box
    hi: tuple[float, float, float]


def scene_spheres(model, q: np.ndarray, R_DW: np.ndarray, normal_W: np.ndarray | None):
    """Balls in D that hold the scene: ``(centres (K, 3), half extents (K, 3))``, each ball possibly flattened to
    a disc. They are every shape's bounding ball at ``q``, the world origin, the world ends of nails and springs,
    and, for a chain of hinge and ball joints hung from a point fixed in the world and held by no nail, the ball
    (a disc in a planar scene) the chain can swing through. A nailed chain stays near its nail, so its shapes
    where they are frame it."""
    R_WL, p_WL, _ = core.forward_kinematics(model, np.asarray(q, dtype=float))
    X_WS = shape_poses(model, q)
    n_D = None if normal_W is None else R_DW @ normal_W
    in_plane = np.ones(3) if n_D is None else np.sqrt(np.clip(1.0 - n_D ** 2, 0.0, 1.0))
    centres, extents = [np.zeros(3)], [np.zeros(3)]
    kinds = constraint_kinds(model)
    anchors = [c for c, kind in zip(model.constraints, kinds)
               if c.enabled and getattr(c, "link_b", 0) < 0 and kind in ("nail", "point_to_point", "hinge")]
    springs = [f for f, kind in zip(model.forces, force_kinds(model)) if kind == "spring" and f.link_b < 0]
    for x in [c.r_b for c in anchors] + [f.r_b for f in springs]:
        centres.append(R_DW @ np.asarray(x, float))
        extents.append(np.zeros(3))
    held = {model.root_of(c.link_a) for c in anchors}
    for k, s in enumerate(model.shapes):
        radius = float(np.linalg.norm(shape_half_extents(s)))   # the shape's bounding ball about its centre
        centres.append(R_DW @ X_WS[k, :3, 3])
        extents.append(np.full(3, radius))
        root, reach = _reach(model, s.link)
        if root is not None and root not in held:
            arm = reach + float(np.linalg.norm(s.p_LS))          # bound on the centre's distance from the pivot
            centres.append(R_DW @ p_WL[root])
            extents.append(radius + arm * in_plane)
    return np.array(centres), np.array(extents)


def _reach(model, link: int):
    """``(root, r)``: when every joint from the world down to ``link`` is a hinge, ball or fixed joint, the root
    link (whose origin never moves) and a bound r on the distance of ``link``'s origin from it; else (None, 0)."""
    reach, i = 0.0, link
    kinds = joint_kinds(model)
    while True:
        if kinds[i] not in ("hinge", "ball", "fixed"):
            return None, 0.0
        if model.parent[i] < 0:
            return i, reach
        reach += float(np.linalg.norm(model.p_tree[i]))
        i = int(model.parent[i])


def frame_scene(model, q: np.ndarray | None = None, aspect: float = 4 / 3) -> Framing:
    """Camera, floor and axes for ``model`` (at ``q``, default its initial configuration) in a view of width /
    height ``aspect``. A planar scene is seen nearly face-on, up on screen opposite to gravity."""
    q = model.q0 if q is None else np.asarray(q, dtype=float)
    R_DW = display_rotation(model.gravity)
    normal_W = planar_normal(model, q)
    centres, extents = scene_spheres(model, q, R_DW, normal_W)
    lo, hi = np.min(centres - extents, axis=0), np.max(centres + extents, axis=0)
    center = 0.5 * (lo + hi)
    if normal_W is None:
        azimuth, elevation = DEFAULT_AZIMUTH, DEFAULT_ELEVATION
    else:
        d = R_DW @ _facing(normal_W, R_DW.T @ np.array([0.0, 0.0, 1.0]))
        # face-on; a plane lying on the floor is seen from its −y side, so x runs left to right and y away
        azimuth = (math.degrees(math.atan2(d[1], d[0])) if math.hypot(d[0], d[1]) > 1e-9 else -90.0) \
            + PLANAR_TILT[0]
        elevation = math.degrees(math.asin(np.clip(d[2], -1.0, 1.0))) + PLANAR_TILT[1]
        elevation = float(np.clip(elevation, -MAX_ELEVATION, MAX_ELEVATION))   # a plane on the floor: from above
    distance = _fit_distance(centres - center, extents, azimuth, elevation, aspect)
    size = hi[:2] - lo[:2]
    spacing = nice_step(float(np.max(size)) / 8)
    grid = np.ceil(np.maximum(1.25 * size, 0.5 * np.max(size)) / spacing / 2) * 2 * spacing
    return Framing(center=tuple(map(float, center)), distance=float(distance), azimuth=azimuth,
                   elevation=elevation, floor_z=float(lo[2]), grid_size=(float(grid[0]), float(grid[1])),
                   grid_spacing=spacing, axis_length=nice_step(0.2 * float(np.max(hi - lo))),
                   lo=tuple(map(float, lo)), hi=tuple(map(float, hi)))


def frame_motion(model, poses, aspect: float = 4 / 3, floor_z: float | None = None) -> Framing:
    """A fixed camera for a motion: every shape at every pose in ``poses`` (a sequence of the shapes' world poses
    ``X_WS``, each (S, 4, 4), e.g. the draw lists' ``shape_poses`` of the frames of a strip) in view, seen from
    where :func:`frame_scene` looks (a planar scene nearly face-on), in a view of width / height ``aspect``. Unlike
    :func:`frame_scene` it frames the bodies alone, tightly (the corners of their boxes, not bounding balls; not
    the world origin nor how far a chain could swing), so a body far from the origin fills the picture.
    ``floor_z`` (display frame): where the ground grid lies (default: under the lowest corner); the framed box
    reaches down to it."""
    R_DW = display_rotation(model.gravity)
    signs = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], dtype=float)
    half = np.array([shape_half_extents(s) for s in model.shapes]).reshape(-1, 3)
    points = [np.zeros((0, 3))]
    for X in poses:                   # the corners of every shape's box, in D
        X = np.asarray(X, dtype=float)
        corners = np.einsum("sij,scj->sci", X[:, :3, :3], signs[None] * half[:, None]) + X[:, None, :3, 3]
        points.append(corners.reshape(-1, 3) @ R_DW.T)
    points = np.concatenate(points) if len(poses) and len(half) else np.zeros((1, 3))
    lo, hi = points.min(axis=0), points.max(axis=0)
    if floor_z is not None:
        lo[2] = min(lo[2], float(floor_z))
    base = frame_scene(model, aspect=aspect)
    center = 0.5 * (lo + hi)
    box = np.array([lo, hi])
    corners = np.array([[box[i, 0], box[j, 1], box[k, 2]] for i in (0, 1) for j in (0, 1) for k in (0, 1)])
    # the shapes' corners and the box's (the floor under them) must show
    every = np.concatenate([points, corners])
    distance = _fit_distance(every - center, np.zeros_like(every), base.azimuth, base.elevation, aspect)
    size = hi[:2] - lo[:2]
    spacing = nice_step(float(np.max(size)) / 8)
    grid = np.ceil(np.maximum(1.25 * size, 0.5 * np.max(size)) / spacing / 2) * 2 * spacing
    return Framing(center=tuple(map(float, center)), distance=float(distance), azimuth=base.azimuth,
                   elevation=base.elevation, floor_z=float(lo[2] if floor_z is None else floor_z), grid_size=(float(grid[0]), float(grid[1])),
                   grid_spacing=spacing, axis_length=base.axis_length, lo=tuple(map(float, lo)),
                   hi=tuple(map(float, hi)))


def _facing(n: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The sign of the plane normal n to look from, so that the scene's x runs left to right when possible
    (for the x–y plane with y up: from +z)."""
    right = np.cross(up, n)
    return n if right @ np.array([1.0, 1e-3, 1e-6]) >= 0 else -n


def _fit_distance(centres, extents, azimuth, elevation, aspect) -> float:
    """Smallest camera distance from the point looked at (the origin of ``centres``) at which every ellipsoid
    (centres (K, 3), semi-axes ``extents`` (K, 3) along the display axes) is in view.

    A side of the view frustum with half angle h towards the unit ``side`` keeps a point p when
    p·w <= D sin h with w = side cos h + d sin h (d: unit vector to the camera), so a convex body with support
    function s(w) fits when D >= (c·w + s(w)) / sin h; for an ellipsoid s(w) = |extents * w|."""
    a, e = math.radians(azimuth), math.radians(elevation)
    d = np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])   # centre → camera
    right = np.cross([0.0, 0.0, 1.0], d)
    right /= np.linalg.norm(right)
    up = np.cross(d, right)
    tan_x = math.tan(math.radians(FOV_DEG) / 2)
    need = 1e-3
    for h, side in ((math.atan(tan_x), right), (math.atan(tan_x / aspect), up)):
        for w in (side * math.cos(h) + d * math.sin(h), -side * math.cos(h) + d * math.sin(h)):
            support = MARGIN * (centres @ w + np.linalg.norm(extents * w, axis=1))
            need = max(need, float(np.max(support)) / math.sin(h))
    return need


def nice_step(x: float) -> float:
    """The 1, 2 or 5 × 10^k nearest above ``x`` (> 0): a grid spacing or axis length people read easily."""
    if not x > 0:
        return 1.0
    k = math.floor(math.log10(x))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** k >= x * (1 - 1e-9):
            return m * 10.0 ** k
    return 10.0 ** (k + 1)
