"""What the viewport and the status bar show of the running simulation, and how the viewport's selection maps to
the document's.

Thread: GUI. :class:`ViewportPresenter` takes the worker's snapshots (latest wins) and draws them at the pace the
display keeps up with: at once while paused, else at most once a frame (60 Hz) and never sooner after a frame than
that frame took to render (software OpenGL under Xvfb composes the whole window for each frame; this keeps half the
GUI's time for input and the plots, however fast snapshots come). A frame's cost is measured from the start of the
viewport's ``paintGL`` to ``frameSwapped``: the time the draw request waited behind other GUI work is not part of
it (counting it made one slow plot repaint halve the frame rate). Each snapshot it draws it also announces
(``drawing``), so that what else follows the run (the timeline, the plots) changes with the viewport's frame: the
window is then composed once for all of them. Optionally it shows the frame rate and the real-time factor over the
viewport (:meth:`ViewportPresenter.set_rate_shown`). It also turns viewport picks into document paths and the
document selection into viewport highlights.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from studio.run.messages import Snapshot

__all__ = ["ViewportPresenter", "MIN_FRAME_PERIOD", "STATUS_PERIOD", "RATE_PERIOD"]

MIN_FRAME_PERIOD = 1 / 60      # s: the viewport draws at most this often
STATUS_PERIOD = 0.25           # s: the status bar's numbers change at most this often while playing
RATE_PERIOD = 0.5              # s: the frame rate shown over the viewport is measured over this time


class ViewportPresenter(QObject):
    """GUI thread. Shows snapshots in ``viewport`` and ``status``; keeps ``selection`` (paths of ``document``) and
    the viewport's highlight in step. ``drawing(Snapshot)``: a snapshot is being drawn."""

    drawing = Signal(object)

    def __init__(self, viewport, status, document, selection, parent=None):
        super().__init__(parent)
        self._viewport, self._status, self._document, self._selection = viewport, status, document, selection
        self._snapshot: Snapshot | None = None
        self._frame_next_model = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._draw)
        self._next_draw = self._draw_started = self._status_shown = 0.0
        self.frame_cost = 0.0          # s: the last frame's paintGL → frameSwapped
        self._drawing = False
        self._rate_shown = False
        self._rate_mark: tuple | None = None   # (perf_counter, viewport frames, simulated time) a period ago
        viewport.frameSwapped.connect(self._frame_swapped)
        viewport.picked.connect(self._picked)
        selection.changed.connect(self._selection_changed)

    def frame_next_model(self) -> None:
        """Point the camera at the next model that arrives (a newly opened document)."""
        self._frame_next_model = True

    # ---- snapshots -----------------------------------------------------------------------------------------
    @Slot(object)
    def show(self, snap: Snapshot) -> None:
        """The worker's newest snapshot: drawn now when paused (or a new model), else when the display is ready."""
        self._snapshot = snap
        if not snap.playing or snap.model is not self._viewport.model:
            self._timer.stop()
            self._draw()
        elif not self._timer.isActive():
            self._timer.start(round(1000 * max(0.0, self._next_draw - time.perf_counter())))

    @Slot()
    def _draw(self) -> None:
        snap = self._snapshot
        if snap is None:
            return
        if snap.model is not None and snap.model is not self._viewport.model:
            self._viewport.set_model(snap.model, frame=self._frame_next_model)
            self._frame_next_model = False
            self._selection_changed(self._selection.path, None)
        self._draw_started, self._drawing = time.perf_counter(), True
        self._viewport.show_snapshot(snap)
        if not snap.playing or self._draw_started - self._status_shown > STATUS_PERIOD:
            self._status.show_snapshot(snap)
            self._status_shown = self._draw_started
        if self._rate_shown:
            self._show_rate(snap)
        self.drawing.emit(snap)

    # ---- the frame rate over the viewport ------------------------------------------------------------------
    def set_rate_shown(self, on: bool) -> None:
        """Show the viewport's frames per second and the real-time factor (simulated seconds per wall second) of
        what it shows over it (View ▸ Frame Rate), measured over :data:`RATE_PERIOD`."""
        self._rate_shown, self._rate_mark = bool(on), None
        self._viewport.set_rate_text("… fps" if self._rate_shown else "")

    def _show_rate(self, snap: Snapshot) -> None:
        now, frames = self._draw_started, self._viewport.frames
        if not snap.playing:
            self._rate_mark = None
            self._viewport.set_rate_text("paused")
        elif self._rate_mark is None:
            self._rate_mark = (now, frames, snap.t)
            self._viewport.set_rate_text("… fps")
        elif now - self._rate_mark[0] >= RATE_PERIOD:
            then, frames_then, t_then = self._rate_mark
            self._viewport.set_rate_text(f"{(frames - frames_then) / (now - then):.0f} fps · "
                                         f"{(snap.t - t_then) / (now - then):.2f}× real time")
            self._rate_mark = (now, frames, snap.t)

    @Slot()
    def _frame_swapped(self) -> None:
        if not self._drawing:
            return                             # a frame we did not ask for (a resize, an expose)
        self._drawing = False
        now = time.perf_counter()
        painted = getattr(self._viewport, "paint_started", None)
        self.frame_cost = now - (painted if painted is not None and painted >= self._draw_started
                                 else self._draw_started)
        self._next_draw = max(self._draw_started + MIN_FRAME_PERIOD, now + self.frame_cost)

    # ---- selection -----------------------------------------------------------------------------------------
    @Slot(object)
    def _picked(self, what) -> None:
        """A click in the viewport: ``("body", body name)``, ``("constraint", name)``, ``("force", name)`` or
        None."""
        spec = self._document.spec
        path = None
        if what is not None and what[0] == "body":
            path = next((("bodies", i) for i, b in enumerate(spec.bodies) if b.name == what[1]), None)
            if path is None and getattr(spec, "robot", None) is not None:
                path = ("robot",)                        # a link of the included robot file: its include
        elif what is not None and what[0] == "force":
            path = next((("forces", i) for i, f in enumerate(spec.forces) if f.name == what[1]), None)
        elif what is not None:
            entity = next((c.entity for c in self._viewport.model.constraints if c.name == what[1]), what[1])
            path = next((("constraints", i) for i, c in enumerate(spec.constraints) if c.name == entity), None)
        self._selection.set(path, source=self._viewport)

    @Slot(object, object)
    def _selection_changed(self, path, _source) -> None:
        model, spec = self._viewport.model, self._document.spec
        body = constraint = None
        if path and path[0] == "bodies" and len(path) >= 2 and path[1] < len(spec.bodies):
            body = spec.bodies[path[1]].name
        elif path and path[0] == "constraints" and len(path) == 2 and path[1] < len(spec.constraints):
            entity = spec.constraints[path[1]].name
            constraint = next((i for i, c in enumerate(model.constraints) if c.entity == entity), None)
        self._viewport.highlight(body, constraint)
