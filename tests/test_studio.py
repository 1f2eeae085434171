"""The studio: the worker thread (ordered commands, latest-wins snapshots, pause on divergence), the 3D viewport
(asserted on pixels: pyqtgraph swallows paint errors) and the main window on every example scene.

Tests marked ``gui`` need a display with OpenGL (pytest-xvfb provides one). Following shared/GUI-CI.md, no test
waits on a signal emitted from the worker thread; they wait with ``qtbot.waitUntil`` on what the GUI thread has
received.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import shiboken6
from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QImage

import core
from core.model import State
from studio import DEFAULT_SCENE, SCENES_DIR
from studio.qt.run import worker as worker_module
from studio.__main__ import main
from studio.qt.window.main_window import MainWindow
from studio.qt.run.simthread import SimulationThread
from studio.qt.viewport.viewport import BACKGROUND, Viewport
from studio.run.messages import Snapshot

ROOT = Path(__file__).resolve().parent.parent
SCENES = sorted(SCENES_DIR.glob("*.json"))
#: How long to wait for a worker's first snapshot, or for the first step of a kind of simulation new to the
#: process: the worker evaluates it (and steps it once, then restores its snapshot) first, which compiles the core's
#: kernels on a machine that never ran this version of the core (about a minute; loading them takes a second).
FIRST_USE_MS = 180_000


# ---- helpers ---------------------------------------------------------------------------------------------------
class FakeSimulation:
    """A cheap stand-in for core.Simulation: q moves at constant qd. The step that would reach step number
    ``nan_at`` gives NaN; the one that would reach ``raise_at`` raises."""

    def __init__(self, dt=1e-3, nq=2, nan_at=None, raise_at=None):
        self.dt, self.nq, self.nan_at, self.raise_at = dt, nq, nan_at, raise_at
        self.reset()

    def reset(self):
        self.state = State(0.0, np.zeros(self.nq), np.ones(self.nq))

    def step(self):
        s = self.state
        n = round(s.t / self.dt) + 1
        if n == self.raise_at:
            raise RuntimeError("boom")
        q = s.q + s.qd * self.dt
        if n == self.nan_at:
            q = q * np.nan
        self.state = State(s.t + self.dt, q, s.qd.copy())
        return self.state


@pytest.fixture
def start_worker(qtbot):
    """Start a SimulationThread on a simulation; it records the errors it reports and is shut down after."""
    started = []

    def start(simulation, **options):
        st = SimulationThread(simulation, **options)
        st.errors = []
        st.error.connect(st.errors.append)
        st.start()
        started.append(st)
        qtbot.waitUntil(lambda: st.latest is not None, timeout=FIRST_USE_MS)   # the worker's first snapshot
        return st

    yield start
    for st in started:
        assert st.shutdown(), "the worker thread did not finish"
        assert st.thread.isFinished()


def rgb_array(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    w, h = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes()).reshape(h, image.bytesPerLine())
    return rows[:, :3 * w].reshape(h, w, 3).copy()


def pixels_of_colour(rgb: np.ndarray, colour, cos_min=0.995) -> int:
    """How many pixels are a shade of ``colour`` (same direction in RGB space, lit or shadowed) and not the
    background."""
    px = rgb.reshape(-1, 3).astype(float)
    c = np.asarray(colour[:3], dtype=float) * 255
    cos = px @ c / (np.linalg.norm(px, axis=1) * np.linalg.norm(c) + 1e-9)
    return int(np.count_nonzero((cos > cos_min) & (np.linalg.norm(px - BACKGROUND, axis=1) > 25)))


def show(qtbot, widget, w=480, h=360):
    qtbot.addWidget(widget)
    widget.resize(w, h)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def main_windows(qtbot, tmp_path, load=core.load_scene, activate=False):
    """A maker of shown main windows for the GUI test modules' ``window`` fixtures, and the list of those made:
    ``make(scene, size, simulation, settings)`` loads ``scene`` with ``load``, gives the window its own settings
    file in ``tmp_path`` (or ``settings``), answers "discard" to a save question, shows it at ``size``
    (``activate``: made the active window, for keys and shortcuts without a window manager) and waits for its
    first state. After the test, :func:`discard_windows` on the list."""
    from PySide6.QtCore import QSettings
    made = []

    def make(scene, size=(1280, 800), simulation=None, settings=None):
        settings = settings or QSettings(str(tmp_path / f"studio{len(made)}.ini"), QSettings.Format.IniFormat)
        win = MainWindow(load(scene), simulation, path=scene, settings=settings)
        win.file_actions.ask_to_save = lambda: "discard"      # no modal dialog in a test
        show(qtbot, win, *size)
        if activate:
            win.activateWindow()
            qtbot.waitActive(win)
        qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
        made.append(win)
        return win

    return make, made


def discard_windows(made) -> None:
    """The windows a test made close without asking to save (a test may have replaced the answer)."""
    for win in made:
        win.file_actions.ask_to_save = lambda: "discard"


# ---- worker thread (no display needed) ------------------------------------------------------------------------
def test_worker_given_a_nan_state_pauses_and_reports(start_worker, qtbot):
    sim = core.Simulation(core.load_scene(DEFAULT_SCENE))
    q = sim.state.q.copy()
    q[1] = np.nan
    sim.state = replace(sim.state, q=q)                  # states are values: a new one, never written in place
    st = start_worker(sim)
    st.play()
    qtbot.waitUntil(lambda: bool(st.errors))
    assert "not finite" in st.errors[0] and "q[1]" in st.errors[0]
    st.step()
    qtbot.waitUntil(lambda: len(st.errors) == 2)
    assert not st.latest.playing and st.latest.steps == 0 and st.latest.t == 0.0


def test_worker_keeps_the_last_good_state_when_a_step_diverges(start_worker, qtbot):
    sim = FakeSimulation(nan_at=25)
    st = start_worker(sim)
    st.play()
    qtbot.waitUntil(lambda: bool(st.errors) and not st.latest.playing)
    assert "non-finite" in st.errors[0] and "q[0]" in st.errors[0]
    assert st.latest.steps == 24 and st.latest.t == pytest.approx(24 * sim.dt)
    assert np.all(np.isfinite(st.latest.q))


def test_worker_reports_an_exception_in_a_step_and_stays_alive(start_worker, qtbot):
    sim = FakeSimulation(raise_at=10)
    st = start_worker(sim)
    st.play()
    qtbot.waitUntil(lambda: bool(st.errors) and not st.latest.playing)
    assert "RuntimeError: boom" in st.errors[0]
    assert st.latest.t == pytest.approx(9 * sim.dt)
    st.reset()
    st.step()
    qtbot.waitUntil(lambda: st.latest.steps == 1 and st.latest.t == pytest.approx(sim.dt))


class RestoreSpy(core.Simulation):
    """A core.Simulation that notes the time of every snapshot it is restored to (worker thread)."""

    def __init__(self, model):
        super().__init__(model)
        self.restored = []

    def restore(self, snapshot):
        self.restored.append(snapshot.state.t)
        super().restore(snapshot)


def _naive_arm():
    """Thesis fig. 2.9 with a 1e7 N bound: the SVD keeps a near-singular direction and the solve blows up within
    ten milliseconds (the energy books refuse its tenth step; the solve residual starts at 166 m/s²)."""
    doc = json.loads(DEFAULT_SCENE.read_text())
    doc["constraints"][0]["max_force"] = 1e7
    return core.compile_scene(core.scene.parse_spec(doc, "naive"))


@pytest.mark.parametrize("limit,why", [(160, "solve residual of constraint 'tip_nail'"), (1e300, "diverging")])
def test_a_diverging_batch_is_undone_and_the_last_good_step_kept(start_worker, qtbot, monkeypatch, limit, why):
    monkeypatch.setattr(worker_module, "_PREPARED", {RestoreSpy.__qualname__})     # no warm-up step (and restore)
    model = _naive_arm()
    sim = RestoreSpy(model)
    st = start_worker(sim, residual_limit=limit)
    assert st.latest.batched                              # a core.Simulation runs in batches of compiled steps
    st.play()
    qtbot.waitUntil(lambda: bool(st.errors) and not st.latest.playing, timeout=20_000)
    assert "keeping the last good state" in st.errors[0] and why in st.errors[0], st.errors
    snap = st.latest
    # the batch that went bad was undone (a restore to where it began, at or before the last good step) and stepped
    # again one step at a time (from the batch's start: its first step may be the bad one); the bad step itself was
    # undone too
    *batch_starts, bad_step = sim.restored
    assert batch_starts and all(t <= snap.t for t in batch_starts) and bad_step == snap.t, sim.restored
    # the state kept is the one of the last good step: the same as stepping one step at a time from the start
    ref = core.Simulation(model)
    for _ in range(snap.steps):
        ref.step()
    assert ref.state.t == pytest.approx(snap.t, abs=1e-15) and (snap.steps > 0 or limit < 1e300)
    np.testing.assert_allclose(snap.q, ref.state.q, rtol=1e-12, atol=1e-15)
    assert np.all(np.isfinite(snap.q))


def test_commands_are_applied_in_order_and_none_is_dropped(start_worker, qtbot):
    sim = FakeSimulation()
    st = start_worker(sim)
    for _ in range(7):
        st.step()
    qtbot.waitUntil(lambda: st.latest.steps == 7)
    assert st.latest.t == pytest.approx(7 * sim.dt)
    assert st.latest.q == pytest.approx(7 * sim.dt * np.ones(2))
    st.reset()
    st.step()
    st.step()
    qtbot.waitUntil(lambda: st.latest.steps == 2)
    assert st.latest.t == pytest.approx(2 * sim.dt)


def test_snapshots_are_read_only_copies(start_worker, qtbot):
    sim = FakeSimulation()
    st = start_worker(sim)
    st.step()
    qtbot.waitUntil(lambda: st.latest.steps == 1)
    snap = st.latest
    with pytest.raises(ValueError):
        snap.q[0] = 1.0
    assert not np.shares_memory(snap.q, sim.state.q)   # the worker is idle (paused) while we look


class _Counter(QObject):
    """Lives on the GUI thread; counts what the worker emits."""

    def __init__(self):
        super().__init__()
        self.n = 0

    @Slot(object)
    def count(self, _):
        self.n += 1


def test_playing_keeps_to_the_wall_clock_and_the_display_rate(start_worker, qtbot):
    sim = FakeSimulation()
    st = start_worker(sim)
    counter = _Counter()
    st._worker.snapshot.connect(counter.count)
    start = time.perf_counter()
    st.play()
    qtbot.wait(500)
    st.pause()
    qtbot.waitUntil(lambda: st.latest.t > 0 and not st.latest.playing)
    elapsed = time.perf_counter() - start
    assert st.latest.t <= elapsed + sim.dt, "simulated time ran ahead of the wall clock"
    assert counter.n <= elapsed * 60 + 5, f"{counter.n} snapshots in {elapsed:.2f} s"


def test_gui_side_delivers_only_the_latest_snapshot(qtbot):
    st = SimulationThread(FakeSimulation())        # never started: we play the worker's part
    got = []
    st.snapshot_ready.connect(got.append)
    for k in range(3):
        st._receive_snapshot(Snapshot(t=k * 1e-3, q=np.zeros(2), steps=k, playing=True))
    qtbot.waitUntil(lambda: bool(got))
    qtbot.wait(20)
    assert [s.steps for s in got] == [2] and st.latest is got[0]


# ---- command line ---------------------------------------------------------------------------------------------
def test_command_line_rejects_a_missing_scene(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere.json")]) == 2
    assert "nowhere.json" in capsys.readouterr().err


def test_command_line_plays_the_scene_unless_told_to_wait():
    from studio.__main__ import _parse_args
    assert not _parse_args([]).paused and _parse_args(["--paused"]).paused


def test_command_line_wants_screenshot_with_after():
    with pytest.raises(SystemExit) as exc:
        main(["--after", "1"])
    assert exc.value.code == 2


# ---- viewport and window (display + OpenGL) -------------------------------------------------------------------
@pytest.mark.gui
def test_viewport_draws_the_default_scene_in_its_colours(qtbot, gl_renderer):
    model = core.load_scene(DEFAULT_SCENE)
    view = show(qtbot, Viewport(model))
    rgb = rgb_array(view.grabFramebuffer())
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 100, "flat or blank picture"
    shown = [pixels_of_colour(rgb, shape.rgba) for shape in model.shapes]
    for shape, n in zip(model.shapes, shown):
        assert n > 150, f"no {shape.rgba} pixels: link {shape.link} not drawn"
    # those pixels come from the meshes: hide them and they are gone
    for item in view.shape_items:
        item.hide()
    rgb = rgb_array(view.grabFramebuffer())
    for shape, n in zip(model.shapes, shown):
        assert pixels_of_colour(rgb, shape.rgba) < 0.05 * n


@pytest.mark.gui
def test_viewport_moves_shapes_with_the_configuration(qtbot, gl_renderer):
    model = core.load_scene(DEFAULT_SCENE)
    view = show(qtbot, Viewport(model))
    before = rgb_array(view.grabFramebuffer())
    view.set_configuration(model.q0 + 0.8)
    after = rgb_array(view.grabFramebuffer())
    changed = np.any(before != after, axis=2)
    assert np.count_nonzero(changed) > 500


@pytest.mark.gui
def test_a_view_never_shown_refuses_to_render_and_one_shown_headless_renders(qtbot, gl_renderer):
    """render_image needs the view's GL context, made when the window is mapped: before that it names the cause
    (it used to return a null image after every item failed to draw). The headless commands' view waits for it."""
    from studio.headless import _viewport
    model = core.load_scene(DEFAULT_SCENE)
    hidden = Viewport(model)
    qtbot.addWidget(hidden)
    with pytest.raises(RuntimeError, match="no OpenGL context"):
        hidden.render_image((64, 48))
    view = _viewport(model, (160, 120))
    qtbot.addWidget(view)
    assert view.isValid()
    rgb = rgb_array(view.render_image((160, 120)))
    assert max(pixels_of_colour(rgb, s.rgba) for s in model.shapes) > 20


@pytest.mark.gui
def test_two_viewports_in_one_process_both_draw(qtbot, gl_renderer):
    models = [core.load_scene(p) for p in SCENES[:2]] if len(SCENES) >= 2 else [core.load_scene(DEFAULT_SCENE)] * 2
    views = [show(qtbot, Viewport(m)) for m in models]
    for model, view in zip(models, views):
        rgb = rgb_array(view.grabFramebuffer())
        assert max(pixels_of_colour(rgb, s.rgba) for s in model.shapes) > 20, model.name


@pytest.mark.gui
@pytest.mark.parametrize("scene", SCENES, ids=[p.stem for p in SCENES])
def test_main_window_plays_pauses_steps_and_resets(qtbot, gl_renderer, scene):
    model = core.load_scene(scene)
    win = show(qtbot, MainWindow(model), 640, 480)
    assert model.name in win.windowTitle()
    st = win.sim_thread
    qtbot.waitUntil(lambda: st.latest is not None, timeout=FIRST_USE_MS)
    assert st.latest.t == 0.0 and not st.latest.playing
    rgb = rgb_array(win.viewport.grabFramebuffer())
    assert max(pixels_of_colour(rgb, s.rgba) for s in model.shapes) > 20, "the scene is not drawn"

    win.play_action.trigger()
    qtbot.waitUntil(lambda: st.latest.playing and st.latest.t > 0.005, timeout=10_000)
    win.play_action.trigger()
    qtbot.waitUntil(lambda: not st.latest.playing)
    t_paused = st.latest.t
    qtbot.wait(150)
    assert st.latest.t == t_paused, "time went on after Pause"
    assert win.time_label.text() == f"t = {t_paused:.3f} s"
    assert not win.play_action.isChecked()

    steps = st.latest.steps
    win.step_action.trigger()
    qtbot.waitUntil(lambda: st.latest.steps == steps + 1)
    assert st.latest.t - t_paused == pytest.approx(st.dt, rel=1e-9)

    win.reset_action.trigger()
    qtbot.waitUntil(lambda: st.latest.steps == 0)
    assert st.latest.t == 0.0 and np.array_equal(st.latest.q, model.q0)
    assert win.time_label.text() == "t = 0.000 s"


@pytest.mark.gui
def test_closing_the_window_stops_the_worker_cleanly(qtbot, gl_renderer, recwarn):
    win = show(qtbot, MainWindow(core.load_scene(DEFAULT_SCENE)))
    st = win.sim_thread
    win.play()
    qtbot.waitUntil(lambda: st.latest is not None and st.latest.playing, timeout=FIRST_USE_MS)
    win.close()
    assert st.thread.isFinished() and not st.thread.isRunning()
    assert not recwarn.list, [str(w.message) for w in recwarn.list]


@pytest.mark.gui
def test_a_window_deleted_without_closing_still_stops_its_worker(qtbot, gl_renderer):
    win = MainWindow(core.load_scene(DEFAULT_SCENE))      # not given to qtbot, which would close it afterwards
    win.resize(480, 360)
    win.show()
    qtbot.waitExposed(win)
    win.play()
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None and win.sim_thread.latest.playing,
                    timeout=FIRST_USE_MS)
    finished = threading.Event()
    win.sim_thread._worker.finished.connect(finished.set, Qt.ConnectionType.DirectConnection)
    shiboken6.delete(win)           # no closeEvent: Qt deletes the window and its children now
    assert finished.is_set(), "the worker was still running when its QThread was deleted"


@pytest.mark.gui
def test_window_shows_a_divergence_in_the_status_bar(qtbot, gl_renderer):
    model = core.load_scene(DEFAULT_SCENE)
    sim = core.Simulation(model)
    qd = sim.state.qd.copy()
    qd[0] = np.inf
    sim.state = replace(sim.state, qd=qd)
    win = show(qtbot, MainWindow(model, sim))
    win.play()
    qtbot.waitUntil(lambda: "not finite" in win.statusBar().currentMessage())
    qtbot.waitUntil(lambda: not win.play_action.isChecked())


@pytest.mark.gui
@pytest.mark.slow
def test_command_line_saves_a_screenshot_of_the_window(tmp_path, gl_renderer):
    out = tmp_path / "studio.png"
    result = subprocess.run([sys.executable, "-m", "studio", "--screenshot", str(out), "--after", "0.5",
                             "--size", "1280x800"], cwd=ROOT, capture_output=True, text=True,
                            timeout=FIRST_USE_MS / 1000)
    assert result.returncode == 0, result.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    rgb = rgb_array(image)
    model = core.load_scene(DEFAULT_SCENE)
    for shape in model.shapes:
        assert pixels_of_colour(rgb, shape.rgba) > 50, f"no {shape.rgba} pixels in the screenshot"
