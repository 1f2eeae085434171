"""The status bar: simulated time, the real-time factor achieved (and asked for), the cost per step (every scene
runs on the core's one compiled pipeline, in batches: there is no slower path to report) and the energy audit's
error; messages (a divergence, a broken constraint, a saved file) on its left, and what keeps the simulation busy
(the kernels compiling or loading on first use) with the seconds it has taken, which stays until it is done.

Thread: GUI. :class:`StatusBar` only formats what snapshots and messages say. Every message it is given is also
posted to its :class:`~studio.run.notices.NoticeLog` (``log``), which the Messages dock lists: notes as
information, errors as errors, and what keeps the simulation busy as one notice whose seconds count up in place.
"""
from __future__ import annotations

import math
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QStatusBar

from studio.run.notices import NoticeLog, Severity

__all__ = ["StatusBar"]

ERROR_STYLE = "QStatusBar { color: #ff8a75; }"


class StatusBar(QStatusBar):
    """GUI thread. ``time_label``, ``rate_label``, ``cost_label`` and ``energy_label`` are permanent widgets;
    ``log`` (default: a new one) keeps every message shown."""

    def __init__(self, parent=None, log: NoticeLog | None = None):
        super().__init__(parent)
        self.log = log if log is not None else NoticeLog()
        self.time_label = self._label("time_label", "t = 0.000 s", "Simulated time")
        self.rate_label = self._label("rate_label", "paused", "Real-time factor achieved (simulated seconds per "
                                      "wall-clock second) and the one asked for")
        self.cost_label = self._label("cost_label", "", "Wall-clock cost of one time step, averaged. Every scene runs "
                                      "on the core's one compiled pipeline, a frame's worth of steps per call")
        self.energy_label = self._label("energy_label", "", "Energy audit: E(t) − E(0) − work of every "
                                        "non-conservative source; only integration error should remain")
        for label in (self.energy_label, self.cost_label, self.rate_label, self.time_label):
            self.addPermanentWidget(label)
        self._busy = ""
        self._busy_text = ""             # what the busy message says, without the seconds the counter adds
        self._busy_since: float | None = None
        self._busy_notice = None
        self._counter = QTimer(self)
        self._counter.setInterval(1000)
        self._counter.timeout.connect(self._count)
        self.messageChanged.connect(self._message_changed)

    def _label(self, name: str, text: str, tip: str) -> QLabel:
        label = QLabel(text)
        label.setObjectName(name)
        label.setToolTip(tip)
        return label

    def show_snapshot(self, snap) -> None:
        self.time_label.setText(f"t = {snap.t:.3f} s")
        asked = "as fast as possible" if math.isinf(snap.speed) else f"{snap.speed:g}×"
        if snap.playing and snap.realtime_factor is not None:
            self.rate_label.setText(f"{snap.realtime_factor:.2f}× real time (asked {asked})")
        elif not snap.playing:
            self.rate_label.setText(f"paused · {snap.steps} step{'' if snap.steps == 1 else 's'}")
        cost = "" if snap.step_cost is None else f"{_milliseconds(snap.step_cost)}/step"
        self.cost_label.setText(f"compiled · {cost}" if cost and snap.batched else cost)
        self.energy_label.setText("" if not math.isfinite(snap.energy_error) else
                                  f"energy error {snap.energy_error:+.2e} J (?)")
        self.energy_label.setToolTip(energy_tooltip(snap))

    def clear_error(self) -> None:
        """Take away a red message (the state it spoke of is gone: a reset, an undo)."""
        if self.styleSheet() == ERROR_STYLE:
            self.setStyleSheet("")
            self.clearMessage()

    def error(self, message: str, source: str = "studio") -> None:
        """A message that stays until the next one (the simulation paused, a command failed)."""
        self.setStyleSheet(ERROR_STYLE)
        self.showMessage(message)
        self.log.post(message, Severity.ERROR, source=source)

    def note(self, message: str, timeout_ms: int = 8000, severity: Severity = Severity.INFO,
             source: str = "studio", t: float | None = None) -> None:
        """A message shown for ``timeout_ms`` ("" clears the bar and is not logged); ``t``: the simulated time it
        speaks of (None: the latest snapshot's)."""
        self.setStyleSheet("")
        self.showMessage(message, timeout_ms)
        if message:
            self.log.post(message, severity, t, source)

    @property
    def busy_message(self) -> str:
        return self._busy

    def busy(self, message: str) -> None:
        """What the worker is busy with, shown with the seconds since it came, counted up, until ``busy("")`` (a
        note or an error shown meanwhile hides it only until it times out or is cleared). In the log, each busy
        message is one notice, revised in place as its seconds count, and ending with how long it took."""
        was = self._busy
        if message != self._busy_text:
            self._finish_busy_notice()
            self._busy_since = time.monotonic()
        self._busy_text = message
        if not message:
            self._busy, self._busy_since = "", None
            if was and self.currentMessage() == was:
                self.clearMessage()
            return
        self._busy = self._counted()
        self._counter.start()
        self.setStyleSheet("")
        self.showMessage(self._busy)
        if self._busy_notice is None:
            self._busy_notice = self.log.post(self._busy, source="kernels")
        else:
            self._busy_notice = self.log.revise(self._busy_notice, self._busy)

    def _counted(self) -> str:
        return f"{self._busy_text} {time.monotonic() - self._busy_since:.0f} s"

    def _finish_busy_notice(self) -> None:
        """The busy message's notice is done: it says how long it took."""
        self._counter.stop()
        if self._busy_notice is not None:
            self.log.revise(self._busy_notice, f"{self._busy_text} done in "
                                               f"{time.monotonic() - self._busy_since:.0f} s")
        self._busy_notice = None

    def _count(self) -> None:
        """A second more: the busy message counts it (where it is shown: a note shown over it stays)."""
        shown, self._busy = self.currentMessage() == self._busy, self._counted()
        if shown:
            self.showMessage(self._busy)
        self._busy_notice = self.log.revise(self._busy_notice, self._busy)

    def _message_changed(self, text: str) -> None:
        if not text and self._busy:
            self.showMessage(self._busy)


def energy_tooltip(snap) -> str:
    """The energy audit's books at a snapshot, and where an error comes from (rich text)."""
    head = ("<b>Energy audit</b> (thesis §2.3.2): E(t) − E(0) − the work of every non-conservative source − the "
            "projection's corrections. With every source booked, only integration error should remain.")
    rows = "".join(f"<tr><td>{label}</td><td align='right'>&nbsp;{value:+.6g} J</td></tr>"
                   for label, value in getattr(snap, "energy", ()) or ())
    why = []
    dropped = getattr(snap, "dropped_at", None)
    if dropped is not None:
        first, last = dropped
        why.append(f"The solve dropped singular directions of A = J M⁻¹ Jᵀ from t = {first:.4g} s (a force over "
                   f"its max_force at a singular configuration) and last changed how many it dropped at t = "
                   f"{last:.4g} s. Where it changes, the constraint force jumps within one step (by orders of "
                   "magnitude); no fixed-step integrator follows a jump, and the books' error at those steps is "
                   "most of the error shown.")
    why.append("A jump where an edit is marked on the plots comes from the edit (a new stiffness changes E at "
               "once).")
    return f"<p>{head}</p><table>{rows}</table><p>{' '.join(why)}</p>"


def _milliseconds(seconds: float) -> str:
    ms = 1e3 * seconds
    return f"{ms:.3f} ms" if ms < 0.1 else f"{ms:.2f} ms"
