"""The Messages dock and the notice log behind it: what an importer dropped from a robot file, a divergence that
paused the run, the kernels' first compile counting its seconds (also when the cache was judged complete
wrongly, the compile then runs in a separate process while the window stays live), bounded and copyable.

The GUI tests need a display with OpenGL (pytest-xvfb) and wait with ``qtbot.waitUntil`` on what the GUI thread
has received, never for a fixed time.
"""
from __future__ import annotations

import json
import sys
import time

import pytest
from PySide6.QtCore import QSettings, QTimer
from PySide6.QtWidgets import QApplication

import core
from studio import SCENES_DIR
from studio.qt.run import worker as worker_module
from studio.qt.window.main_window import MainWindow
from studio.run.notices import NoticeLog, Severity, caught_import_warnings

from test_studio import FIRST_USE_MS, show

ARM = SCENES_DIR / "arm_nail_singular.json"

#: A one-link robot whose capsule visual the URDF importer drops (it says so with a URDFWarning).
URDF = """<?xml version="1.0"?>
<robot name="dropped">
  <link name="base"/>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <visual><geometry><capsule radius="0.1" length="0.3"/></geometry></visual>
  </link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


# ---- the log (no Qt) ------------------------------------------------------------------------------------------
def test_the_log_keeps_the_newest_notices_with_their_times_and_revises_progress_in_place():
    clock = {"t": 1.25}
    log = NoticeLog(capacity=3, sim_time=lambda: clock["t"])
    seen = []
    log.subscribe(seen.append)
    first = log.post("compiling — 0 s", source="kernels")
    assert first.t == 1.25 and first.severity is Severity.INFO and abs(first.wall - time.time()) < 5
    log.revise(first, "compiling — 1 s")
    assert [n.text for n in log.notices()] == ["compiling — 1 s"] and log.notices()[0].number == first.number
    for k in range(4):
        log.post(f"note {k}", Severity.WARNING, t=2.0 + k)
    assert [n.text for n in log.notices()] == ["note 1", "note 2", "note 3"]      # bounded: the newest, in order
    assert log.revise(first, "compiling — done").text == "compiling — done"      # gone: posted again
    assert len(seen) == 7 and len(log) == 3
    lines = log.text().splitlines()
    assert lines[0].split("\t")[1:] == ["t = 4.0000 s", "warning", "studio", "note 2"]
    with pytest.raises(ValueError, match="at least one"):
        NoticeLog(capacity=0)


def test_import_warnings_are_caught_every_time_and_other_warnings_go_on(tmp_path):
    path = tmp_path / "dropped.urdf"
    path.write_text(URDF)
    for _ in range(2):                       # Python shows a warning once per place; the log wants each import's
        _, notes = caught_import_warnings(core.read_spec, path)
        assert len(notes) == 1 and "capsule" in notes[0]
    with pytest.warns(DeprecationWarning, match="other"):
        import warnings
        caught_import_warnings(warnings.warn, "other", DeprecationWarning)


# ---- the dock -------------------------------------------------------------------------------------------------
@pytest.fixture
def window(qtbot, gl_renderer, tmp_path):
    made = []

    def make(scene=ARM):
        model = core.load_scene(scene)
        settings = QSettings(str(tmp_path / f"studio{len(made)}.ini"), QSettings.Format.IniFormat)
        win = MainWindow(model, path=scene, settings=settings)
        win.file_actions.ask_to_save = lambda: "discard"
        show(qtbot, win, 1280, 800)
        qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
        made.append(win)
        return win

    yield make
    for win in made:
        win.close()


def _rows(win) -> list:
    model = win.messages.notices
    return [model.notice(r) for r in range(model.rowCount())]


@pytest.mark.gui
def test_import_warnings_of_a_robot_file_appear_in_the_messages_dock(window, qtbot, tmp_path):
    win = window()
    path = tmp_path / "dropped.urdf"
    path.write_text(URDF)
    assert win.file_actions.open_path(path)
    qtbot.waitUntil(lambda: any(n.source == "import" for n in _rows(win)))
    warned = [n for n in _rows(win) if n.source == "import"]
    assert len(warned) == 1 and warned[0].severity is Severity.WARNING and "capsule" in warned[0].text
    assert "1 import warning: see View ▸ Messages" in _rows(win)[-1].text            # newest at the bottom
    assert win.messages_dock.toggleViewAction() in win.menuBar().actions()[2].menu().actions()
    win.messages.selectRow(win.messages.notices.rowCount() - 2)                       # copy it as text
    win.messages.copy()
    copied = QApplication.clipboard().text()
    assert copied.count("\n") == 0 and "\twarning\timport\t" in copied and "capsule" in copied


@pytest.mark.gui
def test_a_divergence_appears_in_the_messages_dock_with_its_simulated_time(window, qtbot, tmp_path):
    doc = json.loads(ARM.read_text())
    doc["constraints"][0]["max_force"] = 1e12            # thesis fig. 2.9 with a 1e12 N bound: the solve blows up
    path = tmp_path / "naive.json"
    path.write_text(json.dumps(doc))
    win = window(path)
    win.play()
    qtbot.waitUntil(lambda: any(n.severity is Severity.ERROR for n in _rows(win)), timeout=20_000)
    error, = [n for n in _rows(win) if n.severity is Severity.ERROR]
    assert "keeping the last good state" in error.text and error.source == "simulation"
    qtbot.waitUntil(lambda: not win.sim_thread.latest.playing)
    assert error.t is not None and 0 <= error.t <= win.sim_thread.latest.t < 0.01
    index = win.messages.notices.index(win.messages.notices.rowCount() - 1, 2)
    assert "keeping the last good state" in index.data()


@pytest.mark.gui
def test_a_cache_judged_complete_wrongly_compiles_in_a_separate_process_with_a_counter(qtbot, gl_renderer, tmp_path,
                                                                                      monkeypatch):
    """The issue's case: the cache check said yes, the kernels were not there, and the studio compiled them in its
    own process behind "Loading…" for minutes. Now the worker's load refuses to compile, runs the separate process
    (here a stand-in that takes 4 s), counts the seconds in the status bar and the dock, and the window answers."""
    import core.jit
    from studio.qt.run import kernels

    def refuse_once():
        monkeypatch.setattr(kernels, "refusing_compiles", real)        # the load after the compile finds them
        raise kernels.KernelsNotCached("fk_kernel is not in the kernel cache")

    real = kernels.refusing_compiles
    monkeypatch.setattr(core.jit, "kernels_cached", lambda: True)
    monkeypatch.setattr(worker_module, "_PREPARED", set())
    monkeypatch.setattr(worker_module, "refusing_compiles", refuse_once)
    monkeypatch.setattr(kernels, "WARM_COMMAND", (sys.executable, "-c", "import time; time.sleep(4)"))
    win = MainWindow(core.load_scene(ARM), path=ARM,
                     settings=QSettings(str(tmp_path / "wrong.ini"), QSettings.Format.IniFormat))
    win.file_actions.ask_to_save = lambda: "discard"
    show(qtbot, win, 900, 600)
    assert win.kernels is None                                        # judged cached: no compile planned
    ticks = []
    timer = QTimer(win)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(50)
    qtbot.waitUntil(lambda: win.status.currentMessage().startswith(worker_module.COMPILING)
                    and win.status.currentMessage().endswith(" 1 s"), timeout=FIRST_USE_MS)
    busy = [n for n in _rows(win) if n.source == "kernels"]
    assert busy[-1].text.startswith(worker_module.COMPILING) and busy[-1].text.endswith(" s")
    win.selection.set(("forces", 0))                                  # the GUI works meanwhile
    assert win.inspector.editor("stiffness").edit.text() == "20"
    win.status.note("a note meanwhile")                               # stays while the seconds count on
    qtbot.waitUntil(lambda: [n for n in _rows(win) if n.source == "kernels"][-1].text.endswith(" 2 s"))
    assert win.status.currentMessage() == "a note meanwhile"
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
    timer.stop()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(gaps) > 20 and max(gaps) < 1.0, max(gaps)              # the event loop ran all along
    said = [n.text for n in _rows(win) if n.source == "kernels"]      # one notice each, revised in place
    assert [text.split("…")[0] + "…" for text in said] == [worker_module.LOADING, worker_module.COMPILING,
                                                           worker_module.LOADING]
    assert all(" done in " in text for text in said), said
    assert win.status.busy_message == ""
    win.play()
    qtbot.waitUntil(lambda: win.sim_thread.latest.playing and win.sim_thread.latest.t > 0.01, timeout=20_000)
    win.close()


def test_routine_events_stay_in_the_events_dock_and_a_broken_constraint_is_a_notice(window, qtbot, tmp_path):
    """The hopper's program logs a watch or a hop a few times a second, its foot touches down and lifts off:
    those belong in the Events dock, not as warnings flooding the Messages dock; a broken constraint is said."""
    win = window(SCENES_DIR / "raibert_hopper.json")
    win.play()
    qtbot.waitUntil(lambda: win.sim_thread.latest.t > 1.5, timeout=30_000)
    win.pause()
    kinds = {mark.kind for mark in win.plots.events.events}
    assert {"hop", "watch", "touchdown", "lift-off"} <= kinds, kinds            # (they happened: in the dock)
    texts = [n.text for n in _rows(win)]
    assert not [t for t in texts if "hop of" in t or "watch of" in t or "touchdown" in t], texts
    doc = json.loads(ARM.read_text())
    doc["constraints"][0]["max_deviation"] = 1.0         # the tip starts 1.8 m from its nail: it breaks at once
    path = tmp_path / "weak.json"
    path.write_text(json.dumps(doc))
    win = window(path)
    win.step_action.trigger()
    qtbot.waitUntil(lambda: any("broke" in n.text for n in _rows(win)), timeout=20_000)
