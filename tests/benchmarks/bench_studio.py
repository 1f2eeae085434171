"""The studio's real-time check: does a scene run at least as fast as real time inside the studio while the
viewport keeps its frame rate? (The issue's target: the 20-link nailed chain at dt = 1 ms, faster than real time,
the viewport at 60 fps.)

    xvfb-run -a -s "-screen 0 1920x1080x24" .venv/bin/python tests/benchmarks/bench_studio.py \
        [SCENE] [--seconds 10] [--sizes 1600x1000 1024x768] [--speed 1] [--hide plots ...] [--profile]
        [--screenshot PATH]

For each window size: open the studio's main window on the scene (default scenes/chain20_nailed.json) under the
current display, wait for the worker's first snapshot (the compiled kernels loaded, or compiled on a machine that
never ran this version), press Play, let it settle for a second, then measure for ``--seconds`` of wall time:

- real-time factor: simulated seconds per wall second (from the snapshots the GUI received);
- worker steps per second (the snapshots' step counter);
- viewport frames per second: new pictures of the 3D view (its ``paintGL`` calls), and the time each took; also
  how often the window was composed (``frameSwapped``: after a viewport frame, but also after the plots or the
  status bar changed, since a window holding an OpenGL widget is composed as a whole);
- the plots' cost on the GUI thread: ms per wall second spent updating their curves (``PlotPanel.redraw``) and
  painting them (the plots' ``paintEvent``), and how many times a second each happened;
- the window's compositions: ms per wall second the GUI thread spent in them (the window's ``UpdateRequest``:
  painting every changed widget, ``paintGL`` included, and composing the window on the CPU);
- the GUI thread's responsiveness: the longest gap of a 10 ms timer (an input event waits at most about that);
- the process's CPU use (both threads; 100 % = one core), and the machine's 1-minute load average before and
  after (other processes disturb every figure above: compare runs at a similar load);
- at start: how long the window took to appear and the first snapshot to arrive, the worker's status messages
  (the kernels being prepared) and the GUI's longest gaps meanwhile (run with a fresh ``NUMBA_CACHE_DIR`` to see a
  first run on a machine: the kernels then compile, about a minute).

``--speed`` asks for another real-time factor (``inf``: as fast as possible). ``--profile`` runs cProfile on the
worker thread and on the GUI thread during the measurement and prints the top functions of each (by internal
time; ``BENCH_SORT=cumulative`` and ``BENCH_TOP=N`` in the environment change the order and the count). Not a test:
nothing here asserts; it prints numbers to compare before and after a change. llvmpipe (software OpenGL) draws
every pixel of the window on the CPU, so the frame rate depends on the window size.

The script waits by running the event loop (``QEventLoop.exec``), never ``QTest.qWait``, which holds the GIL while
it sleeps and would starve the worker thread.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import math
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")


def _size(text: str) -> tuple[int, int]:
    w, h = (int(v) for v in text.lower().split("x"))
    return w, h


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scene", nargs="?", type=Path, default=ROOT / "scenes" / "chain20_nailed.json")
    p.add_argument("--seconds", type=float, default=10.0, help="wall seconds to measure (default 10)")
    p.add_argument("--settle", type=float, default=1.0, help="wall seconds of play before measuring (default 1)")
    p.add_argument("--sizes", type=_size, nargs="+", default=[(1600, 1000), (1024, 768)],
                   metavar="WxH", help="window sizes, one run each (default: the studio's 1600x1000, and 1024x768)")
    p.add_argument("--speed", type=float, default=1.0, help="real-time factor asked for (default 1; inf: as fast "
                   "as possible)")
    p.add_argument("--hide", nargs="+", default=[], choices=("plots", "scene", "inspector", "controls"),
                   help="hide these docks (to see what each costs)")
    p.add_argument("--profile", action="store_true", help="cProfile the worker and the GUI thread")
    p.add_argument("--screenshot", type=Path, help="save a PNG of the (first) window at the end of its run")
    return p.parse_args(argv)


def spin(ms: int) -> None:
    """Run the GUI's event loop for ``ms`` milliseconds. (Not ``QTest.qWait``: it holds the GIL while it waits,
    so the worker thread would hardly run.)"""
    from PySide6.QtCore import QEventLoop, QTimer
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def measure(app, model, path, size, args) -> dict:
    from PySide6.QtCore import QSettings, QTimer

    import tempfile
    import pyqtgraph as pg
    from PySide6.QtCore import QEvent
    from studio.qt.window.main_window import MainWindow
    from studio.qt.window.plots import PlotPanel
    from studio.qt.viewport.viewport import Viewport

    timed = {"paint": (Viewport, "paintGL"), "plot_update": (PlotPanel, "redraw"),
             "plot_paint": (pg.GraphicsView, "paintEvent")}
    counts = {"frames": 0, "max_gap": 0.0, "ticks": 0, "compose": 0.0, "composes": 0}
    originals = {name: getattr(cls, method) for name, (cls, method) in timed.items()}

    def timer(name, original):
        counts[name], counts[name + "s"] = 0.0, 0

        def timed_call(self, *a, **kw):
            t0 = time.perf_counter()
            try:
                return original(self, *a, **kw)
            finally:
                counts[name] += time.perf_counter() - t0
                counts[name + "s"] += 1
        return timed_call

    for name, (cls, method) in timed.items():
        setattr(cls, method, timer(name, originals[name]))
    tick = QTimer()
    tick.setInterval(10)
    last = [time.perf_counter()]

    long_gaps = []                            # (when, how long) of every gap over 100 ms before the first snapshot

    def on_tick():
        now = time.perf_counter()
        if now - last[0] > 0.1 and "startup" not in counts:
            long_gaps.append((round(last[0] - opened, 1), round(now - last[0], 2)))
        counts["max_gap"] = max(counts["max_gap"], now - last[0])
        counts["ticks"] += 1
        last[0] = now

    tick.timeout.connect(on_tick)
    tick.start()
    settings = QSettings(os.path.join(tempfile.mkdtemp(prefix="bench-studio-"), "s.ini"), QSettings.Format.IniFormat)
    opened = last[0] = time.perf_counter()
    class TimedWindow(MainWindow):
        def event(self, ev):
            if ev.type() != QEvent.Type.UpdateRequest:
                return super().event(ev)
            t0 = time.perf_counter()
            try:
                return super().event(ev)
            finally:
                counts["compose"] += time.perf_counter() - t0
                counts["composes"] += 1

    win = TimedWindow(model, path=path, settings=settings)
    win.file_actions.ask_to_save = lambda: "discard"
    win.resize(*size)
    for name in args.hide:
        getattr(win, {"plots": "plots_dock", "scene": "tree_dock", "inspector": "inspector_dock",
                      "controls": "controls_dock"}[name]).hide()
    win.show()
    shown = time.perf_counter() - opened
    busy = []
    if hasattr(win.sim_thread, "busy"):
        win.sim_thread.busy.connect(lambda text: busy.append((round(time.perf_counter() - opened, 2), text)))
    st, view = win.sim_thread, win.viewport

    def wait_until(cond, timeout):
        end = time.perf_counter() + timeout
        while not cond():
            if time.perf_counter() > end:
                raise TimeoutError
            spin(10)

    wait_until(lambda: st.latest is not None, 600)
    first_snapshot = time.perf_counter() - opened
    startup_gap = counts["max_gap"]
    counts["startup"] = True

    view.frameSwapped.connect(lambda: counts.__setitem__("frames", counts["frames"] + 1))

    worker_profile = cProfile.Profile() if args.profile else None
    if worker_profile is not None:            # enabled on the worker thread itself (cProfile is per thread), by
        # two commands that only this script sends: SPEED -1 (start) and SPEED -2 (stop), caught before _apply
        from studio.run.messages import CommandKind
        worker = st._worker
        apply = worker._apply

        def apply_and_profile(cmd, _apply=apply):
            if cmd.kind is CommandKind.SPEED and cmd.value == -1.0:
                worker_profile.enable()
                return None
            if cmd.kind is CommandKind.SPEED and cmd.value == -2.0:
                worker_profile.disable()
                return None
            return _apply(cmd)
        worker._apply = apply_and_profile

    try:
        if not math.isclose(args.speed, 1.0):
            win.controls.set_speed(args.speed)
        win.play()
        spin(round(1000 * args.settle))
        for k in counts:
            counts[k] = 0 if k != "startup" else True
        load0 = os.getloadavg()[0]
        last[0] = time.perf_counter()
        if worker_profile is not None:
            st.send(CommandKind.SPEED, -1.0)
        gui_profile = cProfile.Profile() if args.profile else None
        snap0, wall0, cpu0 = st.latest, time.perf_counter(), time.process_time()
        if gui_profile is not None:
            gui_profile.enable()
        spin(round(1000 * args.seconds))
        if gui_profile is not None:
            gui_profile.disable()
        snap1, wall1, cpu1 = st.latest, time.perf_counter(), time.process_time()
        load1 = os.getloadavg()[0]
        done = dict(counts)
        if worker_profile is not None:
            st.send(CommandKind.SPEED, -2.0)
        win.pause()
        wait_until(lambda: not st.latest.playing, 30)
        if args.screenshot is not None:
            args.screenshot.parent.mkdir(parents=True, exist_ok=True)
            win.grab().save(str(args.screenshot), "PNG")
            print(f"saved {args.screenshot}")
    finally:
        for name, (cls, method) in timed.items():
            setattr(cls, method, originals[name])
        tick.stop()
        win.close()
        spin(50)
    wall = wall1 - wall0
    out = {
        "size": f"{size[0]}x{size[1]}", "viewport": f"{view.width()}x{view.height()}",
        "shown_s": shown, "first_snapshot_s": first_snapshot, "startup_gui_gap_ms": 1e3 * startup_gap,
        "busy": busy, "long_gaps": long_gaps,
        "realtime_factor": (snap1.t - snap0.t) / wall, "steps_per_s": (snap1.steps - snap0.steps) / wall,
        "fps": done["paints"] / wall, "window_fps": done["frames"] / wall,
        "paint_ms": 1e3 * done["paint"] / max(done["paints"], 1),
        "plot_update_ms_per_s": 1e3 * done["plot_update"] / wall, "plot_updates_per_s": done["plot_updates"] / wall,
        "plot_paint_ms_per_s": 1e3 * done["plot_paint"] / wall, "plot_paints_per_s": done["plot_paints"] / wall,
        "compose_ms_per_s": 1e3 * done["compose"] / wall, "composes_per_s": done["composes"] / wall,
        "max_gui_gap_ms": 1e3 * done["max_gap"], "cpu_percent": 100 * (cpu1 - cpu0) / wall, "load": (load0, load1),
        "step_cost_us": 1e6 * (snap1.step_cost or float("nan")),
    }
    if args.profile:
        for name, prof in (("worker thread", worker_profile), ("GUI thread", gui_profile)):
            text = io.StringIO()
            order, top = os.environ.get("BENCH_SORT", "tottime"), int(os.environ.get("BENCH_TOP", "25"))
            pstats.Stats(prof, stream=text).sort_stats(order).print_stats(top)
            print(f"\n---- cProfile, {name} ({out['size']}) ----")
            print("\n".join(text.getvalue().splitlines()[:45]))
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    from PySide6.QtCore import QCoreApplication, Qt
    from PySide6.QtWidgets import QApplication
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication([sys.argv[0]])

    import core
    model = core.load_scene(args.scene)
    print(f"{args.scene.name}: {model.nq} coordinates, {len(model.constraints)} constraints; dt = "
          f"{model.settings.get('dt', 1e-3) * 1e3:g} ms; asked {args.speed:g}x real time; display "
          f"{os.environ.get('DISPLAY')!r}, {sys.platform}, {os.cpu_count()} CPUs, load average (1 min) "
          f"{os.getloadavg()[0]:.2f}")
    results = []
    for size in args.sizes:
        r = measure(app, model, args.scene, size, args)
        results.append(r)
        args.screenshot = None
        print(f"window {r['size']} (viewport {r['viewport']}): real-time factor {r['realtime_factor']:.3f}, "
              f"{r['steps_per_s']:.0f} steps/s ({r['step_cost_us']:.0f} µs/step as the worker measures), "
              f"viewport {r['fps']:.1f} fps (paintGL {r['paint_ms']:.1f} ms; the window composed "
              f"{r['window_fps']:.1f} times/s, {r['compose_ms_per_s']:.0f} ms/s in {r['composes_per_s']:.1f} "
              f"compositions), plots: updates {r['plot_update_ms_per_s']:.0f} ms/s ({r['plot_updates_per_s']:.1f}/s), "
              f"paint {r['plot_paint_ms_per_s']:.0f} ms/s ({r['plot_paints_per_s']:.1f}/s), "
              f"GUI gap max {r['max_gui_gap_ms']:.0f} ms, CPU {r['cpu_percent']:.0f} %, "
              f"load average (1 min) {r['load'][0]:.2f} → {r['load'][1]:.2f}; "
              f"window shown after {r['shown_s']:.2f} s, first snapshot after {r['first_snapshot_s']:.2f} s "
              f"(GUI gap max meanwhile {r['startup_gui_gap_ms']:.0f} ms, "
              f"{len(r['long_gaps'])} gaps over 0.1 s {r['long_gaps'][:8]}; status messages {r['busy']})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
