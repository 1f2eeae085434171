"""Typed field editors for the inspector: numbers, vectors, colours, choices, names and point references, each
with its unit and a place under it for the validator's message.

Thread: GUI. Each editor emits ``committed(value)`` with plain JSON-like data when the user finishes an entry
(Return, leaving the field, picking a choice); it never validates the document itself: the inspector does, and
calls :meth:`FieldEditor.set_error` with the message when the value is refused. :func:`editor_for` picks the
editor from a schema field's type annotation.
"""
from __future__ import annotations

import functools
import json
import math
import types
import typing
from typing import Annotated, Literal, Union

from pydantic import BaseModel
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QTextOption
from PySide6.QtWidgets import (QCheckBox, QColorDialog, QComboBox, QHBoxLayout, QLabel, QLineEdit,
                               QPushButton, QSizePolicy, QTextEdit, QVBoxLayout, QWidget)

__all__ = ["FieldEditor", "editor_for", "field_kind", "format_number", "parse_number", "wheel_only_when_focused"]

ERROR_STYLE = "color: #e0624f;"


def format_number(x) -> str:
    """Shortest text that reads back as the same float (``1e+06`` rather than ``1000000.0``)."""
    if x is None:
        return ""
    x = float(x)
    for digits in (6, 10, 17):
        text = f"{x:.{digits}g}"
        if float(text) == x:
            return text
    return repr(x)


def parse_number(text: str, optional: bool = False):
    text = text.strip().replace("−", "-")
    if not text:
        if optional:
            return None
        raise ValueError("a number is required")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def field_kind(annotation) -> tuple[str, dict]:
    """Classify a schema annotation: ``(kind, details)`` with kind in float, int, bool, text, choice, vector,
    colour, point, group, skip, json; ``details['optional']`` when None is allowed."""
    optional = False
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        args = [typing.get_args(a)[0] if typing.get_origin(a) is Annotated else a for a in args]
        if len(args) == 1:
            kind, details = field_kind(args[0])
            return kind, {**details, "optional": optional or details.get("optional", False)}
        if all(typing.get_origin(a) is tuple for a in args):
            return "colour", {"optional": optional}
        if float in args and any(typing.get_origin(a) is list for a in args):
            return "gain", {"optional": optional}          # one value for all, or one per coordinate
        if str in args and any(typing.get_origin(a) is tuple for a in args):
            return "point", {"optional": optional}
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in args):
            return "group", {"optional": optional}
        return "json", {"optional": optional}
    if annotation is bool:
        return "bool", {}
    if annotation is float:
        return "float", {}
    if annotation is int:
        return "int", {}
    if annotation is str:
        return "text", {}
    if origin is Literal:
        return "choice", {"options": list(typing.get_args(annotation))}
    if origin is tuple:
        return "vector", {"n": len(typing.get_args(annotation))}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "group", {}
    if origin is list:
        (item,) = typing.get_args(annotation) or (None,)
        item = typing.get_args(item)[0] if typing.get_origin(item) is Annotated else item
        if item is float:
            return "numbers", {}
        if item is str:
            return "names", {}
        return "json", {}
    return "json", {}                                       # (a dict too: a robot's q0, a program's parameters)


class FieldEditor(QWidget):
    """GUI thread. Base of the editors: the entry widget(s), a unit label and a hidden error label. Each editor
    defines ``_show(value)``, which puts a value into its entry widget(s)."""

    committed = Signal(object)

    def __init__(self, unit: str = "", parent=None):
        super().__init__(parent)
        self._value = None
        self.error = ""
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(1)
        self.row = QHBoxLayout()
        self.row.setContentsMargins(0, 0, 0, 0)
        self.row.setSpacing(3)
        outer.addLayout(self.row)
        self._unit = QLabel(unit)
        self._unit.setObjectName("unit")
        self._unit.setStyleSheet("color: palette(mid);")
        self.error_label = QLabel()
        self.error_label.setObjectName("error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(ERROR_STYLE)
        self.error_label.hide()
        outer.addWidget(self.error_label)

    def _finish_row(self) -> None:
        if self._unit.text():
            self.row.addWidget(self._unit)

    def value(self):
        return self._value

    def set_value(self, value) -> None:
        self._value = value
        self._show(value)
        self.set_error(None)

    def set_error(self, message: str | None) -> None:
        """Show the validator's ``message`` under the field (None clears it)."""
        self.error = message or ""
        self.error_label.setText(self.error)
        self.error_label.setVisible(bool(self.error))

    def _commit(self, value) -> None:
        if value != self._value or self.error:
            self.committed.emit(value)

    def _commit_text(self, text: str, parse) -> None:
        """Commit what ``parse`` reads in ``text``; a text it refuses (ValueError) is refused at the field."""
        try:
            value = parse(text)
        except ValueError as exc:
            self.set_error(str(exc))
            return
        self._commit(value)


class _LineEditor(FieldEditor):
    """GUI thread. Text parsed by ``parse``; a text that does not parse is refused at the field."""

    def __init__(self, parse, show, unit="", placeholder="", parent=None):
        super().__init__(unit, parent)
        self._parse, self._format = parse, show
        self.edit = QLineEdit()
        self.edit.setPlaceholderText(placeholder)
        self.edit.editingFinished.connect(self._finished)
        self.row.addWidget(self.edit, 1)
        self._finish_row()

    def _finished(self) -> None:
        self._commit_text(self.edit.text(), self._parse)

    def _show(self, value) -> None:
        self.edit.setText(self._format(value))
        self.edit.setCursorPosition(0)                  # a text longer than the field shows its beginning


class _TextArea(QTextEdit):
    """GUI thread. A plain text area that wraps its lines to its width, is as tall as its wrapped text
    (``lines``: at least and at most so many lines; it scrolls beyond) and says when it loses the focus (the end
    of an entry)."""
    finished = Signal()

    def __init__(self, lines: tuple[int, int]):
        super().__init__()
        self._lines = lines
        self.setAcceptRichText(False)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().contentsChanged.connect(self._fit)
        self._fit()

    def _fit(self) -> None:
        doc, line = self.document(), self.fontMetrics().lineSpacing()
        doc.setTextWidth(self.viewport().width())
        pad = 2 * doc.documentMargin() + self.frameWidth() * 2
        low, high = (n * line + pad for n in self._lines)
        self.setFixedHeight(math.ceil(max(low, min(high, doc.size().height() + 2 * self.frameWidth()))))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def focusOutEvent(self, event) -> None:
        super().focusOutEvent(event)
        self.finished.emit()


class _TextAreaEditor(FieldEditor):
    """GUI thread. Text over several wrapped lines (a scene's description, a JSON value laid out indented):
    ``parse`` reads the text, ``show`` writes a value; committed when the area loses the focus."""

    def __init__(self, parse, show, lines: tuple[int, int], unit="", placeholder="", parent=None):
        super().__init__(unit, parent)
        self._parse, self._format = parse, show
        self.edit = _TextArea(lines)
        self.edit.setPlaceholderText(placeholder)
        self.edit.finished.connect(lambda: self._commit_text(self.edit.toPlainText(), self._parse))
        self.row.addWidget(self.edit, 1)
        self._finish_row()

    def _show(self, value) -> None:
        self.edit.setPlainText(self._format(value))


class _VectorEditor(FieldEditor):
    """GUI thread. ``n`` numbers side by side (a position, an axis, a quaternion); empty = None if optional."""

    def __init__(self, n: int, unit="", optional=False, parent=None):
        super().__init__(unit, parent)
        self._optional = optional
        self.edits = []
        for _ in range(n):
            e = QLineEdit()
            e.setMinimumWidth(40)
            e.editingFinished.connect(self._finished)
            self.row.addWidget(e, 1)
            self.edits.append(e)
        self._finish_row()

    def _finished(self) -> None:
        if any(e.hasFocus() for e in self.edits):      # still moving between the components
            return
        texts = [e.text().strip() for e in self.edits]
        if self._optional and not any(texts):
            self._commit(None)
            return
        try:
            value = [parse_number(t) for t in texts]
        except ValueError as exc:
            self.set_error(str(exc))
            return
        self._commit(value)

    def _show(self, value) -> None:
        for k, e in enumerate(self.edits):
            e.setText("" if value is None else format_number(value[k]))

    def _commit(self, value) -> None:
        current = None if self._value is None else [float(x) for x in self._value]
        if value != current or self.error:
            self.committed.emit(value)


class _ColourEditor(_VectorEditor):
    """GUI thread. An RGB colour in [0, 1] with a swatch that opens a colour dialog (alpha is kept)."""

    def __init__(self, parent=None):
        super().__init__(3, "", parent=parent)
        self.swatch = QPushButton()
        self.swatch.setFixedWidth(28)
        self.swatch.setToolTip("Pick a colour")
        self.swatch.clicked.connect(self._pick)
        self.row.addWidget(self.swatch)

    def _show(self, value) -> None:
        super()._show(value[:3])
        self._alpha = list(value[3:])
        r, g, b = (max(0, min(255, round(255 * float(c)))) for c in value[:3])
        self.swatch.setStyleSheet(f"background-color: rgb({r}, {g}, {b});")

    def _commit(self, value) -> None:
        if value is not None:
            value = list(value) + list(getattr(self, "_alpha", []))
        super()._commit(value)

    def _pick(self) -> None:
        c = QColorDialog.getColor(QColor.fromRgbF(*[float(x) for x in self._value[:3]]), self, "Shape colour")
        if c.isValid():
            self._commit([round(c.redF(), 4), round(c.greenF(), 4), round(c.blueF(), 4)])


class _CheckEditor(FieldEditor):
    """GUI thread. A yes/no field; committed when toggled."""

    def __init__(self, parent=None):
        super().__init__("", parent)
        self.box = QCheckBox()
        self.box.toggled.connect(lambda on: self._commit(bool(on)))
        self.row.addWidget(self.box)
        self.row.addStretch(1)

    def _show(self, value) -> None:
        self.box.blockSignals(True)
        self.box.setChecked(bool(value))
        self.box.blockSignals(False)


class _WheelGuard(QObject):
    """GUI thread. Passes a wheel turn over an unfocused widget on to its scrolling parent, so that scrolling a
    panel never changes the combo box or slider that happens to pass under the mouse (an undoable edit)."""

    def eventFilter(self, widget, event) -> bool:
        if event.type() == QEvent.Type.Wheel and not widget.hasFocus():
            event.ignore()
            return True
        return False


@functools.cache
def _wheel_guard() -> _WheelGuard:
    return _WheelGuard()


def wheel_only_when_focused(widget: QWidget) -> QWidget:
    """Make ``widget`` (a combo box, a slider) take wheel turns only once clicked or tabbed into."""
    widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    widget.installEventFilter(_wheel_guard())
    return widget


class _ChoiceEditor(FieldEditor):
    """GUI thread. One of several values (a Literal), or an editable list of names (bodies, joints)."""

    def __init__(self, options, editable=False, unit="", parent=None):
        super().__init__(unit, parent)
        self.combo = wheel_only_when_focused(QComboBox())
        self.combo.setEditable(editable)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(6)          # narrower than its longest entry in a narrow dock
        self.combo.addItems([str(o) for o in options])
        self._options = list(options)
        self.combo.activated.connect(self._picked)
        if editable:
            self.combo.lineEdit().editingFinished.connect(self._picked)
        self.row.addWidget(self.combo, 1)
        self._finish_row()

    def set_options(self, options) -> None:
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItems([str(o) for o in options])
        self._options = list(options)
        self.combo.blockSignals(False)

    def _picked(self, *_) -> None:
        text = self.combo.currentText()
        value = next((o for o in self._options if str(o) == text), text)
        self._commit(value)

    def _show(self, value) -> None:
        self.combo.blockSignals(True)
        if str(value) not in [str(o) for o in self._options] and self.combo.isEditable():
            self.combo.addItem(str(value))
        self.combo.setCurrentText(str(value))
        self.combo.blockSignals(False)


def _parse_point(text: str):
    text = text.strip()
    if not text:
        raise ValueError("give a named point of the body, or coordinates x, y, z")
    if text[0].isalpha() or text[0] == "_":
        return text
    parts = [p for p in text.replace("[", "").replace("]", "").replace(",", " ").split()]
    if len(parts) != 3:
        raise ValueError("coordinates need three numbers x, y, z")
    return [parse_number(p) for p in parts]


def _show_point(value) -> str:
    return value if isinstance(value, str) else ", ".join(format_number(x) for x in value)


def _parse_numbers(text: str, optional: bool = False, single: bool = False):
    """``"1.33, 0.75"`` → [1.33, 0.75]; with ``single`` a lone number stays a number (a gain for all joints)."""
    parts = text.replace("[", " ").replace("]", " ").replace(",", " ").split()
    if not parts:
        if optional:
            return None
        raise ValueError("give one or more numbers, separated by commas")
    values = [parse_number(p) for p in parts]
    return values[0] if single and len(values) == 1 and "[" not in text else values


def _show_numbers(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return format_number(value)
    return ", ".join(format_number(v) for v in value)


def _parse_names(text: str, optional: bool = False):
    names = [p for p in text.replace(",", " ").split()]
    if not names and optional:
        return None
    return names


def _parse_json(text: str):
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg}") from None
    except RecursionError:                               # ([[[[… nested past Python's stack)
        raise ValueError("not valid JSON here: nested too deeply") from None


def _show_json(value) -> str:
    """An object one member a line, indented; anything else on one line."""
    if value is None:
        return ""
    return json.dumps(value, indent=2 if isinstance(value, dict) else None, ensure_ascii=False)


def editor_for(kind: str, details: dict, unit: str = "", choices=None) -> FieldEditor:
    """The editor for a field of ``kind`` (see :func:`field_kind`); ``choices`` makes a text field an editable
    combo (names of bodies or joints)."""
    optional = details.get("optional", False)
    if kind == "float":
        return _LineEditor(lambda t: parse_number(t, optional), format_number, unit,
                           "(none)" if optional else "")
    if kind == "int":
        def parse_int(t):
            v = parse_number(t, optional)
            if v is not None and v != int(v):
                raise ValueError("must be a whole number")
            return None if v is None else int(v)
        return _LineEditor(parse_int, lambda v: "" if v is None else str(v), unit)
    if kind == "bool":
        return _CheckEditor()
    if kind == "choice":
        return _ChoiceEditor(details["options"], unit=unit)
    if kind == "vector":
        return _VectorEditor(details["n"], unit, optional)
    if kind == "colour":
        return _ColourEditor()
    if kind == "point":
        return _LineEditor(_parse_point, _show_point, unit, "name or x, y, z")
    if kind in ("numbers", "gain"):
        return _LineEditor(lambda t: _parse_numbers(t, optional, single=kind == "gain"), _show_numbers, unit,
                           ("(none) " if optional else "") + ("a value, or one per joint" if kind == "gain" else
                                                              "values separated by commas"))
    if kind == "names":
        return _LineEditor(lambda t: _parse_names(t, optional), lambda v: "" if v is None else ", ".join(v), unit,
                           "(all)" if optional else "names separated by commas")
    if kind == "longtext":
        return _TextAreaEditor(lambda t: t, lambda v: v or "", (4, 12))
    if kind == "text" and choices is not None:
        return _ChoiceEditor(choices, editable=True, unit=unit)
    if kind == "text":
        return _LineEditor(lambda t: (t.strip() or None) if optional else t.strip(),
                           lambda v: "" if v is None else str(v), unit, "(none)" if optional else "")
    return _TextAreaEditor(_parse_json, _show_json, (1, 12), unit, "JSON")

