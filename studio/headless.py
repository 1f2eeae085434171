"""The studio's pictures without its window, for papers and CI::

    python -m studio render SCENE --duration T --fps F --out movie.mp4 [--size WxH] [--plots NAMES]
    python -m studio screenshot SCENE --time T --out shot.png [--size WxH]
    python -m studio plots SCENE --duration T --out DIR [--size WxH] [--plots NAMES]
    python -m studio strip SCENE --from T0 --to T1 --frames N --out strip.png [--size WxH] [--layout row|overlay]

``render`` writes a video of T simulated seconds at F frames per second — T·F frames, lasting T seconds — as MP4
(H.264), GIF or a folder of PNG frames (by the suffix of ``--out``; none: a folder), the viewport alone or with
the plots named by ``--plots`` beside it (force, energy, deviation, residual, singular, joint, tracking,
parameters; "all"), time-aligned (the curves grow to the frame's time). ``screenshot`` writes a PNG of the
viewport at simulated time T. ``plots`` writes DIR/plots.png and DIR/plots.svg (the plots of the whole run), one
PNG per plot, and DIR/timeseries.csv (every step, full precision, the columns of ``python -m core run``; see
:mod:`studio.run.runrecords`). ``strip`` writes one PNG of N frames evenly spaced from T0 to T1 (both included), as
papers print a motion: ``row`` — side by side, each WxH with its simulated time (and, in a scene with contacts,
whether any touches) under it; ``overlay`` — a stroboscopic WxH picture of every pose, earlier ones fainter
(:mod:`studio.qt.run.strip`). Either way the camera is fixed for the whole strip, framed on the bodies over the
interval (:func:`studio.geometry.framing.frame_motion`; it follows no body).

The simulation runs on this thread, step by step as in the studio (:mod:`studio.run.stepping`: the same numbers as
``python -m core run``), and each frame is drawn from the state at its time (:func:`core.drawing.draw_list`) by an
off-screen viewport. Files are complete or absent.

Display: the pictures need OpenGL, which needs an X server. Without ``DISPLAY`` these commands start their own
virtual one (``Xvfb``) for as long as they run, or say exactly what to install. Exit codes: 0 done, 2 bad input
or a machine that cannot draw (with what to install), 3 the simulation diverged (nothing written).

Thread: the process's main thread (GUI).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main", "COMMANDS", "INSTALL_HINT", "ensure_display"]

COMMANDS = ("render", "screenshot", "plots", "strip")
INSTALL_HINT = ("apt-get install -y --no-install-recommends xvfb xauth libgl1-mesa-dri libegl1 libglib2.0-0 "
                "libfontconfig1 libdbus-1-3 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 "
                "libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xfixes0 fonts-dejavu-core")


class Unusable(Exception):
    """This machine cannot draw the pictures (the message says what to install)."""


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().replace("×", "x").split("x"))
        assert w > 0 and h > 0
    except (ValueError, AssertionError):
        raise argparse.ArgumentTypeError(f"a size looks like 1280x720, not {text!r}") from None
    return w, h


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="limbstudio", description="Pictures of a scene without the studio's window.")
    sub = p.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render", help="a video on simulated time (MP4, GIF or PNG frames)")
    render.add_argument("scene", type=Path)
    render.add_argument("--duration", type=float, required=True, help="simulated seconds")
    render.add_argument("--fps", type=float, default=30.0, help="frames per simulated second (default 30)")
    render.add_argument("--out", type=Path, required=True, help="movie.mp4, movie.gif, or a folder for PNG frames")
    render.add_argument("--size", type=_size, default=(960, 720), help="the viewport's picture, WxH (default "
                        "960x720; rounded down to multiples of 16)")
    render.add_argument("--plots", default="", help="plots beside the viewport, comma-separated (force, energy, "
                        "deviation, residual, singular, joint, tracking, parameters) or 'all'")
    shot = sub.add_parser("screenshot", help="a PNG of the viewport at a simulated time")
    shot.add_argument("scene", type=Path)
    shot.add_argument("--time", type=float, default=0.0, help="simulated seconds (default 0)")
    shot.add_argument("--out", type=Path, required=True)
    shot.add_argument("--size", type=_size, default=(1280, 960))
    plots = sub.add_parser("plots", help="the plots of a run (PNG, SVG) and its time series (CSV)")
    plots.add_argument("scene", type=Path)
    plots.add_argument("--duration", type=float, required=True, help="simulated seconds")
    plots.add_argument("--out", type=Path, required=True, help="a folder")
    plots.add_argument("--size", type=_size, default=None, help="of plots.png (default 1000 × 220 per plot)")
    plots.add_argument("--plots", default="", help="which plots (default: every one the scene has)")
    strip = sub.add_parser("strip", help="frames of one interval in one PNG: side by side, or one stroboscopic "
                           "picture", description="N frames evenly spaced from --from to --to (both included) in "
                           "one PNG, seen by one fixed camera framed on the bodies over the interval. row: the "
                           "frames side by side (N x W wide), each with its simulated time under it; overlay: every "
                           "pose in one WxH picture, earlier ones fainter. Exit 2 on a bad argument (nothing "
                           "written); the file is complete or absent.")
    strip.add_argument("scene", type=Path)
    strip.add_argument("--from", dest="t0", type=float, required=True, metavar="T0",
                       help="simulated seconds of the first frame (>= 0)")
    strip.add_argument("--to", dest="t1", type=float, required=True, metavar="T1",
                       help="simulated seconds of the last frame (after T0, at most the scene's duration)")
    strip.add_argument("--frames", type=int, default=8, metavar="N",
                       help=f"how many frames, 2 to {STRIP_MAX_FRAMES} (default 8)")
    strip.add_argument("--out", type=Path, required=True, help="the PNG to write")
    strip.add_argument("--size", type=_size, default=None, help="each frame's picture, WxH (default 320x480 in "
                       "a row, 1200x800 for an overlay)")
    strip.add_argument("--layout", choices=("row", "overlay"), default="row",
                       help="row: side by side (default); overlay: one stroboscopic picture")
    return p


STRIP_MAX_FRAMES = 64
STRIP_MAX_WIDTH = 16384        # pixels: a row wider than this is refused (the picture's limit, not the view's)


# ---- a display ------------------------------------------------------------------------------------------------
def ensure_display(size=(1920, 1080)):
    """Make sure Qt can open an OpenGL window here: with no ``DISPLAY`` (on Linux), start a virtual X server
    (Xvfb) and return its process (the caller ends it), else None. Raises :class:`Unusable` with what to
    install when there is no way."""
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        xvfb = shutil.which("Xvfb")
        if xvfb is None:
            raise Unusable("there is no display and no Xvfb to make one; install it (Debian/Ubuntu):\n  "
                           + INSTALL_HINT)
        read, write = os.pipe()
        proc = subprocess.Popen([xvfb, "-displayfd", str(write), "-screen", "0",
                                 f"{max(size[0], 1280)}x{max(size[1], 1024)}x24", "-nolisten", "tcp"],
                                pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(write)
        number = b""
        deadline = time.monotonic() + 20
        with os.fdopen(read, "rb") as pipe:
            while time.monotonic() < deadline:
                chunk = pipe.read(1)
                if not chunk or chunk == b"\n":
                    break
                number += chunk
        if not number.strip().isdigit():
            proc.kill()
            err = proc.stderr.read().decode(errors="replace")[-400:] if proc.stderr else ""
            raise Unusable(f"Xvfb did not start ({err.strip() or 'no display number'}); check the packages:\n  "
                           + INSTALL_HINT)
        os.environ["DISPLAY"] = f":{number.decode().strip()}"
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        _check_qt()
        return proc
    if sys.platform.startswith("linux") and os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "xcb")
        _check_qt()
    return None


def _check_qt() -> None:
    """Qt aborts the process when its platform plugin cannot load (a missing libxcb-…): try it in a child first."""
    code = ("from PySide6.QtWidgets import QApplication\nfrom PySide6.QtGui import QOpenGLContext\n"
            "app = QApplication(['check'])\nctx = QOpenGLContext()\nraise SystemExit(0 if ctx.create() else 5)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        tail = "\n".join(result.stderr.strip().splitlines()[-3:])
        why = "no OpenGL context could be made" if result.returncode == 5 else f"Qt cannot start: {tail}"
        raise Unusable(f"{why}; install the display libraries (Debian/Ubuntu):\n  {INSTALL_HINT}")


# ---- running the scene ----------------------------------------------------------------------------------------
class _Run:
    """Main thread. A scene's simulation stepped as the studio steps it, keeping every step's records (for the
    CSV), the plots' rows and the draw lists asked for."""

    def __init__(self, model):
        import core

        from studio.run.runrecords import RunRecords
        from studio.run.samples import sample_layout
        self.model = model
        self.sim = core.Simulation(model)
        self.layout = sample_layout(model, self.sim)
        self.records = RunRecords(limit_bytes=1 << 62)
        self.rows = []
        self._keep(self.sim.run(0.0), first=True)

    def _keep(self, records: dict, first: bool = False) -> None:
        from studio.run.messages import SampleBatch, frozen_records
        from studio.run.samples import sample_rows
        start = 0 if first else 1
        if len(records["t"]) <= start:
            return
        self.rows.append(sample_rows({k: v[start:] for k, v in records.items()}, self.layout))
        self.records.add(SampleBatch(0, self.layout, self.rows[-1], records=frozen_records(records, start),
                                     model=self.model))

    def advance_to(self, t: float) -> None:
        """Step to the first step at or after simulated time ``t`` (raises ``core.DivergenceError``)."""
        from studio.run.stepping import fixed_step, run_steps, steps_to
        sim = self.sim
        while sim.state.t < t - 1e-12 * max(1.0, abs(t)):
            n = min(steps_to(sim, t), 5000) if fixed_step(sim) else 5000
            self._keep(run_steps(sim, max(n, 1), until=t))

    def plot_rows(self):
        import numpy as np
        return np.vstack(self.rows) if self.rows else np.zeros((0, self.layout.width))


def _plot_keys(text: str, layout) -> list[str]:
    from studio.qt.window.plotfigure import PLOTS
    available = [p.key for p in PLOTS if all(g in layout.groups and layout.size(g) > 0 for g in p.groups[:1])]
    if not text:
        return []
    if text.strip() == "all":
        return available
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in {p.key for p in PLOTS}]
    if unknown:
        raise ValueError(f"unknown plot(s) {', '.join(unknown)}; choose from {', '.join(p.key for p in PLOTS)}")
    missing = [k for k in keys if k not in available]
    if missing:
        raise ValueError(f"this scene has no {', '.join(missing)} plot; it has {', '.join(available)}")
    return keys


def _viewport(model, size):
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    from studio.qt.viewport.viewport import Viewport
    view = Viewport(model)
    view.set_legend_visible(False)
    view.resize(*size)
    view.show()
    # The window is mapped and its GL context made when the display server answers: a fixed number of event rounds
    # was not enough on a loaded machine (render_image then had no context). Wait for the context, bounded.
    deadline = time.monotonic() + 10.0
    QApplication.processEvents()
    while not view.isValid() and time.monotonic() < deadline:
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.005)
    if not view.isValid():
        raise RuntimeError("the 3D view got no OpenGL context within 10 s (is a display or Xvfb running?)")
    view.frame_scene(initial=True)
    return view


def _render(args, model) -> int:
    from core.drawing import draw_list
    from studio.qt.run.recording import FrameWriter, compose, even_size, image_to_rgb
    run = _Run(model)
    keys = _plot_keys(args.plots, run.layout)
    if not (args.duration > 0 and args.fps > 0):
        raise ValueError("--duration and --fps must be positive")
    n = max(1, round(args.duration * args.fps))
    size = even_size(*args.size)
    view = _viewport(model, size)
    figure = None
    if keys:
        from studio.qt.window.plots import FigureRenderer
        figure = FigureRenderer(run.layout, (even_size(int(0.8 * size[0]), 16)[0], size[1]), keys)
    writer = FrameWriter(args.out, args.fps)
    try:
        for k in range(n):
            t = k / args.fps
            run.advance_to(t)
            draw = draw_list(run.sim)
            picture = image_to_rgb(view.render_image(size, draw))
            plots = None
            if figure is not None:
                rows = run.plot_rows()
                plots = image_to_rgb(figure.render(rows, None, (0.0, args.duration), float(run.sim.state.t)))
            writer.write(compose(picture, plots))
            if sys.stderr.isatty():
                print(f"\rframe {k + 1} of {n} (t = {t:.3f} s)", end="", file=sys.stderr, flush=True)
    except BaseException:
        writer.abort()
        raise
    finally:
        if sys.stderr.isatty():
            print(file=sys.stderr)
    path, count, error = writer.close()
    if error:
        raise RuntimeError(f"could not write {path}: {error}")
    width, height = writer.size
    print(f"limbstudio: wrote {path}: {count} frames at {args.fps:g} fps ({count / args.fps:g} s of video for "
          f"{args.duration:g} s simulated), {width}x{height}")
    return 0


def _screenshot(args, model) -> int:
    from core.drawing import draw_list
    run = _Run(model)
    if args.time < 0:
        raise ValueError("--time must be at least 0")
    run.advance_to(args.time)
    view = _viewport(model, args.size)
    image = view.render_image(args.size, draw_list(run.sim))
    out = _save_image(image, Path(args.out))
    print(f"limbstudio: wrote {out} (t = {run.sim.state.t:.6g} s, {image.width()}x{image.height()})")
    return 0


def _plots(args, model) -> int:
    import pyqtgraph.exporters  # noqa: F401

    from studio.qt.window.plotfigure import PLOTS
    from studio.qt.window.plots import FigureRenderer
    run = _Run(model)
    if not args.duration > 0:
        raise ValueError("--duration must be positive")
    keys = _plot_keys(args.plots, run.layout) or _plot_keys("all", run.layout)
    run.advance_to(args.duration)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = run.plot_rows()
    span = (0.0, float(run.sim.state.t))
    size = args.size or (1000, 220 * len(keys) + 40)
    written = []
    figure = FigureRenderer(run.layout, size, keys)
    try:
        image = figure.render(rows, None, span)
        written.append(_save_image(image, out / "plots.png"))
        tmp = out / ".plots.svg.tmp"
        pyqtgraph.exporters.SVGExporter(figure.widget.ci).export(str(tmp))
        os.replace(tmp, out / "plots.svg")
        written.append(out / "plots.svg")
    finally:
        figure.close()
    for key in keys:
        one = FigureRenderer(run.layout, (1000, 300), [key])
        try:
            written.append(_save_image(one.render(rows, None, span), out / f"{key}.png"))
        finally:
            one.close()
    written += run.records.write_csv(out / "timeseries.csv")
    titles = {p.key: p.title for p in PLOTS}
    print(f"limbstudio: {model.name}, {span[1]:g} s simulated; wrote " + ", ".join(str(p) for p in written)
          + f" ({', '.join(titles[k] for k in keys)})")
    return 0


def _check_strip(args, model) -> None:
    """Refuse a strip's bad arguments before anything is drawn: a ValueError naming the argument and its value."""
    import math
    duration = float(model.settings.get("duration", 10.0))
    if not (math.isfinite(args.t0) and args.t0 >= 0):
        raise ValueError(f"--from must be a time of at least 0 s, got {args.t0:g}")
    if not math.isfinite(args.t1) or args.t1 <= args.t0:
        raise ValueError(f"--to must be after --from ({args.t0:g} s), got {args.t1:g}")
    if args.t1 > duration + 1e-9:
        raise ValueError(f"--to {args.t1:g} is beyond the scene's duration ({duration:g} s)")
    if not 2 <= args.frames <= STRIP_MAX_FRAMES:
        raise ValueError(f"--frames must be from 2 to {STRIP_MAX_FRAMES}, got {args.frames}")
    if args.size is None:
        args.size = (320, 480) if args.layout == "row" else (1200, 800)
    w, h = args.size
    if min(w, h) < 64 or max(w, h) > 8192:
        raise ValueError(f"--size must be from 64 to 8192 pixels each way, got {w}x{h}")
    if args.layout == "row" and w * args.frames > STRIP_MAX_WIDTH:
        raise ValueError(f"--size {w}x{h} with --frames {args.frames} makes a row {w * args.frames} pixels wide; "
                         f"at most {STRIP_MAX_WIDTH}")
    _check_writable_png(args.out)


def _check_writable_png(out: Path) -> None:
    """A PNG can be written at ``out`` (its folder may not exist yet): else a ValueError naming --out."""
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; give a .png file")
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out {out} must end in .png")
    folder = out.resolve().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"--out {out}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (out.exists() and not os.access(out.parent, os.W_OK)):
        raise ValueError(f"--out {out}: cannot write in {folder}")


def _strip(args, model) -> int:
    from core.contacts import OPEN
    from core.drawing import draw_list
    from studio.geometry.framing import frame_motion
    from studio.qt.run.strip import overlay_image, row_image, strip_times
    _check_strip(args, model)
    run = _Run(model)
    times = strip_times(args.t0, args.t1, args.frames)
    draws = []
    for t in times:
        run.advance_to(t)
        draws.append(draw_list(run.sim))
    size = args.size
    view = _viewport(model, size)
    view.fix_camera(frame_motion(model, [d.shape_poses for d in draws], aspect=size[0] / size[1],
                                 floor_z=view.framing.floor_z))
    frames = [view.render_image(size, d) for d in draws]

    def touching(d):
        return None if d.contacts is None else bool(any(int(m) != OPEN for m in d.contacts.mode))

    if args.layout == "row":
        labels = [[f"t = {d.t:.3f} s"] + ([] if touching(d) is None else ["contact" if touching(d) else "airborne"])
                  for d in draws]
        image = row_image(frames, labels)
    else:
        view.set_bodies_visible(False)
        try:
            background = view.render_image(size, draws[-1])
        finally:
            view.set_bodies_visible(True)
        step = (draws[-1].t - draws[0].t) / (len(draws) - 1)
        caption = [f"{model.name}: {len(draws)} poses from t = {draws[0].t:.3f} s to {draws[-1].t:.3f} s, "
                   f"{1000 * step:.1f} ms apart; earlier poses fainter"]
        contact = [touching(d) for d in draws]
        if contact[0] is not None:
            caption.append("in contact at pose " + (", ".join(str(k + 1) for k, c in enumerate(contact) if c)
                                                    or "none"))
        image = overlay_image(background, frames, caption)
    path = _save_image(image, args.out)
    print(f"limbstudio: wrote {path}: {len(draws)} frames ({args.layout}) from t = {draws[0].t:.6g} to "
          f"{draws[-1].t:.6g} s, {image.width()}x{image.height()}")
    return 0


def _save_image(image, path: Path) -> Path:
    """Write ``image`` as a PNG at ``path`` (its folder made if missing), complete or not at all
    (:func:`core.fileio.atomic_write_bytes`: a hidden file beside it, renamed into place)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    from core.fileio import atomic_write_bytes
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise OSError(f"could not encode {path} as PNG")
    buffer.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_bytes(path, bytes(data))


def main(argv) -> int:
    args = _parser().parse_args(argv)
    import core
    try:
        model = core.load_scene(args.scene)
    except (core.SceneError, OSError) as exc:
        print(f"limbstudio: cannot open {args.scene}: {exc}", file=sys.stderr)
        return 2
    if args.command == "strip":
        try:
            _check_strip(args, model)          # before a display is made: a bad argument costs nothing
        except ValueError as exc:
            print(f"limbstudio: strip: {exc}", file=sys.stderr)
            return 2
    try:
        display = ensure_display(getattr(args, "size", None) or (1280, 1024))
    except Unusable as exc:
        print(f"limbstudio: cannot draw here: {exc}", file=sys.stderr)
        return 2
    try:
        from PySide6.QtCore import QCoreApplication, Qt
        from PySide6.QtWidgets import QApplication
        if QApplication.instance() is None:
            QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
            app = QApplication([sys.argv[0]])
            app.setApplicationName("limbstudio")
        command = {"render": _render, "screenshot": _screenshot, "plots": _plots, "strip": _strip}[args.command]
        try:
            return command(args, model)
        except core.DivergenceError as exc:
            print(f"limbstudio: {args.scene}: the simulation diverged, nothing written: {exc}", file=sys.stderr)
            return 3
        except (ValueError, OSError, RuntimeError) as exc:
            print(f"limbstudio: {exc}", file=sys.stderr)
            return 2
    finally:
        if display is not None:
            display.terminate()
            try:
                display.wait(5)
            except subprocess.TimeoutExpired:
                display.kill()
