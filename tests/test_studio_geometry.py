"""The studio's plain-data parts (no display needed): shape meshes, shape poses, display orientation, framing."""
from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

import core
from studio import DEFAULT_SCENE, SCENES_DIR

PLANAR_ARM = SCENES_DIR / "three_link_arm.json"
from studio.geometry.framing import display_rotation, frame_scene, nice_step, planar_normal, shape_poses
from studio.qt.viewport.meshes import shape_half_extents, shape_mesh

SHAPES = [
    ("box", {"size": (0.4, 0.2, 0.1)}, 0.4 * 0.2 * 0.1),
    ("sphere", {"radius": 0.3}, 4 / 3 * math.pi * 0.3 ** 3),
    ("cylinder", {"radius": 0.1, "length": 1.0}, math.pi * 0.1 ** 2 * 1.0),
    ("capsule", {"radius": 0.05, "length": 0.3}, math.pi * 0.05 ** 2 * 0.3 + 4 / 3 * math.pi * 0.05 ** 3),
]


@pytest.mark.parametrize("kind,size,volume", SHAPES, ids=[s[0] for s in SHAPES])
def test_mesh_encloses_the_shape_with_outward_faces(kind, size, volume):
    shape = SimpleNamespace(kind=kind, size=size)
    md = shape_mesh(shape)
    v = md.vertexes().astype(float)
    f = md.faces()
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    normals = np.cross(b - a, c - a)
    assert np.all(np.linalg.norm(normals, axis=1) > 0), "degenerate triangles"
    # outward: every face normal points away from the centre (all shapes are convex and centred)
    assert np.all(np.einsum("ij,ij->i", normals, a + b + c) > 0)
    # divergence theorem: the signed volume of a closed outward surface is its volume (tessellation: a bit less)
    enclosed = np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6
    assert enclosed == pytest.approx(volume, rel=0.02)
    assert enclosed <= volume * (1 + 1e-6)   # vertices are float32
    # the bounding box of the mesh is the shape's
    half = shape_half_extents(shape)
    assert np.max(np.abs(v), axis=0) == pytest.approx(half, rel=1e-6, abs=1e-7)


def test_unknown_shape_kind_is_named():
    with pytest.raises(ValueError, match="torus"):
        shape_mesh(SimpleNamespace(kind="torus", size={}))


@pytest.mark.parametrize("gravity", [(0, -9.81, 0), (0, 0, -9.81), (0, 0, 9.81), (1.0, 2.0, -3.0), (0, 0, 0)])
def test_display_rotation_turns_up_to_display_z(gravity):
    R = display_rotation(gravity)
    assert R.T @ R == pytest.approx(np.eye(3), abs=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    g = np.asarray(gravity, dtype=float)
    up = -g / np.linalg.norm(g) if np.any(g) else np.array([0.0, 0.0, 1.0])
    assert R @ up == pytest.approx([0.0, 0.0, 1.0], abs=1e-12)


def test_shape_poses_compose_link_and_shape_frames():
    model = core.load_scene(DEFAULT_SCENE)
    rng = np.random.default_rng(1)
    q = rng.uniform(-np.pi, np.pi, model.nq)
    R_WL, p_WL, _ = core.forward_kinematics(model, q)
    X = shape_poses(model, q)
    for k, s in enumerate(model.shapes):
        point_S = rng.normal(size=3)
        in_link = s.R_LS @ point_S + s.p_LS
        assert X[k, :3, :3] @ point_S + X[k, :3, 3] == pytest.approx(R_WL[s.link] @ in_link + p_WL[s.link])
        assert X[k, 3] == pytest.approx([0, 0, 0, 1])


def test_planar_arm_is_seen_face_on_with_gravity_down():
    model = core.load_scene(PLANAR_ARM)
    n = planar_normal(model, model.q0)
    assert n is not None and abs(n @ [0, 0, 1]) == pytest.approx(1.0)
    f = frame_scene(model, aspect=1.5)
    R_DW = display_rotation(model.gravity)
    a, e = math.radians(f.azimuth), math.radians(f.elevation)
    to_camera_W = R_DW.T @ [math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)]
    assert to_camera_W @ [0, 0, 1] > math.cos(math.radians(30))      # nearly along the plane's normal
    assert abs(f.elevation) < 30


def _in_view(f, points_D, aspect):
    a, e = math.radians(f.azimuth), math.radians(f.elevation)
    d = np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])
    right = np.cross([0, 0, 1], d)
    right /= np.linalg.norm(right)
    up = np.cross(d, right)
    rel = np.asarray(points_D) - f.center
    depth = f.distance - rel @ d
    tan_x = math.tan(math.radians(30))
    return (depth > 0) & (np.abs(rel @ right) <= depth * tan_x) & (np.abs(rel @ up) <= depth * tan_x / aspect)


@pytest.mark.parametrize("scene", sorted(SCENES_DIR.glob("*.json")), ids=lambda p: p.stem)
@pytest.mark.parametrize("aspect", [0.6, 1.0, 1.6])
def test_framing_shows_every_shape_above_the_floor(scene, aspect):
    model = core.load_scene(scene)
    f = frame_scene(model, aspect=aspect)
    R_DW = display_rotation(model.gravity)
    corners = []
    for X, s in zip(shape_poses(model, model.q0), model.shapes):
        h = shape_half_extents(s)
        for sign in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T:
            corners.append(R_DW @ (X[:3, :3] @ (sign * h) + X[:3, 3]))
    corners = np.array(corners)
    assert np.all(_in_view(f, corners, aspect))
    assert np.all(corners[:, 2] >= f.floor_z - 1e-9)
    assert _in_view(f, [[0.0, 0.0, 0.0]], aspect).all(), "the world origin is in view"


def test_a_planar_scene_lying_on_the_floor_is_seen_from_above(tmp_path):
    doc = json.loads(PLANAR_ARM.read_text())
    doc["gravity"] = [0, 0, -9.81]                 # hinges about z: the arm now moves in the horizontal plane
    path = tmp_path / "table_arm.json"
    path.write_text(json.dumps(doc))
    model = core.load_scene(path)
    f = frame_scene(model, aspect=1.5)
    assert 45 < f.elevation < 90
    corners = np.array([X[:3, 3] for X in shape_poses(model, model.q0)])
    assert np.all(_in_view(f, corners, 1.5))


@pytest.mark.parametrize("x,step", [(0.07, 0.1), (0.1, 0.1), (0.13, 0.2), (3.0, 5.0), (7.0, 10.0), (12.0, 20.0)])
def test_nice_step(x, step):
    assert nice_step(x) == pytest.approx(step)


def test_overlay_vertex_normals_are_pyqtgraphs_smooth_normals():
    """The overlays give their glyph meshes smooth normals computed at once (studio.qt.viewport.meshes.vertex_normals),
    the normalized sum of the area-weighted face normals around each vertex, as MeshData.vertexNormals does in
    a Python loop."""
    import pyqtgraph.opengl as gl

    from studio.geometry import glyphs
    from studio.qt.viewport.meshes import vertex_normals
    verts, faces, _ = glyphs.arrow_mesh(np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 0.5]]),
                                        np.array([[0.3, 0.1, 0.9], [-0.5, 0.2, 0.1]]), 0.02, [(1, 1, 1, 1)] * 2)
    verts, faces = np.asarray(verts, np.float32), np.asarray(faces, np.uint32)
    expected = gl.MeshData(vertexes=verts, faces=faces).vertexNormals()
    assert np.abs(vertex_normals(verts, faces) - expected).max() < 1e-5


def test_the_legend_names_only_the_arrows_a_scene_draws():
    """Joint-space constraints (a mimic joint, a crank's closure) and contact rows have no arrows of their own:
    the viewport's legend speaks of constraint forces only for constraints at points."""
    from studio.qt.viewport.overlays import Overlays
    overlays = SimpleNamespace(arrow_reference=0.2, force_reference=10.0)

    def legend(name):
        return Overlays.legend(overlays, core.load_scene(SCENES_DIR / f"{name}.json"))

    assert "constraint force" in legend("arm_nail_singular")
    assert "constraint force" not in legend("slider_crank_joint_space")
    ball = legend("bouncing_ball")
    assert "contact points" in ball and "constraint force" not in ball
