"""The viewport's overlays as pyqtgraph GL items: nails, springs and their ends, constraint-force and velocity
arrows, contact points (coloured by mode: open, stick, slip, frictionless) with their normal and friction forces,
link frames, broken-constraint marks, the mouse spring, the selection outline and the mark of what the mouse is
over.

Thread: GUI. :class:`Overlays` owns its items (children of the viewport's world item, so in world coordinates)
and refreshes them from a :class:`core.drawing.DrawList`; the geometry comes from :mod:`studio.geometry.glyphs`. Arrows and
nails are drawn after the shapes and without the depth test, so they stay visible inside and behind bodies
(back faces culled, so they still look solid). Each kind can be shown or hidden (:data:`KINDS`).

Scale: a constraint force of :attr:`Overlays.force_reference` newtons (the scene's weight, rounded to 1, 2 or 5
× 10^k) is an arrow of :attr:`Overlays.arrow_reference` metres (a fifth of the scene's size); smaller forces are
shorter in proportion, larger ones grow with half their decades and never beyond 2.2 × that length, so arrows
stay in the frame (:func:`studio.geometry.glyphs.arrow_length`). Contact forces — the plane's normal force and the
friction force on the body, drawn from the contact point — follow the same scale. A contact point's rows are
drawn at the contact, never as constraint arrows at the sphere's centre. A velocity arrow is as long as the distance covered in
:data:`VELOCITY_TIME`. :meth:`Overlays.legend` says so in words for the viewport's legend.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph.opengl as gl
from OpenGL import GL

from studio.geometry import glyphs
from studio.qt.viewport.meshes import vertex_normals
from studio.geometry.framing import nice_step
from studio.document.kinds import constraint_kinds, force_kinds

__all__ = ["Overlays", "KINDS", "ON_TOP", "SPRING_COLOUR", "VELOCITY_COLOUR"]

#: Overlay kinds the user can toggle, with their labels (and whether shown by default).
KINDS = {
    "nails": ("Nails", True), "springs": ("Springs", True), "forces": ("Constraint forces", True),
    "velocities": ("Velocities of constrained points", True), "frames": ("Link frames", False),
    "broken": ("Broken constraints", True), "contacts": ("Contact points and forces", True),
}

ON_TOP = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: False, GL.GL_CULL_FACE: True}
TRANSLUCENT_ON_TOP = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: True, GL.GL_CULL_FACE: True,
                      "glBlendFunc": (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)}
LINES_ON_TOP = {GL.GL_DEPTH_TEST: False, GL.GL_BLEND: True, GL.GL_CULL_FACE: False,
                "glBlendFunc": (GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)}
NAIL_COLOUR = (0.86, 0.88, 0.92, 1.0)
SELECTED_NAIL = (1.0, 0.78, 0.25, 1.0)
SPRING_COLOUR = (0.95, 0.95, 0.7, 1.0)
SPRING_END_COLOUR = (0.95, 0.9, 0.55, 1.0)
VELOCITY_COLOUR = (0.35, 0.85, 1.0, 1.0)
BROKEN_COLOUR = (1.0, 0.25, 0.3, 1.0)
PULL_COLOUR = (1.0, 0.85, 0.3, 0.9)
SELECTION_COLOUR = (1.0, 0.78, 0.25, 1.0)
HOVER_COLOUR = (1.0, 0.85, 0.35, 0.45)
#: A contact point's colour by mode (core.contacts OPEN, STICK, SLIP, FRICTIONLESS): the colours of the events
#: that switch to it in the plots and the event list (studio.run.events: stick, slip, touchdown).
CONTACT_COLOURS = ((0.62, 0.65, 0.7, 1.0), (0.94, 0.89, 0.26, 1.0), (0.8, 0.47, 0.65, 1.0), (0.0, 0.62, 0.45, 1.0))
CONTACT_MODE_NAMES = ("open", "stick", "slip", "frictionless")
FRICTION_COLOUR = (1.0, 0.6, 0.1, 1.0)
VELOCITY_TIME = 0.25     # s: a velocity arrow is as long as the distance covered in this time (below the knee)


class Overlays:
    """GUI thread. The overlay items under ``parent`` (a GLGraphicsItem in world coordinates), sized for a scene
    of characteristic length ``scale`` (m) and weight ``force_scale`` (N)."""

    def __init__(self, parent, scale: float, force_scale: float, shader):
        self.scale = float(scale)
        self.force_reference = nice_step(float(force_scale))
        self.arrow_reference = 0.2 * self.scale
        self.visible = {k: default for k, (_, default) in KINDS.items()}
        self.selected_constraint: int | None = None
        self._shader = shader
        self.last = None
        mesh = dict(smooth=True, shader=shader, glOptions=ON_TOP, parentItem=parent, computeNormals=True)
        self.nails = gl.GLMeshItem(**mesh)
        self.spring_ends = gl.GLMeshItem(**mesh)
        self.forces = gl.GLMeshItem(**mesh)
        self.velocities = gl.GLMeshItem(**mesh)
        self.contact_points = gl.GLMeshItem(**mesh)
        self.contact_forces = gl.GLMeshItem(**mesh)
        self.hover = gl.GLMeshItem(**{**mesh, "glOptions": TRANSLUCENT_ON_TOP})
        lines = dict(mode="lines", antialias=True, glOptions=LINES_ON_TOP, parentItem=parent)
        self.springs = gl.GLLinePlotItem(width=1.6, color=SPRING_COLOUR, **lines)
        self.frames = gl.GLLinePlotItem(width=2.0, **lines)
        self.broken = gl.GLLinePlotItem(width=2.5, color=BROKEN_COLOUR, **lines)
        self.pull = gl.GLLinePlotItem(width=2.0, color=PULL_COLOUR, **lines)
        self.selection = gl.GLLinePlotItem(width=1.5, color=SELECTION_COLOUR, **lines)
        for depth, item in enumerate((self.selection, self.springs, self.frames, self.velocities, self.forces,
                                      self.contact_forces, self.contact_points, self.spring_ends, self.nails,
                                      self.broken, self.pull, self.hover)):
            item.setDepthValue(10 + depth)
        self._hover_at = None
        self.clear()

    @property
    def nail_radius(self) -> float:
        return 0.03 * self.scale

    @property
    def end_radius(self) -> float:
        return 0.018 * self.scale

    @property
    def contact_radius(self) -> float:
        return 0.02 * self.scale

    def items(self) -> list:
        return [self.nails, self.spring_ends, self.forces, self.velocities, self.contact_points, self.contact_forces,
                self.springs, self.frames, self.broken, self.pull, self.selection, self.hover]

    def remove(self) -> None:
        for item in self.items():
            item.setParentItem(None)
            view = item.view()
            if view is not None:
                view.removeItem(item)

    def clear(self) -> None:
        for item in (self.nails, self.spring_ends, self.forces, self.velocities, self.contact_points,
                     self.contact_forces, self.hover):
            _set_mesh(item, *glyphs.arrow_mesh([], [], 1.0, []))
        for item in (self.springs, self.frames, self.broken, self.pull, self.selection):
            _set_lines(item, np.zeros((0, 3)))

    def set_visible(self, kind: str, on: bool) -> None:
        self.visible[kind] = bool(on)
        if self.last is not None:
            self.update(self.last)

    def legend(self, model=None) -> str:
        """What the arrows and marks of ``model`` mean, in words (rich text for the viewport's legend; only what
        the scene has — constraint forces and velocities, springs, nails; "" when it has none of them). Without
        a model: all of them."""
        def sw(rgb):
            return "#%02x%02x%02x" % tuple(round(255 * c) for c in rgb[:3])
        contacts = True if model is None else bool(getattr(model, "contacts", ()))
        if model is None:
            constraints = True
        else:                           # constraints drawn with arrows: at points, not contacts' or limits' rows
            from core.contacts import contact_rows
            skip = contact_rows(model)
            constraints = any(kind != "joint_space" and i not in skip
                              for i, kind in enumerate(constraint_kinds(model)))
        friction = True if model is None else any(c.friction > 0 for c in getattr(model, "contacts", ()))
        frictionless = True if model is None else any(c.friction == 0 for c in getattr(model, "contacts", ()))
        springs = True if model is None else "spring" in force_kinds(model)
        nails = True if model is None else "nail" in constraint_kinds(model)
        lines, marks = [], []
        if constraints:
            force = _length_text(self.arrow_reference)
            lines.append(f"<span style='color:{sw(glyphs.LOW_LOAD)}'>━▶</span><span style='color:"
                         f"{sw(glyphs.MID_LOAD)}'>━▶</span><span style='color:{sw(glyphs.FULL_LOAD)}'>━▶</span> "
                         f"constraint force: {force} = {self.force_reference:g} N (longer ones grow "
                         "logarithmically); colour = force ÷ its max_force, 0 → 1")
            marks.append(f"<span style='color:{sw(VELOCITY_COLOUR)}'>━▶</span> velocity of a constrained point: "
                         f"the distance it covers in {VELOCITY_TIME:g} s")
        if springs:
            marks.append(f"<span style='color:{sw(SPRING_COLOUR)}'>∿</span> spring (drag its ends)")
        if nails:
            marks.append(f"<span style='color:{sw(NAIL_COLOUR)}'>●</span> nail (drag it)")
        if marks:
            lines.append(" &nbsp; ".join(marks))
        if contacts:
            modes = ([1, 2] if friction else []) + ([3] if frictionless else [])
            dots = " ".join(f"<span style='color:{sw(CONTACT_COLOURS[m])}'>●</span> {CONTACT_MODE_NAMES[m]}"
                            for m in [0] + modes)
            force = f"<span style='color:{sw(glyphs.LOW_LOAD)}'>━▶</span> normal force"
            if friction:
                force += f" <span style='color:{sw(FRICTION_COLOUR)}'>━▶</span> friction"
            scale = "" if constraints else f" ({_length_text(self.arrow_reference)} = {self.force_reference:g} N, " \
                                                "longer ones grow logarithmically)"
            lines.append(f"contact points: {dots} &nbsp; {force}{scale}")
        return "<br>".join(lines)

    # ---- refresh -------------------------------------------------------------------------------------------
    def update(self, ov) -> None:
        """Redraw from the draw list ``ov`` (None: nothing to draw)."""
        self.last = ov
        if ov is None:
            self.clear()
            return
        show = self.visible
        nails = ov.nail_indices() if show["nails"] else []
        colours = [SELECTED_NAIL if i == self.selected_constraint else NAIL_COLOUR for i in nails]
        _set_mesh(self.nails, *glyphs.sphere_mesh(ov.point_b[nails], self.nail_radius, colours))

        drawn = ov.has_point if ov.has_point is not None else np.ones(len(ov.names), bool)
        if getattr(ov, "contact_row", None) is not None:
            drawn = drawn & ~ov.contact_row             # drawn at the contact (below)
        active = np.flatnonzero(ov.active & drawn) if show["forces"] else np.zeros(0, int)
        mags = np.linalg.norm(ov.force[active], axis=1) if len(active) else np.zeros(0)
        lengths = glyphs.arrow_length(mags, self.force_reference, self.arrow_reference)
        with np.errstate(invalid="ignore", divide="ignore"):
            vectors = ov.force[active] * (lengths / np.where(mags > 0, mags, 1.0))[:, None]
        _set_mesh(self.forces, *glyphs.arrow_mesh(ov.point_a[active], vectors, 0.012 * self.scale,
                                                  glyphs.ratio_colour(ov.ratio[active])))

        moving = np.flatnonzero(drawn) if show["velocities"] else np.zeros(0, int)
        speeds = np.linalg.norm(ov.velocity[moving], axis=1) if len(moving) else np.zeros(0)
        v_len = glyphs.soft_length(speeds * VELOCITY_TIME, 0.3 * self.scale, 0.3 * self.scale)
        with np.errstate(invalid="ignore", divide="ignore"):
            v_vec = ov.velocity[moving] * (v_len / np.where(speeds > 0, speeds, 1.0))[:, None]
        _set_mesh(self.velocities, *glyphs.arrow_mesh(ov.point_a[moving], v_vec, 0.008 * self.scale,
                                                      np.tile(VELOCITY_COLOUR, (len(moving), 1))))

        springs = np.asarray(ov.springs).reshape(-1, 2, 3)
        segs = [glyphs.coil(a, b, 0.025 * self.scale) for a, b in springs] if show["springs"] else []
        _set_lines(self.springs, np.vstack(segs) if segs else np.zeros((0, 3)))
        ends = springs.reshape(-1, 3) if show["springs"] and len(springs) else np.zeros((0, 3))
        _set_mesh(self.spring_ends, *glyphs.sphere_mesh(ends, self.end_radius, [SPRING_END_COLOUR] * len(ends),
                                                        rows=6, cols=10))

        if show["frames"]:
            pos, col = glyphs.frames(ov.link_R, ov.link_p, 0.12 * self.scale)
            _set_lines(self.frames, pos, col)
        else:
            _set_lines(self.frames, np.zeros((0, 3)))

        self._update_contacts(getattr(ov, "contacts", None) if show["contacts"] else None)

        broken = np.flatnonzero(ov.broken & drawn) if show["broken"] else np.zeros(0, int)
        marks = np.vstack([glyphs.crosses(ov.point_a[broken], 0.05 * self.scale),
                           glyphs.crosses(ov.point_b[broken], 0.05 * self.scale)]) if len(broken) else \
            np.zeros((0, 3))
        _set_lines(self.broken, marks)
        _set_lines(self.pull, np.asarray(ov.pull) if ov.pull is not None else np.zeros((0, 3)))

    def _update_contacts(self, cd) -> None:
        """Contact points coloured by mode (open ones smaller), and the normal and friction forces on the body
        drawn from the points in contact, on the constraint forces' scale."""
        if cd is None or not len(cd.labels):
            _set_mesh(self.contact_points, *glyphs.arrow_mesh([], [], 1.0, []))
            _set_mesh(self.contact_forces, *glyphs.arrow_mesh([], [], 1.0, []))
            return
        mode = np.asarray(cd.mode)
        colours = [CONTACT_COLOURS[int(m)] for m in mode]
        shown = mode == 0 if cd.between_shapes is None else (mode == 0) & ~np.asarray(cd.between_shapes)
        touching, open_ = np.flatnonzero(mode != 0), np.flatnonzero(shown)   # (two shapes' open points: not drawn)
        verts, faces, cols = [], [], []
        for idx, radius in ((touching, self.contact_radius), (open_, 0.6 * self.contact_radius)):
            if len(idx):
                v, f, c = glyphs.sphere_mesh(cd.position[idx], radius, [colours[i] for i in idx], rows=6, cols=10)
                faces.append(np.asarray(f) + sum(len(x) for x in verts))
                verts.append(np.asarray(v))
                cols.append(np.asarray(c))
        if verts:
            _set_mesh(self.contact_points, np.vstack(verts), np.vstack(faces), np.vstack(cols))
        else:
            _set_mesh(self.contact_points, *glyphs.arrow_mesh([], [], 1.0, []))
        starts, vectors, arrow_colours = [], [], []
        for forces, colour in ((cd.normal, glyphs.LOW_LOAD + (1.0,)), (cd.friction, FRICTION_COLOUR)):
            f = np.asarray(forces)[touching]
            mags = np.linalg.norm(f, axis=1) if len(f) else np.zeros(0)
            keep = mags > 1e-9 * self.force_reference
            lengths = glyphs.arrow_length(mags[keep], self.force_reference, self.arrow_reference)
            starts.append(cd.position[touching][keep])
            vectors.append(f[keep] * (lengths / mags[keep])[:, None])
            arrow_colours += [colour] * int(keep.sum())
        _set_mesh(self.contact_forces, *glyphs.arrow_mesh(np.vstack(starts), np.vstack(vectors), 0.012 * self.scale,
                                                          arrow_colours))

    def outline(self, boxes) -> None:
        """Outline the selected shapes: ``boxes`` is a list of (X_WS (4, 4), half extents (3,))."""
        segs = [glyphs.box_edges(X, 1.04 * np.asarray(h) + 0.004 * self.scale) for X, h in boxes]
        _set_lines(self.selection, np.vstack(segs) if segs else np.zeros((0, 3)))

    def mark_hover(self, point, radius: float | None = None) -> None:
        """A translucent ball around the handle the mouse is over (a nail, a spring end); None: none."""
        if point is None:
            if self._hover_at is not None:
                self._hover_at = None
                _set_mesh(self.hover, *glyphs.arrow_mesh([], [], 1.0, []))
            return
        key = (tuple(np.round(point, 9)), radius)
        if key != self._hover_at:
            self._hover_at = key
            r = 1.8 * (radius or self.nail_radius)
            _set_mesh(self.hover, *glyphs.sphere_mesh([point], r, [HOVER_COLOUR], rows=8, cols=14))


def _length_text(metres: float) -> str:
    if metres >= 1.0:
        return f"{metres:.2g} m"
    if metres >= 0.01:
        return f"{100 * metres:.2g} cm"
    return f"{1000 * metres:.2g} mm"


def _set_mesh(item, verts, faces, colours) -> None:
    if len(faces) == 0:
        item.setVisible(False)
        return
    data = (np.asarray(verts, np.float32), np.asarray(faces, np.uint32), np.asarray(colours, np.float32))
    last = getattr(item, "_limbstudio_mesh", None)
    # Unchanged (a nail that stays put): keep the mesh, whose normals pyqtgraph would otherwise recompute at the
    # next paint (~1 ms for the nail spheres, every frame).
    if last is None or any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(data, last)):
        md = gl.MeshData(vertexes=data[0], faces=data[1], vertexColors=data[2])
        md._vertexNormals = vertex_normals(data[0], data[1])     # (pyqtgraph's own loops over the vertices in
        item.setMeshData(meshdata=md)                             # Python: 40 ms for twenty contact spheres)
        item._limbstudio_mesh = data
    item.setVisible(True)




def _set_lines(item, pos, colour=None) -> None:
    if len(pos) == 0:
        item.setVisible(False)
        return
    if colour is not None:
        item.setData(pos=np.asarray(pos, np.float32), color=np.asarray(colour, np.float32))
    else:
        item.setData(pos=np.asarray(pos, np.float32))
    item.setVisible(True)
