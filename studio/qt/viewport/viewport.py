"""The 3D view of a model: a ground grid, the world axes, every shape as a lit mesh in its colour (all of them in
one draw call, :mod:`studio.qt.viewport.shapes_item`), and the overlays of :mod:`studio.qt.viewport.overlays` (nails, springs and their
ends, force and velocity arrows, link frames, broken constraints), with a legend of what the arrows mean, and
optionally the frame rate and the real-time factor (:meth:`Viewport.set_rate_text`; labels over the GL widget).

Thread: GUI. :class:`Viewport` is a widget; feed it snapshots with :meth:`Viewport.show_snapshot` or draw lists
(:class:`core.drawing.DrawList`, made on the worker: the GUI computes no kinematics to draw a state) with
:meth:`Viewport.show_draw`; bare configurations with :meth:`Viewport.set_configuration`. Meshes are uploaded once
per model; a new state only sends the shapes' poses. :meth:`Viewport.render_image` draws any draw list off
screen at any size (recordings, screenshots).

Mouse: left drag orbits (0.4° a pixel), Shift + left drag or middle drag pans, right drag or the wheel zooms. A
click selects a body, a nail or a spring (``picked``). Handles — nails and spring ends — are picked before the
bodies they sit on: within :data:`HANDLE_PX` pixels of one, the mouse takes it. Dragging a nail moves it in the
run (``nail_dragged``) and, let go, puts it there (``nail_dropped``); dragging a spring's world end moves it
(``spring_end_moved``); dragging a spring's body end and letting go over a body attaches it to the point under the
mouse (``spring_end_attached``; in empty space, end b becomes a world point). Ctrl + left drag on a body pulls
it with a spring towards the mouse (``pull_requested`` / ``pull_released``: the target is where the mouse ray
meets the plane through the grabbed point facing the camera). Hovering marks what a click would take. Keys: F
frames the scene as it is now.

Frames: the shapes hang under one group item that turns the world W into the display frame D (up = display +z,
see :mod:`studio.geometry.framing`); the grid lies in D's horizontal plane under the scene. With :meth:`set_follow` the
camera looks at a body wherever it goes.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCursor, QMatrix4x4, QOpenGLContext, QVector3D
from PySide6.QtOpenGL import QOpenGLFramebufferObject, QOpenGLFramebufferObjectFormat
from PySide6.QtWidgets import QLabel

import core

from studio.geometry.framing import display_rotation, frame_scene
from studio.qt.viewport.meshes import shape_half_extents, shape_mesh, vertex_normals
from studio.qt.viewport.overlays import Overlays
from studio.geometry.picking import hit_sphere, pick_shape, ray_plane, ray_through
from core.drawing import shape_poses
from studio.qt.viewport.shapes_item import LIT_FRAGMENT, MAX_SHAPES, ShapesItem

__all__ = ["Viewport", "BACKGROUND", "LIT", "HANDLE_PX", "ORBIT_DEG_PER_PX"]

BACKGROUND = (38, 41, 46)          # dark slate, RGB 0–255
GRID_COLOR = (190, 195, 205, 70)
AXIS_COLORS = np.array([[0.90, 0.25, 0.25, 1.0], [0.30, 0.80, 0.35, 1.0], [0.25, 0.45, 1.00, 1.0]])  # x y z
CLICK_SLOP = 4                     # pixels the mouse may move between press and release of a click
HANDLE_PX = 12                     # pixels: a nail or spring end this close to the mouse is picked before bodies
ORBIT_DEG_PER_PX = 0.4             # degrees the camera turns per pixel of mouse motion (pyqtgraph: 1)
PULL_STIFFNESS = 60.0              # N/m per kg of the scene's mass; critically damped-ish
HOVER_TINT = (0.16, 0.16, 0.12)    # added to the colour of the body under the mouse
LABEL_STYLE = ("QLabel { color: #d8dbe0; background: rgba(30, 32, 36, 170); border-radius: 3px; "
               "padding: 3px 6px; font-size: 8.5pt; }")
REC_STYLE = ("QLabel { color: #ffffff; background: rgba(190, 30, 30, 200); border-radius: 3px; "
             "padding: 3px 8px; font-weight: bold; }")

# The overlays' meshes, lit as the shapes are (:data:`~studio.qt.viewport.shapes_item.LIT_FRAGMENT`); colour from
# the mesh (the overlays' rgba).
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
    shaders.FragmentShader(LIT_FRAGMENT),
])


def _matrix(R: np.ndarray, p: np.ndarray) -> QMatrix4x4:
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = R, p
    return QMatrix4x4(*X.ravel().tolist())   # QMatrix4x4 takes its 16 values row by row


def _numpy(m: QMatrix4x4) -> np.ndarray:
    return np.array(m.copyDataTo(), dtype=float).reshape(4, 4)   # row by row


class Viewport(gl.GLViewWidget):
    """GUI thread. Shows a model at a configuration; framed on the scene until the user moves the camera.

    Signals: ``picked(object)`` — ``("body", body name)`` (a body merged into a link is picked by its own name),
    ``("constraint", name)``, ``("force", spring name)`` or
    None after a click; ``pull_requested(body name, point in body frame, world target, stiffness, damping)``;
    ``pull_released()``; ``nail_dragged(constraint name, world position)``; ``spring_end_moved(spring, end
    "a"/"b", world position)``; ``spring_end_attached(spring, end, body, point in body frame)``;
    ``drag_finished()`` after a spring drag; ``nail_dropped(constraint name, world position)`` when a dragged nail
    is let go."""

    picked = Signal(object)
    pull_requested = Signal(str, object, object, float, float)
    pull_released = Signal()
    nail_dragged = Signal(str, object)
    nail_dropped = Signal(str, object)
    spring_end_moved = Signal(str, str, object)
    spring_end_attached = Signal(str, str, str, object)
    drag_finished = Signal()

    def __init__(self, model, parent=None):
        super().__init__(parent)
        self.setMinimumSize(320, 240)
        self.setBackgroundColor(BACKGROUND)
        self.setMouseTracking(True)
        self._model = None
        self._q = None
        self._poses = np.zeros((0, 4, 4))
        self._items: list[tuple[ShapesItem, list]] = []      # (item, shape indices)
        self.collision_shown = False                          # shapes that only touch: drawn on request
        self._auto_frame = True
        self._drag = None                           # (mode, data) while a press is in progress
        self._press, self._moved = (0.0, 0.0), False
        self._selected_body: str | None = None       # what is outlined: a document body's shapes
        self._selected_link: int | None = None       # and the link it moves with (what L follows)
        self._hovered = None
        self._follow: int | None = None
        self._hidden_bodies = None                  # [(item, was visible)] while set_bodies_visible(False)
        self.overlays: Overlays | None = None
        self._overlay_visible: dict[str, bool] = {}
        self.paint_started: float | None = None     # perf_counter() when the last paintGL began
        self.frames = 0                             # paintGL calls so far (the frame rate shown)

        self._world = GLGraphicsItem()              # world W → display D; everything of the world hangs here
        self.addItem(self._world)
        self._grid = gl.GLGridItem(color=GRID_COLOR)
        self.addItem(self._grid)
        self._axes = gl.GLLinePlotItem(mode="lines", width=2.0, antialias=True, parentItem=self._world)
        self.legend_label = QLabel(self)
        self.legend_label.setStyleSheet(LABEL_STYLE)
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)
        self.legend_label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.rec_label = QLabel(self)
        self.rec_label.setStyleSheet(REC_STYLE)
        self.rec_label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.rec_label.hide()
        self.rate_label = QLabel(self)
        self.rate_label.setObjectName("rate_overlay")
        self.rate_label.setStyleSheet(LABEL_STYLE)
        self.rate_label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.rate_label.hide()
        self.set_model(model, frame=True)

    # ---- the model -----------------------------------------------------------------------------------------
    @property
    def model(self):
        return self._model

    @property
    def framing(self):
        """The current :class:`studio.geometry.framing.Framing` (camera, floor, axes)."""
        return self._framing

    @property
    def shape_items(self) -> tuple:
        """The GL items that draw the shapes (each up to :data:`~studio.qt.viewport.shapes_item.MAX_SHAPES` of them)."""
        return tuple(item for item, _ in self._items)

    def set_collision_shown(self, on: bool) -> None:
        """Draw the shapes that only touch (a robot's collision stand-ins) too, or not (View ▸ Collision Shapes)."""
        if bool(on) != self.collision_shown:
            self.collision_shown = bool(on)
            if self._model is not None:
                self.set_model(self._model)

    def set_model(self, model, frame: bool = False) -> None:
        """Show ``model`` (new meshes); ``frame`` points the camera at it, else the camera stays."""
        old = self._model
        self._model = model
        self._R_DW = display_rotation(model.gravity)
        self._world.setTransform(_matrix(self._R_DW, np.zeros(3)))
        for item, _ in self._items:
            item.setParentItem(None)
            view = item.view()
            if view is not None:
                view.removeItem(item)
        self._items = []
        groups: dict[bool, list] = {True: [], False: []}
        for k, shape in enumerate(model.shapes):
            if shape.purpose != "collision" or self.collision_shown:
                groups[float(shape.rgba[3]) >= 1.0].append(k)
        for opaque, indices in groups.items():
            for start in range(0, len(indices), MAX_SHAPES):
                chunk = indices[start:start + MAX_SHAPES]
                meshes = []
                for k in chunk:
                    md = shape_mesh(model.shapes[k])
                    meshes.append((md.vertexes(), md.faces(), vertex_normals(md.vertexes(), md.faces()),
                                   tuple(model.shapes[k].rgba)))
                item = ShapesItem(meshes, parentItem=self._world, glOptions="opaque" if opaque else "translucent")
                self._items.append((item, chunk))
        self._hovered = None
        self._follow = None if old is None or self._follow is None or self._follow >= model.n_links \
            else self._follow
        follow = getattr(getattr(getattr(model, "spec", None), "view", None), "follow", None)
        if frame and follow in model.body_names:              # the scene asks the camera to follow a body
            self._follow = model.link_index(follow)
        self._framing = frame_scene(model, aspect=self._aspect())
        self._place_grid_and_axes()
        if self.overlays is not None:
            self._overlay_visible = dict(self.overlays.visible)
            self.overlays.remove()
        scale = float(np.max(np.subtract(self._framing.hi, self._framing.lo)))
        weight = float(np.sum(model.mass)) * max(float(np.linalg.norm(model.gravity)), 1.0)
        self.overlays = Overlays(self._world, max(scale, 1e-3), max(weight, 1e-6), LIT)
        self.overlays.visible.update(self._overlay_visible)
        self.legend_label.setText(self.overlays.legend(model))
        self._legend_wanted = getattr(self, "_legend_wanted", True)
        self.legend_label.setVisible(self._legend_wanted and bool(self.legend_label.text()))
        self._place_labels()
        if frame or old is None:
            self.frame_scene(initial=True)
        q = self._q if self._q is not None and len(self._q) == model.nq and old is not None else model.q0
        self.set_configuration(q)
        self.update()

    def show_snapshot(self, snap) -> None:
        """Show what a :class:`studio.run.messages.Snapshot` holds (its model, configuration and draw list)."""
        if snap.model is not None and snap.model is not self._model:
            self.set_model(snap.model)
        if len(snap.q) != self._model.nq:
            return
        self._q = np.asarray(snap.q, dtype=float)
        if snap.draw is not None and snap.draw.shape_poses is not None:
            self.show_draw(snap.draw)
        else:
            self.set_configuration(snap.q)
            if self.overlays is not None:
                self.overlays.update(snap.draw)

    def show_draw(self, draw) -> None:
        """Show a :class:`core.drawing.DrawList` (shape poses and overlays) of the current model."""
        if draw.shape_poses is not None and len(draw.shape_poses) == len(self._model.shapes):
            self._set_poses(draw.shape_poses)
        if self.overlays is not None:
            self.overlays.update(draw)
        if self._follow is not None and self._follow < len(draw.link_p):
            c = self._R_DW @ np.asarray(draw.link_p[self._follow], float)
            self.opts["center"] = QVector3D(*c)
            self._grid_under(c)                               # the ground stays under a body that travels
        self.update()

    def _grid_under(self, c) -> None:
        """Move the grid, by whole cells, to lie under the display point ``c``."""
        f = self._framing
        cell = (round(c[0] / f.grid_spacing), round(c[1] / f.grid_spacing))
        if cell != getattr(self, "_grid_cell", None):
            self._grid_cell = cell
            self._grid.resetTransform()
            self._grid.translate(cell[0] * f.grid_spacing, cell[1] * f.grid_spacing, f.floor_z)

    def set_configuration(self, q) -> None:
        """Move every shape to its pose at configuration ``q`` (nq): forward kinematics on this thread, for a
        state that did not come with a draw list."""
        self._q = np.asarray(q, dtype=float)
        R_WL, p_WL, _ = core.forward_kinematics(self._model, self._q)
        self._set_poses(shape_poses(self._model, R_WL, p_WL))
        self.update()

    def _set_poses(self, poses) -> None:
        self._poses = np.asarray(poses, dtype=float)
        for item, chunk in self._items:
            item.set_poses(self._poses[chunk])
        self._outline()

    def set_overlay_visible(self, kind: str, on: bool) -> None:
        self.overlays.set_visible(kind, on)
        self.update()

    def set_legend_visible(self, on: bool) -> None:
        """Show the legend of arrows and marks (when the scene has any)."""
        self._legend_wanted = bool(on)
        self.legend_label.setVisible(self._legend_wanted and bool(self.legend_label.text()))

    def set_recording_text(self, text: str) -> None:
        """Show ``text`` in the red recording badge (empty: hide it). The badge is never in a recording."""
        self.rec_label.setText(text)
        self.rec_label.setVisible(bool(text))
        self.rec_label.adjustSize()
        self._place_labels()

    def set_rate_text(self, text: str) -> None:
        """Show ``text`` (the frame rate, the real-time factor) at the top left (empty: hide it)."""
        self.rate_label.setText(text)
        self.rate_label.setVisible(bool(text))
        self.rate_label.adjustSize()

    def _place_labels(self) -> None:
        self.legend_label.setWordWrap(True)
        self.legend_label.setFixedWidth(max(160, min(560, self.width() - 16)))
        self.legend_label.setFixedHeight(max(0, self.legend_label.heightForWidth(self.legend_label.width())))
        self.legend_label.move(8, max(0, self.height() - self.legend_label.height() - 8))
        self.rec_label.move(max(0, self.width() - self.rec_label.width() - 8), 8)
        self.rate_label.move(8, 8)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        self._place_labels()

    # ---- selection and hover -------------------------------------------------------------------------------
    def highlight(self, body: str | None = None, constraint: int | None = None) -> None:
        """Outline the shapes of document body ``body`` (a link or a body merged into one) and colour the nail of
        ``constraint`` (None: nothing)."""
        known = body is not None and body in self._model.body_names
        self._selected_body = body if known else None
        self._selected_link = self._model.link_index(body) if known else None
        self.overlays.selected_constraint = constraint
        self._outline()
        if self.overlays.last is not None:
            self.overlays.update(self.overlays.last)
        self.update()

    def _outline(self) -> None:
        if self.overlays is None or len(self._poses) != len(self._model.shapes):
            return
        boxes = [(X, shape_half_extents(s)) for s, X in zip(self._model.shapes, self._poses)
                 if s.body == self._selected_body]
        self.overlays.outline(boxes)

    def _set_hover(self, found) -> None:
        """Mark what a click at the mouse would take: a handle (nail, spring end) or a body."""
        body = found[3] if found is not None and found[0] == "body" else None
        key = None if found is None else (found[0], found[1] if body is None else body)
        if key == self._hovered:
            return
        self._hovered = key
        for item, chunk in self._items:
            item.set_tint([HOVER_TINT if body is not None and self._model.shapes[k].body == body else (0, 0, 0)
                           for k in chunk])
        if found is not None and found[0] in ("nail", "spring"):
            radius = self.overlays.nail_radius if found[0] == "nail" else self.overlays.end_radius
            self.overlays.mark_hover(found[2], radius)
            self.setCursor(QCursor(Qt.CursorShape.OpenHandCursor))
        else:
            self.overlays.mark_hover(None)
            self.setCursor(QCursor(Qt.CursorShape.PointingHandCursor if found is not None
                                   else Qt.CursorShape.ArrowCursor))
        self.update()

    def leaveEvent(self, ev) -> None:
        if self._drag is None:
            self._set_hover(None)
        super().leaveEvent(ev)

    # ---- camera --------------------------------------------------------------------------------------------
    def _aspect(self) -> float:
        return self.width() / self.height() if self.height() > 0 else 4 / 3

    def frame_scene(self, initial: bool = False) -> None:
        """Point the camera at the whole scene as it is now (``initial``: as it starts), fitted to the current
        width and height."""
        q = None if initial or self._q is None or len(self._q) != self._model.nq else self._q
        self._framing = f = frame_scene(self._model, q, aspect=self._aspect())
        self.setCameraPosition(pos=QVector3D(*f.center), distance=f.distance, elevation=f.elevation,
                               azimuth=f.azimuth)
        self._auto_frame = True

    def frame_selection(self) -> bool:
        """Point the camera at the selected body (False if nothing is selected)."""
        boxes = [(X, shape_half_extents(s)) for s, X in zip(self._model.shapes, self._poses)
                 if s.body == self._selected_body]
        if not boxes:
            return False
        centres = np.array([self._R_DW @ X[:3, 3] for X, _ in boxes])
        radius = max(float(np.linalg.norm(h)) for _, h in boxes) + float(np.max(np.ptp(centres, axis=0)))
        self.setCameraPosition(pos=QVector3D(*centres.mean(axis=0)),
                               distance=max(radius, 1e-3) / math.tan(math.radians(self.opts["fov"]) / 2) * 1.3)
        self._auto_frame = False
        return True

    def set_follow(self, link: int | None) -> None:
        """Keep the camera on ``link`` wherever it goes (None: stay put)."""
        self._follow = link
        if link is not None:
            self._auto_frame = False
            last = self.overlays.last if self.overlays is not None else None
            if last is not None and link < len(last.link_p):
                self.opts["center"] = QVector3D(*(self._R_DW @ np.asarray(last.link_p[link], float)))
                self.update()

    def fix_camera(self, framing) -> None:
        """Hold the camera on ``framing`` (a :class:`studio.geometry.framing.Framing`, e.g. of a whole motion from
        :func:`~studio.geometry.framing.frame_motion`): it follows no body and is not refitted on a resize; the
        ground grid lies under its centre, at its floor height."""
        self._follow = None
        self._auto_frame = False
        self._framing = framing
        self._place_grid_and_axes()
        self.setCameraPosition(pos=QVector3D(*framing.center), distance=framing.distance,
                               elevation=framing.elevation, azimuth=framing.azimuth)

    def set_bodies_visible(self, on: bool) -> None:
        """Draw the bodies' shapes and their overlays (nails, springs, arrows, contacts), or leave them all out:
        a picture of the background alone (grid, axes), as a stroboscopic strip composites its poses over."""
        items = [item for item, _ in self._items]
        if self.overlays is not None:
            items += [item for item in self.overlays.items()
                      if item is not self.overlays.selection and item is not self.overlays.hover]
        hidden = self._hidden_bodies
        if not on and hidden is None:
            self._hidden_bodies = [(item, item.visible()) for item in items]   # as they were, to bring back
            for item in items:
                item.setVisible(False)
        elif on and hidden is not None:
            self._hidden_bodies = None
            for item, was in hidden:
                item.setVisible(was)
        self.update()

    @property
    def following(self) -> int | None:
        return self._follow

    def _place_grid_and_axes(self) -> None:
        f = self._framing
        self._grid.setSize(f.grid_size[0], f.grid_size[1], 1)
        self._grid.setSpacing(f.grid_spacing, f.grid_spacing, 1)
        self._grid_cell = None
        self._grid_under(f.center)
        ends = np.zeros((6, 3))
        ends[[1, 3, 5], [0, 1, 2]] = f.axis_length
        self._axes.setData(pos=ends, color=np.repeat(AXIS_COLORS, 2, axis=0))

    def paintGL(self, *args, **kwargs) -> None:
        self.paint_started = time.perf_counter()
        self.frames += 1
        super().paintGL(*args, **kwargs)

    def resizeGL(self, w: int, h: int) -> None:
        super().resizeGL(w, h)
        if self._auto_frame:
            self.frame_scene(initial=self._q is None)

    # ---- pictures off screen -------------------------------------------------------------------------------
    def render_image(self, size: tuple[int, int] | None = None, draw=None):
        """A QImage of the 3D view (no legend, no badge, no hover or selection marks) at ``size`` (width,
        height; default the widget's), showing ``draw`` (a :class:`core.drawing.DrawList`; default what is
        shown). Antialiased (4 samples). What is shown on screen is left as it was."""
        w, h = size if size is not None else (self.width(), self.height())
        w, h = max(16, int(w)), max(16, int(h))
        if not self.isValid():   # never shown yet: makeCurrent would leave no context and every item fail to draw
            raise RuntimeError("the 3D view has no OpenGL context yet: it has not been shown")
        saved = (self._poses.copy(), self.overlays.last, self.opts["center"], self.overlays.selection.visible(),
                 self.overlays.hover.visible(), [item._tint.copy() for item, _ in self._items])
        try:
            if draw is not None:
                self.show_draw(draw)
            self.overlays.selection.setVisible(False)
            self.overlays.hover.setVisible(False)
            for item, chunk in self._items:
                item.set_tint(np.zeros((len(chunk), 3)))
            self.makeCurrent()
            fmt = QOpenGLFramebufferObjectFormat()
            fmt.setAttachment(QOpenGLFramebufferObject.Attachment.CombinedDepthStencil)
            fmt.setSamples(4)
            fbo = QOpenGLFramebufferObject(w, h, fmt)
            fbo.bind()
            GL.glViewport(0, 0, w, h)
            self.paint(region=(0, 0, w, h), viewport=(0, 0, w, h))
            if QOpenGLContext.currentContext() is None:
                # another GL widget's destructor (a view freed by a garbage collection mid-draw) released it
                raise RuntimeError("the OpenGL context was released while the view was drawing")
            fbo.release()
            image = fbo.toImage()
            self.doneCurrent()
        finally:
            poses, last, center, selection, hover, tints = saved
            if draw is not None:
                self._set_poses(poses)
                self.overlays.update(last)
                self.opts["center"] = center
            self.overlays.selection.setVisible(selection)
            self.overlays.hover.setVisible(hover)
            for (item, _), tint in zip(self._items, tints):
                item._tint = tint
            self.update()
        return image

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

    def handles(self) -> list:
        """The draggable handles drawn now: ``[(kind, key, world point)]`` with kind "nail" (key: constraint
        index) or "spring" (key: (spring index, "a" or "b"))."""
        ov = self.overlays.last if self.overlays is not None else None
        out = []
        if ov is None:
            return out
        if self.overlays.visible["nails"]:
            out += [("nail", i, np.asarray(ov.point_b[i], float)) for i in ov.nail_indices()]
        if self.overlays.visible["springs"]:
            springs = np.asarray(ov.springs).reshape(-1, 2, 3)
            for k in range(len(springs)):
                out += [("spring", (k, "a"), springs[k, 0]), ("spring", (k, "b"), springs[k, 1])]
        return out

    def hit(self, x: float, y: float, handles: bool = True):
        """What is under pixel (x, y): a handle within :data:`HANDLE_PX` pixels (``("nail", constraint index,
        point)`` or ``("spring", (spring index, end), point)``; the nearest on screen, before any body), else
        ``("body", link, point, body name)`` (the document body whose shape was hit, perhaps one merged into the
        link) or None."""
        o, d = self.ray_at(x, y)
        if handles:
            best = None
            for kind, key, point in self.handles():
                if not np.all(np.isfinite(point)):
                    continue
                sx, sy = self.screen_position(point)
                dist = math.hypot(sx - x, sy - y)
                radius = self.overlays.nail_radius if kind == "nail" else self.overlays.end_radius
                reach = max(HANDLE_PX, self._pixels(point, radius))
                if dist <= reach and (best is None or dist < best[0]):
                    best = (dist, kind, key, point)
            if best is not None:
                return best[1], best[2], best[3]
            ov = self.overlays.last
            if ov is not None and self.overlays.visible["nails"]:     # a big nail: the ray through its ball
                for i in ov.nail_indices():
                    if hit_sphere(o, d, ov.point_b[i], 1.5 * self.overlays.nail_radius) is not None:
                        return "nail", i, np.asarray(ov.point_b[i], float)
        shape = pick_shape(o, d, self._model.shapes, self._poses)
        if shape is None:
            return None
        hit = self._model.shapes[shape[0]]
        return "body", hit.link, o + shape[1] * d, hit.body

    def _pixels(self, point, radius: float) -> float:
        """How many pixels ``radius`` metres at world ``point`` span on screen."""
        size = self.pixelSize(QVector3D(*(self._R_DW @ np.asarray(point, float))))
        return radius / size if size > 0 else 0.0

    def _link_frame(self, link: int):
        ov = self.overlays.last if self.overlays is not None else None
        if ov is not None and link < len(ov.link_p):
            return np.asarray(ov.link_R[link], float), np.asarray(ov.link_p[link], float)
        R_WL, p_WL, _ = core.forward_kinematics(self._model, self._q)
        return R_WL[link], p_WL[link]

    # ---- mouse ---------------------------------------------------------------------------------------------
    def mousePressEvent(self, ev) -> None:
        pos = ev.position()
        self._press = (pos.x(), pos.y())
        self._moved = False
        self._drag = None
        if ev.button() == Qt.MouseButton.LeftButton:
            ctrl = bool(ev.modifiers() & Qt.KeyboardModifier.ControlModifier)
            found = self.hit(pos.x(), pos.y(), handles=not ctrl)
            normal = self.ray_at(*self._press)[1]
            if found is not None and found[0] == "nail":
                self._drag = ("nail", self.overlays.last.names[found[1]], found[2], normal)
            elif found is not None and found[0] == "spring":
                k, end = found[1]
                self._drag = ("spring", k, end, found[2], normal)
                self.setCursor(QCursor(Qt.CursorShape.ClosedHandCursor))
            elif found is not None and found[0] == "body" and ctrl:
                self._start_pull(found[1], found[2])
        if self._drag is None:
            self._auto_frame = False
        super().mousePressEvent(ev)

    def _start_pull(self, link: int, x_W: np.ndarray) -> None:
        R_WL, p_WL = self._link_frame(link)
        r = R_WL.T @ (x_W - p_WL)
        mass = max(float(np.sum(self._model.mass)), 1e-6)
        k = PULL_STIFFNESS * mass
        c = 2.0 * math.sqrt(k * mass) * 0.7
        self._drag = ("pull", self._model.link_names[link], r, x_W, self.ray_at(*self._press)[1], k, c)
        self.pull_requested.emit(self._model.link_names[link], r, x_W, k, c)

    def _spring(self, k: int):
        """(name, end b is in the world) of spring ``k`` of the draw list."""
        ov = self.overlays.last
        world_b = bool(ov.spring_world_b[k]) if ov.spring_world_b is not None else True
        return ov.spring_names[k], world_b

    def mouseMoveEvent(self, ev) -> None:
        pos = ev.position()
        if math.hypot(pos.x() - self._press[0], pos.y() - self._press[1]) > CLICK_SLOP:
            self._moved = True
        if self._drag is not None:
            o, d = self.ray_at(pos.x(), pos.y())
            kind = self._drag[0]
            if kind == "nail":
                _, name, point, normal = self._drag
                target = ray_plane(o, d, point, normal)
                if target is not None:
                    self.nail_dragged.emit(name, target)
            elif kind == "spring":
                _, k, end, point, normal = self._drag
                name, world_b = self._spring(k)
                target = ray_plane(o, d, point, normal)
                if end == "b" and world_b:
                    if target is not None and self._moved:
                        self.spring_end_moved.emit(name, "b", target)
                else:                               # a body end: show where it would go
                    found = self.hit(pos.x(), pos.y(), handles=False)
                    self._set_hover(found)
                    ov = self.overlays.last
                    other = np.asarray(ov.springs).reshape(-1, 2, 3)[k, 1 if end == "a" else 0]
                    tip = found[2] if found is not None else target
                    if tip is not None:
                        self.overlays.pull.setData(pos=np.array([other, tip], np.float32))
                        self.overlays.pull.setVisible(True)
                        self.update()
            else:
                _, body, r, point, normal, k, c = self._drag
                target = ray_plane(o, d, point, normal)
                if target is not None:
                    self.pull_requested.emit(body, r, target, k, c)
            ev.accept()
            return
        buttons, mods = ev.buttons(), ev.modifiers()
        if buttons == Qt.MouseButton.NoButton:
            self._set_hover(self.hit(pos.x(), pos.y()))
            return
        diff = pos - self.mousePos if hasattr(self, "mousePos") else pos - pos
        self.mousePos = pos
        if buttons == Qt.MouseButton.LeftButton and mods & Qt.KeyboardModifier.ShiftModifier:
            self.pan(diff.x(), diff.y(), 0, relative="view")
        elif buttons == Qt.MouseButton.RightButton:
            self.opts["distance"] *= 1.005 ** diff.y()
            self.update()
        elif buttons == Qt.MouseButton.LeftButton and mods & Qt.KeyboardModifier.ControlModifier:
            pass                          # Ctrl + drag off any body: nothing (pyqtgraph would pan)
        elif buttons == Qt.MouseButton.LeftButton:
            self.orbit(-ORBIT_DEG_PER_PX * diff.x(), ORBIT_DEG_PER_PX * diff.y())
        elif buttons == Qt.MouseButton.MiddleButton:
            self.pan(diff.x(), diff.y(), 0, relative="view-upright")

    def mouseReleaseEvent(self, ev) -> None:
        drag, self._drag = self._drag, None
        pos = ev.position()
        if drag is not None and drag[0] == "pull":
            self.pull_released.emit()
        elif drag is not None and drag[0] == "spring":
            self._finish_spring(drag, pos.x(), pos.y())
        elif drag is None and not self._moved and ev.button() == Qt.MouseButton.LeftButton:
            self.picked.emit(self._what(self.hit(pos.x(), pos.y())))
        elif drag is not None and drag[0] == "nail" and not self._moved:
            self.picked.emit(("constraint", drag[1]))
        elif drag is not None and drag[0] == "nail":
            _, name, point, normal = drag
            target = ray_plane(*self.ray_at(pos.x(), pos.y()), point, normal)
            if target is not None:
                self.nail_dropped.emit(name, target)
        self._set_hover(self.hit(pos.x(), pos.y()))
        super().mouseReleaseEvent(ev)

    def _what(self, found):
        if found is None:
            return None
        if found[0] == "nail":
            return "constraint", self.overlays.last.names[found[1]]
        if found[0] == "spring":
            return "force", self._spring(found[1][0])[0]
        return "body", found[3]

    def _finish_spring(self, drag, x: float, y: float) -> None:
        _, k, end, point, normal = drag
        name, world_b = self._spring(k)
        self.overlays.pull.setVisible(False)
        if not self._moved:
            self.picked.emit(("force", name))
        elif end == "b" and world_b:
            o, d = self.ray_at(x, y)
            target = ray_plane(o, d, point, normal)
            if target is not None:
                self.spring_end_moved.emit(name, "b", target)
        else:
            found = self.hit(x, y, handles=False)
            if found is not None:                   # the point in the frame of the body hit: r_B = R_LBᵀ (r_L − p_LB)
                _, link, x_W, body = found
                R_WL, p_WL = self._link_frame(link)
                _, R_LB, p_LB = self._model.body_frame(body)
                r = R_LB.T @ (R_WL.T @ (x_W - p_WL) - p_LB)
                self.spring_end_attached.emit(name, end, body, r)
            elif end == "b":                        # let go in empty space: a world point there
                o, d = self.ray_at(x, y)
                target = ray_plane(o, d, point, normal)
                if target is not None:
                    self.spring_end_moved.emit(name, "b", target)
        self.drag_finished.emit()
        self.update()

    def wheelEvent(self, ev) -> None:
        self._auto_frame = False
        super().wheelEvent(ev)

    def keyPressEvent(self, ev) -> None:
        if ev.key() == Qt.Key.Key_F and not ev.modifiers():
            self.frame_scene()
            ev.accept()
            return
        super().keyPressEvent(ev)
