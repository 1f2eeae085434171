"""The Python console's ``sim``: a handle on the live simulation, which belongs to the worker thread.

Thread: GUI. The handle never touches the simulation itself. A read (``time``, ``state``, ``model``, or any
``call(f)``) is a function the worker runs between two steps (:meth:`SimulationThread.call
<studio.qt.run.simthread.SimulationThread.call>`), so it sees one state and returns copies; stepping is the
worker's own STEP, which records every step, checks for divergence and sends the records to the GUI as a step from
the toolbar does, so the plots show it and :meth:`SimulationHandle.records` has it. Every method waits for the
worker's answer, so ``sim.step(100); sim.time`` reads the time after the hundred steps.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SimulationHandle"]


class SimulationHandle:
    """GUI thread. ``sim_thread`` (:class:`~studio.qt.run.simthread.SimulationThread`) runs the simulation;
    ``run_records`` (:class:`~studio.run.runrecords.RunRecords`) keeps every step's records on the GUI side."""

    def __init__(self, sim_thread, run_records):
        self._thread, self._records = sim_thread, run_records

    # ---- reading -------------------------------------------------------------------------------------------
    @property
    def time(self) -> float:
        """Simulated time now (s)."""
        return self.call(lambda s: float(s.state.t))

    @property
    def state(self):
        """A copy of the state now (``t``, ``q``, ``qd``)."""
        return self.call(lambda s: s.state.copy())

    @property
    def model(self):
        """The frozen ``core.Model`` the simulation runs now (an edit that changes the structure makes a new one)."""
        return self.call(lambda s: s.model)

    def records(self) -> dict[str, np.ndarray]:
        """Every step's records of the run up to now (the columns of ``core.records``: ``t``, ``q``, ``qd``,
        constraint forces, energies …; read-only arrays), as far back as the studio keeps them (512 MiB) and
        since the scene's structure last changed."""
        self.call(lambda s: None)                 # everything stepped so far has reached the GUI
        segments = self._records.segments
        return segments[-1].arrays() if segments else {}

    def call(self, function):
        """``function(simulation)`` run on the worker thread between two steps, and its result. ``simulation`` is
        the live ``core.Simulation``: read from it and return copies (arrays of it change with the next step);
        to change the run, use the methods here or the document (``doc``)."""
        if not callable(function):
            raise TypeError(f"sim.call needs a function of the simulation, got {type(function).__name__}")
        return self._thread.call(function)

    # ---- running -------------------------------------------------------------------------------------------
    def step(self, n: int = 1) -> float:
        """Pause and advance ``n`` time steps (fewer if the run diverges: it pauses at the last good state and
        the Messages dock says why); the simulated time reached."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"sim.step(n) needs a whole number of steps n >= 1, got {n!r}")
        self._thread.step(int(n))
        return self.time

    def play(self) -> None:
        self._thread.play()

    def pause(self) -> float:
        """Pause; the simulated time it paused at."""
        self._thread.pause()
        return self.time

    def reset(self) -> None:
        """Pause and go back to the initial state (a new run: the plots start clean)."""
        self._thread.reset()
        self.call(lambda s: None)

    def seek(self, t: float) -> float:
        """Pause and go to the stored state at simulated time ``t`` (as the timeline does); the time reached."""
        self._thread.seek(float(t))
        return self.time

    def __repr__(self) -> str:
        snap = self._thread.latest
        if snap is None:
            return "<sim: not started yet (the physics kernels are loading)>"
        name = getattr(getattr(snap.model, "spec", None), "name", "")
        return f"<sim {name!r}: t = {snap.t:.6g} s, {snap.steps} steps, {'playing' if snap.playing else 'paused'}>"
