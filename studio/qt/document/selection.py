"""The current selection, shared by the scene tree, the inspector, the viewport and the edit actions.

Thread: GUI. :class:`Selection` holds one item path of the document (see :mod:`studio.document.edits`) or None, and says
when it changes; whoever changes it passes itself as ``source`` so that it does not react to its own change.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

__all__ = ["Selection", "body_index_of"]


class Selection(QObject):
    """GUI thread. ``changed(path, source)``."""

    changed = Signal(object, object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._path: tuple | None = None

    @property
    def path(self) -> tuple | None:
        return self._path

    def set(self, path: tuple | None, source=None) -> None:
        path = tuple(path) if path is not None else None
        if path != self._path:
            self._path = path
            self.changed.emit(path, source)


def body_index_of(path: tuple | None) -> int | None:
    """The index in ``spec.bodies`` of the body a path is in (a body, its joint, shapes or points), or None."""
    if path and len(path) >= 2 and path[0] == "bodies":
        return int(path[1])
    return None
