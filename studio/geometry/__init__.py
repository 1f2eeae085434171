"""What the viewport draws and picks, as plain NumPy: poses and camera framing (:mod:`.framing`), the glyphs'
vertex arrays — arrows, coils, crosses, frames (:mod:`.glyphs`) — and rays through the mouse and what they hit
(:mod:`.picking`). Any thread; the OpenGL side is :mod:`studio.qt.viewport`."""
