"""The event stage of the compiled step: witness functions, and the resolution of the events they find (Kearney
§3: "an event consists of a triggering condition, an isolation predicate, and a resolution method"; Drake's
witness functions). The integrator (:mod:`core.integrators`) evaluates the witnesses at the end of every step,
isolates the first crossing in time by re-stepping from the step's start, and calls :func:`resolve` at it.

Each witness is a signed function of what an evaluation already computed, positive before its event and negative
after (``EventWork.g``); per contact point p with world normal n (turned with a body's plane), in the order
:func:`find` tests them:

- touchdown (open point):   g = h + ε,  h = n·(x_a − x_b) the separation, while the point approaches (n·ẋ < 0)
  (ε = :data:`core.contacts.PENETRATION`: a point that just lifted off, at h ≈ 0, does not touch down again);
- lift-off (point in contact): g = N = n·F_n, its normal force — once its ``liftoff_delay`` after touching
  down has passed;
- slip (sticking point):    g = μN − ‖F_t‖ (the friction cone), unless the point is held (below);
- stick (slipping point):   g = −v_t·f̂, its slip velocity against its friction's direction — only for a point
  whose slip opposed its friction at the step's start (``eligible``: a slip that has just begun from rest may
  not stick at once);
- a joint limit (bound open):  g = s (q − bound) + ε, s = ±1, while the joint moves into the bound or is beyond it
  by more than :data:`LIMIT_SLACK` and not moving out; (bound active): g = s λ, its force;
- a break (active bilateral constraint):  g = max_deviation − ‖D‖ (thesis §2.3.4), isolated like the contacts'
  events; a state that starts a call beyond a bound (one made by hand) breaks at once (:func:`breaks_and_rank`);
- a rank change of J: reported at the step's end where it is first seen (a report, not a switch: the bounded
  solve goes through the rank change continuously, so nothing in the motion waits for its instant);
- a control program's watch (armed):  g = s (value − x), s = ±1 the direction it watches x cross ``value`` in
  (:mod:`core.programs.kernels`) — only for a watch that was positive at the step's start; it fires once
  (disarmed) and is handed to the program, which may arm it again;
- a point in contact with a shape's core crossing from one part of the core to another (a ball rolling from a
  box's face onto its edge): g = the distance back to the boundary it crossed, + ε. A contact keeps over a step
  the part of the core it started the step on (its normal row's ``part``; the distance to that face's plane,
  edge's line or corner is smooth over the step: :func:`core.geometry.feature`); this event ends the step where
  the point crosses into another part, which the step after it keeps. Nothing switches and it is not logged:
  without it q̈ would jump inside a step and cost RK4 its order. A sliding point (a capsule's segment against
  another core's edge, :func:`core.geometry.crossing`): g = its pair's margin, how far it is from leaving the region
  where it is the shapes' nearest, + ε; where it leaves, the point hands over — it opens, and the cap or corner that
  stands for the shapes there touches down after 1 nm (:func:`_switch`) — and a sliding point that touches down
  within a radius of its segment's end takes over from the cap there (:func:`_take_over`). A box edge's crossing
  in touch keeps its pair up to :data:`CORNER_SLACK` beyond its region (a corner resting on an edge); a box's
  corner in touch keeps the face it touches, and leaves it (a lift-off) where it goes over that face's edge.

Resolution (:func:`resolve`): touchdowns and limits reached take an impact (:func:`core.impacts.impact`:
impulses on the touching points, the bounds and every linked active constraint; each point's mode after it),
a break removes its constraint, lift-offs remove a point's rows, slips its stick rows (its Coulomb force μN
taking over in the stick force's direction), sticks add them back; then, until the modes are consistent (at most
:data:`core.integrators.SETTLE_ROUNDS` rounds, one lift-off or release a round), the lift-offs and slips
that the new modes cause at once (:func:`settle`). A point that switches between stick and slip, or lifts off,
:data:`MAX_SWITCHES` times inside one step is held to the step's end — in stick, and closed even if its normal
force pulls (chatter at the cone's edge; a point with no consistent mode, as in Painlevé's configuration, where
sliding has no solution, sticking pulls and lifting off penetrates: Menagerie's Go2 dragging a calf at μ = 1
lifted off and touched down again every nanosecond).
"""
from __future__ import annotations

import numpy as np

from .contacts import OPEN, PENETRATION, SLIP, STICK
from .constraints import slide_choice, slide_frame, to_core_frame
from .geometry import BOX, SEGMENT, SLACK, core_coordinates, crossing, part_of, tangent_basis
from .events import (BOUNCE, BREAK, FULL_RANK, LIFT_OFF, LIMIT, LIMIT_BOUNCE, LIMIT_RELEASE, RANK_DEFICIENT,
                     SLIP as SLIP_EVENT, STICK as STICK_EVENT, TOUCHDOWN, WATCH)
from .impacts import BOUND, NOT_IN_IMPACT, POINT, impact, plane_normal
from .jit import njit
from .points import point_state
from .programs.kernels import watch_value

__all__ = ["REGION", "region_code", "find", "witness_value", "witness_rate", "resolve", "settle_round", "close_touching", "update_tables", "refresh_slip", "mark_eligible",
           "breaks_and_rank", "rank_change", "log", "MAX_SWITCHES", "TABLE_TOLERANCE"]

#: A released joint bound is taken again when the joint moves into it faster than this (rad/s or m/s) or is beyond it
#: by more than LIMIT_SLACK (rad or m): a joint resting on its bound with no load, whose bound force crosses zero by
#: round-off, chattered between release and limit (the limp lsa7 arm's wrist at 1.37 s).
LIMIT_CREEP = 1e-6
LIMIT_SLACK = 1e-6
#: The contact tables (:func:`update_tables`) take a new contact point, stick basis or reaction point when it has
#: moved more than this (m, or of a unit vector): a body at rest whose point moves by round-off at every step made
#: every step evaluate its state in full twice more (with the step-start evaluation now a stage's, a stack of
#: five boxes took 1.4x its step).
TABLE_TOLERANCE = 1e-12
#: A point that switches between stick and slip this many times inside one step sticks until the step ends.
MAX_SWITCHES = 4
#: m: how far beyond its region (its edge's end, or either box's faces' cone) a box edge's crossing in touch keeps
#: its pair, the pair taken only inside it (hysteresis). A box's corner resting on another box's edge touches it at
#: the end of each of its three edges: their crossings are all at the region's boundary, and with no slack they
#: handed the contact to one another at every nanometre of drift (every 0.1 ms in a random drop of boxes, until
#: the run stopped as chatter). Beyond its end by δ, the line's pair measures the distance to within O(δ²). So does a
#: capsule lying across a box's top near its corner, its two crossings at the ends of the two edges there.
CORNER_SLACK = 1e-6
#: :func:`core.geometry.part_of`'s code inside a box (every axis between its faces).
INSIDE = 13
#: m: faces whose depths below a corner inside a box differ by less than this are as near (the corner is at their
#: edge, within the isolation's tolerance).
FACE_TIE = 1e-8
#: The kind of a point's crossing between two parts of a core (found and isolated, never logged: not an
#: :class:`core.events.Event` kind).
REGION = 100


@njit
def _dot(n, x, i):
    return n[0] * x[i, 0] + n[1] * x[i, 1] + n[2] * x[i, 2]


@njit
def _slip_speed_against(n, out, stick, f):
    """−v_t·f̂: the slip velocity of the point's material point (the stick rows' point) along the plane, against
    the direction of its friction force f (positive while the friction opposes the slip)."""
    fn = np.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
    if fn == 0.0:
        return 0.0
    vn = _dot(n, out.velocity_a, stick)
    s = 0.0
    for a in range(3):
        s -= (out.velocity_a[stick, a] - n[a] * vn) * f[a]
    return s / fn


@njit
def _add(ev, count, kind, index, g):
    ev.kind[count] = kind
    ev.index[count] = index
    ev.g[count] = g
    return count + 1


@njit
def _core_point(tab, kin, p, z):
    """z ← contact point p's point in the frame of its shape's core (its normal row's ``r_b``, ``shape_R``)."""
    pt = tab.points[p]
    con = tab.constraints[pt.normal]
    k = pt.link
    x, y = np.empty(3), np.empty(3)
    for a in range(3):
        x[a] = kin.p_WL[k, a] + kin.R_WL[k, a, 0] * pt.r[0] + kin.R_WL[k, a, 1] * pt.r[1] + kin.R_WL[k, a, 2] * pt.r[2]
    core_coordinates(kin.R_WL, kin.p_WL, pt.plane_link, x, con.r_b, con.shape_R, y, z)


@njit
def _crossing(tab, kin, p, code):
    """The pair of sliding contact point p in touch at the state of ``kin`` (:func:`core.geometry.crossing`:
    ``code`` ≥ 0 that pair, else the shapes' nearest but its sibling's): ``(h, u, code, margin)``."""
    con = tab.constraints[tab.points[p].normal]
    zc, ec, y, x, fc = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty((2, 3))
    slide_frame(kin.R_WL, kin.p_WL, con, zc, ec, fc, y, x)
    skip = slide_choice(tab.constraints, con)[0]              # (for a point in touch: any pair but its sibling's)
    return crossing(zc, ec, con.slide_half, con.shape, con.shape_half, code, y, x, fc, con.slide_edge, skip, 0)


@njit
def region_code(tab, kin, p, z):
    """The part of its shape's core contact point p is nearest (:func:`core.geometry.part_of`; −1 for a plane or
    a sphere's point); a sliding point's pair (:func:`core.geometry.crossing`; −1: none)."""
    con = tab.constraints[tab.points[p].normal]
    if con.shape != BOX and con.shape != SEGMENT:
        return -1
    if con.slide_half > 0.0:                                 # the pair it keeps while that is valid, else the valid
        if con.part >= 0 and _crossing(tab, kin, p, con.part)[3] >= -SLACK - _kept_slack(con):     # one (none:
            return con.part                                                    # it keeps its own, whose
        #                                                                        witness ends the step)
        code = _crossing(tab, kin, p, -1)[2]
        return code if code >= 0 else con.part
    _core_point(tab, kin, p, z)
    code = part_of(con.shape, con.shape_half, z)
    if con.shape == BOX and code == INSIDE:                  # a corner pressed in by the isolation's nanometre:
        best, depth = 0, np.inf                               # the nearest face's part, whose plane is smooth over
        for a in range(3):                                    # the step (inside, the nearest face changes across
            d = con.shape_half[a] - abs(z[a])                 # the box's diagonal planes: near an edge a corner's
            if d < depth:                                     # normal flipped by 90° within a step)
                best, depth = a, d
        ties = 0
        for a in range(3):
            ties += con.shape_half[a] - abs(z[a]) <= depth + FACE_TIE
        if ties > 1:                                          # at an edge, of the faces as near, the one it slides
            zd = np.empty(3)                                  # along (the least normal speed)
            _core_velocity(tab, kin, p, zd)
            along = np.inf
            for a in range(3):
                if con.shape_half[a] - abs(z[a]) <= depth + FACE_TIE and abs(zd[a]) < along:
                    best, along = a, abs(zd[a])
        code += 3 ** best if z[best] >= 0.0 else -(3 ** best)
    return code


@njit
def _core_velocity(tab, kin, p, zd):
    """zd ← the velocity of contact point p relative to the core's body's material point where it is, in the
    core's frame (``kin`` with velocities)."""
    pt = tab.points[p]
    con = tab.constraints[pt.normal]
    x, xd, r, yd, w = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    point_state(kin.R_WL, kin.p_WL, kin.v, pt.link, pt.r, x, xd)
    b = pt.plane_link
    for a in range(3):
        r[a] = kin.R_WL[b, 0, a] * (x[0] - kin.p_WL[b, 0]) + kin.R_WL[b, 1, a] * (x[1] - kin.p_WL[b, 1]) + \
            kin.R_WL[b, 2, a] * (x[2] - kin.p_WL[b, 2])
    point_state(kin.R_WL, kin.p_WL, kin.v, b, r, w, yd)
    for a in range(3):
        w[a] = xd[a] - yd[a]
    to_core_frame(kin.R_WL, b, con.shape_R, w, zd)


@njit(inline="always")
def _kept_slack(con):
    """How far beyond its region a crossing in touch keeps its pair (:data:`CORNER_SLACK`): one with a sibling (a box
    edge's, a capsule's against a box); 0 for a capsule's against a capsule."""
    return CORNER_SLACK if con.slide_sibling >= 0 else 0.0


@njit
def _region_witness(tab, kin, p, code, z):
    """The least, over the axes, of how far contact point p is from crossing back into the part of its core it
    started the step in (``code``, :func:`region_code`), plus ε (module docstring): negative once it has crossed a
    boundary by more than ε — a box's face is left over its edges only (a corner in touch is pressed into the box
    by up to the isolation's tolerance, and stays on that face's plane). A sliding point: how far its pair is from leaving the region where it is the shapes'
    nearest (the pair's margin), plus ε."""
    con = tab.constraints[tab.points[p].normal]
    if con.slide_half > 0.0:
        return _crossing(tab, kin, p, code)[3] + PENETRATION + _kept_slack(con)
    _core_point(tab, kin, p, z)
    out = 0
    if con.shape == BOX:
        k = code
        for a in range(3):
            out += k % 3 != 1
            k //= 3
    g = np.inf
    for a in range(3):
        c = code % 3
        code //= 3
        if con.shape != BOX and a != 2:
            continue
        if out == 1 and c != 1:                               # a face's own axis: under its plane (a corner
            continue                                          # pressed in) is still that face
        h = con.shape_half[a]
        if c == 1:
            d = h - abs(z[a])
        elif c == 2:
            d = z[a] - h
        else:
            d = -z[a] - h
        g = min(g, d + PENETRATION)
    return g


@njit
def _separation(out, n, i):
    """h = n·(x_a − x_b): the separation along n of constraint row i's two points."""
    return n[0] * (out.point_a[i, 0] - out.point_b[i, 0]) + n[1] * (out.point_a[i, 1] - out.point_b[i, 1]) + \
        n[2] * (out.point_a[i, 2] - out.point_b[i, 2])


@njit
def _cone(pt, out, N):
    """μN − ‖F_t‖: a sticking point's friction cone (its stick rows' force)."""
    F = out.constraint_force
    s = pt.stick
    return pt.mu * N - np.sqrt(F[s, 0] * F[s, 0] + F[s, 1] * F[s, 1] + F[s, 2] * F[s, 2])


@njit
def _limit_gap(lim, k, y_q):
    """s (q − bound): how far joint limit k's bound (lower for even k, upper for odd) is from being passed."""
    if k % 2 == 0:
        return y_q[lim.q] - lim.lower
    return lim.upper - y_q[lim.q]


@njit
def _limit_force(lim, k, out):
    """s λ: joint limit k's bound force, positive while it pushes."""
    if k % 2 == 0:
        return out.constraint_force[lim.lower_row, 0]
    return -out.constraint_force[lim.upper_row, 0]


@njit
def _point_witnesses(tab, ws, out, t, active, slip, touched, settling):
    """:func:`find`'s contact points: touchdown, lift-off, slip and stick; returns how many were found."""
    ev, kin = ws.events, ws.kin
    points, cons, held, eligible = tab.points, tab.constraints, ev.held, ev.eligible   # (each read once)
    count = 0
    n = np.empty(3)
    z = np.empty(3)
    for p in range(points.shape[0]):
        pt = points[p]
        plane_normal(tab, kin, p, n)
        i = pt.normal
        if not active[i]:
            if settling:
                continue
            h = _separation(out, n, i)
            if h < -PENETRATION and _dot(n, out.velocity_a, i) < 0.0:
                count = _add(ev, count, TOUCHDOWN, p, h + PENETRATION)
            continue
        N = _dot(n, out.constraint_force, i)
        loading = pt.liftoff_delay > 0 and np.isfinite(touched[p]) and t - touched[p] < pt.liftoff_delay
        if N < 0.0 and not loading and not held[p]:
            count = _add(ev, count, LIFT_OFF, p, N)
            continue
        s = pt.stick
        before = count
        if s >= 0 and active[s]:
            g = _cone(pt, out, N)
            if g < 0.0 and not held[p]:
                count = _add(ev, count, SLIP_EVENT, p, g)
        elif s >= 0 and not settling and eligible[p]:
            g = _slip_speed_against(n, out, s, slip[p])
            if g < 0.0:
                count = _add(ev, count, STICK_EVENT, p, g)
        part = cons[i].part
        if count == before and not settling and part >= 0:
            g = _region_witness(tab, kin, p, part, z)
            if g < 0.0:
                count = _add(ev, count, REGION, p, g)
    return count


@njit
def find(tab, ws, out, t, y_q, y_qd, active, slip, touched, settling):
    """The events whose witnesses are negative at the state of the last full evaluation ``out`` (time t,
    configuration ``y_q``, velocity ``y_qd``; module docstring), into ``ws.events`` (``kind``, ``index``, ``g``); returns how many.
    ``settling``: only the events that modes set at an event cause at once (lift-off, slip, a limit's release)."""
    ev = ws.events
    count = 0
    if tab.points.shape[0] > 0:                               # (no scratch allocated without points)
        count = _point_witnesses(tab, ws, out, t, active, slip, touched, settling)
    for k in range(2 * tab.limits.shape[0]):
        lim = tab.limits[k // 2]
        sign = 1.0 if k % 2 == 0 else -1.0
        row = lim.lower_row if k % 2 == 0 else lim.upper_row
        if not active[row]:
            if settling:
                continue
            h = _limit_gap(lim, k, y_q)
            # beyond the bound, and moving into it faster than round-off, or beyond it by more than LIMIT_SLACK and
            # not leaving it: a bound released at rest with no load (its force crossing zero by round-off) is not
            # taken again at once, nor one released beyond its bound (the drift its stabilization was removing)
            # while the joint moves out of it — taken, it bounced with no impulse at once, again and again
            into = sign * y_qd[lim.v]
            if h < -PENETRATION and (into < -LIMIT_CREEP or (h < -LIMIT_SLACK and into <= LIMIT_CREEP)):
                count = _add(ev, count, LIMIT, k, h + PENETRATION)
        else:
            N = _limit_force(lim, k, out)
            if N < 0.0:
                count = _add(ev, count, LIMIT_RELEASE, k, N)
    if not settling:
        cons = tab.constraints
        for c in range(cons.shape[0]):                        # a break: beyond its deviation bound (§2.3.4)
            if active[c] and not cons[c].unilateral and out.deviation[c] > cons[c].max_deviation:
                count = _add(ev, count, BREAK, c, cons[c].max_deviation - out.deviation[c])
        for w in range(tab.watches.shape[0]):
            if tab.watches[w].armed and ev.watch_sign[w]:
                g = watch_value(tab.watches[w], out.quantities)
                if g <= 0.0:
                    count = _add(ev, count, WATCH, w, g)
    return count


@njit
def witness_value(tab, ws, out, y_q, slip, kind, index):
    """The witness of event ``kind`` on ``index`` (as :func:`find` reports them) at the state of the last full
    evaluation ``out`` (configuration ``y_q``), whatever its sign and whether :func:`find` would test it there:
    the values the isolation interpolates between (:func:`core.integrators.advance`)."""
    if kind == LIMIT:
        return _limit_gap(tab.limits[index // 2], index, y_q) + PENETRATION
    if kind == LIMIT_RELEASE:
        return _limit_force(tab.limits[index // 2], index, out)
    if kind == BREAK:
        return tab.constraints[index].max_deviation - out.deviation[index]
    if kind == WATCH:
        return watch_value(tab.watches[index], out.quantities)
    n = np.empty(3)
    pt = tab.points[index]
    plane_normal(tab, ws.kin, index, n)
    if kind == TOUCHDOWN:
        return _separation(out, n, pt.normal) + PENETRATION
    N = _dot(n, out.constraint_force, pt.normal)
    if kind == LIFT_OFF:
        return N
    if kind == SLIP_EVENT:
        return _cone(pt, out, N)
    if kind == STICK_EVENT:
        return _slip_speed_against(n, out, pt.stick, slip[index])
    return _region_witness(tab, ws.kin, index, tab.constraints[pt.normal].part, np.empty(3))


@njit
def witness_rate(tab, ws, out, y_qd, kind, index):
    """ġ of witness (``kind``, ``index``) at the state of the full evaluation ``out`` (velocity ``y_qd``) where it
    is known — a touchdown's n·ẋ, the velocity of its point relative to the other body's point there along the
    normal (exactly ḣ against a plane, a face, a ball's or an edge's core and the broad phase's bound: the normal
    is that of the nearest point), a joint limit's s q̇, a watch's −s ẋ (its quantity's rate, where the programs'
    stage knows it: not a momentum's or a rate's) — else NaN. The isolation interpolates with them
    (:func:`core.integrators._first_crossing`)."""
    if kind == WATCH:
        watch = tab.watches[index]
        return -watch.direction * ws.programs.rates[watch.quantity]
    if kind == LIMIT:
        lim = tab.limits[index // 2]
        return y_qd[lim.v] if index % 2 == 0 else -y_qd[lim.v]
    if kind == TOUCHDOWN:
        n = np.empty(3)
        plane_normal(tab, ws.kin, index, n)
        return _dot(n, out.velocity_a, tab.points[index].normal)
    return np.nan


@njit
def mark_eligible(tab, ws, out, active, slip):
    """``ws.events.eligible[p]``: whether slipping point p's slip opposes its friction at the state of ``out`` (the
    points that may stick in the step about to be taken); ``watch_sign[w]``: whether armed watch w's witness is positive there (a
    watch fires on a crossing, not on a value it is armed past)."""
    ev, kin = ws.events, ws.kin
    for w in range(tab.watches.shape[0]):
        ev.watch_sign[w] = tab.watches[w].armed and watch_value(tab.watches[w], out.quantities) > 0.0
    if tab.points.shape[0] == 0:
        return
    n = np.empty(3)
    points, eligible = tab.points, ev.eligible
    for p in range(points.shape[0]):
        pt = points[p]
        eligible[p] = False
        if pt.stick < 0 or not active[pt.normal] or active[pt.stick]:
            continue
        plane_normal(tab, kin, p, n)
        eligible[p] = _slip_speed_against(n, out, pt.stick, slip[p]) > 0.0


@njit
def update_tables(tab, kin, active, slip, lead):
    """Write what the contact rows take from the state into the tables: each slipping point's Coulomb force
    (``slip``; its reaction on a plane's body), and where a sphere touches (the stick rows' and the friction's
    body point: the material point that touches ``lead`` seconds later, to first order — a step holds the one
    that touches at its middle, so a rolling sphere's contact is held with no bias of first order in the step;
    the reaction's point on the plane's body), and the part of its shape's core a point in contact keeps over the
    step (its normal row's ``part``, :func:`region_code`). ``kin``: the link kinematics (with velocities) at the
    state.
    Returns whether anything changed (an evaluation made before is then stale)."""
    changed = False
    if tab.points.shape[0] == 0:                              # (a step calls this twice: no allocation then)
        return changed
    n = np.empty(3)
    w = np.empty(3)
    r = np.empty(3)
    ws_t = np.empty((3, 2))
    cons, forces, points = tab.constraints, tab.forces, tab.points
    for p in range(points.shape[0]):
        pt = points[p]
        part = region_code(tab, kin, p, r) if active[pt.normal] else -1     # the part of a core kept over a step
        if cons[pt.normal].part != part:
            cons[pt.normal].part = part
            changed = True
        fi = pt.friction
        if fi < 0:
            continue
        for a in range(3):
            if forces[fi].force[a] != slip[p, a]:
                forces[fi].force[a] = slip[p, a]
                changed = True
            if pt.reaction >= 0 and forces[pt.reaction].force[a] != -slip[p, a]:
                forces[pt.reaction].force[a] = -slip[p, a]
                changed = True
        if not ((pt.radius > 0 or pt.reaction >= 0) and active[pt.normal]):
            continue
        k = pt.link
        plane_normal(tab, kin, p, n)
        if pt.stick >= 0 and cons[pt.normal].shape > 0:      # against a core: the tangent plane of this normal
            b = pt.plane_link
            for a in range(3):
                w[a] = kin.R_WL[b, 0, a] * n[0] + kin.R_WL[b, 1, a] * n[1] + kin.R_WL[b, 2, a] * n[2]
            tangent_basis(w, ws_t, 0)
            moved = 0.0
            for a in range(3):
                for e in range(2):
                    moved = max(moved, abs(cons[pt.stick].basis[a, e] - ws_t[a, e]))
            if moved > TABLE_TOLERANCE:
                for a in range(3):
                    for e in range(2):
                        cons[pt.stick].basis[a, e] = ws_t[a, e]
                changed = True
        for a in range(3):                                    # the normal in the link's frame
            w[a] = kin.R_WL[k, 0, a] * n[0] + kin.R_WL[k, 1, a] * n[1] + kin.R_WL[k, 2, a] * n[2]
        if lead != 0.0 and pt.radius > 0:                     # turned back by the link's rotation relative to the
            o0, o1, o2 = kin.v[k, 0], kin.v[k, 1], kin.v[k, 2]   # plane: dn/dt = −ω × n (link frame)
            if pt.plane_link >= 0:
                b = pt.plane_link
                for a in range(3):
                    wb = 0.0
                    for c in range(3):
                        wb += kin.R_WL[b, c, 0] * kin.v[b, 0] * kin.R_WL[k, c, a] + \
                            kin.R_WL[b, c, 1] * kin.v[b, 1] * kin.R_WL[k, c, a] + \
                            kin.R_WL[b, c, 2] * kin.v[b, 2] * kin.R_WL[k, c, a]
                    if a == 0:
                        o0 -= wb
                    elif a == 1:
                        o1 -= wb
                    else:
                        o2 -= wb
            c0, c1, c2 = o1 * w[2] - o2 * w[1], o2 * w[0] - o0 * w[2], o0 * w[1] - o1 * w[0]
            w[0], w[1], w[2] = w[0] - lead * c0, w[1] - lead * c1, w[2] - lead * c2
            if pt.plane_link >= 0:                            # and by its own turning relative to the plane's body
                b = pt.plane_link                             # (a core's edge or corner, a sliding pair: ṅ_b)
                nr = cons[pt.normal].normal_rate
                for a in range(3):
                    wb = 0.0
                    for c in range(3):
                        wb += kin.R_WL[k, c, a] * (kin.R_WL[b, c, 0] * nr[0] + kin.R_WL[b, c, 1] * nr[1] +
                                                   kin.R_WL[b, c, 2] * nr[2])
                    w[a] += lead * wb
            norm = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
            for a in range(3):
                w[a] /= norm
        centre = cons[pt.normal].r_a                          # (a sliding point: where it is, and where it slides
        ahead = lead * cons[pt.normal].slide_rate              # to in ``lead``)
        axis = cons[pt.normal].slide_axis
        for a in range(3):
            r[a] = centre[a] + ahead * axis[a] - pt.radius * w[a]
        moved = 0.0
        for a in range(3):
            moved = max(moved, abs(cons[pt.stick].r_a[a] - r[a]))
        if moved > TABLE_TOLERANCE:
            for a in range(3):
                cons[pt.stick].r_a[a] = r[a]
                forces[fi].r_a[a] = r[a]
            changed = True
        if pt.reaction >= 0:                                  # the reaction acts on b's point where p touches
            b = pt.plane_link
            for a in range(3):
                x = kin.p_WL[k, a] + kin.R_WL[k, a, 0] * r[0] + kin.R_WL[k, a, 1] * r[1] + kin.R_WL[k, a, 2] * r[2]
                w[a] = x - kin.p_WL[b, a]
            moved = 0.0
            for a in range(3):
                r[a] = kin.R_WL[b, 0, a] * w[0] + kin.R_WL[b, 1, a] * w[1] + kin.R_WL[b, 2, a] * w[2]
                moved = max(moved, abs(forces[pt.reaction].r_a[a] - r[a]))
            if moved > TABLE_TOLERANCE:
                for a in range(3):
                    forces[pt.reaction].r_a[a] = r[a]
                changed = True
    return changed


@njit
def refresh_slip(tab, kin, out, active, slip, cap):
    """Each slipping point's Coulomb force μN opposing its slip velocity, N and the velocity from the evaluation
    ``out`` at the state (the direction kept while the point hardly moves): friction explicit over the next step.
    Returns whether a force changed.

    Repeated at one state (the rounds of a settle, :func:`settle_round`) the refreshes are a fixed-point iteration
    N ← N(μN), which diverges where the normal force grows with the friction that slides the point (a leg dragged
    at μ = 1: Painlevé's configuration, in which sliding has no consistent force) — twice the force at each round,
    10⁶ N within a settle, which threw Menagerie's Go2, collapsing onto its calves, metres up. ``cap`` (P; empty:
    no bound, a step's end) bounds them: a point's first refresh with a force in a settle, where its cap is
    still infinite, sets it to twice the larger of its force before and after; later ones stay within it."""
    changed = False
    if tab.points.shape[0] == 0:
        return changed
    n = np.empty(3)
    f = np.empty(3)
    points = tab.points
    for p in range(points.shape[0]):
        pt = points[p]
        if pt.stick < 0 or not active[pt.normal] or active[pt.stick]:
            continue
        plane_normal(tab, kin, p, n)
        N = max(_dot(n, out.constraint_force, pt.normal), 0.0)
        vn = _dot(n, out.velocity_a, pt.stick)
        v0 = out.velocity_a[pt.stick, 0] - n[0] * vn
        v1 = out.velocity_a[pt.stick, 1] - n[1] * vn
        v2 = out.velocity_a[pt.stick, 2] - n[2] * vn
        speed = np.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
        if speed > 1e-9:
            f[0], f[1], f[2] = -v0 / speed, -v1 / speed, -v2 / speed
        else:
            old = np.sqrt(slip[p, 0] ** 2 + slip[p, 1] ** 2 + slip[p, 2] ** 2)
            old = max(old, 1e-300)
            f[0], f[1], f[2] = slip[p, 0] / old, slip[p, 1] / old, slip[p, 2] / old
        size = pt.mu * N
        if cap.shape[0] > 0:
            before = np.sqrt(slip[p, 0] ** 2 + slip[p, 1] ** 2 + slip[p, 2] ** 2)
            if np.isinf(cap[p]) and max(size, before) > 0.0:
                cap[p] = 2.0 * max(size, before)
            size = min(size, cap[p])
        d2, f2 = 0.0, 0.0
        for a in range(3):
            f[a] *= size
            d2 += (f[a] - slip[p, a]) ** 2
            f2 += f[a] * f[a]
        if np.sqrt(d2) > 1e-12 * (np.sqrt(f2) + 1e-300):
            for a in range(3):
                slip[p, a] = f[a]
            changed = True
    return changed


@njit
def log(events, clock, t, kind, index, impulse, tangential, velocity, force, mode, value):
    """Append one event to the buffer (:data:`core.events.EVENT`); False when it is full."""
    ck = clock[0]
    k = ck.n_events
    if k >= events.shape[0]:
        ck.overflow = True
        return False
    e = events[k]
    e.t, e.kind, e.index, e.impulse, e.tangential_impulse = t, kind, index, impulse, tangential
    e.velocity, e.force, e.mode, e.value = velocity, force, mode, value
    ck.n_events = k + 1
    return True


@njit
def _switch(tab, ws, out, n_found, active, slip, events, clock, t):
    """Apply the mode switches among the events found (lift-off, slip, stick, a limit's release) and log them;
    counts each point's lift-offs, slips and sticks (``switches``; a point at :data:`MAX_SWITCHES` is ``held``)."""
    ev, kin = ws.events, ws.kin
    nan = np.nan
    n = np.empty(3)
    for e in range(n_found):
        kind, i, g = ev.kind[e], ev.index[e], ev.g[e]
        if kind == LIMIT_RELEASE:
            lim = tab.limits[i // 2]
            active[lim.lower_row if i % 2 == 0 else lim.upper_row] = False
            log(events, clock, t, LIMIT_RELEASE, i, nan, nan, nan, g, -1, nan)
        elif kind == LIFT_OFF:
            _open_point(tab, i, active, slip)
            log(events, clock, t, LIFT_OFF, i, nan, nan, nan, g, -1, nan)
            _count_switch(ws, i)
        elif kind == SLIP_EVENT:
            pt = tab.points[i]
            F = out.constraint_force
            plane_normal(tab, kin, i, n)
            N = _dot(n, F, pt.normal)
            ft = np.sqrt(F[pt.stick, 0] ** 2 + F[pt.stick, 1] ** 2 + F[pt.stick, 2] ** 2)
            active[pt.stick] = False
            for a in range(3):
                slip[i, a] = pt.mu * N * F[pt.stick, a] / max(ft, 1e-300)
            log(events, clock, t, SLIP_EVENT, i, nan, nan, nan, ft, -1, N)
            _count_switch(ws, i)
        elif kind == BREAK:                                   # removed from the solve (thesis §2.3.4)
            active[i] = False
            log(events, clock, t, BREAK, i, nan, nan, nan, nan, -1, out.deviation[i])
        elif kind == WATCH:                                    # one shot: the program arms it again
            tab.watches[i].armed = False
            log(events, clock, t, WATCH, i, nan, nan, nan, nan, -1, out.quantities[tab.watches[i].quantity])
        elif kind == REGION and tab.constraints[tab.points[i].normal].slide_half > 0.0:
            if _crossing(tab, kin, i, -1)[2] < 0:             # a sliding point's pair no longer the shapes' nearest:
                _open_point(tab, i, active, slip)             # the contact that stands for them there takes over
                #                                               (touching, it closes at its own touchdown)
        elif kind == REGION and tab.constraints[tab.points[i].normal].radius == 0.0 and \
                tab.constraints[tab.points[i].normal].shape == BOX:
            _open_point(tab, i, active, slip)                 # a corner going over its face's edge leaves the face:
            log(events, clock, t, LIFT_OFF, i, nan, nan, nan, 0.0, -1, nan)     # on the edge its normal is not
            _count_switch(ws, i)                              # defined (ṅ ~ v²/φ, φ → 0); edges crossing take over
        elif kind == STICK_EVENT:
            pt = tab.points[i]
            active[pt.stick] = True
            for a in range(3):
                slip[i, a] = 0.0
            log(events, clock, t, STICK_EVENT, i, nan, nan, nan, nan, -1, nan)
            _count_switch(ws, i)


@njit
def _open_point(tab, p, active, slip):
    """Contact point p opens: its normal and stick rows off, its Coulomb force gone."""
    pt = tab.points[p]
    active[pt.normal] = False
    if pt.stick >= 0:
        active[pt.stick] = False
        for a in range(3):
            slip[p, a] = 0.0


@njit
def _count_switch(ws, p):
    ev = ws.events
    ev.switches[p] += 1
    if ev.switches[p] >= MAX_SWITCHES:
        ev.held[p] = True


@njit
def _touch_times(tab, before_normal, active, touched, t):
    """``touched``: the time each point touched down (now, for those that just did), NaN for open ones."""
    for p in range(tab.points.shape[0]):
        i = tab.points[p].normal
        if not active[i]:
            touched[p] = np.nan
        elif not before_normal[p]:
            touched[p] = t


@njit
def resolve(tree, tab, ws, out, t, q, qd, active, slip, touched, n_found, events, clock, ke):
    """Resolve the events found at the state (t, q, q̇) of the full evaluation ``out`` (``ws.events`` holds them,
    ``n_found``): an impact for the touchdowns and limits reached — with every point in contact and bound at its
    limit linked to them — then the other switches. Writes q̇⁺ into ``qd`` and updates ``active``, ``slip``,
    ``touched``; logs the events. Returns the impact's change of kinetic energy (``ke``: the kinetic energy at the
    state). The caller settles the modes after (:func:`settle`)."""
    ev = ws.events
    nan = np.nan
    P = tab.points.shape[0]
    before = np.empty(P, np.bool_)
    for p in range(P):
        before[p] = active[tab.points[p].normal]
    impacting = False
    for e in range(n_found):
        impacting = impacting or ev.kind[e] == TOUCHDOWN or ev.kind[e] == LIMIT
    de = 0.0
    if impacting:
        ents, new = ev.ents, ev.is_new
        n_ent = 0
        for e in range(n_found):                              # the new ones, then those already touching
            if ev.kind[e] == TOUCHDOWN or ev.kind[e] == LIMIT:
                ents[n_ent, 0] = POINT if ev.kind[e] == TOUCHDOWN else BOUND
                ents[n_ent, 1] = ev.index[e]
                new[n_ent] = True
                n_ent += 1
        for p in range(P):
            if active[tab.points[p].normal]:
                ents[n_ent, 0], ents[n_ent, 1], new[n_ent] = POINT, p, False
                n_ent += 1
        for k in range(2 * tab.limits.shape[0]):
            lim = tab.limits[k // 2]
            if active[lim.lower_row if k % 2 == 0 else lim.upper_row]:
                ents[n_ent, 0], ents[n_ent, 1], new[n_ent] = BOUND, k, False
                n_ent += 1
        result = ev.result
        de = impact(tree, tab, ws, q, qd, ke, active, ents, new, n_ent, ev.qd, result)
        for j in range(qd.shape[0]):
            qd[j] = ev.qd[j]
        for e in range(n_ent):
            mode = int(result[e, 5])
            if mode == NOT_IN_IMPACT:
                continue
            i = ents[e, 1]
            pn, vn = result[e, 0], result[e, 4]
            if ents[e, 0] == BOUND:
                lim = tab.limits[i // 2]
                row = lim.lower_row if i % 2 == 0 else lim.upper_row
                was = active[row]
                active[row] = mode != OPEN
                if new[e]:
                    log(events, clock, t, LIMIT if mode != OPEN else LIMIT_BOUNCE, i, pn, nan, vn, nan, mode, nan)
                elif was and mode == OPEN:
                    log(events, clock, t, LIMIT_RELEASE, i, nan, nan, nan, 0.0, mode, nan)
                continue
            pt = tab.points[i]
            was = active[pt.normal]
            active[pt.normal] = mode != OPEN
            if pt.stick >= 0:
                active[pt.stick] = mode == STICK
                ptn = np.sqrt(result[e, 1] ** 2 + result[e, 2] ** 2 + result[e, 3] ** 2)
                for a in range(3):                            # slipping: the direction; μN once settled
                    slip[i, a] = pt.mu * 1e-300 * result[e, 1 + a] / ptn if (mode == SLIP and ptn > 0) else 0.0
            if new[e]:
                ptn = np.sqrt(result[e, 1] ** 2 + result[e, 2] ** 2 + result[e, 3] ** 2)
                log(events, clock, t, BOUNCE if mode == OPEN else TOUCHDOWN, i, pn, ptn, vn, nan, mode, nan)
            elif was and mode == OPEN:
                log(events, clock, t, LIFT_OFF, i, nan, nan, nan, 0.0, mode, nan)
    _switch(tab, ws, out, n_found, active, slip, events, clock, t)
    _take_over(tab, active, slip)
    _touch_times(tab, before, active, touched, t)
    return de


@njit
def _take_over(tab, active, slip):
    """A sliding point in touch takes over from the point at its segment's end that it is within a radius (or
    1e-3 of the half-length) of: a crossing that has just slid in from a capsule's end touches down where its cap
    still touches, and the two, a hair apart on one body, made nearly equal rows (their stick rows' forces grew
    to 1e5 N against each other)."""
    cons, points = tab.constraints, tab.points
    for p in range(points.shape[0]):
        pt = points[p]
        con = cons[pt.normal]
        if con.slide_half <= 0.0 or not active[pt.normal]:
            continue
        u = 0.0
        for a in range(3):
            u += (con.r_a[a] - con.slide_centre[a]) * con.slide_axis[a]
        near = max(pt.radius, 1e-3 * con.slide_half)
        for side in range(2):
            q = pt.ends[side]
            if q < 0 or not active[points[q].normal]:
                continue
            if con.slide_half - (u if side == 1 else -u) < near:
                _open_point(tab, q, active, slip)


@njit
def settle_round(tab, ws, out, t, q, qd, active, slip, touched, events, clock, cap):
    """One round of settling the modes at an event, at the full evaluation ``out`` of the state: refresh the
    slipping points' forces within ``cap`` (:func:`refresh_slip`; True: they changed, evaluate again), else switch
    the lift-offs, slips and releases the modes cause, one release a round (:func:`_one_removal`; True if any).
    False: the modes are consistent."""
    if refresh_slip(tab, ws.kin, out, active, slip, cap):
        return True
    P = tab.points.shape[0]
    n_found = find(tab, ws, out, t, q, qd, active, slip, touched, True)
    if n_found == 0:
        return False
    n_found = _one_removal(ws.events, n_found)
    closed = np.empty(P, np.bool_)
    for p in range(P):
        closed[p] = active[tab.points[p].normal]
    _switch(tab, ws, out, n_found, active, slip, events, clock, t)
    _touch_times(tab, closed, active, touched, t)
    return True


@njit
def _one_removal(ev, n_found):
    """Among the settling events found, the single lift-off or limit release whose force is the most negative
    (newtons and newton-metres compared as they are), if there is one (every other event waits for the next
    round's solve); else all of them. Releasing one unilateral
    row whose force pulls leaves that row moving away from its bound (its acceleration takes the sign of −λ, A
    positive definite), so a released point does not touch down again at once; releasing every pulling row
    together does not have that property — where the rows are coupled (a robot lying on its legs and joint
    limits) the others' forces change with each release, and points released together came back as touchdowns
    an instant later, again and again (Menagerie's Go2 collapsing: more than 64 events in one step)."""
    best, worst = -1, 0.0
    for e in range(n_found):
        if (ev.kind[e] == LIFT_OFF or ev.kind[e] == LIMIT_RELEASE) and (best < 0 or ev.g[e] < worst):
            best, worst = e, ev.g[e]
    if best < 0:
        return n_found
    ev.kind[0], ev.index[0], ev.g[0] = ev.kind[best], ev.index[best], ev.g[best]
    return 1


@njit
def breaks_and_rank(tab, out, t, active, events, clock):
    """The breaks at a call's first state: every active constraint already beyond its deviation bound breaks
    (removed; thesis §2.3.4) — inside the steps :func:`find` isolates them; returns whether one did (the caller
    evaluates again and calls :func:`rank_change`)."""
    cons = tab.constraints
    broke = False
    for c in range(cons.shape[0]):
        if active[c] and out.deviation[c] > cons[c].max_deviation:
            active[c] = False
            log(events, clock, t, BREAK, c, np.nan, np.nan, np.nan, np.nan, -1, out.deviation[c])
            broke = True
    return broke


@njit
def rank_change(out, m, t, events, clock):
    """Log a change of the constraint Jacobian's rank deficiency since the last report (``clock.rank_deficient``)."""
    ck = clock[0]
    sc = out.scalars[0]
    deficient = m > 0 and sc.jacobian_rank < m
    if deficient != ck.rank_deficient:
        log(events, clock, t, RANK_DEFICIENT if deficient else FULL_RANK, sc.jacobian_rank, np.nan, np.nan, np.nan,
            np.nan, m, np.nan)
        ck.rank_deficient = deficient


@njit
def close_touching(tree, tab, ws, out, t, q, qd, active, slip, touched, events, clock):
    """Close the open contact points that touch the state of ``out`` — within :data:`core.contacts.PENETRATION`
    of their plane — as at a touchdown (an impact with their current velocities, so a point that slides starts
    slipping): a block put on the ground rests from t = 0 instead of falling the penetration tolerance first.
    Returns the impact's change of kinetic energy; the caller settles the modes."""
    ev, kin = ws.events, ws.kin
    n = np.empty(3)
    count = 0
    for p in range(tab.points.shape[0]):
        i = tab.points[p].normal
        if active[i]:
            continue
        plane_normal(tab, kin, p, n)
        h = n[0] * (out.point_a[i, 0] - out.point_b[i, 0]) + n[1] * (out.point_a[i, 1] - out.point_b[i, 1]) + \
            n[2] * (out.point_a[i, 2] - out.point_b[i, 2])
        if abs(h) <= PENETRATION:
            count = _add(ev, count, TOUCHDOWN, p, 0.0)
    if count == 0:
        return 0.0
    return resolve(tree, tab, ws, out, t, q, qd, active, slip, touched, count, events, clock,
                   out.scalars[0].energy_kinetic)
