"""A simulation: a Model, its State, and the step that advances it. The command line, the sweeps and the studio
all use this class, so a scene runs the same way headless and on screen.

Each step (DESIGN.md): events at the step boundary (constraints that exceed their deviation bound break and are
removed, with a logged event) → integrate, evaluating applied forces → dynamics → constraint solve in every stage
(:func:`core.dynamics.evaluate`) → check the new state is finite. Inputs that may change between steps — a nail
the user drags, actuator values — are set with :meth:`move_nail` and :meth:`set_actuator`.

The energy audit (thesis §2.3.2) integrates the power of every non-conservative source alongside the state:
``energy_error = E(t) − E(0) − Σ work`` is then the integration error alone.

Controllers (:mod:`core.control`) are the first stage of every evaluation: they compute joint torques from
(t, q, q̇) and their own state ``State.z`` (adaptive parameters, integrals), which are added to the applied
forces. ``z`` is integrated with the work integrals as one auxiliary vector whose stage values are fed back to
the controllers, so the adaptation is as accurate as the arm's motion (and error-controlled with cash_karp).
Gains can be edited between steps with :meth:`set_controller_parameter`.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from .dynamics import Data, evaluate, total_energy
from .formulations import FORMULATIONS, project_state
from .control import ControlInput, control_stage, state_slices
from .forces import POWER_SOURCES, applied_forces, pull_force
from .integrators import ADAPTIVE, FIXED_STEP
from .model import Model, State
from .points import link_kinematics
from .stepper import CompiledScene, eligible

__all__ = ["Simulation", "Records", "DivergenceError", "INTEGRATOR_NAMES"]

INTEGRATOR_NAMES = tuple(FIXED_STEP) + tuple(ADAPTIVE)


class DivergenceError(RuntimeError):
    """The state became non-finite; the simulation keeps its last good state."""


@dataclass
class Records:
    """Time series of a run, one row per recorded state (arrays after :meth:`arrays`)."""
    columns: dict[str, list] = field(default_factory=dict)

    def append(self, **values) -> None:
        for key, value in values.items():
            self.columns.setdefault(key, []).append(np.array(value, dtype=float, copy=True))

    def arrays(self) -> dict[str, np.ndarray]:
        return {key: np.array(values) for key, values in self.columns.items()}


class Simulation:
    """Owns a :class:`State` of ``model`` and advances it.

    ``dt`` and ``integrator`` default to the scene's ``simulation`` settings (1 ms, RK4). With ``cash_karp`` the
    step size adapts to ``tolerance`` and ``dt`` is the largest step taken.

    Scenes with point constraints and force elements under the dynamic-constraints formulation (no controllers,
    no joint-space constraints) are evaluated by the compiled kernels of :mod:`core.stepper`, and with RK4 whole
    steps (batches of steps in :meth:`run`) run in one compiled call. ``compiled=False`` forces the Python
    assembly of :func:`core.dynamics.evaluate` (the reference the tests compare the compiled path with).
    """

    def __init__(self, model: Model, dt: float | None = None, integrator: str | None = None,
                 tolerance: float | None = None, compiled: bool = True):
        self.model = model
        self.compiled = bool(compiled)
        self.dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
        name = integrator or model.settings.get("integrator", "rk4")
        if name not in INTEGRATOR_NAMES:
            raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATOR_NAMES)}")
        if not (np.isfinite(self.dt) and self.dt > 0):
            raise ValueError(f"time step must be positive, got {self.dt}")
        self.integrator = name
        self.tolerance = float(tolerance if tolerance is not None else model.settings.get("tolerance", 1e-8))
        self.solver = dict(model.settings.get("solver", {}))
        self.formulation = model.settings.get("formulation", "dynamic_constraints")
        self.reset()

    # ---- state and inputs ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the initial state: constraints as enabled in the scene, work integrals zero, no events."""
        self.state = self.model.initial_state()
        self.controllers = tuple(copy.copy(c) for c in self.model.controllers)   # gains editable per simulation
        self._z_slices = state_slices(self.controllers)
        self.active = np.array([c.enabled for c in self.model.constraints], dtype=bool)
        self.work = np.zeros(len(self.model.constraints) + len(POWER_SOURCES))
        self.correction_energy = 0.0          # energy changed by the projection's position/velocity corrections
        self.projection_iterations = 0
        self._rank_deficient = False
        self.events: list[dict] = []
        self.nail_overrides: dict[str, tuple] = {}
        self.actuator_values: dict[str, float] = {}
        self.pull = None
        self._h = self.dt
        self._data: Data | None = None
        self._energy0 = None
        self.steps_taken = 0
        self.wall_time = 0.0
        self._scene: CompiledScene | None = None
        self._scene_key = None
        self._eligible: dict[str, bool] = {}
        self._max_deviation = np.array([c.max_deviation for c in self.model.constraints], dtype=float)
        self._raw, self._raw_state = None, None     # the compiled evaluation at _raw_state
        self._raw_checked = False                   # whether its events (breaks, rank changes) were handled

    # ---- the compiled path ---------------------------------------------------------------------------------
    def _inputs_key(self) -> tuple:
        """Everything the compiled tables depend on that may change between steps (set through the methods
        below or directly on the attributes, as the studio does)."""
        return (self.active.tobytes(), self.formulation, id(self.pull),
                tuple(self.solver.items()) if self.solver else (),
                tuple(self.actuator_values.items()) if self.actuator_values else (),
                tuple((k, v[0], v[1].tobytes(), v[2].tobytes()) for k, v in self.nail_overrides.items())
                if self.nail_overrides else ())

    def compiled_scene(self) -> CompiledScene | None:
        """The tables of the compiled evaluation (:mod:`core.stepper`), current with the inputs, when this
        simulation's scene can use it (dynamic constraints formulation, point constraints, no controllers)."""
        if not self.compiled:
            return None
        ok = self._eligible.get(self.formulation)
        if ok is None:
            ok = self._eligible[self.formulation] = eligible(self.model, self.formulation, self.controllers)
        if not ok:
            return None
        key = self._inputs_key()
        if self._scene is None:
            self._scene = CompiledScene(self.model)
        if key != self._scene_key:
            self._scene.set_inputs(self.active, self.nail_overrides, self.actuator_values, self.pull, self.solver)
            self._scene_key = key
            self._raw = None
        return self._scene

    def _raw_now(self, scene: CompiledScene):
        """The compiled evaluation at the current state (computed once per state)."""
        if self._raw is None or self._raw_state is not self.state:
            s = self.state
            raw, ok = scene.evaluate(s.t, s.q, s.qd)
            if not ok:
                raise DivergenceError(f"the dynamics could not be evaluated near t = {s.t:.6g} s (non-finite "
                                      f"accelerations); the state is diverging")
            self._raw, self._raw_state, self._raw_checked = raw, s, False
            if self._energy0 is None:                           # E(0) of the energy audit, as `data` sets it
                self._energy0 = self._energy(scene.data(raw))
        return self._raw

    def move_nail(self, name: str, position, velocity=(0.0, 0.0, 0.0)) -> None:
        """Put nail ``name`` at ``position`` moving with ``velocity`` (world) from now on (the studio's drag)."""
        if name not in self.model.constraint_names:
            raise KeyError(f"no constraint {name!r}; constraints: {', '.join(self.model.constraint_names)}")
        self.nail_overrides[name] = (self.state.t, np.array(position, dtype=float), np.array(velocity, dtype=float))
        self._data = None

    def set_actuator(self, name: str, value: float) -> None:
        """Command actuator ``name`` (clipped to its limit when applied)."""
        if name not in [f.name for f in self.model.forces]:
            raise KeyError(f"no force element {name!r}")
        self.actuator_values[name] = float(value)
        self._data = None

    def set_pull(self, body, point, target, stiffness: float = 50.0, damping: float = 5.0) -> None:
        """Pull body point ``point`` towards world ``target`` with a spring-damper (the studio's mouse spring);
        its work is booked as external. ``clear_pull()`` releases it."""
        k, r = self.model.resolve_point(body, point)
        self.pull = pull_force(k, r, target, stiffness, damping)
        self._data = None

    def clear_pull(self) -> None:
        self.pull = None
        self._data = None

    def set_formulation(self, name: str) -> None:
        """Switch formulation (dynamic_constraints, projection, multipliers) at the next step boundary."""
        if name not in FORMULATIONS:
            raise ValueError(f"unknown formulation {name!r}; choose one of {', '.join(FORMULATIONS)}")
        self.formulation = name
        self._data = None

    def set_active(self, name: str, on: bool) -> None:
        """Enable or remove a constraint at the next step boundary (named constraints added or removed at run
        time, Kearney et al.)."""
        self.active[self.model.constraint_names.index(name)] = bool(on)
        self._data = None

    def controller(self, name: str):
        """The controller named ``name`` (this simulation's copy, whose gains :meth:`set_controller_parameter`
        edits)."""
        for c in self.controllers:
            if c.name == name:
                return c
        raise KeyError(f"no controller {name!r}; controllers: {', '.join(c.name for c in self.controllers)}")

    def set_controller_parameter(self, name: str, parameter: str, value) -> None:
        """Edit a controller gain (kp, kd, eta, sigma, torque_limit, enabled …) from the next step on; its
        adaptive state is kept. :meth:`reset` restores the scene's values."""
        self.controller(name).set_parameter(parameter, value)
        self._data = None

    def controller_state(self, name: str) -> np.ndarray:
        """The slice of ``state.z`` that belongs to controller ``name`` (its adaptive parameters, integrals)."""
        i = [c.name for c in self.controllers].index(self.controller(name).name)
        return self.state.z[self._z_slices[i]]

    # ---- evaluation ---------------------------------------------------------------------------------------
    def _control_input(self, t, q, qd) -> ControlInput:
        def external():                                 # the force elements' generalized force (a force sensor)
            extra = () if self.pull is None else (self.pull,)
            kin = link_kinematics(self.model, q, qd)
            return applied_forces(self.model, kin, q, qd, t, self.model.forces + extra, self.actuator_values).tau
        return ControlInput(self.model, t, q, qd, self.active, self.nail_overrides, external)

    def evaluate(self, t: float, q: np.ndarray, qd: np.ndarray, energies: bool = True,
                 z: np.ndarray | None = None) -> Data:
        """Accelerations and diagnostics at (t, q, qd) under the current inputs and active constraints; the
        controllers (if any) act with their state ``z`` (default: the current ``state.z``)."""
        scene = self.compiled_scene()
        if scene is not None:
            return scene.data(scene.evaluate(t, q, qd)[0])
        tau_c, z_rate = None, np.zeros(0)
        if self.controllers:
            z = self.state.z if z is None else z
            tau_c, z_rate = control_stage(self.controllers, self._z_slices, self._control_input(t, q, qd), z)
        d = evaluate(self.model, t, q, qd, self.active, self.nail_overrides, self.actuator_values, self.solver,
                     energies, self.formulation, () if self.pull is None else (self.pull,), tau_c)
        d.controller_rate = z_rate
        return d

    def _f(self, t, q, qd, w=None):
        """The integrators' right-hand side: ``(q̈, [work rates, ż])`` at a stage whose auxiliary vector is
        ``w = [work, z]``."""
        z = None if w is None else w[self.work.size:]
        d = self.evaluate(t, q, qd, energies=False, z=z)
        return d.qdd, np.concatenate([d.power, d.controller_rate])

    @property
    def data(self) -> Data:
        """Everything derived at the current state (computed once, reused as the first stage of the next step)."""
        if self._data is None:
            s = self.state
            scene = self.compiled_scene()
            self._data = scene.data(self._raw_now(scene)) if scene is not None else self.evaluate(s.t, s.q, s.qd)
            if self._energy0 is None:
                self._energy0 = self._energy(self._data)
        return self._data

    @staticmethod
    def _energy(d: Data) -> float:
        return d.energy_kinetic + d.energy_gravity + d.energy_elastic

    def energy_error(self) -> float:
        """E(t) − E(0) − Σ work − corrections: the integration error of the energy books."""
        d = self.data
        return self._energy(d) - self._energy0 - float(self.work.sum()) - self.correction_energy

    # ---- stepping -----------------------------------------------------------------------------------------
    def _break_constraints(self) -> None:
        """Remove every active constraint whose deviation exceeds its bound (thesis §2.3.4), logging an event."""
        d = self.data
        broken = [i for i, c in enumerate(self.model.constraints)
                  if self.active[i] and d.deviation[i] > c.max_deviation]
        for i in broken:
            c = self.model.constraints[i]
            self.active[i] = False
            self.events.append({"t": self.state.t, "type": "break", "constraint": c.name,
                                "deviation": float(d.deviation[i]), "max_deviation": c.max_deviation})
        if broken:
            self._data = None

    def step(self, dt_max: float | None = None) -> State:
        """Advance one step (``dt``, or one accepted adaptive step no longer than ``dt_max``); raises
        :class:`DivergenceError` with the state unchanged if the result is not finite."""
        scene = self._compiled_step()
        if scene is not None:
            self._compiled_steps(scene, dt_max, 1)              # compiled: no NumPy warnings to silence
            return self.state
        with np.errstate(all="ignore"):                         # divergence is detected below, not warned about
            saved = (self.state, self.work, self._data)
            try:
                self._step(dt_max)
                return self.state
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                # a state that is finite but so large that the next evaluation overflows is divergence too
                self.state, self.work, self._data = saved
                raise DivergenceError(f"the dynamics could not be evaluated near t = {self.state.t:.6g} s "
                                      f"({type(exc).__name__}: {exc}); the state is diverging") from exc

    def _compiled_step(self) -> CompiledScene | None:
        """The compiled scene when whole RK4 steps run compiled (see :meth:`compiled_scene`)."""
        return self.compiled_scene() if self.integrator == "rk4" else None

    def _compiled_steps(self, scene: CompiledScene, dt_max, n_steps: int) -> int:
        """Up to ``n_steps`` compiled RK4 steps (fewer when an event or divergence stops the kernel); returns the
        number taken."""
        raw = self._raw_now(scene)
        if not self._raw_checked and (np.any(self.active & (scene.deviation(raw) > self._max_deviation))
                                      or scene.deficient(raw) != self._rank_deficient):
            self._break_constraints()                       # events: logged from the Data at this state
            self._log_rank()
            scene = self._compiled_step()
            raw = self._raw_now(scene)
        self._raw_checked = True
        s = self.state
        h = self.dt if dt_max is None else min(self.dt, dt_max)
        q, qd, work, steps, status, raw = scene.step(s.t, s.q, s.qd, self.work, h, n_steps, raw,
                                                     self._rank_deficient)
        if steps == 0:
            self._raw = None                                    # the kernel overwrote it with the failed step's
            raise DivergenceError(f"the step from t = {s.t:.6g} s (dt = {h:g} s) gave a non-finite state or "
                                  f"dynamics; the state is diverging")
        t = s.t
        for _ in range(steps):
            t += h
        self.state = State(t, q, qd, s.z)
        self.work = work
        self._data = None
        self._raw, self._raw_state = (raw if status != 2 else None), self.state
        self._raw_checked = status == 0                     # the kernel saw no event at the new state
        self.steps_taken += steps
        return steps

    def _step(self, dt_max) -> None:
        """One step on the Python path (any integrator and formulation)."""
        self._break_constraints()
        self._log_rank()
        s, d = self.state, self.data
        k1 = (d.qdd, np.concatenate([d.power, d.controller_rate]))
        w = np.concatenate([self.work, s.z])                    # the auxiliary vector: work integrals, then z
        if self.integrator in FIXED_STEP:
            h = self.dt if dt_max is None else min(self.dt, dt_max)
            q, qd, dw = FIXED_STEP[self.integrator](self.model, self._f, s.t, s.q, s.qd, h, k1, w)
        else:
            q, qd, dw, h = self._adaptive_step(s, k1, dt_max, w)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.isfinite(dw))):
            raise DivergenceError(f"the step from t = {s.t:.6g} s (dt = {h:g} s) gave a non-finite state; the "
                                  f"state is diverging")
        nw = self.work.size
        self.state = State(s.t + h, q, qd, s.z + dw[nw:])
        self.work = self.work + dw[:nw]
        if self.formulation == "projection" and self.active.any():
            self._project()                                     # Aghili's drift removal, before the step's Data
        self._data = None
        self.data                                               # evaluate now, so an overflow counts as this step's
        self.steps_taken += 1

    def _project(self) -> None:
        """Aghili's drift removal after a step; its energy change is booked as ``work_corrections``."""
        s = self.state
        q, qd, self.projection_iterations, _ = project_state(
            self.model, s.t, s.q, s.qd, self.active, self.nail_overrides, self.model.settings.get("projection", {}))
        if np.all(np.isfinite(q)) and np.all(np.isfinite(qd)):
            self.correction_energy += (total_energy(self.model, s.t, q, qd)
                                       - total_energy(self.model, s.t, s.q, s.qd))
            self.state = State(s.t, q, qd, s.z)

    def _log_rank(self) -> None:
        """Log when the constraint Jacobian loses or regains row rank (redundant or singular constraints)."""
        d = self.data
        if d.rank_deficient != self._rank_deficient:
            self._rank_deficient = d.rank_deficient
            rows = sum(c.rows for c, on in zip(self.model.constraints, self.active) if on)
            self.events.append({"t": self.state.t, "type": "rank_deficient" if d.rank_deficient else "full_rank",
                                "jacobian_rank": int(d.jacobian_rank), "rows": rows,
                                "formulation": self.formulation})

    def _adaptive_step(self, s: State, k1, dt_max, w):
        """Cash–Karp step with error control (on q, q̇ and the controllers' state z): shrink until the scaled
        error is ≤ 1, then grow (≤ 5x)."""
        limit = self.dt if dt_max is None else min(self.dt, dt_max)
        h = min(self._h, limit)
        nw = self.work.size
        while True:
            (q, qd, dw), (eq, ev, ew) = ADAPTIVE[self.integrator](self.model, self._f, s.t, s.q, s.qd, h, k1, w)
            z = s.z + dw[nw:]
            scale = self.tolerance * np.concatenate([1.0 + np.abs(q), 1.0 + np.abs(qd), 1.0 + np.abs(z)])
            err = float(np.max(np.abs(np.concatenate([eq, ev, ew[nw:]])) / scale)) if scale.size else 0.0
            if err <= 1.0 or h < 1e-12:
                grow = 5.0 if err == 0 else min(5.0, max(1.0, 0.9 * err ** -0.2))
                self._h = min(h * grow, self.dt)
                return q, qd, dw, h
            if not np.isfinite(err):
                h *= 0.1
            else:
                h *= max(0.1, 0.9 * err ** -0.25)

    # ---- runs ---------------------------------------------------------------------------------------------
    def record(self, records: Records) -> None:
        """Append the current state and everything derived at it."""
        s, d = self.state, self.data
        E = self._energy(d)
        K = len(self.model.constraints)
        records.append(
            t=s.t, q=s.q, qd=s.qd,
            energy_kinetic=d.energy_kinetic, energy_potential=d.energy_gravity + d.energy_elastic,
            energy_gravity=d.energy_gravity, energy_elastic=d.energy_elastic, energy_total=E,
            work_constraints=self.work[:K], work_total_constraints=self.work[:K].sum(),
            **{f"work_{name}": self.work[K + n] for n, name in enumerate(POWER_SOURCES)},
            work_corrections=self.correction_energy,
            energy_error=E - self._energy0 - self.work.sum() - self.correction_energy,
            jacobian_rank=d.jacobian_rank, rank_deficient=float(d.rank_deficient),
            projection_iterations=self.projection_iterations,
            constraint_force=d.constraint_force, constraint_force_magnitude=d.constraint_force_magnitude,
            deviation=d.deviation, deviation_rate=d.deviation_rate, residual=d.residual,
            singular_values=d.singular_values, rank=d.rank, dropped=d.dropped,
            singular_value_cutoff=d.singular_value_cutoff,
            active=self.active.astype(float))
        if self.controllers:
            records.append(**self.controller_diagnostics())

    def controller_diagnostics(self) -> dict[str, np.ndarray]:
        """Per controller, at the current state: ``tracking_error_<name>`` (e = q − q_d), ``desired_<name>``,
        ``sliding_variable_<name>`` (s), ``s_energy_<name>`` (½ sᵀMs), ``torque_<name>`` (nv) and
        ``parameters_<name>`` (the adaptive parameters, fig. 3.10)."""
        s = self.state
        inp = self._control_input(s.t, s.q, s.qd)
        out = {}
        for c, sl in zip(self.controllers, self._z_slices):
            for key, value in c.diagnostics(inp, s.z[sl]).items():
                out[f"{key}_{c.name}"] = value
        return out

    def run(self, duration: float, record_every: int = 1, progress: bool = False) -> dict[str, np.ndarray]:
        """Step until ``duration`` more seconds of simulated time have passed; returns the recorded time series
        as arrays (see :meth:`record`; per-constraint arrays have one column per constraint, in
        ``model.constraint_names`` order)."""
        t_end = self.state.t + duration
        records = Records()
        self.record(records)
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=round(duration, 9), unit="s", desc=self.model.name, leave=False,
                       bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} s [{elapsed}<{remaining}]")
        start = time.perf_counter()
        n = 0
        shown = self.state.t
        while self.state.t < t_end - 1e-12 * max(1.0, abs(t_end)):
            batch = record_every - n % record_every
            scene = self._compiled_step() if batch > 1 else None
            if scene is not None:                               # whole batches in one compiled call
                batch = min(batch, int((t_end - self.state.t) / self.dt + 1e-9) - 1)
            if scene is not None and batch > 1:
                n += self._compiled_steps(scene, None, batch)
            else:
                self.step(dt_max=t_end - self.state.t)
                n += 1
            if n % record_every == 0 or self.state.t >= t_end - 1e-12 * max(1.0, abs(t_end)):
                self.record(records)
            if bar is not None and self.state.t - shown >= 0.01 * duration:
                bar.update(self.state.t - shown)
                shown = self.state.t
        if bar is not None:
            bar.close()
        self.wall_time += time.perf_counter() - start
        return records.arrays()
