"""The states a run went through, kept so that the user can go back to one and run on from it.

Thread: worker (:class:`~studio.qt.run.worker.SimulationWorker` owns its :class:`Timeline`). Plain Python; no Qt.

A :class:`Keyframe` is a ``core.Simulation.snapshot()`` (state, inputs, events, energy reference) taken where a
batch of steps began, with the number of steps taken since the run began. Commands act only between batches,
so the inputs of a keyframe hold until the next one: going back to a keyframe and stepping on repeats the run
exactly, and with fixed steps (:mod:`studio.run.stepping`) any step between two keyframes is reached by restoring
the one before it and stepping on.

Memory: at most ``capacity`` keyframes (default :data:`CAPACITY`, 20 000). When the timeline is full, every
other keyframe older than the newest ``capacity // 4`` is dropped, so the recent past stays dense (one
keyframe a batch, about 60 per second of play at real time) and the whole run stays reachable, more coarsely
the older it is. A keyframe of the 20-link chain holds about 1.5 kB (q, q̇, work integrals, controller state,
flags and the shared, immutable inputs), so the timeline stays under 30 MB however long the run.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

__all__ = ["Keyframe", "Timeline", "CAPACITY"]

CAPACITY = 20_000


@dataclass(frozen=True)
class Keyframe:
    """Worker thread (frozen). ``snapshot`` (a ``core.Snapshot``) of the simulation at time ``t``, ``step``
    steps after the run began."""
    t: float
    step: int
    snapshot: object


class Timeline:
    """Worker thread. Keyframes of one run in time order, and the furthest time the run has reached (the end of
    the slider, which stays where it was while the user looks back)."""

    def __init__(self, capacity: int = CAPACITY):
        if capacity < 8:
            raise ValueError("a timeline keeps at least 8 keyframes")
        self.capacity = int(capacity)
        self.clear()

    def clear(self) -> None:
        self._frames: list[Keyframe] = []
        self._times: list[float] = []
        self.head_t = None              # the furthest time reached on the current branch
        self.head_step = 0

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def first_t(self) -> float | None:
        return self._times[0] if self._times else None

    def add(self, t: float, step: int, snapshot) -> None:
        """Keep the state at time ``t`` (the newest so far on this branch)."""
        if self._times and t <= self._times[-1]:
            if t == self._times[-1]:                       # the same instant again (a pause, an edit): the newest
                self._frames[-1] = Keyframe(t, step, snapshot)
                return
            self.truncate_after(t)
        self._frames.append(Keyframe(t, step, snapshot))
        self._times.append(t)
        self.reached(t, step)
        if len(self._frames) > self.capacity:
            self._thin()

    def reached(self, t: float, step: int) -> None:
        """The run has reached time ``t`` (step ``step``)."""
        if self.head_t is None or t >= self.head_t:
            self.head_t, self.head_step = t, step

    def at_or_before(self, t: float) -> Keyframe | None:
        """The newest keyframe at or before time ``t`` (the first one if ``t`` is earlier than all)."""
        if not self._frames:
            return None
        k = bisect.bisect_right(self._times, t + 1e-12 * max(1.0, abs(t))) - 1
        return self._frames[max(k, 0)]

    def after(self, keyframe: Keyframe) -> Keyframe | None:
        """The keyframe that follows ``keyframe`` (None for the newest)."""
        k = bisect.bisect_right(self._times, keyframe.t)
        return self._frames[k] if k < len(self._frames) else None

    def truncate_after(self, t: float) -> None:
        """Forget every keyframe after time ``t`` (the run goes on from an earlier state: a new branch)."""
        k = bisect.bisect_right(self._times, t)
        del self._frames[k:], self._times[k:]
        self.head_t = t
        self.head_step = self._frames[-1].step if self._frames else 0

    def _thin(self) -> None:
        keep_recent = self.capacity // 4
        old, recent = self._frames[:-keep_recent], self._frames[-keep_recent:]
        self._frames = old[::2] + recent
        self._times = [f.t for f in self._frames]
