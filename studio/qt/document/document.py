"""The open scene document: its validated spec, its file, and the undo stack of every edit made to it.

Thread: GUI. :class:`SceneDocument` is a QObject holding a ``core.Scene`` (never mutated: each edit makes a new
one with :mod:`studio.document.edits`) and a ``QUndoStack`` of :class:`SpecCommand` s. Its ``changed`` signal carries the
new spec to whoever shows it (scene tree, inspector, control panel) and to the worker, which applies it at the
next step boundary.
"""
from __future__ import annotations

import os
from pathlib import Path

import core
from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QUndoCommand, QUndoStack
from studio.document import edits
from studio.document.jsontext import save_document

__all__ = ["SceneDocument", "SpecCommand", "untitled_spec", "is_robot_file"]


def is_robot_file(path) -> bool:
    """Whether ``path`` names a robot description (``.urdf``) rather than a scene document."""
    from core.scene.robots import ROBOT_SUFFIXES
    return Path(path).suffix.lower() in ROBOT_SUFFIXES


def untitled_spec():
    """The document File ▸ New starts from: an empty world with gravity along −z."""
    return core.scene.parse_spec({"format_version": 1, "name": "untitled"})


class SpecCommand(QUndoCommand):
    """GUI thread. Replace the document's spec by ``after`` (undo: by ``before``). Consecutive commands with the
    same ``merge_key`` (e.g. dragging a slider) merge into one undo step. ``select`` is the path to select after
    redo (undo re-selects ``select_before``)."""

    _ids: dict[str, int] = {}

    def __init__(self, document: "SceneDocument", before, after, text: str, merge_key: str | None = None,
                 select: tuple | None = None, select_before: tuple | None = None, changes: tuple | None = None):
        super().__init__(text)
        self._document, self.before, self.after = document, before, after
        self.merge_key, self.select, self.select_before = merge_key, select, select_before
        self.changes = changes
        self.full_text = text

    def id(self) -> int:
        if self.merge_key is None:
            return -1
        return SpecCommand._ids.setdefault(self.merge_key, len(SpecCommand._ids) + 1)

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, SpecCommand) or other.merge_key != self.merge_key:
            return False
        self.after, self.select = other.after, other.select
        if self.changes is not None:
            self.changes = None if other.changes is None else tuple(dict(self.changes + other.changes).items())
        self.full_text = other.full_text
        self.setText(other.text())
        return True

    def redo(self) -> None:
        self._document._set_spec(self.after, self.select, self.changes, self.full_text)

    def undo(self) -> None:
        self._document._set_spec(self.before, self.select_before, self.changes, f"undo: {self.full_text}")


class SceneDocument(QObject):
    """GUI thread. One scene document.

    Signals: ``changed(spec, select)`` after every edit, undo and redo (``select``: a path to select, or None;
    :attr:`last_edit` then says what changed and why); ``loaded(spec)`` when a different document is opened or
    created (the simulation restarts); ``modified_changed(bool)``; ``path_changed(object)`` (a Path or None).

    Saving keeps the form of the file the document was read from (:func:`studio.document.jsontext.save_document`): a saved edit
    changes only the lines it touched, and "save as" gives the new file the original's mode."""

    changed = Signal(object, object)
    loaded = Signal(object)
    modified_changed = Signal(bool)
    path_changed = Signal(object)

    def __init__(self, spec=None, path: str | Path | None = None, parent=None):
        super().__init__(parent)
        self._spec = spec if spec is not None else untitled_spec()
        # a robot file is never the document's file: saving writes a JSON scene, never over the URDF
        self._path = Path(path) if path is not None and not is_robot_file(path) else None
        self._source_text: str | None = None       # the text the document was read from (None: read it lazily)
        self._source_mode: int | None = None
        self.last_edit: tuple = (None, "")          # (changes, text) of the latest change
        self.undo_stack = QUndoStack(self)
        self.undo_stack.cleanChanged.connect(self._clean_changed)

    @Slot(bool)
    def _clean_changed(self, clean: bool) -> None:
        self.modified_changed.emit(not clean)

    # ---- state ---------------------------------------------------------------------------------------------
    @property
    def spec(self):
        return self._spec

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def modified(self) -> bool:
        return not self.undo_stack.isClean()

    @property
    def title(self) -> str:
        return self._path.name if self._path is not None else self._spec.name

    # ---- edits ---------------------------------------------------------------------------------------------
    def apply(self, new_spec, text: str, merge_key: str | None = None, select: tuple | None = None,
              select_before: tuple | None = None, changes: tuple | None = None) -> None:
        """Make ``new_spec`` (already validated) the document's spec as one undoable step named ``text``.
        ``changes``: the fields that changed, ``((path, value), …)`` (None: the structure changed)."""
        if new_spec == self._spec:
            return
        self.undo_stack.push(SpecCommand(self, self._spec, new_spec, text, merge_key, select, select_before,
                                         changes))

    def set_value(self, path: tuple, value, text: str | None = None) -> None:
        """Set the field at ``path`` (e.g. ``("forces", 0, "stiffness")``) to ``value`` as one undoable step, as
        the inspector does (:func:`studio.document.edits.set_value`; raises ``core.SceneError`` naming what is
        wrong, and the document stays as it was)."""
        path = tuple(path)
        new = edits.set_value(self._spec, path, value)
        self.apply(new, text or f"Set {edits.json_path(path)} to {value!r}", changes=((path, value),))

    def undo(self) -> None:
        self.undo_stack.undo()

    def redo(self) -> None:
        self.undo_stack.redo()

    def _set_spec(self, spec, select, changes=None, text: str = "") -> None:
        self._spec = spec
        self.last_edit = (changes, text)
        self.changed.emit(spec, select)

    # ---- files ---------------------------------------------------------------------------------------------
    def replace(self, spec, path: str | Path | None) -> None:
        """A different document: new spec and file, empty undo history, unmodified."""
        self._spec = spec
        self._path = Path(path) if path is not None else None
        self._source_text = self._source_mode = None
        self.undo_stack.clear()
        self.undo_stack.setClean()
        self.path_changed.emit(self._path)
        self.modified_changed.emit(False)
        self.loaded.emit(spec)

    def open(self, path: str | Path) -> None:
        """Read, validate and show ``path`` (raises ``core.SceneError`` and leaves the document as it was). A robot
        file (``.urdf``) opens as a new scene that includes it: untitled, so that saving asks for a JSON file
        (which refers to the robot file by its path relative to the saved document)."""
        spec = core.read_spec(path)
        core.compile_scene(spec, str(path))
        if is_robot_file(path):
            self.replace(spec, None)
            return
        self.replace(spec, path)
        self._read_source()

    def _read_source(self) -> None:
        """Remember the text and mode of the document's file (what saving keeps)."""
        if self._path is None:
            return
        try:
            self._source_text = self._path.read_text(encoding="utf-8")
            self._source_mode = os.stat(self._path).st_mode & 0o7777
        except (OSError, UnicodeDecodeError):
            self._source_text = self._source_mode = None

    def save(self, path: str | Path | None = None) -> Path:
        """Write the spec (atomically) to ``path`` or to its own file, keeping the form of the file it was read
        from; the document is then unmodified."""
        target = Path(path) if path is not None else self._path
        if target is None:
            raise ValueError("the document has no file yet: give a path")
        if self._source_text is None:
            self._read_source()
        same = self._path is not None and target.resolve() == self._path.resolve()
        save_document(self._spec, target, base=self._source_text, mode=None if same else self._source_mode)
        self._source_text = target.read_text(encoding="utf-8")
        if not same and self._source_mode is None:
            self._source_mode = os.stat(target).st_mode & 0o7777
        if target != self._path:
            self._path = target
            self.path_changed.emit(target)
        self.undo_stack.setClean()
        return target
