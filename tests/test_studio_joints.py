"""The control panel's Joints group: a slider per hinge and slider joint of the model, spanning its limits (±π, ±1 m
without), that poses the paused simulation through the worker (that joint alone, its velocity zeroed, the viewport
redrawn), follows the state while running (disabled, never sending a pose back), shows the initial state after a
Reset, and writes the current joints into the document's q0 ("Set as initial pose", one undoable edit; an included
robot file's joints into the robot include's q0).

As in test_studio_window.py, nothing waits on a signal emitted from the worker thread: the tests wait with
``qtbot.waitUntil`` on what the GUI thread has received, and read the simulation back with ``sim_thread.call``.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import core
from studio import SCENES_DIR
from studio.__main__ import load_model
from studio.qt.window.control_panel import SLIDER_STEPS
from studio.run.pose import joint_spans, pose

from test_studio import discard_windows, main_windows, rgb_array

ROOT = Path(__file__).resolve().parents[1]
ARM = SCENES_DIR / "three_link_arm.json"            # three hinges, no limits, swinging under gravity
LIMITED = SCENES_DIR / "pendulum_joint_limit.json"  # one hinge with limits [0.3, 1.5]
BOOM = ROOT / "tests" / "data" / "boom_payload.urdf"
LSA7 = ROOT / "assets" / "urdf" / "lsa7_arm.urdf"


@pytest.fixture
def window(qtbot, gl_renderer, tmp_path):
    make, made = main_windows(qtbot, tmp_path, load=lambda scene: load_model(Path(scene)))   # (robot files too)
    yield lambda scene=ARM, size=(1280, 800): make(scene, size)
    discard_windows(made)


def _latest(win):
    return win.sim_thread.latest


def _state(win):
    """(q, q̇) read on the worker thread."""
    return win.sim_thread.call(lambda sim: (sim.state.q.copy(), sim.state.qd.copy()))


def _value_of(slider, k: int) -> float:
    low, high = slider.span
    return low + (high - low) * (k + SLIDER_STEPS) / (2 * SLIDER_STEPS)


def _urdf_limits(path: Path) -> dict:
    return {j.get("name"): (float(j.find("limit").get("lower")), float(j.find("limit").get("upper")))
            for j in ET.parse(path).getroot().iter("joint") if j.get("type") in ("revolute", "prismatic")}


# ---- without a window ---------------------------------------------------------------------------------------------
def test_joint_spans_are_the_models_limits_else_pi_or_a_metre():
    spans, skipped = joint_spans(core.load_urdf(BOOM))
    by = {s.name: s for s in spans}
    limits = _urdf_limits(BOOM)
    assert by["slew"].kind == "hinge" and (by["slew"].low, by["slew"].high) == limits["slew"] and by["slew"].limited
    assert by["counter_slide"].kind == "slider" and (by["counter_slide"].low, by["counter_slide"].high) == \
        limits["counter_slide"]
    assert (by["spin"].low, by["spin"].high) == (-math.pi, math.pi) and not by["spin"].limited  # continuous
    assert skipped == ("payload_float",)                     # a floating joint: no slider
    free_spans, free_skipped = joint_spans(core.load_scene(SCENES_DIR / "spherical_pendulum.json"))
    assert free_spans == () and len(free_skipped) == 1


def test_a_pose_sets_that_joint_zeroes_its_velocity_and_books_the_energy():
    sim = core.Simulation(core.load_scene(ARM))
    sim.run(0.2)
    q, qd, error = sim.state.q.copy(), sim.state.qd.copy(), sim.energy_error()
    pose(sim, {"elbow": -1.0})
    elbow = sim.model.q_slice("elbow").start
    assert sim.state.q[elbow] == -1.0 and sim.state.qd[elbow] == 0.0
    others = np.arange(len(q)) != elbow
    np.testing.assert_array_equal(sim.state.q[others], q[others])
    np.testing.assert_array_equal(sim.state.qd[others], qd[others])
    assert sim.energy_error() == pytest.approx(error, abs=1e-9)    # the pose's energy is booked, not an error
    t = sim.state.t
    sim.run(0.05)                                                  # and the run goes on from it
    assert sim.state.t > t
    with pytest.raises(KeyError):
        pose(sim, {"nothing": 0.0})


# ---- the window ---------------------------------------------------------------------------------------------------
@pytest.mark.gui
def test_paused_a_joint_slider_poses_that_joint_and_the_viewport_redraws(window, qtbot):
    win = window()
    controls = win.controls
    qtbot.waitUntil(lambda: set(controls.joint_sliders) == {"shoulder", "elbow", "wrist"})
    q0, qd0 = _state(win)
    before = rgb_array(win.viewport.render_image((320, 240))).astype(int)
    slider = controls.joint_sliders["elbow"]
    assert slider.isEnabled()
    assert slider.span == (-math.pi, math.pi)
    k = SLIDER_STEPS // 2                                           # π/2
    slider.setValue(k)
    wanted = _value_of(slider, k)
    qtbot.waitUntil(lambda: abs(_latest(win).q[1] - wanted) < 1e-12)
    q, qd = _state(win)
    assert q[1] == pytest.approx(wanted) and qd[1] == 0.0
    np.testing.assert_array_equal(q[[0, 2]], q0[[0, 2]])           # the other joints keep theirs
    assert float(controls.joint_fields["elbow"].value()) == pytest.approx(wanted)
    assert win.document.spec.bodies[1].joint.q0 == 0.4             # a pose is no document edit
    assert not win.document.modified
    after = rgb_array(win.viewport.render_image((320, 240))).astype(int)
    assert np.count_nonzero(np.abs(after - before).sum(axis=2) > 30) > 200   # the arm is drawn where it is posed
    steps = _latest(win).steps
    win.step_action.trigger()                                       # the run goes on from the pose
    qtbot.waitUntil(lambda: _latest(win).steps > steps)
    assert "diverg" not in win.status.currentMessage()
    assert abs(_latest(win).q[1] - wanted) < 0.01


@pytest.mark.gui
def test_running_the_sliders_follow_the_state_disabled_and_send_nothing(window, qtbot):
    win = window()
    controls = win.controls
    qtbot.waitUntil(lambda: "shoulder" in controls.joint_sliders)
    sent = []
    controls.joints_posed.connect(sent.append)
    slider = controls.joint_sliders["shoulder"]
    start = slider.value()
    win.play()
    qtbot.waitUntil(lambda: not slider.isEnabled())
    assert "Pause" in slider.toolTip()
    assert not controls.initial_pose_button.isEnabled()
    qtbot.waitUntil(lambda: _latest(win).t > 0.3, timeout=20_000)
    qtbot.waitUntil(lambda: abs(slider.value() - start) > 20, timeout=20_000)    # it follows the swinging arm
    win.pause()
    qtbot.waitUntil(lambda: not _latest(win).playing)
    qtbot.waitUntil(lambda: float(controls.joint_fields["shoulder"].value()) == float(_latest(win).q[0]))
    assert slider.value() == round((_latest(win).q[0] + math.pi) / (2 * math.pi) * 2 * SLIDER_STEPS) - SLIDER_STEPS
    assert slider.isEnabled() and controls.initial_pose_button.isEnabled()
    assert sent == []                                       # a slider the state moved sends no pose


@pytest.mark.gui
def test_after_reset_the_sliders_show_the_initial_state(window, qtbot):
    win = window()
    controls = win.controls
    qtbot.waitUntil(lambda: "wrist" in controls.joint_sliders)
    controls.joint_sliders["wrist"].setValue(-SLIDER_STEPS)
    qtbot.waitUntil(lambda: _latest(win).q[2] == -math.pi)
    sent = []
    controls.joints_posed.connect(sent.append)
    win.reset_action.trigger()
    qtbot.waitUntil(lambda: _latest(win).q[2] == 0.5)
    qtbot.waitUntil(lambda: float(controls.joint_fields["wrist"].value()) == 0.5)
    for name, q0 in (("shoulder", 0.3), ("elbow", 0.4), ("wrist", 0.5)):
        assert float(controls.joint_fields[name].value()) == q0
        assert controls.joint_sliders[name].value() == round(q0 / math.pi * SLIDER_STEPS)
    steps = _latest(win).steps
    win.step_action.trigger()                              # paused, the state moves the sliders: no pose sent back
    qtbot.waitUntil(lambda: _latest(win).steps > steps)
    qtbot.waitUntil(lambda: float(controls.joint_fields["shoulder"].value()) == float(_latest(win).q[0]))
    assert sent == []


@pytest.mark.gui
def test_set_as_initial_pose_is_one_undoable_edit_of_q0(window, qtbot):
    win = window(LIMITED)
    controls = win.controls
    qtbot.waitUntil(lambda: "swing" in controls.joint_sliders)
    slider = controls.joint_sliders["swing"]
    assert slider.span == (0.3, 1.5)                       # the scene's limits
    controls.joint_fields["swing"].committed.emit(0.7)     # typed in the field
    qtbot.waitUntil(lambda: _latest(win).q[0] == 0.7)
    assert win.document.spec.bodies[0].joint.q0 == 1.2
    depth = win.document.undo_stack.count()
    assert controls.set_initial_pose()
    assert win.document.spec.bodies[0].joint.q0 == 0.7
    assert win.document.undo_stack.count() == depth + 1 and win.document.modified
    qtbot.waitUntil(lambda: _latest(win).model.q0[0] == 0.7)
    assert _latest(win).q[0] == 0.7                        # the edit keeps the state
    win.undo_action.trigger()
    assert win.document.spec.bodies[0].joint.q0 == 1.2
    qtbot.waitUntil(lambda: _latest(win).model.q0[0] == 1.2)
    controls.joint_fields["swing"].committed.emit(9.0)     # beyond the limits: the pose stops at the bound
    qtbot.waitUntil(lambda: _latest(win).q[0] == 1.5)


@pytest.mark.gui
def test_a_urdf_robot_has_a_slider_per_revolute_joint_spanning_its_limits(window, qtbot):
    win = window(LSA7)
    controls = win.controls
    limits = _urdf_limits(LSA7)
    qtbot.waitUntil(lambda: set(controls.joint_sliders) == set(limits), timeout=20_000)
    for name, span in limits.items():
        assert controls.joint_sliders[name].span == span
    controls.joint_fields["joint2"].committed.emit(1.0)
    model = _latest(win).model
    qtbot.waitUntil(lambda: _latest(win).q[model.q_slice("joint2").start] == 1.0)
    assert win.document.spec.robot.q0 == {}
    assert controls.initial_pose_button.isEnabled()
    assert controls.set_initial_pose()                     # into the robot include's q0
    q0 = win.document.spec.robot.q0
    assert set(q0) == set(limits) and q0["joint2"] == 1.0
    win.undo_action.trigger()
    assert win.document.spec.robot.q0 == {}
