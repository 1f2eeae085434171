"""The dialog that sets up a recording: where to (MP4, GIF or a folder of PNG frames), how many frames per
simulated second, for how long (or until stopped), at which size, and which plots to put beside the viewport.

Thread: GUI. :class:`RecordDialog` only collects the choices (:meth:`RecordDialog.choices`); the main window
starts the :class:`studio.qt.run.recording.VideoRecorder` with them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QGridLayout, QHBoxLayout, QLineEdit, QPushButton, QSpinBox, QWidget)

from studio.qt.run.recording import even_size

__all__ = ["RecordDialog", "RecordChoices"]

FORMATS = {"MP4 video (H.264)": ".mp4", "GIF animation": ".gif", "PNG frames (a folder)": ""}


@dataclass(frozen=True)
class RecordChoices:
    """Any thread (frozen). What the user chose."""
    path: Path
    fps: float
    duration: float | None
    size: tuple[int, int]
    plots: tuple


class RecordDialog(QDialog):
    """GUI thread. ``plots``: ``[(key, title)]`` of the plots that can go beside the viewport; ``size``: the
    viewport's size on screen (the default)."""

    def __init__(self, parent=None, plots=(), size=(800, 600), start: Path | None = None):
        super().__init__(parent)
        self.setWindowTitle("Record")
        form = QFormLayout(self)
        row = QHBoxLayout()
        self.path_edit = QLineEdit(str(start or Path.cwd() / "limbstudio.mp4"))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.path_edit, 1)
        row.addWidget(browse)
        form.addRow("file", row)
        self.format_combo = QComboBox()
        self.format_combo.addItems(list(FORMATS))
        self.format_combo.currentTextChanged.connect(self._format_changed)
        form.addRow("format", self.format_combo)
        self.fps_spin = QSpinBox()
        self.fps_spin.setRange(1, 240)
        self.fps_spin.setValue(30)
        self.fps_spin.setSuffix(" frames per simulated second")
        form.addRow("rate", self.fps_spin)
        self.until_stopped = QCheckBox("until I stop it")
        self.duration_spin = QDoubleSpinBox()
        self.duration_spin.setRange(0.01, 36000.0)
        self.duration_spin.setDecimals(2)
        self.duration_spin.setValue(5.0)
        self.duration_spin.setSuffix(" s of simulated time")
        self.until_stopped.toggled.connect(lambda on: self.duration_spin.setEnabled(not on))
        self.until_stopped.setChecked(True)
        row = QHBoxLayout()
        row.addWidget(self.until_stopped)
        row.addWidget(self.duration_spin, 1)
        form.addRow("length", row)
        w, h = even_size(*size)
        self.width_spin, self.height_spin = QSpinBox(), QSpinBox()
        for spin, value in ((self.width_spin, w), (self.height_spin, h)):
            spin.setRange(64, 7680)
            spin.setSingleStep(16)
            spin.setValue(value)
        row = QHBoxLayout()
        row.addWidget(self.width_spin)
        row.addWidget(self.height_spin)
        form.addRow("viewport size (px)", row)
        self.plot_boxes = {}
        grid_host = QWidget()
        grid = QGridLayout(grid_host)
        grid.setContentsMargins(0, 0, 0, 0)
        for n, (key, title) in enumerate(plots):
            box = QCheckBox(title)
            self.plot_boxes[key] = box
            grid.addWidget(box, n // 2, n % 2)
        if plots:
            form.addRow("plots beside it", grid_host)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Record")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self._format_changed(self.format_combo.currentText())

    def _format_changed(self, label: str) -> None:
        suffix = FORMATS[label]
        path = Path(self.path_edit.text().strip() or "limbstudio")
        base = path.with_suffix("") if path.suffix.lower() in (".mp4", ".gif", ".png") else path
        self.path_edit.setText(str(base.with_suffix(suffix) if suffix else base))

    def _browse(self) -> None:
        suffix = FORMATS[self.format_combo.currentText()]
        if suffix:
            name, _ = QFileDialog.getSaveFileName(self, "Record to", self.path_edit.text(),
                                                  f"{self.format_combo.currentText()} (*{suffix})")
        else:
            name = QFileDialog.getExistingDirectory(self, "Record PNG frames into", self.path_edit.text())
        if name:
            self.path_edit.setText(name)
            self._format_changed(self.format_combo.currentText())

    def choices(self) -> RecordChoices:
        return RecordChoices(
            path=Path(self.path_edit.text().strip()), fps=float(self.fps_spin.value()),
            duration=None if self.until_stopped.isChecked() else float(self.duration_spin.value()),
            size=(self.width_spin.value(), self.height_spin.value()),
            plots=tuple(k for k, box in self.plot_boxes.items() if box.isChecked()))
