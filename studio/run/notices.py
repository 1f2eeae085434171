"""The studio's log of notices: what it tells the user besides drawing — what an importer dropped from a robot
file, the kernels' first compile and how long it took, a divergence that paused the run, a saved file, a failed
command — each with its wall-clock time, the simulated time it speaks of (when it has one) and a severity.

Thread: any. :class:`NoticeLog` is plain Python behind a lock: the status bar posts to it on the GUI thread, a
scene loader on its own thread. Listeners are called on the thread that posts, outside the lock; the Messages
dock (:mod:`studio.qt.window.messages_dock`) hands them to the GUI thread. The log keeps the newest ``capacity``
notices (oldest first); a notice that reports progress (a compile's seconds) is replaced in place, keeping its
number, rather than added again.
"""
from __future__ import annotations

import enum
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable

from core.scene.robots import IMPORT_WARNINGS

__all__ = ["Severity", "Notice", "NoticeLog", "caught_import_warnings"]



class Severity(enum.IntEnum):
    """Any thread. How much a notice matters (ordered: a filter shows a level and those above it)."""

    INFO = 0
    WARNING = 1
    ERROR = 2


@dataclass(frozen=True)
class Notice:
    """Any thread (frozen). ``number`` counts the log's notices from 0 (a replaced notice keeps its number);
    ``wall`` the wall-clock time it was posted (``time.time()``); ``t`` the simulated time it speaks of, or None;
    ``source`` what said it (``"import"``, ``"kernels"``, ``"simulation"``, ``"studio"``)."""

    number: int
    wall: float
    t: float | None
    severity: Severity
    text: str
    source: str = "studio"

    def line(self) -> str:
        """One line of plain text: wall-clock time, simulated time, severity, what said it and the text."""
        clock = time.strftime("%H:%M:%S", time.localtime(self.wall))
        sim = "" if self.t is None else f"t = {self.t:.4f} s"
        return f"{clock}\t{sim}\t{self.severity.name.lower()}\t{self.source}\t{self.text}"


class NoticeLog:
    """Any thread. The newest ``capacity`` notices. ``sim_time``: a callable giving the simulated time a notice
    posted without one speaks of (the latest snapshot's; None: unknown)."""

    def __init__(self, capacity: int = 1000, sim_time: Callable[[], float | None] | None = None):
        if capacity < 1:
            raise ValueError(f"a notice log keeps at least one notice, got capacity {capacity}")
        self.capacity = int(capacity)
        self.sim_time = sim_time
        self._notices: deque[Notice] = deque(maxlen=self.capacity)
        self._count = 0
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Notice], None]] = []

    def __len__(self) -> int:
        return len(self._notices)

    def notices(self) -> list[Notice]:
        """The notices kept, oldest first (a copy)."""
        with self._lock:
            return list(self._notices)

    def subscribe(self, listener: Callable[[Notice], None]) -> None:
        """Call ``listener(notice)`` for every notice posted or replaced from now on (on the posting thread)."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[Notice], None]) -> None:
        self._listeners.remove(listener)

    def post(self, text: str, severity: Severity = Severity.INFO, t: float | None = None,
             source: str = "studio") -> Notice:
        """Add a notice (``t`` None: the simulated time ``sim_time`` gives) and return it."""
        if t is None and self.sim_time is not None:
            t = self.sim_time()
        with self._lock:
            notice = Notice(self._count, time.time(), None if t is None else float(t), Severity(severity),
                            str(text), source)
            self._count += 1
            self._notices.append(notice)
        self._tell(notice)
        return notice

    def revise(self, notice: Notice, text: str, severity: Severity | None = None) -> Notice:
        """Replace ``notice``'s text (progress: the seconds a compile has taken) and return the new notice, which
        keeps its number and times. A notice no longer kept is posted again."""
        with self._lock:
            for i in range(len(self._notices) - 1, -1, -1):
                if self._notices[i].number == notice.number:
                    new = replace(self._notices[i], text=str(text),
                                  severity=self._notices[i].severity if severity is None else Severity(severity))
                    self._notices[i] = new
                    break
            else:
                new = None
        if new is None:
            return self.post(text, notice.severity if severity is None else severity, notice.t, notice.source)
        self._tell(new)
        return new

    def text(self, notices=None) -> str:
        """``notices`` (default: all kept) as tab-separated lines, for the clipboard."""
        return "\n".join(n.line() for n in (self.notices() if notices is None else notices))

    def _tell(self, notice: Notice) -> None:
        for listener in tuple(self._listeners):
            listener(notice)


def caught_import_warnings(call: Callable, *args, **kwargs) -> tuple:
    """``(call(*args, **kwargs), notes)``: the result and the texts of the importer warnings (:data:`IMPORT_WARNINGS`)
    it raised, every one (Python shows a warning once per place; the log wants each import's). Other warnings go on
    to Python's handling. Warnings' filters are process-wide: call this on one thread at a time."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call(*args, **kwargs)
    notes = []
    for w in caught:
        if w.category.__name__ in IMPORT_WARNINGS:
            notes.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return result, list(dict.fromkeys(notes))       # (a file read twice, for its spec and its model, says it once)
