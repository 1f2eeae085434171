"""Recordings on simulated time: MP4 (H.264, from the ffmpeg that the imageio-ffmpeg wheel carries), GIF or a
sequence of PNG files; the viewport alone or beside chosen plots, time-aligned.

A video of T simulated seconds at F frames a second has T·F frames and lasts T seconds (a GIF too, whose delays
are whole hundredths of a second: :func:`gif_delays`), whatever the machine's speed: frames are not grabbed off
the screen on a wall-clock timer but rendered from the states the simulation passed through at t0 + k/F. The
worker cuts its batches at those times and sends the draw list of each
(:mod:`studio.qt.run.worker`, RECORD); :class:`VideoRecorder` queues them and renders each off screen
(:meth:`studio.qt.viewport.viewport.Viewport.render_image`), with the plots up to that time beside it when asked
(:class:`studio.qt.window.plots.FigureRenderer`), and hands the pictures to :class:`FrameWriter`. Draw lists are small, so
a slow renderer only delays the file, never drops a frame; what is left when the recording stops is rendered
then, with progress.

The file is complete or absent: frames go to a hidden file (a hidden folder for PNG frames) beside the target,
renamed into place when the last frame is written; a failure or a cancel deletes it. Frame sizes are rounded to
multiples of 16 pixels, as H.264 in yuv420p wants (shared/GUI-CI.md).

Thread: :class:`FrameWriter` — the thread that calls it, with its encoding on a plain Python thread of its own
(fed through a bounded queue); :class:`VideoRecorder` — GUI thread.
"""
from __future__ import annotations

import os
import queue
import secrets
import shutil
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QImage

__all__ = ["VideoRecorder", "FrameWriter", "image_to_rgb", "compose", "even_size", "gif_delays", "KINDS"]

MAX_GIF_FRAMES = 1200
#: What a recording can be written as, by the target's suffix ("" : a folder of PNG files).
KINDS = {".mp4": "MP4 video (H.264)", ".gif": "GIF animation", "": "PNG frames (a folder)"}


def image_to_rgb(image: QImage) -> np.ndarray:
    """An (h, w, 3) uint8 copy of a QImage."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    w, h = image.width(), image.height()
    rows = np.frombuffer(image.constBits(), np.uint8, count=image.sizeInBytes()).reshape(h, image.bytesPerLine())
    return rows[:, :3 * w].reshape(h, w, 3).copy()


def even_size(w: int, h: int) -> tuple[int, int]:
    """(w, h) rounded down to multiples of 16 (at least 16)."""
    return max(16, int(w) - int(w) % 16), max(16, int(h) - int(h) % 16)


def compose(view: np.ndarray, plots: np.ndarray | None) -> np.ndarray:
    """The viewport's picture with the plots' beside it (to its right), same height."""
    if plots is None:
        return view
    h = view.shape[0]
    if plots.shape[0] != h:
        pad = np.full((h, plots.shape[1], 3), 30, np.uint8)
        pad[:min(h, plots.shape[0])] = plots[:h]
        plots = pad
    return np.concatenate([view, plots], axis=1)


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".mp4", ".gif"):
        return suffix
    if suffix in ("", ".png") or str(path).endswith(os.sep):
        return ""
    raise ValueError(f"record to .mp4, .gif or a folder of PNG frames, not {path.suffix}")


def gif_delays(count: int, fps: float) -> list[int]:
    """How long (ms) each of ``count`` frames at ``fps`` shows in a GIF, whose delays are whole hundredths of a
    second: frame k ends at k + 1 frame periods rounded to the hundredth, so the animation's clock never strays
    more than 5 ms from simulated time (at 30 fps: 30, 40, 30, 30, 40, 30, … ms, and 90 frames last 3 s)."""
    ends = [round(100.0 * k / fps) for k in range(count + 1)]
    return [10 * (b - a) for a, b in zip(ends, ends[1:])]


class FrameWriter:
    """The thread that calls it; encodes on a thread of its own. Writes RGB frames of one size to ``path`` at
    ``fps`` (a frame is 1/fps seconds of the video): an MP4, a GIF, or a folder of ``frame_00000.png`` … (a path
    without suffix, or ending in .png: the folder takes its name without it). :meth:`close` finishes the file and
    puts it in place; :meth:`abort` deletes what was written."""

    def __init__(self, path: str | os.PathLike, fps: float):
        self.target = Path(path)
        self.kind = _kind(self.target)
        if self.kind == "" and self.target.suffix.lower() == ".png":
            self.target = self.target.with_suffix("")
        if not fps > 0:
            raise ValueError(f"frames per second must be positive, got {fps}")
        self.fps = float(fps)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        token = secrets.token_hex(4)
        self.partial = self.target.parent / f".{self.target.name}.{token}.partial{self.kind}"
        if self.kind == "":
            self.partial.mkdir()
        self.count = 0
        self.error: str | None = None
        self.size: tuple[int, int] | None = None
        self._frames: queue.Queue = queue.Queue(maxsize=64)
        self._thread = threading.Thread(target=self._run, name="limbstudio video encoder", daemon=True)
        self._thread.start()

    def write(self, frame: np.ndarray) -> None:
        """Queue one (h, w, 3) uint8 frame (cropped to the first frame's size, a multiple of 16)."""
        if self.size is None:
            self.size = even_size(frame.shape[1], frame.shape[0])
        w, h = self.size
        out = np.zeros((h, w, 3), np.uint8)
        crop = frame[:h, :w]
        out[:crop.shape[0], :crop.shape[1]] = crop
        while True:
            if self.error is not None:
                raise RuntimeError(self.error)
            try:
                self._frames.put(out, timeout=0.5)
                return
            except queue.Full:
                continue

    def _run(self) -> None:
        import imageio.v2 as iio2
        import imageio.v3 as iio3
        writer, kept = None, []
        try:
            while True:
                frame = self._frames.get()
                if frame is None:
                    break
                if self.kind == ".mp4":
                    if writer is None:
                        writer = iio2.get_writer(str(self.partial), format="FFMPEG", fps=self.fps,
                                                 codec="libx264", pixelformat="yuv420p", macro_block_size=16,
                                                 quality=8)
                    writer.append_data(frame)
                elif self.kind == ".gif":
                    if len(kept) >= MAX_GIF_FRAMES:
                        raise ValueError(f"a GIF holds at most {MAX_GIF_FRAMES} frames here; record an MP4 for "
                                         "longer clips")
                    kept.append(frame)
                else:
                    iio3.imwrite(self.partial / f"frame_{self.count:05d}.png", frame)
                self.count += 1
            if writer is not None:
                writer.close()
                writer = None
            if self.kind == ".gif" and kept:
                iio3.imwrite(self.partial, np.stack(kept), extension=".gif",
                             duration=gif_delays(len(kept), self.fps), loop=0)
        except Exception as exc:          # reported by close(), never lost
            self.error = f"{type(exc).__name__}: {exc}"
            while self._frames.get() is not None:     # drain, so a writer never blocks on a full queue
                pass
        finally:
            if writer is not None:
                try:
                    writer.close()
                except Exception:
                    pass

    def close(self, timeout: float = 300.0) -> tuple[Path, int, str]:
        """Finish the file and put it in place: ``(path, frames written, error or '')``; on an error, or with
        no frame at all, nothing is left behind."""
        self._frames.put(None)
        self._thread.join(timeout)
        error = self.error or ("" if not self._thread.is_alive() else f"the encoder did not finish in {timeout:g} s")
        if not error and self.count == 0:
            error = "no frame was recorded"
        if error:
            self._remove()
            return self.target, self.count, error
        try:
            if self.kind == "" and self.target.is_dir():
                old = self.target.parent / f".{self.target.name}.{secrets.token_hex(4)}.old"
                os.rename(self.target, old)
                os.rename(self.partial, self.target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(self.partial, self.target)
        except OSError as exc:
            self._remove()
            return self.target, self.count, f"could not put the file in place: {exc}"
        return self.target, self.count, ""

    def abort(self) -> None:
        self._frames.put(None)
        self._thread.join(60)
        self._remove()

    def _remove(self) -> None:
        if self.partial.is_dir():
            shutil.rmtree(self.partial, ignore_errors=True)
        else:
            try:
                self.partial.unlink()
            except OSError:
                pass


class VideoRecorder(QObject):
    """GUI thread. Records what ``viewport`` shows, frame by frame on simulated time (module docstring).

    :meth:`start` opens the file and emits ``frames_wanted(period, count)`` (connect it to
    ``SimulationThread.record_frames``); feed it the frames the worker sends (:meth:`add_frames`). Signals:
    ``status(str)`` what to show while recording or encoding ("" when done); ``progress(done, total)`` frames
    written of those taken; ``finished(path, error)`` (error empty on success)."""

    frames_wanted = Signal(object, object)
    status = Signal(str)
    progress = Signal(int, int)
    finished = Signal(str, str)

    def __init__(self, viewport, plots=None, parent=None):
        super().__init__(parent)
        self._viewport = viewport
        self._plots = plots                      # a studio.qt.window.plots.PlotPanel, for plots beside the viewport
        self._writer: FrameWriter | None = None
        self._queue: deque = deque()
        self._taking = False
        self._timer = QTimer(self)
        self._timer.setInterval(15)
        self._timer.timeout.connect(self._render_some)
        self._figure = None
        self.fps = 30.0
        self.t0: float | None = None
        self.t_last: float | None = None
        self.taken = 0
        self.expected: int | None = None
        self.size = None
        self.plot_keys: tuple = ()

    @property
    def recording(self) -> bool:
        """Frames are being taken (the file is open)."""
        return self._taking

    @property
    def busy(self) -> bool:
        """A file is open: frames are being taken or still being written."""
        return self._writer is not None

    @property
    def path(self) -> Path | None:
        return self._writer.target if self._writer else None

    @property
    def grabbed(self) -> int:
        return self.taken

    def start(self, path, fps: float = 30.0, duration: float | None = None, size=None, plots=()) -> None:
        """Record to ``path`` (.mp4, .gif, or a folder for PNG frames) at ``fps`` frames per simulated second,
        for ``duration`` simulated seconds (None: until :meth:`stop`); ``size`` (w, h) of the viewport's
        picture (default: as on screen); ``plots``: keys of plots to put beside it (:data:`studio.qt.window.plotfigure.PLOTS`).
        """
        if self.busy:
            self.stop(wait=True)
        if duration is not None and not duration > 0:
            raise ValueError(f"the duration must be positive, got {duration}")
        writer = FrameWriter(path, fps)           # checks the kind and the rate, creates the hidden file
        self._writer = writer
        self.fps = float(fps)
        self.size = even_size(*(size or (self._viewport.width(), self._viewport.height())))
        self.plot_keys = tuple(plots or ())
        self._figure = None
        self._queue.clear()
        self.t0 = self.t_last = None
        self.taken = 0
        self.expected = None if duration is None else max(1, round(duration * fps))
        self._taking = True
        self._timer.start()
        self.frames_wanted.emit(1.0 / self.fps, self.expected)
        self.status.emit(self._status_text())

    def add_frames(self, frames) -> None:
        """The worker's frames (draw lists at the recording's times), in order."""
        if not self._taking:
            return
        for frame in frames:
            if self.expected is not None and self.taken >= self.expected:
                break
            if self.t0 is None:
                self.t0 = frame.t
            self.t_last = frame.t
            self._queue.append(frame)
            self.taken += 1
        if self.expected is not None and self.taken >= self.expected:
            self._stop_taking()
        self.status.emit(self._status_text())

    def _status_text(self) -> str:
        if self._taking:
            elapsed = self.taken / self.fps               # seconds of video so far (the run may have jumped)
            limit = "" if self.expected is None else f" / {self.expected / self.fps:.1f} s"
            return f"● REC {elapsed:.2f} s{limit}"
        if self._writer is not None:
            return f"encoding {self._writer.count} of {self.taken} frames…"
        return ""

    def _stop_taking(self) -> None:
        if self._taking:
            self._taking = False
            self.frames_wanted.emit(None, None)

    def stop(self, wait: bool = False) -> tuple[Path | None, int, str]:
        """Stop taking frames; the ones taken are still rendered and written (at once with ``wait``, else on the
        timer), then the file is put in place and ``finished`` is emitted. Returns ``(path, frames, error)``
        when waited for, else ``(path, frames taken, '')``."""
        self._stop_taking()
        if self._writer is None:
            return None, 0, ""
        if wait:
            while self._queue:
                self._render_one()
            return self._finish()
        self.status.emit(self._status_text())
        return self._writer.target, self.taken, ""

    def cancel(self) -> None:
        """Stop and delete what was written."""
        self._stop_taking()
        self._queue.clear()
        self._timer.stop()
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        self._close_figure()
        self.status.emit("")

    def _render_some(self) -> None:
        """Render and queue frames for up to a share of a display frame (the GUI stays responsive)."""
        deadline = time.perf_counter() + 0.02
        while self._queue and time.perf_counter() < deadline:
            try:
                self._render_one()
            except Exception as exc:            # reported, and the partial file removed
                self._fail(f"{type(exc).__name__}: {exc}")
                return
        if self._writer is not None:
            self.progress.emit(self._writer.count, self.taken)
            self.status.emit(self._status_text())
            if not self._taking and not self._queue:
                self._finish()

    def _render_one(self) -> None:
        frame = self._queue.popleft()
        view = image_to_rgb(self._viewport.render_image(self.size, frame))
        self._writer.write(compose(view, self._plots_image(frame.t)))

    def _plots_image(self, t: float):
        panel = self._plots
        if not self.plot_keys or panel is None or panel.history is None or panel.layout_spec is None:
            return None
        from studio.qt.window.plots import FigureRenderer
        if self._figure is None or self._figure.layout is not panel.layout_spec:
            self._close_figure()
            width = even_size(int(0.75 * self.size[0]), 16)[0]
            self._figure = FigureRenderer(panel.layout_spec, (width, self.size[1]), self.plot_keys, panel.log,
                                          panel.markers)
            self._figure.layout = panel.layout_spec
        window = panel.window or max(1e-3, t - min(self.t0 or 0.0, t))
        lo = max(0.0, t - window)
        rows = panel.history.between(lo, t)
        rows = rows[rows[:, 0] <= t + 1e-12] if len(rows) else rows
        return image_to_rgb(self._figure.render(rows, None, (lo, max(lo + window, t)), t))

    def _close_figure(self) -> None:
        if self._figure is not None:
            self._figure.close()
            self._figure = None

    def _fail(self, error: str) -> None:
        writer, self._writer = self._writer, None
        self._stop_taking()
        self._queue.clear()
        self._timer.stop()
        self._close_figure()
        if writer is not None:
            writer.abort()
        self.status.emit("")
        self.finished.emit(str(writer.target if writer else ""), error)

    def _finish(self) -> tuple[Path, int, str]:
        writer, self._writer = self._writer, None
        self._timer.stop()
        self._close_figure()
        path, count, error = writer.close()
        self.status.emit("")
        self.finished.emit(str(path), error)
        return path, count, error
