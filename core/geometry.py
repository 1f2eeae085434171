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

__all__ = ["PLANE", "POINT", "SEGMENT", "BOX", "CORE_NAMES", "FACE", "EDGE", "VERTEX", "nearest", "bounding_radius", "feature",
           "part_of", "core_coordinates", "curvature", "normal_rate", "tangent_basis", "distance", "crossing",
           "crossing_rates", "slide_point", "edge_frame", "PARALLEL", "SLACK", "STAND_IN"]

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
def normal_rate(phi, region, axis, n, zd, out):
    """out ← ṅ = (I − n nᵀ) P ż / φ (module docstring), how fast the normal turns relative to the core as the point
    moves at ``zd`` relative to it (core frame): 0 on a face, the velocity across the edge and the normal over φ at
    an edge, the tangential velocity over φ at a vertex."""
    for a in range(3):
        out[a] = 0.0
    if region == FACE or phi < _TINY:
        return
    for a in range(3):
        out[a] = zd[a] if (region != EDGE or a != axis) else 0.0
    vn = n[0] * out[0] + n[1] * out[1] + n[2] * out[2]
    for a in range(3):
        out[a] = (out[a] - vn * n[a]) / phi


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


# ---- a segment sliding against a core's edges ------------------------------------------------------------------
#
# Two capsules crossing side by side, or a capsule lying across a box's edge, touch at a point inside a segment:
# no body-fixed point stands for it (the points of each are its cap centres). A *sliding* contact point is the
# point x = c + u e of a segment (centre c, unit axis e, half-length L, on body a) nearest an edge of the core
# (s = s₀ + v f: a segment core's axis, or one of a box's twelve edges), the pair of nearest points of the two
# lines. Along their common normal k = e × f the separation is
#
#     h = n·(x − s) = σ k̂·(c − s₀),    k̂ = k/‖k‖,  σ = ±1,   the lines' parameters
#     u = (b (r·f) − r·e)/(1 − b²),  v = r·f + u b,   r = c − s₀,  b = e·f
#
# (the u e and v f terms drop out of h: both are orthogonal to k). The pair is the shapes' nearest — the segment's
# point in the edge's Voronoi region and the edge's point in the segment's — while |u| < L, |v| < L_f and, for a
# box's edge, n lies between the normals of the edge's two faces; beyond, another contact of the pair stands for
# it (a cap centre, a box's corner). Rates, in the core's frame, with ż the velocity of the segment's material
# point at u and ė the segment axis' (the envelope theorem: x slides along e, orthogonal to n):
#
#     ḣ = n·ż,     ḧ = n·z̈ + ṅ·ż + u̇ (n·ė),     ṅ = σ (I − k̂ k̂ᵀ)(ė × f)/‖k‖
#
# with u̇ from differentiating u above. The contact keeps its edge and σ over a step (its part: 2 j + (σ > 0)
# for edge j), so h is smooth over it; the step ends where the pair leaves the region above (a witness,
# :mod:`core.witnesses`), and the contact hands over to the one that stands for the shapes there.
#
# A box's edge is such a segment too (radius 0), with one more condition for its Voronoi region: −n, the direction
# from the edge towards the other core, lies between the normals of the edge's own two faces (``faces``). Two box
# edges crossing (a plank lying across a beam: four crossings, two on each of the plank's long edges) are found
# from the edges of one box only, every edge–edge contact having an edge of that box. A segment touches a convex
# core along at most one sub-segment, whose two ends are where it crosses the core's edges, so each segment
# against a box has two sliding points, *siblings* (``rank`` 0 and 1): a sibling in touch keeps its pair, and the
# other takes the valid pair of least h among the rest (``skip``: the sibling's edge); both open, rank 0 takes the
# least and rank 1 the next.

#: 1 − (e·f)² below this: the segment and the edge are parallel, their lines have no single nearest pair (a capsule
#: lying along another rests on its caps' contacts).
PARALLEL = 1e-10
#: m: how far outside its region (:func:`crossing`'s margin) a pair still counts as valid — the witness's
#: tolerance (:data:`core.contacts.PENETRATION`): a capsule lying flat on a box's face across its edge has its
#: normal on the edge's cone's boundary, margin 0 up to round-off, and a stricter test flickered.
SLACK = 1e-9
#: The separation an open sliding contact reports where its pair is not the shapes' nearest (m, or its caps' or
#: corners' separation when larger): positive, so that it never touches down there; those other contacts do.
STAND_IN = 1e-6


@njit(inline="always")
def _next_axes(a):
    """(a + 1) % 3 and (a + 2) % 3 for a in 0, 1, 2, without integer division (the edge search's inner loop)."""
    return (a + 1 if a < 2 else 0), (a + 2 if a == 0 else a - 1)


@njit(inline="always")
def edge_frame(kind, half, j, s0):
    """s0 ← the centre of core edge j (a segment core's axis for j = 0; a box's edge j along axis j // 4, on the
    sides (−1)^(1 + bit) of the next two axes); returns (axis, half-length, the two face normals' signs
    (0: none))."""
    if kind == SEGMENT:
        s0[0], s0[1], s0[2] = 0.0, 0.0, 0.0
        return 2, half[2], 0.0, 0.0
    a = j >> 2
    i1, i2 = _next_axes(a)
    s1 = 1.0 if j & 1 else -1.0
    s2 = 1.0 if j & 2 else -1.0
    s0[a] = 0.0
    s0[i1] = s1 * half[i1]
    s0[i2] = s2 * half[i2]
    return a, half[a], s1, s2


@njit(inline="always")
def _lines(c, e, a, s0):
    """The two lines' nearest pair, the segment's (c, e) and the edge's through s0 along axis a: ``(b, 1 − b²,
    u, v, k̂₀, k̂₁, k̂₂, r₀, r₁, r₂)`` with b = e·f, the parameters u, v, the unit common normal k̂ = e × f/‖e × f‖
    and r = c − s₀ (notes above; 1 − b² < :data:`PARALLEL`: parallel, the rest zero)."""
    b = e[a]
    den = 1.0 - b * b
    r0, r1, r2 = c[0] - s0[0], c[1] - s0[1], c[2] - s0[2]
    if den < PARALLEL:
        return b, den, 0.0, 0.0, 0.0, 0.0, 0.0, r0, r1, r2
    rf = c[a] - s0[a]
    u = (b * rf - (r0 * e[0] + r1 * e[1] + r2 * e[2])) / den
    kn = np.sqrt(den)
    k0 = (e[1] * (a == 2) - e[2] * (a == 1)) / kn           # e × f, f the unit vector of axis a
    k1 = (e[2] * (a == 0) - e[0] * (a == 2)) / kn
    k2 = (e[0] * (a == 1) - e[1] * (a == 0)) / kn
    return b, den, u, rf + u * b, k0, k1, k2, r0, r1, r2


@njit(inline="always")
def _pair(c, e, length, kind, half, j, sign, n, s, faces, edge, quick=False):
    """The nearest pair of the segment (c, e, length) and core edge j with σ = ``sign`` (0: the side the segment
    is on — for a box's edge, the side its faces face); n, s ← the normal and the edge's point. Returns
    (h, u, v, σ, margin): margin ≥ 0 while the pair is the shapes' nearest (module notes), the least distance
    (m) from leaving that region; −1 for parallel lines. ``edge``: the segment is a box's edge, whose two faces'
    outward normals are ``faces`` (core frame): −n must lie between them. ``quick``: return as soon as the pair is
    known to lie outside a segment (its margin below −:data:`SLACK`; a search's most common case), n and s unset."""
    a, lf, s1, s2 = edge_frame(kind, half, j, s)
    b, den, u, v, k0, k1, k2, r0, r1, r2 = _lines(c, e, a, s)
    if den < PARALLEL:
        return np.inf, 0.0, 0.0, 1.0, -1.0
    margin = min(length - abs(u), lf - abs(v))
    if quick and margin < -SLACK:
        return np.inf, u, v, 1.0, margin
    sigma = sign
    scale = length
    if kind == BOX:
        i1, i2 = _next_axes(a)
        k = (k0, k1, k2)
        if sigma == 0.0:
            sigma = 1.0 if s1 * k[i1] + s2 * k[i2] >= 0.0 else -1.0
        scale = max(half[0], max(half[1], half[2]))
        margin = min(margin, scale * min(sigma * s1 * k[i1], sigma * s2 * k[i2]))
    elif sigma == 0.0:
        sigma = 1.0 if k0 * r0 + k1 * r1 + k2 * r2 >= 0.0 else -1.0
    n[0], n[1], n[2] = sigma * k0, sigma * k1, sigma * k2
    if edge:                                                  # −n between the segment's own faces' normals
        m0 = -(n[0] * faces[0, 0] + n[1] * faces[0, 1] + n[2] * faces[0, 2])
        m1 = -(n[0] * faces[1, 0] + n[1] * faces[1, 1] + n[2] * faces[1, 2])
        margin = min(margin, scale * min(m0, m1))
    s[a] += v
    return n[0] * r0 + n[1] * r1 + n[2] * r2, u, v, sigma, margin


@njit
def crossing(c, e, length, kind, half, code, n, s, faces, edge, skip, rank):
    """The sliding contact of a segment — centre ``c``, unit axis ``e``, half-length ``length``, in the core's
    frame; a box's edge when ``edge``, with its faces' normals ``faces`` — against a SEGMENT or BOX core (notes
    above): with ``code`` ≥ 0 the pair of that edge and side (its smooth continuation beyond its region), else
    among the core's edges but ``skip`` (−1: none) the valid pair (margin ≥ −:data:`SLACK`) of least h
    (``rank`` 0) or the next (``rank`` 1). n, s ← the normal (core to segment) and the edge's point. Returns
    ``(h, u, code, margin)``: h = n·(x − s) (the radii not subtracted), the segment's parameter u, the pair's code
    (2 j + (σ > 0)) and its margin (≥ 0: valid; with ``code`` < 0 and no valid pair: h = ∞, code −1). A box's
    edge whose pair would be deeper than the box's least half-extent is not a candidate: from a segment touching
    one edge, the edge across the box also has a pair in its region, behind the box."""
    if code >= 0:
        h, u, v, sigma, margin = _pair(c, e, length, kind, half, code // 2, 1.0 if code % 2 else -1.0, n, s, faces,
                                       edge)
        return h, u, code, margin
    best_h, best_u, best_code, best_margin = np.inf, 0.0, -1, -1.0
    next_h, next_u, next_code, next_margin = np.inf, 0.0, -1, -1.0
    bn0, bn1, bn2, bs0, bs1, bs2 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    xn0, xn1, xn2, xs0, xs1, xs2 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    n2, s2 = n, s                                             # (scratch: the chosen pair's are written at the end)
    deepest = -min(half[0], min(half[1], half[2])) if kind == BOX else -np.inf
    for j in range(12 if kind == BOX else 1):
        if j == skip:
            continue
        h, u, v, sigma, margin = _pair(c, e, length, kind, half, j, 0.0, n2, s2, faces, edge, True)
        if margin < -SLACK or h < deepest:                   # (an edge across the box from the segment is not
            continue                                          # its nearest: its h is about the box's thickness)
        code_j = 2 * j + (1 if sigma > 0 else 0)
        if h < best_h:
            next_h, next_u, next_code, next_margin = best_h, best_u, best_code, best_margin
            xn0, xn1, xn2, xs0, xs1, xs2 = bn0, bn1, bn2, bs0, bs1, bs2
            best_h, best_u, best_code, best_margin = h, u, code_j, margin
            bn0, bn1, bn2, bs0, bs1, bs2 = n2[0], n2[1], n2[2], s2[0], s2[1], s2[2]
        elif h < next_h:
            next_h, next_u, next_code, next_margin = h, u, code_j, margin
            xn0, xn1, xn2, xs0, xs1, xs2 = n2[0], n2[1], n2[2], s2[0], s2[1], s2[2]
    if rank == 1:
        n[0], n[1], n[2], s[0], s[1], s[2] = xn0, xn1, xn2, xs0, xs1, xs2
        return next_h, next_u, next_code, next_margin
    n[0], n[1], n[2], s[0], s[1], s[2] = bn0, bn1, bn2, bs0, bs1, bs2
    return best_h, best_u, best_code, best_margin


@njit
def crossing_rates(c, e, kind, half, code, zd, ed, nd):
    """For the pair ``code`` of a sliding contact (:func:`crossing`), with ``zd`` the velocity of the segment's
    material point at the pair and ``ed`` the rate of its axis (core frame): ``(ṅ·ż + u̇ (n·ė), u̇)``, the part of
    ḧ that the material point's acceleration leaves out (notes above), and the rate at which the contact point
    slides along the segment; ``nd`` ← ṅ (core frame)."""
    s0 = np.empty(3)
    a, _, _, _ = edge_frame(kind, half, code // 2, s0)
    sigma = 1.0 if code % 2 else -1.0
    b, den, u, _, k0, k1, k2, r0, r1, r2 = _lines(c, e, a, s0)
    nd[0], nd[1], nd[2] = 0.0, 0.0, 0.0
    if den < PARALLEL:
        return 0.0, 0.0
    kn = np.sqrt(den)
    rf = r0 * (a == 0) + r1 * (a == 1) + r2 * (a == 2)
    cd0, cd1, cd2 = zd[0] - u * ed[0], zd[1] - u * ed[1], zd[2] - u * ed[2]     # ċ: the centre's material point
    bd = ed[a]
    rfd = cd0 * (a == 0) + cd1 * (a == 1) + cd2 * (a == 2)
    red = cd0 * e[0] + cd1 * e[1] + cd2 * e[2] + r0 * ed[0] + r1 * ed[1] + r2 * ed[2]
    ud = (bd * rf + b * rfd - red + 2.0 * u * b * bd) / den   # u̇, from u = (b (r·f) − r·e)/(1 − b²)
    q0 = (ed[1] * (a == 2) - ed[2] * (a == 1)) / kn           # (ė × f)/‖k‖, then its part across k̂
    q1 = (ed[2] * (a == 0) - ed[0] * (a == 2)) / kn
    q2 = (ed[0] * (a == 1) - ed[1] * (a == 0)) / kn
    qk = q0 * k0 + q1 * k1 + q2 * k2
    nd[0], nd[1], nd[2] = sigma * (q0 - qk * k0), sigma * (q1 - qk * k1), sigma * (q2 - qk * k2)
    n_ed = sigma * (k0 * ed[0] + k1 * ed[1] + k2 * ed[2])
    return nd[0] * zd[0] + nd[1] * zd[1] + nd[2] * zd[2] + ud * n_ed, ud


@njit
def slide_point(c, e, length, kind, half, radius, code, n, s, faces, edge, skip, rank):
    """The sliding contact point of a segment (c, e, ``length``: core frame; a box's edge with ``faces`` when
    ``edge``) swept by a ball against a core, both radii together ``radius``: its pair (:func:`crossing`,
    ``code``, ``skip`` and ``rank`` as there), or — with ``code`` < 0 and no valid pair, or lines parallel — the
    segment's nearer end, at its separation from the core but at least :data:`STAND_IN` (the cap or corner that
    stands for the shapes there measures them; this point never touches down there). n, s ← the normal and the
    core's point, so that n·(x − s) = h at the segment's point x = c + u e. Returns ``(h, u, valid)``, h between
    the cores (the radii not subtracted)."""
    h, u, got, _ = crossing(c, e, length, kind, half, code, n, s, faces, edge, skip, rank)
    if got >= 0 and h < np.inf:
        return h, u, True
    x, y, m = np.empty(3), np.empty(3), np.empty(3)
    h = np.inf
    for end in (-length, length):
        for a in range(3):
            x[a] = c[a] + end * e[a]
        phi, _, _ = nearest(kind, half, x, y, m)
        if phi < h:
            h, u = phi, end
            for a in range(3):
                n[a] = m[a]
    h = max(h - radius, STAND_IN) + radius
    for a in range(3):                                         # (the stand-in's core point: h back along n)
        s[a] = c[a] + u * e[a] - h * n[a]
    return h, u, False
