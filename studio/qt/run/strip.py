"""A frame sequence of one interval as a single picture, as papers print a motion (Kearney, Hansen & Cremer fig. 5:
"a series of frames from a single hop"): ``row`` — the frames side by side, each with its simulated time written
small under it; ``overlay`` — a stroboscopic picture, every pose in one frame seen by one fixed camera, earlier
poses fainter.

The frames themselves are the viewport's off-screen pictures (:meth:`studio.qt.viewport.viewport.Viewport.
render_image`), made by ``python -m studio strip`` (:mod:`studio.headless`); this module only lays them out. An
overlay is composited per pixel from the frames and a picture of the background alone (the same camera, the bodies
hidden): where a frame differs from the background it shows the bodies, and that difference is laid over the
picture with the frame's opacity (rising from :data:`FAINTEST` for the first pose to 1 for the last), later poses
over earlier ones.

Thread: GUI (QImage, QPainter).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from studio.qt.run.recording import image_to_rgb

__all__ = ["strip_times", "row_image", "overlay_image", "LAYOUTS", "MAX_FRAMES", "FAINTEST"]

LAYOUTS = ("row", "overlay")
MAX_FRAMES = 64
FAINTEST = 0.3          # the first pose's opacity in an overlay (the last one's is 1)
BAND = (30, 32, 36)     # the caption band under the frames
TEXT = (216, 219, 224)
SEPARATOR = (70, 74, 82)


def strip_times(t0: float, t1: float, n: int) -> list[float]:
    """``n`` (≥ 2) simulated times evenly spaced from ``t0`` to ``t1``, both included."""
    return [t0 + (t1 - t0) * k / (n - 1) for k in range(n)]


def _band_height(font_px: int, lines: int) -> int:
    return int(lines * font_px * 1.45 + 8)


def _font(px: int) -> QFont:
    font = QFont("DejaVu Sans")
    font.setPixelSize(px)
    return font


def _to_image(rgb: np.ndarray) -> QImage:
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w = rgb.shape[:2]
    return QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()


def row_image(frames: list[QImage], labels: list[list[str]]) -> QImage:
    """The frames (all of one size w × h) side by side, N·w wide, with a band under them holding each frame's
    lines of ``labels`` (e.g. its time) centred under it; a thin line between neighbouring frames."""
    if not frames or len(labels) != len(frames):
        raise ValueError("a row needs one label per frame")
    w, h = frames[0].width(), frames[0].height()
    font_px = max(10, min(16, w // 16))
    band = _band_height(font_px, max(len(lines) for lines in labels))
    out = QImage(w * len(frames), h + band, QImage.Format.Format_RGB888)
    out.fill(QColor(*BAND))
    painter = QPainter(out)
    try:
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.setFont(_font(font_px))
        for k, (frame, lines) in enumerate(zip(frames, labels)):
            if (frame.width(), frame.height()) != (w, h):
                raise ValueError("the frames of a row must have one size")
            painter.drawImage(k * w, 0, frame)
            if k:
                painter.fillRect(k * w, 0, 1, h + band, QColor(*SEPARATOR))
            painter.setPen(QColor(*TEXT))
            painter.drawText(QRect(k * w, h + 3, w, band - 3),
                             Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, "\n".join(lines))
    finally:
        painter.end()
    return out


def overlay_image(background: QImage, frames: list[QImage], caption: list[str]) -> QImage:
    """One picture of every frame's bodies over ``background`` (the same camera with the bodies hidden): earlier
    frames fainter (opacity from :data:`FAINTEST` to 1), later over earlier; the lines of ``caption`` in a band
    under it."""
    base = image_to_rgb(background).astype(np.float32)
    out = base.copy()
    n = len(frames)
    for k, frame in enumerate(frames):
        rgb = image_to_rgb(frame).astype(np.float32)
        if rgb.shape != base.shape:
            raise ValueError("the frames of an overlay must have the background's size")
        # how far this pixel is from the background: 0 there, 1 on a body (antialiased edges in between)
        differs = np.clip((np.max(np.abs(rgb - base), axis=2) - 3.0) / 30.0, 0.0, 1.0)
        alpha = (FAINTEST + (1.0 - FAINTEST) * k / max(n - 1, 1)) * differs[..., None]
        out = out * (1.0 - alpha) + rgb * alpha
    picture = _to_image(np.clip(np.rint(out), 0, 255).astype(np.uint8))
    w, h = picture.width(), picture.height()
    font_px = max(11, min(16, w // 60))
    band = _band_height(font_px, len(caption))
    framed = QImage(w, h + band, QImage.Format.Format_RGB888)
    framed.fill(QColor(*BAND))
    painter = QPainter(framed)
    try:
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        painter.drawImage(0, 0, picture)
        painter.setFont(_font(font_px))
        painter.setPen(QColor(*TEXT))
        painter.drawText(QRect(8, h + 3, w - 16, band - 3), Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                         "\n".join(caption))
    finally:
        painter.end()
    return framed
