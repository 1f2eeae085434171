"""The first run of a version of the core on a machine: its compiled kernels are compiled in a separate process.

numba compiles every kernel of the core once per version and machine and caches it on disk (``core.jit``; cold:
about 100 s, then about a second to load). Its compiler holds Python's GIL for long stretches, so compiling in the
studio's own process — even on the worker thread — would leave the window unpainted for seconds at a time. When
``core.jit.kernels_cached()`` says the cache lacks this version's kernels, the studio runs ``python -m core warm
--quiet`` (:data:`WARM_COMMAND`) as a child process instead, says so with the seconds it has taken, keeps the
scene drawn at t = 0 and editable, and starts the simulation worker when the child has finished; the worker then
loads the kernels from the cache. If the child fails, the worker compiles them itself.

The cache can also be judged complete wrongly (a numba upgrade, another CPU, a cache copied in): the worker then
loads the kernels inside :func:`refusing_compiles`, so the first kernel missing from the cache raises
:class:`KernelsNotCached` instead of compiling in this process (for minutes, with the GUI thread starved of the
GIL for seconds at a time); the worker then runs the same child process and loads again (:mod:`studio.qt.run.worker`).

- :class:`WarmProcess` (any thread; plain Python, no Qt): the child process. ``python -m studio`` starts it before
  anything else, so that it overlaps reading the scene.
- :class:`KernelWarmup` (GUI thread): watches a :class:`WarmProcess` on a timer (never blocking) and reports
  ``progress`` once a second and ``finished`` once.
- :func:`refusing_compiles` (the calling thread): no kernel compiles on it while inside.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

__all__ = ["WARM_COMMAND", "WarmProcess", "KernelWarmup", "KernelsNotCached", "kernels_needed", "compiling_message",
           "compile_alongside", "refusing_compiles"]

#: The command that compiles (or loads) every kernel of the core and exits (core/warmup.py).
WARM_COMMAND = (sys.executable, "-m", "core", "warm", "--quiet")

#: The folder the child runs in: the one that holds the ``core`` package, so ``-m core`` finds this very copy.
ROOT = Path(__file__).resolve().parents[3]


def kernels_needed() -> bool:
    """Whether this version's kernels are missing from the on-disk cache (so that they must be compiled first)."""
    try:
        from core import jit
        return not jit.kernels_cached()
    except Exception:          # a core without the check, or a cache folder that cannot be read: just go on
        return False


def compile_alongside() -> bool:
    """Whether the child may compile while this process compiles the few kernels it needs to read a scene and
    draw it (seconds): on two cores the two compilers slow each other down (the window opened after 28 s instead
    of 15, and the kernels were ready after 150 s instead of 115), so there the child starts after."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= 4


def compiling_message(seconds: float | None = None) -> str:
    """What the splash (with the ``seconds`` so far) and the status bar (which counts the seconds itself) say
    while the kernels compile."""
    text = "Compiling the physics kernels for this machine (first run of this version, about two minutes)…"
    return text if seconds is None else f"{text[:-1]} — {seconds:.0f} s…"


class KernelsNotCached(Exception):
    """A kernel this process needs is not in the on-disk cache (raised inside :func:`refusing_compiles`)."""


@contextlib.contextmanager
def refusing_compiles():
    """Within, a kernel that would compile on the calling thread and be cached raises :class:`KernelsNotCached`
    instead (numba's ``numba:compile`` event, which comes only after the cache missed); loading from the cache
    goes on, kernels that are never cached (numba's own small constructors) compile as ever (milliseconds), and
    other threads compile as usual. Nothing is refused without numba (``LIMBSTUDIO_NO_JIT``)."""
    if os.environ.get("LIMBSTUDIO_NO_JIT"):
        yield
        return
    from numba.core import caching, event

    caller = threading.get_ident()

    class Refuse(event.Listener):
        def on_start(self, ev):
            dispatcher = ev.data.get("dispatcher")
            cached = not isinstance(getattr(dispatcher, "_cache", None), (caching.NullCache, type(None)))
            if cached and threading.get_ident() == caller:
                name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", "a kernel")
                raise KernelsNotCached(f"{name} is not in the kernel cache")

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", Refuse()):
        yield


class WarmProcess:
    """Any thread (plain Python). The child process that runs ``command`` (default :data:`WARM_COMMAND`), its
    output kept in a temporary file (a pipe nobody reads could fill up and stall it). A command that cannot be
    started counts as failed at once (``poll()`` −1, ``output`` says why). ``elapsed`` counts from ``started``
    (``time.monotonic()``; default now): the user's wait may have begun before the process did."""

    def __init__(self, command=None, started: float | None = None):
        self.command = tuple(command if command is not None else WARM_COMMAND)
        self.started = time.monotonic() if started is None else started   # (time.monotonic) the wait counts from
        self._log = tempfile.TemporaryFile()
        self._failed_to_start: str | None = None
        try:
            self.process: subprocess.Popen | None = subprocess.Popen(
                self.command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT)
        except OSError as exc:
            self.process = None
            self._failed_to_start = f"{type(exc).__name__}: {exc}"

    def poll(self) -> int | None:
        """The exit code, or None while it runs."""
        if self.process is None:
            return -1
        return self.process.poll()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def failure(self) -> str:
        """Why the process failed (its exit code and the last line it printed), after it has ended; also printed
        on stderr with the last lines of its output."""
        code = self.poll()
        tail = self.output().splitlines()
        why = f"exit code {code}" + (f": {tail[-1]}" if tail else "")
        message = f"compiling the physics kernels in a separate process failed ({why})"
        print(f"limbstudio: {message}\n  command: {' '.join(self.command)}\n"
              + "\n".join("  " + line for line in tail[-20:]), file=sys.stderr)
        return message

    def output(self, limit: int = 2000) -> str:
        """The last ``limit`` characters the process printed (or why it could not start)."""
        if self._failed_to_start is not None:
            return self._failed_to_start
        try:
            self._log.seek(0)
            return self._log.read().decode(errors="replace")[-limit:].strip()
        except (OSError, ValueError):
            return ""

    def stop(self) -> None:
        """End the process if it still runs (only this process: it was started here), and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=3)

    def close(self) -> None:
        self.stop()
        self._log.close()


class KernelWarmup(QObject):
    """GUI thread. Watches a :class:`WarmProcess` (started by :meth:`start` unless one is given) every
    ``interval_ms`` without blocking. Signals: ``progress`` (str, :func:`compiling_message`, once it runs: the
    status bar counts the seconds), ``finished`` (ok: bool, message: str; once)."""

    progress = Signal(str)
    finished = Signal(bool, str)

    def __init__(self, process: WarmProcess | None = None, parent=None, interval_ms: int = 200, command=None):
        super().__init__(parent)
        self.process = process
        self._command = command
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._poll)
        self._shown = False
        self.done = False
        self.ok: bool | None = None

    @property
    def running(self) -> bool:
        return self._timer.isActive()

    def start(self) -> None:
        if self.done or self._timer.isActive():
            return
        if self.process is None:
            self.process = WarmProcess(self._command)
        self._timer.start()
        self._poll()

    def stop(self) -> None:
        """Give up (the window closes): end the child process; ``finished`` is not emitted."""
        self._timer.stop()
        self.done = True
        if self.process is not None:
            self.process.close()

    def _poll(self) -> None:
        code = self.process.poll()
        if code is None:
            if not self._shown:
                self._shown = True
                self.progress.emit(compiling_message())
            return
        self._timer.stop()
        self.done, self.ok = True, code == 0
        message = f"the physics kernels are compiled ({self.process.elapsed:.0f} s)" if code == 0 else \
            self.process.failure()
        self.process.close()
        self.finished.emit(self.ok, message)
