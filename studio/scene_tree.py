"""The scene tree: the document's bodies (with their shapes and named points), joints, constraints, forces and,
when the scene has them, controllers.

Thread: GUI. :func:`build_tree_model` turns a spec into a ``QStandardItemModel`` whose items carry their document
path (:mod:`studio.edits`) in ``PATH_ROLE``; :class:`SceneTree` is the view. It follows the shared selection and
sets it; it rebuilds itself when the document changes, keeping what was expanded. Items with a name can be renamed
in place (F2 or double click): the new name goes through :func:`studio.edits.rename` as an undoable command, and a
refused name is reported with the validator's message and put back.
"""
from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal, Slot
from PySide6.QtGui import QColor, QIcon, QPixmap, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QMenu, QTreeView

from core.scene import SceneError

from . import edits

__all__ = ["SceneTree", "build_tree_model", "PATH_ROLE"]

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
GROUP_ROLE = Qt.ItemDataRole.UserRole + 2


def _swatch(rgb) -> QIcon:
    pix = QPixmap(12, 12)
    pix.fill(QColor.fromRgbF(*[float(c) for c in rgb[:3]]))
    return QIcon(pix)


def _item(text: str, path: tuple | None, editable: bool = False, tip: str = "") -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(editable)
    item.setData(path, PATH_ROLE)
    if tip:
        item.setToolTip(tip)
    return item


def _group(text: str, key: str, count: int) -> QStandardItem:
    item = QStandardItem(f"{text}  ({count})")
    item.setEditable(False)
    item.setSelectable(False)
    item.setData(key, GROUP_ROLE)
    font = item.font()
    font.setBold(True)
    item.setFont(font)
    return item


def build_tree_model(spec, model: QStandardItemModel | None = None) -> QStandardItemModel:
    """Fill ``model`` (or a new one) with the items of ``spec``."""
    model = model or QStandardItemModel()
    model.clear()
    root = model.invisibleRootItem()
    scene = _item(f"Scene “{spec.name}”", (), tip=spec.description)
    root.appendRow(scene)
    root.appendRow(_item("Simulation settings", ("simulation",),
                         tip=f"dt = {spec.simulation.dt:g} s, {spec.simulation.integrator}, "
                             f"{spec.simulation.formulation}"))
    bodies = _group("Bodies", "bodies", len(spec.bodies))
    joints = _group("Joints", "joints", len(spec.bodies))
    for i, body in enumerate(spec.bodies):
        item = _item(body.name, ("bodies", i), editable=True, tip=f"parent: {body.parent}")
        if body.shapes:
            item.setIcon(_swatch(body.shapes[0].color))
        for j, shape in enumerate(body.shapes):
            item.appendRow(_item(f"{shape.type}", ("bodies", i, "shapes", j)))
        for name in body.points:
            item.appendRow(_item(name, ("bodies", i, "points", name), editable=True, tip="named point"))
        bodies.appendRow(item)
        jname = body.joint.name or body.name
        joints.appendRow(_item(jname, ("bodies", i, "joint"), editable=True,
                               tip=f"{body.joint.type} joint: {body.parent} → {body.name}"))
    root.appendRow(bodies)
    root.appendRow(joints)
    for section, title in (("constraints", "Constraints"), ("forces", "Forces"), ("controllers", "Controllers")):
        items = getattr(spec, section, None)
        if items is None or (section == "controllers" and not items):
            continue
        group = _group(title, section, len(items))
        for k, entity in enumerate(items):
            group.appendRow(_item(entity.name, (section, k), editable=True, tip=getattr(entity, "type", "")))
        root.appendRow(group)
    return model


class SceneTree(QTreeView):
    """GUI thread. The tree of ``document`` kept in step with ``selection``. ``message(str)`` reports a refused
    rename. ``context_menu`` (a QMenu, optional) is shown on right click."""

    message = Signal(str)

    def __init__(self, document, selection, parent=None):
        super().__init__(parent)
        self._updating = True
        self._document, self._selection = document, selection
        self.context_menu: QMenu | None = None
        self._model = QStandardItemModel(self)
        self.setModel(self._model)
        self.setHeaderHidden(True)
        self.setUniformRowHeights(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed
                             | QAbstractItemView.EditTrigger.SelectedClicked)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._show_menu)
        self._updating = False
        self._expanded: dict = {}
        self._rebuild(document.spec)
        self._model.itemChanged.connect(self._item_changed)
        document.changed.connect(lambda spec, _select: self._rebuild(spec))
        document.loaded.connect(self._rebuild)
        selection.changed.connect(self._follow_selection)

    # ---- model ---------------------------------------------------------------------------------------------
    def _rebuild(self, spec) -> None:
        self._updating = True
        try:
            self._remember_collapsed()
            build_tree_model(spec, self._model)
            self._restore_expansion()
            self._follow_selection(self._selection.path, None)
        finally:
            self._updating = False

    def _remember_collapsed(self) -> None:
        for index in self._all_indexes():
            key = index.data(GROUP_ROLE) or index.data(PATH_ROLE)
            if key is not None and self._model.hasChildren(index):
                self._expanded[key] = self.isExpanded(index)

    def _restore_expansion(self) -> None:
        for index in self._all_indexes():
            if self._model.hasChildren(index):
                # groups open by default, bodies closed (their shapes and points are one click away)
                key = index.data(GROUP_ROLE) or index.data(PATH_ROLE)
                self.setExpanded(index, self._expanded.get(key, index.data(GROUP_ROLE) is not None))

    def _all_indexes(self, parent: QModelIndex = QModelIndex()):
        for row in range(self._model.rowCount(parent)):
            index = self._model.index(row, 0, parent)
            yield index
            yield from self._all_indexes(index)

    def index_of(self, path: tuple | None) -> QModelIndex:
        """The model index of the item at ``path`` (invalid if none)."""
        if path is None:
            return QModelIndex()
        for index in self._all_indexes():
            if index.data(PATH_ROLE) == tuple(path):
                return index
        return QModelIndex()

    # ---- selection -----------------------------------------------------------------------------------------
    def selectionChanged(self, selected, deselected) -> None:
        super().selectionChanged(selected, deselected)
        if self._updating:
            return
        indexes = self.selectionModel().selectedIndexes()
        path = indexes[0].data(PATH_ROLE) if indexes else None
        if path is not None or not indexes:
            self._selection.set(path, source=self)

    @Slot(object, object)
    def _follow_selection(self, path, source) -> None:
        if source is self:
            return
        index = self.index_of(path)
        was, self._updating = self._updating, True
        try:
            if index.isValid():
                self.setCurrentIndex(index)
                self.scrollTo(index)
            else:
                self.clearSelection()
        finally:
            self._updating = was

    # ---- renaming ------------------------------------------------------------------------------------------
    @Slot(QStandardItem)
    def _item_changed(self, item: QStandardItem) -> None:
        if self._updating:
            return
        path = item.data(PATH_ROLE)
        spec = self._document.spec
        new = item.text().strip()
        old = edits.item_name(edits.to_data(spec), path)
        if path is None or new == old:
            return
        try:
            renamed = edits.rename(spec, path, new)
        except SceneError as exc:
            self.message.emit(f"cannot rename {old!r} to {new!r}: " + "; ".join(edits.field_problems(
                exc, path + ("name",))))
            self._rebuild(spec)
            return
        select = path[:3] + (new,) if len(path) == 4 and path[2] == "points" else path
        self._document.apply(renamed, f"Rename {old} to {new}", select=select, select_before=path)

    def _show_menu(self, pos) -> None:
        index = self.indexAt(pos)
        if index.isValid() and index.data(PATH_ROLE) is not None:
            self._selection.set(index.data(PATH_ROLE))
        if self.context_menu is not None:
            self.context_menu.exec(self.viewport().mapToGlobal(pos))
