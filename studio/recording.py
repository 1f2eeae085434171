"""Video recordings of the viewport: MP4 (libx264, from the ffmpeg that the imageio-ffmpeg wheel carries) or GIF.

Thread: :class:`VideoRecorder` lives on the GUI thread, where it grabs frames of the viewport on a timer; the
encoding runs on a plain Python thread of its own (:class:`_Encoder`) fed through a queue, so a slow encoder never
blocks drawing. Frames are cropped to even multiples of 16 pixels, as H.264 in yuv420p wants (shared/GUI-CI.md).
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QImage

__all__ = ["VideoRecorder", "image_to_rgb"]

MAX_GIF_FRAMES = 600


def image_to_rgb(image: QImage) -> np.ndarray:
    """An (h, w, 3) uint8 copy of a QImage."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    w, h = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes()).reshape(h, image.bytesPerLine())
    return rows[:, :3 * w].reshape(h, w, 3).copy()


class _Encoder(threading.Thread):
    """Its own thread. Writes the frames it is given to ``path``; ``error`` holds what went wrong, if anything."""

    def __init__(self, path: Path, fps: float):
        super().__init__(name="video-encoder", daemon=True)
        self.path, self.fps = path, fps
        self.frames: queue.Queue = queue.Queue(maxsize=120)
        self.error: str | None = None
        self.count = 0

    def run(self) -> None:
        import imageio.v2 as iio2
        import imageio.v3 as iio3
        gif = self.path.suffix.lower() == ".gif"
        kept, writer = [], None
        try:
            while True:
                frame = self.frames.get()
                if frame is None:
                    break
                self.count += 1
                if gif:
                    if len(kept) < MAX_GIF_FRAMES:
                        kept.append(frame)
                    continue
                if writer is None:
                    writer = iio2.get_writer(str(self.path), fps=self.fps, codec="libx264", pixelformat="yuv420p",
                                             macro_block_size=16)
                writer.append_data(frame)
            if gif and kept:
                iio3.imwrite(self.path, np.stack(kept), duration=1000.0 / self.fps, loop=0)
        except Exception as exc:          # reported by the recorder, never lost
            self.error = f"{type(exc).__name__}: {exc}"
            while self.frames.get() is not None:     # drain, so the GUI never blocks on a full queue
                pass
        finally:
            if writer is not None:
                writer.close()


class VideoRecorder(QObject):
    """GUI thread. Records ``widget`` (anything with ``grabFramebuffer()``) at ``fps`` frames a second.

    ``finished(str path, str error)`` after :meth:`stop` (error empty on success)."""

    finished = Signal(str, str)

    def __init__(self, widget, parent=None):
        super().__init__(parent)
        self._widget = widget
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._grab)
        self._encoder: _Encoder | None = None
        self._size = None
        self.grabbed = 0                           # frames grabbed since start()

    @property
    def recording(self) -> bool:
        return self._encoder is not None

    @property
    def path(self) -> Path | None:
        return self._encoder.path if self._encoder else None

    def start(self, path: str | Path, fps: float = 30.0) -> None:
        path = Path(path)
        if path.suffix.lower() not in (".mp4", ".gif"):
            raise ValueError(f"record to .mp4 or .gif, not {path.suffix or 'a file without suffix'}")
        if self.recording:
            self.stop()
        self._encoder = _Encoder(path, fps)
        self._encoder.start()
        self._size = None
        self.grabbed = 0
        self._timer.start(round(1000 / fps))
        self._grab()

    def _grab(self) -> None:
        rgb = image_to_rgb(self._widget.grabFramebuffer())
        if self._size is None:
            h, w = rgb.shape[:2]
            self._size = (max(16, h - h % 16), max(16, w - w % 16))
        h, w = self._size
        frame = np.zeros((h, w, 3), np.uint8)
        crop = rgb[:h, :w]
        frame[:crop.shape[0], :crop.shape[1]] = crop
        try:
            self._encoder.frames.put(frame, timeout=0.5)
            self.grabbed += 1
        except queue.Full:
            pass                                   # the encoder is behind: drop this frame, keep the GUI moving

    def stop(self) -> tuple[Path, int, str]:
        """Stop, finish the file and return (path, frames written, error or '')."""
        self._timer.stop()
        encoder, self._encoder = self._encoder, None
        if encoder is None:
            return None, 0, ""
        encoder.frames.put(None)
        encoder.join(timeout=60)
        error = encoder.error or ("" if not encoder.is_alive() else "the encoder did not finish in 60 s")
        self.finished.emit(str(encoder.path), error)
        return encoder.path, encoder.count, error
