"""The plots dock: live time plots of the run (:mod:`studio.qt.window.plotfigure`), their history, and the exports.

Thread: GUI. :class:`PlotPanel` receives every :class:`studio.run.messages.SampleBatch` (:meth:`PlotPanel.add_batch`):
the plots' rows go to a bounded :class:`studio.run.history.History`, every step's records to a
:class:`studio.run.runrecords.RunRecords` (for exact exports), edits to the marks on the time axis, the run's events
(contacts, broken constraints) to a bounded :class:`studio.run.events.EventLog` (:attr:`PlotPanel.events`, which the
event list shows too) and to lines on the time axis. Freezing the plots freezes the picture only: samples keep
arriving.

Redrawing, never per batch, so that the plots cannot starve the viewport of the GUI thread: at most every
:data:`REDRAW_PERIOD` (10 Hz), whatever the rates of simulation and of the viewport's frames, and no more often
than keeps their updates within :data:`PLOT_SHARE` of the GUI thread (a redraw that took 50 ms waits 0.33 s for
the next: the simulation thread needs the interpreter too, which the plots' Python holds); only the plots in
sight (none while the dock is hidden, tabbed away or the window minimised; in the dock, which scrolls when the
plots would be shorter than :data:`MIN_PLOT_HEIGHT`, only those not scrolled out of view). While the viewport draws
frames, the plots redraw with one of them (:meth:`PlotPanel.frame`): the window holding the OpenGL viewport is
composed as a whole after any change of any widget, which software OpenGL does on the CPU, so plots redrawn
between two frames cost a composition of their own; otherwise (paused, viewport hidden) on their own timer.

Earlier tries: going back in time and running on keeps what had been plotted after the branch point as a faded
overlay (and its events, fainter); a run an edit restarted keeps the whole previous run so; a reset or another
document starts clean (the batch says ``fresh``): the plots then hold the new run only, and its ranges fit it. The
earlier try can be hidden (:meth:`PlotPanel.set_earlier_try_shown`, View ▸ Earlier Try); hidden, it sets no
range either. An edit that adds or removes a constraint keeps the history (the columns are matched by name). While
the simulation is paused, the current time is marked, and the plots follow it when the user scrubs the timeline.

Exports: PNG (the panel as shown, or at a size given) and SVG of the plots; CSV of the whole run — every step,
full precision, the columns of ``python -m core run`` with units in the header (:mod:`studio.run.runrecords`).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (registers the exporters)
from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (QApplication, QComboBox, QFileDialog, QFrame, QHBoxLayout, QInputDialog, QLabel,
                               QMenu, QScrollArea, QToolButton, QVBoxLayout, QWidget)

from studio.run.events import EventLog
from studio.run.history import History
from studio.qt.window.plotfigure import BACKGROUND, PLOTS, OpaqueGridAxis, PlotFigure, PlotSpec, log_label  # noqa: F401
from studio.run.runrecords import RunRecords

__all__ = ["PlotPanel", "PLOTS", "PlotSpec", "WINDOWS", "OpaqueGridAxis", "render_figure", "FigureRenderer",
           "REDRAW_PERIOD", "PLOT_SHARE", "MIN_PLOT_HEIGHT"]

#: Rolling windows (s of simulated time) the user can pick; None = the whole run.
WINDOWS = {"1 s": 1.0, "2 s": 2.0, "5 s": 5.0, "10 s": 10.0, "30 s": 30.0, "60 s": 60.0, "whole run": None}
#: s: the plots redraw at most this often (module docstring).
REDRAW_PERIOD = 0.1
#: The share of the GUI thread the plots' updates may take: a redraw that took c s waits c / PLOT_SHARE s for the
#: next (module docstring). Hundreds of constraints' curves took ~50 ms a redraw, 40 % of the GUI thread at 10 Hz,
#: and the simulation thread waited for the interpreter meanwhile (balls_in_a_box played at 0.3x real time).
PLOT_SHARE = 0.15
#: s: while the viewport drew a frame this recently, the plots redraw with its frames only.
FRAMES_FLOWING = 0.25
#: px: the least height of a plot in the dock, its title included (the dock scrolls below that).
MIN_PLOT_HEIGHT = 150


def _map_columns(old, new) -> list:
    """For each column of layout ``new``, the column of layout ``old`` with the same name (or None)."""
    names = {name: k for k, name in enumerate(old.columns())}
    return [names.get(name) for name in new.columns()]


def _remap_rows(rows: np.ndarray, source: list) -> np.ndarray:
    out = np.full((rows.shape[0], len(source)), np.nan)
    for j, k in enumerate(source):
        if k is not None:
            out[:, j] = rows[:, k]
    return out


class PlotPanel(QWidget):
    """GUI thread. The plots dock's content."""

    message = Signal(str)

    def __init__(self, parent=None, period: float = REDRAW_PERIOD):
        super().__init__(parent)
        self.period = float(period)
        self.redraws = 0                  # the times the curves were updated (benchmarks, tests)
        self._redrawn = self._framed = -float("inf")    # perf_counter() of the last redraw, of the last frame
        self._cost = 0.0                  # s: how long the last redraw took (PLOT_SHARE)
        self.history: History | None = None
        self.records = RunRecords()
        self.layout_spec = None           # the SampleLayout of the current run
        self.run = None
        self.paused = False
        self.window: float | None = 10.0
        self.ghost: np.ndarray | None = None
        self.earlier_try_shown = True
        self.markers: list = []
        self.events = EventLog()
        self._events_shown = None
        self.cursor: float | None = None
        self._dirty = False
        self._build_bar()
        self.graphics = pg.GraphicsLayoutWidget()
        self.figure = PlotFigure(self.graphics, interactive=True, min_plot_height=MIN_PLOT_HEIGHT, parent=self)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.graphics)
        self.scroll.verticalScrollBar().valueChanged.connect(self._scrolled)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.setSpacing(2)
        outer.addLayout(self._bar)
        outer.addWidget(self.scroll, 1)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._timer.start(round(1000 * self.period))

    # ---- what the figure holds -----------------------------------------------------------------------------
    @property
    def plots(self) -> dict:
        return self.figure.plots

    @property
    def curves(self) -> dict:
        return self.figure.curves

    @property
    def shown(self) -> dict:
        return self.figure.shown

    @property
    def log(self) -> dict:
        return self.figure.log

    # ---- controls ------------------------------------------------------------------------------------------
    def _build_bar(self) -> None:
        self._bar = QHBoxLayout()
        self._bar.setContentsMargins(2, 0, 2, 0)
        self.choose_button = QToolButton()
        self.choose_button.setText("Plots")
        self.choose_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.choose_menu = QMenu(self)
        self.choose_button.setMenu(self.choose_menu)
        self.window_combo = QComboBox()
        self.window_combo.addItems(list(WINDOWS))
        self.window_combo.setCurrentText("10 s")
        self.window_combo.setToolTip("Time window of the plots: rolling, or the whole run (thinned)")
        self.window_combo.currentTextChanged.connect(self.set_window)
        self.pause_button = QToolButton()
        self.pause_button.setText("Freeze")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Freeze the plots (the simulation goes on; samples are kept)")
        self.pause_button.toggled.connect(self.set_paused)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        export_menu = QMenu(self)
        for label, suffix in (("PNG image…", ".png"), ("PNG image at a size…", ".png@"), ("SVG drawing…", ".svg"),
                              ("CSV of the whole run (every step)…", ".csv")):
            export_menu.addAction(label).triggered.connect(lambda _=False, s=suffix: self._export_dialog(s))
        self.export_button.setMenu(export_menu)
        self._bar.addWidget(self.choose_button)
        self._bar.addWidget(QLabel("window"))
        self._bar.addWidget(self.window_combo)
        self._bar.addWidget(self.pause_button)
        self._bar.addStretch(1)
        self._bar.addWidget(self.export_button)

    def _fill_choose_menu(self) -> None:
        menu = self.choose_menu
        menu.clear()
        for spec in PLOTS:
            if not self.figure.available(spec):
                continue
            show = menu.addAction(spec.title)
            show.setCheckable(True)
            show.setChecked(self.shown[spec.key])
            show.toggled.connect(lambda on, k=spec.key: self.set_shown(k, on))
            if spec.log_toggle:
                log = menu.addAction("      log scale")
                log.setCheckable(True)
                log.setChecked(self.log[spec.key])
                log.toggled.connect(lambda on, k=spec.key: self.set_log(k, on))

    def set_window(self, label_or_seconds) -> None:
        """A rolling window (a label of WINDOWS, or seconds) or None for the whole run."""
        self.window = WINDOWS[label_or_seconds] if isinstance(label_or_seconds, str) else label_or_seconds
        label = next((k for k, v in WINDOWS.items() if v == self.window), None)
        if label is not None and self.window_combo.currentText() != label:
            self.window_combo.setCurrentText(label)
        self._dirty = True
        self.redraw()

    def fit_window(self, duration: float) -> None:
        """Pick the smallest rolling window that holds a run of ``duration`` seconds (the scene's own), at most
        10 s."""
        duration = min(duration, 10.0)
        fits = [v for v in WINDOWS.values() if v is not None and v >= duration - 1e-9]
        self.set_window(min(fits) if fits else None)

    def set_paused(self, on: bool) -> None:
        self.paused = bool(on)
        if self.pause_button.isChecked() != self.paused:
            self.pause_button.setChecked(self.paused)
        if not self.paused:
            self._dirty = True

    def set_shown(self, key: str, on: bool) -> None:
        self.shown[key] = bool(on)
        self.figure.rebuild()
        self.figure.set_markers(self.markers)
        self._events_shown = None
        self._dirty = True

    def set_log(self, key: str, on: bool) -> None:
        self.figure.set_log(key, on)
        self._dirty = True
        self.redraw()

    def set_earlier_try_shown(self, on: bool) -> None:
        """Show or hide the earlier try: its faded curves and event marks (View ▸ Earlier Try). Hidden, it is
        still kept (showing it again brings it back)."""
        self.earlier_try_shown = bool(on)
        self._events_shown = None
        self._dirty = True
        self.redraw()

    @property
    def shown_ghost(self) -> np.ndarray | None:
        """The earlier try's rows as drawn: None when there is none or it is hidden."""
        return self.ghost if self.earlier_try_shown else None

    def set_cursor(self, t: float | None) -> None:
        """Mark the current time (paused, or scrubbing the timeline; None: playing, no mark)."""
        if t != self.cursor:
            self.cursor = t
            self._dirty = True

    # ---- data ----------------------------------------------------------------------------------------------
    @Slot(object)
    def add_batch(self, batch) -> None:
        """Take a :class:`~studio.run.messages.SampleBatch` (module docstring)."""
        self.records.add(batch)
        new_run = self.run is not None and batch.run != self.run
        if self.history is None or batch.layout is None:
            if batch.layout is not None:
                self._start(batch.layout)
            self.run = batch.run
        elif new_run:
            # a run an edit restarted is compared with the one before; a reset or another document starts clean
            # (another scene's curves would set the ranges of this one's: issue 27)
            fresh = getattr(batch, "fresh", False)
            before = self.history.whole()
            self.ghost = before.copy() if len(before) and not fresh else None
            self.markers = []
            self.events.new_run(keep=not fresh)
            if batch.layout != self.layout_spec:
                self.ghost = None if self.ghost is None else _remap_rows(
                    self.ghost, _map_columns(self.layout_spec, batch.layout))
                self._start(batch.layout)
            else:
                self.history.clear()
            self.run = batch.run
        elif batch.layout != self.layout_spec:      # the same run on a new layout: keep the history
            source = _map_columns(self.layout_spec, batch.layout)
            self.history.remap(batch.layout.width, source)
            if self.ghost is not None:
                self.ghost = _remap_rows(self.ghost, source)
            self.layout_spec = batch.layout
            self.figure.configure(batch.layout)
            self.figure.set_markers(self.markers)
            self._fill_choose_menu()
        if batch.branch is not None and self.history is not None:
            gone = self.history.truncate_after(batch.branch)
            self.ghost = gone if len(gone) else self.ghost
            self.markers = [m for m in self.markers if m.t <= batch.branch]
            self.figure.set_markers(self.markers)
        if batch.branch is not None:
            self.events.truncate_after(batch.branch)
        self.events.add(getattr(batch, "events", ()))
        if batch.markers:
            self.markers.extend(batch.markers)
            self.figure.set_markers(self.markers)
        if self.history is not None and len(batch.rows):
            self.history.append(batch.rows)
        self._dirty = True

    def _start(self, layout) -> None:
        self.layout_spec = layout
        self.history = History(layout.width, capacity=40_000)
        self.figure.configure(layout)
        self.figure.set_markers(self.markers)
        self._fill_choose_menu()

    def clear(self) -> None:
        if self.history is not None:
            self.history.clear()
        self.ghost = None
        self._dirty = True
        self.redraw()

    # ---- drawing -------------------------------------------------------------------------------------------
    def view(self):
        """``(rows, x_range)`` the plots show now: the rolling window ending at the newest sample, or around the
        current time when the user looks back, or the whole run."""
        h = self.history
        if h is None or h.count == 0:
            return np.zeros((0, 1 if self.layout_spec is None else self.layout_spec.width)), (0.0, 1.0)
        last = h.last_time
        if self.window is None:
            rows = h.whole()
            first = float(rows[0, 0])
            ghost = self.shown_ghost
            ghost_end = float(ghost[-1, 0]) if ghost is not None and len(ghost) else last
            return rows, (first, max(last, ghost_end, first + 1e-9))
        w = self.window
        end = max(last, w)
        if self.cursor is not None and not (end - w <= self.cursor <= end):
            end = self.cursor + 0.5 * w
        lo = max(0.0, end - w)
        return h.between(lo, lo + w), (lo, lo + w)

    def in_sight(self) -> list[str]:
        """The keys of the plots the user can see now (module docstring)."""
        if not self.isVisible() or self.graphics.window().isMinimized():
            return []
        seen = self.graphics.viewport().visibleRegion().boundingRect()
        if seen.isEmpty():
            return []
        return [key for key, plot in self.plots.items()
                if self.graphics.mapFromScene(plot.sceneBoundingRect()).boundingRect().intersects(seen)]

    @Slot()
    def frame(self) -> None:
        """The viewport is about to draw a frame: redraw with it if a redraw is due (module docstring)."""
        self._framed = time.perf_counter()
        if self._framed - self._redrawn >= self._due():
            self.redraw()

    def _due(self) -> float:
        """s between redraws: the period, or longer where the last redraw took more than PLOT_SHARE of it."""
        return max(self.period, self._cost / PLOT_SHARE)

    @Slot()
    def _tick(self) -> None:
        now = time.perf_counter()
        if now - self._framed > FRAMES_FLOWING and now - self._redrawn >= self._due():
            self.redraw()

    @Slot()
    def _scrolled(self) -> None:
        self._dirty = True             # plots scrolled into sight may show older curves

    @Slot()
    def redraw(self) -> None:
        """Update the plots in sight now if anything changed since (unless frozen)."""
        if not self._dirty or self.paused or self.history is None:
            return
        keys = self.in_sight()
        if not keys:
            return
        self._dirty = False
        self._redrawn = time.perf_counter()
        self.redraws += 1
        rows, x_range = self.view()
        self._show_events()
        self.figure.draw(rows, self.shown_ghost, x_range, self.cursor, keys)
        self._cost = time.perf_counter() - self._redrawn

    def _show_events(self) -> None:
        key = (id(self.figure.layout_spec), self.events.version, self.events.generation, self.earlier_try_shown)
        if key != self._events_shown:
            self._events_shown = key
            self.figure.set_events(self.events.events, self.events.ghost if self.earlier_try_shown else ())

    # ---- export --------------------------------------------------------------------------------------------
    def _export_dialog(self, suffix: str) -> None:
        size = None
        if suffix == ".png@":
            suffix = ".png"
            text, ok = QInputDialog.getText(self, "Export plots", "Size in pixels (width x height):",
                                            text=f"{max(800, self.graphics.width())}x"
                                                 f"{max(600, self.graphics.height())}")
            if not ok:
                return
            try:
                size = tuple(int(v) for v in text.lower().replace("×", "x").split("x"))
                assert len(size) == 2 and min(size) > 0
            except (ValueError, AssertionError):
                self.message.emit(f"not a size: {text!r} (give it as 1600x900)")
                return
        kinds = {".png": "PNG image (*.png)", ".svg": "SVG drawing (*.svg)", ".csv": "CSV data (*.csv)"}
        default = "timeseries.csv" if suffix == ".csv" else f"plots{suffix}"
        name, _ = QFileDialog.getSaveFileName(self, "Export", default, kinds[suffix])
        if not name:
            return
        path = Path(name) if name.lower().endswith(suffix) else Path(name).with_suffix(suffix)
        try:
            files = self.export(path, size=size)
        except Exception as exc:           # reported, never lost
            self.message.emit(f"could not export: {type(exc).__name__}: {exc}")
            return
        note = ""
        if suffix == ".csv" and self.records.dropped_until is not None:
            note = f" (from t = {self.records.dropped_until:.4g} s: older steps were dropped to bound memory)"
        self.message.emit("exported " + ", ".join(str(f) for f in files) + note)

    def export(self, path: str | Path, size: tuple[int, int] | None = None) -> list[Path]:
        """Write to ``path`` by its suffix: ``.png`` (the plots as shown, or drawn at ``size`` = (width,
        height) px) or ``.svg`` (the plots), ``.csv`` (the whole run's records: :meth:`RunRecords.write_csv`,
        one file per part when an edit changed the columns). Returns the files."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            return self.records.write_csv(path)
        rows, x_range = self.view()
        self._show_events()
        self.figure.draw(rows, self.shown_ghost, x_range, self.cursor)     # every plot, in sight or not
        if suffix == ".png":
            if size is not None:
                image = render_figure(self.layout_spec, rows, size, self.shown_ghost, x_range, self.markers,
                                      shown=self.shown, log=self.log, events=self.events.events,
                                      ghost_events=self.events.ghost if self.earlier_try_shown else ())
                if not image.save(str(path), "PNG"):
                    raise OSError(f"could not write {path}")
                return [path]
            exporter = pg.exporters.ImageExporter(self.graphics.ci)
            exporter.parameters()["width"] = max(800, self.graphics.width())
            exporter.export(str(path))
            return [path]
        if suffix == ".svg":
            pg.exporters.SVGExporter(self.graphics.ci).export(str(path))
            return [path]
        raise ValueError(f"cannot export plots as {path.suffix or 'a file without suffix'}: use .png, .svg or .csv")


class FigureRenderer:
    """GUI thread. Plots of a sample layout drawn off screen at ``size`` (width, height) px, frame after frame (a
    recording's plots beside the viewport, the headless ``plots`` command). ``plots``: the keys to draw (default:
    every plot the layout has, as shown by default)."""

    def __init__(self, layout, size, plots=None, log=None, markers=(), events=()):
        self.size = (int(size[0]), int(size[1]))
        self.widget = pg.GraphicsLayoutWidget()
        self.widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)
        self.figure = PlotFigure(self.widget, interactive=False, title_size="8.5pt")
        shown = None if plots is None else {p.key: p.key in plots for p in PLOTS}
        self.figure.configure(layout, shown, log)
        self.figure.set_markers(markers)
        self.figure.set_events(events)
        self.widget.resize(*self.size)
        self.widget.show()
        QApplication.processEvents()
        self.figure.retitle()

    def render(self, rows, ghost=None, x_range=None, cursor=None):
        """A QImage of the plots of ``rows`` over ``x_range`` (default: their span), ``cursor`` marked."""
        self.figure.draw(rows, ghost, x_range, cursor)
        return self.widget.grab().toImage()

    def close(self) -> None:
        self.widget.close()
        self.widget.deleteLater()


def render_figure(layout, rows, size, ghost=None, x_range=None, markers=(), cursor=None, shown=None, log=None,
                  events=(), ghost_events=()):
    """A QImage of ``size`` (width, height) px of the plots of ``layout`` drawn from ``rows`` (GUI thread; no
    window needed): those ``shown`` (a dict of plot key → bool; default: as shown by default), with the run's
    ``events`` (and the earlier try's) marked."""
    keys = None if shown is None else [k for k, on in shown.items() if on]
    renderer = FigureRenderer(layout, size, keys, log, markers)
    renderer.figure.set_events(events, ghost_events)
    try:
        return renderer.render(rows, ghost, x_range, cursor)
    finally:
        renderer.close()
