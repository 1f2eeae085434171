"""Rays through the mouse and what they hit: shapes (box, sphere, cylinder, capsule), nail spheres, and the plane a
dragged point moves in.

Thread: any. Plain NumPy; the viewport passes in its matrices and the shapes' poses. All in one frame (the world,
after the viewport turns its display-frame ray back into world coordinates).
"""
from __future__ import annotations

import numpy as np

__all__ = ["ray_through", "hit_shape", "pick_shape", "hit_sphere", "ray_plane"]


def ray_through(ndc_x: float, ndc_y: float, projection: np.ndarray, view: np.ndarray):
    """``(origin, unit direction)`` of the ray through normalized device coordinates (x right, y up, both in
    [−1, 1]) for 4 × 4 ``projection`` and ``view`` matrices (column vectors: clip = P V x)."""
    inv = np.linalg.inv(np.asarray(projection, float) @ np.asarray(view, float))
    near = inv @ np.array([ndc_x, ndc_y, -1.0, 1.0])
    far = inv @ np.array([ndc_x, ndc_y, 1.0, 1.0])
    near, far = near[:3] / near[3], far[:3] / far[3]
    d = far - near
    return near, d / np.linalg.norm(d)


def _hit_box(o, d, half):
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (-half - o) / d, (half - o) / d
    t1 = np.where(np.isnan(t1), -np.inf, t1)
    t2 = np.where(np.isnan(t2), np.inf, t2)
    lo, hi = np.max(np.minimum(t1, t2)), np.min(np.maximum(t1, t2))
    if hi < max(lo, 0.0):
        return None
    return lo if lo >= 0 else hi


def hit_sphere(o, d, centre, radius: float):
    """Smallest t >= 0 with |o + t d − centre| = radius (d a unit vector), or None."""
    oc = np.asarray(o, float) - np.asarray(centre, float)
    b = float(oc @ d)
    c = float(oc @ oc) - radius * radius
    disc = b * b - c
    if disc < 0:
        return None
    s = np.sqrt(disc)
    for t in (-b - s, -b + s):
        if t >= 0:
            return float(t)
    return None


def _hit_cylinder(o, d, radius, half_length, caps: bool):
    """A cylinder about z from −half_length to +half_length; flat caps, or none (a capsule adds spheres)."""
    best = None
    a = d[0] ** 2 + d[1] ** 2
    if a > 1e-18:
        b = o[0] * d[0] + o[1] * d[1]
        c = o[0] ** 2 + o[1] ** 2 - radius ** 2
        disc = b * b - a * c
        if disc >= 0:
            for t in ((-b - np.sqrt(disc)) / a, (-b + np.sqrt(disc)) / a):
                if t >= 0 and abs(o[2] + t * d[2]) <= half_length:
                    best = t if best is None else min(best, t)
                    break
    if caps and abs(d[2]) > 1e-18:
        for z in (-half_length, half_length):
            t = (z - o[2]) / d[2]
            p = o + t * d
            if t >= 0 and p[0] ** 2 + p[1] ** 2 <= radius ** 2:
                best = t if best is None else min(best, t)
    return best


def hit_shape(origin, direction, kind: str, size: dict, X_WS: np.ndarray):
    """Distance along the ray to the shape (posed by ``X_WS``), or None."""
    R, p = X_WS[:3, :3], X_WS[:3, 3]
    o, d = R.T @ (np.asarray(origin, float) - p), R.T @ np.asarray(direction, float)
    if kind in ("box", "mesh"):                          # a mesh is picked by its bounding box
        return _hit_box(o, d, 0.5 * np.asarray(size["size"], float))
    if kind == "sphere":
        return hit_sphere(o, d, np.zeros(3), float(size["radius"]))
    r, half = float(size["radius"]), 0.5 * float(size["length"])
    if kind == "cylinder":
        return _hit_cylinder(o, d, r, half, caps=True)
    hits = [_hit_cylinder(o, d, r, half, caps=False),
            hit_sphere(o, d, [0, 0, half], r), hit_sphere(o, d, [0, 0, -half], r)]
    hits = [t for t in hits if t is not None]
    return min(hits) if hits else None


def pick_shape(origin, direction, shapes, poses):
    """``(shape index, t)`` of the nearest shape the ray hits (``shapes`` with ``kind`` and ``size``; ``poses``
    (n, 4, 4)), or None."""
    best = None
    for k, (shape, X) in enumerate(zip(shapes, poses)):
        t = hit_shape(origin, direction, shape.kind, shape.size, X)
        if t is not None and (best is None or t < best[1]):
            best = (k, t)
    return best


def ray_plane(origin, direction, point, normal):
    """Where the ray meets the plane through ``point`` with ``normal`` (None if parallel or behind)."""
    denom = float(np.dot(direction, normal))
    if abs(denom) < 1e-12:
        return None
    t = float(np.dot(np.asarray(point, float) - origin, normal)) / denom
    return None if t < 0 else np.asarray(origin, float) + t * np.asarray(direction, float)
