"""The public step: ``core.step(model, state, inputs, dt) -> (state, data, events)`` and
``core.evaluate(model, state, inputs) -> data`` — one pipeline for every scene, the command line, the sweeps
and the studio (DESIGN.md; MuJoCo's viewer only calls ``mj_step``).

Both are pure: they read a :class:`~core.model.Model` (frozen), a :class:`~core.model.State` (never modified;
a step returns a new one) and :class:`~core.inputs.Inputs` — what may change between steps without changing the
model. Everything else a step needs (the compiled tables, an evaluation already made at the state it starts from)
is cached behind them, per model and inputs (:mod:`core.plan`); a cache never changes a result.

A step runs inside compiled code from start to end, with its events (:mod:`core.integrators`,
:mod:`core.witnesses`): contacts touching down (impacts), lifting off, slipping and sticking, joint limits reached
and released, and constraints breaking beyond their deviation bound, are isolated in time and resolved inside
the step; a change of the constraint Jacobian's rank is reported at the step's end. :func:`advance` takes a whole
batch of steps in one call — :meth:`core.Simulation.run` uses it.
"""
from __future__ import annotations

import math

import numpy as np

from .data import Data
from .inputs import NO_INPUTS, Inputs
from .layout import INTEGRATOR_CODES
from .model import Model, State
from .plan import NO_TRACE, Batch, DivergenceError, controllers_under, data, evaluated, plan_of, run
from .programs import answer
from .programs import start_programs as _start
from .records import record_columns

__all__ = ["Inputs", "Batch", "step", "steps", "evaluate", "advance", "DivergenceError", "INTEGRATOR_NAMES",
           "handle_events", "record_layout", "touching_at_start", "start_programs", "controllers_under"]

INTEGRATOR_NAMES = tuple(INTEGRATOR_CODES)


def evaluate(model: Model, state: State, inputs: Inputs = NO_INPUTS) -> Data:
    """Everything derived at ``state`` under ``inputs`` (:class:`core.data.Data`); raises
    :class:`DivergenceError` if the dynamics cannot be evaluated there (non-finite results)."""
    state = model.complete(state)
    plan = plan_of(model, inputs)
    with plan.lock:
        evaluated(model, state, plan)
        return data(model, plan, state)


#: The statuses of a batch that stopped short of a step it could not take.
FAILED = ("diverged", "chatter", "books", "event_cost")


def failure(status: str, t: float, dt: float) -> str:
    """Why a batch stopped short at time t (its status one of :data:`FAILED`)."""
    if status == "books":
        from .integrators import BOOKS_FACTOR
        return (f"the step from t = {t:.6g} s (dt = {dt:g} s) left the energy audit's error above {BOOKS_FACTOR:g} "
                f"of the scene's energy scale, energy from no source: the state is diverging (a step too long for a "
                f"stiff spring, damper or gain, or a constraint force without a bound); lower dt, use the "
                f"cash_karp integrator, or implicitfast for stiff joint dampers and actuator gains")
    if status == "event_cost":
        from .plan import EVENT_WORK_PER_STEP, EVENT_WORK_WINDOW
        return (f"contact events cost more than {EVENT_WORK_PER_STEP:g} steps' work per step over the last "
                f"{EVENT_WORK_WINDOW} steps at t = {t:.6g} s (chatter: contacts that keep switching, each switch "
                f"isolated by trial steps and answered by the control programs, if any); raise the contacts' "
                f"rest_speed or the event_tolerance, or lower the step")
    if status == "chatter":
        from .integrators import MAX_EVENTS_PER_STEP
        return (f"more than {MAX_EVENTS_PER_STEP} contact events inside one step at t = {t:.6g} s (chatter: a "
                f"contact that keeps switching); lower the step or raise the contacts' rest_speed")
    return (f"the step from t = {t:.6g} s (dt = {dt:g} s) gave a non-finite state or dynamics; the state is "
            f"diverging")


def step(model: Model, state: State, inputs: Inputs = NO_INPUTS, dt: float | None = None):
    """Advance ``state`` by one step of ``dt`` (default: the scene's; with cash_karp, one accepted adaptive step
    of at most ``dt``) with the events inside it: ``(new state, its Data, events)`` — the events at ``state`` itself
    (a break, a rank change not yet reported), those of the step and what the control programs logged answering
    them. Raises :class:`DivergenceError` if the step gives a non-finite state or one whose dynamics cannot be
    evaluated, or its events chatter; ``state`` is never modified (the programs answer on copies)."""
    dt = _dt(model, dt)
    batch = steps(model, state, inputs, dt, np.inf, 1)
    if batch.status in FAILED or batch.steps < 1:
        raise DivergenceError(failure(batch.status, batch.state.t, dt))
    plan = plan_of(model, inputs)
    with plan.lock:
        evaluated(model, batch.state, plan)
        return batch.state, data(model, plan, batch.state), list(batch.events)


def steps(model: Model, state: State, inputs: Inputs = NO_INPUTS, dt: float | None = None, t_end: float = np.inf,
          max_steps: int = 1, trace: np.ndarray | None = None, energy0: float = math.nan, record_every: int = 1,
          since: int = 0, record_first: bool = False) -> Batch:
    """Up to ``max_steps`` steps of ``dt`` from ``state``, none past ``t_end``, with their events, as few compiled
    calls as the events allow: without control programs one call (:func:`advance`, again only if its event buffer
    fills up); with them, a call stops at each event, the programs answer it (:func:`core.programs.answer`: their
    handlers, on copies, change their declarations and own constraints) and the next call goes on from there —
    Python runs at events only, never between them. A state whose programs have not started is started first
    (:func:`start_programs`). Records as :func:`advance`; the :class:`~core.plan.Batch` returned sums the calls
    (its status the last one's: "ok" or one of :data:`FAILED`)."""
    dt = _dt(model, dt)
    state = model.complete(state)
    programs = bool(model.programs)
    events: list = []
    if programs and state.controls is None:
        state, logged = _start(model, state)
        events.extend(logged)
    plan = plan_of(model, inputs)
    trace = NO_TRACE if trace is None else trace
    with plan.lock:
        batch = run(model, state, plan, dt, t_end, max_steps, trace, energy0, record_every, since, record_first,
                    np.nan, programs)
    if batch.status != "event" and not events:
        return batch                                          # (one call: no programs, or no event)
    taken, recorded = batch.steps, batch.recorded
    while True:
        state = batch.state
        events.extend(batch.events)
        since = batch.since
        if batch.status != "event":
            break
        t_target, settle = batch.t_target, batch.settle
        if programs and batch.events:                         # the programs answer at the event
            state, logged = answer(model, state, batch.events)
            events.extend(logged)
        if np.isnan(t_target) and not settle and taken >= max_steps:
            break
        if trace.shape[0] and recorded >= trace.shape[0]:
            break
        with plan.lock:
            batch = run(model, state, plan, dt, t_end, max_steps - taken, trace[recorded:], energy0, record_every,
                        since, False, t_target, programs, settle=settle)
        taken += batch.steps
        recorded += batch.recorded
    return batch._replace(state=state, steps=taken, recorded=recorded, since=since, events=tuple(events),
                          status="ok" if batch.status == "event" else batch.status)


def start_programs(model: Model, state: State) -> tuple[State, list]:
    """``state`` with the scene's control programs made and started (:meth:`core.programs.ControlProgram.start`
    at ``state``), and the events they logged; a step starts them itself when ``state`` has none yet.
    :class:`core.Simulation` starts them before :func:`touching_at_start`, so the contacts that touch at t = 0 close
    under their declarations, and then has them answer those contacts' events (:func:`core.programs.answer`)."""
    return _start(model, model.complete(state))


def advance(model: Model, state: State, inputs: Inputs = NO_INPUTS, dt: float | None = None,
            t_end: float = np.inf, max_steps: int = 1, trace: np.ndarray | None = None, energy0: float = math.nan,
            record_every: int = 1, since: int = 0, record_first: bool = False, t_target: float = np.nan,
            stop_on_events: bool = False) -> Batch:
    """Up to ``max_steps`` steps of ``dt`` from ``state`` in one compiled call, none past ``t_end`` (the last one
    shortened to land on it), with their events: a :class:`~core.plan.Batch`. It stops early before a step that
    fails, on chatter, or — with ``stop_on_events`` — at an event (the step in progress, ``Batch.t_target``, is
    finished by the next call given that ``t_target``). With a ``trace`` (rows x :func:`core.records.record_width`),
    records are written into its rows: ``state`` itself when ``record_first``, every ``record_every``-th step
    counting ``since`` steps already taken since the last record, and the step that reaches ``t_end``; a full
    trace ends the batch. ``energy0`` is E(0) of the energy audit (the records' ``energy_error``, and the books
    that refuse a step making energy from no source, status "books"); NaN, the default, when the run's start is
    not known: then ``energy_error`` is NaN and the books are not judged."""
    dt = _dt(model, dt)
    state = model.complete(state)
    plan = plan_of(model, inputs)
    with plan.lock:
        return run(model, state, plan, dt, t_end, int(max_steps), NO_TRACE if trace is None else trace, energy0,
                   record_every, since, record_first, t_target, stop_on_events)


def handle_events(model: Model, state: State, inputs: Inputs = NO_INPUTS) -> tuple[State, list]:
    """The events at ``state`` itself (thesis §2.3.4; Kearney's named constraints removed at run time): every
    active constraint whose deviation exceeds its bound breaks, and a change of the constraint Jacobian's rank
    deficiency since the last report is reported. Returns the state with the broken constraints inactive and the
    report updated, and the events (:class:`core.events.Event`). A step does this itself; this is for a state
    made by hand."""
    state = model.complete(state)
    plan = plan_of(model, inputs)
    with plan.lock:
        batch = run(model, state, plan, 1.0, state.t, 0)
        if batch.status == "diverged":
            raise DivergenceError(failure(batch.status, batch.state.t, 1.0))
        return batch.state, list(batch.events)


def touching_at_start(model: Model, state: State, inputs: Inputs = NO_INPUTS) -> tuple[State, list]:
    """``state`` with the contact points that touch it — open, within :data:`core.contacts.PENETRATION` of
    their plane — closed as at a touchdown (an impact with their current velocities, so a point that slides
    starts slipping), and the events that says. :class:`core.Simulation` starts every run this way, so a block
    put on the ground rests from t = 0 instead of falling the penetration tolerance first."""
    state = model.complete(state)
    if not model.contacts:
        return state, []
    plan = plan_of(model, inputs)
    with plan.lock:
        batch = run(model, state, plan, 1.0, state.t, 0, close_touching=True, check_events=False)
        if batch.status in FAILED:
            raise DivergenceError(failure(batch.status, batch.state.t, 1.0))
        return batch.state, list(batch.events)


def record_layout(model: Model, inputs: Inputs = NO_INPUTS) -> tuple:
    """The columns of the records of ``model`` under ``inputs`` (:func:`core.records.record_columns`), made once
    per plan (every batch of a run asks for them: with hundreds of contact rows, counting them again cost the
    studio's worker a few hundred µs a batch)."""
    plan = plan_of(model, inputs)
    if plan.columns is None:
        plan.columns = tuple(record_columns(model, plan.controllers))
    return plan.columns


def _dt(model: Model, dt) -> float:
    dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"time step must be positive, got {dt}")
    return dt
