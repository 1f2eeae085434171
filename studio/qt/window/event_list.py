"""The event list: the run's events (touchdowns, bounces, lift-offs, slips, sticks, broken constraints, rank
changes of J) as rows of time, kind, what (contact point or constraint) and its impulse or force.

Thread: GUI. :class:`EventList` shows the :class:`studio.run.events.EventLog` the plots dock keeps (bounded: the
last 10 000 events), refreshed a few times a second (appended rows are inserted, rows dropped from the front
removed; a new run or going back in time starts the list over). Selecting a row (click or arrow keys) asks to
seek the timeline to that event's time (``seek_requested``), which pauses the run there. While the newest row is
in view the list follows the run. A kind filter shows one kind of event.
"""
from __future__ import annotations

import math
import time

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QIcon, QPixmap
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableView,
                               QVBoxLayout, QWidget)

from studio.run.events import KIND_ORDER, EventLog, colour_of

__all__ = ["EventList", "EventTableModel", "COLUMNS"]

COLUMNS = ("t [s]", "kind", "what", "impulse / force")
ALL_KINDS = "all events"


def _dot(rgb) -> QIcon:
    pix = QPixmap(10, 10)
    pix.fill(QColor(*rgb))
    return QIcon(pix)


class EventTableModel(QAbstractTableModel):
    """GUI thread. The rows of an :class:`EventLog` (those of ``kind`` only, when set), kept in step by
    :meth:`refresh`."""

    def __init__(self, log: EventLog, parent=None):
        super().__init__(parent)
        self.log = log
        self.kind: str | None = None
        self._rows: list = []
        self._seqs: list[int] = []                 # the log's sequence number of each row
        self._generation = log.generation
        self._next = log.next_seq
        self._icons = {}
        self._rebuild()

    # ---- Qt's model interface ------------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        m = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (f"{m.t:.6f}", m.kind, m.what, m.value_text)[col]
        if role == Qt.ItemDataRole.ToolTipRole:
            return m.text
        if role == Qt.ItemDataRole.DecorationRole and col == 1:
            icon = self._icons.get(m.kind)
            if icon is None:
                icon = self._icons[m.kind] = _dot(colour_of(m.kind))
            return icon
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return m
        return None

    # ---- following the log ---------------------------------------------------------------------------------
    def event_at(self, row: int):
        """The :class:`core.events.Event` of ``row``. (Not ``event``: that name is ``QObject.event``, which Qt
        calls with every QEvent delivered to the model — a timer, ``deleteLater`` — issue 27.)"""
        return self._rows[row]

    def set_kind(self, kind: str | None) -> None:
        self.kind = kind
        self._rebuild()

    def _keep(self, m) -> bool:
        return self.kind is None or m.kind == self.kind

    def _rebuild(self) -> None:
        self.beginResetModel()
        log = self.log
        pairs = [(log.first_seq + i, m) for i, m in enumerate(log.events) if self._keep(m)]
        self._seqs = [s for s, _ in pairs]
        self._rows = [m for _, m in pairs]
        self._generation, self._next = log.generation, log.next_seq
        self.endResetModel()

    def refresh(self) -> bool:
        """Bring the rows in step with the log; True if they changed."""
        log = self.log
        if log.generation != self._generation:
            self._rebuild()
            return True
        changed = False
        gone = 0
        while gone < len(self._seqs) and self._seqs[gone] < log.first_seq:
            gone += 1
        if gone:
            self.beginRemoveRows(QModelIndex(), 0, gone - 1)
            del self._rows[:gone], self._seqs[:gone]
            self.endRemoveRows()
            changed = True
        if log.next_seq != self._next:
            start = max(self._next, log.first_seq)
            new = [(start + i, m) for i, m in enumerate(log.since(start)) if self._keep(m)]
            self._next = log.next_seq
            if new:
                n = len(self._rows)
                self.beginInsertRows(QModelIndex(), n, n + len(new) - 1)
                self._seqs.extend(s for s, _ in new)
                self._rows.extend(m for _, m in new)
                self.endInsertRows()
                changed = True
        return changed


class EventList(QWidget):
    """GUI thread. The event list dock's content, showing ``log``. ``seek_requested(float)``: the user selected
    an event (go to its time)."""

    seek_requested = Signal(float)

    def __init__(self, log: EventLog, parent=None, refresh_ms: int = 250):
        super().__init__(parent)
        self.model = EventTableModel(log, self)
        self.kind_combo = QComboBox()
        self.kind_combo.addItem(ALL_KINDS)
        for kind in KIND_ORDER:
            self.kind_combo.addItem(_dot(colour_of(kind)), kind)
        self.kind_combo.setToolTip("Show every event, or one kind")
        self.kind_combo.currentTextChanged.connect(self._kind_chosen)
        self.count_label = QLabel()
        self.count_label.setStyleSheet("color: palette(mid);")
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col, width in enumerate((84, 96, 92)):
            header.resizeSection(col, width)
        self.table.selectionModel().currentRowChanged.connect(self._row_chosen)
        self.table.clicked.connect(self._clicked)
        self._sought = (-1, 0.0)                   # (row, when) of the last seek asked for
        self.table.setToolTip("Select an event to go to its time (the run pauses there)")
        bar = QHBoxLayout()
        bar.setContentsMargins(2, 0, 2, 0)
        bar.addWidget(self.kind_combo)
        bar.addStretch(1)
        bar.addWidget(self.count_label)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.setSpacing(2)
        outer.addLayout(bar)
        outer.addWidget(self.table, 1)
        self._refreshing = False
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.refresh)
        self._timer.start(refresh_ms)
        self._count()

    @property
    def log(self) -> EventLog:
        return self.model.log

    @Slot()
    def refresh(self) -> None:
        """Follow the log (on a timer; tests may call it)."""
        bar = self.table.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        self._refreshing = True
        try:
            changed = self.model.refresh()
        finally:
            self._refreshing = False
        if changed:
            self._count()
            if at_end and not self.table.selectionModel().hasSelection():
                self.table.scrollToBottom()

    def _count(self) -> None:
        log = self.log
        text = f"{self.model.rowCount()} of {len(log)}" if self.model.kind else f"{len(log)}"
        text += " events"
        if log.dropped:
            text += f" (the {log.dropped} oldest dropped)"
        self.count_label.setText(text)

    def _kind_chosen(self, text: str) -> None:
        self._refreshing = True
        try:
            self.model.set_kind(None if text == ALL_KINDS else text)
        finally:
            self._refreshing = False
        self._count()

    def select_row(self, row: int) -> None:
        """Select ``row`` as a click would (and so seek to its time)."""
        self.table.selectRow(row)
        self.table.setCurrentIndex(self.model.index(row, 0))

    def row_of(self, kind: str, t: float | None = None) -> int:
        """The row of the first event of ``kind`` (the one nearest ``t``, if given), or −1."""
        rows = [r for r in range(self.model.rowCount()) if self.model.event_at(r).kind == kind]
        if not rows:
            return -1
        if t is None:
            return rows[0]
        return min(rows, key=lambda r: abs(self.model.event_at(r).t - t))

    @Slot(QModelIndex, QModelIndex)
    def _row_chosen(self, current: QModelIndex, _previous) -> None:
        if self._refreshing or not current.isValid():
            return
        self._seek_to(current.row())

    @Slot(QModelIndex)
    def _clicked(self, index: QModelIndex) -> None:
        """A click on the row already selected goes to its time again (after the timeline was moved)."""
        row, when = self._sought
        if index.isValid() and not (index.row() == row and time.monotonic() - when < 0.5):
            self._seek_to(index.row())

    def _seek_to(self, row: int) -> None:
        self._sought = (row, time.monotonic())
        t = self.model.event_at(row).t
        if math.isfinite(t):
            self.seek_requested.emit(t)
