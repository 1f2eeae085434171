"""The scene tree: the document's bodies (with their shapes and named points), joints, constraints, forces and,
when the scene has them, controllers and contacts.

Thread: GUI. :func:`build_tree_model` turns a spec into a ``QStandardItemModel`` whose items carry their document
path (:mod:`studio.document.edits`) in ``PATH_ROLE``; :class:`SceneTree` is the view. It follows the shared selection and
sets it; it rebuilds itself when the document changes, keeping what was expanded. Items with a name can be renamed
in place (F2 or double click): the new name goes through :func:`studio.document.edits.rename` as an undoable command, and a
refused name is reported with the validator's message and put back.

What is active now (:meth:`SceneTree.show_activity`, a few times a second from the latest snapshot, not every
frame): each constraint has a green dot while all its rows act and a hollow grey one when it is off (broken, or
disabled); each contact lists its points (``ground.0`` …) with a dot in the colour of its mode — open, stick,
slip, frictionless, the viewport's colours — in bold while the point is in contact (its rows active).
"""
from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, Signal, Slot
from PySide6.QtGui import QBrush, QColor, QIcon, QPainter, QPixmap, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QMenu, QTreeView

from core.scene import SceneError

from studio.document import edits

__all__ = ["SceneTree", "build_tree_model", "PATH_ROLE"]

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
GROUP_ROLE = Qt.ItemDataRole.UserRole + 2
POINT_ROLE = Qt.ItemDataRole.UserRole + 3           # a contact point's label, on its row under its contact
ACTIVE_ROLE = Qt.ItemDataRole.UserRole + 4          # what show_activity said: True, False, or a mode name

ACTIVE_COLOUR = (0.2, 0.78, 0.35)
INACTIVE_COLOUR = (0.55, 0.57, 0.6)
_DOTS: dict = {}


def _dot(rgb, filled: bool = True) -> QIcon:
    key = (tuple(rgb[:3]), filled)
    icon = _DOTS.get(key)
    if icon is None:
        pix = QPixmap(12, 12)
        pix.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pix)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        colour = QColor.fromRgbF(*[float(c) for c in rgb[:3]])
        painter.setPen(colour)
        painter.setBrush(QBrush(colour) if filled else Qt.BrushStyle.NoBrush)
        painter.drawEllipse(2, 2, 8, 8)
        painter.end()
        icon = _DOTS[key] = QIcon(pix)
    return icon


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
    robot = _robot_group(spec)
    if robot is not None:
        root.appendRow(robot)
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
    for section, title in (("constraints", "Constraints"), ("forces", "Forces"), ("controllers", "Controllers"),
                           ("programs", "Programs")):
        items = getattr(spec, section, None)
        if items is None or (section in ("controllers", "programs") and not items):
            continue
        group = _group(title, section, len(items))
        for k, entity in enumerate(items):
            tip = getattr(entity, "type", None) or getattr(entity, "program", "")
            group.appendRow(_item(entity.name, (section, k), editable=True, tip=tip))
        root.appendRow(group)
    contacts = getattr(spec, "contacts", None) or []
    if contacts:
        group = _group("Contacts", "contacts", len(contacts))
        for k, c in enumerate(contacts):
            against = "a ground plane" if c.plane.body is None else \
                f"{c.plane.body}'s {'face ' + c.plane.face if c.plane.face else 'plane'}"
            group.appendRow(_item(c.name, ("contacts", k), editable=True,
                                  tip=f"{c.body} against {against}: e = {c.restitution:g}, μ = {c.friction:g}"))
        root.appendRow(group)
    return model


def _robot_group(spec) -> QStandardItem | None:
    """The included robot file (``spec.robot``), selectable (the inspector edits the include), with its links,
    constraints and joint springs listed but not edited one by one (Edit ▸ Unpack the Robot into Bodies)."""
    from pathlib import Path

    from studio.document.robot import included_robot
    robot = included_robot(spec)
    if robot is None:
        return None
    group = _item(f"Robot {Path(spec.robot.file).name}  ({len(robot.bodies)})", ("robot",),
                  tip=f"{spec.robot.file}\n{robot.description}\nIncluded: its links are drawn and simulated; select "
                      "this to edit the include's file, base, inertia policy and q0, or Edit ▸ Unpack the Robot into "
                      "Bodies to edit its links one by one")
    font = group.font()
    font.setBold(True)
    group.setFont(font)
    for body in robot.bodies:
        j = body.joint
        item = _item(body.name, None, tip=f"{j.type} joint {j.name or body.name!r}: {body.parent} → {body.name}")
        item.setSelectable(False)
        if body.shapes:
            item.setIcon(_swatch(body.shapes[0].color))
        group.appendRow(item)
    for c in robot.constraints:
        item = _item(c.name, None, tip=f"{c.type}: {getattr(c, 'expression', '')}")
        item.setSelectable(False)
        group.appendRow(item)
    for f in robot.forces:
        item = _item(f.name, None, tip=f"{f.type} on joint {getattr(f, 'joint', '')!r}: stiffness "
                                       f"{getattr(f, 'stiffness', 0):g}, damping {getattr(f, 'damping', 0):g}")
        item.setSelectable(False)
        group.appendRow(item)
    return group


def _rows_of(model, label: str) -> list[str]:
    return [c.name for c in model.constraints if c.name in (label, f"{label}.stick")]


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
            self._activity = None                       # the next show_activity marks the new items
            self._restore_expansion()
            self._follow_selection(self._selection.path, None)
        finally:
            self._updating = False

    # ---- what is active now -------------------------------------------------------------------------------
    def show_activity(self, model, draw) -> None:
        """Mark what acts at the state of ``draw`` (a :class:`core.drawing.DrawList` of ``model``): each
        constraint's dot (all its rows active or not), each contact's points with their modes (module
        docstring). Cheap when nothing changed."""
        if model is None or draw is None or len(draw.active) != len(model.constraints):
            return
        rows: dict[str, list[bool]] = {}
        for c, on in zip(model.constraints, draw.active):
            rows.setdefault(getattr(c, "entity", c.name), []).append(bool(on))
        points = {}
        cd = getattr(draw, "contacts", None)
        if cd is not None:
            from studio.qt.viewport.overlays import CONTACT_MODE_NAMES
            points = {label: CONTACT_MODE_NAMES[int(m)] for label, m in zip(cd.labels, cd.mode)}
        key = (id(model), tuple(sorted((k, tuple(v)) for k, v in rows.items())), tuple(sorted(points.items())))
        if key == getattr(self, "_activity", None):
            return
        self._activity = key
        was, self._updating = self._updating, True
        try:
            self._mark(model, rows, points)
        finally:
            self._updating = was

    def _mark(self, model, rows: dict, points: dict) -> None:
        from studio.qt.viewport.overlays import CONTACT_COLOURS, CONTACT_MODE_NAMES
        spec = self._document.spec
        for index in list(self._all_indexes()):
            path = index.data(PATH_ROLE)
            if not path or len(path) != 2 or index.data(POINT_ROLE) is not None:
                continue
            item = self._model.itemFromIndex(index)
            if path[0] == "constraints" and path[1] < len(spec.constraints):
                on = rows.get(spec.constraints[path[1]].name)
                state = None if on is None else all(on)
                if item.data(ACTIVE_ROLE) != state:
                    item.setData(state, ACTIVE_ROLE)
                    item.setIcon(QIcon() if state is None else _dot(ACTIVE_COLOUR) if state else
                                 _dot(INACTIVE_COLOUR, filled=False))
                    owners = [p.name for p in getattr(spec, "programs", ())
                              if spec.constraints[path[1]].name in p.constraints]
                    owned = f"; added and removed by control program {', '.join(owners)}" if owners else ""
                    item.setToolTip(f"{spec.constraints[path[1]].type}: "
                                    + ("acting now" if state else "off now (broken, disabled or removed)") + owned)
                    font = item.font()
                    font.setItalic(bool(owners))                  # a program's own constraint: italic
                    item.setFont(font)
            elif path[0] == "contacts" and path[1] < len(spec.contacts):
                name = spec.contacts[path[1]].name
                contact = next((c for c in model.contacts if c.name == name), None)
                labels = [p.label for p in contact.points] if contact is not None else []
                if [item.child(r).data(POINT_ROLE) for r in range(item.rowCount())] != labels:
                    item.removeRows(0, item.rowCount())
                    for label in labels:
                        child = _item(label, path)
                        child.setData(label, POINT_ROLE)
                        item.appendRow(child)
                    self.setExpanded(index, self._expanded.get(path, True))
                for r in range(item.rowCount()):
                    child = item.child(r)
                    label = child.data(POINT_ROLE)
                    mode = points.get(label, "open")
                    if child.data(ACTIVE_ROLE) == mode:
                        continue
                    child.setData(mode, ACTIVE_ROLE)
                    child.setText(f"{label}  {mode}")
                    child.setIcon(_dot(CONTACT_COLOURS[CONTACT_MODE_NAMES.index(mode)], filled=mode != "open"))
                    font = child.font()
                    font.setBold(mode != "open")
                    child.setFont(font)
                    child.setToolTip(f"contact point {label}: {mode}" + ("" if mode == "open" else
                                     f" (rows {', '.join(_rows_of(model, label))} active)"))

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
