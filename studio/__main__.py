"""``python -m studio [SCENE]``: open a scene in the studio (default: scenes/three_link_arm.json).

``--screenshot PATH --after SECONDS`` plays for that many seconds of wall-clock time, saves a PNG of the whole
window and quits (for the README, for checking a change by eye, and for headless runs under ``xvfb-run``).

Thread: GUI (the process's main thread).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import DEFAULT_SCENE

__all__ = ["main"]


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="limbstudio", description="Simulate constrained rigid bodies and "
                                     "articulated limbs in a desktop studio.")
    parser.add_argument("scene", nargs="?", type=Path, default=DEFAULT_SCENE,
                        help=f"scene document (JSON); default: {DEFAULT_SCENE}")
    parser.add_argument("--screenshot", type=Path, metavar="PATH",
                        help="play, save a PNG of the window to PATH and quit")
    parser.add_argument("--after", type=float, metavar="SECONDS",
                        help="with --screenshot: wall-clock seconds to play before the picture (default 1)")
    parser.add_argument("--size", default="1100x760", metavar="WxH", help="window size (default 1100x760)")
    args = parser.parse_args(argv)
    if args.after is not None and args.screenshot is None:
        parser.error("--after needs --screenshot")
    if args.after is not None and not args.after >= 0:
        parser.error("--after must be a number of seconds >= 0")
    try:
        args.size = tuple(int(v) for v in args.size.lower().split("x"))
        assert len(args.size) == 2 and min(args.size) > 0
    except (ValueError, AssertionError):
        parser.error(f"--size must look like 1100x760, got {args.size!r}")
    return args


def main(argv=None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)

    import core  # after parsing, so that --help is quick
    from PySide6.QtCore import QCoreApplication, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    try:
        model = core.load_scene(args.scene)
    except (core.SceneError, OSError, ValueError) as exc:
        print(f"limbstudio: cannot open {args.scene}: {exc}", file=sys.stderr)
        return 2

    # Before the QApplication exists, or a second GL view in the process draws nothing (shared/GUI-CI.md).
    app = QApplication.instance()
    if app is None:
        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
        app = QApplication([sys.argv[0]])
    app.setApplicationName("limbstudio")

    from .main_window import MainWindow
    window = MainWindow(model)
    window.resize(*args.size)
    window.show()

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
    return status["code"] or code


if __name__ == "__main__":
    sys.exit(main())
