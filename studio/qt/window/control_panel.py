"""The control panel: how the simulation runs (play, pause, step, reset; time step, integrator, formulation,
speed, residual limit), the controller and its parameters, a slider for every actuator of the scene, and a slider
for every hinge and slider joint of the model (the Joints group, ``joint_box``: pose the robot while paused; the main
window shows it in its own dock, tabbed with the panel, so that it takes no width from the controller's editor).

Thread: GUI. :class:`ControlPanel` edits the document's run settings (time step, integrator, formulation) as
undoable commands, like the inspector, and sends the live inputs (speed, actuator commands, residual limit) as
signals that the main window forwards to the worker; nothing here blocks on the simulation.

The controller section lists the scene's controllers (``controllers`` of the document, when the core's schema has
them): picking one enables it and disables the others, "Add" creates one holding the joints where they start, and
the chosen controller's gains and trajectory are edited in an inspector pinned to it — undoable document edits
that the worker applies in place at a step boundary (gains keep the adaptive state).

The Joints group has a slider and a field per hinge and slider joint of the running model
(:func:`studio.run.pose.joint_spans`: its limits, else ±π or ±1 m); ball and free joints are named in a note.
While paused, moving one sends ``joints_posed({joint: position})`` (the main window forwards it to the worker,
which sets that joint in the state, its velocity zeroed: not a document edit). The sliders follow the state the
window's ``state_source`` gives, :data:`JOINT_REFRESH_MS` apart (never every step, and a value shown from the
state is never sent back); while running they are disabled. "Set as initial pose" writes the joints as they are
into the document's ``q0`` (the robot include's ``q0`` for an included robot file's joints) as one undoable edit.
"""
from __future__ import annotations

import math

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (QBoxLayout, QComboBox, QFormLayout, QFrame, QGridLayout, QGroupBox, QHBoxLayout,
                               QLabel, QMenu, QPushButton, QScrollArea, QSlider, QToolButton, QVBoxLayout, QWidget)

from core.formulations import FORMULATIONS
from core.scene import SceneError
from core.step import INTEGRATOR_NAMES

from studio.document import edits
from studio.document.robot import included_robot
from studio.run.pose import initial_pose_edit, joint_spans, robot_joint_names
from studio.qt.window.editors import editor_for, format_number, wheel_only_when_focused
from studio.qt.window.inspector import Inspector
from studio.qt.document.selection import Selection

__all__ = ["ControlPanel", "SPEEDS", "CONTROLLER_LABELS", "JOINT_REFRESH_MS"]

#: Real-time factors offered; None = as fast as possible.
SPEEDS = {"0.01×": 0.01, "0.05×": 0.05, "0.1×": 0.1, "0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0,
          "2×": 2.0, "5×": 5.0, "as fast as possible": None}
CONTROLLER_LABELS = {"pd": "PD", "computed_torque": "computed torque", "slotine_li": "Slotine–Li",
                     "mixture": "M_N", "projected_inverse_dynamics": "projected inverse dynamics"}
SLIDER_STEPS = 1000
JOINT_REFRESH_MS = 100    # the joint sliders follow the state this often (not every step)
PAUSE_TO_POSE = "Pause the simulation (Space) to pose the joints: while it runs the sliders follow the state"


class ControlPanel(QWidget):
    """GUI thread. ``transport`` is a list of QActions (play, step, reset) shown as buttons.

    Signals: ``speed_changed(float)`` (``math.inf`` for as fast as possible), ``actuator_changed(str, float)``,
    ``residual_limit_changed(float)``, ``joints_posed(dict)`` ({joint: position}, sent while paused)."""

    speed_changed = Signal(float)
    actuator_changed = Signal(str, float)
    joints_posed = Signal(object)
    residual_limit_changed = Signal(float)
    message = Signal(str)

    def __init__(self, document, transport=(), parent=None):
        super().__init__(parent)
        self._document = document
        self._layout = layout = QBoxLayout(QBoxLayout.Direction.TopToBottom, self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self._simulation_box(transport), 0)
        layout.addWidget(self._controller_box(), 5)
        self.actuator_box = QGroupBox("Actuators")
        self.actuator_box.setLayout(QVBoxLayout())
        self.actuator_box.setMinimumWidth(200)
        layout.addWidget(self.actuator_box, 2)
        self.actuator_sliders: dict[str, QSlider] = {}
        self._joints_box()                   # (its own dock, tabbed with this panel: studio.qt.window.main_window)
        document.changed.connect(lambda spec, _sel: self._show_spec(spec))
        document.loaded.connect(self._show_spec)
        self._show_spec(document.spec)

    def set_horizontal(self, on: bool) -> None:
        """Lay the sections side by side (in a dock above or below the viewport) or stacked (at a side)."""
        self._layout.setDirection(QBoxLayout.Direction.LeftToRight if on else QBoxLayout.Direction.TopToBottom)

    # ---- simulation ----------------------------------------------------------------------------------------
    def _simulation_box(self, transport) -> QGroupBox:
        box = QGroupBox("Simulation")
        form = QFormLayout(box)
        buttons = QHBoxLayout()
        for action in transport:
            b = QToolButton()
            b.setDefaultAction(action)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            buttons.addWidget(b)
        buttons.addStretch(1)
        form.addRow(buttons)
        self.speed_combo = wheel_only_when_focused(QComboBox())
        self.speed_combo.addItems(list(SPEEDS))
        self.speed_combo.setCurrentText("1× (real time)")
        self.speed_combo.setToolTip("Simulated seconds per wall-clock second asked for; a slow scene achieves less "
                                    "(see the status bar)")
        self.speed_combo.currentTextChanged.connect(self._speed_picked)
        form.addRow("speed", self.speed_combo)
        self.dt_editor = editor_for("float", {}, "s")
        self.dt_editor.committed.connect(lambda v: self._edit_setting("dt", v))
        form.addRow("time step", self.dt_editor)
        self.integrator_editor = editor_for("choice", {"options": list(INTEGRATOR_NAMES)})
        self.integrator_editor.committed.connect(lambda v: self._edit_setting("integrator", v))
        form.addRow("integrator", self.integrator_editor)
        self.formulation_editor = editor_for("choice", {"options": list(FORMULATIONS)})
        self.formulation_editor.committed.connect(lambda v: self._edit_setting("formulation", v))
        form.addRow("formulation", self.formulation_editor)
        self.residual_editor = editor_for("float", {}, "m/s²")
        self.residual_editor.set_value(1e6)
        self.residual_editor.setToolTip("Pause when a constraint's solve residual exceeds this (divergence guard)")
        self.residual_editor.committed.connect(self._residual_limit)
        form.addRow("pause above residual", self.residual_editor)
        return box

    def set_speed(self, speed: float | None) -> None:
        """Show ``speed`` (None or inf: as fast as possible) and ask the worker for it."""
        label = next((k for k, v in SPEEDS.items() if v == speed or (v is None and (speed is None or
                                                                                 math.isinf(speed)))), None)
        if label is not None:
            self.speed_combo.setCurrentText(label)

    def _speed_picked(self, label: str) -> None:
        speed = SPEEDS[label]
        self.speed_changed.emit(math.inf if speed is None else speed)

    def _residual_limit(self, value) -> None:
        if value is None or not value > 0:
            self.residual_editor.set_error("must be a positive number")
            return
        self.residual_editor.set_value(value)
        self.residual_limit_changed.emit(float(value))

    def _edit_setting(self, name: str, value) -> None:
        spec = self._document.spec
        editor = {"dt": self.dt_editor, "integrator": self.integrator_editor,
                  "formulation": self.formulation_editor}[name]
        try:
            new = edits.set_value(spec, ("simulation", name), value)
        except SceneError as exc:
            editor.set_error("\n".join(edits.field_problems(exc, ("simulation", name))))
            return
        shown = f"{format_number(value)} s" if name == "dt" else str(value)
        label = {"dt": "time step"}.get(name, name)
        self._document.apply(new, f"Set {label} to {shown}", changes=((("simulation", name), value),))

    # ---- controller ----------------------------------------------------------------------------------------
    def _controller_box(self) -> QGroupBox:
        box = QGroupBox("Controller")
        layout = QVBoxLayout(box)
        row = QHBoxLayout()
        row.addWidget(QLabel("controller"))
        self.controller_combo = wheel_only_when_focused(QComboBox())
        self.controller_combo.setToolTip("The controller that drives the joints (the others are disabled)")
        self.controller_combo.activated.connect(self._controller_picked)
        row.addWidget(self.controller_combo, 1)
        self.add_controller_button = QToolButton()
        self.add_controller_button.setText("Add")
        self.add_controller_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.add_controller_button)
        for kind, label in edits.CONTROLLER_TYPES.items():
            menu.addAction(label).triggered.connect(lambda _=False, k=kind: self.add_controller(k))
        self.add_controller_button.setMenu(menu)
        self.add_controller_button.setEnabled(bool(edits.CONTROLLER_TYPES))
        row.addWidget(self.add_controller_button)
        layout.addLayout(row)
        # the chosen controller's gains and trajectory: an inspector pinned to it, so edits are undoable
        self._controller_selection = Selection(self)
        self.controller_editor = Inspector(self._document, self._controller_selection, select_on_edit=False,
                                           compact=True)
        self.controller_editor.setMinimumHeight(160)
        layout.addWidget(self.controller_editor, 1)
        self._no_controller = QLabel("No controller: the joints are driven by their actuators (if any). "
                                     "Add one (PD, computed torque, Slotine–Li, M_N, projected inverse dynamics) "
                                     "to edit its gains and trajectory here."
                                     if edits.CONTROLLER_TYPES else
                                     "Controllers (PD, computed torque, Slotine–Li, M_N, projected inverse "
                                     "dynamics) appear here with their gains and trajectory as the core adds them.")
        self._no_controller.setWordWrap(True)
        self._no_controller.setStyleSheet("color: palette(mid); font-size: 9pt;")
        layout.addWidget(self._no_controller)
        return box

    def _show_controllers(self, spec) -> None:
        controllers = list(getattr(spec, "controllers", None) or ())
        self.controller_combo.blockSignals(True)
        self.controller_combo.clear()
        self.controller_combo.addItem("none", None)
        for c in controllers:
            self.controller_combo.addItem(f"{c.name} ({CONTROLLER_LABELS.get(c.type, c.type)})", c.name)
        enabled = [k for k, c in enumerate(controllers) if c.enabled]
        self.controller_combo.setCurrentIndex(enabled[0] + 1 if enabled else 0)
        self.controller_combo.blockSignals(False)
        shown = ("controllers", enabled[0]) if enabled else None
        self._controller_selection.set(shown)
        self.controller_editor.setVisible(shown is not None)
        self._no_controller.setVisible(shown is None)

    def _controller_picked(self, index: int) -> None:
        name = self.controller_combo.itemData(index)
        try:
            new = edits.use_controller(self._document.spec, name)
        except SceneError as exc:
            self.message.emit("cannot switch controllers: " + "; ".join(str(p) for p in exc.problems))
            self._show_controllers(self._document.spec)
            return
        self._document.apply(new, f"Use controller {name}" if name else "Switch the controllers off")

    def add_controller(self, kind: str) -> bool:
        """Add a controller of ``kind`` holding the joints where they start, and use it."""
        spec = self._document.spec
        try:
            new, path = edits.add(spec, "controllers", kind)
            new = edits.use_controller(new, edits.resolve(new, path).name)
        except SceneError as exc:
            self.message.emit(f"cannot add a {CONTROLLER_LABELS.get(kind, kind)} controller: "
                              + "; ".join(str(p) for p in exc.problems))
            return False
        self._document.apply(new, f"Add controller {edits.resolve(new, path).name}")
        return True

    # ---- actuators -----------------------------------------------------------------------------------------
    @Slot(object)
    def _show_spec(self, spec) -> None:
        self._show_controllers(spec)
        s = spec.simulation
        self.dt_editor.set_value(s.dt)
        self.integrator_editor.set_value(s.integrator)
        self.formulation_editor.set_value(s.formulation)
        wanted = [(f.name, f.joint, _span(f), f.torque, _plain(f)) for f in _actuators(spec)]
        # a controller drives the joints and there are no actuators: the controller's editor takes the room
        self.actuator_box.setVisible(bool(wanted) or not self.controller_editor.isVisibleTo(self))
        if wanted == getattr(self, "_actuators_shown", None):
            return
        self._actuators_shown = wanted
        box = self.actuator_box.layout()
        while box.count():
            item = box.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self.actuator_sliders.clear()
        for name, joint, (low, high), value, plain in wanted:
            what = "torque" if plain else "command"
            box.addWidget(QLabel(f"{name} <span style='color: gray'>(joint {joint}, {what} {format_number(low)} … "
                                 f"{format_number(high)}{' N·m' if plain else ''})</span>"))
            box.addWidget(self._actuator_row(name, low, high, value, "N·m" if plain else ""))
        if not wanted:
            hint = QLabel("This scene has no actuators (add one: Edit ▸ Add ▸ Force ▸ Actuator).")
            hint.setWordWrap(True)
            hint.setStyleSheet("color: palette(mid); font-size: 9pt;")
            box.addWidget(hint)
        box.addStretch(1)

    def _actuator_row(self, name: str, low: float, high: float, value_now: float, unit: str) -> QWidget:
        row = QWidget()
        h = QHBoxLayout(row)
        h.setContentsMargins(0, 0, 0, 0)
        slider = wheel_only_when_focused(QSlider(Qt.Orientation.Horizontal))
        slider.setRange(-SLIDER_STEPS, SLIDER_STEPS)
        value = editor_for("float", {}, unit)
        h.addWidget(slider, 1)
        h.addWidget(value)
        value.edit.setFixedWidth(70)

        def of_step(k: int) -> float:
            return low + (high - low) * (k + SLIDER_STEPS) / (2 * SLIDER_STEPS)

        def step_of(v: float) -> int:
            return round((v - low) / (high - low) * 2 * SLIDER_STEPS) - SLIDER_STEPS if high > low else 0

        def from_slider(k: int) -> None:
            v = of_step(k)
            value.set_value(v)
            self.actuator_changed.emit(name, v)

        def from_text(v) -> None:
            v = max(low, min(high, float(v)))
            slider.blockSignals(True)
            slider.setValue(step_of(v))
            slider.blockSignals(False)
            value.set_value(v)
            self.actuator_changed.emit(name, v)

        slider.valueChanged.connect(from_slider)
        value.committed.connect(lambda v: from_text(v) if v is not None else None)
        slider.blockSignals(True)
        slider.setValue(step_of(max(low, min(high, value_now))))
        slider.blockSignals(False)
        value.set_value(value_now)
        slider.span = (low, high)
        self.actuator_sliders[name] = slider
        return row

    def reset_actuators(self) -> None:
        """Show the scene's own actuator values again (after a reset, the simulation uses them)."""
        self._actuators_shown = None
        self._show_spec(self._document.spec)

    # ---- joints --------------------------------------------------------------------------------------------
    def _joints_box(self) -> QGroupBox:
        self.joint_box = box = QWidget()
        box.setMinimumWidth(170)
        column = QVBoxLayout(box)
        column.setContentsMargins(4, 4, 4, 4)
        self.joint_sliders: dict[str, QSlider] = {}
        self.joint_fields: dict = {}
        self._joint_spans = None            # the JointSpans shown
        self._joint_model = None            # the model they were read from
        self._joint_snapshot = None         # the snapshot last shown
        self._running = False
        self._state_source = None
        self._pending: dict[str, float] = {}   # joint → the position a pose sent, until a state shows it
        self._joint_rows = QWidget()
        self._joint_grid = QGridLayout(self._joint_rows)
        self._joint_grid.setContentsMargins(0, 0, 0, 0)
        self._joint_grid.setVerticalSpacing(2)
        self._joint_grid.setColumnStretch(1, 1)
        self.joint_scroll = QScrollArea()
        self.joint_scroll.setWidgetResizable(True)
        self.joint_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.joint_scroll.setWidget(self._joint_rows)
        column.addWidget(self.joint_scroll, 1)
        self.joint_note = QLabel("The joints appear once the simulation has started.")
        self.joint_note.setWordWrap(True)
        self.joint_note.setStyleSheet("color: palette(mid); font-size: 9pt;")
        column.addWidget(self.joint_note)
        self.initial_pose_button = QPushButton("Set as initial pose")
        self.initial_pose_button.clicked.connect(lambda *_: self.set_initial_pose())
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.initial_pose_button)
        column.addLayout(row)
        self._joint_timer = QTimer(self)
        self._joint_timer.timeout.connect(self._refresh_joints)
        self._update_joint_enabled()
        return box

    def set_state_source(self, source) -> None:
        """Follow the state ``source()`` gives (the newest :class:`~studio.run.messages.Snapshot`, or None),
        :data:`JOINT_REFRESH_MS` apart."""
        self._state_source = source
        self._joint_timer.start(JOINT_REFRESH_MS)
        self._refresh_joints()

    def reset_joints(self) -> None:
        """Build the sliders again from the next state shown (after a Reset: the initial state)."""
        self._joint_model = self._joint_spans = self._joint_snapshot = None
        self._pending.clear()

    def set_running(self, on: bool) -> None:
        """The simulation runs (the sliders follow the state, disabled) or is paused (they pose the joints)."""
        self._running = bool(on)
        if self._running:
            self._pending.clear()           # (the state moves on from whatever was posed)
        self._update_joint_enabled()

    @Slot()
    def _refresh_joints(self) -> None:
        snap = self._state_source() if self._state_source is not None else None
        if snap is None or snap is self._joint_snapshot or snap.model is None:
            return
        self.show_joints(snap)

    def show_joints(self, snap) -> None:
        """Show the joints of ``snap`` (a :class:`~studio.run.messages.Snapshot`): rebuilt when its model's
        joints or their spans differ from those shown; a slider being dragged, or a field being typed in, keeps
        what the user is doing."""
        self._joint_snapshot = snap
        if snap.model is not self._joint_model:
            spans, skipped = joint_spans(snap.model)
            self._joint_model = snap.model
            if spans != self._joint_spans:
                self._build_joints(spans, skipped)
        q = snap.q
        for s in self._joint_spans or ():
            slider, field = self.joint_sliders[s.name], self.joint_fields[s.name]
            if slider.isSliderDown() or field.edit.hasFocus() or s.q >= len(q):
                continue
            value = float(q[s.q])
            if s.name in self._pending:                 # a pose sent: states from before it do not undo it
                if value != self._pending[s.name]:
                    continue
                del self._pending[s.name]
            slider.blockSignals(True)                   # a value shown from the state is never sent back
            slider.setValue(_step_of(s, value))
            slider.blockSignals(False)
            if field.value() != value:
                field.set_value(value)

    def _build_joints(self, spans, skipped) -> None:
        grid = self._joint_grid
        while grid.count():
            item = grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self.joint_sliders.clear()
        self.joint_fields.clear()
        self._joint_spans = spans
        for r, s in enumerate(spans):
            label = QLabel(s.name)
            where = "its limits" if s.limited else ("±π, no limits" if s.kind == "hinge" else "±1 m, no limits")
            label.setToolTip(f"{s.kind} joint {s.name}: {format_number(s.low)} … {format_number(s.high)} {s.unit} "
                             f"({where})")
            grid.addWidget(label, r, 0)
            slider = wheel_only_when_focused(QSlider(Qt.Orientation.Horizontal))
            slider.setRange(-SLIDER_STEPS, SLIDER_STEPS)
            slider.span = (s.low, s.high)
            field = editor_for("float", {}, s.unit)
            field.edit.setFixedWidth(62)
            slider.valueChanged.connect(lambda k, s=s: self._joint_slider_moved(s, k))
            field.committed.connect(lambda v, s=s: self._joint_typed(s, v))
            grid.addWidget(slider, r, 1)
            grid.addWidget(field, r, 2)
            self.joint_sliders[s.name] = slider
            self.joint_fields[s.name] = field
        grid.setRowStretch(len(spans), 1)
        notes = []
        if not spans:
            notes.append("This model has no hinge or slider joints to pose.")
        if skipped:
            notes.append(f"Ball and free joints have no slider: {', '.join(skipped)}.")
        self.joint_note.setText(" ".join(notes))
        self.joint_note.setVisible(bool(notes))
        self._update_joint_enabled()

    def _joint_slider_moved(self, s, k: int) -> None:
        value = s.low + (s.high - s.low) * (k + SLIDER_STEPS) / (2 * SLIDER_STEPS)
        self.joint_fields[s.name].set_value(value)
        self._pose(s.name, value)

    def _joint_typed(self, s, value) -> None:
        field = self.joint_fields[s.name]
        if value is None or not math.isfinite(float(value)):
            field.set_error("a number")
            return
        value = s.clamp(value)
        slider = self.joint_sliders[s.name]
        slider.blockSignals(True)
        slider.setValue(_step_of(s, value))
        slider.blockSignals(False)
        field.set_value(value)
        self._pose(s.name, value)

    def _pose(self, name: str, value: float) -> None:
        if not self._running:           # (while running the sliders only follow the state)
            self._pending[name] = float(value)
            self.joints_posed.emit({name: float(value)})

    def _update_joint_enabled(self) -> None:
        posing = not self._running
        for name, slider in self.joint_sliders.items():
            field = self.joint_fields[name]
            for w in (slider, field):
                w.setEnabled(posing)
                w.setToolTip("" if posing else PAUSE_TO_POSE)
            if posing:
                slider.setToolTip(f"Drag to set joint {name} in the paused state (its velocity zeroed); Play goes "
                                  f"on from the pose")
        writable = bool(self._joint_spans)
        self.initial_pose_button.setEnabled(posing and writable)
        if not writable:
            self.initial_pose_button.setToolTip("This model has no hinge or slider joints")
        elif not posing:
            self.initial_pose_button.setToolTip("Pause the simulation (Space) to set the initial pose")
        else:
            self.initial_pose_button.setToolTip(
                "Write the joints as they are now into the document's initial pose (q0; an included robot file's "
                "joints into the robot include's q0): one edit, undoable. Moving a slider alone changes only the "
                "running state")

    def set_initial_pose(self) -> bool:
        """Write the joints of the state shown into the document's initial pose (one undoable edit); False when
        there is nothing to write or the document refuses it (a message says why)."""
        snap = self._state_source() if self._state_source is not None else self._joint_snapshot
        if snap is None or snap.model is None:
            self.message.emit("the simulation has not started yet: no pose to set")
            return False
        spec = self._document.spec
        data = edits.to_data(spec)
        changes, text = initial_pose_edit(data, robot_joint_names(included_robot(spec)), snap.model, snap.q)
        if not changes:
            self.message.emit("no joint of the document (nor of its robot include) to set the initial pose of")
            return False
        try:
            new = edits.validate(data)
        except SceneError as exc:
            self.message.emit("cannot set the initial pose: " + "; ".join(str(p) for p in exc.problems))
            return False
        self._document.apply(new, text, changes=tuple(changes))
        return True


def _step_of(s, value: float) -> int:
    """The slider step of joint span ``s`` nearest ``value`` (clamped to the slider's ends)."""
    if not s.high > s.low or not math.isfinite(value):
        return 0
    k = round((value - s.low) / (s.high - s.low) * 2 * SLIDER_STEPS) - SLIDER_STEPS
    return max(-SLIDER_STEPS, min(SLIDER_STEPS, k))


def _actuators(spec) -> list:
    """The scene's actuators: those its document lists, then those of its included robot file (which the
    document does not list; the scene tree reads that file the same way)."""
    listed = [f for f in spec.forces if f.type == "actuator"]
    robot = included_robot(spec)
    return listed if robot is None else listed + [f for f in robot.forces if f.type == "actuator"]


def _plain(f) -> bool:
    """Whether actuator ``f``'s command is its torque (gain 1, no bias)."""
    return f.gain == 1.0 and tuple(f.bias) == (0.0, 0.0, 0.0)


def _span(f) -> tuple[float, float]:
    """The range actuator ``f``'s slider spans: its command's range when it has one; a plain actuator's force
    range; else ± max(10, 2 |command|)."""
    if f.command_range is not None:
        return float(f.command_range[0]), float(f.command_range[1])
    if _plain(f) and f.limit is not None:
        return -float(f.limit), float(f.limit)
    if _plain(f) and f.force_range is not None:
        return float(f.force_range[0]), float(f.force_range[1])
    span = max(10.0, 2.0 * abs(f.torque))
    return -span, span
