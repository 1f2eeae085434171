"""A column of time plots of a run — constraint forces, energies, deviations, residuals, singular values, joint
coordinates, controller diagnostics — drawn with pyqtgraph, readable at any value.

Thread: GUI. :class:`PlotFigure` builds and draws the plots on a ``pg.GraphicsLayoutWidget``; it keeps no data
of its own: :meth:`PlotFigure.draw` is given the rows to show (the sample layout of :mod:`studio.run.samples`), an
earlier try of the run to show faded, the time range, the current time and the marks of edits. The live plots
dock (:mod:`studio.qt.window.plots`), recordings that put plots beside the viewport (:mod:`studio.qt.run.recording`) and the
headless ``plots`` command (:mod:`studio.headless`) all draw through it.

Readable at any value:

- every y axis has labelled ticks: the y range is set from the data shown, a nearly constant signal gets a range
  of ±0.5 % of its value around it (a log axis spans at least one whole decade: two labelled powers of ten), a
  zero signal ±1; curves keep a small margin from the plot's edges (:data:`PADDING`, :data:`X_PADDING`); a plot
  is never shorter than the ``min_plot_height`` its figure was given (the live dock scrolls instead);
- tick labels in engineering notation (``2.5·10⁻¹⁵``), never pyqtgraph's "(x1e-15)" multiplier, and a label that
  would overlap another is left out;
- legends sit in the title line above the data, never over a curve; hovering shows the value of every curve at
  the time under the mouse in that legend, and a line marks that time in every plot;
- colours of one plot are distinct (Okabe–Ito, reordered so that no two yellows meet); the curves of an earlier
  try (after going back in time, or an edit that restarted the run) are drawn faded in the same colours; edits
  (a gain, a constraint, the formulation) are marked on the time axis;
- the run's events (touchdowns, bounces, lift-offs, slips, sticks, broken constraints, rank changes;
  :mod:`studio.run.events`) are thin vertical lines in every plot, coloured by kind, with a tick at the time axis;
  the earlier try's are fainter; events closer than :data:`EVENT_SPACING_PX` are drawn as one line (the first
  of them: the event list has them all); the time axis's label names the kinds shown in their colours, and
  hovering near a line says what happened (kind, time, contact point or constraint, impulse or force).

At most :data:`MAX_CURVES` series a plot: a scene whose contacts give hundreds of constraint rows draws, of each
plot, the series largest over the time shown (their dashed partners with them), chosen again at every draw, and
the title says how many of how many it shows ("the 24 largest of 154"). The rest are in the recorded CSV.

Cheap to redraw: :meth:`PlotFigure.draw` may be told which plots to update (those in sight), each plot is painted
once per draw (the view boxes take their new ranges at once, not at the next paint, which painted every plot
twice), and pyqtgraph clips the curves to the view and thins them to the plot's width (peak mode).
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QLineF, QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QCursor, QFont, QFontMetricsF, QPen
from PySide6.QtWidgets import QToolTip

from core.columns import series_unit

from studio.run.events import colour_of

__all__ = ["PlotFigure", "PLOTS", "PlotSpec", "OpaqueGridAxis", "log_label", "eng_label", "y_limits",
           "PALETTE", "BACKGROUND"]

LOG_FLOOR = 1e-16
LINEAR_TEXT_FILL_LIMITS = [(0, 0.8), (2, 0.6), (4, 0.4), (6, 0.2)]     # pyqtgraph's
LOG_TEXT_FILL_LIMITS = [(0, 4.0), (2, 0.6), (4, 0.4), (6, 0.2)]
#: The shortest y range of a linear plot, relative to the largest value shown.
LINEAR_MIN_RANGE = 0.01
#: Margins between the curves and the plot's edges: of the y range on each side, and of the time window.
PADDING = 0.06
X_PADDING = 0.01
#: The most series one plot draws at a time (solid ones; each may bring its dashed partner): those largest over
#: the time shown.
MAX_CURVES = 24
AXIS_WIDTH = 66               # px of every left axis (aligned plots): room for "−2.5·10⁻¹⁵"
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
BACKGROUND = (30, 32, 36)
TITLE_COLOUR = "#c8ccd4"
#: Okabe–Ito, readable on a dark background and by most eyes; ordered so that the first four (the energy plot:
#: kinetic, potential, total, work) are blue, orange, green and pink.
PALETTE = [(86, 180, 233), (230, 159, 0), (0, 158, 115), (204, 121, 167), (240, 228, 66), (213, 94, 0),
           (0, 114, 178), (200, 200, 200)]
GHOST_ALPHA = 80
MARKER_COLOUR = (200, 200, 200, 150)
CURSOR_COLOUR = (255, 255, 255, 170)
HOVER_COLOUR = (255, 210, 120, 150)
TITLE_HEIGHT = 34
EVENT_ALPHA = 70              # an event's line across the plot (its tick at the time axis is opaque)
EVENT_GHOST_ALPHA = 40        # an earlier try's event
EVENT_TICK_PX = 7             # px: the tick at the bottom of the plot
EVENT_HOVER_PX = 4            # px: how near the mouse must be to an event's line to name it
EVENT_SPACING_PX = 25         # px: events closer than this along the time axis are drawn as one line


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


#: The labels of the powers of ten on a log axis.
POWER_LABELS = frozenset(log_label(10.0 ** k) for k in range(-30, 31))


def eng_label(v: float, spacing: float) -> str:
    """A tick label of a linear axis with ticks ``spacing`` apart: plain between 0.001 and 10 000 (as many
    decimals as the spacing needs), else in engineering notation, ``2.5·10⁻¹⁵``, ``150·10³``."""
    if not math.isfinite(v):
        return ""
    if v == 0 or abs(v) < 1e-300:
        return "0"
    big = max(abs(v), spacing)
    if 1e-3 <= big < 1e4:
        places = max(0, math.ceil(-math.log10(spacing) - 1e-9)) if spacing > 0 else 0
        return f"{v:.{min(places, 6)}f}".replace("-", "−")
    e = 3 * math.floor(math.log10(big) / 3)
    m = v / 10.0 ** e
    places = max(0, math.ceil(-math.log10(spacing / 10.0 ** e) - 1e-9)) if spacing > 0 else 0
    return f"{m:.{min(places, 4)}f}".replace("-", "−") + "·10" + str(e).translate(SUPERSCRIPT)


def y_limits(values: np.ndarray, log: bool) -> tuple[float, float]:
    """The y range (log10 units on a log axis) in which ``values`` read well (module docstring). A log range
    holds at least two powers of ten: one that spans less is widened to the decade around it (9.79 N: 1 to 10,
    a nearly constant signal drawn as the flat line it is, between labelled ticks)."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if log:
        v = v[v > LOG_FLOOR * 0.999]
        if not v.size:
            return -1.0, 1.0
        lo, hi = math.log10(float(v.min())), math.log10(float(v.max()))
        if math.floor(hi + 1e-9) - math.ceil(lo - 1e-9) < 1:
            lo, hi = min(lo, math.floor(lo + 1e-9)), max(hi, math.ceil(hi - 1e-9))
            if hi - lo < 1:
                hi = lo + 1.0
        pad = PADDING * (hi - lo)
        return lo - pad, hi + pad
    if not v.size:
        return -1.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    mag = max(abs(lo), abs(hi))
    if mag == 0.0:
        return -1.0, 1.0
    if hi - lo < LINEAR_MIN_RANGE * mag:
        mid, half = 0.5 * (lo + hi), 0.5 * LINEAR_MIN_RANGE * mag
        lo, hi = mid - half, mid + half
    pad = PADDING * (hi - lo)
    return lo - pad, hi + pad


class OpaqueGridAxis(pg.AxisItem):
    """GUI thread. pyqtgraph's axis, with readable labels (module docstring) and its translucent grid lines and
    ticks drawn in the opaque colours they show over ``background`` (the plots' uniform background): the same
    picture, but the raster engine no longer alpha-blends every grid line across the plot, which made each
    repaint of the panel about three times as slow. Put it under the curves (a lower z than the view box), or the
    opaque lines would hide them where they cross."""

    def __init__(self, orientation: str, background, **kwargs):
        super().__init__(orientation, **kwargs)
        self._background = QColor(*background)
        self.enableAutoSIPrefix(False)

    def updateAutoSIPrefix(self):
        self.autoSIPrefixScale, self.labelUnitPrefix = 1.0, ""
        self._updateLabel()

    def setLogMode(self, *args, **kwargs):
        super().setLogMode(*args, **kwargs)
        # On a log axis that spans less than a decade only minor ticks have labels: let them be drawn even if
        # they crowd (generateDrawSpecs then drops any that overlap).
        self.style["textFillLimits"] = LOG_TEXT_FILL_LIMITS if self.logMode else LINEAR_TEXT_FILL_LIMITS

    def logTickStrings(self, values, scale, spacing):
        return [log_label(10.0 ** float(v) * scale) for v in values]

    def tickStrings(self, values, scale, spacing):
        if self.logMode:
            return self.logTickStrings(values, scale, spacing)
        return [eng_label(float(v) * scale, float(spacing) * scale) for v in values]

    def boundingRect(self):
        # With the grid shown pyqtgraph bounds a y axis by the plot's height and leaves out any label that would
        # stand out of it: those of the ticks at either end, a short log axis's powers of ten (1 and 10 of 1–10).
        # Half a label's height beyond either end lets them be drawn.
        rect = super().boundingRect()
        if self.orientation in ("left", "right"):
            half = 0.5 * QFontMetricsF(self.style["tickFont"] or QFont()).height()
            rect = rect.adjusted(0, -half, 0, half)
        return rect

    def generateDrawSpecs(self, p):
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis, ticks, text = specs
        kept = []
        # major ticks' labels first (pyqtgraph lists them level by level), and on a log axis powers of ten before
        # all others (pyqtgraph lists a short log axis's ticks as one level: 0.9, 1, 2, … kept 2, 3, 5, 7 only)
        if self.logMode:
            text = sorted(text, key=lambda spec: spec[2] not in POWER_LABELS)
        for spec in text:
            if not any(spec[0].adjusted(-2, -1, 2, 1).intersects(other[0]) for other in kept):
                kept.append(spec)
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
        return axis, opaque, kept


class EventLines(pg.GraphicsObject):
    """GUI thread. The run's events in one plot: a thin vertical line across the view at each event's time, in
    its kind's colour, and an opaque tick at the time axis; the earlier try's events fainter, without ticks. In
    view coordinates along x, the whole height of the view (any y scale, log too). Of events closer than
    :data:`EVENT_SPACING_PX` (whatever their kinds) one line is drawn, the first's: a readable picture, and a cost
    bounded by the plot's width however many events there are. The groups are cut at fixed times (multiples of
    that spacing), so the lines stand still while the time window rolls on."""

    def __init__(self):
        super().__init__()
        self._current: dict[str, np.ndarray] = {}
        self._ghost: dict[str, np.ndarray] = {}
        self.setZValue(5)

    def set_times(self, current: dict, ghost: dict) -> None:
        """``current`` and ``ghost``: kind → times (s) of the events of the run and of its earlier try."""
        self._current, self._ghost = current, ghost
        self.update()

    def viewRangeChanged(self):
        self.prepareGeometryChange()
        super().viewRangeChanged()

    def boundingRect(self) -> QRectF:
        vb = self.getViewBox()
        return QRectF(vb.viewRect()) if vb is not None else QRectF()

    def drawn_times(self) -> dict:
        """kind → the times of the run's events drawn now (within the view, one of each group)."""
        vb = self.getViewBox()
        return {} if vb is None else self._visible(self._current, vb.viewRect(), vb)

    @staticmethod
    def _visible(times: dict, rect, vb) -> dict:
        """kind → the times of ``times`` (kind → times) in ``rect`` drawn: the first of each group of events
        (any kinds) within :data:`EVENT_SPACING_PX` of one another."""
        kinds = list(times)
        t = np.concatenate([times[k] for k in kinds]) if kinds else np.zeros(0)
        which = np.repeat(np.arange(len(kinds)), [len(times[k]) for k in kinds])
        inside = (t >= rect.left()) & (t <= rect.right())
        t, which = t[inside], which[inside]
        spacing = EVENT_SPACING_PX * vb.viewPixelSize()[0]
        if len(t) > 1 and spacing > 0:
            order = np.argsort(t, kind="stable")
            first = np.unique(np.floor(t[order] / spacing), return_index=True)[1]
            t, which = t[order][first], which[order][first]
        return {k: t[which == n] for n, k in enumerate(kinds) if np.any(which == n)}

    def paint(self, painter, *args):
        vb = self.getViewBox()
        if vb is None:
            return
        rect = vb.viewRect()
        top, bottom = rect.top(), rect.bottom()
        tick = EVENT_TICK_PX * vb.viewPixelSize()[1]
        low = min(top, bottom)
        for times, alpha, ticks in ((self._ghost, EVENT_GHOST_ALPHA, False), (self._current, EVENT_ALPHA, True)):
            for kind, t in self._visible(times, rect, vb).items():
                pen = QPen(QColor(*colour_of(kind), alpha))
                pen.setCosmetic(True)
                pen.setWidth(1)
                painter.setPen(pen)
                painter.drawLines([QLineF(QPointF(x, top), QPointF(x, bottom)) for x in t])
                if ticks:
                    pen = QPen(QColor(*colour_of(kind)))
                    pen.setCosmetic(True)
                    pen.setWidth(2)
                    painter.setPen(pen)
                    painter.drawLines([QLineF(QPointF(x, low), QPointF(x, low + tick)) for x in t])


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
    PlotSpec("force", "Constraint force ‖F‖", ("force",), series_unit("constraint_force_magnitude"), log=True),
    PlotSpec("energy", "Energy", ("energy",), series_unit("energy_total"), log_toggle=False, columns=slice(0, 4)),
    PlotSpec("deviation", "Deviation ‖D‖, ‖Ḋ‖ (dashed)", ("deviation", "deviation_rate"), "m, m/s",
             log=True),
    PlotSpec("residual", "Solve residual ‖η‖", ("residual",), "m/s²", log=True),
    PlotSpec("singular", "Singular values of A = J M⁻¹ Jᵀ", ("singular",), "", log=True, log_toggle=False),
    PlotSpec("joint", "Joints q, desired q_d (dashed)", ("joint", "desired"), "rad, m", log_toggle=False),
    PlotSpec("tracking", "Tracking error e = q − q_d", ("tracking_error",), "rad, m", log_toggle=False),
    PlotSpec("parameters", "Adaptive estimates â", ("parameters",), series_unit("parameters"), log_toggle=False),
)
SPECS = {p.key: p for p in PLOTS}


def _hex(rgb) -> str:
    return "#%02x%02x%02x" % tuple(int(c) for c in rgb[:3])


def _value(v: float) -> str:
    if not math.isfinite(v):
        return "–"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.3e}".replace("-", "−")
    return f"{v:.4g}".replace("-", "−")


class _Leave(QObject):
    """GUI thread. Calls ``callback`` when the mouse leaves the widget it filters (or, with ``kind``, on events
    of that type)."""

    def __init__(self, callback, parent=None, kind=QEvent.Type.Leave):
        super().__init__(parent)
        self._callback, self._kind = callback, kind

    def eventFilter(self, obj, event):
        if event.type() == self._kind:
            self._callback()
        return False


def _no_minimum_width(label) -> None:
    """A title never makes the figure wider than its widget: pyqtgraph's LabelItem makes its text's width its
    minimum on every change and resize, and a long title (with its legend) pushed the plots past the dock's right
    edge, clipped; the title fits its legend to the width instead (:meth:`PlotFigure._title`)."""
    update = type(label).updateMin

    def update_min():
        update(label)
        label.setMinimumWidth(0)
        label._sizeHint[Qt.SizeHint.MinimumSize] = (0, label._sizeHint[Qt.SizeHint.MinimumSize][1])
        label.updateGeometry()

    label.updateMin = update_min
    update_min()


class PlotFigure(QObject):
    """GUI thread. The plots of one sample layout on ``graphics`` (module docstring). ``hovered(float or
    None)``: the time under the mouse (interactive figures only)."""

    hovered = Signal(object)

    def __init__(self, graphics: pg.GraphicsLayoutWidget, interactive: bool = True, title_size: str = "9pt",
                 min_plot_height: int = 0, parent=None):
        super().__init__(parent)
        self.graphics = graphics
        self.min_plot_height = int(min_plot_height)
        graphics.setBackground(BACKGROUND)
        self.interactive = interactive
        self.title_size = title_size
        self.layout_spec = None
        self.shown: dict[str, bool] = {p.key: p.shown for p in PLOTS}
        self.log: dict[str, bool] = {p.key: p.log for p in PLOTS}
        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, list] = {}          # key -> [[column, curve, ghost curve, label, colour, dashed]]
        self._series: dict[str, tuple] = {}        # key -> (solid, dashed) of a plot with too many to draw
        self._markers: dict[str, list] = {}
        self._cursor: dict[str, pg.InfiniteLine] = {}
        self._hover: dict[str, pg.InfiniteLine] = {}
        self._rows = np.zeros((0, 1))
        self._hover_t: float | None = None
        self._marks: tuple = ()
        self._events: list = []                    # the run's events (core.events.Event), in time order
        self._event_times: list[float] = []
        self._event_lines: dict[str, EventLines] = {}
        self._event_sets: tuple = ({}, {})
        self._event_kinds: list[str] = []
        self._font = QFont()
        self._font.setPointSizeF(8.5)
        if interactive:
            graphics.scene().sigMouseMoved.connect(self._mouse_moved)
            self._leave = _Leave(lambda: self._set_hover(None), self)
            graphics.viewport().installEventFilter(self._leave)
        # a narrower dock fits fewer legend entries in a title (the rest are counted: "+2")
        self._resize_filter = _Leave(self._resized, self, QEvent.Type.Resize)
        graphics.installEventFilter(self._resize_filter)

    # ---- building ------------------------------------------------------------------------------------------
    def available(self, spec: PlotSpec) -> bool:
        lay = self.layout_spec
        return lay is not None and all(g in lay.groups and lay.size(g) > 0 for g in spec.groups[:1])

    def configure(self, layout, shown: dict | None = None, log: dict | None = None) -> None:
        """Build the plots of ``layout`` (a :class:`studio.run.samples.SampleLayout`), those ``shown``."""
        self.layout_spec = layout
        if shown is not None:
            self.shown.update(shown)
        if log is not None:
            self.log.update(log)
        self.rebuild()

    def rebuild(self) -> None:
        self.graphics.clear()
        self.plots.clear()
        self.curves.clear()
        self._series.clear()
        self._markers.clear()
        self._cursor.clear()
        self._hover.clear()
        self._event_lines.clear()
        if self.layout_spec is None:
            return
        row, first = 0, None
        for spec in PLOTS:
            if not (self.shown[spec.key] and self.available(spec)):
                continue
            plot = self.graphics.addPlot(row=row, col=0, axisItems={
                name: OpaqueGridAxis(name, BACKGROUND) for name in ("left", "bottom")})
            row += 1
            plot.showGrid(x=True, y=True, alpha=0.18)
            for name in ("left", "bottom"):
                plot.getAxis(name).setZValue(plot.vb.zValue() - 1)   # the (opaque) grid under the curves
            plot.setLabel("left", text=spec.unit)
            plot.getAxis("left").setWidth(AXIS_WIDTH)
            plot.setMinimumHeight(self.min_plot_height)
            _no_minimum_width(plot.titleLabel)
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.vb.setMouseEnabled(x=False, y=False)
            plot.enableAutoRange(x=False, y=False)
            plot.setLogMode(y=self.log[spec.key])
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            self.plots[spec.key] = plot
            self.curves[spec.key] = self._make_curves(plot, spec)
            for lines, colour, style in ((self._cursor, CURSOR_COLOUR, Qt.PenStyle.SolidLine),
                                         (self._hover, HOVER_COLOUR, Qt.PenStyle.DashLine)):
                line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(colour, width=1, style=style))
                line.setVisible(False)
                line.setZValue(20)
                plot.addItem(line, ignoreBounds=True)
                lines[spec.key] = line
            events = EventLines()
            events.set_times(*self._event_sets)
            plot.addItem(events, ignoreBounds=True)
            self._event_lines[spec.key] = events
            self._title(spec.key)
        self._time_label()
        self.set_markers(self._marks)
        if self.min_plot_height:
            self.graphics.setMinimumHeight(math.ceil(
                self.graphics.ci.layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).height()))

    def _make_curves(self, plot, spec: PlotSpec) -> list:
        """The curves of ``spec``'s plot: one per series, or a pool of :data:`MAX_CURVES` (and their dashed
        partners) that :meth:`draw` gives the largest series when there are more (their descriptions kept in
        ``_series``)."""
        lay = self.layout_spec
        solid, dashed = [], []                       # [column, label, colour, dashed]
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
                shown = label if n == 0 else f"{label} (q_d)" if group == "desired" else f"{label} (rate)"
                (dashed if n else solid).append([col, shown, PALETTE[k % len(PALETTE)], bool(n), match])
        if len(solid) > MAX_CURVES:
            self._series[spec.key] = (solid, dashed)
            pool = solid[:MAX_CURVES] + (dashed[:MAX_CURVES] if dashed else [])
        else:
            pool = solid + dashed
        return [[col, *self._curve_pair(plot, colour, is_dashed), label, colour, is_dashed]
                for col, label, colour, is_dashed, _ in pool]

    @staticmethod
    def _curve_pair(plot, colour, dashed: bool):
        style = Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine
        ghost = plot.plot([], [], pen=pg.mkPen(colour + (GHOST_ALPHA,), width=1, style=style))
        ghost.setZValue(-1)
        ghost.setVisible(False)
        curve = plot.plot([], [], pen=pg.mkPen(colour, width=1, style=style))   # 1 px: the raster engine's fast
        return curve, ghost                                                    # path (1.5 px: 2x)

    def _choose(self, key: str, rows: np.ndarray, lo: float, hi: float) -> None:
        """Give the curve pool of plot ``key`` the :data:`MAX_CURVES` series largest over [lo, hi] (in their
        order; the dashed partners of those), a curve taking its series' colour."""
        solid, dashed = self._series[key]
        inside = rows[(rows[:, 0] >= lo) & (rows[:, 0] <= hi)] if len(rows) else rows
        columns = np.array([d[0] for d in solid])
        if len(inside):
            with np.errstate(all="ignore"):
                size = np.nan_to_num(np.nanmax(np.abs(inside[:, columns]), axis=0, initial=0.0), nan=0.0)
        else:
            size = np.zeros(len(columns))
        order = np.argsort(-size, kind="stable")[:MAX_CURVES]
        chosen = [solid[i] for i in sorted(order)]
        names = {d[4] for d in chosen}
        partners = [d for d in dashed if d[4] in names][:MAX_CURVES]
        pool = self.curves[key]
        solid_pool = [e for e in pool if not e[5]]
        dashed_pool = [e for e in pool if e[5]]
        for entries, picks in ((solid_pool, chosen), (dashed_pool, partners)):
            for entry, pick in zip(entries, picks + [None] * (len(entries) - len(picks))):
                if pick is None:
                    entry[0] = None
                    continue
                col, label, colour, is_dashed, _ = pick
                if entry[4] != colour:
                    style = Qt.PenStyle.DashLine if is_dashed else Qt.PenStyle.SolidLine
                    entry[1].setPen(pg.mkPen(colour, width=1, style=style))
                    entry[2].setPen(pg.mkPen(colour + (GHOST_ALPHA,), width=1, style=style))
                entry[0], entry[3], entry[4] = col, label, colour

    def undrawn(self, key: str) -> int:
        """How many series of plot ``key`` are not drawn now (:data:`MAX_CURVES`)."""
        if key not in self._series:
            return 0
        return len(self._series[key][0]) - sum(1 for e in self.curves[key] if not e[5] and e[0] is not None)

    def set_log(self, key: str, on: bool) -> None:
        self.log[key] = bool(on)
        if key in self.plots:
            self.plots[key].setLogMode(y=bool(on))

    # ---- titles with the legend (and the values under the mouse) -------------------------------------------
    def _title(self, key: str) -> None:
        plot, spec = self.plots[key], SPECS[key]
        title = spec.title
        if key == "joint" and not self.layout_spec.size("desired"):
            title = "Joint coordinates q"
        entries = []
        t = self._hover_t
        row = None
        if t is not None and len(self._rows):
            k = int(np.clip(np.searchsorted(self._rows[:, 0], t), 0, len(self._rows) - 1))
            row = self._rows[k]
        for col, _, _, label, colour, dashed in self.curves[key]:
            if col is None or (dashed and row is None):
                continue                       # the legend names the solid curves; dashed ones say so in the title
            mark = "╌" if dashed else "━"
            value = "" if row is None else " " + _value(float(row[col]))
            entries.append((f"<span style='color:{_hex(colour)}'>{mark}</span>&nbsp;{label}{value}",
                            f"{mark} {label}{value}"))
        own = plot.width() if plot.width() > 0 else 400.0
        width = max(120.0, min(own, self.graphics.width() - 16) if self.graphics.width() > 0 else own) - 12
        font = QFont(self._font)
        font.setPointSizeF(float(self.title_size.removesuffix("pt")) if self.title_size.endswith("pt") else 9.0)
        metrics = QFontMetricsF(font)
        font.setBold(True)
        used = QFontMetricsF(font).horizontalAdvance(title) + 30
        note = ""                                # a plot of more series than it draws says so before its legend
        if key in self._series:
            total = len(self._series[key][0])
            note = f"(the {total - self.undrawn(key)} largest of {total})"
            used += metrics.horizontalAdvance(note) + 14
            note = f"<span style='color:#8a8f98'>{note}</span> &nbsp;"
        shown = []
        for html, plain in entries:
            w = metrics.horizontalAdvance(plain) + 14
            if used + w > width and shown:
                break
            shown.append(html)
            used += w
        rest = len(entries) - len(shown)
        more = f" &nbsp;<span style='color:#8a8f98'>+{rest}</span>" if rest else ""
        text = f"<b>{title}</b> &nbsp; " + note + " &nbsp;".join(shown) + more
        plot.setTitle(text, size=self.title_size, color=TITLE_COLOUR)
        plot.layout.setRowFixedHeight(0, TITLE_HEIGHT)
        plot.titleLabel.setMaximumHeight(TITLE_HEIGHT)

    def retitle(self) -> None:
        for key in self.plots:
            self._title(key)

    def _resized(self) -> None:
        self.retitle()
        if self._event_kinds:
            self._time_label()

    def _mouse_moved(self, pos) -> None:
        for plot in self.plots.values():
            if plot.vb.sceneBoundingRect().contains(pos):
                t = float(plot.vb.mapSceneToView(pos).x())
                self._set_hover(t)
                self._event_tooltip(plot, t)
                return
        self._set_hover(None)

    def _set_hover(self, t) -> None:
        if t == self._hover_t:
            return
        self._hover_t = t
        for key, line in self._hover.items():
            line.setVisible(t is not None)
            if t is not None:
                line.setValue(t)
        self.retitle()
        self.hovered.emit(t)

    # ---- data ----------------------------------------------------------------------------------------------
    def draw(self, rows: np.ndarray, ghost: np.ndarray | None = None, x_range=None, cursor: float | None = None,
             keys=None):
        """Show ``rows`` (and the earlier try ``ghost``, faded) over ``x_range`` (default: the rows' span), with
        the current time ``cursor`` marked (None: no mark): in the plots ``keys`` (default: all; the others keep
        their curves, and take the time range only)."""
        self._rows = rows
        if x_range is None:
            x_range = (float(rows[0, 0]), float(rows[-1, 0])) if len(rows) else (0.0, 1.0)
        lo, hi = x_range
        if not hi > lo:
            hi = lo + 1.0
        g = None
        if ghost is not None and len(ghost):
            a = np.searchsorted(ghost[:, 0], lo, side="left")
            b = np.searchsorted(ghost[:, 0], hi, side="right")
            g = ghost[max(a - 1, 0):b + 1]
        for key, curves in self.curves.items():
            if keys is not None and key not in keys:
                continue
            log = self.log[key]
            shown = []
            if key in self._series:
                self._choose(key, rows, lo, hi)
            for col, curve, ghost_curve, *_ in curves:
                if col is None:                       # a pool curve with no series to draw
                    curve.setData([], [])
                    ghost_curve.setVisible(False)
                    continue
                y = rows[:, col] if len(rows) else np.zeros(0)
                if log:
                    y = np.where(y > LOG_FLOOR, y, np.where(np.isnan(y), np.nan, LOG_FLOOR))
                curve.setData(rows[:, 0] if len(rows) else np.zeros(0), y, connect="finite")
                shown.append(y[(rows[:, 0] >= lo) & (rows[:, 0] <= hi)] if len(rows) else y)
                if g is not None and len(g):
                    gy = g[:, col]
                    if log:
                        gy = np.where(gy > LOG_FLOOR, gy, np.where(np.isnan(gy), np.nan, LOG_FLOOR))
                    ghost_curve.setData(g[:, 0], gy, connect="finite")
                    ghost_curve.setVisible(True)
                    shown.append(gy)
                elif ghost_curve.isVisible():
                    ghost_curve.setVisible(False)
            plot = self.plots[key]
            y0, y1 = y_limits(np.concatenate(shown) if shown else np.zeros(0), log)
            plot.setYRange(y0, y1, padding=0.0)
            line = self._cursor[key]
            line.setVisible(cursor is not None)
            if cursor is not None:
                line.setValue(cursor)
        if self.plots:
            next(iter(self.plots.values())).setXRange(lo, hi, padding=X_PADDING)
        for plot in self.plots.values():
            plot.vb.updateMatrix()        # now, not when the paint begins: that change asked for a second paint
        if self._hover_t is not None:
            self.retitle()

    def set_markers(self, markers) -> None:
        """Mark edits on the time axis: ``markers`` are :class:`studio.run.messages.Marker` (the newest 40 shown)."""
        self._marks = tuple(markers)[-40:]
        for key, lines in self._markers.items():
            for line in lines:
                self.plots[key].removeItem(line)
        self._markers.clear()
        for n, key in enumerate(self.plots):
            lines = []
            for m in self._marks:
                text = m.text if len(m.text) <= 40 else m.text[:39] + "…"
                line = pg.InfiniteLine(pos=m.t, angle=90, movable=False,
                                       pen=pg.mkPen(MARKER_COLOUR, width=1, style=Qt.PenStyle.DotLine),
                                       label=text if n == 0 else None,
                                       labelOpts={"position": 0.92, "color": (210, 210, 210), "anchors":
                                                  [(0, 0.5), (0, 0.5)], "rotateAxis": (1, 0)} if n == 0 else None)
                line.setToolTip(f"t = {m.t:.4g} s: {m.text}")
                self.plots[key].addItem(line, ignoreBounds=True)
                lines.append(line)
            self._markers[key] = lines

    def set_events(self, events, ghost=()) -> None:
        """Mark the run's ``events`` (:class:`core.events.Event`, in time order) in every plot, and those
        of the earlier try (``ghost``) fainter."""
        def by_kind(marks) -> dict:
            out: dict[str, list] = {}
            for m in marks:
                out.setdefault(m.kind, []).append(m.t)
            return {k: np.asarray(v, dtype=float) for k, v in out.items()}
        self._events = list(events)
        self._event_times = [m.t for m in self._events]
        self._event_sets = (by_kind(self._events), by_kind(ghost))
        for lines in self._event_lines.values():
            lines.set_times(*self._event_sets)
        kinds = [k for k in self._event_sets[0]] + [k for k in self._event_sets[1] if k not in self._event_sets[0]]
        if kinds != self._event_kinds:
            self._event_kinds = kinds
            self._time_label()

    def _time_label(self) -> None:
        """The time axis's label, with the legend of the kinds of event marked."""
        if not self.plots:
            return
        last = list(self.plots.values())[-1]
        if not self._event_kinds:
            last.setLabel("bottom", "simulated time", units="s")
            return
        width = (self.graphics.width() if self.graphics.width() > 0 else 400.0) - AXIS_WIDTH - 24
        font = QFont(self._font)
        font.setPointSizeF(self._font.pointSizeF() * 1.25)     # the axis label's own font is larger
        metrics = QFontMetricsF(font)
        used = metrics.horizontalAdvance("simulated time (s)    events: ")
        shown = []
        for k in self._event_kinds:                 # those that fit the width; "+N" for the rest
            w = metrics.horizontalAdvance(f"┃ {k}  ")
            if used + w > width and shown:
                break
            shown.append(f"<span style='color:{_hex(colour_of(k))}'>┃</span>&nbsp;{k}")
            used += w
        rest = len(self._event_kinds) - len(shown)
        more = f" &nbsp;+{rest}" if rest else ""
        last.setLabel("bottom", "simulated time (s) &nbsp;&nbsp; events: " + " &nbsp;".join(shown) + more)

    def events_near(self, t: float, tolerance: float) -> list:
        """The run's events within ``tolerance`` seconds of time ``t`` (nearest first)."""
        a = bisect.bisect_left(self._event_times, t - tolerance)
        b = bisect.bisect_right(self._event_times, t + tolerance)
        return sorted(self._events[a:b], key=lambda m: abs(m.t - t))

    def event_lines(self, key: str) -> EventLines | None:
        """The event lines drawn in plot ``key`` (for tests)."""
        return self._event_lines.get(key)

    def _event_tooltip(self, plot, t: float | None) -> None:
        if t is None or not self._events:
            return
        near = self.events_near(t, EVENT_HOVER_PX * plot.vb.viewPixelSize()[0])
        if not near:
            QToolTip.hideText()
            return
        lines = [m.text for m in near[:6]] + ([f"… and {len(near) - 6} more"] if len(near) > 6 else [])
        QToolTip.showText(QCursor.pos(), "\n".join(lines), self.graphics)

    def curve_data(self, key: str) -> list:
        """``[(label, x, y)]`` of the shown curves of plot ``key`` (for tests and exports)."""
        return [(label, c.xData, c.yData) for col, c, _, label, _, _ in self.curves.get(key, []) if col is not None]
