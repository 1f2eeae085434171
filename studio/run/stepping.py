"""Advancing a ``core.Simulation`` by whole steps, so that how a run is cut into batches never changes it.

Thread: any (the worker and the headless commands call it on the thread that owns the simulation). Plain Python
over the core's public ``Simulation.run``; no Qt.

``Simulation.run(duration)`` stops at ``t + duration`` and shortens its last step to land there. The studio runs
a scene in batches of a frame's worth of steps, stops at recording frames and at the steps a user seeks to; had
each batch ended on ``t + n·dt`` (rounded), its last step would differ from ``dt`` in the last bits and the run
would drift, in its last digits, from the same scene run by ``python -m core run`` in one call. With a fixed
step (RK4, semi-implicit Euler), :func:`run_steps` therefore ends each batch at the time the integrator itself
reaches after ``n`` steps of exactly ``dt`` (``t`` added up ``n`` times, as the compiled loop adds it), plus a
margin well inside the loop's own tolerance (1e-12 of t): no step is shortened, and a run cut into any batches
is bit for bit the run made in one call (``tests/test_studio_timeline.py``). With adaptive steps (Cash–Karp) the
step sizes depend on where batches end, and a batch ends at ``t + n`` average steps.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["fixed_step", "grid_time", "run_steps", "steps_to", "MARGIN"]

#: Fraction of the compiled loop's end tolerance (1e-12 · max(1, |t|)) left as a margin past the last grid time.
MARGIN = 0.25e-12


def fixed_step(sim) -> bool:
    """Whether ``sim`` takes steps of exactly ``dt`` (every integrator but the adaptive Cash–Karp)."""
    return getattr(sim, "integrator", "rk4") != "cash_karp"


def grid_time(t: float, dt: float, n: int) -> float:
    """The time after ``n`` steps of ``dt`` from ``t``, added up as the integrator adds it."""
    for _ in range(int(n)):
        t = t + dt
    return t


def steps_to(sim, t_target: float) -> int:
    """The number of fixed steps from ``sim``'s time to the first grid time at or after ``t_target`` (0 if
    already there)."""
    t, dt = sim.state.t, sim.dt
    if t_target <= t + 0.5e-12 * max(1.0, abs(t)):
        return 0
    n = max(1, math.ceil((t_target - t) / dt - 1e-9))
    while n > 1 and grid_time(t, dt, n - 1) >= t_target:
        n -= 1
    while grid_time(t, dt, n) < t_target - 1e-12 * max(1.0, abs(t_target)):
        n += 1
    return n


def run_steps(sim, n: int, span: float | None = None, until: float | None = None) -> dict:
    """Advance ``sim`` by ``n`` steps (fixed step: exactly; adaptive: ``n`` × ``span``, its average step, and
    not past ``until``) and return the records of ``Simulation.run`` (row 0: the state it started from, then
    every step). Raises what ``run`` raises (``core.DivergenceError``)."""
    t = sim.state.t
    if fixed_step(sim):
        end = grid_time(t, sim.dt, n)
        end += MARGIN * max(1.0, abs(end))
    else:
        end = t + n * (span if span is not None and span > 0 else sim.dt)
        if until is not None and t < until < end:
            end = until
    with np.errstate(all="ignore"):
        return sim.run(end - t, record_every=1)
