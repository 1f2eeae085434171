"""Plans: the compiled tables of a model under some inputs, the memory the compiled batch works in, and the calls
into it (:func:`run`). A plan is cached per (model, inputs); a cache never changes a result.

:func:`run` is the one way into compiled code for a step or a batch: it packs a :class:`~core.model.State` into
the integrated vector, calls :func:`core.integrators.advance` (steps, their events, records) and unpacks what it
returns into a new State, leaving the full evaluation at that state in the plan's output buffer (``plan.out``),
from which :func:`data` makes a :class:`core.Data`.
"""
from __future__ import annotations

import copy
import math
import struct
import threading
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from .constraints import constraint_table
from .contacts import contact_rows, contact_tables, stick_normals
from .control.kernels import COMPUTED_TORQUE, PROJECTED, controller_table
from .data import Data
from .events import EVENT, decode
from .forces import ACTUATOR, force_table, pull_force
from .formulations import FORMULATIONS, RANK_TOLERANCE
from .forward import workspace
from .inputs import Inputs
from .integrators import (BOOKS, CHATTER, CLOCK, EVENT as EVENT_STATUS, EVENT_COST, MAX_EVENTS_PER_STEP, NOT_FINITE,
                          RUNNING)
from .integrators import advance as advance_kernel
from .joint_constraints import JOINT_SPACE
from .layout import (FORMULATION_CODES, INTEGRATOR_CODES, PROJECTION, SETTINGS, VARIANT_CODES, OutputArrays, Outputs,
                     Tables, integrator_problem, outputs)
from .model import Model, State

__all__ = ["Plan", "Batch", "DivergenceError", "plan_of", "build_plan", "run", "one_step", "evaluated", "data",
           "controllers_under", "command", "declare", "NO_TRACE", "EVENT_CAPACITY", "PROGRAM_CAPACITY",
           "EVENT_WORK_WINDOW", "EVENT_WORK_PER_STEP", "ANSWER_WORK"]

#: Events one compiled call may write before it returns to have them read (it then goes on).
EVENT_CAPACITY = 1024
#: The control programs' declarations a plan has room for: quantities, control equations, the actuators they solve
#: for, watches (:mod:`core.programs.kernels`).
PROGRAM_CAPACITY = (64, 8, 4, 32)
NO_TRACE = np.zeros((0, 1))

#: Chatter by cost (:data:`core.integrators.CLOCK`, ``event_work``): the work of a run's events, counted in steps
#: (each trial step that isolates an event is a step taken again; each event instant counts 1 more, and
#: :data:`ANSWER_WORK` more when control programs answer it in Python), is summed over about the last
#: :data:`EVENT_WORK_WINDOW` steps (a sum that decays by 1 − 1/window at every step, carried in
#: ``State.event_work``); when it passes :data:`EVENT_WORK_PER_STEP` times the window, the run stops as chattering
#: (status "event_cost"). So whatever its contacts do, a run costs at most about 1 + EVENT_WORK_PER_STEP times its
#: steps, plus the window's allowance once; a clean run's events cost well under one step per step (README,
#: "Nothing lost").
EVENT_WORK_WINDOW = 1000
EVENT_WORK_PER_STEP = 8.0
#: The cost of a control program's answer to an event, in steps (the Python round trip: about 0.7 ms against a
#: hopper's 45 µs step on the project's machine, which counts 16).
ANSWER_WORK = 16.0


def _codec(dtype: np.dtype, names: tuple | None = None) -> struct.Struct:
    """A :class:`struct.Struct` with the layout of the record ``dtype`` (its fields at their offsets, in order;
    only ``names`` of them, the others skipped as padding, when given): a whole record is written or read in one
    call of a few hundred ns, where a tuple assigned to a NumPy record and ``.item()`` take about a µs each — the
    fixed cost of one :meth:`core.Simulation.step` (README, Benchmarks)."""
    codes = {np.dtype(np.float64): "d", np.dtype(np.int64): "q", np.dtype(np.bool_): "?"}
    fmt, at = "=", 0
    for name in dtype.names:
        kind, offset = dtype.fields[name][:2]
        fmt += "x" * (offset - at) + (codes[kind] if names is None or name in names else "x" * kind.itemsize)
        at = offset + kind.itemsize
    codec = struct.Struct(fmt + "x" * (dtype.itemsize - at))
    assert codec.size == dtype.itemsize
    return codec


_CLOCK = _codec(CLOCK)
#: What :func:`one_step` reads of the clock after its call, in the clock's order (half the fields: half the time).
_STEPPED = ("t", "step_size", "corrections", "steps", "status", "iterations", "rank_deficient", "evaluated",
            "t_target", "n_events", "energy_scale", "event_work")
_STEPPED_CLOCK = _codec(CLOCK, _STEPPED)


class DivergenceError(RuntimeError):
    """The state became non-finite or could not be evaluated, or its events chattered; the caller keeps its last
    good state. ``records``: what :meth:`core.Simulation.run` recorded up to that state (None elsewhere)."""

    def __init__(self, message: str, records: dict | None = None):
        super().__init__(message)
        self.records = records


@dataclass
class Plan:
    """The tables of one (model, inputs), the sizes of the integrated vector, the compiled call's memory, and the
    output buffer of the last full evaluation with the state it belongs to (``at_state``)."""
    tables: Tables
    controllers: tuple
    nq: int
    nv: int
    nw: int
    integrator: str
    formulation: str
    out: OutputArrays
    kernel_out: Outputs
    workspace: object
    stage: Outputs
    clock: np.ndarray                      # the compiled call's scalars (:data:`core.integrators.CLOCK`, one record;
                                           # read and written with :data:`_CLOCK`)
    constraints: np.ndarray                # the tables' constraint and force rows (the contacts write theirs)
    forces: np.ndarray
    events: np.ndarray                     # the compiled call's event buffer (:data:`core.events.EVENT`)
    actuator_rows: tuple = ()              # rows of the force table that are actuators (:func:`command`)
    commanded: tuple | None = None         # the actuator commands written into the force table
    targeted: tuple | None = None          # the constraint targets written into the constraint table
    declared: object = None                # the programs' declarations written into the tables
    base_tables: tuple = ()                # the tables' arrays before the programs' (:func:`declare`)
    capacity: tuple = (0, 0, 0, 0)         # the programs' declarations it has room for: quantities, equations,
                                           # actuators they solve for, watches
    watch_names: tuple = ()                # (program, watch) of each row of the watch table
    quantity_names: tuple = ()
    at_state: State | None = None          # the State `out` was evaluated at (States are values)
    clock_for: tuple | None = None         # (dt, t_end, energy0) of the step from ``at_state`` that the clock as
                                           # :func:`one_step` left it describes (None once anything else called
                                           # the kernel; a command that changes the tables drops ``at_state``)
    columns: tuple | None = None           # the records' columns (core.step.record_layout), made once
    lock: threading.Lock = field(default_factory=threading.Lock)


class Batch(NamedTuple):
    """What :func:`run` did: the ``state`` after the last good step, the ``steps`` completed, the ``status`` ("ok";
    "event": it stopped at an event for control programs to answer, the step in progress to be finished by the next
    call; "diverged": the next step failed; "chatter": more than :data:`core.integrators.MAX_EVENTS_PER_STEP` event
    instants in one step; "books": the next step blew the energy audit, :data:`core.integrators.BOOKS_FACTOR`;
    "event_cost": the events' work over the last steps passed its bound, :data:`EVENT_WORK_PER_STEP`), the rows
    ``recorded`` into the trace, the steps ``since`` the last record, the
    ``events`` of the batch (:class:`core.events.Event`), ``t_target``, the end of a step in progress (NaN if
    none), and ``settle``: whether the modes at the state, just after an event, remain to be settled (by the next
    call, after the control programs answered)."""
    state: State
    steps: int
    status: str
    recorded: int
    since: int
    events: tuple = ()
    t_target: float = float("nan")
    settle: bool = False


_PLANS: dict = {}
_PLANS_LOCK = threading.Lock()


_LAST = threading.local()                                     # this thread's last (model, inputs, plan)


def plan_of(model: Model, inputs: Inputs) -> Plan:
    """The plan of (model, inputs), cached. Actuator commands and constraint targets are not part of the key:
    they are written into the plan's tables (:func:`command`), so a controller or program that commands
    actuators at every step reuses one plan."""
    last = getattr(_LAST, "entry", None)
    if last is not None and last[0] is model and last[1] is inputs:
        plan = last[2]                                        # (the same call again: a step at a time)
    else:
        plan = cached_plan(_PLANS, _PLANS_LOCK, 32, model, _keyed(inputs))
        _LAST.entry = (model, inputs, plan)
    command(model, plan, inputs)
    return plan


def _keyed(inputs: Inputs) -> Inputs:
    """``inputs`` without its actuator commands and constraint targets: the key of its plan (made once)."""
    keyed = inputs.__dict__.get("_keyed")
    if keyed is None:
        keyed = replace(inputs, actuators=(), targets=()) if inputs.actuators or inputs.targets else inputs
        object.__setattr__(inputs, "_keyed", keyed)
    return keyed


def cached_plan(cache: dict, lock, limit: int, model: Model, inputs: Inputs) -> Plan:
    """The plan of (model, inputs without commands) in ``cache``, built on a miss (at most ``limit`` kept, oldest
    out)."""
    keyed = _keyed(inputs)
    key = (id(model), keyed)
    plan = cache.get(key)
    if plan is None or plan[0] is not model:
        plan = (model, build_plan(model, keyed))
        with lock:
            if len(cache) > limit:
                cache.pop(next(iter(cache)))
            cache[key] = plan
    return plan[1]


def command(model: Model, plan: Plan, inputs: Inputs) -> None:
    """Write the actuator commands and constraint targets of ``inputs`` (else the scene's) into the plan's
    tables; an evaluation cached under other ones is dropped."""
    if plan.commanded is inputs.actuators and plan.targeted is inputs.targets:
        return
    if plan.targeted is not inputs.targets:
        targets = dict(inputs.targets)
        names = model.constraint_names
        for name in targets:
            if name not in names or model.constraints[names.index(name)].kind != JOINT_SPACE:
                raise KeyError(f"no joint-space constraint {name!r} to set the value of")
        for i, c in enumerate(model.constraints):
            if c.kind == JOINT_SPACE:
                value = float(targets.get(c.name, c.value))
                if plan.constraints["value"][i] != value:
                    plan.constraints["value"][i] = value
                    plan.at_state = None
        plan.targeted = inputs.targets
        plan.declared = None                                  # (the programs' own targets go on top again)
    given = dict(inputs.actuators)
    for name in given:
        if all(model.forces[i].name != name for i in plan.actuator_rows):
            known = ", ".join(model.forces[i].name for i in plan.actuator_rows) or "none"
            raise KeyError(f"no force element {name!r} (actuators: {known})")
    changed = False
    for i in plan.actuator_rows:
        e = model.forces[i]
        u = given.get(e.name, e.torque)
        if plan.forces["command"][i] != u:
            plan.forces["command"][i] = u
            changed = True
    if changed:
        plan.at_state = None
    plan.commanded = inputs.actuators


def declare(model: Model, plan: Plan, declarations) -> None:
    """Write the control programs' declarations (:class:`core.programs.Declarations`, or None: none) into the
    plan's tables: their quantities, servos, equations and watches, and the targets of the constraints they
    hold; an evaluation cached under other ones is dropped."""
    if plan.declared is declarations:
        return
    from .programs import NO_DECLARATIONS
    d = declarations or NO_DECLARATIONS
    tables = d.tables(model)
    sizes = (len(tables["quantities"]), len(tables["equations"]), len(tables["unknowns"]), len(tables["watches"]))
    for what, n, room in zip(("quantities", "control equations", "actuators solved for", "watches"), sizes,
                             plan.capacity):
        if n > room:
            raise ValueError(f"the control programs declared {n} {what}; a scene's programs may declare at most "
                             f"{room}")
    plan.tables = Tables(*plan.base_tables, tables["quantities"], tables["terms"], tables["servos"],
                         tables["watches"].copy(), tables["equations"], tables["lhs"], tables["unknowns"])
    held = dict(d.targets)
    given = dict(plan.targeted or ())
    for i, c in enumerate(model.constraints):
        if c.kind == JOINT_SPACE:
            plan.constraints["value"][i] = float(held.get(c.name, given.get(c.name, c.value)))
    plan.watch_names, plan.quantity_names = tables["watch_names"], tables["quantity_names"]
    plan.declared = declarations
    plan.at_state = None


def controllers_under(model: Model, inputs: Inputs) -> tuple:
    """The model's controllers with the gains of ``inputs`` applied (copies; validated by each controller)."""
    if not inputs.gains:
        return model.controllers
    out = []
    for c in model.controllers:
        mine = [(p, v) for name, p, v in inputs.gains if name == c.name]
        if mine:
            c = copy.copy(c)
            for p, v in mine:
                c.set_parameter(p, list(v) if isinstance(v, tuple) else v)
        out.append(c)
    return tuple(out)


def build_plan(model: Model, inputs: Inputs) -> Plan:
    """A new plan of (model, inputs): its tables, memory and buffers."""
    s = model.settings
    formulation = inputs.formulation or s.get("formulation", "dynamic_constraints")
    if formulation not in FORMULATIONS:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")
    integrator = inputs.integrator or s.get("integrator", "rk4")
    if integrator not in INTEGRATOR_CODES:
        raise ValueError(f"unknown integrator {integrator!r}; choose one of {', '.join(INTEGRATOR_CODES)}")
    problem = integrator_problem(integrator, formulation)
    if problem:
        raise ValueError(problem)
    names = model.constraint_names
    for name, *_ in inputs.nails:
        if name not in names:
            raise KeyError(f"no constraint {name!r}; constraints: {', '.join(names)}")
    force_names = [f.name for f in model.forces]
    for name, _ in inputs.actuators:
        if name not in force_names:
            raise KeyError(f"no force element {name!r}")
    solver = {**s.get("solver", {}), **dict(inputs.solver)}
    projection = s.get("projection", {}) or {}
    drags = {n: (t0, np.array(p), np.array(v)) for n, t0, p, v in inputs.nails}
    cons, tape, variables = constraint_table(model.constraints, drags, contact_rows(model), model.fixed_links,
                                             stick_normals(model))
    pull = () if inputs.pull is None else (pull_force(*inputs.pull),)
    forces = force_table(model.forces + pull, dict(inputs.actuators))
    controllers = controllers_under(model, inputs)
    K = len(model.constraints)
    ctl, ints, floats = controller_table(controllers, model.nv, K)
    kinds = set(ctl["kind"].tolist())
    settings = np.zeros(1, SETTINGS)
    st = settings[0]
    st["formulation"] = FORMULATION_CODES[formulation]
    st["method"] = 1 if solver.get("method", "svd") == "damped_least_squares" else 0
    st["rcond"], st["rho"] = solver.get("rcond", 1e-12), solver.get("rho", 1e-3)
    st["rank_tolerance"] = s.get("rank_tolerance", RANK_TOLERANCE)
    st["variant"] = VARIANT_CODES[projection.get("variant", "Mc")]
    st["gamma"] = projection.get("gamma") or np.nan
    st["projection_tolerance"] = projection.get("tolerance") or st["rank_tolerance"]
    st["position_tolerance"] = projection.get("position_tolerance", 1e-12)
    st["max_iterations"] = projection.get("max_iterations", 20)
    st["integrator"] = INTEGRATOR_CODES[integrator]
    tolerance = inputs.tolerance if inputs.tolerance is not None else s.get("tolerance", 1e-8)
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"the integrator tolerance must be positive, got {tolerance}")
    st["tolerance"] = tolerance
    st["mass_matrix"] = (st["formulation"] == PROJECTION or COMPUTED_TORQUE in kinds or PROJECTED in kinds)
    st["gravity_torque"] = any(c.kind == "computed_torque" and not c.model_gravity for c in controllers)
    st["event_tolerance"] = float(s.get("event_tolerance", 1e-9))
    points, limits, holds = contact_tables(model)
    from .programs import NO_DECLARATIONS
    none = NO_DECLARATIONS.tables(model)
    base = (cons, tape, variables, forces, ctl, ints, floats, settings, points, limits, holds)
    tables = Tables(*base, none["quantities"], none["terms"], none["servos"], none["watches"], none["equations"],
                    none["lhs"], none["unknowns"])
    capacity = PROGRAM_CAPACITY if model.programs else (0, 0, 0, 0)
    nz = sum(c.n_state for c in controllers)
    nc = sum(c.n for c in controllers)
    R = sum(c.rows for c in model.constraints)
    arrays, out = outputs(model.nv, K, R, nz, nc, len(controllers), capacity[0])
    stage = outputs(model.nv, K, R, nz, nc, len(controllers), capacity[0])[1]
    L = max([len(c.tape) for c in model.constraints if c.kind == JOINT_SPACE] + [1])
    V = max([len(c.names) for c in model.constraints if c.kind == JOINT_SPACE] + [1])
    P = max([10 * model.n_links] + [c.n_parameters for c in controllers if c.kind == "slotine_li"]) \
        if controllers else 0                                   # the regressors' columns (Slotine–Li)
    F = max([2 * c.n * c.experts for c in controllers if c.kind == "mixture"] + [1])
    n = model.nq + model.nv + K + 4 + nz
    ws = workspace(model.n_links, model.nv, K, R, L, V, P, F, n, len(points), len(limits), len(forces), *capacity)
    actuators = tuple(i for i, e in enumerate(model.forces) if e.kind == ACTUATOR)
    clock = np.zeros(1, CLOCK)
    clock[0]["t_target"] = np.nan
    return Plan(tables, controllers, model.nq, model.nv, K + 4 + nz, integrator, formulation, arrays, out, ws,
                stage, clock, cons, forces, np.zeros(EVENT_CAPACITY, EVENT), actuators, base_tables=base, capacity=capacity)


# ---- the state as the integrated vector ----------------------------------------------------------------

def _pack(model: Model, state: State) -> np.ndarray:
    """A fresh integrated vector y = [q, q̇, work, z] of ``state`` (the kernel advances it in place)."""
    y = state.__dict__.get("_y")
    if y is not None and state.q.base is y and state.qd.base is y and state.work.base is y and state.z.base is y:
        return y.copy()                                       # (a State made by _unpack: its fields are views)
    return np.concatenate([np.asarray(state.q, float), np.asarray(state.qd, float), state.work, state.z])


_BOOL, _FLOAT = np.dtype(np.bool_), np.dtype(np.float64)


def _modes(state: State) -> tuple:
    """Copies of the state's ``active``, ``slip`` and ``touched`` that the compiled call may change in place (an
    empty array is shared: nothing changes in it)."""
    active, slip, touched = state.active, state.slip, state.touched
    if active.size or active.dtype is not _BOOL:              # (`is`: builtin dtypes are singletons, `!=` costs
        active = np.array(active, dtype=np.bool_)             # twice as much: this runs at every step() call)
    if slip.size or slip.dtype is not _FLOAT:
        slip = np.array(slip, dtype=np.float64)
    if touched.size or touched.dtype is not _FLOAT:
        touched = np.array(touched, dtype=np.float64)
    return active, slip, touched


def _unpack(model: Model, y: np.ndarray, state: State, t: float, corrections: float, step_size: float,
            iterations: int, active, slip, touched, rank_deficient: bool, energy_scale: float,
            event_work: float) -> State:
    """The State of the integrated vector y (which it takes over: q, q̇, work and z are views of it)."""
    nq, nv = model.nq, model.nv
    w = nq + nv + len(model.constraints) + 4
    new = State(t, y[:nq], y[nq:nq + nv], y[w:], y[nq + nv:w], active, corrections, step_size, rank_deficient,
                iterations, slip, touched, state.programs, state.controls, energy_scale, event_work)
    new.__dict__["_y"] = y
    return new


def _key(state: State) -> tuple:
    return (state.t, state.q.tobytes(), state.qd.tobytes(), state.z.tobytes(), state.active.tobytes(),
            state.slip.tobytes())


def _holds(plan: Plan, state: State) -> bool:
    """Whether the plan's output buffer holds the evaluation at ``state`` (the same State, or an equal one)."""
    at = plan.at_state
    return at is not None and (at is state or (at.controls is state.controls and _key(at) == _key(state)))


_STATUS = {RUNNING: "ok", EVENT_STATUS: "event", NOT_FINITE: "diverged", CHATTER: "chatter", BOOKS: "books",
           EVENT_COST: "event_cost"}


def run(model: Model, state: State, plan: Plan, dt: float, t_end: float, max_steps: int, trace=NO_TRACE,
        energy0: float = math.nan, record_every: int = 1, since: int = 0, record_first: bool = False,
        t_target: float = np.nan, stop_on_events: bool = False, close_touching: bool = False,
        check_events: bool = True, settle: bool = False) -> Batch:
    """One call of the compiled batch (:func:`core.integrators.advance`): up to ``max_steps`` steps of ``dt`` from
    ``state`` (none past ``t_end``), with their events; ``t_target``: the end of a step in progress to finish
    first; ``check_events``: handle the events at ``state`` itself first (breaks, a rank change; False: evaluate
    it as it is); ``settle``: settle the modes at ``state`` first (a batch that stopped at an event left them).
    The plan's output buffer then holds the full evaluation at the returned state (unless it diverged before one
    could be made). The caller holds ``plan.lock``."""
    if plan.declared is not state.controls:
        declare(model, plan, state.controls)
    instants = 0 if math.isnan(t_target) else _CLOCK.unpack_from(plan.clock)[22]
    c, y, active, slip, touched = _call(model, state, plan, t_end, dt, max_steps, energy0, max(1, record_every),
                                        since, record_first, t_target, stop_on_events, close_touching, check_events,
                                        instants, settle, trace)
    (t, _, _, step_size, corrections, _, steps, status, iterations, rank_deficient, evaluated, _, _, since, recorded,
     _, t_target, n_events, _, _, _, _, _, settle, energy_scale, event_work, _, _, _) = c
    changed = steps > 0 or n_events > 0 or t != state.t or not np.array_equal(active, state.active) \
        or not np.array_equal(slip, state.slip)
    new = state if not changed else _unpack(model, y, state, t, corrections, step_size, iterations, active, slip,
                                            touched, bool(rank_deficient), energy_scale, event_work)
    plan.at_state = new if evaluated and status != NOT_FINITE else None
    events = tuple(decode(model, plan.events[:n_events], plan.formulation, plan.watch_names)) if n_events else ()
    return Batch(new, steps, _STATUS[status], recorded, since, events, t_target, bool(settle))


def _call(model: Model, state: State, plan: Plan, t_end, dt, max_steps, energy0, record_every, since,
          record_first, t_target, stop_on_events, close_touching, check_events, instants, settle, trace) -> tuple:
    """One call of :func:`core.integrators.advance` from ``state`` with the clock's inputs (:data:`CLOCK`'s fields
    in its order): ``(the clock's fields after it, y, active, slip, touched)``, the arrays as it left them."""
    plan.clock_for = None
    y = _pack(model, state)
    active, slip, touched = _modes(state)
    clock = plan.clock
    _CLOCK.pack_into(clock, 0, state.t, t_end, dt, state.step_size, state.corrections, max_steps, 0, 0,
                     state.projection_iterations, state.rank_deficient, plan.at_state is state or _holds(plan, state),
                     energy0, record_every, since, 0, record_first, t_target, 0, False, stop_on_events, close_touching,
                     check_events, instants, settle, state.energy_scale, state.event_work,
                     EVENT_WORK_PER_STEP * EVENT_WORK_WINDOW, 1.0 - 1.0 / EVENT_WORK_WINDOW, ANSWER_WORK)
    advance_kernel.fast(model.kernel_tree, plan.tables, plan.workspace, plan.stage, y, active, slip, touched, clock,
                        plan.kernel_out, trace, plan.events)
    return _CLOCK.unpack_from(clock), y, active, slip, touched


def one_step(model: Model, state: State, plan: Plan, dt: float, t_end: float, energy0: float) -> tuple:
    """What :func:`run` does for the commonest call — one step of ``dt`` from ``state`` (completed as
    :meth:`core.model.Model.complete` does unless it is the State the last step returned) of a scene without
    control programs (none past ``t_end``), no records, no step in progress — without what only the
    general call needs (declarations, a step in progress, :class:`Batch`): one :meth:`core.Simulation.step`
    (README, Benchmarks). A step from the State the last one returned, with the same dt, t_end and E(0), finds the
    compiled call's clock as that step left it — the new state's time, step size, books and flags, the per-call
    fields reset by the call itself — and does not pack it again. Returns ``(new state, status,
    events)``, the status as :class:`Batch`'s; a step not taken (diverged, chatter, or its event buffer filled
    inside it) returns ``state`` and no events. The caller holds ``plan.lock``."""
    if plan.at_state is state and plan.clock_for == (dt, t_end, energy0):
        y = _pack(model, state)
        active, slip, touched = _modes(state)
        advance_kernel.fast(model.kernel_tree, plan.tables, plan.workspace, plan.stage, y, active, slip, touched,
                            plan.clock, plan.kernel_out, NO_TRACE, plan.events)
    else:
        state = model.complete(state)
        _, y, active, slip, touched = _call(model, state, plan, t_end, dt, 1, energy0, 1, 0, False, math.nan, False,
                                            False, True, 0, False, NO_TRACE)
    (t, step_size, corrections, steps, status, iterations, rank_deficient, evaluated, t_target, n_events,
     energy_scale, event_work) = _STEPPED_CLOCK.unpack_from(plan.clock)
    plan.clock_for = None
    if steps == 0:
        plan.at_state = None
        return state, _STATUS[status], ()
    new = _unpack(model, y, state, t, corrections, step_size, iterations, active, slip, touched, rank_deficient,
                  energy_scale, event_work)
    plan.at_state = new if evaluated else None
    if evaluated and status == RUNNING and math.isnan(t_target):      # (a step complete, its state evaluated)
        plan.clock_for = (dt, t_end, energy0)
    events = tuple(decode(model, plan.events[:n_events], plan.formulation, plan.watch_names)) if n_events else ()
    return new, _STATUS[status], events


def evaluated(model: Model, state: State, plan: Plan) -> None:
    """Make sure the plan's output buffer holds the full evaluation at ``state`` (its contact tables written from
    it). Raises :class:`DivergenceError` if it is not finite."""
    if _holds(plan, state):
        return
    batch = run(model, state, plan, 1.0, state.t, 0, check_events=False)
    if batch.status == "diverged" or plan.at_state is None:
        raise DivergenceError(f"the dynamics could not be evaluated near t = {state.t:.6g} s (non-finite "
                                 f"accelerations or powers); the state is diverging")
    plan.at_state = state


def data(model: Model, plan: Plan, state: State) -> Data:
    """A :class:`Data` (copies) of the plan's output buffer, which holds the evaluation at ``state``."""
    o = plan.out
    sc = o.scalars[0]
    K = len(model.constraints)
    R = o.singular_values.shape[0]
    ns = int(sc["n_svals"])
    sv = np.full(R, np.nan)
    sv[:ns] = o.singular_values[:ns]
    force = o.constraint_force.copy()
    m = int(sc["rows"])
    controllers, k = {}, 0
    for i, c in enumerate(plan.controllers):
        controllers[c.name] = {"tracking_error": o.tracking_error[k:k + c.n].copy(),
                               "desired": o.desired[k:k + c.n].copy(),
                               "sliding_variable": o.sliding[k:k + c.n].copy(),
                               "s_energy": float(o.s_energy[i]), "torque": o.torque[i].copy()}
        k += c.n
    return Data(qdd=o.qdd.copy(), tau_applied=o.tau.copy(), tau_control=o.tau_control.copy(), constraint_force=force,
                constraint_force_magnitude=np.linalg.norm(force, axis=1) if K else np.zeros(0),
                point_a=o.point_a.copy(), point_b=o.point_b.copy(), velocity_a=o.velocity_a.copy(),
                deviation=o.deviation.copy(), deviation_rate=o.deviation_rate.copy(), residual=o.residual.copy(),
                singular_values=sv, rank=int(sc["rank"]), dropped=int(sc["dropped"]),
                singular_value_cutoff=float(sc["cutoff"]), jacobian_rank=int(sc["jacobian_rank"]),
                rank_deficient=bool(m > 0 and sc["jacobian_rank"] < m), power_constraints=o.power[:K].copy(),
                power_sources=o.power[K:].copy(), energy_kinetic=float(sc["energy_kinetic"]),
                energy_gravity=float(sc["energy_gravity"]), energy_elastic=float(sc["energy_elastic"]),
                controller_rate=o.z_rate.copy(), controllers=controllers,
                quantities={name: float(o.quantities[i]) for i, name in enumerate(plan.quantity_names)})
