"""Contacts in the studio (issue 14): the run's events as marks on the plots' time axis and rows of the event list
(which seeks the timeline), both following a rewind; contact points and forces in the viewport; contacts in the
scene tree (with what acts now) and the inspector, with undo.

The GUI tests drive the window as a user does, under Xvfb with OpenGL (see test_studio_tools.py); the worker and
event-log tests need no display. The bouncing ball is dropped from 1 m with radius 0.1 m: it first touches at
t₁ = √(2 · 0.9 / g) = 0.42835 s with v₁ = √(2 g · 0.9) = 4.2021 m/s; with restitution e the next bounce is at
t₁ + 2 e v₁ / g and its impulse is m (1 + e) e v₁.
"""
from __future__ import annotations

import math
import queue
import time

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

import core
from studio import SCENES_DIR
from core.events import Event
from studio.run.events import EventLog
from studio.run.messages import Command, CommandKind
from studio.qt.viewport.overlays import CONTACT_COLOURS, FRICTION_COLOUR
from core.drawing import draw_list
from studio.qt.run.worker import SimulationWorker

from test_studio import FIRST_USE_MS, rgb_array, show

BALL = SCENES_DIR / "bouncing_ball.json"
G, H = 9.81, 0.9
T1 = math.sqrt(2 * H / G)
V1 = math.sqrt(2 * G * H)


def second_bounce(e: float) -> tuple[float, float]:
    """(time, impulse) of the ball's second bounce with restitution e (mass 1 kg)."""
    return T1 + 2 * e * V1 / G, (1 + e) * e * V1


# ---- without a display --------------------------------------------------------------------------------------
def _drive(model):
    """A worker on the test's thread (its loop's steps called directly; the test takes pytest-qt's ``qapp``: a
    bare QCoreApplication made here would leave the GL tests after it without a QApplication)."""
    w = SimulationWorker(core.Simulation(model), queue.Queue(), speed=float("inf"))
    w.sent = []
    w.samples.connect(w.sent.append)
    w._set_simulation(w._sim)
    w._emit()
    return w


def _play_until(w, t_end: float) -> None:
    """Play up to ``t_end`` and no further: the wall-clock target is pinned at ``t_end`` (at unlimited speed one
    5 ms frame of compiled steps can run a simulated half second past it)."""
    speed, lag = w.speed, w.max_lag
    w.speed, w.max_lag = 1.0, math.inf
    w._playing = True
    while w._sim.state.t < t_end - 1e-12:
        w._anchor_t, w._anchor_wall = t_end, w._clock()
        w._advance(deadline=time.perf_counter() + 0.005)
        w._emit()
    w._playing = False
    w.speed, w.max_lag = speed, lag
    w._emit()


def test_the_worker_sends_every_event_once_and_a_rewind_drops_the_later_ones(qapp):
    w = _drive(core.load_scene(BALL))
    log = EventLog()

    def feed():
        for b in w.sent:
            if b.branch is not None:
                log.truncate_after(b.branch)
            log.add(b.events)
        w.sent.clear()

    _play_until(w, 1.2)
    feed()
    bounces = [m for m in log.events if m.kind == "bounce"]
    assert [m.t for m in bounces] == pytest.approx([T1, second_bounce(0.8)[0]], abs=1e-6)
    assert bounces[0].what == "ground.0" and bounces[0].impulse == pytest.approx(1.8 * V1, rel=1e-6)
    assert bounces[0].unit == "N·s" and "bounce of ground.0" in bounces[0].text
    w._apply(Command(CommandKind.SEEK, 0.3))
    _play_until(w, 0.6)
    feed()
    assert [m.t for m in log.events] == pytest.approx([T1], abs=1e-6)        # once again, the later one gone
    assert [m.t for m in log.ghost] == pytest.approx([T1, second_bounce(0.8)[0]], abs=1e-6)   # the earlier try


def test_the_event_log_is_bounded_and_followed_by_sequence_numbers():
    log = EventLog(capacity=100)
    log.add(Event(0.001 * k, "bounce", "c.0", contact="c", impulse=1.0)
            for k in range(250))
    assert len(log) == 100 and log.dropped == 150 and log.first_seq == 150 and log.events[0].t == pytest.approx(0.15)
    assert len(log.since(200)) == 50 and log.since(0)[0] is log.events[0]
    g = log.generation
    log.truncate_after(0.2)
    assert log.generation == g + 1 and log.events[-1].t <= 0.2 and len(log.ghost) == 49


def test_the_draw_list_holds_contact_points_by_mode_and_their_forces():
    """A block sliding on four corners: every corner slips, the normal forces carry its weight and the friction
    forces are μN against the motion; the contact rows are not drawn as constraints."""
    model = core.load_scene(SCENES_DIR / "sliding_block.json")
    sim = core.Simulation(model)
    sim.run(0.3)
    d = draw_list(sim)
    cd = d.contacts
    assert cd.labels == ("ground.0", "ground.1", "ground.2", "ground.3")
    assert list(cd.mode) == [core.contacts.SLIP] * 4
    assert np.allclose(cd.position[:, 2], 0.0, atol=1e-9)                    # on the ground
    assert np.sum(cd.normal, axis=0) == pytest.approx([0.0, 0.0, G], abs=1e-6)
    assert np.sum(cd.friction, axis=0) == pytest.approx([-0.3 * G, 0.0, 0.0], abs=1e-6)
    assert d.contact_row.all()                                                # this scene has only contact rows


# ---- the window -----------------------------------------------------------------------------------------------
@pytest.fixture
def window(qtbot, gl_renderer, tmp_path):
    from PySide6.QtCore import QSettings
    from studio.qt.window.main_window import MainWindow

    def make(scene=BALL, size=(1400, 900)):
        model = core.load_scene(scene)
        settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
        win = MainWindow(model, path=scene, settings=settings)
        win.file_actions.ask_to_save = lambda: "discard"
        show(qtbot, win, *size)
        win.activateWindow()
        qtbot.waitActive(win)
        qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
        return win

    return make


def _run_to(win, qtbot, t: float, speed: float | None = None) -> None:
    """Play until the simulated time reaches ``t`` (as fast as possible, or at ``speed`` × real time), then pause."""
    win.controls.set_speed(speed)
    win.play()
    qtbot.waitUntil(lambda: win.sim_thread.latest.t >= t, timeout=60_000)
    win.pause()
    qtbot.waitUntil(lambda: not win.sim_thread.latest.playing)


def _bounces(win) -> list:
    win.events.refresh()
    m = win.events.model
    return [m.event_at(r) for r in range(m.rowCount()) if m.event_at(r).kind == "bounce"]


def _pixel_of(plots, key: str, t: float) -> tuple[int, int]:
    """The widget pixel (x, y) of time ``t`` just above the bottom of plot ``key``'s view."""
    plot = plots.plots[key]
    rect = plot.vb.sceneBoundingRect()
    scene = plot.vb.mapViewToScene(QPointF(t, 0.0))
    p = plots.graphics.mapFromScene(QPointF(scene.x(), rect.bottom() - 3))
    return p.x(), p.y()


def test_bounces_are_listed_marked_on_the_plots_and_seek_the_timeline(window, qtbot):
    win = window()
    _run_to(win, qtbot, 1.2)
    qtbot.waitUntil(lambda: len(_bounces(win)) >= 2)
    first, second = _bounces(win)[:2]
    assert first.t == pytest.approx(T1, abs=1e-6) and second.t == pytest.approx(second_bounce(0.8)[0], abs=1e-6)
    row = win.events.row_of("bounce", T1)
    assert win.events.model.data(win.events.model.index(row, 3)) == f"{1.8 * V1:.4g} N·s"
    # the plots mark it: an event line at t1 in every plot, a tick of the bounce colour at the time axis
    win.plots._dirty = True
    win.plots.redraw()
    for key in win.plots.plots:
        assert np.any(np.abs(win.plots.figure.event_lines(key).drawn_times()["bounce"] - T1) < 1e-9), key
    image = rgb_array(win.plots.graphics.grab().toImage()).astype(int)
    x, y = _pixel_of(win.plots, "energy", T1)
    patch = image[y - 2:y + 1, max(0, x - 2):x + 3].reshape(-1, 3)
    bounce = np.array([86, 180, 233])
    assert np.min(np.abs(patch - bounce).sum(axis=1)) < 40, "no bounce tick at t1 on the time axis"
    x0, y0 = _pixel_of(win.plots, "energy", 0.5 * T1)                            # none where nothing happened
    assert np.min(np.abs(image[y0 - 2:y0 + 1, x0 - 2:x0 + 3].reshape(-1, 3) - bounce).sum(axis=1)) > 60
    assert "bounce" in win.plots.plots[list(win.plots.plots)[-1]].getAxis("bottom").labelText
    # selecting the row goes to the bounce's time, paused
    win.events.select_row(row)
    qtbot.waitUntil(lambda: abs(win.sim_thread.latest.t - T1) <= 1.01e-3 and not win.sim_thread.latest.playing)
    t = win.sim_thread.latest.t
    assert t >= T1 - 1e-9
    assert win.timeline.t == t and win.plots.cursor == t
    # the viewport draws the contact point (open after the bounce: grey, small) where the ball touches
    vp = win.viewport
    qtbot.waitUntil(lambda: vp.overlays.last is not None and vp.overlays.last.t == t)
    cd = vp.overlays.last.contacts
    assert cd is not None and cd.mode[0] == core.contacts.OPEN
    colours = vp.overlays.contact_points._limbstudio_mesh[2]
    assert np.allclose(colours, CONTACT_COLOURS[core.contacts.OPEN])
    with_marks = rgb_array(vp.grabFramebuffer()).astype(int)
    vp.set_overlay_visible("contacts", False)
    without = rgb_array(vp.grabFramebuffer()).astype(int)
    vp.set_overlay_visible("contacts", True)
    changed = np.argwhere(np.abs(with_marks - without).sum(axis=2) > 30)
    assert len(changed) > 10, "no contact marker drawn"
    sx, sy = vp.screen_position(cd.position[0])
    dpr = with_marks.shape[1] / vp.width()
    centre = changed.mean(axis=0) / dpr
    assert abs(centre[1] - sx) < 12 and abs(centre[0] - sy) < 12            # (row, column) = (y, x)


def test_restitution_edited_in_the_inspector_changes_the_next_bounce_and_undo_restores_it(window, qtbot):
    win = window()
    tree = win.scene_tree
    contacts = tree.index_of(("contacts", 0))
    assert contacts.isValid() and contacts.data() == "ground"
    _run_to(win, qtbot, 1.2)                     # (as fast as possible: it may run on a little before it pauses)
    qtbot.waitUntil(lambda: len(_bounces(win)) >= 2)
    win.timeline.seek_requested.emit(0.2)       # back to before the first bounce, as the slider does
    qtbot.waitUntil(lambda: abs(win.sim_thread.latest.t - 0.2) < 1.01e-3 and not win.sim_thread.latest.playing)
    # the tree lists the contact's point with its mode, refreshed from the running state
    qtbot.waitUntil(lambda: tree.model().rowCount(contacts) == 1, timeout=5000)
    # (the tree refreshes on its own timer: it may still show the mode from before the seek for a frame)
    qtbot.waitUntil(lambda: tree.model().index(0, 0, contacts).data() == "ground.0  open", timeout=5000)
    win.selection.set(("contacts", 0))
    assert win.inspector.editor("restitution").edit.text() == "0.8"
    field = win.inspector.editor("restitution").edit
    QTest.mouseClick(field, Qt.MouseButton.LeftButton)
    field.selectAll()
    QTest.keyClicks(field, "0.5")
    QTest.keyClick(field, Qt.Key.Key_Return)
    assert win.document.spec.contacts[0].restitution == 0.5
    assert "restitution" in win.document.undo_stack.undoText()
    qtbot.waitUntil(lambda: win.sim_thread.latest.model.contacts[0].restitution == 0.5, timeout=5000)
    _run_to(win, qtbot, 1.0)
    qtbot.waitUntil(lambda: len(_bounces(win)) >= 2)
    t2, p2 = second_bounce(0.5)
    assert _bounces(win)[0].t == pytest.approx(T1, abs=1e-6)               # listed once: the earlier try's went
    assert _bounces(win)[1].t == pytest.approx(t2, abs=1e-6)
    assert _bounces(win)[1].impulse == pytest.approx(p2, rel=1e-6)
    assert not any(abs(m.t - second_bounce(0.8)[0]) < 1e-3 for m in _bounces(win))
    assert any(abs(m.t - second_bounce(0.8)[0]) < 1e-6 for m in win.plots.events.ghost)   # drawn faded
    # Ctrl+Z: e = 0.8 again, and a run from the start bounces as the scene says
    qtbot.waitUntil(lambda: win.viewport.hasFocus())
    QTest.keyClick(win.viewport, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert win.document.spec.contacts[0].restitution == 0.8
    assert win.inspector.editor("restitution").edit.text() == "0.8"
    win.reset_action.trigger()
    qtbot.waitUntil(lambda: win.sim_thread.latest.t == 0.0)
    qtbot.waitUntil(lambda: not _bounces(win))                                 # a new run: the list starts over
    _run_to(win, qtbot, 1.2)
    qtbot.waitUntil(lambda: len(_bounces(win)) >= 2)
    t2, p2 = second_bounce(0.8)
    assert _bounces(win)[1].t == pytest.approx(t2, abs=1e-6)
    assert _bounces(win)[1].impulse == pytest.approx(p2, rel=1e-6)
    assert not win.plots.events.ghost                   # Reset started clean: the edited try is dropped (issue 27)


def test_the_viewport_draws_friction_and_the_tree_marks_slipping_points(window, qtbot):
    win = window(SCENES_DIR / "sliding_block.json")
    _run_to(win, qtbot, 0.2, speed=1.0)                   # (paused well before it sticks at 0.68 s)
    if win.sim_thread.latest.t >= 0.6:                    # a stalled GUI thread paused it late: back to 0.3 s
        win.sim_thread.seek(0.3)
        qtbot.waitUntil(lambda: win.sim_thread.latest.t < 0.6 and not win.sim_thread.latest.playing)
        win.viewport.show_snapshot(win.sim_thread.latest)  # (drawn now, not at the next frame)
    assert win.sim_thread.latest.t < 0.6
    win.scene_tree.show_activity(win.sim_thread.latest.model, win.sim_thread.latest.draw)
    contacts = win.scene_tree.index_of(("contacts", 0))
    labels = [win.scene_tree.model().index(r, 0, contacts).data() for r in range(4)]
    assert labels == [f"ground.{i}  slip" for i in range(4)]
    assert win.scene_tree.model().index(0, 0, contacts).data(Qt.ItemDataRole.FontRole).bold()
    mesh = win.viewport.overlays.contact_forces._limbstudio_mesh
    colours = {tuple(np.round(c, 3)) for c in mesh[2]}
    assert tuple(np.round(np.float32(FRICTION_COLOUR), 3)) in colours           # friction arrows
    assert len(colours) == 2                                                     # and normal-force arrows


def test_a_scene_that_asks_to_follow_a_body_keeps_it_in_view(window, qtbot):
    """scenes/raibert_hopper.json says "view": {"follow": "body"}: the camera centres on the hopper's body as it
    hops away from where it started (a travelling scene does not leave the picture)."""
    win = window(SCENES_DIR / "raibert_hopper.json")
    model = win.sim_thread.latest.model
    body = model.link_names.index("body")
    assert win.viewport.following == body
    _run_to(win, qtbot, 2.5)
    qtbot.wait(100)
    x = float(win.sim_thread.latest.q[model.q_slice("x")][0])
    assert x > 0.8                                                   # it has travelled
    centre = win.viewport.opts["center"]
    drawn = win.viewport._R_DW.T @ np.array([centre.x(), centre.y(), centre.z()])
    assert abs(drawn[0] - x) < 0.3                                   # and the camera went with it


def test_the_tree_marks_a_programs_own_constraint_and_its_removal(window, qtbot, tmp_path):
    """A control program that removes its own nail at 0.05 s: the tree shows the nail italic (a program's
    constraint), then hollow (removed), and the event list has the program's "removed" row."""
    import json

    from core.programs import ControlProgram, register

    @register
    class DropNail(ControlProgram):
        kind = "test_drop_nail"
        parameters = {"at": 0.05}

        def start(self, ctl):
            ctl.declare("t", "time")
            ctl.watch("drop", "t", self.p["at"])

        def event(self, ctl, event):
            if event.kind == "watch":
                ctl.remove(self.owned[0])

    doc = json.loads((SCENES_DIR / "arm_nail_singular.json").read_text())
    nail = doc["constraints"][0]["name"]
    doc["programs"] = [{"name": "dropper", "program": "test_drop_nail", "constraints": [nail]}]
    path = tmp_path / "dropping.json"
    path.write_text(json.dumps(doc))
    win = window(path)
    index = win.scene_tree.index_of(("constraints", 0))
    _run_to(win, qtbot, 0.2)
    qtbot.waitUntil(lambda: index.data(Qt.ItemDataRole.FontRole) is not None
                    and index.data(Qt.ItemDataRole.FontRole).italic(), timeout=5000)
    qtbot.waitUntil(lambda: "off now" in index.data(Qt.ItemDataRole.ToolTipRole), timeout=5000)
    assert "control program dropper" in index.data(Qt.ItemDataRole.ToolTipRole)

    def removed():
        win.events.refresh()
        m = win.events.model
        return [m.event_at(r) for r in range(m.rowCount()) if m.event_at(r).kind == "removed"]

    qtbot.waitUntil(lambda: len(removed()) == 1, timeout=5000)       # (the worker's batches arrive in their time)
    assert removed()[0].what == nail and removed()[0].t == pytest.approx(0.05, abs=2e-3)
