"""A scripted walk through the whole studio: on a plain arm, the Slotine–Li arm, a contact scene and a robot file,
every item of every menu is triggered, every dock shown, and every field of the control panel set (every entry of
every combo box, a few values — some refused — in every text field, both ends of every slider, every button), and nothing may
raise: no exception reaches ``sys.excepthook`` from a slot, Qt logs no critical message, the worker reports no
failed command, and the window still steps afterwards.

Modal dialogs are answered without a person: the static ``QFileDialog``, ``QMessageBox`` and ``QInputDialog``
methods return canned answers (files in the test's folder), and the record dialog accepts a short GIF. Every test
here needs a display with OpenGL (pytest-xvfb).
"""
from __future__ import annotations

import shutil
import traceback
from pathlib import Path

import pytest
from PySide6.QtCore import QEventLoop, QSettings, QtMsgType
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDialog, QDockWidget, QFileDialog,
                               QInputDialog, QLineEdit, QMenu, QMessageBox, QPushButton, QSlider)

import core
from studio import SCENES_DIR
from studio.qt.window.main_window import MainWindow
from studio.qt.window.record_dialog import RecordDialog

from test_studio import FIRST_USE_MS, show
from test_studio_robots import _robot

pytestmark = pytest.mark.gui

#: What a text field of the control panel is given in turn: accepted values and refused ones.
TEXTS = ("0.5", "2", "-1", "1e300", "abc", "")


@pytest.fixture
def canned_dialogs(monkeypatch, tmp_path):
    """Every modal dialog the menus open answers at once, with a file in ``tmp_path`` where one is asked for."""
    def save_name(_parent=None, _caption="", start="", *_args, **_kwargs):
        name = Path(start).name or "saved"
        return str(tmp_path / "saved" / (name if Path(name).suffix else name + ".json")), ""

    (tmp_path / "saved").mkdir()
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save_name))
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(tmp_path / "frames")))
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("640x400", True)))
    for name in ("information", "warning", "critical", "question"):
        monkeypatch.setattr(QMessageBox, name, staticmethod(lambda *a, **k: QMessageBox.StandardButton.Ok))

    def record(dialog) -> int:                       # a short GIF in the test's folder
        dialog.path_edit.setText(str(tmp_path / "walk.gif"))
        dialog.until_stopped.setChecked(False)
        dialog.duration_spin.setValue(0.2)
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(RecordDialog, "exec", record)
    return monkeypatch


@pytest.fixture
def problems(qtbot):
    """What has gone wrong so far (a function of no arguments): exceptions that reached ``sys.excepthook`` and
    Qt's critical messages."""
    from PySide6.QtCore import qInstallMessageHandler
    logged: list[str] = []

    def handler(kind, _context, message) -> None:
        if kind in (QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg) or "Traceback" in message:
            logged.append(f"Qt: {message}")

    previous = qInstallMessageHandler(handler)
    try:
        with qtbot.captureExceptions() as exceptions:
            yield lambda: logged + ["".join(traceback.format_exception(*e)) for e in exceptions]
    finally:
        qInstallMessageHandler(previous)


def _open(qtbot, path: Path, tmp_path: Path) -> MainWindow:
    model = core.load_urdf(path) if path.suffix == ".urdf" else core.load_scene(path)
    settings = QSettings(str(tmp_path / "studio.ini"), QSettings.Format.IniFormat)
    win = MainWindow(model, path=path, settings=settings)
    win.file_actions.ask_to_save = lambda: "discard"     # (the question File ▸ New and Open ask)
    show(qtbot, win, 1280, 720)
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
    return win


def _settle() -> None:
    """Let the window take what is pending, for at most a second: a window that never stops being busy (samples
    arriving faster than it takes them) fails the walk's last check, it does not hang the test."""
    for _ in range(3):
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 333)


def _submenus() -> dict:
    """Every menu by its action (``QAction.menu()`` would take ownership of the menu and delete it)."""
    return {menu.menuAction(): menu for menu in QApplication.allWidgets() if isinstance(menu, QMenu)}


def _walk_menu(win, menu: QMenu, scene: Path, skip=()) -> None:
    """Trigger every enabled action of ``menu`` and its submenus (a checkable one twice), the first example
    alone (they all open a scene the same way), and come back to ``scene`` after one opened another."""
    menu.aboutToShow.emit()                                 # (the recent files are listed when it opens)
    opened = win.document.spec.name
    actions = menu.actions()[:1] if menu is win.file_actions.examples_menu else menu.actions()
    for action in actions:
        if action.isSeparator() or not action.isEnabled() or action in skip:
            continue
        sub = _submenus().get(action)
        if sub is not None:
            _walk_menu(win, sub, scene, skip)
            continue
        action.trigger()
        if action.isCheckable():
            action.trigger()                                # and back
        _settle()
        if win.recorder.recording:
            win.record_action.trigger()                     # stop it
        if win.document.spec.name != opened:
            win.file_actions.open_path(scene, ask=False)    # (an example, or New: back to this scene's copy)
            _settle()


def _set_every_field(win) -> None:
    """Every entry of every combo box, a few texts in every text field, both ends of every slider and both states
    of every check box of the control panel; the k-th field is found again after each change (an edit rebuilds
    the controller's editor)."""
    def nth(kind, k: int):
        found = [w for w in win.controls.findChildren(kind) if w.isVisible() and w.isEnabled()
                 and not isinstance(w.parent(), QComboBox)]          # (an editable combo box's own line)
        return found[k] if k < len(found) else None

    k = 0
    while nth(QComboBox, k) is not None:
        index = 0
        while (combo := nth(QComboBox, k)) is not None and index < combo.count():
            combo.setCurrentIndex(index)
            combo.activated.emit(index)
            _settle()
            index += 1
        k += 1
    k = 0
    while nth(QLineEdit, k) is not None:
        for text in TEXTS:
            if (edit := nth(QLineEdit, k)) is not None:
                edit.setText(text)
                edit.editingFinished.emit()
                _settle()
        k += 1
    for slider in win.controls.findChildren(QSlider):
        for value in (slider.minimum(), slider.maximum(), 0):
            slider.setValue(value)
    _settle()
    for button in win.controls.findChildren(QPushButton):    # (Set as initial pose)
        if button.isVisible() and button.isEnabled():
            button.click()
            _settle()
    k = 0
    while (box := nth(QCheckBox, k)) is not None:
        box.toggle()
        _settle()
        k += 1
    for kind in win.controls.add_controller_button.menu().actions():
        kind.trigger()
        _settle()


@pytest.mark.parametrize("scene", ["three_link_arm.json", "slotine_li_arm.json", "bouncing_ball.json",
                                   "ring_robot.urdf"])
def test_a_walk_through_every_menu_dock_and_field_raises_nothing(qtbot, gl_renderer, tmp_path, canned_dialogs,
                                                                 problems, scene):
    if scene.endswith(".urdf"):
        path = _robot(tmp_path)
    else:
        path = tmp_path / scene                              # a copy: File ▸ Save writes into the test's folder
        shutil.copy(SCENES_DIR / scene, path)
    canned_dialogs.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    win = _open(qtbot, path, tmp_path)
    worker_errors: list[str] = []
    win.sim_thread.error.connect(worker_errors.append)

    for dock in win.findChildren(QDockWidget):
        dock.show()
        dock.raise_()
    _settle()
    _set_every_field(win)
    bar = win.menuBar()
    menus = _submenus()
    quit_action = win.quit_action
    for action in bar.actions():
        if action in menus:
            _walk_menu(win, menus[action], path, skip=(quit_action,))

    win.pause()
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None and not win.sim_thread.latest.playing)
    steps, said = win.sim_thread.latest.steps, len(worker_errors)
    win.step_action.trigger()                                # still responding: a step taken, or the run's stop said
    # (the walk adds bodies where others are, a ground they stand half below and, with Add ▸ Collisions, shapes
    # that touch: such a document may stop as diverged, and Step then says so again, keeping the last good state)
    qtbot.waitUntil(lambda: win.sim_thread.latest.steps != steps
                    or any("keeping the last good state" in e for e in worker_errors[said:]), timeout=10_000)
    failed = [e for e in worker_errors if " failed: " in e]
    assert not problems() and not failed, "\n".join(problems() + failed)
    quit_action.trigger()
    qtbot.waitUntil(lambda: not win.isVisible())
