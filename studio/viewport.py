"""The 3D view of a model: a ground grid, the world axes and every shape as a lit mesh in its colour.

Thread: GUI. :class:`Viewport` is a widget; feed it configurations with :meth:`Viewport.set_configuration` (from
the snapshots the worker sends). Each shape's mesh is uploaded once; a new configuration only moves it
(``setTransform``). The model is frozen and only read here.

Frames: the shapes hang under one group item that turns the world W into the display frame D (up = display +z,
see :mod:`studio.framing`); the grid lies in D's horizontal plane under the scene.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PySide6.QtCore import Qt
from PySide6.QtGui import QMatrix4x4, QVector3D

from .framing import display_rotation, frame_scene, shape_poses
from .meshes import shape_mesh

__all__ = ["Viewport", "BACKGROUND"]

BACKGROUND = (38, 41, 46)          # dark slate, RGB 0–255
GRID_COLOR = (190, 195, 205, 70)
AXIS_COLORS = np.array([[0.90, 0.25, 0.25, 1.0], [0.30, 0.80, 0.35, 1.0], [0.25, 0.45, 1.00, 1.0]])  # x y z

# Lambert shading from a key and a fill light fixed to the camera (eye coordinates: x right, y up, z towards the
# viewer), an ambient term and a small Blinn specular highlight; colour from the mesh (the shape's rgba).
LIT = shaders.ShaderProgram("limbstudio-lit", [
    shaders.VertexShader("""
        uniform mat4 u_mvp;
        uniform mat3 u_normal;
        attribute vec4 a_position;
        attribute vec3 a_normal;
        attribute vec4 a_color;
        varying vec4 v_color;
        varying vec3 v_normal;
        void main() {
            v_normal = normalize(u_normal * a_normal);
            v_color = a_color;
            gl_Position = u_mvp * a_position;
        }
    """),
    shaders.FragmentShader("""
        #ifdef GL_ES
        precision mediump float;
        #endif
        varying vec4 v_color;
        varying vec3 v_normal;
        void main() {
            vec3 n = normalize(v_normal);
            vec3 key = normalize(vec3(0.35, 0.6, 0.75));
            vec3 fill = normalize(vec3(-0.7, -0.2, 0.45));
            float diffuse = 0.72 * max(dot(n, key), 0.0) + 0.22 * max(dot(n, fill), 0.0);
            float specular = 0.25 * pow(max(dot(n, normalize(key + vec3(0.0, 0.0, 1.0))), 0.0), 40.0);
            vec3 rgb = v_color.rgb * (0.3 + diffuse) + vec3(specular);
            gl_FragColor = vec4(min(rgb, vec3(1.0)), v_color.a);
        }
    """),
])


def _matrix(R: np.ndarray, p: np.ndarray) -> QMatrix4x4:
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = R, p
    return QMatrix4x4(*X.ravel().tolist())   # QMatrix4x4 takes its 16 values row by row


class Viewport(gl.GLViewWidget):
    """GUI thread. Shows ``model`` at a configuration; framed on the scene until the user moves the camera
    (key F frames it again)."""

    def __init__(self, model, parent=None):
        super().__init__(parent)
        self.setMinimumSize(320, 240)
        self.setBackgroundColor(BACKGROUND)
        self._model = model
        self._auto_frame = True
        self._framing = frame_scene(model)

        self._world = GLGraphicsItem()              # world W → display D; everything of the world hangs here
        self._world.setTransform(_matrix(display_rotation(model.gravity), np.zeros(3)))
        self.addItem(self._world)

        self._grid = gl.GLGridItem(color=GRID_COLOR)
        self.addItem(self._grid)
        self._axes = gl.GLLinePlotItem(mode="lines", width=2.0, antialias=True, parentItem=self._world)

        self._meshes = []
        for shape in model.shapes:
            rgba = tuple(float(c) for c in shape.rgba)
            item = gl.GLMeshItem(meshdata=shape_mesh(shape), color=rgba, smooth=True, shader=LIT,
                                 glOptions="opaque" if rgba[3] >= 1.0 else "translucent", parentItem=self._world)
            self._meshes.append(item)

        self._place_grid_and_axes()
        self.frame_scene()
        self.set_configuration(model.q0)

    @property
    def framing(self):
        """The current :class:`studio.framing.Framing` (camera, floor, axes)."""
        return self._framing

    @property
    def shape_items(self) -> tuple:
        """The mesh item of each of the model's shapes, in ``model.shapes`` order."""
        return tuple(self._meshes)

    def set_configuration(self, q) -> None:
        """Move every shape to its pose at configuration ``q`` (nq)."""
        for item, X_WS in zip(self._meshes, shape_poses(self._model, q)):
            item.setTransform(_matrix(X_WS[:3, :3], X_WS[:3, 3]))

    def frame_scene(self) -> None:
        """Point the camera at the whole scene, fitted to the current width and height."""
        aspect = self.width() / self.height() if self.height() > 0 else 4 / 3
        self._framing = f = frame_scene(self._model, aspect=aspect)
        self.setCameraPosition(pos=QVector3D(*f.center), distance=f.distance, elevation=f.elevation,
                               azimuth=f.azimuth)
        self._auto_frame = True

    def _place_grid_and_axes(self) -> None:
        f = self._framing
        self._grid.setSize(f.grid_size[0], f.grid_size[1], 1)
        self._grid.setSpacing(f.grid_spacing, f.grid_spacing, 1)
        self._grid.resetTransform()
        self._grid.translate(round(f.center[0] / f.grid_spacing) * f.grid_spacing,
                             round(f.center[1] / f.grid_spacing) * f.grid_spacing, f.floor_z)
        ends = np.zeros((6, 3))
        ends[[1, 3, 5], [0, 1, 2]] = f.axis_length
        self._axes.setData(pos=ends, color=np.repeat(AXIS_COLORS, 2, axis=0))

    # ---- the camera stays framed until the user takes it over --------------------------------------------
    def resizeGL(self, w: int, h: int) -> None:
        super().resizeGL(w, h)
        if self._auto_frame:
            self.frame_scene()

    def mousePressEvent(self, ev) -> None:
        self._auto_frame = False
        super().mousePressEvent(ev)

    def wheelEvent(self, ev) -> None:
        self._auto_frame = False
        super().wheelEvent(ev)

    def keyPressEvent(self, ev) -> None:
        if ev.key() == Qt.Key.Key_F:
            self.frame_scene()
            ev.accept()
            return
        super().keyPressEvent(ev)
