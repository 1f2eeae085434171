"""The timeline under the viewport: a slider over the stretch of simulated time the worker can go back to, the
current time, and a button back to the furthest time reached.

Thread: GUI. :class:`TimelineBar` shows each snapshot's ``t`` and ``timeline`` (first, furthest); dragging the
slider (or clicking along it, or its arrow keys) asks for ``seek_requested(t)``: the worker pauses and shows the
state it kept at that time (:mod:`studio.run.timeline`), and the viewport and plots follow. Playing from there runs
on from that state (a new branch; the plots keep the earlier try, faded).

Its labels have fixed sizes: a label whose text changes asks its parents for a new layout, and the main window's
layout, redone, repaints the window (the docks' area) and composes it once more — for every frame of the viewport.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QStyle, QToolButton, QWidget

__all__ = ["TimelineBar", "STEPS"]

STEPS = 10_000          # slider positions over the timeline


def _steady(label: QLabel, longest: str) -> QLabel:
    """``label`` sized once for the ``longest`` text it shows (module docstring)."""
    label.setFixedSize(label.fontMetrics().horizontalAdvance(longest) + 8, label.sizeHint().height())
    return label


class TimelineBar(QWidget):
    """GUI thread. ``seek_requested(float)``: the user picked a simulated time."""

    seek_requested = Signal(float)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("timeline_bar")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.setSpacing(6)
        self.time_label = _steady(QLabel("t = 0.000 s"), "t = 00000.000 s")
        self.time_label.setToolTip("The simulated time shown")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, STEPS)
        self.slider.setEnabled(False)
        self.slider.setToolTip("Timeline: drag to go back to any time of this run (the simulation pauses); play "
                               "to run on from there — the plots keep the earlier run, faded, to compare")
        self.slider.sliderMoved.connect(self._moved)
        self.slider.actionTriggered.connect(self._action)
        self.span_label = _steady(QLabel(""), "00000.00 – 00000.00 s")
        self.span_label.setStyleSheet("color: palette(mid);")
        self.latest_button = QToolButton()
        self.latest_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_MediaSeekForward))
        self.latest_button.setToolTip("Go to the furthest time reached")
        self.latest_button.setEnabled(False)
        self.latest_button.clicked.connect(lambda: self._seek(self.head))
        layout.addWidget(self.time_label)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.span_label)
        layout.addWidget(self.latest_button)
        self.first = self.head = 0.0
        self.t = 0.0

    def _to_time(self, position: int) -> float:
        return self.first + (self.head - self.first) * position / STEPS

    def _to_position(self, t: float) -> int:
        span = self.head - self.first
        return 0 if span <= 0 else round(STEPS * min(max((t - self.first) / span, 0.0), 1.0))

    def _moved(self, position: int) -> None:
        self._seek(self._to_time(position))

    def _action(self, _action) -> None:
        if not self.slider.isSliderDown():             # a click on the groove, page or arrow keys
            self._seek(self._to_time(self.slider.sliderPosition()))

    def _seek(self, t: float) -> None:
        self.time_label.setText(f"t = {t:.3f} s")
        self.seek_requested.emit(float(t))

    def show_snapshot(self, snap) -> None:
        """Follow the worker: the time shown and the stretch it can go back to."""
        self.t = snap.t
        span = snap.timeline
        if span is not None and span[0] is not None and span[1] is not None:
            self.first, self.head = float(span[0]), float(span[1])
        else:
            self.first = self.head = float(snap.t)
        usable = snap.batched and self.head > self.first
        self.slider.setEnabled(usable)
        self.latest_button.setEnabled(usable and snap.t < self.head - 1e-12)
        if not self.slider.isSliderDown():
            self.slider.blockSignals(True)
            self.slider.setValue(self._to_position(snap.t))
            self.slider.blockSignals(False)
            self.time_label.setText(f"t = {snap.t:.3f} s")
        self.span_label.setText(f"{self.first:.2f} – {self.head:.2f} s" if usable else "")
