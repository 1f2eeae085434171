"""The studio as a working tool, driven as a user drives it (real mouse and key events under Xvfb): recordings on
simulated time, exact exports, going back in time and running on, dragging spring ends, picking a nail at a
link's tip, saving after an edit, and the keyboard after a field edit; the headless commands.

Every test here needs a display with OpenGL (pytest-xvfb). As in test_studio.py, nothing waits on a signal
emitted from the worker thread: the tests wait with ``qtbot.waitUntil`` on what the GUI thread has received.
"""
from __future__ import annotations

import json

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

import core
from studio import SCENES_DIR
from studio.qt.window.main_window import short_text
from studio.qt.window.plotfigure import eng_label, y_limits

from test_studio import discard_windows, main_windows

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parent.parent
ARM = SCENES_DIR / "arm_nail_singular.json"


@pytest.fixture
def window(qtbot, gl_renderer, tmp_path):
    make, made = main_windows(qtbot, tmp_path, activate=True)   # keys and shortcuts go to the active window
    yield lambda scene=ARM, size=(1280, 800): make(scene, size)
    discard_windows(made)


def _latest(win):
    return win.sim_thread.latest


def _run_to(win, qtbot, t: float, timeout=60_000):
    win.controls.set_speed(None)                 # as fast as possible
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t >= t, timeout=timeout)
    win.pause()
    qtbot.waitUntil(lambda: not _latest(win).playing)


# ---- recordings -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".mp4", ".gif", ""])
def test_a_2_s_recording_at_30_fps_has_60_frames_that_change(window, qtbot, tmp_path, suffix):
    import imageio.v3 as iio
    import imageio_ffmpeg
    win = window(SCENES_DIR / "four_bar.json", size=(1000, 700))      # a scene that keeps moving for 2 s
    out = tmp_path / f"clip{suffix}"
    win.start_recording(out, fps=30, duration=2.0)
    assert win.recorder.recording and win.record_action.isChecked()
    assert win.viewport.rec_label.isVisible() and "REC" in win.viewport.rec_label.text()
    win.controls.set_speed(None)
    win.play()
    qtbot.waitUntil(lambda: not win.recorder.busy, timeout=120_000)
    assert not win.record_action.isChecked() and not win.viewport.rec_label.isVisible()
    assert out.exists() and not list(tmp_path.glob(".*partial*"))          # complete, nothing half-written
    if suffix == ".mp4":
        n, secs = imageio_ffmpeg.count_frames_and_secs(str(out))
        assert n == 60 and secs == pytest.approx(2.0, abs=0.05)
        frames = iio.imread(out, plugin="pyav") if _has("av") else np.stack(list(iio.imiter(out)))
    elif suffix == ".gif":
        from PIL import Image, ImageSequence
        frames = iio.imread(out, index=None)
        with Image.open(out) as gif:            # delays are whole hundredths of a second: 30 and 40 ms, 2 s in all
            delays = [frame.info["duration"] for frame in ImageSequence.Iterator(gif)]
        assert sum(delays) == 2000 and set(delays) == {30, 40}, delays
    else:
        files = sorted(out.glob("frame_*.png"))
        frames = np.stack([iio.imread(f) for f in files])
    assert len(frames) == 60
    frames = np.asarray(frames)[..., :3].astype(int)
    changes = [np.abs(frames[k + 1] - frames[k]).mean() for k in range(59)]
    assert sum(c > 0.05 for c in changes) >= 55, changes          # the linkage moves from frame to frame
    assert frames.shape[1] % 16 == 0 and frames.shape[2] % 16 == 0


def _has(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def test_a_recording_can_put_plots_beside_the_viewport(window, qtbot, tmp_path):
    import imageio_ffmpeg
    win = window(size=(1000, 700))
    _run_to(win, qtbot, 0.05)
    out = tmp_path / "with_plots.mp4"
    win.start_recording(out, fps=20, duration=0.5, size=(320, 240), plots=("energy", "force"))
    win.play()
    qtbot.waitUntil(lambda: not win.recorder.busy, timeout=120_000)
    n, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert n == 10
    import imageio.v3 as iio
    frame = next(iter(iio.imiter(out)))
    assert frame.shape[1] > 320 + 160 and frame.shape[0] == 240        # the viewport and the plots side by side


# ---- exports ----------------------------------------------------------------------------------------------------
def test_an_exported_csv_reproduces_core_runs_time_series_to_the_last_digit(window, qtbot, tmp_path):
    win = window()
    _run_to(win, qtbot, 0.6)
    (csv,) = win.plots.export(tmp_path / "studio.csv")
    studio_lines = csv.read_text().splitlines()
    t_end = float(studio_lines[-1].split(",")[0])
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "core", "run", str(ARM), "--duration", repr(t_end - 0.05),
                             "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    core_lines = (out / "timeseries.csv").read_text().splitlines()
    assert [h.split(" [")[0] for h in studio_lines[0].split(",")] == core_lines[0].split(",")
    assert "t [s]" in studio_lines[0] and "[J]" in studio_lines[0] and "[rad]" in studio_lines[0]
    # one table of units (core.columns): the studio's header cells are core run's columns with its csv_units
    summary = json.loads((out / "summary.json").read_text())
    assert studio_lines[0].split(",") == [f"{n} [{u}]" if u else n
                                         for n, u in zip(summary["csv_columns"], summary["csv_units"])]
    # every row but core run's last (which it shortens to land on --duration) is the same text
    rows = core_lines[1:-1]
    assert len(rows) > 500 and studio_lines[1:1 + len(rows)] == rows


def test_plots_export_png_at_a_size_and_svg(window, qtbot, tmp_path):
    from PySide6.QtGui import QImage
    win = window()
    _run_to(win, qtbot, 0.3)
    (png,) = win.plots.export(tmp_path / "plots.png", size=(1200, 900))
    image = QImage(str(png))
    assert (image.width(), image.height()) == (1200, 900)
    (svg,) = win.plots.export(tmp_path / "plots.svg")
    assert svg.stat().st_size > 1000 and "<svg" in svg.read_text()[:400]


# ---- the timeline -------------------------------------------------------------------------------------------------
def test_a_scrub_back_and_resume_continues_bit_identically(window, qtbot):
    win = window()
    _run_to(win, qtbot, 0.6)
    first = win.plots.records.segments[0].arrays()
    bar = win.timeline
    assert bar.slider.isEnabled() and bar.head == pytest.approx(_latest(win).t)
    bar.slider.setSliderDown(True)                       # drag the slider back to about a third
    bar.slider.setSliderPosition(bar.slider.maximum() // 3)
    bar.slider.setSliderDown(False)
    target = bar.first + (bar.head - bar.first) / 3
    qtbot.waitUntil(lambda: abs(_latest(win).t - target) < 2e-3 and not _latest(win).playing)
    snap = _latest(win)
    k = int(np.flatnonzero(first["t"] == snap.t)[0])
    assert np.array_equal(snap.q, first["q"][k])                 # the stored state, exactly
    assert win.plots.cursor == snap.t
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t > first["t"][-1] + 0.01, timeout=60_000)
    win.pause()
    qtbot.waitUntil(lambda: not _latest(win).playing)
    again = win.plots.records.segments[0].arrays()
    assert np.array_equal(again["t"][:k + 1], first["t"][:k + 1])
    n = len(first["t"])
    for key in first:
        assert np.array_equal(again[key][:n], first[key], equal_nan=True), key
    assert win.plots.ghost is not None and win.plots.ghost[0, 0] > snap.t - 1e-9   # the earlier try, faded


# ---- direct manipulation --------------------------------------------------------------------------------------
def test_a_spring_end_dragged_with_the_mouse_moves_and_the_simulation_sees_it(window, qtbot):
    win = window()
    view = win.viewport
    win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).draw is not None and view.overlays.last is not None)
    start = np.array(_latest(win).draw.springs[0, 1])            # the spring's world end, (0, 0, 3)
    x, y = view.screen_position(start)
    assert view.hit(x + 3, y + 2)[:2] == ("spring", (0, "b"))     # picked by the handle, a few pixels off
    QTest.mouseMove(view, QPoint(round(x), round(y)))
    QTest.mousePress(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(x), round(y)))
    for step in range(1, 6):
        QTest.mouseMove(view, QPoint(round(x) + 12 * step, round(y) + 4 * step))
    QTest.mouseRelease(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       QPoint(round(x) + 60, round(y) + 20))
    spec = win.document.spec
    moved = np.array(spec.forces[0].point_b)
    assert np.linalg.norm(moved - start) > 0.1 and win.document.undo_stack.count() == 1   # one edit a drag
    qtbot.waitUntil(lambda: np.allclose(_latest(win).model.forces[0].r_b, moved))         # the simulation has it
    win.step_action.trigger()
    qtbot.waitUntil(lambda: np.allclose(_latest(win).draw.springs[0, 1], moved))
    # the body end: dropped on link2, it is attached there
    a = np.array(_latest(win).draw.springs[0, 0])
    xa, ya = view.screen_position(a)
    k = next(k for k, s in enumerate(view.model.shapes) if s.link == 1)
    xb, yb = view.screen_position(view._poses[k][:3, 3])
    QTest.mousePress(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(xa), round(ya)))
    for f in np.linspace(0.2, 1.0, 5):
        QTest.mouseMove(view, QPoint(round(xa + f * (xb - xa)), round(ya + f * (yb - ya))))
    QTest.mouseRelease(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(xb), round(yb)))
    assert win.document.spec.forces[0].body_a == "link2" and win.document.undo_stack.count() == 2
    qtbot.waitUntil(lambda: _latest(win).model.forces[0].link_a == 1)
    win.undo_action.trigger()
    assert win.document.spec.forces[0].body_a == "link3"


def test_a_nail_at_a_links_tip_is_picked_over_the_link(window, qtbot):
    win = window()
    _run_to(win, qtbot, 1.0)                                 # the tip has reached its nail (1 mm off at 1 s)
    view = win.viewport
    draw = _latest(win).draw
    assert np.linalg.norm(draw.point_a[0] - draw.point_b[0]) < 1e-2          # within a centimetre
    x, y = view.screen_position(draw.point_b[0])
    assert view.hit(x, y)[0] == "nail"
    body = view.hit(x, y, handles=False)
    assert body is not None and body[0] == "body" and body[1] == 2       # the link is under it too
    QTest.mouseMove(view, QPoint(round(x) + 2, round(y) - 2))
    qtbot.waitUntil(view.overlays.hover.visible)                         # hover marks what a click takes
    QTest.mouseClick(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(x) + 2,
                                                                                              round(y) - 2))
    qtbot.waitUntil(lambda: win.selection.path == ("constraints", 0))


def test_f_frames_the_scene_as_it_is_now_and_the_camera_can_follow_a_body(window, qtbot):
    win = window()
    _run_to(win, qtbot, 0.8)
    view = win.viewport
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_F)
    tip = _latest(win).draw.point_a[0]
    x, y = view.screen_position(tip)
    assert 0 < x < view.width() and 0 < y < view.height()
    win.selection.set(("bodies", 2))
    win.follow_action.trigger()
    assert view.following == 2
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t > 1.0)
    win.pause()
    qtbot.waitUntil(lambda: not _latest(win).playing)
    p = _latest(win).draw.link_p[2]
    c = view.opts["center"]
    assert np.allclose(view._R_DW.T @ np.array([c.x(), c.y(), c.z()]), p, atol=1e-6)


# ---- editing ------------------------------------------------------------------------------------------------------
def test_after_a_field_edit_and_enter_ctrl_z_undoes_it(window, qtbot):
    win = window()
    win.selection.set(("forces", 0))
    field = win.inspector.editor("stiffness").edit
    QTest.mouseClick(field, Qt.MouseButton.LeftButton)
    field.selectAll()
    QTest.keyClicks(field, "45")
    QTest.keyClick(field, Qt.Key.Key_Return)
    assert win.document.spec.forces[0].stiffness == 45.0
    qtbot.waitUntil(lambda: win.viewport.hasFocus())              # the keys are back with the scene
    assert win.selection.path == ("forces", 0)                    # and the selection stays
    assert win.undo_button.text() == "Undo" and "stiffness" in win.undo_button.toolTip()
    QTest.keyClick(win.viewport, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert win.document.spec.forces[0].stiffness == 20.0
    assert win.inspector.editor("stiffness").edit.text() == "20"
    # Escape puts the field's value back
    field = win.inspector.editor("stiffness").edit
    QTest.mouseClick(field, Qt.MouseButton.LeftButton)
    QTest.keyClicks(field, "999")
    QTest.keyClick(field, Qt.Key.Key_Escape)
    assert field.text() == "20" and win.document.spec.forces[0].stiffness == 20.0
    qtbot.waitUntil(lambda: win.viewport.hasFocus())


def test_save_after_an_edit_changes_one_line_of_a_shipped_scene(window, qtbot, tmp_path):
    scene = tmp_path / ARM.name
    shutil.copy(ARM, scene)
    os.chmod(scene, 0o640)
    win = window(scene)
    win.selection.set(("forces", 0))
    editor = win.inspector.editor("stiffness")
    editor.edit.setText("25")
    editor.edit.editingFinished.emit()
    assert win.file_actions._save_to(scene)
    diff = [line for line in difflib.ndiff(ARM.read_text().splitlines(), scene.read_text().splitlines())
            if line[:2] in ("- ", "+ ")]
    assert diff == ['-       "stiffness": 20.0', '+       "stiffness": 25.0']
    assert os.stat(scene).st_mode & 0o777 == 0o640
    copy = tmp_path / "copy.json"                                # save as: the same form, the original's mode
    assert win.file_actions._save_to(copy)
    assert copy.read_text() == scene.read_text() and os.stat(copy).st_mode & 0o777 == 0o640


def test_structural_edits_keep_the_plot_history_and_edits_are_marked(window, qtbot):
    win = window()
    _run_to(win, qtbot, 0.3)
    before = win.plots.history.count
    win.selection.set(("bodies", 2))
    assert win.item_actions.add("constraints", "point_on_plane")
    assert "Add point on plane 'point_on_plane'" == win.document.undo_stack.undoText()
    qtbot.waitUntil(lambda: len(_latest(win).model.constraints) == 2)
    assert win.plots.history.count >= before                     # the history is kept
    assert win.plots.markers and win.plots.markers[-1].t == pytest.approx(_latest(win).t, abs=0.01)
    kinds = {a.text() for a in win.item_actions.add_submenus["constraints"].actions()}
    assert "Joint-space expression Φ(q) = value" in kinds


def test_the_status_bar_explains_and_clears(window, qtbot, tmp_path):
    win = window()
    _run_to(win, qtbot, 0.1)
    tip = win.status.energy_label.toolTip()
    assert "work by constraint forces" in tip and "dropped singular directions" in tip
    win.status.error("paused at t = 1 s, keeping the last good state: test")
    win.reset_action.trigger()
    assert win.status.currentMessage() == ""
    win.selection.set(("forces", 0))                             # and on Undo (Ctrl+Z)
    editor = win.inspector.editor("stiffness")
    editor.edit.setText("30")
    editor.edit.editingFinished.emit()
    win.status.error("paused at t = 1 s, keeping the last good state: test")
    QTest.keyClick(win.viewport, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert win.document.spec.forces[0].stiffness == 20.0 and win.status.currentMessage() == ""
    win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).steps == 1)
    assert "paused · 1 step" in win.status.rate_label.text() and "steps" not in win.status.rate_label.text()
    picture = win.save_screenshot(tmp_path / "shot.png", size=(640, 480))
    assert picture is not None and picture.stat().st_size > 5000
    win.controls.set_speed(1.0)
    qtbot.waitUntil(lambda: _latest(win).speed == 1.0)
    speed = _latest(win).speed
    QTest.keyClick(win.viewport, Qt.Key.Key_BracketRight)
    qtbot.waitUntil(lambda: _latest(win).speed > speed)


def test_short_undo_texts_and_readable_plot_labels():
    assert short_text("Set mass of cylinder shape 0 of 'link2' to 5 kg") == "Set mass of cylinder shape 0…"
    assert eng_label(2.5e-15, 5e-16) == "2.5·10⁻¹⁵" and eng_label(9.79, 0.02) == "9.79"
    lo, hi = y_limits(np.array([9.79, 9.79 + 2e-7]), log=False)
    assert hi - lo > 0.05                                         # a flat signal gets a readable range


# ---- headless -----------------------------------------------------------------------------------------------------
def test_the_headless_commands_render_videos_pictures_and_plots(tmp_path, gl_renderer):
    import imageio_ffmpeg
    env = dict(os.environ)
    run = [sys.executable, "-m", "studio"]
    result = subprocess.run(run + ["render", str(ARM), "--duration", "1", "--fps", "12", "--out",
                                   str(tmp_path / "m.mp4"), "--size", "320x240", "--plots", "energy"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    n, secs = imageio_ffmpeg.count_frames_and_secs(str(tmp_path / "m.mp4"))
    assert n == 12 and secs == pytest.approx(1.0, abs=0.1)
    result = subprocess.run(run + ["screenshot", str(ARM), "--time", "0.3", "--out", str(tmp_path / "s.png"),
                                   "--size", "400x300"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    from PySide6.QtGui import QImage
    assert QImage(str(tmp_path / "s.png")).size().width() == 400
    env.pop("DISPLAY", None)                                       # no display: it starts its own
    result = subprocess.run(run + ["plots", str(ARM), "--duration", "0.2", "--out", str(tmp_path / "p")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    names = {p.name for p in (tmp_path / "p").iterdir()}
    assert {"plots.png", "plots.svg", "timeseries.csv", "energy.png", "force.png"} <= names
    bad = subprocess.run(run + ["render", str(ARM), "--duration", "1", "--out", str(tmp_path / "x.avi")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and ".mp4" in bad.stderr and not (tmp_path / "x.avi").exists()


def test_clicking_a_link_of_an_included_robot_selects_the_include(window, qtbot):
    """The robot's links are not the document's bodies: a click on one selects the Robot item (its include), and
    a click on nothing clears the selection."""
    win = window(SCENES_DIR / "robot_arm_computed_torque.json")
    win.viewport.picked.emit(("body", "link3"))
    qtbot.waitUntil(lambda: win.selection.path == ("robot",))
    win.viewport.picked.emit(None)
    qtbot.waitUntil(lambda: win.selection.path is None)
