"""The compiled side of control programs (Kearney, Hansen & Cremer §4): what a program declares, evaluated inside
every evaluation of the dynamics — so at every integrator stage — with no Python on the step's path.

A program declares (:mod:`core.programs`):

- **quantities** (:data:`QUANTITY`): named scalar functions of the state — time, a joint's coordinate, a
  component of a body point's position or of the centre of mass, the distance between two points (a virtual
  leg), the angle of the line between two points or of a body axis in a plane, a component of the angular
  momentum about the centre of mass, or the rate of another quantity. Each has its value, its rate and, where
  asked, its gradient ∂ẋ/∂q̇ (a row of nv) and bias (ẍ = grad · q̈ + bias; a joint's, a point's, the centre of
  mass's, a distance's and an angle's between two points — a body angle's is NaN);
- **servos** (:data:`SERVO`, loosely coupled control, Kearney §4.1, eq. 10): a command
  ``u = clip(c0 + Σ wᵢ xᵢ, lo, hi)`` (a *law*: :data:`TERM` rows over quantities), applied to actuators either
  directly or through a quantity's gradient, τ = (∂x/∂q̇)ᵀ u on the actuated coordinates (virtual work: a force
  along a virtual leg, a moment about a hip);
- **control equations** (:data:`EQUATION`, tightly coupled control, §4.2): ``Σ terms = law`` with terms linear
  in constraint and contact forces, moments of contact forces about the centre of mass, joint accelerations,
  quantities' accelerations and actuator commands (:data:`LHS`), solved with the dynamics at every evaluation
  for the commands of the equations' actuators (:func:`equations_stage` in :mod:`core.forward`);
- **watches** (:data:`WATCH`): a quantity crossing a value in a direction — an event witness like a contact's
  (:mod:`core.witnesses`), isolated in time and handed to the program's event handler.
"""
from __future__ import annotations

import numpy as np

from ..jit import entry, njit
from ..kinematics import fk_kernel
from ..layout import kinematics_work
from ..points import bias_kernel, jacobian_columns, point_state, velocity_product_kernel

__all__ = ["QUANTITY", "TERM", "SERVO", "WATCH", "EQUATION", "LHS", "QUANTITY_KINDS", "LHS_KINDS",
           "quantities_kernel", "evaluate_quantities", "point_or_com", "law", "servo_commands", "watch_value", "momentum_kernel"]

Q_TIME, Q_JOINT, Q_POINT, Q_COM, Q_DISTANCE, Q_ANGLE, Q_BODY_ANGLE, Q_MOMENTUM, Q_RATE = range(9)
QUANTITY_KINDS = {"time": Q_TIME, "joint": Q_JOINT, "point": Q_POINT, "centre_of_mass": Q_COM,
                  "distance": Q_DISTANCE, "angle": Q_ANGLE, "body_angle": Q_BODY_ANGLE, "momentum": Q_MOMENTUM,
                  "rate": Q_RATE}
L_FORCE, L_MOMENT, L_ACCEL, L_QACCEL, L_ACTUATOR = range(5)
LHS_KINDS = {"force": L_FORCE, "moment": L_MOMENT, "acceleration": L_ACCEL, "quantity_acceleration": L_QACCEL,
             "actuator": L_ACTUATOR}

#: A quantity. ``link``/``r`` (−1: the centre of mass) and ``link_b``/``r_b``: points (``r`` a body-fixed
#: direction for ``body_angle``); ``axis``: the component taken (point, centre of mass, momentum) or the angle's
#: first reference direction e₁, ``axis_b`` its second e₂ (θ = atan2(e₁·d, e₂·d)); ``qi``/``vi``: a joint's
#: entries; ``ref``: the quantity a ``rate`` is of; ``gradient``: make ∂ẋ/∂q̇ and the bias.
QUANTITY = np.dtype([("kind", np.int64), ("link", np.int64), ("r", np.float64, (3,)), ("link_b", np.int64),
                     ("r_b", np.float64, (3,)), ("axis", np.float64, (3,)), ("axis_b", np.float64, (3,)),
                     ("qi", np.int64), ("vi", np.int64), ("ref", np.int64), ("gradient", np.bool_)], align=True)
#: One term of a law: ``weight`` × the value of ``quantity``.
TERM = np.dtype([("quantity", np.int64), ("weight", np.float64)], align=True)
#: A servo: ``u = clip(c0 + Σ terms[first:first+n], lo, hi)`` to the force rows ``actuators`` (−1: unused),
#: through the gradient of quantity ``along`` (−1: the command itself).
SERVO = np.dtype([("c0", np.float64), ("first", np.int64), ("n", np.int64), ("lo", np.float64), ("hi", np.float64),
                  ("along", np.int64), ("actuators", np.int64, (4,))], align=True)
#: A watch: fires when ``direction`` · (quantity − value) reaches 0 from below (direction +1: rising through
#: ``value``, −1: falling); one shot (``armed`` is cleared when it fires).
WATCH = np.dtype([("quantity", np.int64), ("value", np.float64), ("direction", np.float64), ("armed", np.bool_)],
                 align=True)
#: A control equation: ``Σ lhs[lhs_first:lhs_first+lhs_n] = clip(c0 + Σ terms[first:first+n], lo, hi)``.
EQUATION = np.dtype([("c0", np.float64), ("first", np.int64), ("n", np.int64), ("lo", np.float64),
                     ("hi", np.float64), ("lhs_first", np.int64), ("lhs_n", np.int64)], align=True)
#: One left-hand term: ``kind`` (:data:`LHS_KINDS`), ``target`` (a constraint, a contact with ``contact``, a
#: velocity index, a quantity, a force row), ``weight``, and for forces the direction: ``vec`` (world), or the
#: unit direction of the distance quantity ``along`` (≥ 0); for moments about the centre of mass, ``vec`` the axis.
LHS = np.dtype([("kind", np.int64), ("target", np.int64), ("contact", np.bool_), ("along", np.int64),
                ("vec", np.float64, (3,)), ("weight", np.float64)], align=True)


@njit
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit
def point_or_com(tree, kin, k, r, x, xd):
    """World position and velocity of body point r of link k, or of the centre of mass (k = −1)."""
    if k >= 0:
        point_state(kin.R_WL, kin.p_WL, kin.v, k, r, x, xd)
        return
    x[:] = 0.0
    xd[:] = 0.0
    total = 0.0
    p, pd = np.empty(3), np.empty(3)
    for i in range(tree.mass.shape[0]):
        mi = tree.mass[i]
        if mi <= 0:
            continue
        point_state(kin.R_WL, kin.p_WL, kin.v, i, tree.com[i], p, pd)
        total += mi
        for a in range(3):
            x[a] += mi * p[a]
            xd[a] += mi * pd[a]
    for a in range(3):
        x[a] /= total
        xd[a] /= total


@njit
def _point_row(tree, kin, k, r, e, sign, G, row, E3):
    """G[row] += sign · eᵀ J: the Jacobian of body point r of link k (or the centre of mass, k = −1) along e."""
    x, xd = np.empty(3), np.empty(3)
    for a in range(3):
        E3[a, 0] = e[a]
    if k >= 0:
        point_state(kin.R_WL, kin.p_WL, kin.v, k, r, x, xd)
        jacobian_columns(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, k, x, E3, 1, sign, G,
                         row)
        return
    total = tree.mass.sum()
    for i in range(tree.mass.shape[0]):
        if tree.mass[i] > 0:
            point_state(kin.R_WL, kin.p_WL, kin.v, i, tree.com[i], x, xd)
            jacobian_columns(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, i, x, E3, 1,
                             sign * tree.mass[i] / total, G, row)


@njit
def _point_bias(tree, kin, k, r, out):
    """J̇q̇ of body point r of link k, or of the centre of mass (k = −1)."""
    if k >= 0:
        bias_kernel(kin.R_WL, kin.v, kin.a_vp, k, r, out)
        return
    out[:] = 0.0
    b = np.empty(3)
    total = tree.mass.sum()
    for i in range(tree.mass.shape[0]):
        if tree.mass[i] > 0:
            bias_kernel(kin.R_WL, kin.v, kin.a_vp, i, tree.com[i], b)
            for a in range(3):
                out[a] += tree.mass[i] * b[a] / total


@njit
def momentum_kernel(tree, kin, c, cd, H):
    """The centre of mass c, its velocity ċ and the angular momentum about it H_G (world), from each link's
    spatial momentum I_k v_k (link frame, about its origin; ``tree.inertia``) turned into the world frame."""
    L = np.zeros(3)
    HO = np.zeros(3)
    h = np.empty(6)
    lw, aw = np.empty(3), np.empty(3)
    point_or_com(tree, kin, -1, c, c, cd)
    for k in range(tree.inertia.shape[0]):
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += tree.inertia[k, a, b] * kin.v[k, b]
            h[a] = s
        for a in range(3):
            aw[a] = kin.R_WL[k, a, 0] * h[0] + kin.R_WL[k, a, 1] * h[1] + kin.R_WL[k, a, 2] * h[2]
            lw[a] = kin.R_WL[k, a, 0] * h[3] + kin.R_WL[k, a, 1] * h[4] + kin.R_WL[k, a, 2] * h[5]
        p = kin.p_WL[k]
        HO[0] += aw[0] + p[1] * lw[2] - p[2] * lw[1]
        HO[1] += aw[1] + p[2] * lw[0] - p[0] * lw[2]
        HO[2] += aw[2] + p[0] * lw[1] - p[1] * lw[0]
        for a in range(3):
            L[a] += lw[a]
    H[0] = HO[0] - (c[1] * L[2] - c[2] * L[1])
    H[1] = HO[1] - (c[2] * L[0] - c[0] * L[2])
    H[2] = HO[2] - (c[0] * L[1] - c[1] * L[0])


@njit
def _angle(e1, e2, d, dd):
    """θ = atan2(e₁·d, e₂·d) and θ̇ for a vector d moving with ḋ."""
    s, c = _dot3(e1, d), _dot3(e2, d)
    rho2 = s * s + c * c
    return np.arctan2(s, c), (c * _dot3(e1, dd) - s * _dot3(e2, dd)) / max(rho2, 1e-300), s, c, rho2


@njit
def quantities_kernel(tree, kin, quantities, t, q, qd, values, rates, grad, bias, dirs, E3):
    """Every quantity's value (``values``), rate and, where it asks, its gradient row and bias (module docstring);
    a distance's unit direction into ``dirs``.
    ``kin``: the link kinematics with velocities and velocity-product accelerations at (q, q̇)."""
    nv = qd.shape[0]
    xa, va, xb, vb, d, dd, w = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), \
        np.empty(3)
    for i in range(quantities.shape[0]):
        qq = quantities[i]
        kind = qq.kind
        x, xr = 0.0, 0.0
        s, c, rho2 = 0.0, 0.0, 1.0
        if qq.gradient:
            for j in range(nv):
                grad[i, j] = 0.0
            bias[i] = 0.0
        if kind == Q_TIME:
            x, xr = t, 1.0
        elif kind == Q_JOINT:
            x, xr = q[qq.qi], qd[qq.vi]
            if qq.gradient:
                grad[i, qq.vi] = 1.0
        elif kind == Q_POINT or kind == Q_COM:
            point_or_com(tree, kin, qq.link if kind == Q_POINT else -1, qq.r, xa, va)
            x, xr = _dot3(qq.axis, xa), _dot3(qq.axis, va)
            if qq.gradient:
                k = qq.link if kind == Q_POINT else -1
                _point_row(tree, kin, k, qq.r, qq.axis, 1.0, grad, i, E3)
                _point_bias(tree, kin, k, qq.r, w)
                bias[i] = _dot3(qq.axis, w)
        elif kind == Q_DISTANCE or kind == Q_ANGLE:
            point_or_com(tree, kin, qq.link, qq.r, xa, va)
            point_or_com(tree, kin, qq.link_b, qq.r_b, xb, vb)
            for a in range(3):
                d[a] = xb[a] - xa[a]
                dd[a] = vb[a] - va[a]
            if kind == Q_DISTANCE:
                x = np.sqrt(_dot3(d, d))
                for a in range(3):
                    w[a] = d[a] / max(x, 1e-300)
                    dirs[i, a] = w[a]
                xr = _dot3(w, dd)
            else:
                x, xr, s, c, rho2 = _angle(qq.axis, qq.axis_b, d, dd)
                for a in range(3):                           # ∂θ̇/∂ḋ = (c e₁ − s e₂)/ρ²
                    w[a] = (c * qq.axis[a] - s * qq.axis_b[a]) / max(rho2, 1e-300)
            if qq.gradient:
                _point_row(tree, kin, qq.link_b, qq.r_b, w, 1.0, grad, i, E3)
                _point_row(tree, kin, qq.link, qq.r, w, -1.0, grad, i, E3)
                # the bias: d̈ = (J_b − J_a) q̈ + (J̇_b − J̇_a) q̇, then the second derivative of |d| or of the angle
                # at d̈ = 0 (ẍ = w·d̈ + bias): |d|: (|ḋ|² − ẋ²)/|d|; θ: −2 θ̇ (s ṡ + c ċ)/ρ²
                _point_bias(tree, kin, qq.link_b, qq.r_b, xb)
                _point_bias(tree, kin, qq.link, qq.r, xa)
                for a in range(3):
                    xb[a] -= xa[a]
                if kind == Q_DISTANCE:
                    bias[i] = _dot3(w, xb) + (_dot3(dd, dd) - xr * xr) / max(x, 1e-300)
                else:
                    bias[i] = _dot3(w, xb) - 2.0 * xr * (s * _dot3(qq.axis, dd) + c * _dot3(qq.axis_b, dd)) / \
                        max(rho2, 1e-300)
        elif kind == Q_BODY_ANGLE:                            # a body-fixed direction u = R r, u̇ = ω × u
            k = qq.link
            R = kin.R_WL[k]
            for a in range(3):
                d[a] = R[a, 0] * qq.r[0] + R[a, 1] * qq.r[1] + R[a, 2] * qq.r[2]
                xb[a] = R[a, 0] * kin.v[k, 0] + R[a, 1] * kin.v[k, 1] + R[a, 2] * kin.v[k, 2]
            dd[0] = xb[1] * d[2] - xb[2] * d[1]
            dd[1] = xb[2] * d[0] - xb[0] * d[2]
            dd[2] = xb[0] * d[1] - xb[1] * d[0]
            x, xr, s, c, rho2 = _angle(qq.axis, qq.axis_b, d, dd)
            if qq.gradient:                                   # u̇ = J(r) q̇ − J(0) q̇
                for a in range(3):
                    w[a] = (c * qq.axis[a] - s * qq.axis_b[a]) / max(rho2, 1e-300)
                    xa[a] = 0.0
                _point_row(tree, kin, k, qq.r, w, 1.0, grad, i, E3)
                _point_row(tree, kin, k, xa, w, -1.0, grad, i, E3)
                bias[i] = np.nan
        elif kind == Q_MOMENTUM:
            momentum_kernel(tree, kin, xa, va, w)
            x, xr = _dot3(qq.axis, w), np.nan
        elif kind == Q_RATE:
            x, xr = rates[qq.ref], np.nan
        values[i] = x
        rates[i] = xr


@njit
def law(c0, terms, first, n, lo, hi, values):
    """``clip(c0 + Σ wᵢ xᵢ, lo, hi)`` over the terms ``first … first + n − 1``."""
    u = c0
    for k in range(first, first + n):
        u += terms[k].weight * values[terms[k].quantity]
    return min(max(u, lo), hi)


@njit
def servo_commands(servos, terms, forces, values, grad, extra):
    """The servos' commands into ``extra`` (per force row; NaN where no servo commands the actuator)."""
    extra[:] = np.nan
    for s in range(servos.shape[0]):
        for j in range(4):
            e = servos[s].actuators[j]
            if e >= 0:
                extra[e] = 0.0
    for s in range(servos.shape[0]):
        sv = servos[s]
        u = law(sv.c0, terms, sv.first, sv.n, sv.lo, sv.hi, values)
        for j in range(4):
            e = sv.actuators[j]
            if e < 0:
                continue
            extra[e] += u if sv.along < 0 else grad[sv.along, forces[e].dof] * u


@njit
def watch_value(watch, values):
    """A watch's witness: positive while armed before its crossing, ≤ 0 once crossed."""
    return watch.direction * (watch.value - values[watch.quantity])


@entry
def evaluate_quantities(tree, quantities, t, q, qd, values, rates):
    """The entry point from Python: every quantity of ``quantities`` at (t, q, q̇) into ``values`` and ``rates``
    (what a control program's event handler reads: the same functions the compiled step evaluates)."""
    N, nv, Q = tree.parent.shape[0], qd.shape[0], quantities.shape[0]
    kin = kinematics_work(N)
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    velocity_product_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.E, kin.r, qd, kin.v, kin.c, kin.a_vp)
    quantities_kernel(tree, kin, quantities, t, q, qd, values, rates, np.zeros((Q, nv)), np.zeros(Q),
                      np.zeros((Q, 3)), np.zeros((3, 3)))
