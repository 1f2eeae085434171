"""Every shape of a model in one OpenGL draw call: the meshes are uploaded once, in their own frames, into one
vertex buffer; a new state only sends each shape's pose as a uniform (a 3×3 rotation and a position), and the
vertex shader places each vertex with the pose of its shape (instancing by uniform arrays, GLSL 1.10).

Thread: GUI (a pyqtgraph ``GLGraphicsItem``; its ``paint`` runs in the viewport's ``paintGL``). Drawing a
20-link chain took 20 mesh items (20 × a dozen GL calls through PyOpenGL, and as many state changes for
llvmpipe); it takes one here, whatever the number of shapes up to :data:`MAX_SHAPES` per item (the viewport
makes as many items as it needs).

Lighting (:data:`LIT_FRAGMENT`, shared with the overlays): Lambert shading from a key and a fill light fixed to
the camera, an ambient term and a small Blinn highlight; colour from the shape's rgba, brightened by a per-shape
``tint`` (the shape under the mouse).
"""
from __future__ import annotations

import numpy as np
from OpenGL import GL
from pyqtgraph.opengl import shaders
from pyqtgraph.opengl.GLGraphicsItem import GLGraphicsItem
from PySide6 import QtGui, QtOpenGL

__all__ = ["ShapesItem", "MAX_SHAPES", "SHAPES_SHADER", "LIT_FRAGMENT"]

MAX_SHAPES = 64       # poses per item: 64 × 16 uniform floats fit the 1024 every OpenGL 2.1 driver offers

#: The lit fragment shader of every mesh the viewport draws (shapes and overlays): Lambert shading from a key and
#: a fill light fixed to the camera (eye coordinates: x right, y up, z towards the viewer), an ambient term and a
#: small Blinn highlight on the interpolated colour.
LIT_FRAGMENT = """
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
"""

SHAPES_SHADER = shaders.ShaderProgram("limbstudio-shapes", [
    shaders.VertexShader(f"""
        uniform mat4 u_mvp;
        uniform mat3 u_normal;
        uniform mat3 u_R[{MAX_SHAPES}];
        uniform vec3 u_p[{MAX_SHAPES}];
        uniform vec4 u_tint[{MAX_SHAPES}];
        attribute vec3 a_position;
        attribute vec3 a_normal;
        attribute vec4 a_color;
        attribute float a_shape;
        varying vec4 v_color;
        varying vec3 v_normal;
        void main() {{
            int k = int(a_shape + 0.5);
            vec3 p = u_R[k] * a_position + u_p[k];
            v_normal = normalize(u_normal * (u_R[k] * a_normal));
            v_color = vec4(min(a_color.rgb + u_tint[k].rgb, vec3(1.0)), a_color.a);
            gl_Position = u_mvp * vec4(p, 1.0);
        }}
    """),
    shaders.FragmentShader(LIT_FRAGMENT),
])


class ShapesItem(GLGraphicsItem):
    """GUI thread. ``meshes``: per shape ``(vertices (n, 3), faces (f, 3), vertex normals (n, 3), rgba)`` in the
    shape's own frame (at most :data:`MAX_SHAPES`). :meth:`set_poses` places them (``X_WS`` (S, 4, 4) in the
    parent item's frame)."""

    def __init__(self, meshes, parentItem=None, glOptions="opaque"):
        super().__init__(parentItem=parentItem)
        if len(meshes) > MAX_SHAPES:
            raise ValueError(f"at most {MAX_SHAPES} shapes per item, got {len(meshes)}")
        self.setGLOptions(glOptions)
        verts, faces, normals, colours, index, base = [], [], [], [], [], 0
        for k, (v, f, n, rgba) in enumerate(meshes):
            v = np.asarray(v, np.float32)
            verts.append(v)
            normals.append(np.asarray(n, np.float32))
            faces.append(np.asarray(f, np.uint32) + base)
            colours.append(np.tile(np.asarray(rgba, np.float32), (len(v), 1)))
            index.append(np.full(len(v), k, np.float32))
            base += len(v)
        empty3 = np.zeros((0, 3), np.float32)
        self._arrays = {
            "a_position": np.ascontiguousarray(np.vstack(verts) if verts else empty3),
            "a_normal": np.ascontiguousarray(np.vstack(normals) if normals else empty3),
            "a_color": np.ascontiguousarray(np.vstack(colours) if colours else np.zeros((0, 4), np.float32)),
            "a_shape": np.ascontiguousarray(np.concatenate(index) if index else np.zeros(0, np.float32)),
        }
        self._faces = np.ascontiguousarray(np.vstack(faces) if faces else np.zeros((0, 3), np.uint32))
        self.count = len(meshes)
        self._R = np.tile(np.eye(3, dtype=np.float32), (MAX_SHAPES, 1, 1))
        self._p = np.zeros((MAX_SHAPES, 3), np.float32)
        self._tint = np.zeros((MAX_SHAPES, 4), np.float32)
        self._vbos: dict = {}
        self._ibo = None
        self._uploaded = False

    def set_poses(self, X) -> None:
        """Place the shapes: ``X`` (S, 4, 4) poses (rotation and position) in the parent's frame."""
        X = np.asarray(X, dtype=np.float32)
        n = min(len(X), self.count)
        # GLSL reads a mat3 column by column: hand it Rᵀ row by row
        self._R[:n] = np.transpose(X[:n, :3, :3], (0, 2, 1))
        self._p[:n] = X[:n, :3, 3]
        self.update()

    def set_tint(self, tints) -> None:
        """Brighten shape k by ``tints[k]`` (RGB added, 0 for none)."""
        t = np.zeros((MAX_SHAPES, 4), np.float32)
        tints = np.asarray(tints, np.float32).reshape(-1, 3)[:self.count]
        t[:len(tints), :3] = tints
        if not np.array_equal(t, self._tint):
            self._tint = t
            self.update()

    def _upload(self) -> None:
        for name, arr in self._arrays.items():
            vbo = QtOpenGL.QOpenGLBuffer(QtOpenGL.QOpenGLBuffer.Type.VertexBuffer)
            vbo.create()
            vbo.bind()
            vbo.allocate(arr, arr.nbytes)
            vbo.release()
            self._vbos[name] = vbo
        self._ibo = QtOpenGL.QOpenGLBuffer(QtOpenGL.QOpenGLBuffer.Type.IndexBuffer)
        self._ibo.create()
        self._ibo.bind()
        self._ibo.allocate(self._faces, self._faces.nbytes)
        self._ibo.release()
        self._uploaded = True

    def paint(self) -> None:
        if self.count == 0 or len(self._faces) == 0:
            return
        self.setupGLState()
        if not self._uploaded:
            self._upload()
        context = QtGui.QOpenGLContext.currentContext()
        program = SHAPES_SHADER.program(es2_compat=context.hasExtension(b"GL_ARB_ES2_compatibility"))
        mvp = np.array(self.mvpMatrix().data(), dtype=np.float32)
        normal = np.array(self.modelViewMatrix().normalMatrix().data(), dtype=np.float32)
        enabled = []
        for name, size in (("a_position", 3), ("a_normal", 3), ("a_color", 4), ("a_shape", 1)):
            loc = GL.glGetAttribLocation(program, name)
            if loc == -1:
                continue
            self._vbos[name].bind()
            GL.glVertexAttribPointer(loc, size, GL.GL_FLOAT, False, 0, None)
            self._vbos[name].release()
            GL.glEnableVertexAttribArray(loc)
            enabled.append(loc)
        with SHAPES_SHADER:
            GL.glUniformMatrix4fv(GL.glGetUniformLocation(program, "u_mvp"), 1, False, mvp)
            GL.glUniformMatrix3fv(GL.glGetUniformLocation(program, "u_normal"), 1, False, normal)
            GL.glUniformMatrix3fv(GL.glGetUniformLocation(program, "u_R"), self.count, False, self._R[:self.count])
            GL.glUniform3fv(GL.glGetUniformLocation(program, "u_p"), self.count, self._p[:self.count])
            GL.glUniform4fv(GL.glGetUniformLocation(program, "u_tint"), self.count, self._tint[:self.count])
            self._ibo.bind()
            GL.glDrawElements(GL.GL_TRIANGLES, self._faces.size, GL.GL_UNSIGNED_INT, None)
            self._ibo.release()
        for loc in enabled:
            GL.glDisableVertexAttribArray(loc)
