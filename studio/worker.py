"""The simulation worker and the immutable messages that cross between it and the GUI.

Thread: :class:`SimulationWorker` lives on its own QThread (moved there by :class:`studio.simthread.SimulationThread`)
and is the only owner of the simulation it is given: nothing else reads or writes its state. :class:`Command` and
:class:`Snapshot` are immutable values, safe on any thread.

Flow (DESIGN.md "Threading in the studio"): the GUI puts ordered :class:`Command` s on a ``queue.Queue``; the worker
drains the queue at the top of every iteration, so a command acts at a step boundary and none is ever dropped.
While playing it steps as long as simulated time is behind wall-clock time, but for at most ``step_share`` of each
display frame, and then emits one :class:`Snapshot` (so at most ``1 / frame_period`` a second). When it falls more
than ``max_lag`` behind it forgives the rest of the lag and runs slower than real time rather than catching up.
If a step raises or leaves a non-finite state, the worker restores the last good state, pauses and emits
``error``.
"""
from __future__ import annotations

import enum
import queue
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, QThread, Signal, Slot

__all__ = ["CommandKind", "Command", "Snapshot", "SimulationWorker"]

RATE_WINDOW = 0.5   # seconds over which the reported real-time factor is averaged


class CommandKind(enum.Enum):
    PLAY = "play"
    PAUSE = "pause"
    STEP = "step"      # pause, then advance exactly one time step
    RESET = "reset"    # pause, then go back to the initial state
    QUIT = "quit"      # leave the loop; the thread then finishes


@dataclass(frozen=True)
class Command:
    """One order from the GUI. ``value`` is for commands that carry data (none yet)."""
    kind: CommandKind
    value: Any = None


@dataclass(frozen=True)
class Snapshot:
    """What the GUI may know of the simulation at one instant: copies, never the worker's live arrays.

    ``t`` simulated time (s); ``q`` configuration (nq, read-only copy); ``steps`` steps taken since the last reset;
    ``playing``; ``realtime_factor`` simulated seconds per wall-clock second while playing, averaged over about
    ``RATE_WINDOW`` seconds (None when paused)."""
    t: float
    q: np.ndarray
    steps: int
    playing: bool
    realtime_factor: float | None = None


def _frozen_copy(a) -> np.ndarray:
    a = np.array(a, dtype=float, copy=True)
    a.setflags(write=False)
    return a


class SimulationWorker(QObject):
    """Worker thread. Runs ``simulation`` (anything with ``state`` (``t``, ``q``, ``qd``, ``copy()``), ``dt``,
    ``step()`` and ``reset()``, e.g. ``core.Simulation``) on the commands read from ``commands``.

    Signals (emitted on the worker thread; connect them to objects living on the GUI thread): ``snapshot``
    (:class:`Snapshot`), ``error`` (str), ``finished`` (after QUIT)."""

    snapshot = Signal(object)
    error = Signal(str)
    finished = Signal()

    def __init__(self, simulation, commands: queue.Queue, *, speed: float = 1.0, frame_period: float = 1 / 60,
                 step_share: float = 0.6, max_lag: float = 0.1, clock=time.perf_counter):
        super().__init__()
        self._sim = simulation
        self._commands = commands
        self.speed = float(speed)
        self.frame_period = float(frame_period)
        self.step_share = float(step_share)
        self.max_lag = float(max_lag)
        self._clock = clock
        self._playing = False
        self._steps = 0
        self._anchor_wall = self._anchor_t = 0.0       # sim time _anchor_t was reached at wall time _anchor_wall
        self._last_emit_wall = self._last_emit_t = 0.0
        self._rate: float | None = None                  # smoothed real-time factor while playing

    # ---- the loop ------------------------------------------------------------------------------------------
    @Slot()
    def run(self) -> None:
        """The worker's whole life: started by ``QThread.started``, returns after a QUIT command."""
        try:
            self._emit()
            next_frame = self._clock()
            while True:
                timeout = max(0.0, next_frame - self._clock()) if self._playing else None
                if not self._apply_commands(timeout):
                    break
                if self._playing and self._clock() >= next_frame:
                    frame_start = self._clock()
                    next_frame = frame_start + self.frame_period
                    self._advance(deadline=frame_start + self.step_share * self.frame_period)
                    self._emit()
        finally:
            self.finished.emit()
            QThread.currentThread().quit()   # thread-safe; lets the thread finish without the GUI's event loop

    def _apply_commands(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` s (forever if None) for a command, then apply every queued one in order.
        False on QUIT."""
        try:
            cmd = self._commands.get(timeout=timeout) if timeout is None or timeout > 0 else \
                self._commands.get_nowait()
        except queue.Empty:
            return True
        while True:
            if cmd.kind is CommandKind.QUIT:
                return False
            try:
                self._apply(cmd)
            except Exception as exc:   # a failing command must not kill the thread
                self._playing = False
                self.error.emit(f"{cmd.kind.value} failed: {type(exc).__name__}: {exc}")
                self._emit()
            try:
                cmd = self._commands.get_nowait()
            except queue.Empty:
                return True

    def _apply(self, cmd: Command) -> None:
        kind = cmd.kind
        if kind is CommandKind.PLAY:
            if not self._playing and self._check_finite():
                self._playing = True
                self._anchor_wall, self._anchor_t = self._clock(), self._sim.state.t
                self._last_emit_wall, self._last_emit_t = self._anchor_wall, self._anchor_t
        elif kind is CommandKind.PAUSE:
            self._playing = False
        elif kind is CommandKind.STEP:
            self._playing = False
            if self._check_finite():
                self._step_once()
        elif kind is CommandKind.RESET:
            self._playing = False
            self._sim.reset()
            self._steps = 0
        else:
            raise ValueError(f"unknown command {kind!r}")
        self._emit()

    # ---- stepping ------------------------------------------------------------------------------------------
    def _advance(self, deadline: float) -> None:
        """Step while simulated time is behind (wall time since play) × speed, until ``deadline``."""
        now = self._clock()
        target = self._anchor_t + (now - self._anchor_wall) * self.speed
        excess = (target - self._sim.state.t) / self.speed - self.max_lag
        if excess > 0:                      # too far behind the wall clock: forgive all but max_lag of it
            self._anchor_wall += excess
            target = self._anchor_t + (now - self._anchor_wall) * self.speed
        while self._playing and self._sim.state.t < target and self._clock() < deadline:
            self._step_once()

    def _step_once(self) -> bool:
        """One step; on an exception or a non-finite result restore the last good state, pause and report."""
        good = self._sim.state.copy()
        try:
            self._sim.step()
        except Exception as exc:
            self._sim.state = good
            self._diverged(f"{type(exc).__name__}: {exc}")
            return False
        if not self._state_is_finite():
            where = self._non_finite_entries()
            self._sim.state = good
            self._diverged(f"the step from t = {good.t:.6g} s gave a non-finite state ({where})")
            return False
        self._steps += 1
        return True

    def _check_finite(self) -> bool:
        if self._state_is_finite():
            return True
        self._playing = False
        self.error.emit(f"paused: the state at t = {self._sim.state.t:.6g} s is not finite "
                        f"({self._non_finite_entries()}); nothing was stepped")
        return False

    def _diverged(self, why: str) -> None:
        self._playing = False
        self.error.emit(f"paused at t = {self._sim.state.t:.6g} s, keeping the last good state: {why}")

    def _state_is_finite(self) -> bool:
        s = self._sim.state
        return bool(np.isfinite(s.t) and np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.qd)))

    def _non_finite_entries(self, limit: int = 4) -> str:
        s = self._sim.state
        bad = [f"q[{i}] = {v}" for i, v in enumerate(np.asarray(s.q)) if not np.isfinite(v)]
        bad += [f"qd[{i}] = {v}" for i, v in enumerate(np.asarray(s.qd)) if not np.isfinite(v)]
        if not np.isfinite(s.t):
            bad.insert(0, f"t = {s.t}")
        return ", ".join(bad[:limit]) + (f" and {len(bad) - limit} more" if len(bad) > limit else "")

    # ---- output --------------------------------------------------------------------------------------------
    def _emit(self) -> None:
        s = self._sim.state
        now = self._clock()
        factor = None
        if self._playing and now > self._last_emit_wall:
            # simulated / wall-clock time, smoothed over about RATE_WINDOW seconds
            rate = (s.t - self._last_emit_t) / (now - self._last_emit_wall)
            weight = min(1.0, (now - self._last_emit_wall) / RATE_WINDOW)
            factor = rate if self._rate is None else self._rate + weight * (rate - self._rate)
        self._rate = factor
        self._last_emit_wall, self._last_emit_t = now, s.t
        self.snapshot.emit(Snapshot(t=float(s.t), q=_frozen_copy(s.q), steps=self._steps, playing=self._playing,
                                    realtime_factor=factor))
