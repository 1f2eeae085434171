"""The inspector: typed editors, with units, for the fields of the selected item of the scene document.

Thread: GUI. :class:`Inspector` reads the document's spec and the shared selection. Every value the user enters
becomes a whole-document edit (:mod:`studio.document.edits`) that is validated first: a refused value keeps its text and
shows the validator's message under the field; an accepted one is pushed as an undoable command (renames update
every reference). It never touches the simulation: the document's ``changed`` signal takes edits there.
"""
from __future__ import annotations

import html
import inspect
import re

from pydantic import BaseModel
from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (QBoxLayout, QCheckBox, QFormLayout, QGridLayout, QGroupBox, QLabel,
                               QScrollArea, QVBoxLayout, QWidget)

from core.scene import SceneError

from studio.document import edits
from studio.qt.window.editors import FieldEditor, editor_for, field_kind, format_number
from studio.document.units import unit_of

__all__ = ["Inspector", "item_title", "help_html"]

# fields shown as items of the scene tree (or not editable), per schema class
_TREE_FIELDS = {"Scene": ("format_version", "simulation", "bodies", "constraints", "forces", "controllers",
                          "contacts"),
                "Body": ("joint", "shapes", "points")}
_BODY_FIELDS = ("parent", "body", "body_a", "body_b")
_UNDER_LABEL = ("json", "longtext")     # kinds of field whose editor spans the form, under its label
_TYPES = {"joint": ["fixed", "hinge", "slider", "ball", "free"], "shape": ["box", "sphere", "cylinder", "capsule"]}


class _FlowForm:
    """GUI thread. A form whose rows (a label and a field, or one spanning widget) flow top to bottom into as
    many columns as :meth:`arrange` is given — the compact inspector's fields, so a controller's gains fit a
    short dock without scrolling; a label wraps at its words in a narrow one. Takes :class:`QFormLayout`'s
    ``addRow`` calls."""

    def __init__(self):
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(10)
        self.grid.setVerticalSpacing(4)
        self._rows: list[tuple] = []
        self._columns = 0

    def addRow(self, label, field=None) -> None:                 # noqa: N802 (QFormLayout's name)
        if field is None:
            self._rows.append((label, None))
        else:
            if isinstance(label, str):
                label = QLabel(label)
                label.setWordWrap(True)
            self._rows.append((label, field))
        self._columns = 0

    def arrange(self, columns: int) -> None:
        columns = max(1, min(columns, len(self._rows) or 1))
        if columns == self._columns:
            return
        self._columns = columns
        for first, second in self._rows:
            for w in (first, second):
                if w is not None:
                    self.grid.removeWidget(w)
        for c in range(self.grid.columnCount()):
            self.grid.setColumnStretch(c, 0)
        per = -(-len(self._rows) // columns)
        for k, (first, second) in enumerate(self._rows):
            row, col = k % per, 2 * (k // per)
            if second is None:
                self.grid.addWidget(first, row, col, 1, 2)
            else:
                self.grid.addWidget(first, row, col)
                self.grid.addWidget(second, row, col + 1)
                self.grid.setColumnStretch(col + 1, 1)


def item_title(spec, path: tuple | None) -> str:
    """A short title for the item at ``path``: ``spring 'disturbance'``, ``hinge joint 'elbow'``."""
    if path is None:
        return ""
    if path == ():
        return f"scene {spec.name!r}"
    if path == ("simulation",):
        return "simulation settings"
    if path == ("robot",):
        from pathlib import Path
        return f"robot file {Path(spec.robot.file).name!r}"
    node = edits.resolve(spec, path)
    if len(path) == 4 and path[2] == "points":
        return f"point {path[3]!r} of {spec.bodies[path[1]].name!r}"
    if len(path) == 4 and path[2] == "shapes":
        return f"{node.type} shape {path[3]} of {spec.bodies[path[1]].name!r}"
    if len(path) == 3 and path[2] == "joint":
        return f"{node.type} joint {(node.name or spec.bodies[path[1]].name)!r}"
    kind = getattr(node, "type", None) or path[0].rstrip("s") if path[0] != "bodies" else "body"
    return f"{kind} {getattr(node, 'name', '')!r}".strip()


class Inspector(QWidget):
    """GUI thread. Shows and edits the item the ``selection`` points at in ``document``. With ``select_on_edit``
    an edit (and its undo) selects the edited item in the window."""

    def __init__(self, document, selection, parent=None, select_on_edit: bool = True, compact: bool = False):
        super().__init__(parent)
        self._document, self._selection = document, selection
        self._select_on_edit, self._compact = select_on_edit, compact
        self._path: tuple | None = None
        self._signature = None
        self._editors: dict[tuple, FieldEditor] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        layout.addWidget(self._scroll)
        selection.changed.connect(self._selection_changed)
        document.changed.connect(self._document_changed)
        document.loaded.connect(lambda _spec: self._rebuild())
        self._rebuild()

    # ---- public (also for tests) ---------------------------------------------------------------------------
    def editor(self, field: str | tuple) -> FieldEditor:
        """The editor of ``field`` (a name of the shown item's field, or a full field path)."""
        key = field if isinstance(field, tuple) else self._path + (field,)
        return self._editors[key]

    @property
    def fields(self) -> list[tuple]:
        return list(self._editors)

    # ---- building ------------------------------------------------------------------------------------------
    @Slot(object, object)
    def _selection_changed(self, path, _source) -> None:
        self._rebuild()

    @Slot(object, object)
    def _document_changed(self, spec, _select) -> None:
        path = self._selection.path
        try:
            node = edits.resolve(spec, path) if path is not None else None
        except (IndexError, KeyError, AttributeError, TypeError):
            node = None
        if path is not None and path == self._path and node is not None and _signature(node) == self._signature:
            self._refresh(spec)
        else:
            self._rebuild()

    def _rebuild(self) -> None:
        self._drop_page()
        self._editors.clear()
        self._groups: dict[tuple, QWidget] = {}
        self._path = path = self._selection.path
        page = QWidget()
        page.setObjectName("inspector_page")
        layout = QVBoxLayout(page)
        layout.setContentsMargins(8, 6, 8, 6)
        spec = self._document.spec
        try:
            node = edits.resolve(spec, path) if path is not None else None
        except (IndexError, KeyError, AttributeError, TypeError):
            node, path = None, None
        self._signature = _signature(node) if path is not None else None
        if path is None:
            hint = QLabel("Select an item in the scene tree or the viewport to inspect and edit it.")
            hint.setWordWrap(True)
            hint.setStyleSheet("color: palette(mid);")
            layout.addWidget(hint)
        else:
            title = QLabel(f"<b>{item_title(spec, path)}</b>")
            title.setObjectName("inspector_title")
            layout.addWidget(title)
            doc = _summary(node)
            title.setToolTip(f"<p>{doc}</p>" if doc else "")           # (rich text, wrapped)
            if doc and not self._compact:
                about = QLabel(doc)
                about.setTextFormat(Qt.TextFormat.RichText)
                about.setWordWrap(True)
                about.setStyleSheet("color: palette(mid); font-size: 9pt;")
                layout.addWidget(about)
            form = _form()
            groups = None
            if self._compact:          # side by side: the item's own fields in as many columns as fit, and
                form = _FlowForm()     # its groups (a trajectory) beside them — one above the other when narrow
                columns = QBoxLayout(self._direction())
                self._columns, self._flow = columns, form
                columns.addLayout(form.grid, 3)
                groups = _form()
                columns.addLayout(groups, 2)
                layout.addLayout(columns)
            else:
                layout.addLayout(form)
            if _is_point(path):
                self._add_point(form, spec, path)
            else:
                self._add_fields(form, node, path, spec, groups)
            if self._compact:
                form.arrange(self._field_columns())
        layout.addStretch(1)
        self._scroll.setWidget(page)

    def _drop_page(self) -> None:
        """Take the shown page out of the scroll area, silence its editors and delete it once control is back in
        the event loop.

        The page is often rebuilt from inside one of its own editors' signals: picking a trajectory's type in its
        combo box commits an edit whose ``changed`` signal rebuilds the form. ``QScrollArea.setWidget`` would
        delete the old page, and that combo box with it, at once, while Qt's own code that emitted the signal
        still runs on it (a key press or the popup's click): a segmentation fault (issue 27)."""
        old = self._scroll.takeWidget()
        if old is None:
            return
        for widget in (*self._editors.values(), *getattr(self, "_groups", {}).values()):
            widget.blockSignals(True)        # an entry the hidden page finishes (focus out) is no edit any more
        old.hide()
        old.deleteLater()

    #: Width (px) from which a compact inspector puts an item's groups (a trajectory) beside its own fields.
    SIDE_BY_SIDE = 520

    def _direction(self) -> QBoxLayout.Direction:
        return QBoxLayout.Direction.LeftToRight if self.width() >= self.SIDE_BY_SIDE else \
            QBoxLayout.Direction.TopToBottom

    #: Width (px) of one column of label and field in a compact inspector.
    FIELD_COLUMN = 200

    def _field_columns(self) -> int:
        """How many columns of fields a compact inspector shows at its width (its groups taking 2/5 of it when
        side by side)."""
        share = 0.6 if self._direction() == QBoxLayout.Direction.LeftToRight else 1.0
        return max(1, int(self.width() * share) // self.FIELD_COLUMN)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        columns = getattr(self, "_columns", None)
        if columns is not None:
            try:
                columns.setDirection(self._direction())
                self._flow.arrange(self._field_columns())
            except RuntimeError:            # the page it was on has been replaced
                self._columns = None

    def _add_point(self, form, spec, path) -> None:
        name = editor_for("text", {})
        name.set_value(path[3])
        name.committed.connect(lambda v: self._commit(path + ("name",), v))
        form.addRow("name", name)
        self._editors[path + ("name",)] = name
        pos = editor_for("vector", {"n": 3}, "m")
        pos.set_value(list(edits.resolve(spec, path)))
        pos.committed.connect(lambda v: self._commit(path, v))
        form.addRow("position", pos)
        self._editors[path] = pos

    def _add_fields(self, form, node: BaseModel, path: tuple, spec, groups=None) -> None:
        item_type = getattr(node, "type", None)
        hidden = _TREE_FIELDS.get(type(node).__name__, ())
        for name, info in type(node).model_fields.items():
            if name in hidden:
                continue
            field_path = path + (name,)
            value = getattr(node, name)
            kind, details = field_kind(info.annotation)
            if name == "type":
                kind, details = ("choice", {"options": _type_options(path, value)})
            elif name == "description":
                kind = "longtext"
            if kind == "skip":
                continue
            if kind == "group":
                self._add_group(groups if groups is not None else form, name, value, field_path, info, spec)
                continue
            choices = self._choices(spec, path, name) if kind == "text" else None
            editor = editor_for(kind, details, unit_of(item_type, name), choices)
            editor.set_value(_plain(value))
            if name == "type" and len(details["options"]) == 1:
                editor.setEnabled(False)
            editor.committed.connect(lambda v, p=field_path: self._commit(p, v))
            if kind in _UNDER_LABEL:
                form.addRow(_under_label(name.replace("_", " "), editor))
            else:
                form.addRow(name.replace("_", " "), editor)
            self._editors[field_path] = editor

    def _add_group(self, form, name, value, field_path, info, spec) -> None:
        optional = field_kind(info.annotation)[1].get("optional", False)
        if value is None:                     # an optional group not given: one check box that adds it
            add = QCheckBox(f"{name.replace('_', ' ')} (not set)")
            add.toggled.connect(lambda on, p=field_path: self._commit(p, {}) if on else None)
            form.addRow(add)
            self._groups[field_path] = add
            return
        box = QGroupBox(name.replace("_", " "))
        if optional:
            box.setCheckable(True)
            box.setChecked(True)
            box.toggled.connect(lambda on, p=field_path: self._commit(p, None) if not on else None)
        inner = _form()
        box.setLayout(inner)
        self._add_fields(inner, value, field_path, spec)
        form.addRow(box)
        self._groups[field_path] = box

    def _choices(self, spec, path, name):
        if name in _BODY_FIELDS:
            own = spec.bodies[path[1]].name if path[:1] == ("bodies",) and len(path) == 2 else None
            world_ok = name in ("parent", "body_b")
            return (["world"] if world_ok else []) + [b.name for b in spec.bodies if b.name != own]
        if name == "joint":
            return [b.joint.name or b.name for b in spec.bodies if b.joint.type in ("hinge", "slider")]
        return None

    def _refresh(self, spec) -> None:
        """Show the new values in the existing editors (the item kept its type and its optional groups)."""
        for field_path, editor in self._editors.items():
            if _is_point(self._path):
                value = self._path[3] if field_path[-1] == "name" and len(field_path) == 5 else \
                    edits.resolve(spec, field_path)
            else:
                value = edits.resolve(spec, field_path)
            editor.set_value(_plain(value))

    def _error_banner(self, message: str) -> None:
        banner = QLabel(message)
        banner.setWordWrap(True)
        banner.setStyleSheet("color: #e0624f;")
        self._scroll.widget().layout().insertWidget(1, banner)

    # ---- editing -------------------------------------------------------------------------------------------
    def _commit(self, field_path: tuple, value) -> None:
        spec, path = self._document.spec, self._path
        name = field_path[-1] if not (_is_point(path) and field_path == path) else "position"
        select = path
        try:
            changes = None                                  # (a rename or a new type changes the structure)
            if name == "name" and _renames(path):
                new = edits.rename(spec, path, value)
                if _is_point(path):
                    select = path[:3] + (value,)
            elif name == "type" and len(path) >= 3 and field_path == path + ("type",):
                new = edits.change_type(spec, path, value)
            elif name == "type" and len(field_path) >= 2 and field_path[-2] == "trajectory":
                new = edits.change_type(spec, field_path[:-1], value)
            else:
                new = edits.set_value(spec, field_path, value)
                changes = ((field_path, value),)
        except SceneError as exc:
            message = "\n".join(edits.field_problems(exc, field_path))
            if field_path in self._editors:
                self._editors[field_path].set_error(message)
            else:                               # adding or removing a group: say why at the top of the form
                self._rebuild()
                self._error_banner(message)
            return
        owner = edits.resolve(spec, field_path[:-1]) if not _is_point(path) else None
        unit = unit_of(getattr(owner, "type", None), name) if name not in ("name", "type") else ""
        text = f"Set {name.replace('_', ' ')} of {item_title(spec, path)} to {_value_text(value)}" + \
            (f" {unit}" if unit else "")
        merge = None
        if self._select_on_edit:
            self._document.apply(new, text, merge, select=select, select_before=path, changes=changes)
        else:
            self._document.apply(new, text, merge, changes=changes)


def _form() -> QFormLayout:
    """A form whose fields take the width there is, each under its label when the two do not fit side by side
    (a narrow dock: nothing clipped, no sideways scrolling)."""
    form = QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    return form


def _under_label(label: str, editor: QWidget) -> QWidget:
    """``editor`` under ``label``, as one row spanning a form (text over several lines, JSON)."""
    row = QWidget()
    column = QVBoxLayout(row)
    column.setContentsMargins(0, 0, 0, 0)
    column.setSpacing(2)
    column.addWidget(QLabel(label))
    column.addWidget(editor)
    return row


def _is_point(path) -> bool:
    return path is not None and len(path) == 4 and path[2] == "points"


def _signature(node):
    """What decides the inspector's rows: the node's class and which of its optional groups are present."""
    if not isinstance(node, BaseModel):
        return (type(node),)
    return (type(node),) + tuple((name, _signature(getattr(node, name))) for name, value in node
                                 if isinstance(value, BaseModel) or value is None)


def _renames(path: tuple) -> bool:
    return len(path) == 2 or (len(path) == 3 and path[2] == "joint") or (len(path) == 4 and path[2] == "points")


def _type_options(path: tuple, value: str) -> list[str]:
    if len(path) == 3 and path[2] == "joint":
        return _TYPES["joint"]
    if len(path) == 4 and path[2] == "shapes":
        return [value] if value == "mesh" else _TYPES["shape"]   # a mesh (drawn only) stays a mesh
    if path and path[-1] == "trajectory":
        return list(edits.TRAJECTORY_TYPES)
    return [value]


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, BaseModel):          # an object in a union with plain values (a Slotine–Li's custom
        return value.model_dump(mode="json")  # parameters): shown and edited as JSON
    return value


def _value_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_value_text(v) for v in value) + ")"
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def _summary(node) -> str:
    """The first paragraph of the docstring of ``node``'s class, as rich text (:func:`help_html`)."""
    doc = inspect.getdoc(type(node)) if isinstance(node, BaseModel) else None
    if not doc or type(node).__doc__ is None:
        return ""
    return help_html(doc.split("\n\n")[0].replace("\n", " "))


#: Sphinx's inline markup: a role (``:mod:`core.contacts```, ``:class:`~core.model.Model```, ``:math:`...```),
#: an inline literal (double backticks) or interpreted text (single backticks).
_MARKUP = re.compile(r"(?::[\w:.-]+:)?`([^`]+)`(?!`)|``(.+?)``")


def help_html(text: str) -> str:
    """A docstring's reStructuredText as Qt rich text a reader can read: a role shows its text (``~a.b.C``: ``C``;
    ``title <target>``: title), an inline literal shows as code; everything else is escaped."""
    def render(match) -> str:
        literal = match.group(2)
        if literal is not None:
            return f"<code>{html.escape(literal)}</code>"
        target = match.group(1)
        titled = re.fullmatch(r"(.+?)\s*<[^>]+>", target)
        shown = titled.group(1) if titled else target.rsplit(".", 1)[-1] if target.startswith("~") else target
        return html.escape(shown)

    out, end = [], 0
    for match in _MARKUP.finditer(text):
        out += [html.escape(text[end:match.start()]), render(match)]
        end = match.end()
    return "".join(out) + html.escape(text[end:])

