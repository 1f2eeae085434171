"""The actions that add, duplicate, delete and rename items of the scene document, shared by the Edit menu and the
scene tree's context menu.

Thread: GUI. :class:`ItemActions` holds the QActions; each runs one function of :mod:`studio.document.edits` on the selected
item and pushes the result as an undoable command on the document, or reports the validator's message
(``message`` signal) and changes nothing.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from core.scene import SceneError

from studio.document import edits
from studio.qt.window.inspector import item_title
from studio.qt.document.selection import body_index_of

__all__ = ["ItemActions"]

_ADD_GROUPS = (("Body", "bodies"), ("Shape", "shapes"), ("Named point", "points"), ("Constraint", "constraints"),
               ("Force", "forces"), ("Contact", "contacts")) + \
    ((("Controller", "controllers"),) if edits.CONTROLLER_TYPES else ())


class ItemActions(QObject):
    """GUI thread. ``add_menu``, ``duplicate``, ``delete`` and ``rename`` act on ``selection`` in ``document``;
    ``rename_requested(path)`` asks the scene tree to open its in-place editor."""

    message = Signal(str)
    rename_requested = Signal(object)

    def __init__(self, document, selection, parent=None):
        super().__init__(parent)
        self._document, self._selection = document, selection
        self.add_menu = QMenu("&Add")
        self.add_submenus: dict[str, QMenu] = {}      # by section (QAction.menu() in PySide6 6.10 takes
        for title, section in _ADD_GROUPS:            # ownership of the menu it returns and deletes it: keep these)
            sub = self.add_menu.addMenu(title) if section not in ("points",) else self.add_menu
            self.add_submenus[section] = sub
            for (sec, kind), label in edits.ADDABLE.items():
                if sec == section:
                    action = sub.addAction(label)
                    action.triggered.connect(lambda _=False, s=sec, k=kind: self.add(s, k))
        self.add_menu.addSeparator()
        self.ground_action = self.add_menu.addAction("&Ground")
        self.ground_action.setToolTip("A ground under the whole scene: every body's shapes that touch (a robot's "
                                      "collision shapes) rest on it (the document's \"ground\")")
        self.ground_action.triggered.connect(lambda _=False: self.add_ground())
        self.collisions_action = self.add_menu.addAction("&Collisions Between Shapes")
        self.collisions_action.setToolTip("Every two shapes that touch collide: balls with balls, a ball with a box's "
                                          "faces, edges and corners (the document's \"collisions\")")
        self.collisions_action.triggered.connect(lambda _=False: self.add_collisions())
        self.duplicate_action = QAction("D&uplicate", self)
        self.duplicate_action.setShortcut(QKeySequence("Ctrl+D"))
        self.duplicate_action.triggered.connect(self.duplicate)
        self.delete_action = QAction("&Delete", self)
        self.delete_action.setShortcut(QKeySequence(QKeySequence.StandardKey.Delete))
        self.delete_action.triggered.connect(self.delete)
        self.rename_action = QAction("&Rename", self)
        self.rename_action.setShortcut(QKeySequence("F2"))
        self.rename_action.triggered.connect(lambda: self.rename_requested.emit(self._selection.path))
        self.unpack_action = QAction("Unpack the Robot into Bodies", self)
        self.unpack_action.setToolTip("Make the included robot's links the scene's own bodies, edited one by one "
                                      "(the scene then no longer follows the robot file; undo restores the include)")
        self.unpack_action.triggered.connect(self.unpack_robot)
        selection.changed.connect(lambda *_: self._update_enabled())
        self._update_enabled()

    def context_menu(self) -> QMenu:
        menu = QMenu()
        menu.addMenu(self.add_menu)
        for action in (self.duplicate_action, self.rename_action, self.delete_action):
            menu.addAction(action)
        if self.unpack_action.isEnabled():
            menu.addAction(self.unpack_action)
        return menu

    def _update_enabled(self) -> None:
        path = self._selection.path
        item = path is not None and len(path) >= 2
        self.duplicate_action.setEnabled(item and not (len(path) == 3 and path[2] == "joint"))
        self.delete_action.setEnabled(item and not (len(path) == 3 and path[2] == "joint"))
        self.rename_action.setEnabled(item and not (len(path) == 4 and path[2] == "shapes"))
        self.unpack_action.setEnabled(path == ("robot",))

    def _selected_body(self) -> str | None:
        i = body_index_of(self._selection.path)
        spec = self._document.spec
        if i is not None and i < len(spec.bodies):
            return spec.bodies[i].name
        return None

    # ---- the edits -----------------------------------------------------------------------------------------
    def add(self, section: str, kind: str) -> bool:
        spec, before = self._document.spec, self._selection.path
        try:
            new, path = edits.add(spec, section, kind, self._selected_body())
        except SceneError as exc:
            return self._refuse(f"cannot add a {kind}", exc)
        label = edits.ADDABLE[(section, kind)]
        label = label[0].lower() + label[1:]
        name = edits.item_name(edits.to_data(new), path)
        self._document.apply(new, f"Add {label} {name!r}" if name else f"Add {label}",
                             select=path, select_before=before)
        return True

    def add_ground(self) -> bool:
        """Give the scene a ground (``"ground": {}``: a plane through the origin against gravity), undoably; a
        document that has one keeps it (refused), and the new one takes the place of an included robot file's
        floor."""
        return self._add_section(edits.add_ground, "a ground", "Add ground")

    def add_collisions(self) -> bool:
        """Make the scene's shapes collide with each other (``"collisions": {}``), undoably; refused if they do."""
        return self._add_section(edits.add_collisions, "collisions", "Add collisions")

    def _add_section(self, edit, what: str, undo_text: str) -> bool:
        """Apply ``edit`` (a pure edit adding a whole section) as one undo step, the selection kept."""
        spec, before = self._document.spec, self._selection.path
        try:
            new = edit(spec)
        except SceneError as exc:
            return self._refuse(f"cannot add {what}", exc)
        self._document.apply(new, undo_text, select=before, select_before=before)
        return True

    def duplicate(self) -> bool:
        path, spec = self._selection.path, self._document.spec
        if path is None:
            return False
        try:
            new, copy_path = edits.duplicate(spec, path)
        except SceneError as exc:
            return self._refuse(f"cannot duplicate {item_title(spec, path)}", exc)
        self._document.apply(new, f"Duplicate {item_title(spec, path)}", select=copy_path, select_before=path)
        return True

    def delete(self) -> bool:
        path, spec = self._selection.path, self._document.spec
        if path is None:
            return False
        try:
            new, gone = edits.delete(spec, path)
        except SceneError as exc:
            return self._refuse(f"cannot delete {item_title(spec, path)}", exc)
        also = f" (and {', '.join(gone)})" if gone else ""
        parent = path[:2] if len(path) > 2 else None
        self._document.apply(new, f"Delete {item_title(spec, path)}{also}", select=parent, select_before=path)
        if gone:
            self.message.emit(f"deleted {item_title(spec, path)} and what depended on it: {', '.join(gone)}")
        return True

    def unpack_robot(self) -> bool:
        spec = self._document.spec
        try:
            new = edits.unpack_robot(spec)
        except SceneError as exc:
            return self._refuse("cannot unpack the robot", exc)
        self._document.apply(new, f"Unpack {item_title(spec, ('robot',))} into {len(new.bodies)} bodies",
                             select=("bodies", 0) if new.bodies else None, select_before=("robot",))
        return True

    def _refuse(self, what: str, exc: SceneError) -> bool:
        self.message.emit(f"{what}: " + "; ".join(str(p) for p in exc.problems))
        return False
