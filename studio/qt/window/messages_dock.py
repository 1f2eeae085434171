"""The Messages dock: every notice of the studio's :class:`~studio.run.notices.NoticeLog`, newest at the bottom —
wall-clock time, simulated time, severity and text (import warnings of a robot file, the kernels' compile and its
seconds, a divergence, a saved file …). Select rows and Ctrl+C (or the context menu) to copy them as text.

Thread: GUI. :class:`NoticeModel` mirrors the log (the same capacity): the log's listener may be called on any
thread and only emits a signal, so the model changes on the GUI thread (a queued connection when posted from
another one). A notice revised in place (a compile's counter) updates its row.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt, Signal, Slot
from PySide6.QtGui import QColor, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QApplication, QHeaderView, QMenu, QStyle, QTableView

from studio.run.notices import Notice, NoticeLog, Severity

__all__ = ["NoticeModel", "MessagesView"]

COLUMNS = ("Time", "t [s]", "Message")
ERROR_COLOUR = QColor("#ff8a75")
WARNING_COLOUR = QColor("#f0c060")


class _Relay(QObject):
    """GUI thread (lives there; its signal may be emitted from any thread: queued to the GUI thread)."""

    posted = Signal(object)


class NoticeModel(QAbstractTableModel):
    """GUI thread. The notices of ``log``, one row each, oldest first."""

    def __init__(self, log: NoticeLog, parent=None):
        super().__init__(parent)
        self.log = log
        self._rows: list[Notice] = log.notices()
        self._relay = _Relay(self)
        self._relay.posted.connect(self._receive)
        listener = self._relay.posted.emit
        log.subscribe(listener)
        self.destroyed.connect(lambda *_: _forget(log, listener))

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def notice(self, row: int) -> Notice:
        return self._rows[row]

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        n, column = self._rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == 0:
                return time.strftime("%H:%M:%S", time.localtime(n.wall))
            if column == 1:
                return "" if n.t is None else f"{n.t:.4f}"
            return n.text
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{n.severity.name.lower()} from {n.source}: {n.text}"
        if role == Qt.ItemDataRole.DecorationRole and column == 2:
            icon = {Severity.INFO: QStyle.StandardPixmap.SP_MessageBoxInformation,
                    Severity.WARNING: QStyle.StandardPixmap.SP_MessageBoxWarning,
                    Severity.ERROR: QStyle.StandardPixmap.SP_MessageBoxCritical}[n.severity]
            return QApplication.style().standardIcon(icon)
        if role == Qt.ItemDataRole.ForegroundRole and n.severity > Severity.INFO:
            return ERROR_COLOUR if n.severity == Severity.ERROR else WARNING_COLOUR
        if role == Qt.ItemDataRole.TextAlignmentRole and column == 1:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    @Slot(object)
    def _receive(self, notice: Notice) -> None:
        for row in range(len(self._rows) - 1, -1, -1):        # a revised notice: its row, near the bottom
            if self._rows[row].number == notice.number:
                self._rows[row] = notice
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
                return
            if self._rows[row].number < notice.number:
                break
        end = len(self._rows)
        self.beginInsertRows(QModelIndex(), end, end)
        self._rows.append(notice)
        self.endInsertRows()
        extra = len(self._rows) - self.log.capacity
        if extra > 0:
            self.beginRemoveRows(QModelIndex(), 0, extra - 1)
            del self._rows[:extra]
            self.endRemoveRows()


def _forget(log: NoticeLog, listener) -> None:
    try:
        log.unsubscribe(listener)
    except ValueError:
        pass


class MessagesView(QTableView):
    """GUI thread. The Messages dock's table of ``log``; follows the newest notice while scrolled to the bottom."""

    def __init__(self, log: NoticeLog, parent=None):
        super().__init__(parent)
        self.setObjectName("messages_view")
        self.notices = NoticeModel(log, self)
        self.setModel(self.notices)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setWordWrap(False)
        self.setShowGrid(False)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 4)
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        self.notices.rowsAboutToBeInserted.connect(self._remember_bottom)
        self.notices.rowsInserted.connect(self._follow)
        self._at_bottom = True

    def selected_text(self) -> str:
        """The selected notices (all, when none is selected) as tab-separated lines."""
        rows = sorted({i.row() for i in self.selectionModel().selectedRows()})
        model = self.notices
        chosen = [model.notice(r) for r in rows] if rows else [model.notice(r) for r in range(model.rowCount())]
        return model.log.text(chosen)

    def copy(self) -> None:
        QApplication.clipboard().setText(self.selected_text())

    def keyPressEvent(self, event) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy()
            return
        super().keyPressEvent(event)

    def _menu(self, pos) -> None:
        menu = QMenu(self)
        menu.addAction("Copy" if self.selectionModel().hasSelection() else "Copy All", self.copy)
        menu.addAction("Select All", self.selectAll)
        menu.exec(self.viewport().mapToGlobal(pos))

    def _remember_bottom(self, *_) -> None:
        bar = self.verticalScrollBar()
        self._at_bottom = bar.value() >= bar.maximum()

    def _follow(self, *_) -> None:
        if self._at_bottom:
            self.scrollToBottom()
