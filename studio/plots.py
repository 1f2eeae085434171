"""Live plots of a run: constraint forces, energies, deviations, solve residuals, singular values and joint
coordinates, drawn with pyqtgraph from bounded histories.

Thread: GUI. :class:`PlotPanel` receives every :class:`studio.messages.SampleBatch` (:meth:`PlotPanel.add_batch`),
appends it to a :class:`studio.history.History` and redraws the visible plots on a timer (not per batch), so the
cost of drawing does not grow with the rate of simulation. Pausing the plots freezes the picture only: samples keep
arriving. The user picks the plots, the time window (rolling or the whole run) and log scales; plots export to PNG
and SVG (the panel) and CSV (each plot's curves) through pyqtgraph's exporters.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (registers the exporters)
from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QLabel, QMenu, QToolButton, QVBoxLayout,
                               QWidget)

from .history import History

__all__ = ["PlotPanel", "PLOTS", "PlotSpec", "WINDOWS", "OpaqueGridAxis"]

#: Rolling windows (s of simulated time) the user can pick; None = the whole run.
WINDOWS = {"1 s": 1.0, "2 s": 2.0, "5 s": 5.0, "10 s": 10.0, "30 s": 30.0, "60 s": 60.0, "whole run": None}
LOG_FLOOR = 1e-16
LINEAR_TEXT_FILL_LIMITS = [(0, 0.8), (2, 0.6), (4, 0.4), (6, 0.2)]     # pyqtgraph's
LOG_TEXT_FILL_LIMITS = [(0, 4.0), (2, 0.6), (4, 0.4), (6, 0.2)]
#: The shortest y range of a log plot, in decades (a factor of 2): a nearly constant signal (the nail holding an
#: arm against gravity, 9.7900 ± 2e-7 N) is drawn as the flat line it is, between labelled ticks, instead of its
#: rounding noise zoomed to the plot's height on an axis with no tick at all.
LOG_MIN_RANGE = 0.3
AXIS_WIDTH = 62               # px of every left axis (aligned plots): room for "8·10⁻¹⁴" beside the unit
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
BACKGROUND = (30, 32, 36)
PALETTE = [(86, 180, 233), (230, 159, 0), (0, 158, 115), (240, 228, 66), (204, 121, 167), (213, 94, 0),
           (0, 114, 178), (200, 200, 200)]   # Okabe–Ito, readable on a dark background and by most eyes


class OpaqueGridAxis(pg.AxisItem):
    """GUI thread. pyqtgraph's axis, whose translucent grid lines and ticks are drawn in the opaque colours they
    show over ``background`` (the plots' uniform background): the same picture, but the raster engine no longer
    alpha-blends every grid line across the plot, which made each repaint of the panel about three times as slow
    (46 → 15 ms for the 20-link chain's six plots). Put it under the curves (a lower z than the view box), or the
    opaque lines would hide them where they cross.

    On a log axis spanning less than a few decades, pyqtgraph's labels go wrong; here: no SI multiplier
    ("(x0.001)" beside ticks that already read 10⁻³ …), labels from :func:`log_label`, the minor ticks' labels
    drawn when no major tick is in range (pyqtgraph drops them all for crowding) and none drawn over another (the
    0.7, 0.8, 0.9 of a short axis; the major ticks' labels come first and are kept)."""

    def __init__(self, orientation: str, background, **kwargs):
        super().__init__(orientation, **kwargs)
        self._background = QColor(*background)

    def updateAutoSIPrefix(self):
        if self.logMode:
            self.autoSIPrefixScale, self.labelUnitPrefix = 1.0, ""
            self._updateLabel()
        else:
            super().updateAutoSIPrefix()

    def setLogMode(self, *args, **kwargs):
        super().setLogMode(*args, **kwargs)
        # On a log axis that spans less than a decade only minor ticks have labels: let them be drawn even if
        # they crowd (generateDrawSpecs then drops any that overlap).
        self.style["textFillLimits"] = LOG_TEXT_FILL_LIMITS if self.logMode else LINEAR_TEXT_FILL_LIMITS
        if self.autoSIPrefix:
            self.updateAutoSIPrefix()

    def logTickStrings(self, values, scale, spacing):
        return [log_label(10.0 ** float(v) * scale) for v in values]

    def generateDrawSpecs(self, p):
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis, ticks, text = specs
        if self.logMode:
            kept = []
            for spec in text:                  # major ticks' labels first (pyqtgraph lists them level by level)
                if not any(spec[0].intersects(other[0]) for other in kept):
                    kept.append(spec)
            text = kept
        bg, opaque = self._background, []
        for pen, p1, p2 in ticks:
            colour = pen.color()
            a = colour.alphaF()
            if a < 1.0:
                pen = QPen(pen)
                pen.setColor(QColor.fromRgbF(a * colour.redF() + (1 - a) * bg.redF(),
                                             a * colour.greenF() + (1 - a) * bg.greenF(),
                                             a * colour.blueF() + (1 - a) * bg.blueF()))
            opaque.append((pen, p1, p2))
        return axis, opaque, text


def log_label(x: float) -> str:
    """A tick label of a log axis: plain from 0.01 to 9000 (0.07, 3, 10, 200), else a power of ten (10⁻⁵,
    2·10⁻⁵, 10⁴); pyqtgraph's own prints 10 as 10¹ beside 9 and 0.0001 wider than the axis."""
    if not (x > 0 and math.isfinite(x)):
        return ""
    n = math.floor(math.log10(x) + 1e-9)
    m = x / 10.0 ** n
    if abs(m - round(m)) > 1e-6:
        return f"{x:.2g}"
    m = round(m)
    if -2 <= n <= 3:
        return f"{m * 10.0 ** n:.{max(0, -n)}f}"
    power = "10" + str(n).translate(SUPERSCRIPT)
    return power if m == 1 else f"{m}·{power}"


@dataclass(frozen=True)
class PlotSpec:
    """Any thread (a frozen description). One plot: which sample groups it draws (the second, if any, dashed), its
    unit, whether its y axis starts logarithmic, and whether it offers a log toggle."""
    key: str
    title: str
    groups: tuple
    unit: str
    log: bool = False
    log_toggle: bool = True
    shown: bool = True
    columns: slice | None = None      # part of the first group (energies: all but the audit error)


PLOTS = (
    PlotSpec("force", "Constraint force ‖F‖", ("force",), "N", log=True),
    PlotSpec("energy", "Energy", ("energy",), "J", log_toggle=False, columns=slice(0, 4)),
    PlotSpec("deviation", "Deviation ‖D‖ (solid), ‖Ḋ‖ (dashed)", ("deviation", "deviation_rate"), "m, m/s",
             log=True),
    PlotSpec("residual", "Solve residual ‖η‖", ("residual",), "m/s²", log=True),
    PlotSpec("singular", "Singular values of A = J M⁻¹ Jᵀ", ("singular",), "", log=True, log_toggle=False),
    PlotSpec("joint", "Joint coordinates q (solid) and desired q_d (dashed)", ("joint", "desired"), "rad, m",
             log_toggle=False),
    PlotSpec("tracking", "Tracking error e = q − q_d", ("tracking_error",), "rad, m", log_toggle=False),
    PlotSpec("parameters", "Adaptive parameter estimates â", ("parameters",), "", log_toggle=False),
)


class PlotPanel(QWidget):
    """GUI thread. The plots dock's content."""

    message = Signal(str)

    def __init__(self, parent=None, refresh_ms: int = 100):
        super().__init__(parent)
        self.history: History | None = None
        self.layout_spec = None           # the SampleLayout of the current run
        self.run = None
        self.paused = False
        self.window: float | None = 10.0
        self.shown = {p.key: p.shown for p in PLOTS}
        self.log = {p.key: p.log for p in PLOTS}
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, list] = {}
        self._dirty = False
        self._build_bar()
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground(BACKGROUND)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.setSpacing(2)
        outer.addLayout(self._bar)
        outer.addWidget(self.graphics, 1)
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.redraw)
        self._timer.start(refresh_ms)

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
        for label, suffix in (("PNG image…", ".png"), ("SVG drawing…", ".svg"), ("CSV data…", ".csv")):
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
            if not self._available(spec):
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
        self._rebuild_plots()

    def set_log(self, key: str, on: bool) -> None:
        self.log[key] = bool(on)
        if key in self.plots:
            self._set_log_mode(self.plots[key], bool(on))
        self._dirty = True
        self.redraw()

    @staticmethod
    def _set_log_mode(plot, on: bool) -> None:
        plot.setLogMode(y=on)
        plot.vb.setLimits(minYRange=LOG_MIN_RANGE if on else None)

    # ---- data ----------------------------------------------------------------------------------------------
    @Slot(object)
    def add_batch(self, batch) -> None:
        """Append a :class:`~studio.messages.SampleBatch`; a new run or layout starts the plots over."""
        if batch.layout != self.layout_spec or self.history is None:
            self.layout_spec = batch.layout
            self.history = History(batch.layout.width, capacity=40_000)
            self.run = batch.run
            self._rebuild_plots()
            self._fill_choose_menu()
        elif batch.run != self.run:
            self.history.clear()
            self.run = batch.run
        self.history.append(batch.rows)
        self._dirty = True

    def clear(self) -> None:
        if self.history is not None:
            self.history.clear()
        self._dirty = True
        self.redraw()

    def _available(self, spec: PlotSpec) -> bool:
        lay = self.layout_spec
        return lay is not None and all(g in lay.groups and lay.size(g) > 0 for g in spec.groups[:1])

    # ---- drawing -------------------------------------------------------------------------------------------
    def _rebuild_plots(self) -> None:
        self.graphics.clear()
        self.plots.clear()
        self.curves.clear()
        row, first = 0, None
        for spec in PLOTS:
            if not (self.shown[spec.key] and self._available(spec)):
                continue
            plot = self.graphics.addPlot(row=row, col=0, axisItems={
                name: OpaqueGridAxis(name, BACKGROUND) for name in ("left", "bottom")})
            row += 1
            title = spec.title
            if spec.key == "joint" and not self.layout_spec.size("desired"):
                title = "Joint coordinates q"
            plot.setTitle(title, size="9pt", color="#c8ccd4")
            plot.showGrid(x=True, y=True, alpha=0.18)
            for name in ("left", "bottom"):
                plot.getAxis(name).setZValue(plot.vb.zValue() - 1)   # the (opaque) grid under the curves
            plot.setLabel("left", units=None, text=spec.unit)
            plot.getAxis("left").setWidth(AXIS_WIDTH)
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            self._set_log_mode(plot, self.log[spec.key])
            if self._curve_count(spec) <= 8:
                plot.addLegend(offset=(-4, 4), labelTextSize="8pt", colCount=2, brush=(30, 32, 36, 160))
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            self.plots[spec.key] = plot
            self.curves[spec.key] = self._make_curves(plot, spec)
        if self.plots:
            last = list(self.plots.values())[-1]
            last.setLabel("bottom", "simulated time", units="s")
        self._dirty = True

    def _curve_count(self, spec: PlotSpec) -> int:
        lay = self.layout_spec
        return lay.size(spec.groups[0]) if spec.columns is None else len(range(lay.size(spec.groups[0]))[
            spec.columns])

    def _make_curves(self, plot, spec: PlotSpec) -> list:
        lay = self.layout_spec
        curves = []
        first = list(lay.labels[spec.groups[0]])
        for n, group in enumerate(spec.groups):
            if group not in lay.groups:
                continue
            labels = lay.labels[group]
            columns = range(lay.groups[group].start, lay.groups[group].stop)
            if n == 0 and spec.columns is not None:
                columns, labels = columns[spec.columns], labels[spec.columns]
            for k, (col, label) in enumerate(zip(columns, labels)):
                # a dashed curve takes the colour of the solid one it belongs to (q_d of joint j: q of joint j)
                match = label.split(": ")[-1]
                k = first.index(match) if n and match in first else k
                colour = PALETTE[k % len(PALETTE)]
                style = Qt.PenStyle.DashLine if n else Qt.PenStyle.SolidLine
                pen = pg.mkPen(colour, width=1, style=style)   # 1 px: the raster engine's fast path (1.5 px: 2x)
                name = label if n == 0 else None
                curves.append((col, plot.plot([], [], pen=pen, name=name)))
        return curves

    @Slot()
    def redraw(self) -> None:
        if not self._dirty or self.paused or self.history is None or not self.isVisible():
            return
        self._dirty = False
        rows = self.history.whole() if self.window is None else self.history.window(self.window)
        if len(rows) == 0:
            for curves in self.curves.values():
                for _, curve in curves:
                    curve.setData([], [])
            return
        t = rows[:, 0]
        for key, curves in self.curves.items():
            for col, curve in curves:
                y = rows[:, col]
                if self.log[key]:
                    y = np.where(y > LOG_FLOOR, y, np.where(np.isnan(y), np.nan, LOG_FLOOR))
                curve.setData(t, y, connect="finite")
        if self.plots:
            first = next(iter(self.plots.values()))
            if self.window is None:
                first.enableAutoRange(axis="x")
            else:
                lo = max(0.0, float(t[-1]) - self.window)
                first.setXRange(lo, lo + self.window, padding=0.0)

    # ---- export --------------------------------------------------------------------------------------------
    def _export_dialog(self, suffix: str) -> None:
        kinds = {".png": "PNG image (*.png)", ".svg": "SVG drawing (*.svg)", ".csv": "CSV data (*.csv)"}
        name, _ = QFileDialog.getSaveFileName(self, "Export plots", f"plots{suffix}", kinds[suffix])
        if not name:
            return
        path = Path(name) if name.lower().endswith(suffix) else Path(name).with_suffix(suffix)
        try:
            files = self.export(path)
        except Exception as exc:           # reported, never lost
            self.message.emit(f"could not export the plots: {type(exc).__name__}: {exc}")
            return
        self.message.emit("exported the plots to " + ", ".join(str(f) for f in files))

    def export(self, path: str | Path) -> list[Path]:
        """Write the plots to ``path`` by its suffix: ``.png`` or ``.svg`` (the whole panel) or ``.csv`` (the data
        of each shown plot; with several plots, one file each, ``<stem>-<plot>.csv``). Returns the files."""
        path = Path(path)
        self._dirty = True
        was, self.paused = self.paused, False
        self.redraw()
        self.paused = was
        suffix = path.suffix.lower()
        if suffix == ".png":
            exporter = pg.exporters.ImageExporter(self.graphics.ci)
            exporter.parameters()["width"] = max(800, self.graphics.width())
            exporter.export(str(path))
            return [path]
        if suffix == ".svg":
            pg.exporters.SVGExporter(self.graphics.ci).export(str(path))
            return [path]
        if suffix == ".csv":
            out = []
            for key, plot in self.plots.items():
                target = path if len(self.plots) == 1 else path.with_name(f"{path.stem}-{key}{path.suffix}")
                pg.exporters.CSVExporter(plot).export(str(target))
                out.append(target)
            return out
        raise ValueError(f"cannot export plots as {path.suffix or 'a file without suffix'}: use .png, .svg or .csv")
