"""The GUI's handle on the simulation worker.

Thread: GUI. :class:`SimulationThread` lives on the GUI thread. It starts a :class:`studio.qt.run.worker.SimulationWorker`
on a QThread, sends it ordered commands through a ``queue.Queue`` and receives what it emits over queued
connections: snapshots latest-wins (however many arrive while the GUI is busy, only the newest is delivered, once,
as ``snapshot_ready``), sample batches and messages every one, in order. :meth:`SimulationThread.call` is the one
way to wait for the worker (a script in the console reading the state): it blocks the GUI thread until the worker
has answered, which it does between steps.
"""
from __future__ import annotations

import concurrent.futures
import functools
import math
import queue
import sys
import threading

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QThread, QTimer, Signal, Slot

from studio.qt.run.collection import GuiThreadCollection
from studio.run.messages import Command, CommandKind, Edit, SampleBatch, Snapshot
from studio.qt.run.worker import SimulationWorker

__all__ = ["SimulationThread", "SWITCH_INTERVAL", "CALL_TIMEOUT"]

SWITCH_INTERVAL = 0.0005   # s: how long a thread may keep the GIL while another one waits for it
CALL_TIMEOUT = 60.0        # s: how long call() waits for the worker by default (a frame's batch takes ms)


class SimulationThread(QObject):
    """GUI thread. Owns the worker thread of one simulation; its signals are emitted on the GUI thread."""

    snapshot_ready = Signal(object)   # the newest Snapshot
    samples_ready = Signal(object)    # every SampleBatch, in order
    error = Signal(str)               # the simulation paused, or a command failed
    notice = Signal(str, float)       # an event of the run (a constraint broke …) and its simulated time
    busy = Signal(str)                # what keeps the worker busy for a while (compiling the kernels); "": done

    def __init__(self, simulation, parent=None, **worker_options):
        super().__init__(parent)
        self._commands: queue.Queue[Command] = queue.Queue()
        self._thread = QThread(self)
        self._thread.setObjectName("simulation")
        # Destroyed without shutdown() (say, its window garbage-collected without being closed): stop the worker
        # before Qt deletes the running QThread child, which would abort the process. No reference to self here.
        # While the worker runs, cyclic garbage is collected on this thread only (studio.qt.run.collection).
        self._collection = GuiThreadCollection()
        self.destroyed.connect(functools.partial(_stop, self._commands, self._thread, collection=self._collection))
        self._taken = threading.Event()                      # set when a snapshot is delivered (worker's _emit)
        self._taken.set()
        self._worker = SimulationWorker(simulation, self._commands, snapshot_taken=self._taken, **worker_options)
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        # Queued connections: the worker emits on its thread, these slots run on ours.
        self._worker.snapshot.connect(self._receive_snapshot)
        self._worker.samples.connect(self._receive_samples)
        self._worker.error.connect(self._receive_error)
        self._worker.notice.connect(self._receive_notice)
        self._worker.busy.connect(self._receive_busy)
        self._pending: Snapshot | None = None
        self.latest: Snapshot | None = None
        self.dt = float(simulation.dt)

    @property
    def thread(self) -> QThread:
        return self._thread

    def start(self) -> None:
        # The worker runs Python code most of the time; with the default 5 ms switch interval every GIL hand-over
        # to the GUI thread (each PyOpenGL call releases and takes it back) can wait 5 ms and a frame takes 200.
        if sys.getswitchinterval() > SWITCH_INTERVAL:
            sys.setswitchinterval(SWITCH_INTERVAL)
        self._collection.hold()
        self._thread.start()

    def send(self, kind: CommandKind, value=None) -> None:
        self._commands.put(Command(kind, value))

    # ---- commands ------------------------------------------------------------------------------------------
    def play(self) -> None:
        self.send(CommandKind.PLAY)

    def pause(self) -> None:
        self.send(CommandKind.PAUSE)

    def step(self, count: int = 1) -> None:
        """Pause, then advance ``count`` time steps (fewer if the run diverges: it pauses and says why)."""
        self.send(CommandKind.STEP, None if count == 1 else int(count))

    def reset(self) -> None:
        self.send(CommandKind.RESET)

    def load(self, spec, keep_state: bool = True, model=None) -> None:
        """Run the validated scene ``spec`` (compiled as ``model``, if the caller has it) from the next step
        boundary on (keeping the state if it can)."""
        self.dt = float(spec.simulation.dt)
        self.send(CommandKind.LOAD, (spec, keep_state, model))

    def edit(self, edit: Edit) -> None:
        """Apply a document edit (:class:`~studio.run.messages.Edit`) at the next step boundary."""
        self.dt = float(edit.spec.simulation.dt)
        self.send(CommandKind.EDIT, edit)

    def seek(self, t: float) -> None:
        """Pause and go to the stored state at simulated time ``t``."""
        self.send(CommandKind.SEEK, float(t))

    def record_frames(self, period: float | None, count: int | None = None) -> None:
        """Ask for a recording frame every ``period`` s of simulated time from now (``count`` of them, or until
        asked again with None)."""
        self.send(CommandKind.RECORD, None if period is None else (float(period), count))

    def set_speed(self, speed: float) -> None:
        """Simulated seconds per wall-clock second; ``math.inf`` for as fast as possible."""
        self.send(CommandKind.SPEED, math.inf if speed is None else float(speed))

    def set_actuator(self, name: str, value: float) -> None:
        self.send(CommandKind.ACTUATOR, (name, float(value)))

    def move_nail(self, name: str, position) -> None:
        self.send(CommandKind.MOVE_NAIL, (name, tuple(float(x) for x in position)))

    def pose(self, positions: dict) -> None:
        """Set hinge and slider joints (name → rad or m) in the current state, their velocities zeroed
        (:func:`studio.run.pose.pose`); not a document edit."""
        self.send(CommandKind.POSE, {str(name): float(v) for name, v in positions.items()})

    def pull(self, body, point, target, stiffness: float, damping: float) -> None:
        self.send(CommandKind.PULL, (body, tuple(map(float, point)), tuple(map(float, target)), float(stiffness),
                                     float(damping)))

    def release(self) -> None:
        self.send(CommandKind.RELEASE)

    def set_residual_limit(self, limit: float) -> None:
        self.send(CommandKind.RESIDUAL_LIMIT, float(limit))

    def call(self, function, timeout: float = CALL_TIMEOUT):
        """``function(simulation)`` run on the worker thread after every command sent before it, and its result
        (its exception is raised here). Waits (GUI thread) up to ``timeout`` s; then what the worker sent until it
        answered has been delivered (``samples_ready``, ``latest``). Raises RuntimeError when the worker is not
        ready (the kernels still load or compile: no snapshot yet) or has stopped, and TimeoutError when it does
        not answer."""
        if not self._thread.isRunning() or self.latest is None:
            raise RuntimeError("the simulation is not running: it starts once the physics kernels are ready "
                               "(View ▸ Messages counts the seconds), and stops when the window closes")
        future = concurrent.futures.Future()
        self.send(CommandKind.CALL, (function, future))
        try:
            result = future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"the simulation did not answer within {timeout:g} s (busy compiling or in a long "
                               "step); try again") from None
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)    # the worker's signals queued until now
        self._deliver()
        return result

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Stop the worker and wait for its thread to finish; True when it did within ``timeout_ms``."""
        return _stop(self._commands, self._thread, timeout_ms, self._collection)

    # ---- what the worker sends -----------------------------------------------------------------------------
    @Slot(object)
    def _receive_snapshot(self, snapshot: Snapshot) -> None:
        if self._pending is None:
            # Deliver after every snapshot already queued behind this one has arrived: latest wins.
            QTimer.singleShot(0, self, self._deliver)   # dropped if we are deleted first
        self._pending = snapshot

    @Slot()
    def _deliver(self) -> None:
        snapshot, self._pending = self._pending, None
        self._taken.set()
        if snapshot is not None:
            self.latest = snapshot
            self.snapshot_ready.emit(snapshot)

    @Slot(object)
    def _receive_samples(self, batch: SampleBatch) -> None:
        self.samples_ready.emit(batch)

    @Slot(str)
    def _receive_error(self, message: str) -> None:
        self.error.emit(message)

    @Slot(str, float)
    def _receive_notice(self, message: str, t: float) -> None:
        self.notice.emit(message, t)

    @Slot(str)
    def _receive_busy(self, message: str) -> None:
        self.busy.emit(message)


def _stop(commands: queue.Queue, thread: QThread, timeout_ms: int = 10_000,
          collection: GuiThreadCollection | None = None) -> bool:
    """Ask the worker to quit and wait for its thread (GUI thread); once it has stopped, hand collection back."""
    if not thread.isRunning():
        if collection is not None:
            collection.release()
        return True
    commands.put(Command(CommandKind.QUIT))
    if thread.wait(timeout_ms):
        if collection is not None:
            collection.release()
        return True
    print(f"limbstudio: the simulation thread did not stop within {timeout_ms / 1000:g} s", file=sys.stderr)
    return False
