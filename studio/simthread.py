"""The GUI's handle on the simulation worker.

Thread: GUI. :class:`SimulationThread` lives on the GUI thread. It starts a :class:`studio.worker.SimulationWorker`
on a QThread, sends it ordered commands through a ``queue.Queue`` and receives its snapshots latest-wins: however
many arrive while the GUI is busy, only the newest is delivered (``snapshot_ready``), once.
"""
from __future__ import annotations

import functools
import queue
import sys

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from .worker import Command, CommandKind, SimulationWorker, Snapshot

__all__ = ["SimulationThread"]


class SimulationThread(QObject):
    """GUI thread. Owns the worker thread of one simulation; its signals are emitted on the GUI thread."""

    snapshot_ready = Signal(object)   # the newest Snapshot
    error = Signal(str)

    def __init__(self, simulation, parent=None, **worker_options):
        super().__init__(parent)
        self._commands: queue.Queue[Command] = queue.Queue()
        self._thread = QThread(self)
        self._thread.setObjectName("simulation")
        # Destroyed without shutdown() (say, its window garbage-collected without being closed): stop the worker
        # before Qt deletes the running QThread child, which would abort the process. No reference to self here.
        self.destroyed.connect(functools.partial(_stop, self._commands, self._thread))
        self._worker = SimulationWorker(simulation, self._commands, **worker_options)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        # Queued connections: the worker emits on its thread, these slots run on ours.
        self._worker.snapshot.connect(self._receive_snapshot)
        self._worker.error.connect(self._receive_error)
        self._pending: Snapshot | None = None
        self.latest: Snapshot | None = None
        self.dt = float(simulation.dt)

    @property
    def thread(self) -> QThread:
        return self._thread

    def start(self) -> None:
        self._thread.start()

    def send(self, kind: CommandKind, value=None) -> None:
        self._commands.put(Command(kind, value))

    def play(self) -> None:
        self.send(CommandKind.PLAY)

    def pause(self) -> None:
        self.send(CommandKind.PAUSE)

    def step(self) -> None:
        self.send(CommandKind.STEP)

    def reset(self) -> None:
        self.send(CommandKind.RESET)

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Stop the worker and wait for its thread to finish; True when it did within ``timeout_ms``."""
        return _stop(self._commands, self._thread, timeout_ms)

    @Slot(object)
    def _receive_snapshot(self, snapshot: Snapshot) -> None:
        if self._pending is None:
            # Deliver after every snapshot already queued behind this one has arrived: latest wins.
            QTimer.singleShot(0, self, self._deliver)   # dropped if we are deleted first
        self._pending = snapshot

    @Slot()
    def _deliver(self) -> None:
        snapshot, self._pending = self._pending, None
        if snapshot is not None:
            self.latest = snapshot
            self.snapshot_ready.emit(snapshot)

    @Slot(str)
    def _receive_error(self, message: str) -> None:
        self.error.emit(message)


def _stop(commands: queue.Queue, thread: QThread, timeout_ms: int = 10_000) -> bool:
    """Ask the worker to quit and wait for its thread (GUI thread)."""
    if not thread.isRunning():
        return True
    commands.put(Command(CommandKind.QUIT))
    if thread.wait(timeout_ms):
        return True
    print(f"limbstudio: the simulation thread did not stop within {timeout_ms / 1000:g} s", file=sys.stderr)
    return False
