"""The studio's main window at work: editing in the inspector, tree and viewport (every edit undoable and reaching
the running simulation), saving and reopening, the plots, the control panel, dragging with the mouse, recordings,
remembered settings, and a diverging scene that pauses with a message.

Every test here needs a display with OpenGL (pytest-xvfb). As in test_studio.py, nothing waits on a signal emitted
from the worker thread: the tests wait with ``qtbot.waitUntil`` on what the GUI thread has received.
"""
from __future__ import annotations

import json
import math
import sys
import threading

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel

import core
from studio import SCENES_DIR
from studio.document import edits
from studio.qt.run import worker as worker_module
from studio.qt.window.inspector import help_html
from studio.qt.window.main_window import MainWindow
from studio.qt.viewport.overlays import SPRING_COLOUR
from studio.qt.window.plots import BACKGROUND, OpaqueGridAxis

from test_studio import FIRST_USE_MS, discard_windows, main_windows, pixels_of_colour, rgb_array, show

pytestmark = pytest.mark.gui

ARM = SCENES_DIR / "arm_nail_singular.json"


@pytest.fixture
def window(qtbot, gl_renderer, tmp_path):
    """A shown main window on a scene (default: the nailed arm), with its own settings file."""
    make, made = main_windows(qtbot, tmp_path)
    yield lambda scene=ARM, simulation=None, size=(1280, 800), settings=None: make(scene, size, simulation, settings)
    discard_windows(made)


def _write_scene(tmp_path, name, change) -> object:
    doc = json.loads(ARM.read_text())
    change(doc)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def _points(curve) -> int:
    return 0 if curve.xData is None else len(curve.xData)


def _latest(win):
    return win.sim_thread.latest


# ---- editing --------------------------------------------------------------------------------------------------
def test_an_inspector_edit_reaches_the_simulation_and_undo_takes_it_back(window, qtbot):
    win = window()
    win.selection.set(("forces", 0))
    editor = win.inspector.editor("stiffness")
    assert editor.edit.text() == "20" and "N/m" in editor._unit.text()
    editor.edit.setText("45")
    editor.edit.editingFinished.emit()
    assert win.document.spec.forces[0].stiffness == 45.0 and win.document.modified
    assert win.undo_action.text().startswith("&Undo Set stiffness") or "stiffness" in win.undo_action.text()
    qtbot.waitUntil(lambda: _latest(win).model.forces[0].stiffness == 45.0)
    win.undo_action.trigger()
    assert win.document.spec.forces[0].stiffness == 20.0 and not win.document.modified
    assert win.inspector.editor("stiffness").edit.text() == "20"
    qtbot.waitUntil(lambda: _latest(win).model.forces[0].stiffness == 20.0)
    win.redo_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).model.forces[0].stiffness == 45.0)


def test_an_invalid_value_is_refused_at_its_field(window):
    win = window()
    win.selection.set(("constraints", 0))
    editor = win.inspector.editor("max_force")
    editor.edit.setText("-5")
    editor.edit.editingFinished.emit()
    assert "greater than 0" in editor.error_label.text() and not editor.error_label.isHidden()
    assert win.document.spec.constraints[0].max_force == 200000.0 and win.document.undo_stack.count() == 0
    editor.edit.setText("lots")
    editor.edit.editingFinished.emit()
    assert "not a number" in editor.error_label.text()
    editor.edit.setText("1e5")
    editor.edit.editingFinished.emit()
    assert editor.error_label.isHidden() and win.document.spec.constraints[0].max_force == 1e5


def test_edits_in_the_tree_are_undoable_and_keep_references(window, qtbot):
    win = window()
    tree = win.scene_tree
    item = tree.model().itemFromIndex(tree.index_of(("bodies", 2)))
    item.setText("forearm")
    spec = win.document.spec
    assert spec.bodies[2].name == "forearm" and spec.constraints[0].body == "forearm"
    assert spec.forces[0].body_a == "forearm"
    item = tree.model().itemFromIndex(tree.index_of(("bodies", 1)))
    item.setText("link1")                                 # taken: refused with the validator's message
    assert win.document.spec.bodies[1].name == "link2"
    assert "duplicate body name" in win.status.currentMessage()
    win.undo_action.trigger()
    assert win.document.spec.bodies[2].name == "link3" and win.document.spec.constraints[0].body == "link3"


def test_add_duplicate_and_delete_are_commands(window, qtbot):
    win = window()
    actions = win.item_actions
    win.selection.set(("bodies", 2))
    assert actions.add("constraints", "point_on_plane")
    assert win.selection.path == ("constraints", 1)
    assert win.document.spec.constraints[1].body == "link3"
    assert actions.duplicate() and len(win.document.spec.constraints) == 3
    win.selection.set(("bodies", 1))
    assert actions.delete()
    spec = win.document.spec
    assert [b.name for b in spec.bodies] == ["link1"] and not spec.constraints and not spec.forces
    qtbot.waitUntil(lambda: _latest(win).model.n_links == 1 and _latest(win).t == 0.0)
    for _ in range(4):
        win.undo_action.trigger()
    assert win.document.spec == core.read_spec(ARM) and not win.document.modified
    qtbot.waitUntil(lambda: _latest(win).model.n_links == 3)


def test_saving_and_reopening_round_trips(window, tmp_path, qtbot):
    win = window()
    win.selection.set(("constraints", 0))
    editor = win.inspector.editor("stabilization")
    editor.edit.setText("12.5")
    editor.edit.editingFinished.emit()
    target = tmp_path / "edited.json"
    assert win.file_actions._save_to(target)
    assert not win.document.modified and win.document.path == target
    assert core.read_spec(target) == win.document.spec
    assert "edited.json" in win.windowTitle()
    other = window(ARM)
    assert other.file_actions.open_path(target)
    assert other.document.spec == win.document.spec and other.document.path == target
    qtbot.waitUntil(lambda: _latest(other).model.constraints[0].stabilization == 12.5)
    assert target.resolve() in other.file_actions.recent_files()


def test_a_prompt_guards_unsaved_edits(window, tmp_path):
    win = window()
    win.item_actions.add("forces", "drag")
    answers = []
    win.file_actions.ask_to_save = lambda: answers.append("asked") or "cancel"
    assert not win.file_actions.new()
    assert answers and len(win.document.spec.forces) == 2
    assert not win.file_actions.open_path(SCENES_DIR / "three_link_arm.json")
    assert not win.close() and win.isVisible()
    win.file_actions.ask_to_save = lambda: "discard"
    assert win.file_actions.new()
    assert win.document.spec.name == "untitled" and not win.document.spec.bodies
    bad = tmp_path / "bad.json"
    bad.write_text('{"format_version": 1, "name": "bad", "gravty": [0, 0, -9.81]}')
    errors = []
    win.file_actions.error.disconnect()
    win.file_actions.error.connect(errors.append)
    assert not win.file_actions.open_path(bad)
    assert "$.gravty: unknown field" in errors[0] and win.document.spec.name == "untitled"


def test_selection_follows_between_tree_and_viewport(window, qtbot):
    win = window()
    view = win.viewport
    qtbot.waitUntil(lambda: _latest(win).overlay is not None)
    model = view.model
    tip_shape = next(k for k, s in enumerate(model.shapes) if s.link == 2)
    centre = view._poses[tip_shape][:3, 3]
    # a point of the link away from its middle, where the spring's end sits (handles are picked first)
    along = centre - view._poses[next(k for k, s in enumerate(model.shapes) if s.link == 1)][:3, 3]
    centre = centre + 0.3 * along / np.linalg.norm(along)
    x, y = view.screen_position(centre)
    assert view.hit(x, y)[:2] == ("body", 2)
    QTest.mouseClick(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(x), round(y)))
    assert win.selection.path == ("bodies", 2)
    assert win.scene_tree.currentIndex() == win.scene_tree.index_of(("bodies", 2))
    assert view._selected_link == 2 and view.overlays.selection.visible()
    win.scene_tree.setCurrentIndex(win.scene_tree.index_of(("constraints", 0)))
    assert win.selection.path == ("constraints", 0) and view.overlays.selected_constraint == 0
    assert win.inspector.editor("max_force") is not None
    QTest.mouseClick(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(3, 3))
    assert win.selection.path is None


# ---- running ------------------------------------------------------------------------------------------------
def test_plots_fill_freeze_and_export(window, qtbot, tmp_path):
    win = window()
    plots = win.plots
    win.play()
    qtbot.waitUntil(lambda: plots.history is not None and plots.history.count > 30, timeout=20_000)
    qtbot.waitUntil(lambda: _points(plots.curves["force"][0][1]) > 10)
    assert set(plots.curves) >= {"force", "energy", "deviation", "residual", "singular", "joint"}
    curve = plots.curves["energy"][0][1]
    x, y = curve.xData, curve.yData
    assert np.all(np.diff(x) > 0) and np.all(np.isfinite(y))
    plots.set_paused(True)
    frozen = _points(curve)
    count = plots.history.count
    qtbot.waitUntil(lambda: plots.history.count > count + 10, timeout=20_000)   # samples keep coming
    qtbot.wait(120)
    assert _points(curve) == frozen                                             # the picture does not
    assert _latest(win).playing                                                 # nor does the simulation stop
    plots.set_paused(False)
    plots.set_window(None)
    qtbot.waitUntil(lambda: _points(curve) > frozen)
    win.pause()
    for suffix in (".png", ".svg"):
        (out,) = plots.export(tmp_path / f"plots{suffix}")
        assert out.stat().st_size > 1000
    (csv,) = plots.export(tmp_path / "plots.csv")                # the whole run, every step, one time column
    lines = csv.read_text().splitlines()
    assert len(lines) > 10 and lines[0].startswith("t [s],") and lines[0].count("t [s]") == 1
    plots.set_log("force", False)
    assert not plots.plots["force"].ctrl.logYCheck.isChecked()


def test_control_panel_settings_reach_the_worker(window, qtbot):
    win = window()
    panel = win.controls
    panel.speed_combo.setCurrentText("as fast as possible")
    qtbot.waitUntil(lambda: math.isinf(_latest(win).speed))
    panel.dt_editor.edit.setText("0.0005")
    panel.dt_editor.edit.editingFinished.emit()
    assert win.document.spec.simulation.dt == 0.0005 and win.document.undo_stack.count() == 1
    qtbot.waitUntil(lambda: _latest(win).model.settings["dt"] == 0.0005)
    panel.formulation_editor.combo.setCurrentText("projection")
    panel.formulation_editor.combo.activated.emit(1)
    assert win.document.spec.simulation.formulation == "projection"
    panel.dt_editor.edit.setText("-1")
    panel.dt_editor.edit.editingFinished.emit()
    assert "greater than 0" in panel.dt_editor.error_label.text()
    win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).steps >= 1, timeout=20_000)
    assert _latest(win).t == pytest.approx(0.0005)


def test_an_actuator_slider_drives_its_joint(window, qtbot, tmp_path):
    def add_motor(doc):
        doc["gravity"] = [0, 0, 0]
        doc["constraints"], doc["forces"] = [], []
        doc["forces"].append({"type": "actuator", "name": "motor", "joint": "base", "limit": 2.0})
    win = window(_write_scene(tmp_path, "motor", add_motor))
    slider = win.controls.actuator_sliders["motor"]
    slider.setValue(slider.maximum())
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t > 0.05, timeout=20_000)
    win.pause()
    qtbot.waitUntil(lambda: not _latest(win).playing)
    assert _latest(win).q[0] > math.pi / 4 + 1e-4      # the base turned the way the torque pushes
    win.reset_action.trigger()
    assert win.controls.actuator_sliders["motor"].value() == 0     # back to the scene's value, like the run


def test_viewport_draws_nails_springs_and_arrows_that_can_be_hidden(window, qtbot):
    win = window(size=(1400, 900))
    for _ in range(30):                                  # until the tip moves fast enough for its arrow
        win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).steps == 30 and _latest(win).overlay is not None, timeout=20_000)
    view = win.viewport
    qtbot.waitUntil(lambda: view.overlays.last is not None)
    full = rgb_array(view.grabFramebuffer())
    assert pixels_of_colour(full, SPRING_COLOUR, 0.999) > 30
    drawn = {}
    for kind, action in win.overlay_actions.items():
        action.setChecked(not action.isChecked())
        changed = np.any(rgb_array(view.grabFramebuffer()) != full, axis=2)
        action.setChecked(not action.isChecked())
        drawn[kind] = int(np.count_nonzero(changed))
    assert drawn["nails"] > 100 and drawn["springs"] > 50 and drawn["forces"] > 50, drawn
    assert drawn["velocities"] > 20 and drawn["frames"] > 50, drawn         # frames: off by default, shown here
    assert drawn["broken"] == 0                                              # nothing broke
    assert np.array_equal(rgb_array(view.grabFramebuffer()), full)


def test_ctrl_drag_pulls_a_body_and_dragging_a_nail_moves_it(window, qtbot):
    win = window()
    view = win.viewport
    win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).overlay is not None and view.overlays.last is not None)
    k = next(k for k, s in enumerate(view.model.shapes) if s.link == 1)
    x, y = view.screen_position(view._poses[k][:3, 3])
    ctrl = Qt.KeyboardModifier.ControlModifier
    QTest.mousePress(view, Qt.MouseButton.LeftButton, ctrl, QPoint(round(x), round(y)))
    QTest.mouseMove(view, QPoint(round(x) + 40, round(y) - 30))
    win.step_action.trigger()
    # the worker's acknowledgement of the move (a snapshot after it took the pull's new target), not a step that
    # may have run before the move arrived
    qtbot.waitUntil(lambda: _latest(win).overlay.pull is not None
                    and np.linalg.norm(np.subtract(*_latest(win).overlay.pull)) > 0.05)
    QTest.mouseRelease(view, Qt.MouseButton.LeftButton, ctrl, QPoint(round(x) + 40, round(y) - 30))
    win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).overlay.pull is None)
    assert win.document.undo_stack.count() == 0         # a pull is an input to the run, not an edit

    win.selection.set(("constraints", 0))
    nail = _latest(win).overlay.point_b[0].copy()
    x, y = view.screen_position(nail)
    QTest.mousePress(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(x), round(y)))
    for dx in (20, 35, 50):
        QTest.mouseMove(view, QPoint(round(x) + dx, round(y)))
    QTest.mouseRelease(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       QPoint(round(x) + 50, round(y)))
    win.step_action.trigger()
    qtbot.waitUntil(lambda: np.linalg.norm(_latest(win).overlay.point_b[0] - nail) > 0.05)
    # one undo step for the whole drag, and the inspector shows where the nail now is
    assert win.document.undo_stack.count() == 1 and "nail 'tip_nail'" in win.undo_action.text()
    moved = np.array(win.document.spec.constraints[0].position)
    assert np.linalg.norm(moved - nail) > 0.05
    assert win.inspector.editor("position").value() == pytest.approx(moved.tolist())
    win.undo_action.trigger()                            # the nail goes back, in the document and in the run
    assert win.document.spec.constraints[0].position == (0.0, 0.0, 1.5)
    win.step_action.trigger()
    qtbot.waitUntil(lambda: np.linalg.norm(_latest(win).overlay.point_b[0] - nail) < 1e-6)
    win.redo_action.trigger()
    assert win.inspector.editor("position").value() == pytest.approx(moved.tolist())
    win.step_action.trigger()
    qtbot.waitUntil(lambda: np.linalg.norm(_latest(win).overlay.point_b[0] - moved) < 1e-6)


def test_a_diverging_scene_pauses_with_a_message_and_keeps_the_last_good_state(window, qtbot, tmp_path):
    def naive(doc):                                      # thesis fig. 2.9 with a 1e7 N bound: the SVD keeps a
        doc["constraints"][0]["max_force"] = 1e7         # near-singular direction and the solve blows up
    win = window(_write_scene(tmp_path, "naive", naive))
    win.play()
    # the core's energy books refuse the step that makes energy from nothing (the tenth)
    qtbot.waitUntil(lambda: "keeping the last good state" in win.status.currentMessage(), timeout=20_000)
    qtbot.waitUntil(lambda: not _latest(win).playing and not win.play_action.isChecked())
    snap = _latest(win)
    assert np.all(np.isfinite(snap.q)) and 0 < snap.t < 0.01
    assert "energy audit" in win.status.currentMessage() and "diverging" in win.status.currentMessage()
    # the studio's own guard on the solve residual pauses it before (it starts at 166 m/s² here)
    win.controls.residual_editor.edit.setText("160")
    win.controls.residual_editor.edit.editingFinished.emit()
    win.reset_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).t == 0.0)
    win.play()
    qtbot.waitUntil(lambda: "solve residual of constraint 'tip_nail'" in win.status.currentMessage(),
                    timeout=20_000)
    qtbot.waitUntil(lambda: not _latest(win).playing and not win.play_action.isChecked())
    assert np.all(np.isfinite(_latest(win).q)) and _latest(win).t < snap.t, win.status.currentMessage()


def test_a_broken_constraint_is_reported_and_marked(window, qtbot, tmp_path):
    def weak(doc):                                       # the tip starts 1.8 m from its nail: it breaks at once
        doc["constraints"][0]["max_deviation"] = 1.0
    win = window(_write_scene(tmp_path, "weak", weak))
    drawn = rgb_array(win.viewport.grabFramebuffer())
    win.step_action.trigger()
    win.step_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).steps == 2)
    assert "constraint 'tip_nail' broke" in win.status.currentMessage()
    assert _latest(win).overlay.broken.tolist() == [True]
    marks = win.viewport.overlays.broken
    assert marks.visible() and len(marks.pos) == 12                    # a cross at each end
    assert not win.viewport.overlays.forces.visible()                  # no force from a broken constraint
    win.overlay_actions["broken"].setChecked(False)
    assert not marks.visible()
    assert drawn.shape == rgb_array(win.viewport.grabFramebuffer()).shape


def test_an_edit_that_changes_the_joints_restarts_the_run(window, qtbot):
    win = window()
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t > 0.01, timeout=20_000)
    run = _latest(win).run
    win.item_actions.add("bodies", "free")
    qtbot.waitUntil(lambda: _latest(win).model.nq == 10 and _latest(win).run > run)
    assert len(win.viewport._poses) == 4 == len(_latest(win).model.shapes)


def test_a_video_of_the_viewport_is_recorded(window, qtbot, tmp_path):
    import imageio_ffmpeg
    win = window(size=(1000, 700))
    win.play()
    for suffix in (".mp4", ".gif"):
        out = tmp_path / f"clip{suffix}"
        win.start_recording(out)                                  # until stopped
        assert win.recorder.recording and win.record_action.isChecked()
        qtbot.waitUntil(lambda: win.recorder.taken >= 6, timeout=20_000)
        path, frames, error = win.recorder.stop(wait=True)
        assert error == "" and path == out and frames >= 6
        assert out.stat().st_size > 1000 and not win.record_action.isChecked()
    n, _ = imageio_ffmpeg.count_frames_and_secs(str(tmp_path / "clip.mp4"))
    assert n >= 6


def test_the_layout_and_recent_files_are_remembered(window, qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "remember.ini"), QSettings.Format.IniFormat)
    win = window(settings=settings)
    win.plots_dock.hide()
    assert win.file_actions.open_path(SCENES_DIR / "three_link_arm.json")
    assert win.close()
    again = window(settings=QSettings(str(tmp_path / "remember.ini"), QSettings.Format.IniFormat))
    assert again.plots_dock.isHidden()
    assert (SCENES_DIR / "three_link_arm.json").resolve() in again.file_actions.recent_files()
    again.file_actions.recent_menu.aboutToShow.emit()
    assert any(a.text() == "three_link_arm.json" for a in again.file_actions.recent_menu.actions())


def test_opening_an_example_from_the_menu_restarts_everything(window, qtbot):
    win = window()
    examples = {a.text(): a for a in win.file_actions.examples_menu.actions()}
    assert "three link arm" in examples and len(examples) == len(list(SCENES_DIR.glob("*.json")))
    examples["three link arm"].trigger()
    qtbot.waitUntil(lambda: _latest(win).model.name == "three_link_arm")
    assert win.document.path.name == "three_link_arm.json" and win.selection.path is None
    assert _latest(win).t == 0.0 and not win.document.modified
    rgb = rgb_array(win.viewport.grabFramebuffer())
    model = _latest(win).model
    assert max(pixels_of_colour(rgb, s.rgba) for s in model.shapes) > 20
    assert edits.item_name(edits.to_data(win.document.spec), ("bodies", 0)) == "link1"


# ---- controllers (when the core has them) ---------------------------------------------------------------------
needs_controllers = pytest.mark.skipif(not edits.CONTROLLER_TYPES, reason="this core has no controllers")
ADAPTIVE = SCENES_DIR / "slotine_li_arm.json"


@needs_controllers
def test_a_controlled_arm_plots_desired_motion_tracking_error_and_estimates(window, qtbot):
    win = window(ADAPTIVE)
    assert win.scene_tree.index_of(("controllers", 0)).isValid()
    win.play()
    plots = win.plots
    qtbot.waitUntil(lambda: plots.history is not None and plots.history.count > 30, timeout=20_000)
    qtbot.waitUntil(lambda: all(_points(c) > 10 for _, c, *_ in plots.curves["parameters"]))
    assert {"joint", "tracking", "parameters"} <= set(plots.curves)
    assert len(plots.curves["joint"]) == 4                   # q and q_d of the shoulder and the elbow
    assert [next(x for x in c if isinstance(x, str)) for c in plots.curves["parameters"]] == [
        "â a1", "â a2", "â a3", "â a4"]                       # Slotine & Li's parameters (the scene's)
    _, desired, *_ = plots.curves["joint"][2]
    assert np.all(np.isfinite(desired.yData))
    # every scene, controllers too, runs in batches of compiled steps, sampled from the records of each batch
    assert _latest(win).batched
    qtbot.waitUntil(lambda: win.status.cost_label.text().startswith("compiled · "))
    qtbot.waitUntil(lambda: all(_points(c) > 10 for _, c, *_ in plots.curves["tracking"]))
    for _, curve, *_ in plots.curves["tracking"] + plots.curves["parameters"]:
        assert np.all(np.isfinite(curve.yData))
    rows = plots.history.recent()
    lay = plots.layout_spec
    assert np.all(np.diff(rows[:, 0]) > 0) and np.all(np.isfinite(rows[:, lay.groups["tracking_error"]]))
    assert np.ptp(rows[:, lay.groups["parameters"]], axis=0).max() > 0        # the estimates adapt as it runs


@needs_controllers
def test_the_control_panel_switches_and_tunes_controllers_live(window, qtbot):
    win = window(ADAPTIVE)
    panel = win.controls
    assert panel.controller_combo.currentText().startswith("idsl")
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t > 0.05, timeout=20_000)
    run = _latest(win).run
    kp = panel.controller_editor.editor("kp")
    kp.edit.setText("20")
    kp.edit.editingFinished.emit()
    assert win.document.spec.controllers[0].kp == 20.0
    qtbot.waitUntil(lambda: _latest(win).model.spec.controllers[0].kp == 20.0)
    assert _latest(win).run == run and _latest(win).t > 0.05         # the run goes on: gains change in place
    panel.controller_combo.setCurrentIndex(0)
    panel.controller_combo.activated.emit(0)
    assert not win.document.spec.controllers[0].enabled and panel.controller_editor.isHidden()
    win.undo_action.trigger()
    assert win.document.spec.controllers[0].enabled and not panel.controller_editor.isHidden()
    win.undo_action.trigger()
    assert win.document.spec.controllers[0].kp == 9.0 and not win.document.modified


@needs_controllers
def test_a_controller_can_be_added_to_a_scene(window, qtbot):
    win = window()
    assert win.controls.add_controller("pd")
    spec = win.document.spec
    assert spec.controllers[0].type == "pd" and spec.controllers[0].joints == ["base", "shoulder", "elbow"]
    assert win.controls.controller_combo.currentText().startswith("pd")
    assert win.scene_tree.index_of(("controllers", 0)).isValid()
    qtbot.waitUntil(lambda: len(_latest(win).model.controllers) == 1)
    renamed = edits.rename(spec, ("bodies", 2, "joint"), "wrist")
    assert renamed.controllers[0].joints == ["base", "shoulder", "wrist"]


# ---- the kernels compile on the worker thread, and the window says so -------------------------------------------
class GatedSimulation(core.Simulation):
    """A core.Simulation whose single steps wait for ``gate`` (the worker steps it once when it first loads it, then
    restores its snapshot: that is the "first step" of the process), and which records the threads that step or
    evaluate it."""
    gate = threading.Event()
    threads: set = set()

    def step(self, *args, **kwargs):
        GatedSimulation.threads.add(threading.get_ident())
        assert GatedSimulation.gate.wait(timeout=60), "the test never opened the gate"
        return super().step(*args, **kwargs)

    @property
    def data(self):
        GatedSimulation.threads.add(threading.get_ident())
        return core.Simulation.data.fget(self)


def test_first_use_says_the_kernels_are_being_prepared_while_the_window_stays_live(qtbot, gl_renderer, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.setattr(worker_module, "_PREPARED", set())              # as in a process that has run nothing yet
    monkeypatch.setattr(GatedSimulation, "gate", threading.Event())
    monkeypatch.setattr(GatedSimulation, "threads", set())
    model = core.load_scene(ARM)
    win = MainWindow(model, GatedSimulation(model), path=ARM,
                     settings=QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat))
    win.file_actions.ask_to_save = lambda: "discard"
    said = []
    win.sim_thread.busy.connect(said.append)            # a GUI-thread slot: every message, in order
    show(qtbot, win, 900, 600)
    try:
        # The worker evaluated the initial state and now takes its warm-up step, which waits at the gate: the first
        # step is pending. The window is up, shows the message and answers (this wait runs its event loop).
        qtbot.waitUntil(lambda: win.status.currentMessage().startswith((worker_module.PREPARING,
                                                                         worker_module.LOADING)),
                        timeout=FIRST_USE_MS)
        assert said == [worker_module.LOADING] and win.status.busy_message.startswith(said[0])
        qtbot.waitUntil(lambda: win.status.currentMessage() == f"{said[0]} 1 s")   # counting the seconds
        assert win.sim_thread.latest is None            # no snapshot before the kernels are ready
        win.selection.set(("constraints", 0))           # the GUI works meanwhile: the inspector shows the nail
        assert win.inspector.editor("max_force").edit.text() == "200000"
        win.status.note("")                             # clearing the status bar (Play does) keeps the message
        assert win.status.currentMessage().startswith(said[0])
        win.play()                                      # queued: applied once the worker is ready
        assert win.status.currentMessage().startswith(said[0])
    finally:
        GatedSimulation.gate.set()                      # never leave the worker waiting (its thread must finish)
    qtbot.waitUntil(lambda: said == [said[0], ""])
    assert not win.status.currentMessage().startswith(said[0]) and win.status.busy_message == ""
    qtbot.waitUntil(lambda: _latest(win) is not None and _latest(win).playing and _latest(win).t > 0.01,
                    timeout=20_000)
    # Prepared once per process and kind of simulation: a reset evaluates again, without the message.
    win.pause()
    win.reset_action.trigger()
    qtbot.waitUntil(lambda: not _latest(win).playing and _latest(win).steps == 0)
    assert said == [said[0], ""]
    # Nothing evaluated or stepped the simulation on the GUI thread (the constructor included).
    assert GatedSimulation.threads and threading.get_ident() not in GatedSimulation.threads
    win.close()


# ---- a cold kernel cache: compiled in a separate process while the window stays live --------------------------
def _cold_cache(monkeypatch, command):
    """As on a machine that never ran this version of the core: the cache check says no, and the warm-up command
    is a quick stand-in (the real kernels stay cached, so the worker then loads them at once)."""
    import core.jit
    from studio.qt.run import kernels
    monkeypatch.setattr(core.jit, "kernels_cached", lambda: False)
    monkeypatch.setattr(kernels, "WARM_COMMAND", (sys.executable, "-c", command))


def _cold_window(qtbot, tmp_path):
    model = core.load_scene(ARM)
    win = MainWindow(model, path=ARM, settings=QSettings(str(tmp_path / "cold.ini"), QSettings.Format.IniFormat))
    win.file_actions.ask_to_save = lambda: "discard"
    shown = []
    win.status.messageChanged.connect(shown.append)
    show(qtbot, win, 900, 600)
    return win, shown


def test_a_cold_cache_compiles_in_a_separate_process_while_the_window_stays_live(qtbot, gl_renderer, tmp_path,
                                                                                 monkeypatch):
    _cold_cache(monkeypatch, "import time; time.sleep(2.5)")
    win, shown = _cold_window(qtbot, tmp_path)
    try:
        assert win.kernels is not None and win.kernels.running
        assert not win.sim_thread.thread.isRunning() and _latest(win) is None      # the worker waits for them
        qtbot.waitUntil(lambda: win.status.currentMessage().endswith("… 1 s"))      # counting the seconds
        message = win.status.currentMessage()
        assert message.startswith("Compiling the physics kernels for this machine (first run of this version")
        assert win.status.rate_label.text() == "waiting for the kernels"
        rgb = rgb_array(win.viewport.grabFramebuffer())                              # the scene at t = 0
        assert max(pixels_of_colour(rgb, s.rgba) for s in win.viewport.model.shapes) > 20
        win.selection.set(("forces", 0))                                             # browse and edit meanwhile
        editor = win.inspector.editor("stiffness")
        editor.edit.setText("35")
        editor.edit.editingFinished.emit()
        assert win.document.spec.forces[0].stiffness == 35.0
        win.play()                                                                   # waits in the queue
        assert win.status.currentMessage().startswith("Compiling the physics kernels")   # still said
    finally:
        qtbot.waitUntil(lambda: win.kernels.done, timeout=30_000)
    assert win.kernels.ok and any(m.startswith("the physics kernels are compiled") for m in shown), shown
    qtbot.waitUntil(lambda: _latest(win) is not None and _latest(win).playing and _latest(win).t > 0.01,
                    timeout=20_000)
    assert _latest(win).model.forces[0].stiffness == 35.0                 # the edit reached the simulation
    assert not win.status.currentMessage().startswith("Compiling")
    win.close()
    assert win.sim_thread.thread.isFinished()


def test_if_the_separate_compile_fails_the_worker_compiles_and_says_so(qtbot, gl_renderer, tmp_path, monkeypatch):
    _cold_cache(monkeypatch, "import sys; print('numba exploded'); sys.exit(3)")
    monkeypatch.setattr(worker_module, "_PREPARED", set())              # the worker has prepared nothing yet
    said = []
    win, shown = _cold_window(qtbot, tmp_path)
    win.sim_thread.busy.connect(said.append)
    qtbot.waitUntil(lambda: win.kernels.done, timeout=30_000)
    assert not win.kernels.ok
    failed = "compiling the physics kernels in a separate process failed (exit code 3: numba exploded)"
    assert any(m.startswith(failed) and "compiling them on the simulation thread instead" in m for m in shown)
    qtbot.waitUntil(lambda: _latest(win) is not None, timeout=FIRST_USE_MS)
    assert said and said[0] == worker_module.PREPARING                  # the worker compiles (says it; cached here)
    assert any(m.startswith(failed) and worker_module.PREPARING[1:] in m for m in shown), shown
    win.play()
    qtbot.waitUntil(lambda: _latest(win).playing and _latest(win).t > 0.01, timeout=20_000)
    win.close()


def test_closing_the_window_while_the_kernels_compile_ends_that_process(qtbot, gl_renderer, tmp_path,
                                                                       monkeypatch):
    _cold_cache(monkeypatch, "import time; time.sleep(60)")
    win, _ = _cold_window(qtbot, tmp_path)
    process = win.kernels.process.process
    assert process.poll() is None
    win.close()
    assert process.poll() is not None and win.kernels.done
    qtbot.wait(300)
    assert not win.sim_thread.thread.isRunning()                         # and the worker never started


def test_the_plot_grid_is_drawn_in_opaque_colours_of_the_same_shade(window):
    win = window()
    axis = win.plots.plots["force"].getAxis("left")
    assert isinstance(axis, OpaqueGridAxis) and axis.zValue() < win.plots.plots["force"].vb.zValue()
    from PySide6.QtGui import QImage, QPainter
    image = QImage(10, 10, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    try:
        _, ticks, _ = axis.generateDrawSpecs(painter)
        plain = super(OpaqueGridAxis, axis).generateDrawSpecs(painter)[1]
    finally:
        painter.end()
    assert ticks and all(pen.color().alpha() == 255 for pen, _, _ in ticks)
    for (pen, _, _), (translucent, _, _) in zip(ticks, plain):
        c, a = translucent.color(), translucent.color().alphaF()
        blended = [a * x + (1 - a) * b for x, b in zip((c.red(), c.green(), c.blue()), BACKGROUND)]
        assert np.allclose([pen.color().red(), pen.color().green(), pen.color().blue()], blended, atol=1)


def test_a_programs_parameters_are_edited_in_the_inspector_and_reach_the_simulation(window, qtbot):
    """The scene tree lists the programs; the inspector edits a program's parameters (a JSON object) with undo,
    and the simulation runs the program with them; a parameter the program refuses stays at its field."""
    win = window(SCENES_DIR / "anthropomorphic_hopper.json")
    win.selection.set(("programs", 0))
    editor = win.inspector.editor("parameters")
    params = dict(win.document.spec.programs[0].parameters)
    editor.edit.setPlainText(json.dumps({**params, "speed": 0.2}))
    editor.edit.finished.emit()                          # (a JSON field is a text area: it commits leaving it)
    assert win.document.spec.programs[0].parameters["speed"] == 0.2
    qtbot.waitUntil(lambda: _latest(win).model.programs[0].parameters["speed"] == 0.2, timeout=20_000)
    win.undo_action.trigger()
    assert win.document.spec.programs[0].parameters["speed"] == params["speed"]
    editor = win.inspector.editor("parameters")
    editor.edit.setPlainText(json.dumps({**params, "stance_control": "telepathy"}))
    editor.edit.finished.emit()                          # (a JSON field is a text area: it commits leaving it)
    assert "'virtual_leg' or 'contact_force'" in editor.error_label.text()
    assert win.document.spec.programs[0].parameters["stance_control"] == "contact_force"


# ---- fitting a small screen -----------------------------------------------------------------------------------
def test_the_controller_editor_fits_a_small_screen_and_shows_its_parameters_readably(window, qtbot):
    """At 1280×720 the inspector and the control panel's controller editor fit their docks (no sideways
    scrolling, nothing clipped), and a JSON field — a Slotine–Li's custom parameters — is laid out one member a
    line from its beginning (a one-line field showed its end, ``effector.hy"}}``)."""
    win = window(SCENES_DIR / "slotine_li_arm.json", size=(1280, 720))
    win.selection.set(("controllers", 0))
    for inspector in (win.inspector, win.controls.controller_editor):
        scroll = inspector._scroll
        qtbot.waitUntil(lambda: scroll.widget().minimumSizeHint().width() <= scroll.viewport().width())
        assert not scroll.horizontalScrollBar().isVisible()
        editor = inspector.editor("parameters")
        text = editor.edit.toPlainText()
        assert text.splitlines()[:3] == ["{", '  "type": "custom",', '  "inertial": {']
        assert '    "a4": "-1.0 * effector.hy"' in text.splitlines()
        assert editor.width() >= scroll.viewport().width() - 40            # the whole width, under its label
        assert editor.edit.height() > 6 * editor.edit.fontMetrics().lineSpacing()


def test_a_json_field_takes_an_edit_and_refuses_what_is_not_json(window, qtbot):
    win = window(SCENES_DIR / "slotine_li_arm.json", size=(1280, 720))
    win.selection.set(("controllers", 0))
    editor = win.inspector.editor("initial_parameters")
    assert editor.edit.toPlainText() == '"zero"'
    editor.edit.setPlainText('"model"')
    editor.edit.finished.emit()
    assert win.document.spec.controllers[0].initial_parameters == "model"
    editor = win.inspector.editor("initial_parameters")
    editor.edit.setPlainText('"model')
    editor.edit.finished.emit()
    assert "not valid JSON" in editor.error and win.document.spec.controllers[0].initial_parameters == "model"


def test_the_inspector_shows_help_without_sphinx_markup(window, qtbot):
    """A schema class's docstring is written for Sphinx: the inspector shows a role's text and an inline literal
    in code style, never ``:mod:`` or double backticks."""
    win = window(SCENES_DIR / "bouncing_ball.json")
    win.selection.set(("contacts", 0))
    about = next(label for label in win.inspector.findChildren(QLabel) if "Unilateral contact" in label.text())
    assert about.textFormat() == Qt.TextFormat.RichText
    assert "see core.contacts)" in about.text() and ":mod:" not in about.text() and "`" not in about.text()
    assert "<code>points</code>" in about.text()
    assert help_html(":class:`~core.model.Model`, :ref:`the guide <guide>`, ``a < b``") == \
        "Model, the guide, <code>a &lt; b</code>"


def test_cyclic_garbage_is_collected_on_the_gui_thread_while_the_worker_runs(window, qtbot):
    """Freeing Qt objects on the worker thread (Python's collector runs wherever an allocation trips it) deadlocked
    the studio: the worker's collection disconnecting a plot item's signals waited for the GIL, the GUI thread
    holding it waited for Qt's connection lock. While a simulation thread runs, automatic collection is off and
    the GUI thread collects on a timer; it is back on when the last window's worker has stopped."""
    import gc
    import weakref

    from studio.qt.run.collection import GuiThreadCollection
    was_enabled = gc.isenabled()
    win = window()
    assert GuiThreadCollection.active() and not gc.isenabled()

    class Node:
        pass
    a, b = Node(), Node()
    a.other, b.other = b, a                          # a cycle only the cyclic collector frees
    gone = weakref.ref(a)
    del a, b
    alive = [Node() for _ in range(gc.get_threshold()[0] + 10)]   # past the youngest generation's threshold
    qtbot.waitUntil(lambda: gone() is None, timeout=5_000)   # collected, by the GUI thread's timer
    del alive
    win.close()
    qtbot.waitUntil(lambda: not win.sim_thread.thread.isRunning(), timeout=10_000)
    assert GuiThreadCollection.active() or gc.isenabled() == was_enabled   # no worker left: collection is back
