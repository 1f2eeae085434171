"""The integrators of the compiled step, and the batch of steps one call into compiled code takes
(:func:`advance`, called by :func:`core.step` and :meth:`core.Simulation.run`), with the events inside it.

The integrated vector is ``y = [q (nq), q̇ (nv), w]`` with ``w = [work (K + 4), z (nz)]``: the energy audit's
work integrals of every constraint and power source (thesis §2.3.2), then the controllers' state. Its derivative
is ``[G(q) q̇, q̈, power, ż]`` from one :func:`core.forward.evaluate` per stage, so the books close to integration
error and the adaptation is as accurate as the motion. Every stage's configuration has its quaternions
renormalized. The two first-order methods book the work otherwise: at the velocity the step moves with (below).

- ``rk4``: classical fourth order, fixed step.
- ``cash_karp``: the embedded Runge–Kutta 4(5) of Cash and Karp (the thesis's integrator): the fifth-order
  solution, with the step size controlled by the difference from the fourth-order one on q, q̇ and z
  (``err = max |Δ| / (tolerance (1 + |y|))``; a step is accepted when err ≤ 1, then grows by
  min(5, max(1, 0.9 err^−1/5)); a rejected one shrinks by max(0.1, 0.9 err^−1/4)).
- ``semi_implicit_euler``: ``q̇ ← q̇ + h q̈(q, q̇)``, then ``q ← q ⊕ q̇ h``; first order, symplectic for
  unconstrained systems. Each power category's generalized force (a constraint's J_cᵀλ_c, a source's τ_s),
  held over the step, does the work h (J_cᵀλ_c)ᵀq̇₁, h τ_sᵀq̇₁ over the displacement h q̇₁ the step makes, and that
  is what is booked (:func:`_first_order_step`, with :func:`core.forward.powers` at q̇₁): the books of a step then
  close to −½ Δq̇ᵀ M Δq̇ ≤ 0, the method's own numerical dissipation, up to O(h²) terms from M(q) and the
  potentials' curvature.
- ``implicitfast``: the same step with the joint forces' velocity dependence taken implicitly, as MuJoCo's
  ``implicitfast`` takes it: q̈ from (H + h C) q̈ = τ(q, q̇) − b + Jᵀλ with C = −∂τ/∂q̇ of the joint dampers and
  of the actuators' velocity gains (diagonal; :func:`core.forward.evaluate`), so the damping acts at the step's
  end velocity q̇ + h q̈ and a damper stays stable at any c·h/I (RK4 needs ≤ 2.785). The constraints are solved
  with H + h C too, so they hold for that velocity. First order; evaluated afresh at each step's start (its q̈
  depends on h); a state's reported q̈ and forces are its own (h = 0). The work is booked as semi-implicit
  Euler's, the dampers' and actuators' implicit share at q̇₁: their force over the step is τ(q̇₀) − C (q̇₁ − q̇₀).

After each step the projection formulation removes the drift (:func:`core.formulations.project_state`; its
energy change is booked as ``corrections``) and the new state is evaluated in full (its q̈ is the next step's
first stage). Then the events (:mod:`core.witnesses`, Kearney §3): if a witness changed sign over the step, the
step is taken again from its start to trial lengths until the first crossing is bracketed within
``simulation.event_tolerance`` (Kearney's isolation predicate on time; the trials at the root of the cubic
Hermite interpolant of the witnesses' values and rates where both are known, else by regula falsi on their
values, :func:`_isolate`), the events at the bracket's end are
resolved (impacts, modes switched, constraints broken, and the modes settled) and the step goes on from there to
its end. Rank changes are reported at the step's end. A batch stops early on a state that is not finite, on a step
that blows the energy audit's books (:data:`BOOKS_FACTOR`), on more than
:data:`MAX_EVENTS_PER_STEP` event instants inside one step (chatter), when the events' work over the last steps
passes its bound (``event_work``, below: chatter by cost), when its event buffer is full, or — for a
scene with control programs, which answer events in Python — after an event (``stop_on_events``): the step in
progress is then finished by the next call (``clock.t_target``).
"""
from __future__ import annotations

import numpy as np

from .constraints import active_layout
from .energy import energies_kernel
from .forces import forces_kernel
from .formulations import project_state
from .forward import evaluate, kinematics_stage, powers
from .jit import entry, njit
from .kinematics import integrate_kernel, normalize_kernel, qdot_kernel
from .layout import CASH_KARP, IMPLICITFAST, PROJECTION, RK4, SEMI_IMPLICIT_EULER
from .records import audit_error, write_record
from .witnesses import (breaks_and_rank, close_touching, find, mark_eligible, rank_change, refresh_slip, resolve,
                        settle_round, update_tables, witness_rate, witness_value)

__all__ = ["advance", "CLOCK", "RUNNING", "EVENT", "NOT_FINITE", "CHATTER", "BOOKS", "EVENT_COST",
           "MAX_EVENTS_PER_STEP", "BOOKS_FACTOR"]

RUNNING, EVENT, NOT_FINITE, CHATTER, BOOKS, EVENT_COST = 0, 1, 2, 3, 4, 5
#: At most this many event instants inside one step; more is chatter the rest speed did not end.
MAX_EVENTS_PER_STEP = 64
#: Rounds of settling the modes at an event (:func:`_settle_modes`): one lift-off or release a round.
SETTLE_ROUNDS = 32
#: A step is refused as diverged (BOOKS) when it leaves the energy audit's error larger than this fraction of the
#: run's energy scale, max(|E(0)|, the largest |T| + |V_g| + |V_e| of the run's states, the new one included): a
#: finite state that no force of the scene could give. An explicit step too long for a stiff damper makes energy while booking the damper's work
#: as dissipated (error > T), one too long for a stiff spring makes it from nothing (error → E once E ≫ E(0)).
#: The shipped scenes stay below 0.02 (README, "Nothing lost"). Semi-implicit Euler and implicitfast are judged on
#: gains alone: they book a step's work at the velocity it moves with (:func:`_first_order_step`), which leaves the
#: books of each step short by the method's own numerical dissipation ½ Δq̇ᵀ M Δq̇ ≥ 0, up to O(h²) of either sign
#: from M(q) and the potentials' curvature. That loss is no fault: on a damper far beyond the explicit bound, which
#: implicitfast is for, it is most of the kinetic energy of each step (a wheel whose ω₁ = ω₀ / (1 + h c / I) loses
#: ½ I (ω₀² − ω₁²) while its damper works −c h ω₁²), so over a run it can pass the factor while the motion is right.
#: A gain above the factor is energy from no source, as for the other integrators: a spring too stiff for the step
#: (its energy grows geometrically), a contact or constraint force that throws a body. (The loss a run has piled up
#: before delays that judgement by as much: a gain must first make it up.) Under either, the shipped scenes' books
#: stay between −0.28 and +0.013 of their scale over 2 s at their own dt, Menagerie's Go2's between −0.009 and 0.
#: Not judged: a run whose E(0) is not known (NaN: :func:`core.step.advance`).
BOOKS_FACTOR = 0.5

#: The scalars a batch reads and writes (one record). In: ``t``, ``t_end`` (no step goes past it), ``dt`` (the
#: step, or the largest adaptive one), ``step_size`` (the adaptive step to try first; NaN: dt), ``corrections``,
#: ``max_steps``, ``rank_deficient`` (as last reported), ``evaluated`` (``out`` already holds the full
#: evaluation at y), ``iterations`` (the projection's, that produced y), ``t_target`` (the end of a step in
#: progress, NaN if none), ``stop_on_events`` (return after an event: control programs answer it),
#: ``close_touching`` (first close the contacts that touch at the state: :func:`core.witnesses.close_touching`),
#: ``check_events`` (first handle the events at the state itself: breaks, a rank change), ``instants`` (the event
#: instants resolved so far inside the step in progress), ``settle`` (the modes at the state are to be settled
#: first: a batch that stops at an event for the control programs stops before, so that the settling sees the
#: commands they answer with), ``energy_scale`` (the largest |T| + |V_g| + |V_e| the run has been through:
#: :data:`BOOKS_FACTOR`), ``event_work`` (the work the events have cost, in steps: each isolating trial is a step
#: taken again, each event instant counts 1 more and ``answer_work`` more when ``stop_on_events`` (the control
#: programs answer it in Python); it decays by ``event_work_decay`` at every completed step, so it is a running
#: sum over the last 1 / (1 − decay) steps, and passing ``event_work_limit`` stops the batch as EVENT_COST).
#: Out: the same after the last good step, ``steps`` completed, ``status`` (RUNNING: the batch ended normally,
#: EVENT: it stopped after an event, NOT_FINITE: the next step diverged (``out`` is then not valid), CHATTER,
#: BOOKS: the next step blew the energy audit's books, :data:`BOOKS_FACTOR`; ``out`` is then not valid either;
#: EVENT_COST: the events' work passed ``event_work_limit``, the state at the event instant that passed it),
#: ``n_events`` written into the event buffer (``overflow``: it filled up). Records (:mod:`core.records`)
#: go into the rows of ``trace``: the state it starts from when ``record_first``, then every ``record_every``-th
#: step (``since`` counts the steps since the last record, across calls) and the step that reaches ``t_end``;
#: ``recorded`` rows are written (E(0) of the energy audit: ``energy0``); a full ``trace`` ends the batch.
CLOCK = np.dtype([
    ("t", np.float64), ("t_end", np.float64), ("dt", np.float64), ("step_size", np.float64),
    ("corrections", np.float64), ("max_steps", np.int64), ("steps", np.int64), ("status", np.int64),
    ("iterations", np.int64), ("rank_deficient", np.bool_), ("evaluated", np.bool_),
    ("energy0", np.float64), ("record_every", np.int64), ("since", np.int64), ("recorded", np.int64),
    ("record_first", np.bool_), ("t_target", np.float64), ("n_events", np.int64), ("overflow", np.bool_),
    ("stop_on_events", np.bool_), ("close_touching", np.bool_), ("check_events", np.bool_), ("instants", np.int64),
    ("settle", np.bool_), ("energy_scale", np.float64), ("event_work", np.float64), ("event_work_limit", np.float64),
    ("event_work_decay", np.float64), ("answer_work", np.float64),
], align=True)

# Butcher tableaux: nodes c, the lower-triangular A (rows by stage) and the weights of each solution.
_RK4_C = np.array([0.0, 0.5, 0.5, 1.0])
_RK4_A = np.array([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]])
_RK4_B = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0
_CK_C = np.array([0.0, 1 / 5, 3 / 10, 3 / 5, 1.0, 7 / 8])
_CK_A = np.array([[0.0, 0.0, 0.0, 0.0, 0.0], [1 / 5, 0.0, 0.0, 0.0, 0.0], [3 / 40, 9 / 40, 0.0, 0.0, 0.0],
                  [3 / 10, -9 / 10, 6 / 5, 0.0, 0.0], [-11 / 54, 5 / 2, -70 / 27, 35 / 27, 0.0],
                  [1631 / 55296, 175 / 512, 575 / 13824, 44275 / 110592, 253 / 4096]])
_CK_B5 = np.array([37 / 378, 0.0, 250 / 621, 125 / 594, 0.0, 512 / 1771])
_CK_B4 = np.array([2825 / 27648, 0.0, 18575 / 48384, 13525 / 55296, 277 / 14336, 1 / 4])


@njit
def _derivative(tree, y, nq, nv, ev, kq, kv, kw):
    """One stage's derivative: kq = G(q) q̇, kv = q̈, kw = [power, ż] from the evaluation ``ev`` at y."""
    qdot_kernel(tree.joint_type, tree.q_start, tree.v_start, y[:nq], y[nq:nq + nv], kq)
    kv[:] = ev.qdd
    nw = kw.shape[0]
    npow = ev.power.shape[0]
    kw[:npow] = ev.power
    kw[npow:nw] = ev.z_rate


@njit
def _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, C, A, B1, B2, k, y1, y2, m, n_groups, scale, fresh,
                 partial):
    """The stages of an explicit Runge–Kutta tableau (C, A) from y over h: k[0] from ``out`` (the evaluation at
    y) when ``fresh`` (else k[0] is kept from the last step from y), then one evaluation per further stage (into
    ``stage``); y1 ← y + h Σ B1 k and y2 ← y + h Σ B2 k. Returns False if a stage does not evaluate to finite
    numbers. (``fresh`` and ``partial`` are run-time bools: a literal would compile a second evaluation.)"""
    n = y.shape[0]
    z0 = n - out.z_rate.shape[0]
    for i in range(C.shape[0]):
        ki = k[i]
        if i == 0:
            if fresh:
                _derivative(tree, y, nq, nv, out, ki[:nq], ki[nq:nq + nv], ki[nq + nv:])
            continue
        ys = y1                                               # the stage's state, in y1 until the end
        for j in range(n):
            s = y[j]
            for l in range(i):
                s += h * A[i, l] * k[l, j]
            ys[j] = s
        normalize_kernel(tree.quat_starts, ys[:nq])
        if not evaluate(tree, tab, ws, t + C[i] * h, ys[:nq], ys[nq:nq + nv], ys[z0:], m, n_groups, scale, partial,
                        stage):
            return False
        _derivative(tree, ys, nq, nv, stage, ki[:nq], ki[nq:nq + nv], ki[nq + nv:])
    for j in range(n):
        s1 = y[j]
        s2 = y[j]
        for i in range(C.shape[0]):
            s1 += h * B1[i] * k[i, j]
            s2 += h * B2[i] * k[i, j]
        y1[j] = s1
        y2[j] = s2
    normalize_kernel(tree.quat_starts, y1[:nq])
    normalize_kernel(tree.quat_starts, y2[:nq])
    return True


@njit
def _total_energy(tree, tab, ws, t, q, qd):
    """Kinetic + gravitational + elastic energy at (t, q, q̇): what the energy audit balances."""
    kin = ws.kin
    kinematics_stage(tree, kin, q, qd, True)
    ke, pe = energies_kernel(tree.inertia, tree.armature, tree.gravity, kin.R_WL, kin.p_WL, kin.v, qd)
    nv = qd.shape[0]
    elastic = forces_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, kin.v, q, qd, t,
                            tab.forces, np.zeros(nv), np.zeros((4, nv)), ws.rows.P3, ws.programs.extra, False,
                            ws.integrator.damping[:, :0])
    return ke + pe + elastic


@njit
def _finite(y):
    for j in range(y.shape[0]):
        if not np.isfinite(y[j]):
            return False
    return True


@njit(inline="always")
def _layout(tab, tree, rows, active):
    """The active constraints' rows and groups (:func:`core.constraints.active_layout`) and the largest Jacobian
    scale among them: ``(m, n_groups, scale)``."""
    cons = tab.constraints
    m, n_groups = active_layout(cons, tab.variables, tree.root, active, rows.row_of, rows.group_of, rows.uf)
    scale = 0.0
    for c in range(cons.shape[0]):
        if active[c]:
            scale = max(scale, cons[c].jacobian_scale)
    return m, n_groups, scale


@njit(inline="always")
def _first_order_step(tree, tab, ws, stage, out, st, t, y, h, y1, nq, nv, m, n_groups, scale, fresh, partial):
    """Semi-implicit Euler or implicitfast from (t, y) over h into y1 (module docstring): q̇₁ = q̇₀ + h q̈,
    q₁ = q₀ ⊕ h q̇₁, z₁ = z₀ + h ż, and each power category's work booked at the velocity the step moves with:
    w₁ = w₀ + h P(q̇₁), P the powers (:func:`core.forward.powers`) of the forces at the step's start held over it
    (each constraint's J_cᵀλ_c, each source's τ_s); implicitfast's implicitly taken damping acts at q̇₁, so its
    sources' forces are τ_s − C_s (q̇₁ − q̇₀) = τ_s − h C_s q̈. Semi-implicit Euler takes q̈ and those forces from
    the evaluation at y in ``out`` (and its rows, the last evaluated, in ``ws.rows``) when ``fresh``, else keeps
    them (``k[0]``; the integrator work's ``J``, ``multipliers``, ``sources``) from the last step from y;
    implicitfast evaluates them for this h. False if that is not finite.

    Why q̇₁: the step moves q by h q̇₁, and M Δq̇ = h (τ − b + Jᵀλ) (implicitfast: τ − h C q̈), so
    ΔT = q̇₁ᵀ M Δq̇ − ½ Δq̇ᵀ M Δq̇ + ½ q̇₁ᵀ ΔM q̇₁ = h q̇₁ᵀ(Σ τ_s + Jᵀλ) + h q̇₁ᵀ(τ_el − g) − ½ Δq̇ᵀ M Δq̇ + O(h²),
    where −h q̇₁ᵀ(τ_el − g) is ΔV to O(h²) (the potentials' curvature: ½ h² q̇₁ᵀ ∇²V q̇₁) and ½ q̇₁ᵀ ΔM q̇₁
    cancels h q̇₁ᵀ C(q, q̇₀) q̇₀ of b to O(h²) (Ṁ − 2C skew). With the work booked as h P(q̇₁) the books of a step
    close to E₁ − E₀ − ΔW = −½ Δq̇ᵀ M Δq̇ + O(h²) from M(q) and the potentials: the method's own numerical
    dissipation, exactly that where M is constant and the potentials are at most linear along the step (a
    falling body, a damped wheel). Booked at q̇₀ instead, the books would miss h (τ_s + Jᵀλ)ᵀ(q̇₁ − q̇₀), which
    for a damper beyond the explicit bound is of the size of the kinetic energy itself."""
    iw = ws.integrator
    k, J, lam, sources = iw.k, iw.J, iw.multipliers, iw.sources
    n = y.shape[0]
    npow = out.power.shape[0]
    w0 = nq + nv                                              # where the work integrals start in y
    implicit = st.integrator == IMPLICITFAST
    if implicit:                                              # q̈ from (H + h C) q̈ = τ − b + Jᵀλ at (q, q̇): its
        st.implicit_step = h                                  # own evaluation, for this h
        ok = evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[w0 + npow:], m, n_groups, scale, partial, stage)
        st.implicit_step = 0.0
        if not ok:
            return False
    if implicit or fresh:                                     # the first stage and the forces of the step's start
        ev = stage if implicit else out
        _derivative(tree, y, nq, nv, ev, k[0, :nq], k[0, nq:nq + nv], k[0, nq + nv:])
        J[:m] = ws.rows.J[:m]
        lam[:m] = ev.multipliers[:m]
        sources[:] = ev.tau_sources
        if implicit:
            C = iw.damping                                    # (as the step took it: core.forward.evaluate)
            for s in range(C.shape[0]):
                for j in range(nv):
                    sources[s, j] -= h * C[s, j] * k[0, nq + j]
    for j in range(nq, nq + nv):                              # q̇₁ = q̇₀ + h q̈
        y1[j] = y[j] + h * k[0, j]
    for j in range(w0 + npow, n):                             # z₁ = z₀ + h ż
        y1[j] = y[j] + h * k[0, j]
    work = y1[w0:w0 + npow]
    powers(tab.constraints, ws.rows.row_of, J, lam, sources, y1[nq:nq + nv], work, ws.solve.span, False)   # P(q̇₁),
    for j in range(npow):                                                         # then w₁ = w₀ + h P(q̇₁)
        work[j] = y[w0 + j] + h * work[j]
    integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, y[:nq], y1[nq:nq + nv], h, y1[:nq])
    normalize_kernel(tree.quat_starts, y1[:nq])               # q₁ = q₀ ⊕ h q̇₁
    return True


@njit(inline="always")
def _take_step(tree, tab, ws, stage, out, st, t, y, h, y1, nq, nv, m, n_groups, scale, fresh, partial):
    """One step of h from (t, y) by the scene's integrator, without error control (Cash–Karp: its fifth-order
    solution), into y1; its first stage from the full evaluation at y in ``out`` when ``fresh``, else kept in
    ``k[0]`` from the last step from y. False if a stage is not finite."""
    iw = ws.integrator
    k, y2 = iw.k, iw.y2
    if st.integrator == RK4:
        return _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, _RK4_C, _RK4_A, _RK4_B, _RK4_B, k, y1, y2,
                            m, n_groups, scale, fresh, partial)
    if st.integrator == CASH_KARP:
        return _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, _CK_C, _CK_A, _CK_B5, _CK_B4, k, y1, y2,
                            m, n_groups, scale, fresh, partial)
    return _first_order_step(tree, tab, ws, stage, out, st, t, y, h, y1, nq, nv, m, n_groups, scale, fresh, partial)


@njit(inline="always")
def _adaptive_step(tree, tab, ws, stage, out, st, t, y, h, limit, y1, nq, nv, z0, m, n_groups, scale, partial):
    """Cash–Karp with error control on q, q̇ and z from (t, y): tries h (at most ``limit``), shrinks until the
    step is accepted; the fifth-order solution goes into y1. Returns ``(h taken, next h to try)``."""
    iw = ws.integrator
    y2 = iw.y2
    n = y.shape[0]
    h = min(h, limit)
    while True:
        ok = _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, _CK_C, _CK_A, _CK_B5, _CK_B4, iw.k, y1, y2,
                          m, n_groups, scale, iw.flags[1], partial)
        err = 0.0
        if ok:
            for j in range(n):
                if nq + nv <= j < z0:
                    continue                                  # (not on the work integrals)
                e = abs(y1[j] - y2[j]) / (st.tolerance * (1.0 + abs(y1[j])))
                err = max(err, e) if np.isfinite(e) else np.inf
        else:
            err = np.inf
        if err <= 1.0 or h < 1e-12:
            grow = 5.0 if err == 0.0 else min(5.0, max(1.0, 0.9 * err ** -0.2))
            return h, h * grow
        h *= 0.1 if not np.isfinite(err) else max(0.1, 0.9 * err ** -0.25)


@njit(inline="always")
def _settle_step(tree, tab, ws, st, t, y1, active, nq, nv, z0, m, n_groups, scale, full, out):
    """After a step to (t, y1): the projection formulation's drift removal, then the full evaluation at y1.
    Returns ``(ok, energy the projection changed, its iterations)``."""
    q1, qd1 = y1[:nq], y1[nq:nq + nv]
    iterations = 0
    correction = 0.0
    if st.formulation == PROJECTION and m > 0:               # Aghili's drift removal, its energy booked
        before = _total_energy(tree, tab, ws, t, q1, qd1)
        iterations = project_state(tree, tab, ws, t, q1, qd1, active, scale)
        active_layout(tab.constraints, tab.variables, tree.root, active, ws.rows.row_of, ws.rows.group_of,
                      ws.rows.uf)
        if _finite(y1):
            correction = _total_energy(tree, tab, ws, t, q1, qd1) - before
    if not _finite(y1):
        return False, 0.0, iterations
    return evaluate(tree, tab, ws, t, q1, qd1, y1[z0:], m, n_groups, scale, full, out), correction, iterations


@njit
def _energy_size(out):
    """|T| + |V_g| + |V_e| of the state evaluated in ``out``."""
    sc = out.scalars[0]
    return abs(sc.energy_kinetic) + abs(sc.energy_gravity) + abs(sc.energy_elastic)


@njit
def _books_blown(out, y, nq, nv, K, corrections, energy0, energy_scale, gains_only):
    """Whether the state of ``y`` (evaluated in ``out``) leaves the energy audit's error beyond
    :data:`BOOKS_FACTOR` times the run's energy scale (``energy_scale`` so far, |E(0)|, and its own): in either
    direction, or with ``gains_only`` (a first-order integrator) only as energy gained."""
    size = max(abs(energy0), energy_scale, _energy_size(out))
    error = audit_error(out, y, nq, nv, K, corrections, energy0)
    return (error if gains_only else abs(error)) > BOOKS_FACTOR * size + 1e-12


@njit(inline="always")
def _settle_modes(tree, tab, ws, t, y, active, slip, touched, events, clock, nq, nv, z0, full, out):
    """At an event's state: until the modes are consistent (at most :data:`SETTLE_ROUNDS` rounds), write the
    contact tables, evaluate, refresh the slipping points' forces and switch the lift-offs, slips and releases the
    modes cause (one release a round: :func:`core.witnesses.settle_round`). Leaves the full evaluation at y in
    ``out``; returns ``(ok, m, n_groups, scale)``."""
    rows = ws.rows
    m, n_groups, scale = _layout(tab, tree, rows, active)
    cap = np.full(tab.points.shape[0], np.inf)               # the slipping forces' bounds in this settle
    for _ in range(SETTLE_ROUNDS):
        update_tables(tab, ws.kin, active, slip, 0.0)
        if not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out):
            return False, m, n_groups, scale
        if not settle_round(tab, ws, out, t, y[:nq], y[nq:nq + nv], active, slip, touched, events, clock, cap):
            return True, m, n_groups, scale
        m, n_groups, scale = _layout(tab, tree, rows, active)
    update_tables(tab, ws.kin, active, slip, 0.0)
    ok = evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out)
    return ok, m, n_groups, scale


@njit(inline="always")
def _boundary_events(tree, tab, ws, t, y, active, events, clock, nq, nv, z0, m, n_groups, scale, full, out):
    """The events at a call's first state: the breaks of constraints already beyond their bound there (a state
    made by hand, a bound lowered or a constraint enabled since; then the state is evaluated again) and a rank
    change not yet reported. Inside the steps :func:`core.witnesses.find` isolates the breaks, and a step's end
    reports the rank alone. Returns ``(ok, m, n_groups, scale)``."""
    ok = True
    if breaks_and_rank(tab, out, t, active, events, clock):
        m, n_groups, scale = _layout(tab, tree, ws.rows, active)
        ok = evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out)
    rank_change(out, m, t, events, clock)
    return ok, m, n_groups, scale


@njit
def _rebracket(tab, ws, out, y_qd, n_found, nb, halve):
    """The events just found (``ev.kind``, ``index``, ``g``: n_found) become the isolation bracket's witnesses at
    its late end, with their rates there (:func:`core.witnesses.witness_rate`); the early values and rates of those
    already in it are kept (the values halved, and the rates then dropped, when ``halve``: Illinois), the others'
    are not known (NaN). Returns how many."""
    ev = ws.events
    early = np.full((n_found, 2), np.nan)
    for j in range(n_found):
        for b in range(nb):
            if ev.bracket_id[b, 0] == ev.kind[j] and ev.bracket_id[b, 1] == ev.index[j]:
                early[j, 0] = ev.bracket_g[b, 0] * (0.5 if halve else 1.0)
                early[j, 1] = np.nan if halve else ev.bracket_g[b, 2]
                break
    for j in range(n_found):
        ev.bracket_id[j, 0] = ev.kind[j]
        ev.bracket_id[j, 1] = ev.index[j]
        ev.bracket_g[j, 0] = early[j, 0]
        ev.bracket_g[j, 1] = ev.g[j]
        ev.bracket_g[j, 2] = early[j, 1]
        ev.bracket_g[j, 3] = witness_rate(tab, ws, out, y_qd, ev.kind[j], ev.index[j])
    return n_found


@njit
def _early_values(tab, ws, out, y_q, y_qd, slip, nb):
    """The bracket's witnesses and their rates at its early end, the state of the last full evaluation ``out``."""
    ev = ws.events
    for b in range(nb):
        kind, index = ev.bracket_id[b, 0], ev.bracket_id[b, 1]
        ev.bracket_g[b, 0] = witness_value(tab, ws, out, y_q, slip, kind, index)
        ev.bracket_g[b, 2] = witness_rate(tab, ws, out, y_qd, kind, index)


@njit
def _hermite(a, c, m0, m1, s):
    """The cubic Hermite interpolant at s ∈ [0, 1] of values a, c and slopes m0, m1 (per unit s) at 0 and 1."""
    s2 = s * s
    s3 = s2 * s
    return (2.0 * s3 - 3.0 * s2 + 1.0) * a + (s3 - 2.0 * s2 + s) * m0 + (3.0 * s2 - 2.0 * s3) * c + (s3 - s2) * m1


@njit
def _hermite_root(a, c, m0, m1):
    """The first s in (0, 1] where the cubic Hermite interpolant of a witness (values a > 0 ≥ c, slopes m0, m1 per
    unit s) reaches zero: the first of 16 subintervals where it changes sign, then bisection to 1e-14."""
    s0 = 0.0
    for k in range(1, 17):
        s1 = k / 16.0
        if _hermite(a, c, m0, m1, s1) <= 0.0:
            while s1 - s0 > 1e-14:
                mid = 0.5 * (s0 + s1)
                if _hermite(a, c, m0, m1, mid) > 0.0:
                    s0 = mid
                else:
                    s1 = mid
            return s1
        s0 = s1
    return 1.0


@njit
def _first_crossing(gb, nb, lo, hi):
    """The earliest crossing of the bracket's witnesses: where their values and rates at both ends are known (a
    touchdown, a joint limit, a watch: ``gb`` columns early value, late value, early rate, late rate), the root
    of the cubic Hermite interpolant of each — exact for a free flight's quadratic gap, so that its first trial
    lands on the crossing (:func:`_crossed_within` then ends the isolation) where regula falsi took four — else
    the chord through the values (regula falsi); NaN unless every early value is known and positive and every
    late one is not."""
    t = np.inf
    L = hi - lo
    for b in range(nb):
        a, c = gb[b, 0], gb[b, 1]
        if not (a > 0.0 and c <= 0.0):
            return np.nan
        if np.isfinite(gb[b, 2]) and np.isfinite(gb[b, 3]):
            t = min(t, lo + L * _hermite_root(a, c, gb[b, 2] * L, gb[b, 3] * L))
        else:
            t = min(t, lo + L * a / (a - c))
    return t


@njit
def _crossed_within(bracket_g, nb, tol):
    """Whether every witness found at the bracket's late end crossed zero less than ``tol`` before it by its
    value and rate there (g ≤ 0 moving down, −g ≤ −ġ tol: the time since its crossing, g/ġ, to first order; its
    error (g/ġ)² g̈/(2ġ) is far below tol at any tolerance a step isolates to). Then the late end is within tol
    of the first crossing without a trial before it: the Hermite root of a touchdown lands on the crossing (a free
    flight's gap is quadratic, the interpolant exact), and that one trial closes the isolation."""
    for b in range(nb):
        g, rate = bracket_g[b, 1], bracket_g[b, 3]
        if not (g <= 0.0 and rate < 0.0 and -g <= -rate * tol):
            return False
    return nb > 0


@njit
def _isolate(tree, tab, ws, stage, out, st, clock, t, h, y1, active, slip, touched, nq, nv, z0, m, n_groups, scale,
             partial, full, n_found, correction, iterations):
    """The first crossing inside the step of h from (t, ``ws.events.y0``), whose end y1 found ``n_found`` events,
    bracketed within ``st.event_tolerance`` (Kearney's isolation predicate on time): the step is taken again from
    its start to trial lengths, the bracket's early end a state with no event, its late end one with. The trial
    length is the earliest crossing of the witnesses found at the late end (:func:`_first_crossing`: the root of
    their cubic Hermite interpolant where their rates are known at both ends, else the Illinois regula falsi's
    chord through their values, the end kept twice running halved), kept ``event_tolerance``/2 inside the
    bracket so that a converged estimate closes it from both sides, and the bracket's midpoint when a witness's
    early value is not known or two trials have not halved the bracket. A late end at which every witness found
    crossed less than the tolerance before it, by its value and rate (:func:`_crossed_within`), ends the
    isolation there. Returns ``(hi, at_hi, correction,
    iterations)``: the late end's length, whether ``out`` holds its evaluation, and its projection's figures; its
    state is in ``ws.events.y_hi``."""
    ev = ws.events
    y0, y_hi = ev.y0, ev.y_hi
    tol = st.event_tolerance
    lo, hi, at_hi = 0.0, h, True
    y_hi[:] = y1
    nb = _rebracket(tab, ws, out, y1[nq:nq + nv], n_found, 0, False)
    if hi - lo > tol:                                         # the witnesses at the step's start (one evaluation)
        at_hi = False
        if evaluate(tree, tab, ws, t, y0[:nq], y0[nq:nq + nv], y0[z0:], m, n_groups, scale, full, out):
            _early_values(tab, ws, out, y0[:nq], y0[nq:nq + nv], slip, nb)
    side = 0                                                  # the end the last trial moved: −1 early, +1 late
    w1 = w2 = np.inf                                          # the bracket's width before the last two trials
    while hi - lo > tol:
        width = hi - lo
        trial = _first_crossing(ev.bracket_g, nb, lo, hi)
        if not np.isfinite(trial) or width > 0.5 * w2:
            trial = 0.5 * (lo + hi)
        trial = min(max(trial, lo + 0.5 * tol), hi - 0.5 * tol)
        w2, w1 = w1, width
        clock[0].event_work += 1.0                            # (a step taken again)
        if not _take_step(tree, tab, ws, stage, out, st, t, y0, trial, y1, nq, nv, m, n_groups, scale, partial,
                          partial):
            break
        ok, c_trial, it_trial = _settle_step(tree, tab, ws, st, t + trial, y1, active, nq, nv, z0, m, n_groups,
                                             scale, full, out)
        if not ok:
            break
        n_found = find(tab, ws, out, t + trial, y1[:nq], y1[nq:nq + nv], active, slip, touched, False)
        if n_found > 0:
            hi, at_hi = trial, True
            y_hi[:] = y1
            correction, iterations = c_trial, it_trial
            nb = _rebracket(tab, ws, out, y1[nq:nq + nv], n_found, nb, side == 1)
            side = 1
            if _crossed_within(ev.bracket_g, nb, tol):
                break                                         # every witness crossed within tol before hi
        else:
            lo, at_hi = trial, False
            _early_values(tab, ws, out, y1[:nq], y1[nq:nq + nv], slip, nb)
            if side == -1:
                for b in range(nb):
                    ev.bracket_g[b, 1] *= 0.5
                    ev.bracket_g[b, 3] = np.nan
            side = -1
    return hi, at_hi, correction, iterations


@entry
def advance(tree, tab, ws, stage, y, active, slip, touched, clock, out, trace, events):
    """Up to ``clock.max_steps`` steps from (clock.t, y) with the constraints flagged in ``active``, the contact
    points' Coulomb forces ``slip`` (P x 3) and touchdown times ``touched`` (module docstring), in the scratch
    ``ws`` (:func:`core.forward.workspace`) with the stages evaluated into ``stage``; y, ``active``, ``slip``,
    ``touched``, the clock and ``out`` (the full evaluation at the final y) are updated in place; records go into
    ``trace`` and events into ``events`` (:data:`CLOCK`, :data:`core.events.EVENT`)."""
    st = tab.settings[0]
    ck = clock[0]
    nv = out.qdd.shape[0]
    nz, npow = out.z_rate.shape[0], out.power.shape[0]
    nq = y.shape[0] - nv - npow - nz
    z0 = nq + nv + npow                                        # where z starts in y
    ev = ws.events
    y0, y_hi = ev.y0, ev.y_hi
    iw = ws.integrator
    partial, full = iw.flags[0], iw.flags[1]                   # run-time bools: one compiled evaluation
    y1 = iw.y1
    m, n_groups, scale = _layout(tab, tree, ws.rows, active)
    t = ck.t
    ck.steps = 0
    ck.status = RUNNING
    ck.recorded = 0
    ck.n_events = 0
    ck.overflow = False
    capacity = trace.shape[0]
    if not ck.evaluated:
        if not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out):
            ck.status = NOT_FINITE
            return
        if update_tables(tab, ws.kin, active, slip, 0.0):      # (the tables of the state itself)
            if not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out):
                ck.status = NOT_FINITE
                return
        ck.evaluated = True
    if ck.close_touching:                                     # contacts that touch at the start close at once
        ck.close_touching = False
        ck.corrections += close_touching(tree, tab, ws, out, t, y[:nq], y[nq:nq + nv], active, slip, touched,
                                         events, clock)
        ok, m, n_groups, scale = _settle_modes(tree, tab, ws, t, y, active, slip, touched, events, clock, nq, nv,
                                               z0, full, out)
        if not ok:
            ck.status = NOT_FINITE
            ck.evaluated = False
            return
    if ck.settle:                                             # an event's modes, settled with the programs' answer
        ck.settle = False
        ok, m, n_groups, scale = _settle_modes(tree, tab, ws, t, y, active, slip, touched, events, clock, nq, nv,
                                               z0, full, out)
        if not ok:
            ck.status = NOT_FINITE
            ck.evaluated = False
            return
        if ck.stop_on_events and ck.n_events > 0:
            ck.status = EVENT
            return
    if ck.check_events and np.isnan(ck.t_target):             # events at the state itself
        ok, m, n_groups, scale = _boundary_events(tree, tab, ws, t, y, active, events, clock, nq, nv, z0, m,
                                                  n_groups, scale, full, out)
        if not ok:
            ck.status = NOT_FINITE
            ck.evaluated = False
            return
    if ck.record_first and capacity > 0:
        write_record(out, tab.controllers, t, y, nq, nv, ck.corrections, ck.iterations, ck.energy0, active,
                     trace[0])
        ck.recorded = 1
    ck.energy_scale = max(ck.energy_scale, _energy_size(out))  # (the state's own: out holds its evaluation)
    eps = 1e-12 * max(1.0, abs(ck.t_end))
    h_try = ck.step_size if ck.step_size > 0.0 else ck.dt
    no_cap = np.empty(0)                                      # (a step's end refreshes the slipping forces unbounded)
    while ck.steps < ck.max_steps:
        if np.isnan(ck.t_target):                             # a new step
            if t >= ck.t_end - eps or (capacity > 0 and ck.recorded == capacity):
                break
            ck.t_target = t + min(ck.dt, ck.t_end - t)
            ev.switches[:] = 0
            ev.held[:] = False
            ck.instants = 0
        target = ck.t_target
        if t < target - 1e-12 * max(1.0, abs(target)):       # (what remains of) the step from (t, y)
            # the contact tables with the point that touches halfway, the points that may stick, then the step
            # (its first stage from the tables' evaluation: a stage's, the diagnostics are the state's full one's)
            if update_tables(tab, ws.kin, active, slip, 0.5 * (target - t)):
                if not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, partial, out):
                    ck.status = NOT_FINITE
                    ck.evaluated = False
                    break
            mark_eligible(tab, ws, out, active, slip)
            y0[:] = y
            if st.integrator == CASH_KARP:
                h, h_next = _adaptive_step(tree, tab, ws, stage, out, st, t, y, h_try, target - t, y1, nq, nv, z0,
                                           m, n_groups, scale, partial)
                h_try = min(h_next, ck.dt)
                ck.step_size = h_try
                if t + h < target:
                    target = t + h                            # (Cash–Karp: an accepted step is a step)
                    ck.t_target = target
            else:
                h = target - t
                if not _take_step(tree, tab, ws, stage, out, st, t, y, h, y1, nq, nv, m, n_groups, scale, full,
                                  partial):
                    ck.status = NOT_FINITE
                    break
            ok, correction, iterations = _settle_step(tree, tab, ws, st, t + h, y1, active, nq, nv, z0, m,
                                                      n_groups, scale, full, out)
            if not ok:
                ck.status = NOT_FINITE                        # a finite state whose evaluation overflows
                ck.evaluated = False
                break
            n_found = find(tab, ws, out, t + h, y1[:nq], y1[nq:nq + nv], active, slip, touched, False)
            if n_found > 0:                                   # an event inside the step: isolate its first crossing
                hi, at_hi, correction, iterations = _isolate(tree, tab, ws, stage, out, st, clock, t, h, y1, active,
                                                             slip, touched, nq, nv, z0, m, n_groups, scale,
                                                             partial, full, n_found, correction, iterations)
                y[:] = y_hi
                t = t + hi
                ck.corrections += correction                  # (the projection's, of the step to the bracket)
                ck.iterations = iterations
                if not at_hi and not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale,
                                              full, out):
                    ck.status = NOT_FINITE
                    ck.evaluated = False
                    break
                found = find(tab, ws, out, t, y[:nq], y[nq:nq + nv], active, slip, touched, False)
                ck.corrections += resolve(tree, tab, ws, out, t, y[:nq], y[nq:nq + nv], active, slip, touched,
                                          found, events, clock, out.scalars[0].energy_kinetic)
                ck.instants += 1
                if ck.instants > MAX_EVENTS_PER_STEP:
                    ck.status = CHATTER
                    break
                ck.event_work += 1.0 + (ck.answer_work if ck.stop_on_events else 0.0)
                if ck.event_work > ck.event_work_limit:
                    ck.status = EVENT_COST
                    break
                if ck.stop_on_events:                         # the programs answer before the modes settle
                    m, n_groups, scale = _layout(tab, tree, ws.rows, active)
                    update_tables(tab, ws.kin, active, slip, 0.0)
                    if not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out):
                        ck.status = NOT_FINITE
                        ck.evaluated = False
                        break
                    ck.settle = True
                    ck.status = EVENT
                    break
                ok, m, n_groups, scale = _settle_modes(tree, tab, ws, t, y, active, slip, touched, events, clock,
                                                       nq, nv, z0, full, out)
                if not ok:
                    ck.status = NOT_FINITE
                    ck.evaluated = False
                    break
                if ck.overflow:
                    ck.status = EVENT
                    break
                continue
            # the books judged where a step is taken: a step with an event inside is taken again to the event, its
            # unresolved end (a contact crossed, a lift-off not made) is never a state of the run
            first_order = st.integrator == SEMI_IMPLICIT_EULER or st.integrator == IMPLICITFAST
            if _books_blown(out, y1, nq, nv, active.shape[0], ck.corrections + correction, ck.energy0,
                            ck.energy_scale, first_order):
                ck.status = BOOKS
                ck.evaluated = False
                break
            y[:] = y1                                         # no event: the step is taken
            t = target
            ck.corrections += correction
            ck.iterations = iterations
        ck.t_target = np.nan                                  # the step is complete
        ck.steps += 1
        ck.event_work *= ck.event_work_decay
        ck.energy_scale = max(ck.energy_scale, _energy_size(out))
        ck.since += 1
        changed = refresh_slip(tab, ws.kin, out, active, slip, no_cap)
        if update_tables(tab, ws.kin, active, slip, 0.0) or changed:
            iw.flags[2] = True            # (the same state and active set: the open constraints' rows in out stand,
            ok = evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out)
            iw.flags[2] = False           # only the tables of the closed ones changed)
            if not ok:
                ck.status = NOT_FINITE
                ck.evaluated = False
                break
        rank_change(out, m, t, events, clock)                 # (its breaks were isolated inside it: find)
        if capacity > 0 and (ck.since >= ck.record_every or t >= ck.t_end - eps):
            write_record(out, tab.controllers, t, y, nq, nv, ck.corrections, ck.iterations, ck.energy0, active,
                         trace[ck.recorded])
            ck.recorded += 1
            ck.since = 0
        if ck.overflow or (ck.stop_on_events and ck.n_events > 0):
            ck.status = EVENT
            break
    ck.t = t
