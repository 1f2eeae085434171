"""The File menu: New, Open…, Open Example, Open Recent, Save, Save As…, and the prompt before unsaved edits are
lost; plus the settings file where recent files and the window layout are remembered.

Thread: GUI. :class:`FileActions` owns the actions and talks to the :class:`studio.qt.document.document.SceneDocument`;
errors (a malformed scene, a file that cannot be written) are shown with every problem the validator found, and
the document is left as it was. What an importer dropped from a robot file (its warnings) goes out as
``import_warning``, one each (the Messages dock lists them).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from core.scene import SceneError

from studio import SCENES_DIR
from studio.qt.document.document import untitled_spec
from studio.run.notices import caught_import_warnings

__all__ = ["FileActions", "open_settings", "MAX_RECENT"]

MAX_RECENT = 8
FILTER = ("Scenes and robots (*.json *.urdf *.xml);;Scene documents (*.json);;Robot files (URDF *.urdf, MJCF *.xml)"
          " (*.urdf *.xml);;All files (*)")
SAVE_FILTER = "Scene documents (*.json);;All files (*)"


def open_settings() -> QSettings:
    """The studio's settings (an INI file in the user's configuration folder)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "limbstudio", "studio")


class FileActions(QObject):
    """GUI thread. File actions of one window (``parent_widget`` hosts the dialogs).

    ``ask_to_save`` (replaceable, e.g. in tests) returns "save", "discard" or "cancel" for a document with unsaved
    edits. Signals: ``message(str)`` for the status bar; ``error(str)`` for what must be seen (a dialog);
    ``import_warning(str)`` for each thing an importer dropped or approximated."""

    message = Signal(str)
    error = Signal(str)
    import_warning = Signal(str)

    def __init__(self, document, settings: QSettings, parent_widget, parent=None):
        super().__init__(parent)
        self._document, self._settings, self._widget = document, settings, parent_widget
        self.ask_to_save = self._ask_to_save
        self.new_action = self._action("&New", QKeySequence.StandardKey.New, self.new)
        self.open_action = self._action("&Open…", QKeySequence.StandardKey.Open, self.open_dialog)
        self.save_action = self._action("&Save", QKeySequence.StandardKey.Save, self.save)
        self.save_as_action = self._action("Save &As…", QKeySequence.StandardKey.SaveAs, self.save_as_dialog)
        self.examples_menu = QMenu("Open &Example")
        for path in sorted(SCENES_DIR.glob("*.json")):
            act = self.examples_menu.addAction(path.stem.replace("_", " "))
            act.setToolTip(str(path))
            act.triggered.connect(lambda _=False, p=path: self.open_path(p))
        self.recent_menu = QMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)

    def _action(self, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda *_: slot())
        return action

    # ---- recent files --------------------------------------------------------------------------------------
    def recent_files(self) -> list[Path]:
        value = self._settings.value("recent_files", [])
        if isinstance(value, str):
            value = [value]
        return [Path(p) for p in (value or [])]

    def remember(self, path: Path) -> None:
        path = Path(path).resolve()
        paths = [path] + [p for p in self.recent_files() if p != path]
        self._settings.setValue("recent_files", [str(p) for p in paths[:MAX_RECENT]])

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for path in files:
            act = self.recent_menu.addAction(path.name)
            act.setToolTip(str(path))
            act.setEnabled(path.exists())
            act.triggered.connect(lambda _=False, p=path: self.open_path(p))
        if not files:
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    # ---- unsaved edits -------------------------------------------------------------------------------------
    def _ask_to_save(self) -> str:
        box = QMessageBox(QMessageBox.Icon.Question, "Unsaved edits",
                          f"“{self._document.title}” has unsaved edits. Save them first?",
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self._widget)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")

    def may_discard(self) -> bool:
        """True when the document may be replaced or closed (saved first if the user says so)."""
        if not self._document.modified:
            return True
        answer = self.ask_to_save()
        if answer == "save":
            return self.save()
        return answer == "discard"

    # ---- the actions ---------------------------------------------------------------------------------------
    def new(self) -> bool:
        if not self.may_discard():
            return False
        self._document.replace(untitled_spec(), None)
        self.message.emit("new scene")
        return True

    def open_dialog(self) -> bool:
        if not self.may_discard():
            return False
        start = str(self._document.path.parent if self._document.path else SCENES_DIR)
        name, _ = QFileDialog.getOpenFileName(self._widget, "Open scene", start, FILTER)
        return self.open_path(name, ask=False) if name else False

    def open_path(self, path, ask: bool = True) -> bool:
        """Open ``path``; on a bad document show every problem and keep the current one."""
        if ask and not self.may_discard():
            return False
        try:
            _, notes = caught_import_warnings(self._document.open, path)
        except SceneError as exc:
            self.error.emit(str(exc))
            return False
        except Exception as exc:              # noqa: BLE001 — whatever the file holds, a dialog, never a crash
            self.error.emit(f"cannot open {path}: {type(exc).__name__}: {exc}")
            return False
        self.remember(Path(path))
        for note in notes:
            self.import_warning.emit(note)
        self.message.emit(f"opened {path}" + (f" ({len(notes)} import warning{'s' * (len(notes) > 1)}: "
                                              "see View ▸ Messages)" if notes else ""))
        return True

    def save(self) -> bool:
        if self._document.path is None:
            return self.save_as_dialog()
        return self._save_to(self._document.path)

    def save_as_dialog(self) -> bool:
        start = str(self._document.path or Path.cwd() / f"{self._document.spec.name}.json")
        name, _ = QFileDialog.getSaveFileName(self._widget, "Save scene as", start, SAVE_FILTER)
        if not name:
            return False
        path = Path(name)
        return self._save_to(path if path.suffix else path.with_suffix(".json"))

    def _save_to(self, path: Path) -> bool:
        try:
            saved = self._document.save(path)
        except (OSError, ValueError) as exc:
            self.error.emit(f"could not save {path}: {exc}")
            return False
        self.remember(saved)
        self.message.emit(f"saved {saved}")
        return True
