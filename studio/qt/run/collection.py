"""Cyclic garbage collected on the GUI thread only, while a worker thread runs Python.

Thread: GUI. Python's automatic collector runs in whichever thread happens to allocate past its threshold. With
the simulation worker running, that is often the worker, and the garbage it then frees is mostly the GUI's: the
pyqtgraph plot items, menus and curves a plot rebuild leaves in reference cycles. Freeing a Qt object disconnects
its signals under Qt's connection lock, and PySide's override look-up inside that needs the GIL — while the GUI
thread, holding the GIL, waits in ``QObject::connect`` for the same lock: both threads stop for ever (seen in the
studio walk test: the worker in ``gc_collect_main`` → ``QObject::disconnect`` → ``GilState::acquire``, the GUI in
``QObject::connect`` → ``QBasicMutex::lockInternal``). Qt objects must be freed on their own thread anyway.

So while any :class:`GuiThreadCollection` is held, automatic collection is off and a timer on the GUI thread does
what it would have done: each :data:`INTERVAL_MS`, the oldest generation whose count passed its threshold is
collected (with the younger ones). Released by the last holder, automatic collection is back on.
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QTimer

__all__ = ["GuiThreadCollection", "INTERVAL_MS", "collect_due"]

INTERVAL_MS = 100

_holders: set[int] = set()
_timer: QTimer | None = None


def collect_due() -> int:
    """Collect as the automatic collector would by now: the oldest generation past its threshold (and the
    younger ones). Returns the number of objects found unreachable."""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for generation in (2, 1, 0):
        if counts[generation] > thresholds[generation]:
            return gc.collect(generation)
    return 0


class GuiThreadCollection:
    """GUI thread. One holder of GUI-thread-only collection (module docstring); :meth:`hold` and :meth:`release`
    may each be called any number of times."""

    def hold(self) -> None:
        global _timer
        if id(self) in _holders:
            return
        _holders.add(id(self))
        if _timer is None:
            gc.disable()
            _timer = QTimer(QCoreApplication.instance())
            _timer.setInterval(INTERVAL_MS)
            _timer.timeout.connect(collect_due)
            _timer.start()

    def release(self) -> None:
        global _timer
        if id(self) not in _holders:
            return
        _holders.discard(id(self))
        if not _holders and _timer is not None:
            _timer.stop()
            _timer.deleteLater()
            _timer = None
            gc.enable()

    @staticmethod
    def active() -> bool:
        """Whether collection is on the GUI thread now (someone holds it)."""
        return bool(_holders)
