"""The status bar: simulated time, the real-time factor achieved (and asked for), the cost per step (every scene
runs on the core's one compiled pipeline, in batches: there is no slower path to report) and the energy audit's
error; messages (a divergence, a broken constraint, a saved file) on its left, and what keeps the simulation busy
(the kernels compiling on first use), which stays until it is done.

Thread: GUI. :class:`StatusBar` only formats what snapshots and messages say.
"""
from __future__ import annotations

import math

from PySide6.QtWidgets import QLabel, QStatusBar

__all__ = ["StatusBar"]

ERROR_STYLE = "QStatusBar { color: #ff8a75; }"


class StatusBar(QStatusBar):
    """GUI thread. ``time_label``, ``rate_label``, ``cost_label`` and ``energy_label`` are permanent widgets."""

    def __init__(self, parent=None):
        super().__init__(parent)
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

    def error(self, message: str) -> None:
        """A message that stays until the next one (the simulation paused, a command failed)."""
        self.setStyleSheet(ERROR_STYLE)
        self.showMessage(message)

    def note(self, message: str, timeout_ms: int = 8000) -> None:
        self.setStyleSheet("")
        self.showMessage(message, timeout_ms)

    @property
    def busy_message(self) -> str:
        return self._busy

    def busy(self, message: str) -> None:
        """What the worker is busy with (shown until ``busy("")``; a note or an error shown meanwhile hides it
        only until it times out or is cleared)."""
        was, self._busy = self._busy, message
        if message:
            self.setStyleSheet("")
            self.showMessage(message)
        elif was and self.currentMessage() == was:
            self.clearMessage()

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
