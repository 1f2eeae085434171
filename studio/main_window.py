"""The studio's main window: the 3D viewport, a toolbar (Play/Pause, Step, Reset) and a status bar with the
simulated time.

Thread: GUI. :class:`MainWindow` owns a :class:`studio.simthread.SimulationThread`; it only sends it commands and
shows the snapshots it delivers. Closing the window stops the worker thread and waits for it.
"""
from __future__ import annotations

import core
from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QStyle, QToolBar

from .simthread import SimulationThread
from .viewport import Viewport
from .worker import Snapshot

__all__ = ["MainWindow"]


class MainWindow(QMainWindow):
    """GUI thread. One scene: ``model`` (a frozen ``core.Model``) simulated by ``simulation`` (default
    ``core.Simulation(model)``), which from now on belongs to the worker thread."""

    def __init__(self, model, simulation=None, parent=None):
        super().__init__(parent)
        self.model = model
        self.setWindowTitle(f"{model.name} — limbstudio")
        self.viewport = Viewport(model)
        self.setCentralWidget(self.viewport)

        self.sim_thread = SimulationThread(simulation if simulation is not None else core.Simulation(model),
                                           parent=self)
        self.sim_thread.snapshot_ready.connect(self._show_snapshot)
        self.sim_thread.error.connect(self._show_error)
        self._build_toolbar()
        self._build_status_bar()
        self.sim_thread.start()

    # ---- widgets -------------------------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        icon = self.style().standardIcon
        bar = QToolBar("Simulation", self)
        bar.setObjectName("simulation_toolbar")
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        bar.setMovable(False)
        self.addToolBar(bar)
        self._icon_play = icon(QStyle.StandardPixmap.SP_MediaPlay)
        self._icon_pause = icon(QStyle.StandardPixmap.SP_MediaPause)

        self.play_action = QAction(self._icon_play, "Play", self)
        self.play_action.setCheckable(True)
        self.play_action.setShortcut(QKeySequence(Qt.Key.Key_Space))
        self.play_action.setToolTip("Play or pause the simulation (Space)")
        self.play_action.toggled.connect(self._play_toggled)
        self.step_action = QAction(icon(QStyle.StandardPixmap.SP_MediaSkipForward), "Step", self)
        self.step_action.setShortcut(QKeySequence(Qt.Key.Key_Period))
        self.step_action.setToolTip(f"Pause and advance one time step of {self.sim_thread.dt:g} s (.)")
        self.step_action.triggered.connect(self.sim_thread.step)
        self.reset_action = QAction(icon(QStyle.StandardPixmap.SP_MediaSkipBackward), "Reset", self)
        self.reset_action.setShortcut(QKeySequence("Ctrl+R"))
        self.reset_action.setToolTip("Pause and go back to the initial state (Ctrl+R)")
        self.reset_action.triggered.connect(self.sim_thread.reset)
        for action in (self.play_action, self.step_action, self.reset_action):
            bar.addAction(action)

    def _build_status_bar(self) -> None:
        self.time_label = QLabel("t = 0.000 s")
        self.time_label.setObjectName("time_label")
        self.rate_label = QLabel("paused")
        self.rate_label.setObjectName("rate_label")
        status = self.statusBar()
        status.addPermanentWidget(self.rate_label)
        status.addPermanentWidget(self.time_label)

    # ---- commands ------------------------------------------------------------------------------------------
    def play(self) -> None:
        self.play_action.setChecked(True)

    def pause(self) -> None:
        self.play_action.setChecked(False)

    @Slot(bool)
    def _play_toggled(self, on: bool) -> None:
        self.play_action.setIcon(self._icon_pause if on else self._icon_play)
        self.play_action.setText("Pause" if on else "Play")
        if on:
            self.statusBar().clearMessage()
            self.sim_thread.play()
        else:
            self.sim_thread.pause()

    # ---- what the worker tells us --------------------------------------------------------------------------
    @Slot(object)
    def _show_snapshot(self, snap: Snapshot) -> None:
        self.viewport.set_configuration(snap.q)
        self.time_label.setText(f"t = {snap.t:.3f} s")
        if snap.playing and snap.realtime_factor is not None:
            self.rate_label.setText(f"{snap.realtime_factor:.2f}× real time")
        elif not snap.playing:
            self.rate_label.setText(f"paused · {snap.steps} steps")
        if self.play_action.isChecked() != snap.playing:   # the worker paused by itself (or after Step/Reset)
            self.play_action.blockSignals(True)
            self.play_action.setChecked(snap.playing)
            self.play_action.blockSignals(False)
            self.play_action.setIcon(self._icon_pause if snap.playing else self._icon_play)
            self.play_action.setText("Pause" if snap.playing else "Play")

    @Slot(str)
    def _show_error(self, message: str) -> None:
        self.statusBar().showMessage(message)

    # ---- shutdown ------------------------------------------------------------------------------------------
    def closeEvent(self, event) -> None:
        self.sim_thread.shutdown()
        super().closeEvent(event)
