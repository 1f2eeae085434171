"""The integrators of the compiled step, and the batch of steps one call into compiled code takes
(:func:`advance`, called by :func:`core.step` and :meth:`core.Simulation.run`).

The integrated vector is ``y = [q (nq), q̇ (nv), w]`` with ``w = [work (K + 4), z (nz)]``: the energy audit's
work integrals of every constraint and power source (thesis §2.3.2), then the controllers' state. Its derivative
is ``[G(q) q̇, q̈, power, ż]`` from one :func:`core.forward.evaluate` per stage, so the books close to integration
error and the adaptation is as accurate as the motion. Every stage's configuration has its quaternions
renormalized.

- ``rk4``: classical fourth order, fixed step.
- ``cash_karp``: the embedded Runge–Kutta 4(5) of Cash and Karp (the thesis's integrator): the fifth-order
  solution, with the step size controlled by the difference from the fourth-order one on q, q̇ and z
  (``err = max |Δ| / (tolerance (1 + |y|))``; a step is accepted when err ≤ 1, then grows by
  min(5, max(1, 0.9 err^−1/5)); a rejected one shrinks by max(0.1, 0.9 err^−1/4)).
- ``semi_implicit_euler``: ``q̇ ← q̇ + h q̈(q, q̇)``, then ``q ← q ⊕ q̇ h``; first order, symplectic for
  unconstrained systems.

After each step: the projection formulation removes the drift (:func:`core.formulations.project_state`; its
energy change is booked as ``corrections``), the new state is evaluated in full (its q̈ is the next step's first
stage), and the batch stops early at a step that ends with an *event* — an active constraint beyond its
deviation bound, or a change of the constraint Jacobian's rank deficiency — or with a state or evaluation that
is not finite. (Events are handled at the step boundary by :func:`core.step`; Kearney's events with isolation of
their time inside a step belong here too.)
"""
from __future__ import annotations

import numpy as np

from .constraints import active_layout
from .energy import energies_kernel
from .forces import forces_kernel
from .formulations import project_state
from .forward import evaluate, kinematics_stage
from .jit import entry, njit
from .kinematics import integrate_kernel, normalize_kernel, qdot_kernel
from .layout import PROJECTION, RK4, SEMI_IMPLICIT_EULER
from .records import write_record

__all__ = ["advance", "CLOCK", "RUNNING", "EVENT", "NOT_FINITE"]

RUNNING, EVENT, NOT_FINITE = 0, 1, 2

#: The scalars a batch reads and writes (one record). In: ``t``, ``t_end`` (no step goes past it), ``dt`` (the
#: step, or the largest adaptive one), ``step_size`` (the adaptive step to try first; NaN: dt), ``corrections``,
#: ``max_steps``, ``rank_deficient`` (as last reported), ``evaluated`` (``out`` already holds the full
#: evaluation at y), ``iterations`` (the projection's, that produced y). Out: the same after the last good step,
#: ``steps`` taken and ``status`` (RUNNING: the batch ended normally, EVENT: it stopped after a step that ends
#: with an event, NOT_FINITE: the next step diverged; ``out`` is then not valid). Records (:mod:`core.records`)
#: go into the rows of ``trace``: the state it starts from when ``record_first``, then every ``record_every``-th
#: step (``since`` counts the steps since the last record, across calls) and the step that reaches ``t_end``;
#: ``recorded`` rows are written (E(0) of the energy audit: ``energy0``); a full ``trace`` ends the batch.
CLOCK = np.dtype([
    ("t", np.float64), ("t_end", np.float64), ("dt", np.float64), ("step_size", np.float64),
    ("corrections", np.float64), ("max_steps", np.int64), ("steps", np.int64), ("status", np.int64),
    ("iterations", np.int64), ("rank_deficient", np.bool_), ("evaluated", np.bool_),
    ("energy0", np.float64), ("record_every", np.int64), ("since", np.int64), ("recorded", np.int64),
    ("record_first", np.bool_),
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
def _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, C, A, B1, B2, k, y1, y2, m, n_groups, scale, partial):
    """The stages of an explicit Runge–Kutta tableau (C, A) from y over h: k[0] from ``out`` (the evaluation at
    y), then one evaluation per further stage (into ``stage``); y1 ← y + h Σ B1 k and y2 ← y + h Σ B2 k. Returns
    False if a stage does not evaluate to finite numbers. (``partial`` is False at run time: a literal would
    compile a second evaluation.)"""
    n = y.shape[0]
    z0 = n - out.z_rate.shape[0]
    for i in range(C.shape[0]):
        ki = k[i]
        if i == 0:
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
    tau, power = ws.plant.zero.copy(), np.zeros(4)
    elastic = forces_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, kin.v, q, qd, t,
                            tab.forces, tau, power, ws.rows.P3)
    return ke + pe + elastic


@njit
def _finite(y):
    for j in range(y.shape[0]):
        if not np.isfinite(y[j]):
            return False
    return True


@entry
def advance(tree, tab, ws, stage, y, active, clock, out, trace):
    """Up to ``clock.max_steps`` steps from (clock.t, y) with the constraints flagged in ``active`` (module
    docstring), in the scratch ``ws`` (:func:`core.forward.workspace`) with the stages evaluated into ``stage``;
    y, the clock and ``out`` (the full evaluation at the final y) are updated in place; records go into
    ``trace`` (:data:`CLOCK`)."""
    st = tab.settings[0]
    ck = clock[0]
    cons = tab.constraints
    nv, K = out.qdd.shape[0], cons.shape[0]
    nz, npow = out.z_rate.shape[0], out.power.shape[0]
    nq = y.shape[0] - nv - npow - nz
    rows = ws.rows
    m, n_groups = active_layout(cons, tab.variables, tree.root, active, rows.row_of, rows.group_of, rows.uf)
    scale = 0.0
    for c in range(K):
        if active[c]:
            scale = max(scale, cons[c].jacobian_scale)
    n = y.shape[0]
    z0 = nq + nv + npow                                        # where z starts in y
    iw = ws.integrator
    partial, full = iw.flags[0], iw.flags[1]                   # run-time bools: one compiled evaluation
    t = ck.t
    ck.steps = 0
    ck.status = RUNNING
    ck.recorded = 0
    capacity = trace.shape[0]
    if not ck.evaluated:
        if not evaluate(tree, tab, ws, t, y[:nq], y[nq:nq + nv], y[z0:], m, n_groups, scale, full, out):
            ck.status = NOT_FINITE
            return
        ck.evaluated = True
    if ck.record_first and capacity > 0:
        write_record(out, tab.controllers, t, y, nq, nv, ck.corrections, ck.iterations, ck.energy0, active,
                     trace[0])
        ck.recorded = 1
    k, y1, y2 = iw.k, iw.y1, iw.y2
    eps = 1e-12 * max(1.0, abs(ck.t_end))
    h_try = ck.step_size if ck.step_size > 0.0 else ck.dt
    for _ in range(ck.max_steps):
        if t >= ck.t_end - eps or (capacity > 0 and ck.recorded == capacity):
            break
        limit = min(ck.dt, ck.t_end - t)
        if st.integrator == RK4:
            h = limit
            if not _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, _RK4_C, _RK4_A, _RK4_B, _RK4_B, k, y1, y2, m,
                                n_groups, scale, partial):
                ck.status = NOT_FINITE
                break
        elif st.integrator == SEMI_IMPLICIT_EULER:
            h = limit
            _derivative(tree, y, nq, nv, out, k[0, :nq], k[0, nq:nq + nv], k[0, nq + nv:])
            for j in range(nq, n):                            # q̇ ← q̇ + h q̈;  w ← w + h ẇ
                y1[j] = y[j] + h * k[0, j]
            integrate_kernel(tree.joint_type, tree.q_start, tree.v_start, y[:nq], y1[nq:nq + nv], h, y1[:nq])
            normalize_kernel(tree.quat_starts, y1[:nq])       # q ← q ⊕ q̇ h
        else:
            h = min(h_try, limit)
            while True:                                       # Cash–Karp with error control on q, q̇ and z
                ok = _explicit_rk(tree, tab, ws, stage, out, t, y, h, nq, nv, _CK_C, _CK_A, _CK_B5, _CK_B4, k, y1, y2, m,
                                  n_groups, scale, partial)
                err = 0.0
                if ok:
                    for j in range(n):
                        if nq + nv <= j < z0:
                            continue                          # (not on the work integrals)
                        e = abs(y1[j] - y2[j]) / (st.tolerance * (1.0 + abs(y1[j])))
                        err = max(err, e) if np.isfinite(e) else np.inf
                else:
                    err = np.inf
                if err <= 1.0 or h < 1e-12:
                    grow = 5.0 if err == 0.0 else min(5.0, max(1.0, 0.9 * err ** -0.2))
                    h_try = min(h * grow, ck.dt)
                    break
                h *= 0.1 if not np.isfinite(err) else max(0.1, 0.9 * err ** -0.25)
            ck.step_size = h_try
        if not _finite(y1):
            ck.status = NOT_FINITE
            break
        t_new = t + h
        q1, qd1 = y1[:nq], y1[nq:nq + nv]
        iterations = 0
        if st.formulation == PROJECTION and m > 0:            # Aghili's drift removal, its energy booked
            before = _total_energy(tree, tab, ws, t_new, q1, qd1)
            iterations = project_state(tree, tab, ws, t_new, q1, qd1, active, scale)
            m, n_groups = active_layout(cons, tab.variables, tree.root, active, rows.row_of, rows.group_of,
                                        rows.uf)
            if _finite(y1):
                ck.corrections += _total_energy(tree, tab, ws, t_new, q1, qd1) - before
        if not evaluate(tree, tab, ws, t_new, q1, qd1, y1[z0:], m, n_groups, scale, full, out):
            ck.status = NOT_FINITE                            # a finite state whose evaluation overflows
            ck.evaluated = False
            break
        y[:] = y1
        t = t_new
        ck.steps += 1
        ck.since += 1
        ck.iterations = iterations
        if capacity > 0 and (ck.since >= ck.record_every or t >= ck.t_end - eps):
            write_record(out, tab.controllers, t, y, nq, nv, ck.corrections, ck.iterations, ck.energy0, active,
                         trace[ck.recorded])
            ck.recorded += 1
            ck.since = 0
        for c in range(K):                                    # events at the step boundary
            if active[c] and out.deviation[c] > cons[c].max_deviation:
                ck.status = EVENT
        if (m > 0 and out.scalars[0].jacobian_rank < m) != ck.rank_deficient:
            ck.status = EVENT
        if ck.status != RUNNING or (capacity > 0 and ck.recorded == capacity):
            break
    ck.t = t
