"""The Python console dock (View ▸ Python Console): made on first use, it runs code in the studio's process with
``sim`` (the running simulation, through its worker thread), ``doc`` (the document, whose edits are undoable),
``model``, ``edits``, ``core`` and ``np``.

Needs a display with OpenGL (pytest-xvfb). The tests wait with ``qtbot.waitUntil`` on what the console shows and
the GUI thread has received, never for a fixed time.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

import core
from studio import SCENES_DIR
from studio.qt.window.main_window import MainWindow

from test_studio import FIRST_USE_MS, show

pytestmark = pytest.mark.gui

ARM = SCENES_DIR / "arm_nail_singular.json"


@pytest.fixture
def console(qtbot, gl_renderer, tmp_path):
    """A shown window on the nailed arm, paused, with its console opened from the View menu."""
    model = core.load_scene(ARM)
    win = MainWindow(model, path=ARM, settings=QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat))
    win.file_actions.ask_to_save = lambda: "discard"
    show(qtbot, win, 1280, 800)
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
    assert win.console_dock is None                       # nothing made until asked for
    assert win.console_action in win.menuBar().actions()[2].menu().actions()
    win.console_action.trigger()
    dock = win.console_dock
    qtbot.waitUntil(lambda: dock.isVisible() and "limbstudio console" in _text(dock), timeout=30_000)
    yield win, dock
    win.close()


def _text(dock) -> str:
    return dock.console._control.toPlainText()


def _run(qtbot, dock, source: str) -> None:
    """Execute ``source`` as typed and wait until the console has its answer (the next prompt)."""
    prompts = _text(dock).count("In [")
    dock.execute(source)
    qtbot.waitUntil(lambda: _text(dock).count("In [") > prompts and not dock.console._executing,
                    timeout=30_000)


def test_the_console_reads_the_time_steps_the_simulation_and_sees_time_advance(console, qtbot):
    win, dock = console
    ns = dock.shell.user_ns
    assert {"sim", "model", "doc", "edits", "core", "np"} <= set(ns)
    assert ns["doc"] is win.document and ns["core"] is core
    _run(qtbot, dock, "t0 = sim.time\nt1 = sim.step(25)\nr = sim.records()\nprint(f'advanced {t1 - t0:.3f}')")
    dt = win.document.spec.simulation.dt
    assert ns["t1"] == pytest.approx(ns["t0"] + 25 * dt)
    assert "advanced 0.025" in _text(dock)
    assert ns["r"]["t"][-1] == ns["t1"] and len(ns["r"]["t"]) >= 26    # the records reach the state read
    assert ns["r"]["q"].shape[1] == ns["model"].nq
    qtbot.waitUntil(lambda: win.sim_thread.latest.t == ns["t1"])        # the window shows where it went
    assert not win.play_action.isChecked()
    _run(qtbot, dock, "state = sim.state\nsteps = sim.call(lambda s: s.steps_taken)")
    assert ns["state"].t == ns["t1"] and ns["steps"] >= 25
    _run(qtbot, dock, "sim.step(0)")                                    # bad input: a clear message
    assert "sim.step(n) needs a whole number of steps n >= 1, got 0" in _text(dock)


def test_a_document_edit_from_the_console_is_undone_by_the_documents_undo(console, qtbot):
    win, dock = console
    assert win.document.spec.forces[0].stiffness == 20.0
    _run(qtbot, dock, 'doc.set_value(("forces", 0, "stiffness"), 45.0)')
    assert win.document.spec.forces[0].stiffness == 45.0 and win.document.modified
    assert "stiffness" in win.undo_action.text()
    _run(qtbot, dock, "sim.step()\nk = model.forces[0].stiffness")            # the run has it
    assert dock.shell.user_ns["k"] == 45.0
    _run(qtbot, dock, 'doc.set_value(("forces", 0, "stiffness"), -1.0)')     # refused, said without a traceback
    assert "$.forces[0].stiffness: Input should be greater than or equal to 0" in _text(dock)
    assert "Traceback" not in _text(dock) and win.document.spec.forces[0].stiffness == 45.0
    win.undo_action.trigger()                                                # Ctrl+Z in the window
    assert win.document.spec.forces[0].stiffness == 20.0 and not win.document.modified
    win.step_action.trigger()
    qtbot.waitUntil(lambda: win.sim_thread.latest.model.forces[0].stiffness == 20.0)


def test_the_console_hides_and_shows_from_the_view_menu(console, qtbot):
    win, dock = console
    win.console_action.trigger()
    qtbot.waitUntil(lambda: not dock.isVisible())
    win.console_action.trigger()
    qtbot.waitUntil(lambda: dock.isVisible())
    assert win.console_dock is dock                                         # made once
    dock.close()
    assert not win.console_action.isChecked()
