"""The 3D view of a model: a ground grid, the world axes, every shape as a lit mesh in its colour, and the overlays
of :mod:`studio.overlays` (nails, springs, force and velocity arrows, link frames, broken constraints).

Thread: GUI. :class:`Viewport` is a widget; feed it snapshots with :meth:`Viewport.show_snapshot` (or bare
configurations with :meth:`Viewport.set_configuration`). Each shape's mesh is uploaded once per model; a new
configuration only moves it (``setTransform``). Models are frozen and only read here.

Mouse: left drag orbits, Shift + left drag or middle drag pans, right drag or the wheel zooms; a click selects a
body or a nail (``picked``); Ctrl + left drag on a body pulls it with a spring towards the mouse
(``pull_requested`` / ``pull_released``: the target is where the mouse ray meets the plane through the grabbed
point facing the camera); dragging a nail moves it (``nail_dragged``). Key F frames the scene.

Frames: the shapes hang under one group item that turns the world W into the display frame D (up = display +z,
see :mod:`studio.framing`); the grid lies in D's horizontal plane under the scene.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph.opengl as gl
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QMatrix4x4, QVector3D

import core

from .framing import display_rotation, frame_scene, shape_poses
from .meshes import shape_half_extents, shape_mesh
from .overlays import Overlays
from .picking import hit_sphere, pick_shape, ray_plane, ray_through

__all__ = ["Viewport", "BACKGROUND", "LIT"]

BACKGROUND = (38, 41, 46)          # dark slate, RGB 0–255
GRID_COLOR = (190, 195, 205, 70)
AXIS_COLORS = np.array([[0.90, 0.25, 0.25, 1.0], [0.30, 0.80, 0.35, 1.0], [0.25, 0.45, 1.00, 1.0]])  # x y z
CLICK_SLOP = 4                     # pixels the mouse may move between press and release of a click
PULL_STIFFNESS = 60.0              # N/m per kg of the scene's mass; critically damped-ish

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


def _numpy(m: QMatrix4x4) -> np.ndarray:
    return np.array(m.copyDataTo(), dtype=float).reshape(4, 4)   # row by row


class Viewport(gl.GLViewWidget):
    """GUI thread. Shows a model at a configuration; framed on the scene until the user moves the camera.

    Signals: ``picked(object)`` — ``("body", link name)``, ``("constraint", name)`` or None after a click;
    ``pull_requested(body name, point in body frame, world target, stiffness, damping)``; ``pull_released()``;
    ``nail_dragged(constraint name, world position)``."""

    picked = Signal(object)
    pull_requested = Signal(str, object, object, float, float)
    pull_released = Signal()
    nail_dragged = Signal(str, object)

    def __init__(self, model, parent=None):
        super().__init__(parent)
        self.setMinimumSize(320, 240)
        self.setBackgroundColor(BACKGROUND)
        self._model = None
        self._q = None
        self._meshes: list = []
        self._auto_frame = True
        self._drag = None                           # (mode, data) while a press is in progress
        self._press, self._moved = (0.0, 0.0), False
        self._selected_link: int | None = None
        self.overlays: Overlays | None = None
        self._overlay_visible: dict[str, bool] = {}
        self.paint_started: float | None = None     # perf_counter() when the last paintGL began

        self._world = GLGraphicsItem()              # world W → display D; everything of the world hangs here
        self.addItem(self._world)
        self._grid = gl.GLGridItem(color=GRID_COLOR)
        self.addItem(self._grid)
        self._axes = gl.GLLinePlotItem(mode="lines", width=2.0, antialias=True, parentItem=self._world)
        self.set_model(model, frame=True)

    # ---- the model -----------------------------------------------------------------------------------------
    @property
    def model(self):
        return self._model

    @property
    def framing(self):
        """The current :class:`studio.framing.Framing` (camera, floor, axes)."""
        return self._framing

    @property
    def shape_items(self) -> tuple:
        """The mesh item of each of the model's shapes, in ``model.shapes`` order."""
        return tuple(self._meshes)

    def set_model(self, model, frame: bool = False) -> None:
        """Show ``model`` (new meshes); ``frame`` points the camera at it, else the camera stays."""
        old = self._model
        self._model = model
        self._R_DW = display_rotation(model.gravity)
        self._world.setTransform(_matrix(self._R_DW, np.zeros(3)))
        for item in self._meshes:
            item.setParentItem(None)
        self._meshes = []
        for shape in model.shapes:
            rgba = tuple(float(c) for c in shape.rgba)
            item = gl.GLMeshItem(meshdata=shape_mesh(shape), color=rgba, smooth=True, shader=LIT,
                                 glOptions="opaque" if rgba[3] >= 1.0 else "translucent", parentItem=self._world)
            self._meshes.append(item)
        self._framing = frame_scene(model, aspect=self._aspect())
        self._place_grid_and_axes()
        if self.overlays is not None:
            self._overlay_visible = dict(self.overlays.visible)
            self.overlays.remove()
        scale = float(np.max(np.subtract(self._framing.hi, self._framing.lo)))
        weight = float(np.sum(model.mass)) * max(float(np.linalg.norm(model.gravity)), 1.0)
        self.overlays = Overlays(self._world, max(scale, 1e-3), max(weight, 1e-6), LIT)
        self.overlays.visible.update(self._overlay_visible)
        if frame or old is None:
            self.frame_scene()
        q = self._q if self._q is not None and len(self._q) == model.nq and old is not None else model.q0
        self.set_configuration(q)
        self.update()

    def show_snapshot(self, snap) -> None:
        """Show what a :class:`studio.messages.Snapshot` holds (its model, configuration and overlays)."""
        if snap.model is not None and snap.model is not self._model:
            self.set_model(snap.model)
        if len(snap.q) != self._model.nq:
            return
        self.set_configuration(snap.q)
        if self.overlays is not None:
            self.overlays.update(snap.overlay)

    def set_configuration(self, q) -> None:
        """Move every shape to its pose at configuration ``q`` (nq)."""
        self._q = np.asarray(q, dtype=float)
        self._poses = shape_poses(self._model, self._q)
        for item, X_WS in zip(self._meshes, self._poses):
            item.setTransform(_matrix(X_WS[:3, :3], X_WS[:3, 3]))
        self._outline()
        self.update()

    def set_overlay_visible(self, kind: str, on: bool) -> None:
        self.overlays.set_visible(kind, on)
        self.update()

    # ---- selection -----------------------------------------------------------------------------------------
    def highlight(self, link: int | None = None, constraint: int | None = None) -> None:
        """Outline the shapes of ``link`` and colour the nail of ``constraint`` (None: nothing)."""
        self._selected_link = link
        self.overlays.selected_constraint = constraint
        self._outline()
        if self.overlays.last is not None:
            self.overlays.update(self.overlays.last)
        self.update()

    def _outline(self) -> None:
        if self.overlays is None:
            return
        boxes = [(X, shape_half_extents(s)) for s, X in zip(self._model.shapes, self._poses)
                 if s.link == self._selected_link]
        self.overlays.outline(boxes)

    # ---- camera --------------------------------------------------------------------------------------------
    def _aspect(self) -> float:
        return self.width() / self.height() if self.height() > 0 else 4 / 3

    def frame_scene(self) -> None:
        """Point the camera at the whole scene, fitted to the current width and height."""
        self._framing = f = frame_scene(self._model, aspect=self._aspect())
        self.setCameraPosition(pos=QVector3D(*f.center), distance=f.distance, elevation=f.elevation,
                               azimuth=f.azimuth)
        self._auto_frame = True

    def frame_selection(self) -> bool:
        """Point the camera at the selected body (False if nothing is selected)."""
        boxes = [(X, shape_half_extents(s)) for s, X in zip(self._model.shapes, self._poses)
                 if s.link == self._selected_link]
        if not boxes:
            return False
        centres = np.array([self._R_DW @ X[:3, 3] for X, _ in boxes])
        radius = max(float(np.linalg.norm(h)) for _, h in boxes) + float(np.max(np.ptp(centres, axis=0)))
        self.setCameraPosition(pos=QVector3D(*centres.mean(axis=0)),
                               distance=max(radius, 1e-3) / math.tan(math.radians(self.opts["fov"]) / 2) * 1.3)
        self._auto_frame = False
        return True

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

    def paintGL(self, *args, **kwargs) -> None:
        self.paint_started = time.perf_counter()
        super().paintGL(*args, **kwargs)

    def resizeGL(self, w: int, h: int) -> None:
        super().resizeGL(w, h)
        if self._auto_frame:
            self.frame_scene()

    # ---- picking -------------------------------------------------------------------------------------------
    def ray_at(self, x: float, y: float):
        """``(origin, direction)`` in world coordinates of the ray through widget pixel (x, y)."""
        w, h = max(self.width(), 1), max(self.height(), 1)
        region = (0, 0, w, h)
        o_D, d_D = ray_through(2.0 * x / w - 1.0, 1.0 - 2.0 * y / h, _numpy(self.projectionMatrix(region, region)),
                               _numpy(self.viewMatrix()))
        return self._R_DW.T @ o_D, self._R_DW.T @ d_D

    def screen_position(self, point_W) -> tuple[float, float]:
        """Widget pixel (x, y) where the world point ``point_W`` is drawn."""
        w, h = max(self.width(), 1), max(self.height(), 1)
        region = (0, 0, w, h)
        clip = _numpy(self.projectionMatrix(region, region)) @ _numpy(self.viewMatrix()) @ np.append(
            self._R_DW @ np.asarray(point_W, float), 1.0)
        ndc = clip[:3] / clip[3]
        return (ndc[0] + 1.0) * w / 2.0, (1.0 - ndc[1]) * h / 2.0

    def hit(self, x: float, y: float):
        """What is under pixel (x, y): ``("nail", constraint index, point)``, ``("body", link, point)`` or None."""
        o, d = self.ray_at(x, y)
        best = None
        ov = self.overlays.last if self.overlays is not None else None
        if ov is not None and self.overlays.visible["nails"]:
            for i in ov.nail_indices():
                t = hit_sphere(o, d, ov.point_b[i], 1.5 * self.overlays.nail_radius)
                if t is not None and (best is None or t < best[0]):
                    best = (t, "nail", i)
        shape = pick_shape(o, d, self._model.shapes, self._poses)
        if shape is not None and (best is None or shape[1] < best[0]):
            best = (shape[1], "body", self._model.shapes[shape[0]].link)
        if best is None:
            return None
        t, kind, index = best
        return kind, index, o + t * d

    # ---- mouse ---------------------------------------------------------------------------------------------
    def mousePressEvent(self, ev) -> None:
        pos = ev.position()
        self._press = (pos.x(), pos.y())
        self._moved = False
        self._drag = None
        if ev.button() == Qt.MouseButton.LeftButton:
            found = self.hit(pos.x(), pos.y())
            ctrl = bool(ev.modifiers() & Qt.KeyboardModifier.ControlModifier)
            if found is not None and found[0] == "nail":
                self._drag = ("nail", self.overlays.last.names[found[1]], found[2], self.ray_at(*self._press)[1])
            elif found is not None and found[0] == "body" and ctrl:
                self._start_pull(found[1], found[2])
        if self._drag is None:
            self._auto_frame = False
        super().mousePressEvent(ev)

    def _start_pull(self, link: int, x_W: np.ndarray) -> None:
        R_WL, p_WL, _ = core.forward_kinematics(self._model, self._q)
        r = R_WL[link].T @ (x_W - p_WL[link])
        mass = max(float(np.sum(self._model.mass)), 1e-6)
        k = PULL_STIFFNESS * mass
        c = 2.0 * math.sqrt(k * mass) * 0.7
        self._drag = ("pull", self._model.link_names[link], r, x_W, self.ray_at(*self._press)[1], k, c)
        self.pull_requested.emit(self._model.link_names[link], r, x_W, k, c)

    def mouseMoveEvent(self, ev) -> None:
        pos = ev.position()
        if math.hypot(pos.x() - self._press[0], pos.y() - self._press[1]) > CLICK_SLOP:
            self._moved = True
        if self._drag is not None:
            o, d = self.ray_at(pos.x(), pos.y())
            if self._drag[0] == "nail":
                _, name, point, normal = self._drag
                target = ray_plane(o, d, point, normal)
                if target is not None:
                    self.nail_dragged.emit(name, target)
            else:
                _, body, r, point, normal, k, c = self._drag
                target = ray_plane(o, d, point, normal)
                if target is not None:
                    self.pull_requested.emit(body, r, target, k, c)
            ev.accept()
            return
        buttons, mods = ev.buttons(), ev.modifiers()
        if buttons == Qt.MouseButton.LeftButton and mods & Qt.KeyboardModifier.ShiftModifier:
            diff = pos - self.mousePos
            self.mousePos = pos
            self.pan(diff.x(), diff.y(), 0, relative="view")
        elif buttons == Qt.MouseButton.RightButton:
            diff = pos - self.mousePos
            self.mousePos = pos
            self.opts["distance"] *= 1.005 ** diff.y()
            self.update()
        elif buttons == Qt.MouseButton.LeftButton and mods & Qt.KeyboardModifier.ControlModifier:
            self.mousePos = pos           # Ctrl + drag off any body: nothing (pyqtgraph would pan)
        else:
            super().mouseMoveEvent(ev)

    def mouseReleaseEvent(self, ev) -> None:
        drag, self._drag = self._drag, None
        if drag is not None and drag[0] == "pull":
            self.pull_released.emit()
        elif drag is None and not self._moved and ev.button() == Qt.MouseButton.LeftButton:
            found = self.hit(ev.position().x(), ev.position().y())
            if found is None:
                self.picked.emit(None)
            elif found[0] == "nail":
                self.picked.emit(("constraint", self.overlays.last.names[found[1]]))
            else:
                self.picked.emit(("body", self._model.link_names[found[1]]))
        elif drag is not None and drag[0] == "nail" and not self._moved:
            self.picked.emit(("constraint", drag[1]))
        super().mouseReleaseEvent(ev)

    def wheelEvent(self, ev) -> None:
        self._auto_frame = False
        super().wheelEvent(ev)

    def keyPressEvent(self, ev) -> None:
        if ev.key() == Qt.Key.Key_F and not ev.modifiers():
            self.frame_scene()
            ev.accept()
            return
        super().keyPressEvent(ev)
