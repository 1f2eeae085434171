"""Constraint rows in NumPy: deviation functions, Jacobians and bias terms of every constraint of a model.

Point constraints (Mitchell thesis §2.2.2–2.2.4, §2.4.3; Barzel & Barr). A constraint acts between body point
``r_a`` of link a and body point ``r_b`` of link b, or a (possibly moving) world point when ``link_b = -1``; a
constant world basis E (3 x m) picks its m rows::

    D = Eᵀ(x_a − x_b)            Ḋ = Eᵀ(ẋ_a − ẋ_b)                                  (position constraints)
    J = Eᵀ(J_a − J_b)            γ = Eᵀ(J̇_a q̇ − J̇_b q̇),  Eᵀ(J̇_a q̇ − n̈) for a world end    (eq. 2.37–2.39, 2.59)
    D̈ = J q̈ + γ                  stab = 2κḊ + κ²D   so that  D̈ + 2κḊ + κ²D = 0         (eq. 2.21)

A velocity constraint (kind 4) has ``D = Eᵀ(ẋ_a − v)``, Ḋ = 0 in the rows (its rate is J q̈ + γ, filled in by the
evaluation), and ``stab = κ D`` (first-order stabilization). J_a is the point Jacobian of eq. 2.37 and J̇_a q̇ the
velocity-product acceleration of eq. 2.65–2.67, both taken from core's public point kinematics.

A world end moves along a prescribed path ``n(t) = n0 + v t + a ∘ sin(2π f t + φ)``, or, when the user drags
it, ``n = p + v (t − t0)`` with n̈ = 0 (``nails[name] = (t0, p, v)``).

Joint-space constraints (kind 5; Aghili eq. 11 and 67, the slider condition): ``Φ(q) = value``, one row::

    D = Φ(q) − value     J = ∂Φ/∂q     Ḋ = J q̇     γ = q̇ᵀ (∂²Φ/∂q²) q̇     stab = 2κḊ + κ²D

Φ is evaluated by walking the scene's checked syntax tree (``expression.tree``) with NumPy; J and the Hessian
come *exactly* from SymPy (the tree's nodes mapped to SymPy, never the text evaluated). Core differentiates the
compiled program of Φ in forward mode (``core.joint_constraints.tape_jet``), exact too, so joint-space scenes
are compared at the same tolerance as the others.

``deviation`` and ``deviation_rate`` (‖D‖, ‖Ḋ‖) are reported for every constraint, active or not; only the active
ones get rows, stacked in constraint order. ``scale`` is the largest ``jacobian_scale`` of the active
constraints: the floor of the rank test (see :mod:`oracle.solve`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

import core

NAIL, POINT_TO_POINT, POINT_ON_LINE, POINT_ON_PLANE, POINT_VELOCITY, JOINT_SPACE = range(6)

__all__ = ["Rows", "constraint_rows", "nail_target", "constraint_links", "constraint_groups", "JOINT_SPACE",
           "POINT_VELOCITY", "joint_space_functions", "point_kinematics"]


# ---- point kinematics (core's public, stable functions) -------------------------------------------------------

def point_kinematics(model, q, qd, link: int, r, bias: bool = True):
    """``(x, ẋ, J (3 x nv), J̇q̇ or None)`` of body point r on link ``link``, world frame (eq. 2.37, 2.66–2.67)."""
    r = np.asarray(r, dtype=float)
    x = core.point_position(model, q, int(link), r)
    xd = core.point_velocity(model, q, qd, int(link), r)
    J = core.point_jacobian(model, q, int(link), r)
    b = core.point_bias_acceleration(model, q, qd, int(link), r) if bias else None
    return x, xd, J, b


def nail_target(c, t: float, override=None):
    """World position, velocity and acceleration of constraint c's world end at time t."""
    if override is not None:
        t0, p, v = override
        p, v = np.asarray(p, dtype=float), np.asarray(v, dtype=float)
        return p + v * (t - t0), v, np.zeros(3)
    if c.path is None:
        return np.asarray(c.r_b, dtype=float), np.zeros(3), np.zeros(3)
    vel, amp, freq, phase = (np.asarray(x, dtype=float) for x in c.path)
    w = 2.0 * np.pi * freq
    s, co = np.sin(w * t + phase), np.cos(w * t + phase)
    return c.r_b + vel * t + amp * s, vel + amp * w * co, -amp * w * w * s


# ---- joint-space constraints ----------------------------------------------------------------------------------

_NP_FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
                 "abs": np.abs}
_NP_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
              ast.Pow: np.power}


def _phi_numpy(node, values: dict):
    """Φ by walking the checked tree with NumPy (numbers, joint names, pi, + − * / **, unary ±, whitelisted calls)."""
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return float(np.pi) if node.id == "pi" else values[node.id]
    if isinstance(node, ast.BinOp):
        return _NP_BINARY[type(node.op)](_phi_numpy(node.left, values), _phi_numpy(node.right, values))
    if isinstance(node, ast.UnaryOp):
        x = _phi_numpy(node.operand, values)
        return -x if isinstance(node.op, ast.USub) else +x
    if isinstance(node, ast.Call):
        return _NP_FUNCTIONS[node.func.id](_phi_numpy(node.args[0], values))
    raise ValueError(f"unexpected node {type(node).__name__} in a checked expression")


def _to_sympy(node, symbols: dict):
    """The checked ast tree as a SymPy expression (floats as exact rationals, so no digit is lost)."""
    import sympy as sp
    if isinstance(node, ast.Constant):
        v = node.value
        return sp.Integer(v) if isinstance(v, int) else sp.Rational(float(v))
    if isinstance(node, ast.Name):
        return sp.pi if node.id == "pi" else symbols[node.id]
    if isinstance(node, ast.BinOp):
        a, b = _to_sympy(node.left, symbols), _to_sympy(node.right, symbols)
        op = type(node.op)
        if op is ast.Add:
            return a + b
        if op is ast.Sub:
            return a - b
        if op is ast.Mult:
            return a * b
        if op is ast.Div:
            return a / b
        if op is ast.Pow:
            return a ** b
    if isinstance(node, ast.UnaryOp):
        x = _to_sympy(node.operand, symbols)
        return -x if isinstance(node.op, ast.USub) else x
    if isinstance(node, ast.Call):
        fn = {"sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log,
              "abs": sp.Abs}[node.func.id]
        return fn(_to_sympy(node.args[0], symbols))
    raise ValueError(f"unexpected node {type(node).__name__} in a checked expression")


_JS_CACHE: dict = {}


def joint_space_functions(c):
    """``(gradient(x) -> (n,), hessian(x) -> (n, n))`` of Φ over the constraint's joint coordinates, exact by
    SymPy and lambdified to NumPy (cached per constraint object)."""
    hit = _JS_CACHE.get(id(c))
    if hit is not None and hit[0] is c:
        return hit[1]
    import sympy as sp
    names = list(c.names)
    syms = [sp.Symbol(f"x{j}", real=True) for j in range(len(names))]
    phi = _to_sympy(c.expression.tree, dict(zip(names, syms)))
    grad = [sp.diff(phi, s) for s in syms]
    hess = [[sp.diff(g, s) for s in syms] for g in grad]
    g_fn = sp.lambdify([syms], grad, modules="numpy")
    h_fn = sp.lambdify([syms], hess, modules="numpy")
    n = len(names)

    def gradient(x):
        return np.array(np.broadcast_arrays(*g_fn(list(x))), dtype=float).reshape(n)

    def hessian(x):
        return np.array([np.broadcast_arrays(*row) for row in h_fn(list(x))], dtype=float).reshape(n, n)

    _JS_CACHE[id(c)] = (c, (gradient, hessian))
    return gradient, hessian


def joint_space_row(c, q, qd, nv: int):
    """``(D, Ḋ, J row (nv,), γ)`` of one joint-space constraint, exact derivatives."""
    x = np.asarray(q, dtype=float)[np.asarray(c.q_index)]
    v = np.asarray(qd, dtype=float)[np.asarray(c.v_index)]
    gradient, hessian = joint_space_functions(c)
    g = gradient(x)
    d = float(_phi_numpy(c.expression.tree, dict(zip(c.names, x)))) - c.value
    gamma = float(v @ hessian(x) @ v)                                    # γ = q̇ᵀ (∂²Φ/∂q²) q̇
    J = np.zeros(nv)
    np.add.at(J, np.asarray(c.v_index), g)
    return d, float(g @ v), J, gamma


# ---- all rows ---------------------------------------------------------------------------------------------------

@dataclass
class Rows:
    """Stacked rows of the active constraints (m rows): ``J`` (m x nv), ``gamma``, ``D``, ``D_rate``, ``stab``
    (m,), ``slices[c]`` (None if inactive); ``deviation``, ``deviation_rate`` (K,) of every constraint; ``scale``
    the largest Jacobian scale of the active ones (0 if none); ``first_order`` (m,) bools of velocity rows."""
    J: np.ndarray
    gamma: np.ndarray
    D: np.ndarray
    D_rate: np.ndarray
    stab: np.ndarray
    slices: list
    deviation: np.ndarray
    deviation_rate: np.ndarray
    scale: float
    first_order: np.ndarray
    bases: list = None                # each constraint's world basis E at the state (its force is E λ)


def constraint_rows(model, t: float, q, qd, active, nails=None) -> Rows:
    """Rows of every constraint of ``model`` at (t, q, q̇) with the flags ``active`` and dragged ``nails``."""
    nails = nails or {}
    cons = model.constraints
    K, nv = len(cons), model.nv
    active = np.asarray(active, dtype=bool)
    m = sum(c.rows for c, on in zip(cons, active) if on)
    J = np.zeros((m, nv))
    gamma, D, D_rate, stab = np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m)
    first_order = np.zeros(m, dtype=bool)
    slices = [None] * K
    deviation, deviation_rate = np.zeros(K), np.zeros(K)
    bases = [np.asarray(c.basis, dtype=float) for c in cons]
    open_sticks = {p.stick for cc in getattr(model, "contacts", ()) for p in cc.points
                   if p.stick >= 0 and not active[p.normal]}
    normal_of = {p.stick: p.normal for cc in getattr(model, "contacts", ()) for p in cc.points if p.stick >= 0}
    scale, row = 0.0, 0
    for i, c in enumerate(cons):
        if active[i]:
            slices[i] = slice(row, row + c.rows)
            row += c.rows
            scale = max(scale, float(c.jacobian_scale))
    for i, c in enumerate(cons):
        s = slices[i]
        kappa = float(c.stabilization)
        if c.kind == JOINT_SPACE:
            d, dr, Ji, gi = joint_space_row(c, q, qd, nv)
            deviation[i], deviation_rate[i] = abs(d), abs(dr)
            if s is not None:
                J[s.start], gamma[s.start], D[s.start], D_rate[s.start] = Ji, gi, d, dr
                stab[s.start] = 2.0 * kappa * dr + kappa * kappa * d                    # eq. 2.21
            continue
        if i in open_sticks and s is None:                                    # an open point's friction rows
            continue
        if getattr(c, "slide_half", 0.0) > 0:                              # a capsule's sliding point
            if s is not None:
                raise NotImplementedError(f"{c.name}: the oracle evaluates sliding contact points open only")
            deviation[i], deviation_rate[i] = _open_slide(model, q, qd, c)
            continue
        far = _far(model, q, qd, c) if s is None and getattr(c, "shape", 0) else None
        if far is not None:                                                   # the broad phase's lower bound
            deviation[i], deviation_rate[i] = far
            continue
        if getattr(c, "body_basis", False):
            d, dr, Ji, gi, bases[i] = _body_basis_row(model, q, qd, c, cons[normal_of.get(i, i)])
            deviation[i], deviation_rate[i] = np.linalg.norm(d), np.linalg.norm(dr)
            if s is not None:
                D[s], D_rate[s], J[s], gamma[s] = d, dr, Ji, gi
                stab[s] = kappa * d if c.kind == POINT_VELOCITY else 2.0 * kappa * dr + kappa * kappa * d
                first_order[s] = c.kind == POINT_VELOCITY
            continue
        E = np.asarray(c.basis, dtype=float)
        xa, va, Ja, ba = point_kinematics(model, q, qd, c.link_a, c.r_a, bias=s is not None)
        if c.link_b >= 0:
            xb, vb, Jb, bb = point_kinematics(model, q, qd, c.link_b, c.r_b, bias=s is not None)
        else:
            xb, vb, nddot = nail_target(c, t, nails.get(c.name))
            Jb, bb = None, nddot                                                # γ gets −n̈ of the world end
        if c.kind == POINT_VELOCITY:
            d = E.T @ (va - np.asarray(c.target_velocity, dtype=float))
            dr = np.zeros(c.rows)
        else:
            d = E.T @ (xa - xb)
            dr = E.T @ (va - vb)
        deviation[i], deviation_rate[i] = np.linalg.norm(d), np.linalg.norm(dr)
        if s is None:
            continue
        D[s], D_rate[s] = d, dr
        stab[s] = kappa * d if c.kind == POINT_VELOCITY else 2.0 * kappa * dr + kappa * kappa * d
        first_order[s] = c.kind == POINT_VELOCITY
        gamma[s] = E.T @ (ba - bb)
        J[s] = E.T @ Ja if Jb is None else E.T @ (Ja - Jb)
    return Rows(J, gamma, D, D_rate, stab, slices, deviation, deviation_rate, scale, first_order, bases)


# ---- rows against a body's plane or a shape's core ---------------------------------------------------------------

def _nearest(kind: int, half, z):
    """``(φ, n)``: the signed distance from z to a core (1 a point, 2 a segment along z of half-length half[2],
    3 a box of half-extents half) and the unit normal from it, by clipping (negative inside a box: the depth to
    its nearest face)."""
    half = np.asarray(half, dtype=float)
    if kind == 1:
        s = np.zeros(3)
    elif kind == 2:
        s = np.array([0.0, 0.0, np.clip(z[2], -half[2], half[2])])
    else:
        s = np.clip(z, -half, half)
        if np.all(s == z) or np.linalg.norm(z - s) < 1e-12:   # inside or on it: the nearest face
            a = int(np.argmin(half - np.abs(z)))
            n = np.zeros(3)
            n[a] = 1.0 if z[a] >= 0 else -1.0
            return float(np.abs(z[a]) - half[a]), n
    d = z - s
    return float(np.linalg.norm(d)), d / np.linalg.norm(d)


def _far(model, q, qd, c):
    """An open contact against a shape's core whose point is outside the core's bounding ball (radius 0 for a
    point, a segment's half-length, a box's half-diagonal) widened by both radii reports a lower bound of its
    separation, not the distance: ``(g, |u·w|)`` with g = |x_a − centre| − that radius, u the unit direction from
    the core's centre to x_a and w = ẋ_a − v_b(x_a); None inside the ball."""
    kin = core.points.link_kinematics(model, q, qd)
    kb = int(c.link_b)
    R, p = kin.R_WL[kb], kin.p_WL[kb]
    centre = p + R @ np.asarray(c.r_b, dtype=float)
    xa, va, _, _ = point_kinematics(model, q, qd, c.link_a, c.r_a, bias=False)
    half = np.asarray(c.shape_half, dtype=float)
    ball = 0.0 if c.shape == 1 else half[2] if c.shape == 2 else float(np.linalg.norm(half))
    dist = float(np.linalg.norm(xa - centre))
    g = dist - ball - float(c.radius)
    if not g > 0:
        return None
    u = (xa - centre) / dist
    vs = point_kinematics(model, q, qd, kb, R.T @ (xa - p), bias=False)[1]
    return g, abs(float(u @ (va - vs)))


#: As core.geometry's: a pair within this of its region counts (m), and where none does the separation reported.
_SLACK, _STAND_IN = 1e-9, 1e-6


def _edges(kind: int, half):
    """The core's edges as (centre s₀, unit direction f, half-length, face normals): a segment core's axis (no
    faces), a box's twelve edges each with its two faces' outer normals."""
    half = np.asarray(half, dtype=float)
    if kind == 2:
        return [(np.zeros(3), np.array([0.0, 0.0, 1.0]), half[2], ())]
    out = []
    for a in range(3):
        others = [b for b in range(3) if b != a]
        for s1 in (-1.0, 1.0):
            for s2 in (-1.0, 1.0):
                s0, n1, n2 = np.zeros(3), np.zeros(3), np.zeros(3)
                s0[others[0]], s0[others[1]] = s1 * half[others[0]], s2 * half[others[1]]
                n1[others[0]], n2[others[1]] = s1, s2
                out.append((s0, np.eye(3)[a], half[a], (n1, n2)))
    return out


def _open_slide(model, q, qd, c):
    """``(deviation, deviation rate)`` of an open sliding contact point (a capsule's segment or a box's edge against
    another core's edges), by its own means: the segment's point nearest each edge's line from the normal equations
    of the two lines (numpy's solve), kept where both points lie in their segments and, on a box, the common normal
    lies between the edge's faces' normals (and, for a box's edge, minus it between its own faces'), and not deeper
    than the box's least half-extent; the least such separation (the next for the second of two siblings),
    else its segment's nearer end's separation but at least 1e-6 m, and beyond the core's bounding ball (a
    segment's half-length, a box's half-diagonal, plus the segment's) that ball's lower bound. The rate: the
    normal's component of the velocity of the segment's material point there relative to the core's body."""
    kin = core.points.link_kinematics(model, q, qd)
    ka, kb = int(c.link_a), int(c.link_b)
    R, p = kin.R_WL[kb], kin.p_WL[kb]
    C = np.asarray(c.shape_R, dtype=float)
    to_core = (R @ C).T
    xc = kin.p_WL[ka] + kin.R_WL[ka] @ np.asarray(c.r_a, dtype=float)
    zc = to_core @ (xc - p - R @ np.asarray(c.r_b, dtype=float))
    ec = to_core @ (kin.R_WL[ka] @ np.asarray(c.slide_axis, dtype=float))
    L, radius, half = float(c.slide_half), float(c.radius), np.asarray(c.shape_half, dtype=float)

    def rate(u, n):
        xa, va, _, _ = point_kinematics(model, q, qd, ka, np.asarray(c.r_a) + u * np.asarray(c.slide_axis),
                                        bias=False)
        vs = point_kinematics(model, q, qd, kb, R.T @ (xa - p), bias=False)[1]
        return abs(float((R @ C @ n) @ (va - vs)))

    ball = half[2] if c.shape == 2 else float(np.linalg.norm(half))
    reach = float(np.linalg.norm(zc))
    if reach - ball - L > radius:
        return reach - ball - L - radius, rate(0.0, zc / reach)
    found = []
    deepest = -float(half.min()) if c.shape == 3 else -np.inf
    faces_a = [] if c.slide_faces is None else [to_core @ (kin.R_WL[ka] @ m) for m in np.asarray(c.slide_faces)]
    for s0, f, lf, faces in _edges(c.shape, half):
        k = np.cross(ec, f)
        if np.linalg.norm(k) ** 2 < 1e-10:
            continue
        A = np.array([[ec @ ec, -(ec @ f)], [ec @ f, -(f @ f)]])
        u, v = np.linalg.solve(A, [-(zc - s0) @ ec, -(zc - s0) @ f])     # (zc + u e − s0 − v f) ⟂ e, f
        n = k / np.linalg.norm(k)
        if faces:
            n = n if n @ (faces[0] + faces[1]) >= 0 else -n
        else:
            n = n if n @ (zc - s0) >= 0 else -n
        h = float(n @ (zc + u * ec - s0 - v * f))
        margin = min(L - abs(u), lf - abs(v))
        if faces:
            margin = min(margin, float(half.max()) * min(n @ faces[0], n @ faces[1]))
        if c.slide_faces is not None:                                    # a box's edge: −n between its faces'
            margin = min(margin, float(half.max()) * min(-(n @ m) for m in faces_a))     # normals
        if margin >= -_SLACK and h >= deepest:
            found.append((h, u, n))
    found.sort(key=lambda x: x[0])
    rank = int(c.slide_rank) if c.slide_sibling >= 0 else 0         # (siblings both open: the least, the next)
    if len(found) > rank:
        h, u, n = found[rank]
        return abs(h - radius), rate(u, n)                         # (a deviation is a norm: overlapping, |h|)
    ends = []
    for u in (-L, L):
        phi, n = _nearest(c.shape, half, zc + u * ec)
        ends.append((phi, u, n))
    phi, u, n = min(ends, key=lambda e: e[0])
    return max(phi - radius, _STAND_IN), rate(u, n)


def _body_basis_row(model, q, qd, c, normal):
    """``(D, Ḋ, J, γ, E)`` of a contact row whose basis turns with link b (a plane fixed in b, or the normal to a
    shape's core of b): point a against b's material point at x_a (w = ẋ_a − v_b(x_a)), D = Eᵀ(x_a − x_b),
    Ḋ = Eᵀw (D = Eᵀw for the friction rows), J = Eᵀ(J_a − J_b(x_a)), γ = Eᵀ(J̇_a q̇ − J̇_b(x_a) q̇ − 2 ω_b × w)
    and, against a core, + ṅ·ż with ṅ by central differences of the normal along the relative motion. A friction
    row against a core (``normal``: its point's normal row) spans the plane orthogonal to that normal."""
    kin = core.points.link_kinematics(model, q, qd)
    kb = int(c.link_b)
    R, p = kin.R_WL[kb], kin.p_WL[kb]
    omega = R @ kin.v[kb, :3]
    xa, va, Ja, ba = point_kinematics(model, q, qd, c.link_a, c.r_a)
    rs = R.T @ (xa - p)
    _, vs, Jb, bs = point_kinematics(model, q, qd, kb, rs)
    w = va - vs
    extra = 0.0
    if getattr(c, "shape", 0):
        C = np.asarray(c.shape_R, dtype=float)
        z = C.T @ (rs - c.r_b)
        phi, n = _nearest(c.shape, c.shape_half, z)
        zd = (R @ C).T @ w
        eps = 1e-7 * max(1.0, np.linalg.norm(z)) / max(np.linalg.norm(zd), 1e-300)
        n_plus, n_minus = _nearest(c.shape, c.shape_half, z + eps * zd)[1], _nearest(c.shape, c.shape_half,
                                                                                     z - eps * zd)[1]
        extra = float((n_plus - n_minus) / (2 * eps) @ zd) if np.linalg.norm(zd) > 0 else 0.0
        E = (R @ C @ n).reshape(3, 1)
        d = np.array([phi - c.radius])
    elif getattr(normal, "shape", 0):                       # a friction row against a core: ⟂ its normal
        C = np.asarray(normal.shape_R, dtype=float)
        _, n = _nearest(normal.shape, normal.shape_half, C.T @ (R.T @ (xa - p) - normal.r_b))
        n = R @ C @ n
        E = np.linalg.svd(np.eye(3) - np.outer(n, n))[0][:, :2]
        xa, va, Ja, ba = point_kinematics(model, q, qd, c.link_a, c.r_a)
        d = E.T @ w
    else:
        E = R @ np.asarray(c.basis, dtype=float)
        d = E.T @ (w if c.kind == POINT_VELOCITY else xa - (p + R @ c.r_b))
    dr = np.zeros(E.shape[1]) if c.kind == POINT_VELOCITY else E.T @ w
    gamma = E.T @ (ba - bs - 2.0 * np.cross(omega, w))
    gamma[0] += extra
    return d, dr, E.T @ (Ja - Jb), gamma, E


# ---- grouping -------------------------------------------------------------------------------------------------

def constraint_links(c) -> tuple:
    """The links a constraint's rows depend on (the world excluded)."""
    if c.kind == JOINT_SPACE:
        return tuple(int(k) for k in c.links)
    return (int(c.link_a),) + ((int(c.link_b),) if c.link_b >= 0 else ())


def constraint_groups(model, indices) -> list[list[int]]:
    """Partition the constraints ``indices`` into groups that share a tree (A is block diagonal over them,
    eq. 2.41: "a block i, j is zero if constraints i and j act on no common body"). Each group lists constraint
    indices in increasing order."""
    parent = {i: i for i in indices}

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i
    owner: dict[int, int] = {}
    for i in indices:
        for link in constraint_links(model.constraints[i]):
            root = model.root_of(link)
            if root in owner:
                a, b = find(i), find(owner[root])
                if a != b:
                    parent[a] = b
            else:
                owner[root] = i
    groups: dict[int, list[int]] = {}
    for i in indices:
        groups.setdefault(find(i), []).append(i)
    return [sorted(g) for g in groups.values()]
