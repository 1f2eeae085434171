"""``python -m studio [SCENE]`` (also installed as ``limbstudio``): open a scene in the studio (default:
scenes/arm_nail_singular.json, the nailed arm of thesis fig. 2.9) and play it (``--paused``: don't). SCENE may be a
robot file (URDF ``.urdf``, MJCF ``.xml``): it opens as an untitled scene that includes it (``--inertia repair``:
unphysical link inertias repaired, :mod:`core.scene.urdf`); saving asks for a JSON file.

``python -m studio render|screenshot|plots|strip SCENE …`` make the studio's pictures without its window (videos
on simulated time, a picture of the viewport, the plots and the run's CSV, the frames of one interval in one
picture; :mod:`studio.headless`); they start their own virtual display when there is none.

``--screenshot PATH --after SECONDS`` plays for that many seconds of wall-clock time, saves a PNG of the whole
window and quits (for the README, for checking a change by eye, and for headless runs under ``xvfb-run``); it
uses the default layout, not the one remembered. ``--select`` picks an item to show in the inspector (a body,
constraint or force name), ``--speed`` sets the real-time factor asked for.

Thread: GUI (the process's main thread). The scene is read and compiled on a helper thread, behind a splash if
that takes long: on a machine that never ran this version of the core it compiles the few kernels the GUI thread
itself calls (about 15 s). There, the step's kernels (about 100 s) are compiled in a separate process (``python -m
core warm``; :mod:`studio.qt.run.kernels`), alongside on four cores or more, else once the scene is read; the window
opens meanwhile, shows the scene at t = 0, counts the seconds and lets the scene be edited, and the simulation
starts when the kernels are ready.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from studio import DEFAULT_SCENE
from studio.run.notices import caught_import_warnings

__all__ = ["main"]


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="limbstudio", description="Simulate constrained rigid bodies and articulated limbs in a desktop studio.",
        epilog="Without the window (videos on simulated time, pictures, plots and the run's CSV): "
               "limbstudio render SCENE --duration T --fps F --out movie.mp4; "
               "limbstudio screenshot SCENE --time T --out shot.png; "
               "limbstudio plots SCENE --duration T --out DIR; "
               "limbstudio strip SCENE --from T0 --to T1 --frames N --out strip.png [--layout row|overlay] "
               "(each with --help).")
    parser.add_argument("scene", nargs="?", type=Path, default=DEFAULT_SCENE,
                        help=f"scene document (JSON) or robot file (URDF .urdf, MJCF .xml); default: {DEFAULT_SCENE}")
    parser.add_argument("--inertia", choices=("refuse", "repair"),
                        help="for a robot file: refuse an unphysical link inertia (default) or repair it to the "
                             "nearest physical one")
    parser.add_argument("--screenshot", type=Path, metavar="PATH",
                        help="play, save a PNG of the window to PATH and quit")
    parser.add_argument("--after", type=float, metavar="SECONDS",
                        help="with --screenshot: wall-clock seconds to play before the picture (default 1)")
    parser.add_argument("--size", default="1600x1000", metavar="WxH", help="window size (default 1600x1000)")
    parser.add_argument("--select", metavar="NAME",
                        help="select this body, constraint, force, contact, controller or program")
    parser.add_argument("--speed", type=float, metavar="FACTOR", help="real-time factor to ask for (default 1)")
    parser.add_argument("--paused", action="store_true", help="open the scene paused instead of playing it")
    args = parser.parse_args(argv)
    if args.after is not None and args.screenshot is None:
        parser.error("--after needs --screenshot")
    if args.after is not None and not args.after >= 0:
        parser.error("--after must be a number of seconds >= 0")
    if args.speed is not None and not args.speed > 0:
        parser.error("--speed must be positive")
    try:
        args.size = tuple(int(v) for v in args.size.lower().split("x"))
        assert len(args.size) == 2 and min(args.size) > 0
    except (ValueError, AssertionError):
        parser.error(f"--size must look like 1600x1000, got {args.size!r}")
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    from .headless import COMMANDS
    if argv and argv[0] in COMMANDS and not Path(argv[0]).is_file():
        from .headless import main as headless
        return headless(argv)
    args = _parse_args(argv)
    from core.scene.robots import plain_import_warnings
    plain_import_warnings("limbstudio")

    import core  # after parsing, so that --help is quick
    from PySide6.QtCore import QCoreApplication, QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from studio.qt.run.kernels import KernelWarmup, WarmProcess, compile_alongside, kernels_needed
    from studio.run.notices import Severity
    # First run of this version here: compile the kernels in a child process (the GIL-holding compiler must not
    # run in this process), from now on if there are cores enough, else once the scene is read.
    started = time.monotonic()
    cold = kernels_needed()
    warm = WarmProcess(started=started) if cold and compile_alongside() else None
    loader = _SceneLoader(args.scene, args.inertia)
    loader.join(SPLASH_AFTER)              # a missing or invalid file is reported before any window appears
    if loader.done and loader.error is not None:
        if warm is not None:
            warm.close()
        return _cannot_open(args.scene, loader.error)

    # Before the QApplication exists, or a second GL view in the process draws nothing (shared/GUI-CI.md).
    app = QApplication.instance()
    if app is None:
        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
        app = QApplication([sys.argv[0]])
    app.setApplicationName("limbstudio")
    app.setOrganizationName("limbstudio")
    if not loader.done:
        loader.wait_with_splash(app, started if cold else None)
    if loader.error is not None:
        if warm is not None:
            warm.close()
        return _cannot_open(args.scene, loader.error)
    model = loader.model
    if cold and warm is None:
        warm = WarmProcess(started=started)

    from studio.qt.window.main_window import MainWindow
    settings = None
    if args.screenshot is not None:   # the default layout, and nothing remembered from this run
        scratch = tempfile.mkdtemp(prefix="limbstudio-")
        settings = QSettings(os.path.join(scratch, "studio.ini"), QSettings.Format.IniFormat)
    window = MainWindow(model, path=args.scene, settings=settings,
                        warmup=KernelWarmup(warm) if warm is not None else None)
    window.resize(*args.size)
    for note in loader.notes:
        window.status.log.post(note, Severity.WARNING, source="import")
    if args.speed is not None:
        window.controls.set_speed(args.speed)
    if args.select:
        _select(window, args.select)
    window.show()
    _show_uncaught_exceptions(window)
    if not args.paused:
        window.play()                      # queued until the worker is ready (the kernels loaded or compiled)

    status = {"code": 0}
    if args.screenshot is not None:
        def take_screenshot():
            path = args.screenshot
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp.png")
            if window.grab().save(str(tmp), "PNG"):
                os.replace(tmp, path)          # atomic: never a half-written picture
                print(f"limbstudio: saved {path}")
            else:
                print(f"limbstudio: could not write {path}", file=sys.stderr)
                status["code"] = 1
            window.close()

        window.play()
        QTimer.singleShot(int(1000 * (1.0 if args.after is None else args.after)), take_screenshot)

    code = app.exec()
    if window.sim_thread.thread.isRunning():
        # The worker did not stop when the window closed: it is inside a step or still compiling the kernels,
        # which cannot be interrupted. Leave without destroying its running QThread (Qt would abort).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status["code"] or code)
    return status["code"] or code


SPLASH_AFTER = 0.3     # s: reading the scene takes longer than this only while the kernels compile


class _SceneLoader:
    """Reads and compiles a scene on a helper thread, then calls the kernels the GUI thread will call (forward
    kinematics, point Jacobians), so that none of them compiles on the GUI thread. Plain Python; no Qt objects."""

    def __init__(self, path: Path, inertia: str | None = None):
        self.model = self.error = None
        self.notes: list[str] = []          # what an importer dropped from a robot file (for the Messages dock)
        self._inertia = inertia
        self._thread = threading.Thread(target=self._load, args=(path,), name="limbstudio scene loader",
                                        daemon=True)
        self._thread.start()

    def _load(self, path: Path) -> None:
        try:
            model, self.notes = caught_import_warnings(load_model, path, self._inertia)
        except Exception as exc:              # noqa: BLE001 — reported before any window appears, never a traceback
            self.error = exc
            return
        try:
            warm_gui_kernels(model)
        except Exception:                     # only a warm-up: the GUI reports whatever really goes wrong
            pass
        self.model = model

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def wait_with_splash(self, app, compiling_since: float | None = None) -> None:
        """Show a splash that says what takes so long (with the seconds since ``compiling_since``, a
        ``time.monotonic()``, on a first run whose kernels compile), keep it painted, and return when the scene
        is loaded."""
        from PySide6.QtCore import QEventLoop, Qt
        from PySide6.QtGui import QColor, QPixmap
        from PySide6.QtWidgets import QSplashScreen

        from studio.qt.run.kernels import compiling_message
        pixmap = QPixmap(640, 140)
        pixmap.fill(QColor(38, 41, 46))
        splash = QSplashScreen(pixmap)
        shown = None

        def say():
            nonlocal shown
            text = SPLASH_MESSAGE if compiling_since is None else \
                compiling_message(time.monotonic() - compiling_since).replace(" (", "\n(", 1)
            if text != shown:
                shown = text
                splash.showMessage(f"limbstudio\n\n{text}",
                                   Qt.AlignmentFlag.AlignCenter | Qt.AlignmentFlag.AlignVCenter, QColor(220, 223, 228))
        say()
        splash.show()
        while not self.done:
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
            self._thread.join(0.02)
            say()
        splash.close()


SPLASH_MESSAGE = "Reading the scene and preparing the physics kernels…"


def load_model(path: Path, inertia: str | None = None):
    """The compiled model of a scene document, or of a robot file (URDF, MJCF) opened as an untitled scene that
    includes it with the inertia policy ``inertia`` (default refuse); raises ``core.SceneError``."""
    import core
    from core.scene.io import parse_spec, robot_document

    from studio.qt.document.document import is_robot_file
    if is_robot_file(path):
        return core.compile_scene(parse_spec(robot_document(path, inertia), str(path)), str(path))
    return core.load_scene(path)


def warm_gui_kernels(model) -> None:
    """Call the core's kernels that the GUI thread uses (the viewport's forward kinematics; the point Jacobians of
    the scene checks run after an edit) once, on the calling thread. On a machine that never ran this version of
    the core they compile here, not on the GUI thread; later calls from any thread find them compiled."""
    import numpy as np

    import core
    q0 = np.asarray(model.q0, dtype=float)
    core.forward_kinematics(model, q0)
    if model.n_links:
        core.point_jacobian(model, q0, model.link_names[0], (0.0, 0.0, 0.0))


def _cannot_open(path, exc) -> int:
    print(f"limbstudio: cannot open {path}: {exc}", file=sys.stderr)
    return 2


def _show_uncaught_exceptions(window) -> None:
    """An exception in a GUI slot is printed as usual and also shown in the status bar, never lost silently."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        try:
            window.status.error(f"internal error: {kind.__name__}: {value} (details on the console)")
        except RuntimeError:                  # the window is gone
            pass

    sys.excepthook = hook


def _select(window, name: str) -> None:
    spec = window.document.spec
    for section in ("bodies", "constraints", "forces", "contacts", "controllers", "programs"):
        for i, item in enumerate(getattr(spec, section, None) or ()):
            if item.name == name:
                window.selection.set((section, i))
                return
    print(f"limbstudio: --select: no body, constraint, force, contact, controller or program named {name!r}",
          file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
