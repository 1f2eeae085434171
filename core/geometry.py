"""Signed distance from a point to a convex core, and how its normal turns: the narrow phase of shape–shape
contacts (:mod:`core.contacts`).

Every collision primitive is a *core* swept by a ball of radius r — a sphere is a point swept by its radius, a
capsule a segment swept by its radius, a box a box swept by 0 — so the distance between a point p carrying a
ball of radius r_a (a sphere's centre, a capsule's cap centre, a box's corner with r_a = 0) and a shape b is::

    h = φ − r_a − r_b,    φ = ‖z − s(z)‖ (z outside the core),  φ = −(depth to the nearest face) (z inside a box)

with z the point in the core's frame and s(z) the core's point nearest it; the unit normal n = (z − s)/φ points
from b to the point (a box face's outer normal inside the box). Where it touches, the contact point is
p − r_a n, on a's surface.

The separation's rate is ḣ = n·ż (the envelope theorem: s slides on the core, and its sliding is orthogonal to
z − s), and its second derivative is ḧ = n·z̈ + ṅ·ż with ṅ = (I − n nᵀ) P ż / φ, P projecting on the directions
in which s does *not* follow z: none on a face (ṅ = 0: a plane), the two across an edge or a segment (P = I − e eᵀ,
e along the edge), all three at a corner or a point. :func:`curvature` gives that ṅ·ż = żᵀ(I − n nᵀ)P ż / φ, the
term a rolling ball's normal row needs in γ beside the material points' accelerations (a ball rolling over a
table's edge turns about the edge).

Where the nearest point lies changes the distance function's form (a face's plane, an edge's line, a corner's
point), so ḧ jumps where a point crosses from one part of the core to another. A contact in touch keeps the part
it started a step on (:func:`part_of`, :func:`feature`: the distance to that face's plane, edge's line or corner,
smooth over the step), and the step ends where the point crosses into another part (a witness,
:mod:`core.witnesses`): the integrator's order survives a ball rolling over an edge.
"""
from __future__ import annotations

import numpy as np

from .jit import njit

__all__ = ["PLANE", "POINT", "SEGMENT", "BOX", "CORE_NAMES", "FACE", "EDGE", "VERTEX", "nearest", "bounding_radius", "outside_bounding_ball", "feature",
           "part_of", "core_coordinates", "curvature", "tangent_basis", "distance"]

#: Cores: a contact's plane (the rows of :mod:`core.contacts` before shapes), a point (a sphere), a segment
#: along the core frame's z of half-length ``half[2]`` (a capsule), a box of half-extents ``half``.
PLANE, POINT, SEGMENT, BOX = range(4)
CORE_NAMES = ("plane", "point", "segment", "box")
#: Where on the core the nearest point lies: on a face (the normal does not turn with the point's motion), on an
#: edge (it turns across the edge, axis ``axis``), at a vertex (it turns every way).
FACE, EDGE, VERTEX = range(3)
#: φ below this (m) is a touching point whose normal is that of the nearest face (a box corner on a box face).
_TINY = 1e-12


@njit
def bounding_radius(kind, half):
    """The radius of the smallest ball about a core's centre that holds it: 0 for a point, the half-length of a
    segment (along its z), the half-diagonal of a box."""
    if kind == POINT:
        return 0.0
    if kind == SEGMENT:
        return half[2]
    return np.sqrt(half[0] * half[0] + half[1] * half[1] + half[2] * half[2])


@njit
def outside_bounding_ball(kind, half, radius, z, s, n):
    """The broad phase: whether z (core frame) is farther from the core's centre than its bounding radius plus
    ``radius``; then s ← the bounding ball's point toward z and n ← the unit direction to z, a stand-in for the
    nearest point and normal whose distance, |z| − bounding radius, is a lower bound of the core's."""
    d = np.sqrt(z[0] * z[0] + z[1] * z[1] + z[2] * z[2])
    b = bounding_radius(kind, half)
    if not d - b - radius > 0.0:
        return False
    for a in range(3):
        n[a] = z[a] / d
        s[a] = b * n[a]
    return True


@njit
def nearest(kind, half, z, s, n):
    """The core's point ``s`` nearest ``z`` and the unit normal ``n`` (core frame), for a core of ``kind``
    (:data:`POINT`, :data:`SEGMENT`, :data:`BOX`) with half-extents ``half``. Returns ``(φ, region, axis)``: the
    signed distance (negative inside a box), :data:`FACE`, :data:`EDGE` or :data:`VERTEX`, and the edge's axis
    (−1 unless an edge)."""
    if kind == POINT:
        for a in range(3):
            s[a] = 0.0
        return _direction(z, s, n, 2), VERTEX, -1
    if kind == SEGMENT:
        c = min(max(z[2], -half[2]), half[2])
        s[0], s[1], s[2] = 0.0, 0.0, c
        inside = -half[2] < z[2] < half[2]
        return _direction(z, s, n, 0), (EDGE if inside else VERTEX), (2 if inside else -1)
    clamped = 0
    free = -1
    for a in range(3):
        s[a] = min(max(z[a], -half[a]), half[a])
        if s[a] != z[a]:
            clamped += 1
        else:
            free = a
    if clamped == 0:                                          # inside (or on) the box: the nearest face
        best, depth = 0, np.inf
        for a in range(3):
            d = half[a] - abs(z[a])
            if d < depth:
                best, depth = a, d
        sign = 1.0 if z[best] >= 0.0 else -1.0
        for a in range(3):
            n[a] = 0.0
        n[best] = sign
        s[best] = sign * half[best]
        return -depth, FACE, -1
    phi = _direction(z, s, n, -1)
    if phi < _TINY:                                           # on the surface: a face's normal
        best, ratio = 0, -1.0
        for a in range(3):
            r = abs(z[a]) / max(half[a], 1e-300)
            if r > ratio:
                best, ratio = a, r
        for a in range(3):
            n[a] = 0.0
        n[best] = 1.0 if z[best] >= 0.0 else -1.0
        return phi, FACE, -1
    if clamped == 1:
        return phi, FACE, -1
    if clamped == 2:
        return phi, EDGE, free
    return phi, VERTEX, -1


@njit
def _direction(z, s, n, fallback):
    """n ← (z − s)/‖z − s‖; returns ‖z − s‖ (n along axis ``fallback`` when z = s, −1: left for the caller)."""
    d0, d1, d2 = z[0] - s[0], z[1] - s[1], z[2] - s[2]
    phi = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if phi > _TINY:
        n[0], n[1], n[2] = d0 / phi, d1 / phi, d2 / phi
    elif fallback >= 0:
        n[0], n[1], n[2] = 0.0, 0.0, 0.0
        n[fallback] = 1.0
    return phi


@njit
def curvature(phi, region, axis, n, zd):
    """ṅ·ż = żᵀ(I − n nᵀ) P ż / φ (module docstring) for the point's velocity ``zd`` relative to the core (core
    frame): 0 on a face, the velocity across the edge and the normal squared over φ at an edge, the tangential
    velocity squared over φ at a vertex."""
    if region == FACE or phi < _TINY:
        return 0.0
    vn = n[0] * zd[0] + n[1] * zd[1] + n[2] * zd[2]
    t2 = zd[0] * zd[0] + zd[1] * zd[1] + zd[2] * zd[2] - vn * vn
    if region == EDGE:
        t2 -= zd[axis] * zd[axis]
    return max(t2, 0.0) / phi


@njit
def tangent_basis(n, E, first):
    """E[:, first], E[:, first + 1] ← two unit vectors orthogonal to the unit ``n`` and to each other:
    e₁ = n × h/‖n × h‖ (h the x axis, or the y axis when n is near x), e₂ = n × e₁."""
    h0, h1 = (1.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 1.0)
    e0, e1, e2 = -n[2] * h1, n[2] * h0, n[0] * h1 - n[1] * h0
    norm = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    e0, e1, e2 = e0 / norm, e1 / norm, e2 / norm
    E[0, first], E[1, first], E[2, first] = e0, e1, e2
    E[0, first + 1] = n[1] * e2 - n[2] * e1
    E[1, first + 1] = n[2] * e0 - n[0] * e2
    E[2, first + 1] = n[0] * e1 - n[1] * e0


@njit
def core_coordinates(R_WL, p_WL, b, x, centre, R, y, z):
    """World point ``x`` in link b's frame (``y``) and in the frame of b's core centred at ``centre`` and turned by
    ``R`` in b's frame (``z``)."""
    for a in range(3):
        y[a] = R_WL[b, 0, a] * (x[0] - p_WL[b, 0]) + R_WL[b, 1, a] * (x[1] - p_WL[b, 1]) + \
            R_WL[b, 2, a] * (x[2] - p_WL[b, 2])
    for a in range(3):
        z[a] = R[0, a] * (y[0] - centre[0]) + R[1, a] * (y[1] - centre[1]) + R[2, a] * (y[2] - centre[2])


def distance(kind: int, half, z) -> tuple[float, np.ndarray, np.ndarray]:
    """``(φ, s, n)`` for one point ``z`` in the core's frame (:func:`nearest`, from Python)."""
    s, n = np.zeros(3), np.zeros(3)
    phi, _, _ = nearest(int(kind), np.asarray(half, dtype=float), np.asarray(z, dtype=float), s, n)
    return float(phi), s, n


@njit
def part_of(kind, half, z):
    """The part of the core whose point is nearest z, as one number: per axis of a box (the segment's own axis for
    a segment) 0 below −half, 1 between, 2 above +half, Σ 3^a c_a; −1 for a point (one part)."""
    if kind != BOX and kind != SEGMENT:
        return -1
    code = 0
    scale = 1
    for a in range(3):
        if kind == BOX or a == 2:
            h = half[a]
            code += scale * (0 if z[a] < -h else (2 if z[a] > h else 1))
        scale *= 3
    return code


@njit
def feature(kind, half, code, z, s, n):
    """:func:`nearest` on the part ``code`` of the core (:func:`part_of`; −1: wherever z is nearest): the
    distance to that face's plane (signed), that edge's line or that corner — the same as :func:`nearest` while z
    is nearest that part, and its smooth continuation beyond."""
    if code < 0 or kind == POINT:
        return nearest(kind, half, z, s, n)
    clamped = 0
    free = -1
    last = -1
    rest = code
    for a in range(3):
        c = rest % 3
        rest //= 3
        if kind == SEGMENT and a != 2:
            s[a] = 0.0
            continue
        if c == 1:
            s[a] = z[a]
            free = a
        else:
            s[a] = half[a] if c == 2 else -half[a]
            clamped += 1
            last = a
    if kind == SEGMENT:
        inside = free == 2
        return _direction(z, s, n, 0), (EDGE if inside else VERTEX), (2 if inside else -1)
    if clamped == 0:                                          # inside the box: its nearest face
        return nearest(kind, half, z, s, n)
    if clamped == 1:                                          # a face: its plane
        sign = 1.0 if s[last] > 0.0 else -1.0
        for a in range(3):
            n[a] = 0.0
        n[last] = sign
        return sign * (z[last] - s[last]), FACE, -1
    phi = _direction(z, s, n, -1)
    if phi < _TINY:                                           # on the edge or corner itself
        return nearest(kind, half, z, s, n)
    if clamped == 2:
        return phi, EDGE, free
    return phi, VERTEX, -1
