"""The studio's main window: the 3D viewport in the centre with the timeline under it; docks for the scene tree,
the inspector, the plots, the run's events, the control panel and the messages (every notice the status bar shows,
import warnings, the kernels' compile; :mod:`studio.run.notices`), and a Python console made when first shown
(:mod:`studio.qt.window.console`); menus, a toolbar and a status bar. Dock layout and recent files
are remembered (QSettings).

Thread: GUI. :class:`MainWindow` composes the parts and wires them; it holds no physics. It owns the
:class:`~studio.qt.document.document.SceneDocument` (edits, undo), the shared :class:`~studio.qt.document.selection.Selection` and a
:class:`~studio.qt.run.simthread.SimulationThread`, to which it only sends commands — document edits as typed
:class:`~studio.run.messages.Edit` s carrying the model the edit's validation compiled, so the worker compiles
nothing — and it shows the snapshots and samples the worker sends back. Closing the window asks about unsaved
edits, then stops the worker thread and waits for it.

Keyboard: Space play/pause, "." one step, Ctrl+R reset, "[" and "]" slower and faster, F frame the scene as it is
now, Shift+F frame the selection, L follow the selected body, F12 save a picture of the viewport; Enter or Escape
in a field of the inspector or the control panel gives the keys back to the viewport (so Space plays and Ctrl+Z
undoes at once).

On the first run of a version of the core on a machine (its compiled kernels not cached yet), the window starts
the worker only once a :class:`~studio.qt.run.kernels.KernelWarmup` has compiled them in a separate process; meanwhile
the scene is drawn at t = 0, can be browsed and edited (the edits and a Play wait in the worker's queue), and the
status bar counts the seconds.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import core
from PySide6.QtCore import QByteArray, QEvent, QObject, QStandardPaths, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QColor, QIcon, QKeySequence, QPainter, QPixmap
from PySide6.QtWidgets import (QAbstractSpinBox, QApplication, QComboBox, QDialog, QDockWidget, QFileDialog,
                               QLineEdit, QMainWindow, QMessageBox, QStyle, QToolBar, QVBoxLayout, QWidget)

from core.scene import SceneError

from studio.document import edits
from studio.qt.window.control_panel import SPEEDS, ControlPanel
from studio.qt.document.document import SceneDocument
from studio.qt.window.event_list import EventList
from studio.qt.window.files import FileActions, open_settings
from studio.qt.window.inspector import Inspector
from studio.qt.window.item_actions import ItemActions
from studio.qt.window.messages_dock import MessagesView
from studio.run.notices import NoticeLog, Severity
from studio.qt.run.kernels import KernelWarmup, kernels_needed
from studio.run.messages import Edit, Snapshot
from studio.qt.viewport.overlays import KINDS
from studio.qt.window.plotfigure import PLOTS
from studio.qt.window.plots import PlotPanel
from studio.qt.viewport.presenter import ViewportPresenter
from core.drawing import resting_draw_list
from studio.qt.window.record_dialog import RecordDialog
from studio.qt.run.recording import VideoRecorder
from studio.qt.window.scene_tree import SceneTree
from studio.qt.document.selection import Selection
from studio.qt.run.simthread import SimulationThread
from studio.qt.window.status import StatusBar
from studio.qt.window.timeline_bar import TimelineBar
from studio.qt.viewport.viewport import Viewport

__all__ = ["MainWindow", "short_text"]

HELP = """<b>Mouse in the viewport</b><br>
left drag: orbit · Shift + left drag or middle drag: pan · wheel or right drag: zoom<br>
click: select a body, a nail or a spring · <b>drag a nail</b>: move it ·
<b>drag a spring's end</b>: move a world end; drop a body end on another body to attach it there<br>
<b>Ctrl + left drag on a body</b>: pull it with a spring · the mouse marks what a click would take<br><br>
<b>Keys</b><br>Space: play / pause · . (period): one step · Ctrl+R: reset · [ ]: slower / faster<br>
F: frame the scene as it is now · Shift+F: frame the selection · L: follow the selected body<br>
F12: save a picture of the viewport · Ctrl+Shift+R: record · Ctrl+Z / Ctrl+Shift+Z: undo / redo<br>
Enter or Escape in a field: back to the viewport<br><br>
<b>Timeline</b> (under the viewport): drag to go back to any time of the run; play to run on from there — the
plots keep the earlier run, faded, to compare (View ▸ Earlier Try hides it; Reset drops it)."""

ACTIVITY_MS = 250        # the scene tree's marks of what acts now are refreshed this often (not every frame)
SHORT_UNDO = 28          # characters of an undo text shown on the toolbar (the menu and tooltip say it all)


def short_text(text: str, limit: int = SHORT_UNDO) -> str:
    """``text`` cut to ``limit`` characters at a word, with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit] if text[limit] == " " else text[:limit].rsplit(" ", 1)[0]
    return (cut if len(cut) > limit // 2 else text[:limit]) + "…"


class _FieldKeys(QObject):
    """GUI thread. Gives the keys back to the viewport after Enter or Escape in a field of the docks that hold
    fields (the inspector, the control panel), so Space and Ctrl+Z act on the scene at once. It watches the focus
    and filters the field that has it: Enter is left to the field (which takes the entry: editingFinished), then
    the viewport gets the focus; Escape first puts the field's value back."""

    def __init__(self, window, docks):
        super().__init__(window)
        self._window, self._docks = window, tuple(docks)
        self._watched: set[int] = set()
        QApplication.instance().focusChanged.connect(self._focus_changed)

    def _focus_changed(self, _old, new) -> None:
        if not isinstance(new, (QLineEdit, QAbstractSpinBox, QComboBox)) or id(new) in self._watched:
            return
        if any(dock.isAncestorOf(new) for dock in self._docks):
            new.installEventFilter(self)
            self._watched.add(id(new))
            new.destroyed.connect(lambda *_, key=id(new): self._watched.discard(key))

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.KeyPress and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter,
                                                                     Qt.Key.Key_Escape):
            if event.key() == Qt.Key.Key_Escape:
                self._revert(obj)
                self._to_viewport()
                return True
            QTimer.singleShot(0, self._to_viewport)        # after the field has taken the entry
        return False

    def _to_viewport(self) -> None:
        self._window.viewport.setFocus(Qt.FocusReason.ShortcutFocusReason)

    @staticmethod
    def _revert(obj) -> None:
        """Escape: the field shows its value again (an unfinished entry is dropped)."""
        from studio.qt.window.editors import FieldEditor
        w = obj
        while w is not None and not isinstance(w, FieldEditor):
            w = w.parent()
        if w is not None:
            w.set_value(w.value())


class MainWindow(QMainWindow):
    """GUI thread. One scene: ``model`` (a frozen ``core.Model`` compiled from a scene spec) run by ``simulation``
    (default ``core.Simulation(model)``), which from now on belongs to the worker thread. ``path`` is the scene's
    file (None: not saved yet); ``settings`` a QSettings (default: the user's). ``warmup``: a
    :class:`~studio.qt.run.kernels.KernelWarmup` that compiles the kernels first (default: one, if they are not cached;
    :attr:`kernels` holds it), after which the worker starts."""

    def __init__(self, model, simulation=None, path=None, settings=None, parent=None, warmup=None):
        super().__init__(parent)
        self.settings = settings if settings is not None else open_settings()
        self.document = SceneDocument(model.spec if model.spec is not None else None, path, self)
        self.selection = Selection(self)
        # first in line, so the selection is valid before the tree and inspector redraw
        self.document.changed.connect(self._document_changed)
        self.document.loaded.connect(self._document_loaded)
        self.document.modified_changed.connect(self.setWindowModified)
        self.document.path_changed.connect(lambda _p: self._update_title())

        self.viewport = Viewport(model)
        self.timeline = TimelineBar()
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.viewport, 1)
        column.addWidget(self.timeline)
        self.setCentralWidget(central)
        self.status = StatusBar(self, NoticeLog(sim_time=self._simulated_time))
        self.setStatusBar(self.status)
        self.sim_thread = SimulationThread(simulation if simulation is not None else core.Simulation(model),
                                           parent=self)
        self.file_actions = FileActions(self.document, self.settings, self, self)
        self.item_actions = ItemActions(self.document, self.selection, self)
        self._spring_drag = 0
        self._build_transport()
        self._build_docks()
        self.recorder = VideoRecorder(self.viewport, self.plots, self)
        self.plots.fit_window(self.document.spec.simulation.duration)
        self._build_menus()
        self._build_toolbar()
        self._wire()
        self._update_title()
        self._default_state = self.saveState()
        self._restore_layout()
        self._field_keys = _FieldKeys(self, (self.inspector_dock, self.controls_dock))
        self._kernels_failed = ""
        self.kernels = warmup if warmup is not None else (KernelWarmup(parent=self) if kernels_needed() else None)
        if self.kernels is None or self.kernels.done:
            self.sim_thread.start()
        else:
            self.kernels.setParent(self)
            self.kernels.progress.connect(self.status.busy)
            self.kernels.finished.connect(self._kernels_finished)
            self.status.rate_label.setText("waiting for the kernels")
            self._show_resting_scene(model)
            self.kernels.start()

    # ---- building ------------------------------------------------------------------------------------------
    def _action(self, text, slot=None, shortcut=None, icon=None, tip="", checkable=False) -> QAction:
        action = QAction(text, self)
        if icon is not None:
            action.setIcon(self.style().standardIcon(icon))
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.setToolTip(tip or text)
        action.setCheckable(checkable)
        if slot is not None:
            if checkable:
                action.toggled.connect(slot)
            else:   # triggered(bool) would hand its "checked" to the slot's first parameter (a picture's path)
                action.triggered.connect(lambda *_: slot())
        return action

    def _build_transport(self) -> None:
        sp = QStyle.StandardPixmap
        self._icon_play = self.style().standardIcon(sp.SP_MediaPlay)
        self._icon_pause = self.style().standardIcon(sp.SP_MediaPause)
        self.play_action = self._action("Play", self._play_toggled, Qt.Key.Key_Space, sp.SP_MediaPlay,
                                        "Play or pause the simulation (Space)", checkable=True)
        self.step_action = self._action("Step", self.sim_thread.step, Qt.Key.Key_Period, sp.SP_MediaSkipForward,
                                        "Pause and advance one time step (.)")
        self.reset_action = self._action("Reset", self._reset, "Ctrl+R", sp.SP_MediaSkipBackward,
                                         "Pause and go back to the initial state (Ctrl+R); the plots start "
                                         "clean")
        self.slower_action = self._action("Slower", lambda: self._change_speed(-1), "[",
                                          tip="Ask for a lower real-time factor ([)")
        self.faster_action = self._action("Faster", lambda: self._change_speed(+1), "]",
                                          tip="Ask for a higher real-time factor (])")

    def _dock(self, title: str, name: str, widget, area) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_docks(self) -> None:
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.scene_tree = SceneTree(self.document, self.selection)
        self.scene_tree.context_menu = self.item_actions.context_menu()
        self.inspector = Inspector(self.document, self.selection)
        self.plots = PlotPanel()
        self.controls = ControlPanel(self.document, (self.play_action, self.step_action, self.reset_action))
        left = Qt.DockWidgetArea.LeftDockWidgetArea
        self.tree_dock = self._dock("Scene", "scene_dock", self.scene_tree, left)
        self.inspector_dock = self._dock("Inspector", "inspector_dock", self.inspector, left)
        self.plots_dock = self._dock("Plots", "plots_dock", self.plots, Qt.DockWidgetArea.RightDockWidgetArea)
        self.controls_dock = self._dock("Control panel", "controls_dock", self.controls,
                                        Qt.DockWidgetArea.BottomDockWidgetArea)
        self.events = EventList(self.plots.events)
        self.events_dock = self._dock("Events", "events_dock", self.events, Qt.DockWidgetArea.RightDockWidgetArea)
        self.splitDockWidget(self.plots_dock, self.events_dock, Qt.Orientation.Vertical)
        self.messages = MessagesView(self.status.log)
        self.messages_dock = self._dock("Messages", "messages_dock", self.messages,
                                        Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.controls_dock, self.messages_dock)
        self.joints_dock = self._dock("Joints", "joints_dock", self.controls.joint_box,
                                      Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.controls_dock, self.joints_dock)
        self.controls_dock.raise_()
        self.console_dock = None                          # View ▸ Python Console makes it (studio.qt.window.console)
        self.controls_dock.dockLocationChanged.connect(
            lambda area: self.controls.set_horizontal(area in (Qt.DockWidgetArea.BottomDockWidgetArea,
                                                               Qt.DockWidgetArea.TopDockWidgetArea)))
        self.controls.set_horizontal(True)
        self.resizeDocks([self.tree_dock, self.inspector_dock], [260, 420], Qt.Orientation.Vertical)
        self.resizeDocks([self.tree_dock, self.plots_dock], [280, 540], Qt.Orientation.Horizontal)
        self.resizeDocks([self.controls_dock], [260], Qt.Orientation.Vertical)
        self.resizeDocks([self.plots_dock, self.events_dock], [720, 200], Qt.Orientation.Vertical)

    def _build_menus(self) -> None:
        bar, fa, ia = self.menuBar(), self.file_actions, self.item_actions
        self.export_plots_action = self._action("Export &Plots…", self._export_plots_dialog)
        self.export_csv_action = self._action("Export Run as &CSV…", lambda: self.plots._export_dialog(".csv"),
                                              tip="Every step of the run, full precision, the columns of "
                                                  "python -m core run")
        self.record_action = self._action("&Record…", self._record_toggled, "Ctrl+Shift+R",
                                          tip="Record the viewport (and plots) on simulated time: MP4, GIF or "
                                              "PNG frames (Ctrl+Shift+R)", checkable=True)
        self.record_action.setIcon(_record_icon())
        self.screenshot_action = self._action("Save &Picture of the Viewport", self.save_screenshot, "F12",
                                              tip="Save a PNG of the viewport (F12)")
        self.screenshot_as_action = self._action("Save Picture &As…", self._screenshot_dialog, "Ctrl+F12")
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        file = bar.addMenu("&File")
        for item in (fa.new_action, fa.open_action, fa.examples_menu, fa.recent_menu, None, fa.save_action,
                     fa.save_as_action, None, self.export_plots_action, self.export_csv_action,
                     self.screenshot_action, self.screenshot_as_action, self.record_action, None, self.quit_action):
            _add(file, item)
        undo = self.document.undo_stack
        self.undo_action = undo.createUndoAction(self, "&Undo")
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.redo_action = undo.createRedoAction(self, "&Redo")
        self.redo_action.setShortcut(QKeySequence.StandardKey.Redo)
        self.undo_action.triggered.connect(self.status.clear_error)
        self.redo_action.triggered.connect(self.status.clear_error)
        edit = bar.addMenu("&Edit")
        for item in (self.undo_action, self.redo_action, None, ia.add_menu, ia.duplicate_action, ia.rename_action,
                     ia.delete_action, None, ia.unpack_action):
            _add(edit, item)
        view = bar.addMenu("&View")
        self.frame_action = self._action("&Frame Scene", self.viewport.frame_scene, "F",
                                         tip="Point the camera at the scene as it is now (F)")
        self.frame_selection_action = self._action("Frame &Selection", self.viewport.frame_selection, "Shift+F")
        self.follow_action = self._action("F&ollow Selected Body", self._follow_toggled, "L",
                                          tip="Keep the camera on the selected body (L)", checkable=True)
        for item in (self.frame_action, self.frame_selection_action, self.follow_action):
            _add(view, item)
        view.addSeparator()
        self.overlay_actions = {}
        for kind, (label, default) in KINDS.items():
            act = self._action(label, lambda on, k=kind: self.viewport.set_overlay_visible(k, on), checkable=True)
            act.setChecked(default)
            view.addAction(act)
            self.overlay_actions[kind] = act
        self.legend_action = self._action("Legend of Arrows and Marks", self.viewport.set_legend_visible,
                                          checkable=True)
        self.legend_action.setChecked(True)
        view.addAction(self.legend_action)
        self.collision_action = self._action(
            "&Collision Shapes", self.viewport.set_collision_shown, checkable=True,
            tip="Draw the shapes that only touch the ground (a robot's collision stand-ins: URDF <collision>, MJCF "
                "geoms of group 3 and up) as well as those drawn")
        view.addAction(self.collision_action)
        self.rate_action = self._action("Frame &Rate", lambda on: self.presenter.set_rate_shown(on), checkable=True,
                                        tip="Show the viewport's frames per second and the real-time factor "
                                            "(simulated seconds per wall-clock second) over it")
        view.addAction(self.rate_action)
        self.earlier_try_action = self._action(
            "&Earlier Try", self.plots.set_earlier_try_shown, checkable=True,
            tip="Show the earlier try faded in the plots: what was plotted after the time the timeline went back "
                "to, or the run before an edit restarted it (Reset and opening a document drop it)")
        self.earlier_try_action.setChecked(True)
        view.addAction(self.earlier_try_action)
        view.addSeparator()
        for dock in (self.tree_dock, self.inspector_dock, self.plots_dock, self.events_dock, self.controls_dock,
                     self.joints_dock, self.messages_dock):
            view.addAction(dock.toggleViewAction())
        self.console_action = self._action("Python &Console", self._console_toggled, "Ctrl+Shift+P",
                                           tip="An IPython console in this process, with sim, model, doc, core and "
                                               "np (Ctrl+Shift+P)", checkable=True)
        view.addAction(self.console_action)
        view.addAction(self._action("Reset &Layout", lambda: self.restoreState(self._default_state)))
        sim = bar.addMenu("&Simulation")
        for item in (self.play_action, self.step_action, self.reset_action, None, self.slower_action,
                     self.faster_action):
            _add(sim, item)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self._action("Mouse and &Keys", lambda: QMessageBox.information(self, "Mouse and keys",
                                                                                            HELP)))

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main", self)
        bar.setObjectName("main_toolbar")
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        sp = QStyle.StandardPixmap
        self.file_actions.open_action.setIcon(self.style().standardIcon(sp.SP_DialogOpenButton))
        self.file_actions.save_action.setIcon(self.style().standardIcon(sp.SP_DialogSaveButton))
        # the toolbar's undo and redo keep short names (the full text is in their tooltip and the Edit menu),
        # so the toolbar does not jump sideways as the text of the last edit grows
        undo = self.document.undo_stack
        self.undo_button = self._action("Undo", undo.undo, icon=sp.SP_ArrowBack)
        self.redo_button = self._action("Redo", undo.redo, icon=sp.SP_ArrowForward)
        self.undo_button.triggered.connect(self.status.clear_error)
        self.redo_button.triggered.connect(self.status.clear_error)
        undo.indexChanged.connect(self._update_undo_buttons)
        self._update_undo_buttons()
        for item in (self.file_actions.open_action, self.file_actions.save_action, None, self.undo_button,
                     self.redo_button, None, self.play_action, self.step_action, self.reset_action, None,
                     self.frame_action, self.record_action):
            _add(bar, item)
        self.addToolBar(bar)

    def _update_undo_buttons(self, *_) -> None:
        undo = self.document.undo_stack
        for button, can, text, verb in ((self.undo_button, undo.canUndo(), undo.undoText(), "Undo"),
                                        (self.redo_button, undo.canRedo(), undo.redoText(), "Redo")):
            button.setEnabled(can)
            button.setToolTip(f"{verb} {text}" if can else f"Nothing to {verb.lower()}")
            button.setText(verb)

    def _wire(self) -> None:
        st = self.sim_thread
        self.presenter = ViewportPresenter(self.viewport, self.status, self.document, self.selection, self)
        st.snapshot_ready.connect(self._show_snapshot)
        self.presenter.drawing.connect(self.timeline.show_snapshot)     # with the viewport's frames (one composition)
        self.presenter.drawing.connect(self.plots.frame)
        st.samples_ready.connect(self.plots.add_batch)
        st.samples_ready.connect(lambda batch: self.recorder.add_frames(batch.frames) if batch.frames else None)
        st.error.connect(self._show_error)
        st.notice.connect(lambda text, t: self.status.note(text, severity=Severity.WARNING, source="simulation", t=t))
        st.busy.connect(self._worker_busy)
        for source in (self.scene_tree, self.item_actions, self.plots, self.file_actions, self.controls):
            source.message.connect(self.status.note)
        self.file_actions.error.connect(self._file_error)
        self.file_actions.import_warning.connect(
            lambda text: self.status.log.post(text, Severity.WARNING, source="import"))
        self.item_actions.rename_requested.connect(self._rename_in_tree)
        self.viewport.pull_requested.connect(lambda body, r, target, k, c: st.pull(body, r, target, k, c))
        self.viewport.pull_released.connect(st.release)
        self.viewport.nail_dragged.connect(st.move_nail)
        self.viewport.nail_dropped.connect(self._move_nail)
        self.viewport.spring_end_moved.connect(lambda name, end, p: self._move_spring(name, end, "world", p))
        self.viewport.spring_end_attached.connect(self._move_spring)
        self.viewport.drag_finished.connect(self._spring_drag_finished)
        self.timeline.seek_requested.connect(self._seek)
        self.events.seek_requested.connect(self._seek)
        self._activity_timer = QTimer(self)               # what acts now, in the scene tree: a few times a second
        self._activity_timer.timeout.connect(self._show_activity)
        self._activity_timer.start(ACTIVITY_MS)
        self.controls.speed_changed.connect(st.set_speed)
        self.controls.actuator_changed.connect(st.set_actuator)
        self.controls.joints_posed.connect(st.pose)
        self.controls.set_state_source(lambda: self.sim_thread.latest)
        self.controls.residual_limit_changed.connect(st.set_residual_limit)
        self.recorder.frames_wanted.connect(st.record_frames)
        self.recorder.status.connect(self._recording_status)
        self.recorder.finished.connect(self._recording_finished)

    @property
    def time_label(self):
        return self.status.time_label

    def _simulated_time(self) -> float | None:
        """The simulated time a notice speaks of: the latest snapshot's (None before the first)."""
        latest = self.sim_thread.latest if hasattr(self, "sim_thread") else None
        return None if latest is None else latest.t

    def _file_error(self, text: str) -> None:
        self.status.log.post(text, Severity.ERROR, source="file")
        QMessageBox.warning(self, "limbstudio", text)

    def _console_toggled(self, on: bool) -> None:
        """Show or hide the Python console, made the first time it is shown (its kernel takes a second to start)."""
        if self.console_dock is None:
            if not on:
                return
            from studio.qt.window.console import ConsoleDock
            self.console_dock = ConsoleDock(self)
            if not self.restoreDockWidget(self.console_dock):
                self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.console_dock)
                self.tabifyDockWidget(self.controls_dock, self.console_dock)
            self.console_dock.closed.connect(lambda: self.console_action.setChecked(False))
        self.console_dock.setVisible(on)
        if on:
            self.console_dock.raise_()
            self.console_dock.console.setFocus()

    # ---- settings ------------------------------------------------------------------------------------------
    def _restore_layout(self) -> None:
        geometry, state = self.settings.value("window/geometry"), self.settings.value("window/state")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        if isinstance(state, QByteArray):
            self.restoreState(state)

    def _save_layout(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()

    def _update_title(self) -> None:
        where = f" — {self.document.path}" if self.document.path else ""
        self.setWindowTitle(f"{self.document.spec.name}[*]{where} — limbstudio")

    # ---- commands ------------------------------------------------------------------------------------------
    def play(self) -> None:
        self.play_action.setChecked(True)

    def pause(self) -> None:
        self.play_action.setChecked(False)

    @Slot(bool)
    def _play_toggled(self, on: bool) -> None:
        self._show_playing(on)
        if on:
            self.status.note("")
            self.sim_thread.play()
        else:
            self.sim_thread.pause()

    def _show_playing(self, on: bool) -> None:
        self.play_action.setIcon(self._icon_pause if on else self._icon_play)
        self.play_action.setText("Pause" if on else "Play")
        self.controls.set_running(on)

    def _reset(self) -> None:
        self.status.clear_error()
        self.sim_thread.reset()
        self.controls.reset_actuators()
        self.controls.reset_joints()

    def _seek(self, t: float) -> None:
        if self.play_action.isChecked():
            self.pause()
        self.sim_thread.seek(t)

    def _change_speed(self, direction: int) -> None:
        """One step down (−1) or up (+1) the speeds the control panel offers."""
        speeds = list(SPEEDS.values())                     # real-time factors, None (as fast as possible) last
        current = self.sim_thread.latest.speed if self.sim_thread.latest is not None else 1.0
        factor = [1e9 if v is None else v for v in speeds]
        k = min(range(len(speeds)), key=lambda i: abs(math.log(factor[i] / min(current, 1e9))))
        k = max(0, min(len(speeds) - 1, k + direction))
        self.controls.set_speed(speeds[k])
        label = "as fast as possible" if speeds[k] is None else f"{speeds[k]:g}× real time"
        self.status.note(f"speed: {label}", 2000)

    def _follow_toggled(self, on: bool) -> None:
        link = self.viewport._selected_link if on else None
        if on and link is None:
            self.status.note("select a body first (click it), then L to follow it", 4000)
            self.follow_action.setChecked(False)
            return
        self.viewport.set_follow(link)

    def _export_plots_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export plots", "plots.png",
                                              "PNG image (*.png);;SVG drawing (*.svg);;CSV data (*.csv)")
        if name:
            try:
                files = self.plots.export(name)
            except Exception as exc:          # show it, never lose it
                self.status.error(f"could not export the plots: {type(exc).__name__}: {exc}")
                return
            self.status.note("exported " + ", ".join(map(str, files)))

    # ---- pictures and recordings ---------------------------------------------------------------------------
    def save_screenshot(self, path=None, size=None) -> Path | None:
        """Save a PNG of the viewport (default: in the pictures folder, named after the scene and the time)."""
        if path is None:
            folder = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.PicturesLocation)
                          or Path.home()) / "limbstudio"
            t = self.sim_thread.latest.t if self.sim_thread.latest is not None else 0.0
            path = folder / f"{self.document.spec.name}-t{t:.3f}s-{time.strftime('%Y%m%d-%H%M%S')}.png"
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp.png")
        if not self.viewport.render_image(size).save(str(tmp), "PNG"):
            self.status.error(f"could not write {path}")
            return None
        tmp.replace(path)                      # whole or not at all
        self.status.note(f"saved a picture of the viewport: {path}", 6000)
        return path

    def _screenshot_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Save picture", f"{self.document.spec.name}.png",
                                              "PNG image (*.png)")
        if name:
            self.save_screenshot(name if name.lower().endswith(".png") else name + ".png")

    @Slot(bool)
    def _record_toggled(self, on: bool) -> None:
        if not on:
            if self.recorder.recording:
                self.recorder.stop()
            return
        plots = [(p.key, p.title) for p in PLOTS if self.plots.figure.available(p)]
        dialog = RecordDialog(self, plots, (self.viewport.width(), self.viewport.height()),
                              Path.cwd() / f"{self.document.spec.name}.mp4")
        if dialog.exec() != QDialog.DialogCode.Accepted:
            self._set_record_checked(False)
            return
        c = dialog.choices()
        self.start_recording(c.path, c.fps, c.duration, c.size, c.plots)

    def start_recording(self, path, fps: float = 30.0, duration: float | None = None, size=None, plots=()) -> None:
        """Record ``duration`` simulated seconds (None: until stopped) at ``fps`` to ``path``
        (:class:`studio.qt.run.recording.VideoRecorder`). Frames follow simulated time, so a paused simulation is set
        playing."""
        try:
            self.recorder.start(path, fps, duration, size, plots)
        except (ValueError, OSError) as exc:
            self._set_record_checked(False)
            self.status.error(str(exc))
            return
        self._set_record_checked(True)
        self.status.note(f"recording to {path}, {fps:g} frames per simulated second", 3000)
        if not self.play_action.isChecked():
            self.play()

    def _set_record_checked(self, on: bool) -> None:
        self.record_action.blockSignals(True)
        self.record_action.setChecked(on)
        self.record_action.blockSignals(False)

    def _recording_status(self, text: str) -> None:
        self.viewport.set_recording_text(text)
        if not self.recorder.recording and self.record_action.isChecked():
            self._set_record_checked(False)

    def _recording_finished(self, path: str, error: str) -> None:
        self._set_record_checked(False)
        self.viewport.set_recording_text("")
        if error:
            self.status.error(f"the recording {path} failed: {error}")
        else:
            self.status.note(f"saved the recording {path}")

    # ---- nails and springs dragged in the viewport ---------------------------------------------------------
    def _move_nail(self, name: str, position) -> None:
        """Put a nail where its drag let go of it: a document edit, one undo step per drag (while dragged, the
        nail moved in the run alone)."""
        try:
            new, path = edits.move_nail(self.document.spec, name, position)
        except SceneError as exc:
            self.status.note(f"cannot move nail {name!r}: " + "; ".join(str(p) for p in exc.problems))
            return
        self.document.apply(new, f"Move nail {name!r}", changes=((path, list(edits.resolve(new, path))),))

    def _move_spring(self, name: str, end: str, body: str, point) -> None:
        """Move (or attach) a spring's end: a document edit, one undo step per drag, that the worker applies at
        once without recompiling."""
        spec = self.document.spec
        try:
            new, path = edits.move_spring_end(spec, name, end, body, point)
        except SceneError as exc:
            self.status.note(f"cannot move the end of spring {name!r}: "
                             + "; ".join(str(p) for p in exc.problems))
            return
        where = "a world point" if body == "world" else f"{body!r}"
        text = f"Move end {end} of spring {name!r} to {where}"
        changes = (((*path, f"body_{end}"), body), ((*path, f"point_{end}"), list(map(float, point))))
        self.document.apply(new, text, merge_key=f"spring-drag-{self._spring_drag}", changes=changes)

    def _spring_drag_finished(self) -> None:
        self._spring_drag += 1

    # ---- the document --------------------------------------------------------------------------------------
    @Slot(object, object)
    def _document_changed(self, spec, select) -> None:
        if select is not None:
            self.selection.set(select)
        elif self.selection.path is not None:
            try:
                edits.resolve(spec, self.selection.path)
            except (IndexError, KeyError, AttributeError, TypeError):
                self.selection.set(None)
        changes, text = self.document.last_edit
        self.sim_thread.edit(Edit(spec, edits.compiled(spec), changes, text))
        self._update_title()

    @Slot(object)
    def _document_loaded(self, spec) -> None:
        self.selection.set(None)
        self.plots.fit_window(spec.simulation.duration)
        self.presenter.frame_next_model()
        self.sim_thread.load(spec, keep_state=False, model=edits.compiled(spec))
        self._update_title()

    def _rename_in_tree(self, path) -> None:
        index = self.scene_tree.index_of(path)
        if index.isValid():
            self.tree_dock.show()
            self.scene_tree.edit(index)

    # ---- what the worker tells us --------------------------------------------------------------------------
    @Slot(bool, str)
    def _kernels_finished(self, ok: bool, message: str) -> None:
        """The separate process that compiled the kernels has finished: start the worker (which loads them from
        the cache, or compiles them itself if the process failed)."""
        self.status.busy("")
        self.status.rate_label.setText("paused")
        if ok:
            self.status.note(message, 4000)
        else:
            self._kernels_failed = message
            self.status.error(f"{message}; compiling them on the simulation thread instead")
        self.sim_thread.start()

    def _show_resting_scene(self, model) -> None:
        """Nails and springs at t = 0 before the worker's first snapshot (its kernels are not compiled yet)."""
        try:
            self.viewport.overlays.update(resting_draw_list(model))
        except Exception:                  # only a preview: the first snapshot brings the real overlay
            return
        self.viewport.update()

    @Slot(str)
    def _worker_busy(self, message: str) -> None:
        if message and self._kernels_failed:
            message = f"{self._kernels_failed}; {message[0].lower()}{message[1:]}"
        self.status.busy(message)

    @Slot(object)
    def _show_snapshot(self, snap: Snapshot) -> None:
        if self.play_action.isChecked() != snap.playing:   # the worker paused by itself (or after Step/Reset)
            self.play_action.blockSignals(True)
            self.play_action.setChecked(snap.playing)
            self.play_action.blockSignals(False)
            self._show_playing(snap.playing)
        self.plots.set_cursor(None if snap.playing else snap.t)        # before the frame the plots redraw with
        self.presenter.show(snap)

    @Slot()
    def _show_activity(self) -> None:
        snap = self.sim_thread.latest
        if snap is not None and snap.draw is not None:
            self.scene_tree.show_activity(snap.model, snap.draw)

    @Slot(str)
    def _show_error(self, message: str) -> None:
        self.status.error(message, source="simulation")

    # ---- shutdown ------------------------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        if not self.file_actions.may_discard():
            event.ignore()
            return
        if self.recorder.busy:
            self.recorder.stop(wait=True)
        if self.kernels is not None and not self.kernels.done:
            self.kernels.finished.disconnect(self._kernels_finished)
            self.kernels.stop()            # the worker never started; what was compiled so far stays cached
        self._save_layout()
        if self.console_dock is not None:
            self.console_dock.shutdown()
        self.sim_thread.shutdown()
        super().closeEvent(event)


def _record_icon() -> QIcon:
    pix = QPixmap(32, 32)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QColor(215, 55, 50))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(6, 6, 20, 20)
    painter.end()
    return QIcon(pix)


def _add(menu_or_bar, item) -> None:
    if item is None:
        menu_or_bar.addSeparator()
    elif isinstance(item, QAction):
        menu_or_bar.addAction(item)
    else:
        menu_or_bar.addMenu(item)
