"""A simulation: a Model, its State, and the step that advances it. The command line and the studio both use
this class, so a scene runs the same way headless and on screen.

The step pipeline (DESIGN.md): applied forces → dynamics (ABA) → integrate. Later stages (controllers,
constraints, events) slot in at :meth:`Simulation.accelerations`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .aba import forward_dynamics
from .energy import kinetic_energy, potential_energy
from .integrators import INTEGRATORS
from .model import Model, State

__all__ = ["Simulation", "Records", "DivergenceError"]


class DivergenceError(RuntimeError):
    """The state became non-finite; the simulation keeps its last good state."""


@dataclass
class Records:
    """Time series of a run, one row per recorded step (arrays after :meth:`arrays`)."""
    columns: dict[str, list] = field(default_factory=dict)

    def append(self, **values) -> None:
        for key, value in values.items():
            self.columns.setdefault(key, []).append(np.array(value, dtype=float, copy=True))

    def arrays(self) -> dict[str, np.ndarray]:
        return {key: np.array(values) for key, values in self.columns.items()}


class Simulation:
    """Owns a :class:`State` of ``model`` and advances it with a fixed-step integrator.

    ``dt`` and ``integrator`` default to the scene's ``simulation`` settings (1 ms, RK4).
    """

    def __init__(self, model: Model, dt: float | None = None, integrator: str | None = None):
        self.model = model
        self.dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
        name = integrator or model.settings.get("integrator", "rk4")
        if name not in INTEGRATORS:
            raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATORS)}")
        if not self.dt > 0:
            raise ValueError(f"time step must be positive, got {self.dt}")
        self.integrator = name
        self._step_fn = INTEGRATORS[name]
        self.tau = np.zeros(model.nv)
        self.state = model.initial_state()

    def reset(self) -> None:
        self.state = self.model.initial_state()

    def accelerations(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """``q̈`` at (t, q, qd) under gravity and the joint forces ``self.tau`` (ABA)."""
        return forward_dynamics(self.model, q, qd, self.tau)

    def step(self) -> State:
        """Advance one ``dt``; raises :class:`DivergenceError` (state unchanged) if the result is not finite."""
        s = self.state
        q, qd = self._step_fn(self.model, self.accelerations, s.t, s.q, s.qd, self.dt)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            raise DivergenceError(f"non-finite state after the step from t = {s.t:.6g} s (dt = {self.dt:g} s)")
        self.state = State(s.t + self.dt, q, qd)
        return self.state

    def energies(self, state: State | None = None) -> dict[str, float]:
        s = state or self.state
        ke = kinetic_energy(self.model, s.q, s.qd)
        pe = potential_energy(self.model, s.q)
        return {"energy_kinetic": ke, "energy_potential": pe, "energy_total": ke + pe}

    def _record(self, records: Records) -> None:
        s = self.state
        records.append(t=s.t, q=s.q, qd=s.qd, **self.energies())

    def run(self, duration: float, record_every: int = 1, progress: bool = False) -> dict[str, np.ndarray]:
        """Step for ``duration`` seconds of simulated time; returns the recorded time series as arrays
        (``t``, ``q``, ``qd``, ``energy_kinetic``, ``energy_potential``, ``energy_total``)."""
        n_steps = int(round(duration / self.dt))
        records = Records()
        self._record(records)
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=n_steps, unit="step", desc=self.model.name, leave=False)
        start = time.perf_counter()
        for n in range(1, n_steps + 1):
            self.step()
            if n % record_every == 0 or n == n_steps:
                self._record(records)
            if bar is not None and n % 100 == 0:
                bar.update(100)
        if bar is not None:
            bar.close()
        self.wall_time = time.perf_counter() - start
        self.steps_taken = n_steps
        return records.arrays()
