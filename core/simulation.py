"""A simulation: a thin stateful wrapper around the pure step of :mod:`core.step` — the current
:class:`~core.model.State`, the run-time :class:`~core.step.Inputs`, the log of events, the energy audit's
reference energy and the records of a run. The command line, the sweeps and the studio all use this class, so
a scene runs the same way headless and on screen.

Each step (DESIGN.md) is one step of the compiled pipeline (controllers → applied forces → dynamics →
constraint solve in every integrator stage) with its events inside it (:mod:`core.witnesses`: contacts, limits,
constraints that exceed their deviation bound break and are removed; rank changes are logged at its end).
:meth:`run` advances whole batches of steps per call into compiled code. Inputs that may change between steps — a nail the user drags, actuator commands, the mouse
spring, controller gains, the formulation — are set with the ``set_*`` methods and act from the next step.

The energy audit (thesis §2.3.2) integrates the power of every non-conservative source with the state
(``State.work``): ``energy_error = E(t) − E(0) − Σ work − corrections`` is then the integration error alone.

:meth:`snapshot` and :meth:`restore` save and bring back everything that changes (the studio's rewind and its
recovery from a diverging step use them).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .data import Data
from .formulations import FORMULATIONS
from .joint_constraints import JOINT_SPACE
from .layout import integrator_problem
from .model import Model, State
from .plan import NO_TRACE, one_step, plan_of, run
from .programs import answer as answer_events
from .records import record_width, split
from .scene.limits import MIN_DT
from .step import (FAILED, INTEGRATOR_NAMES, DivergenceError, Inputs, controllers_under, evaluate, failure, record_layout,
                   start_programs, steps, touching_at_start)

__all__ = ["Simulation", "Snapshot", "Records", "DivergenceError", "INTEGRATOR_NAMES"]

_CHUNK = 4096                 # rows of records one compiled call writes at most


@dataclass
class Records:
    """Time series of a run, one row per recorded state (arrays after :meth:`arrays`)."""
    columns: dict[str, list] = field(default_factory=dict)

    def append(self, **values) -> None:
        for key, value in values.items():
            self.columns.setdefault(key, []).append(np.array(value, dtype=float, copy=True))

    def arrays(self) -> dict[str, np.ndarray]:
        return {key: np.array(values) for key, values in self.columns.items()}


@dataclass(frozen=True)
class Snapshot:
    """Everything of a :class:`Simulation` that changes while it runs (immutable; :meth:`Simulation.restore`)."""
    state: State
    inputs: Inputs
    events: tuple                           # the logged events (shared: an event is never changed once logged)
    steps_taken: int
    wall_time: float
    energy0: float | None
    events_dropped: int = 0


#: The event log keeps the newest this many events (``Simulation.events_dropped`` counts the older ones dropped):
#: an event is about 2.5 kB, and a chattering or hopping run logs thousands a minute.
MAX_EVENTS = 100_000


def _joined(chunks: list, columns) -> np.ndarray:
    """The rows of a run's chunks of records as one array (one chunk as it is), which no one writes again: the
    arrays :meth:`Simulation.run` returns are views of it."""
    if not chunks:
        return np.zeros((0, record_width(columns)))
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _check_dt(dt: float) -> None:
    """Raise ValueError unless ``dt`` is a time step a run can take: finite and at least
    :data:`core.scene.limits.MIN_DT` (a shorter one cannot move the clock)."""
    if not (np.isfinite(dt) and dt >= MIN_DT):
        raise ValueError(f"time step must be at least {MIN_DT:g} s (a shorter one cannot move the clock), got {dt:g}"
                         if np.isfinite(dt) and dt > 0 else f"time step must be positive, got {dt}")


class Simulation:
    """Owns a :class:`State` of ``model`` and advances it with :func:`core.step`.

    ``dt``, ``integrator`` and ``tolerance`` default to the scene's ``simulation`` settings (1 ms, RK4). With
    ``cash_karp`` the step size adapts to ``tolerance`` and ``dt`` is the largest step taken. Every scene runs on
    the one compiled pipeline."""

    def __init__(self, model: Model, dt: float | None = None, integrator: str | None = None,
                 tolerance: float | None = None):
        self.model = model
        self.dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
        name = integrator or model.settings.get("integrator", "rk4")
        if name not in INTEGRATOR_NAMES:
            raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATOR_NAMES)}")
        _check_dt(self.dt)
        tol = float(tolerance if tolerance is not None else model.settings.get("tolerance", 1e-8))
        if not (np.isfinite(tol) and tol > 0):
            raise ValueError(f"the integrator tolerance must be positive, got {tol}")
        self._base_inputs = Inputs(integrator=name, tolerance=tol)
        self.reset()

    # ---- state and inputs ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the initial state: constraints as enabled in the scene, work integrals zero, no events, the
        scene's inputs (gains, formulation)."""
        self.inputs = self._base_inputs
        self.state, events, logged = self.model.initial_state(), [], []
        if self.model.programs:        # the programs start first, so the contacts close under their declarations
            self.state, logged = start_programs(self.model, self.state)
        try:
            self.state, events = touching_at_start(self.model, self.state, self.inputs)
        except DivergenceError:
            pass                                              # (the first step reports it, with its time)
        if self.model.programs and events:                    # then they hear of the contacts closed at t = 0
            self.state, answered = answer_events(self.model, self.state, events)
            logged = list(logged) + answered
        events = list(events) + list(logged)
        self.events: list = list(events)
        self.events_dropped = 0
        self.steps_taken = 0
        self.wall_time = 0.0
        self._energy0: float | None = None

    def snapshot(self) -> Snapshot:
        """Everything that changes while running, as an immutable value."""
        return Snapshot(self.state.copy(), self.inputs, tuple(self.events), self.steps_taken,
                        self.wall_time, self._energy0, self.events_dropped)

    def restore(self, snapshot: Snapshot) -> None:
        """Go back to a :meth:`snapshot` of this simulation, or of one whose model has the same structure (the same
        coordinates, constraints, forces and controllers: the studio restores a snapshot after recompiling a
        scene whose settings or gains alone changed)."""
        self.state = snapshot.state.copy()
        self.inputs = snapshot.inputs
        self.events = list(snapshot.events)
        self.events_dropped = snapshot.events_dropped
        self.steps_taken = snapshot.steps_taken
        self.wall_time = snapshot.wall_time
        self._energy0 = snapshot.energy0
        if self.model.programs and not self.state.programs:   # (a snapshot of a scene without them)
            self.state, _ = start_programs(self.model, self.state)

    @property
    def programs(self) -> tuple:
        """The control programs with their own state, as they are at the current state (``State.programs``)."""
        return self.state.programs

    @property
    def integrator(self) -> str:
        return self.inputs.integrator

    @property
    def tolerance(self) -> float:
        return self.inputs.tolerance

    @property
    def formulation(self) -> str:
        return self.inputs.formulation or self.model.settings.get("formulation", "dynamic_constraints")

    @property
    def work(self) -> np.ndarray:
        """The energy audit's work integrals (K constraints, then dampers, drag, actuators, external)."""
        return self.state.work

    @property
    def correction_energy(self) -> float:
        """Energy changed by the projection formulation's position and velocity corrections."""
        return self.state.corrections

    @property
    def active(self) -> np.ndarray:
        return self.state.active

    @property
    def nail_overrides(self) -> dict:
        """Dragged nails: name → (t0, position, velocity)."""
        return {n: (t0, np.array(p), np.array(v)) for n, t0, p, v in self.inputs.nails}

    @property
    def actuator_values(self) -> dict:
        return dict(self.inputs.actuators)

    @property
    def pull(self):
        """The mouse spring as ``(link, point in the link frame, world target, stiffness, damping)``, or None."""
        return self.inputs.pull

    @property
    def controllers(self) -> tuple:
        """The scene's controllers with this simulation's edited gains."""
        return controllers_under(self.model, self.inputs)

    def move_nail(self, name: str, position, velocity=(0.0, 0.0, 0.0)) -> None:
        """Put nail ``name`` at ``position`` moving with ``velocity`` (world) from now on (the studio's drag)."""
        if name not in self.model.constraint_names:
            raise KeyError(f"no constraint {name!r}; constraints: {', '.join(self.model.constraint_names)}")
        self.inputs = self.inputs.with_(nails={name: (self.state.t, position, velocity)})

    def set_actuator(self, name: str, value: float) -> None:
        """Command actuator ``name`` (clipped to its limit when applied)."""
        if name not in [f.name for f in self.model.forces]:
            raise KeyError(f"no force element {name!r}")
        self.inputs = self.inputs.with_(actuators={name: float(value)})

    def set_target(self, name: str, value: float) -> None:
        """Set the value of joint-space constraint ``name`` (Φ(q) = value) from the next step on."""
        i = self.model.constraint_names.index(name) if name in self.model.constraint_names else -1
        if i < 0 or self.model.constraints[i].kind != JOINT_SPACE:
            raise KeyError(f"no joint-space constraint {name!r}")
        self.inputs = self.inputs.with_(targets={name: float(value)})

    def set_pull(self, body, point, target, stiffness: float = 50.0, damping: float = 5.0) -> None:
        """Pull body point ``point`` towards world ``target`` with a spring-damper (the studio's mouse spring);
        its work is booked as external. :meth:`clear_pull` releases it."""
        k, r = self.model.resolve_point(body, point)
        self.inputs = self.inputs.with_(pull=(k, r, target, stiffness, damping))

    def clear_pull(self) -> None:
        self.inputs = self.inputs.with_(pull=None)

    def set_integrator(self, name: str, tolerance: float | None = None, dt: float | None = None) -> None:
        """Switch the integrator (rk4, cash_karp, semi_implicit_euler, implicitfast), its tolerance and the step ``dt`` from
        the next step on."""
        if name not in INTEGRATOR_NAMES:
            raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATOR_NAMES)}")
        tol = self.tolerance if tolerance is None else float(tolerance)
        if not (np.isfinite(tol) and tol > 0):
            raise ValueError(f"the integrator tolerance must be positive, got {tol}")
        problem = integrator_problem(name, self.formulation)
        if problem:
            raise ValueError(problem)
        if dt is not None:
            _check_dt(dt)
            self.dt = float(dt)
        self.inputs = self.inputs.with_(integrator=name, tolerance=tol)

    def set_formulation(self, name: str) -> None:
        """Switch formulation (dynamic_constraints, projection, multipliers) at the next step boundary."""
        if name not in FORMULATIONS:
            raise ValueError(f"unknown formulation {name!r}; choose one of {', '.join(FORMULATIONS)}")
        problem = integrator_problem(self.integrator, name)
        if problem:
            raise ValueError(problem)
        self.inputs = self.inputs.with_(formulation=name)

    def set_active(self, name: str, on: bool) -> None:
        """Enable or remove a constraint at the next step boundary (named constraints added or removed at run
        time, Kearney et al.)."""
        active = self.state.active.copy()
        active[self.model.constraint_names.index(name)] = bool(on)
        self.state = replace(self.state, active=active)

    def controller(self, name: str):
        """The controller named ``name``, with this simulation's edited gains."""
        for c in self.controllers:
            if c.name == name:
                return c
        raise KeyError(f"no controller {name!r}; controllers: {', '.join(c.name for c in self.controllers)}")

    def set_controller_parameter(self, name: str, parameter: str, value) -> None:
        """Edit a controller gain (kp, kd, eta, sigma, torque_limit, enabled …) from the next step on; its
        adaptive state is kept. :meth:`reset` restores the scene's values. Validated at once."""
        candidate = self.inputs.with_(gains={(self.controller(name).name, parameter): value})
        controllers_under(self.model, candidate)                  # raises KeyError/ValueError on a bad value
        self.inputs = candidate

    def controller_state(self, name: str) -> np.ndarray:
        """The slice of ``state.z`` that belongs to controller ``name`` (its adaptive parameters, integrals)."""
        start = 0
        for c in self.controllers:
            if c.name == name:
                return self.state.z[start:start + c.n_state]
            start += c.n_state
        raise KeyError(f"no controller {name!r}")

    # ---- evaluation ---------------------------------------------------------------------------------------
    @property
    def data(self) -> Data:
        """Everything derived at the current state (:func:`core.evaluate`; cached for the state)."""
        return evaluate(self.model, self.state, self.inputs)

    def _reference_energy(self) -> float:
        """E(0): the energy the books of this run start from — that of the state its first step starts from (the
        scene's initial state, or one put in its place before that step: a keyframe, a state continued after an
        edit), less the work and corrections it already carries. Before, it was always the scene's initial state,
        so a run started from another pose (Menagerie's Barkour from its keyframe, 0.28 m higher) was stopped at
        its first step as "energy from no source"."""
        if self._energy0 is None:
            state = self.model.complete(self.state)
            self._energy0 = evaluate(self.model, state, self.inputs).energy_total - float(np.sum(state.work)) - \
                float(state.corrections)
        return self._energy0

    def energy_error(self) -> float:
        """E(t) − E(0) − Σ work − corrections: the integration error of the energy books."""
        d = self.data
        return d.energy_total - self._reference_energy() - float(self.state.work.sum()) - self.state.corrections

    # ---- stepping -----------------------------------------------------------------------------------------
    def _started(self) -> None:
        """Before a call that steps: E(0) known, the event log trimmed."""
        if self._energy0 is None:
            self._reference_energy()
        self._trim_events()

    def _trim_events(self) -> None:
        """Cut the event log to its newest :data:`MAX_EVENTS` (between batches: never inside a step's undo)."""
        over = len(self.events) - MAX_EVENTS
        if over > 0:
            del self.events[:over]
            self.events_dropped += over

    def _batch(self, t_end: float, max_steps: int, trace=NO_TRACE, since: int = 0, record_first: bool = False,
               record_every: int = 1):
        """Steps from the current state (:func:`core.step.steps`: compiled batches, the control programs answering
        at events); the state and the event log follow them."""
        batch = steps(self.model, self.state, self.inputs, self.dt, t_end, max_steps, trace, self._reference_energy(),
                      record_every, since, record_first)
        self.state = batch.state
        self.events.extend(batch.events)
        self.steps_taken += batch.steps
        return batch

    def step(self, dt_max: float | None = None) -> State:
        """Advance one step (``dt``, or one accepted adaptive step no longer than ``dt_max``); raises
        :class:`DivergenceError` with the state unchanged if the result is not finite."""
        self._started()
        model, dt = self.model, self.dt
        h = dt if dt_max is None else min(dt, dt_max)
        t_end = np.inf if h == dt else self.state.t + h        # (t + dt − t is not always dt in floating point)
        if not model.programs:            # one compiled call (core.plan.one_step: its fixed cost is much of a
            plan = plan_of(model, self.inputs)                 # small model's step, README)
            with plan.lock:
                state, status, events = one_step(model, self.state, plan, dt, t_end, self._energy0)
            if status == "ok":
                self.state = state
                if events:
                    self.events.extend(events)
                self.steps_taken += 1
                return state
            if status != "event":         # (an event buffer that filled inside the step: the general path goes on)
                raise DivergenceError(failure(status, state.t, h))
        before, logged, taken = self.state, len(self.events), self.steps_taken
        batch = self._batch(t_end, 1)
        if batch.status in FAILED or batch.steps == 0:
            failed_at = batch.state.t
            self.state, self.steps_taken = before, taken       # a step that failed did not happen
            del self.events[logged:]
            raise DivergenceError(failure(batch.status, failed_at, h))
        return self.state

    def run(self, duration: float, record_every: int = 1, progress: bool = False,
            sink=None, max_steps: int | None = None) -> dict[str, np.ndarray] | None:
        """Step until ``duration`` more seconds of simulated time have passed; returns the recorded time series
        as arrays (:mod:`core.records`: the state it starts from, every ``record_every``-th step and the last;
        per-constraint arrays have one column per constraint, in ``model.constraint_names`` order). Whole
        batches of steps run in one compiled call, which records as it goes and handles the events inside the
        steps; raises :class:`DivergenceError` if the state diverges, with the state the last good one and the
        records up to it in its ``records``.

        With ``sink`` (a callable), the records are not kept: each chunk of at most a few thousand rows goes to
        ``sink(chunk)`` as soon as it is recorded (the same dict of arrays), so memory stays bounded however long
        the run; ``run`` then returns None, and on divergence every chunk up to the last good state has been
        handed over before the error is raised.

        With ``max_steps``, at most that many steps are taken (adaptive ones counted as taken): a run that has not
        reached its end by then stops with :class:`DivergenceError` naming the step size it came down to."""
        t_end = self.state.t + duration
        eps = 1e-12 * max(1.0, abs(t_end))
        columns = record_layout(self.model, self.inputs)
        expected = int(min(duration / self.dt, 1e9) / max(record_every, 1)) + 2
        trace = np.empty((max(2, min(expected, _CHUNK)), record_width(columns)))   # bounded: one chunk
        chunks: list[np.ndarray] = []
        self._started()
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=round(duration, 9), unit="s", desc=self.model.name, leave=False,
                       bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]")
        start = time.perf_counter()
        since, shown, first = 0, self.state.t, True
        budget = (1 << 62) if max_steps is None else int(max_steps)
        t0, taken = self.state.t, 0

        def kept():
            return None if sink is not None else split(_joined(chunks, columns), columns, copy=False)
        try:
            while first or self.state.t < t_end - eps:
                self._trim_events()
                if not first and taken >= budget:
                    raise DivergenceError(
                        f"the run took its {budget} steps (max_steps) and reached only t = {self.state.t:.6g} s of "
                        f"{t_end:.6g} s: its steps averaged {(self.state.t - t0) / max(taken, 1):.3g} s against dt = "
                        f"{self.dt:g} s (an adaptive tolerance too tight to meet?)", kept())
                batch = self._batch(t_end, 0 if first else budget - taken, trace, since, first, record_every)
                first = False
                taken += batch.steps
                since = batch.since
                if batch.recorded:
                    if sink is None and 2 * batch.recorded >= len(trace):   # most of the buffer: kept as it
                        chunks.append(trace[:batch.recorded])              # is, the next batch writes a new one
                        trace = np.empty_like(trace)                       # (rows never written cost no memory)
                    elif sink is None:
                        chunks.append(trace[:batch.recorded].copy())
                    else:
                        sink(split(trace[:batch.recorded], columns))
                if batch.status in FAILED:
                    raise DivergenceError(failure(batch.status, batch.state.t, self.dt), kept())
                if bar is not None and self.state.t - shown >= 0.01 * duration:
                    bar.update(self.state.t - shown)
                    shown = self.state.t
        finally:
            if bar is not None:
                bar.close()
            self.wall_time += time.perf_counter() - start
        if sink is not None:
            return None
        return split(_joined(chunks, columns), columns, copy=False)

    # ---- records ------------------------------------------------------------------------------------------
    def record(self, records: Records) -> None:
        """Append the current state and everything derived at it (the columns of :mod:`core.records`)."""
        columns = record_layout(self.model, self.inputs)
        trace = np.empty((1, record_width(columns)))
        plan = plan_of(self.model, self.inputs)
        with plan.lock:
            batch = run(self.model, self.state, plan, self.dt, self.state.t, 0, trace, self._reference_energy(), 1,
                        0, True, check_events=False)
        if batch.status == "diverged":
            raise DivergenceError(f"the state at t = {self.state.t:.6g} s cannot be evaluated; it is diverging")
        records.append(**{name: value[0] for name, value in split(trace, columns).items()})

    def controller_diagnostics(self, data: Data | None = None) -> dict[str, np.ndarray]:
        """Per controller, at the current state: ``tracking_error_<name>`` (e = q − q_d), ``desired_<name>``,
        ``sliding_variable_<name>`` (s), ``s_energy_<name>`` (½ sᵀMs), ``torque_<name>`` (nv) and
        ``parameters_<name>`` (the adaptive parameters, fig. 3.10)."""
        d = self.data if data is None else data
        out = {}
        for c in self.controllers:
            for key, value in d.controllers[c.name].items():
                out[f"{key}_{c.name}"] = value
            out[f"parameters_{c.name}"] = c.parameter_estimates(self.controller_state(c.name))
        return out
