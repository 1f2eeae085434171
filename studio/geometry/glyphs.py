"""Geometry of what the viewport draws on top of the shapes: arrows, spring coils, crosses, frames and boxes.

Thread: any. Plain NumPy, no OpenGL: every function returns vertex arrays that :mod:`studio.qt.viewport.overlays` hands to
pyqtgraph items. Triangles are wound counter-clockwise seen from outside (so back faces can be culled).
"""
from __future__ import annotations

import numpy as np

__all__ = ["arrow_mesh", "sphere_mesh", "coil", "crosses", "frames", "box_edges", "soft_length", "arrow_length",
           "ratio_colour", "LOW_LOAD", "MID_LOAD", "FULL_LOAD"]

#: Constraint-force arrows from no load through half to full strength: violet, pink, red (none of the world
#: axes' red-green-blue at low load, so an arrow never reads as an axis).
LOW_LOAD, MID_LOAD, FULL_LOAD = (0.72, 0.52, 1.0), (1.0, 0.42, 0.62), (1.0, 0.18, 0.16)

SEGMENTS = 12


def _basis(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors orthogonal to the unit vector ``d`` and to each other, with u × v = d."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(d, helper)
    u /= np.linalg.norm(u)
    return u, np.cross(d, u)


def arrow_mesh(starts, vectors, radius: float, colours):
    """Solid arrows from ``starts`` (n, 3) along ``vectors`` (n, 3): a shaft of ``radius`` and a cone head
    (3 radii wide, at most 40 % of the arrow long). ``colours`` (n, 4). Returns ``(vertices (m, 3), faces (f, 3),
    vertex colours (m, 4))``; arrows shorter than a radius are left out."""
    verts, faces, cols, base = [], [], [], 0
    th = np.linspace(0.0, 2.0 * np.pi, SEGMENTS, endpoint=False)
    ring = np.column_stack([np.cos(th), np.sin(th)])
    for start, vec, colour in zip(np.asarray(starts, float), np.asarray(vectors, float), np.asarray(colours)):
        length = float(np.linalg.norm(vec))
        if not np.isfinite(length) or length < radius:
            continue
        d = vec / length
        u, v = _basis(d)
        head = min(0.4 * length, 7.0 * radius)
        r_head = 2.6 * radius
        circle = ring[:, :1] * u + ring[:, 1:] * v            # (S, 3) unit circle about d
        shaft0 = start + radius * circle
        shaft1 = start + (length - head) * d + radius * circle
        cone0 = start + (length - head) * d + r_head * circle
        tip = start + length * d
        block = np.vstack([shaft0, shaft1, cone0, [start], [start + (length - head) * d], [tip]])
        S = SEGMENTS
        k = np.arange(S)
        k1 = (k + 1) % S
        i_s0, i_s1, i_c0, i_b, i_hb, i_tip = 0, S, 2 * S, 3 * S, 3 * S + 1, 3 * S + 2
        f = np.vstack([
            np.column_stack([i_s0 + k, i_s0 + k1, i_s1 + k1]), np.column_stack([i_s0 + k, i_s1 + k1, i_s1 + k]),
            np.column_stack([i_c0 + k, i_c0 + k1, np.full(S, i_tip)]),                   # cone
            np.column_stack([np.full(S, i_b), i_s0 + k1, i_s0 + k]),                    # shaft's base disc
            np.column_stack([np.full(S, i_hb), i_c0 + k1, i_c0 + k]),                   # underside of the head
        ])
        verts.append(block)
        faces.append(f + base)
        base += len(block)
        cols.append(np.tile(np.asarray(colour, float), (len(block), 1)))
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), np.uint32), np.zeros((0, 4))
    return np.vstack(verts), np.vstack(faces).astype(np.uint32), np.vstack(cols)


def sphere_mesh(centres, radius: float, colours, rows: int = 10, cols: int = 16):
    """Spheres of ``radius`` at ``centres`` (n, 3), one colour each (n, 4): ``(vertices, faces, colours)``."""
    phi = np.linspace(0.0, np.pi, rows + 1)
    th = np.linspace(0.0, 2.0 * np.pi, cols, endpoint=False)
    P, T = np.meshgrid(phi, th, indexing="ij")
    unit = np.column_stack([(np.sin(P) * np.cos(T)).ravel(), (np.sin(P) * np.sin(T)).ravel(), np.cos(P).ravel()])
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    a = (r * cols + c).ravel()
    b = (r * cols + (c + 1) % cols).ravel()
    a2, b2 = a + cols, b + cols
    one = np.vstack([np.column_stack([a, a2, b2]), np.column_stack([a, b2, b])])
    verts, faces, colours_out = [], [], []
    for n, (centre, colour) in enumerate(zip(np.asarray(centres, float), np.asarray(colours, float))):
        verts.append(centre + radius * unit)
        faces.append(one + n * len(unit))
        colours_out.append(np.tile(colour, (len(unit), 1)))
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), np.uint32), np.zeros((0, 4))
    return np.vstack(verts), np.vstack(faces).astype(np.uint32), np.vstack(colours_out)


def coil(a, b, radius: float, turns: int = 10, per_turn: int = 14, lead: float = 0.1) -> np.ndarray:
    """A helical spring from ``a`` to ``b`` as line segments (2k, 3) for a 'lines' item: straight leads of
    ``lead`` of the length at both ends, ``turns`` turns of ``radius`` between them."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    axis = b - a
    length = float(np.linalg.norm(axis))
    if length < 1e-12:
        return np.zeros((0, 3))
    d = axis / length
    u, v = _basis(d)
    s = np.linspace(0.0, 1.0, turns * per_turn + 1)
    angle = 2.0 * np.pi * turns * s
    body = a + (lead + (1 - 2 * lead) * s)[:, None] * axis + radius * (np.cos(angle)[:, None] * u
                                                                        + np.sin(angle)[:, None] * v)
    path = np.vstack([a, a + lead * axis, body, b - lead * axis, b])
    return np.repeat(path, 2, axis=0)[1:-1]


def crosses(points, size: float) -> np.ndarray:
    """Three-axis crosses of half size ``size`` at ``points`` (n, 3), as line segments (6n, 3)."""
    out = []
    for p in np.asarray(points, float):
        for axis in np.eye(3) * size:
            out += [p - axis, p + axis]
    return np.array(out).reshape(-1, 3)


def frames(R, p, length: float):
    """Link frames: x, y, z axes of ``length`` at origins ``p`` (n, 3) with rotations ``R`` (n, 3, 3):
    ``(segments (6n, 3), colours (6n, 4))`` in red, green, blue."""
    R, p = np.asarray(R, float).reshape(-1, 3, 3), np.asarray(p, float).reshape(-1, 3)
    rgb = np.array([[0.95, 0.3, 0.3, 1.0], [0.35, 0.85, 0.4, 1.0], [0.35, 0.55, 1.0, 1.0]])
    seg, col = [], []
    for Ri, pi in zip(R, p):
        for k in range(3):
            seg += [pi, pi + length * Ri[:, k]]
            col += [rgb[k], rgb[k]]
    return np.array(seg).reshape(-1, 3), np.array(col).reshape(-1, 4)


def box_edges(X, half) -> np.ndarray:
    """The 12 edges (24, 3) of the box of half extents ``half`` (3,) posed by ``X`` (4, 4)."""
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    corners = (signs * np.asarray(half, float)) @ np.asarray(X)[:3, :3].T + np.asarray(X)[:3, 3]
    pairs = [(i, j) for i in range(8) for j in range(i + 1, 8) if np.sum(signs[i] != signs[j]) == 1]
    return np.array([corners[k] for pair in pairs for k in pair])


def soft_length(magnitude, reference: float, length: float):
    """Arrow length for ``magnitude``: linear up to ``reference`` (giving ``length``), then logarithmic, so that a
    force a thousand times the reference is four times as long, not a thousand."""
    m = np.asarray(magnitude, float) / reference
    return length * np.where(m <= 1.0, m, 1.0 + np.log10(np.maximum(m, 1.0)))


def arrow_length(magnitude, reference: float, length: float, longest: float = 2.2):
    """Arrow length for ``magnitude`` in a scene: ``length`` for ``reference``, linear below it, then growing with
    half the decades above it, and never more than ``longest`` × ``length`` (a force a hundred times the
    reference is twice as long; one a thousand times the
    reference is 2.2 × as long, as is any larger one: arrows stay in the frame)."""
    m = np.asarray(magnitude, float) / reference
    return length * np.minimum(np.where(m <= 1.0, m, 1.0 + 0.5 * np.log10(np.maximum(m, 1.0))), longest)


def ratio_colour(ratio) -> np.ndarray:
    """Colours (n, 4) from violet (no load) through pink to red (the force is at the joint's strength, or
    beyond it)."""
    r = np.clip(np.asarray(ratio, float), 0.0, 1.0)
    r = np.where(np.isfinite(r), r, 1.0)
    low_c, mid_c, full_c = np.array(LOW_LOAD), np.array(MID_LOAD), np.array(FULL_LOAD)
    r = r[:, None]
    low = r < 0.5
    t = np.where(low, 2 * r, 2 * r - 1)
    rgb = np.where(low, low_c + t * (mid_c - low_c), mid_c + t * (full_c - mid_c))
    return np.column_stack([rgb, np.ones(len(r))])
