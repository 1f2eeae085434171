"""Defects of the studio found driving it by hand (issue 27), each reproduced as a user meets it: a segmentation
fault when a trajectory's type is picked in the control panel's combo box, a table model whose ``event`` method
hid ``QObject.event``, F12 handing the action's ``checked`` to the picture's path, and plots that mixed one
document's run into another's (an earlier try that could not be hidden and that Reset kept).

GUI tests need a display with OpenGL (pytest-xvfb). As everywhere in the studio's tests, nothing waits for a
fixed time or on a signal of the worker thread: each waits with ``qtbot.waitUntil`` for the state it asserts.
"""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMenu

from core.events import Event
from studio import SCENES_DIR
from studio.document import edits
from studio.qt.window import main_window as main_window_module
from studio.qt.window.event_list import EventTableModel
from studio.run.events import EventLog
from studio.qt.window.plotfigure import X_PADDING, y_limits

from test_studio import rgb_array
from test_studio_window import ARM, window  # noqa: F401  (the window fixture)

pytestmark = pytest.mark.gui

ADAPTIVE = SCENES_DIR / "slotine_li_arm.json"
BALL = SCENES_DIR / "bouncing_ball.json"
needs_controllers = pytest.mark.skipif(not edits.CONTROLLER_TYPES, reason="this core has no controllers")


def _latest(win):
    return win.sim_thread.latest


# ---- a crash: the control panel's trajectory type -------------------------------------------------------------
@needs_controllers
def test_picking_a_trajectory_type_in_the_control_panels_combo_box_takes_effect(window, qtbot):  # noqa: F811
    """Picking ``set_point`` rebuilt the controller's form, and the combo box with it, while the combo box was still
    delivering its ``activated`` signal: a segmentation fault, every time (issue 27)."""
    win = window(ADAPTIVE)
    panel = win.controls
    field = ("controllers", 0, "trajectory", "type")
    combo = panel.controller_editor.editor(field).combo
    assert combo.currentText() == "sinusoid" and combo.isVisible()
    # as a user does: open the list, move to set_point and take it (the popup's own path to `activated`)
    combo.showPopup()
    popup = combo.view()
    qtbot.waitUntil(popup.isVisible)
    popup.setCurrentIndex(combo.model().index(combo.findText("set_point"), 0))
    QTest.keyClick(popup, Qt.Key.Key_Return)
    assert win.document.spec.controllers[0].trajectory.type == "set_point"
    qtbot.waitUntil(lambda: _latest(win).model.spec.controllers[0].trajectory.type == "set_point")
    shown = panel.controller_editor.editor(field).combo
    qtbot.waitUntil(lambda: shown.isVisible())             # the new form, with the set point's own fields
    assert shown.currentText() == "set_point"
    assert ("controllers", 0, "trajectory", "q") in panel.controller_editor.fields
    # a key on the closed combo box picks too, and rebuilds the form from inside its key press
    shown.setFocus()
    QTest.keyClick(shown, Qt.Key.Key_Down)
    assert win.document.spec.controllers[0].trajectory.type == "sinusoid"
    qtbot.waitUntil(lambda: _latest(win).model.spec.controllers[0].trajectory.type == "sinusoid")
    qtbot.waitUntil(lambda: panel.controller_editor.editor(field).combo.isVisible())
    win.undo_action.trigger()
    win.undo_action.trigger()
    assert win.document.spec.controllers[0].trajectory.type == "sinusoid" and not win.document.modified
    assert panel.controller_editor.editor(field).combo.currentText() == "sinusoid"


# ---- a latent crash: the event list's model -------------------------------------------------------------------
def test_the_event_table_model_takes_the_qt_events_delivered_to_it(qtbot):
    """``EventTableModel.event(row)`` overrode ``QObject.event``: every QEvent sent to the model (here one of the
    user's and the ``deleteLater`` one) reached it as a row number."""
    log = EventLog()
    log.add([Event(0.25, "bounce", "ground.0", contact="ground", impulse=1.5)])
    model = EventTableModel(log)
    assert model.rowCount() == 1 and model.event_at(0).t == 0.25
    QCoreApplication.sendEvent(model, QEvent(QEvent.Type.User))
    with qtbot.waitSignal(model.destroyed, timeout=5000):
        model.deleteLater()                                # QEvent.DeferredDelete, through QObject.event


# ---- F12: the picture of the viewport -------------------------------------------------------------------------
def _check_picture(path, win) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = QImage(str(path))
    assert not image.isNull() and (image.width(), image.height()) == (win.viewport.width(), win.viewport.height())
    assert len(np.unique(rgb_array(image).reshape(-1, 3), axis=0)) > 20          # the scene, not a blank frame


def test_the_picture_actions_save_a_png_when_triggered_as_a_user_does(window, qtbot, tmp_path,  # noqa: F811
                                                                      monkeypatch):
    """F12 / File ▸ Save Picture of the Viewport handed the action's ``triggered(bool)`` to ``save_screenshot`` as
    the path: "internal error: TypeError … not bool" (issue 27)."""
    win = window()
    pictures = tmp_path / "pictures"
    monkeypatch.setattr(main_window_module.QStandardPaths, "writableLocation",
                        staticmethod(lambda *_: str(pictures)))
    win.screenshot_action.trigger()                         # F12: named after the scene and the time
    (saved,) = (pictures / "limbstudio").glob("*.png")
    assert saved.name.startswith("arm_nail_singular-t0.000s-")
    _check_picture(saved, win)
    assert "saved a picture of the viewport" in win.status.currentMessage()

    chosen = tmp_path / "chosen" / "arm"                   # Ctrl+F12: the save dialog (a name without .png)
    asked = []
    monkeypatch.setattr(main_window_module.QFileDialog, "getSaveFileName",
                        staticmethod(lambda *args, **kw: asked.append(args) or (str(chosen), "PNG image (*.png)")))
    win.screenshot_as_action.trigger()
    assert asked
    _check_picture(chosen.with_suffix(".png"), win)


# ---- plots that belong to the run -----------------------------------------------------------------------------
def _ghost_curves_shown(plots) -> int:
    return sum(ghost.isVisible() for curves in plots.curves.values() for _, _, ghost, *_ in curves)


def _ghost_marks(plots) -> int:
    return sum(len(lines._ghost) for lines in plots.figure._event_lines.values())


def _energy(plots) -> np.ndarray:
    return plots.history.whole()[:, [col for col, *_ in plots.curves["energy"]]]


def _ranges_fit_the_run(plots) -> bool:
    """The energy plot's y range is the one its own curves (in the time window) call for, and nothing else's."""
    rows, (lo, hi) = plots.view()
    inside = rows[(rows[:, 0] >= lo) & (rows[:, 0] <= hi)][:, [col for col, *_ in plots.curves["energy"]]]
    view_x, view_y = plots.plots["energy"].vb.viewRange()
    margin = X_PADDING * (hi - lo)
    return np.allclose(view_y, y_limits(inside, False), rtol=1e-9) and np.allclose(view_x, (lo - margin, hi + margin))


def _run_to(win, qtbot, t: float) -> None:
    win.play()
    qtbot.waitUntil(lambda: _latest(win).t >= t, timeout=60_000)
    win.pause()
    qtbot.waitUntil(lambda: not _latest(win).playing)


def test_plots_hold_the_run_of_the_open_document_and_the_earlier_try_is_a_toggle(window, qtbot):  # noqa: F811
    """After File ▸ Open the previous document's curves stayed as a faded earlier try and set the ranges (issue 27);
    after Reset the previous run stayed for good. A new document starts with empty plots, Reset starts clean, and
    View ▸ Earlier Try hides the faded try that going back on the timeline and running on keeps."""
    win = window(ARM)
    plots = win.plots
    win.controls.set_speed(1.0)
    _run_to(win, qtbot, 0.3)
    qtbot.waitUntil(lambda: plots.history.count > 10)
    arm_energy = _energy(plots)

    assert win.file_actions.open_path(BALL)                 # another document: its plots start empty
    qtbot.waitUntil(lambda: _latest(win).model.name == "bouncing_ball" and plots.run == _latest(win).run)
    assert plots.ghost is None and not plots.events.ghost
    assert plots.history.count >= 1 and plots.history.whole()[0, 0] == 0.0
    qtbot.waitUntil(lambda: _ranges_fit_the_run(plots) and not _ghost_curves_shown(plots))
    assert plots.window == 10.0                            # the ball's 6 s run in the smallest window that holds it
    assert np.nanmax(arm_energy) > plots.plots["energy"].vb.viewRange()[1][1]     # the arm's 54 J are off the plot

    _run_to(win, qtbot, 1.2)                               # two bounces
    qtbot.waitUntil(lambda: len(plots.events) >= 2)
    win.reset_action.trigger()                             # Reset starts clean: no earlier try
    qtbot.waitUntil(lambda: _latest(win).steps == 0 and plots.run == _latest(win).run)
    assert plots.ghost is None and not plots.events.ghost and not plots.events.events
    qtbot.waitUntil(lambda: _ranges_fit_the_run(plots) and not _ghost_curves_shown(plots) and not _ghost_marks(plots))

    _run_to(win, qtbot, 1.2)                               # go back before the first bounce and run on: the later
    win.timeline.seek_requested.emit(0.2)                  # part of the run is the earlier try, shown faded
    qtbot.waitUntil(lambda: abs(_latest(win).t - 0.2) < 1.01e-3 and not _latest(win).playing)
    _run_to(win, qtbot, 0.3)
    qtbot.waitUntil(lambda: plots.ghost is not None and _ghost_curves_shown(plots) and _ghost_marks(plots) >= 1)
    action = win.earlier_try_action
    assert action.isCheckable() and action.isChecked()
    assert any(isinstance(o, QMenu) and o.title() == "&View" for o in action.associatedObjects())
    action.trigger()                                       # View ▸ Earlier Try off: hidden, and no range of its own
    assert not action.isChecked()
    qtbot.waitUntil(lambda: not _ghost_curves_shown(plots) and not _ghost_marks(plots) and _ranges_fit_the_run(plots))
    assert plots.ghost is not None                         # kept: on again, it is back
    action.trigger()
    qtbot.waitUntil(lambda: _ghost_curves_shown(plots) and _ghost_marks(plots) >= 1)


def test_scrolling_a_panel_over_a_combo_box_changes_nothing(qtbot):
    """Helper's finding in issue 27's walk: a wheel turn over the inspector's combo box, meant to scroll the
    panel, switched a trajectory type (an undoable edit). A combo box or slider takes the wheel only once
    focused."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication, QComboBox, QSlider
    from studio.qt.window.editors import wheel_only_when_focused
    for widget in (QComboBox(), QSlider(Qt.Orientation.Horizontal)):
        qtbot.addWidget(widget)
        if isinstance(widget, QComboBox):
            widget.addItems(["a", "b", "c"])
            widget.setCurrentIndex(1)
        else:
            widget.setRange(0, 10)
            widget.setValue(5)
        wheel_only_when_focused(widget)
        widget.show()
        qtbot.waitExposed(widget)

        def turn():
            event = QWheelEvent(QPointF(5, 5), QPointF(widget.mapToGlobal(QPoint(5, 5))), QPoint(0, 0),
                                QPoint(0, -120), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                                Qt.ScrollPhase.NoScrollPhase, False)
            QApplication.sendEvent(widget, event)
        value = widget.currentIndex if isinstance(widget, QComboBox) else widget.value
        before = value()
        widget.clearFocus()
        turn()
        assert value() == before                                   # unfocused: the wheel scrolls the panel
        widget.activateWindow()
        widget.setFocus()
        qtbot.waitUntil(widget.hasFocus)
        turn()
        assert value() != before                                   # focused: it turns the value


def test_json_nested_past_the_stack_is_a_message_in_the_inspector(qtbot):
    """Issue 28, item 12: a program's parameters typed as ``[[[[…`` nested 100 000 deep raised RecursionError in
    the inspector (the studio survived, with a traceback); now the field says why and the document is unchanged."""
    import shiboken6
    import core
    from studio.qt.document.document import SceneDocument
    from studio.qt.document.selection import Selection
    from studio.qt.window.inspector import Inspector
    doc = SceneDocument(core.read_spec(SCENES_DIR / "raibert_hopper.json"))
    selection = Selection()
    inspector = Inspector(doc, selection)
    qtbot.addWidget(inspector)
    selection.set(("programs", 0))
    editor = inspector.editor("parameters")
    before = dict(doc.spec.programs[0].parameters)
    editor.edit.setPlainText("[" * 100_000 + "]" * 100_000)
    editor.edit.finished.emit()
    assert "nested too deeply" in editor.error_label.text()
    assert doc.spec.programs[0].parameters == before and not doc.undo_stack.canUndo()
    shiboken6.delete(doc)
