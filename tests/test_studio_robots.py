"""The studio and robot files: ``python -m studio robot.urdf`` and File ▸ Open open a URDF as an untitled scene
that includes it (saved as JSON with the robot file's relative path); its meshes are drawn as meshes (the picture
differs from the same model drawn as bounding boxes); mesh decimation keeps the budget and the shape."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shiboken6

import core
from core.model import Shape
from studio.qt.viewport.meshes import decimate, file_mesh, shape_mesh

from test_studio import rgb_array  # noqa: E402  (shared helper)
from test_urdf import link, write  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _torus_obj(path: Path, R=0.3, r=0.08, n=48, m=24) -> None:
    """A torus about z: nothing like its bounding box."""
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, n, endpoint=False), np.linspace(0, 2 * np.pi, m, endpoint=False),
                       indexing="ij")
    x = (R + r * np.cos(v)) * np.cos(u)
    y = (R + r * np.cos(v)) * np.sin(u)
    z = r * np.sin(v)
    verts = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    idx = np.arange(n * m).reshape(n, m)
    faces = []
    for i in range(n):
        for j in range(m):
            a, b, c, d = idx[i, j], idx[(i + 1) % n, j], idx[(i + 1) % n, (j + 1) % m], idx[i, (j + 1) % m]
            faces += [(a, b, c), (a, c, d)]
    path.write_text("".join(f"v {a:.6f} {b:.6f} {c:.6f}\n" for a, b, c in verts)
                    + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in faces))


def _robot(tmp_path: Path) -> Path:
    (tmp_path / "meshes").mkdir(exist_ok=True)
    _torus_obj(tmp_path / "meshes" / "ring.obj")
    visual = ('<visual><origin xyz="0 0 0.5" rpy="1.2 0 0"/><geometry><mesh filename="meshes/ring.obj"/>'
              '</geometry><material name="gold"><color rgba="0.9 0.7 0.1 1"/></material></visual>')
    return write(tmp_path, link("base") + link("ring", extra=visual)
                 + '<joint name="spin" type="continuous"><parent link="base"/><child link="ring"/>'
                   '<axis xyz="0 0 1"/></joint>', "ring_robot.urdf")


def test_decimation_keeps_the_budget_and_the_shape():
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(40000, 3))
    pts /= np.linalg.norm(pts, axis=1)[:, None]          # points on the unit sphere
    from scipy.spatial import ConvexHull
    hull = ConvexHull(pts)
    v, f = decimate(pts, hull.simplices, 5000)
    assert 1000 < len(f) <= 5000
    assert np.abs(np.linalg.norm(v[np.unique(f)], axis=1) - 1.0).max() < 0.05   # still the sphere
    same_v, same_f = decimate(pts, hull.simplices[:100], 5000)
    assert same_f.shape == (100, 3)                        # within the budget: as it is


def test_mesh_shape_is_drawn_from_its_file(tmp_path):
    model = core.load_urdf(_robot(tmp_path))
    s, = model.shapes
    assert s.kind == "mesh"
    md = shape_mesh(s)
    v = md.vertexes()
    assert len(md.faces()) == 48 * 24 * 2
    # the torus, moved into its bounding-box frame: centred, radii 0.38 and 0.22 about z
    np.testing.assert_allclose(0.5 * (v.min(axis=0) + v.max(axis=0)), 0, atol=1e-6)
    rho = np.hypot(v[:, 0], v[:, 1])
    assert rho.max() == pytest.approx(0.38, abs=1e-4) and rho.min() == pytest.approx(0.22, abs=1e-3)
    (tmp_path / "meshes" / "ring.obj").write_text("not a mesh")    # changed on disk: its bounding box instead
    assert len(shape_mesh(s).faces()) == 12
    with pytest.raises(ValueError, match="ring.obj"):
        file_mesh(s.size["file"])


def test_opening_a_urdf_document_and_saving_it_as_json(tmp_path, qapp):
    from studio.qt.document.document import SceneDocument
    urdf = _robot(tmp_path)
    doc = SceneDocument()
    doc.open(urdf)
    assert doc.path is None and doc.spec.robot.file == str(urdf.resolve())   # untitled: saving asks for a name
    out = tmp_path / "scenes" / "ring.json"
    out.parent.mkdir()
    doc.save(out)
    saved = json.loads(out.read_text())
    shiboken6.delete(doc)           # now, on this thread (never by a later garbage collection on another one)
    assert saved["robot"] == {"file": "../ring_robot.urdf"}
    assert core.load_scene(out).link_names == ("base", "ring")


@pytest.mark.gui
def test_the_studio_draws_a_urdf_with_its_meshes(tmp_path, gl_renderer, qtbot):
    """The picture of the robot differs from the same robot drawn as bounding boxes (a torus is not its box)."""
    from studio.headless import _viewport
    urdf = _robot(tmp_path)
    model = core.load_urdf(urdf)
    boxes = dataclasses.replace(model, shapes=tuple(Shape(s.link, "box", {"size": s.size["size"]}, s.R_LS, s.p_LS,
                                                          s.rgba) for s in model.shapes))
    pictures, views = [], []
    for m in (model, boxes):
        # each view held to the end (pytest-qt's reference is weak): the first, freed by a collection while the
        # second drew, took the current context with it (a null picture, seen in CI)
        views.append(_viewport(m, (480, 360)))
        qtbot.addWidget(views[-1])                         # closed and deleted by pytest-qt, on this thread
        pictures.append(rgb_array(views[-1].render_image((480, 360), None)).astype(int))
    mesh, box = pictures
    gold = np.array([0.9, 0.7, 0.1]) * 255

    def gold_pixels(rgb):
        px = rgb.reshape(-1, 3).astype(float)
        cos = px @ gold / (np.linalg.norm(px, axis=1) * np.linalg.norm(gold) + 1e-9)
        return int(np.count_nonzero((cos > 0.99) & (px.sum(axis=1) > 120)))
    assert gold_pixels(mesh) > 300                         # the ring is drawn, in its material's colour
    assert gold_pixels(box) > 1.3 * gold_pixels(mesh)      # its box covers much more (the hole, the corners)
    differ = np.count_nonzero(np.abs(mesh - box).sum(axis=2) > 30)
    assert differ > 1000


@pytest.mark.gui
@pytest.mark.slow
def test_python_m_studio_opens_a_urdf(tmp_path, gl_renderer):
    urdf = _robot(tmp_path)
    out = tmp_path / "shot.png"
    result = subprocess.run([sys.executable, "-m", "studio", str(urdf), "--screenshot", str(out), "--after", "0.5",
                             "--size", "1024x700"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10000
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'/><joint name='j' type='planar'><parent link='a'/>"
                   "<child link='b'/></joint></robot>")
    result = subprocess.run([sys.executable, "-m", "studio", str(bad)], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "robot/joint[@name='j']" in result.stderr


def test_a_robot_file_is_never_the_documents_file(tmp_path, qapp):
    """``python -m studio robot.urdf`` hands the URDF's path to the window: saving must not write JSON over it."""
    from studio.qt.document.document import SceneDocument
    urdf = _robot(tmp_path)
    before = urdf.read_bytes()
    doc = SceneDocument(core.read_spec(urdf), urdf)
    assert doc.path is None
    with pytest.raises(ValueError, match="no file yet"):
        doc.save()
    shiboken6.delete(doc)
    assert urdf.read_bytes() == before


def test_studio_inertia_option_repairs_a_robot(tmp_path):
    """What the studio's loader runs (on its thread) for ``python -m studio bad.urdf [--inertia repair]``."""
    import warnings

    from studio.__main__ import load_model
    bad = write(tmp_path, link("a") + '<link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" '
                'iyy="1" iyz="0" izz="5"/></inertial></link><joint name="j" type="revolute"><parent link="a"/>'
                '<child link="b"/><axis xyz="0 0 1"/></joint>', "bad.urdf")
    with pytest.raises(core.SceneError, match="--inertia repair"):
        load_model(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(bad, "repair")
    assert model.n_links == 2 and model.spec.robot.inertia == "repair"


def test_a_mesh_shape_in_a_document_is_inspected_and_saved_relative(tmp_path, qtbot):
    """A hand-written scene with a mesh shape: the inspector shows it (its type fixed), the file is resolved
    against the document's folder and written relative to it again."""
    from studio.qt.window.inspector import _type_options
    (tmp_path / "meshes").mkdir()
    _torus_obj(tmp_path / "meshes" / "ring.obj")
    doc = {"format_version": 1, "name": "ring",
           "bodies": [{"name": "ring", "joint": {"type": "hinge"}, "inertial": {"mass": 1.0, "inertia": [1, 1, 1, 0, 0, 0]},
                       "shapes": [{"type": "mesh", "file": "meshes/ring.obj", "size": [0.76, 0.76, 0.16]}]}]}
    path = tmp_path / "ring.json"
    path.write_text(json.dumps(doc))
    spec = core.read_spec(path)
    assert spec.bodies[0].shapes[0].file == str(tmp_path / "meshes" / "ring.obj")
    assert _type_options(("bodies", 0, "shapes", 0), "mesh") == ["mesh"]
    out = tmp_path / "copy.json"
    core.save_scene(spec, out)
    assert json.loads(out.read_text())["bodies"][0]["shapes"][0]["file"] == "meshes/ring.obj"
    model = core.load_scene(out)
    assert model.shapes[0].kind == "mesh" and len(shape_mesh(model.shapes[0]).faces()) == 48 * 24 * 2
    with pytest.raises(core.SceneError, match="a mesh is drawn only"):
        core.scene.parse_spec({**doc, "bodies": [{**doc["bodies"][0], "inertial": None,
                                                   "shapes": [{**doc["bodies"][0]["shapes"][0], "mass": 1.0}]}]})


def test_the_included_robot_is_listed_and_its_include_is_edited(tmp_path, qtbot):
    """The scene tree lists the robot's links under a selectable Robot item; selecting it shows the include in the
    inspector, and an edit there (a floating base) reaches the document and compiles."""
    from studio.document import edits
    from studio.qt.document.document import SceneDocument
    from studio.qt.window.inspector import item_title
    from studio.qt.window.scene_tree import PATH_ROLE, build_tree_model
    urdf = _robot(tmp_path)
    spec = core.read_spec(urdf)
    tree = build_tree_model(spec)
    robot = next(tree.item(r) for r in range(tree.rowCount()) if tree.item(r).data(PATH_ROLE) == ("robot",))
    assert robot.text() == "Robot ring_robot.urdf  (2)"
    assert [robot.child(r).text() for r in range(robot.rowCount())] == ["base", "ring"]
    assert item_title(spec, ("robot",)) == "robot file 'ring_robot.urdf'"
    doc = SceneDocument(spec)
    doc.apply(edits.set_value(spec, ("robot", "base"), "floating"), "floating base")
    assert core.compile_scene(doc.spec).joint_names == ["base", "spin"]       # the root's free joint first
    doc.undo_stack.undo()
    assert doc.spec.robot.base == "fixed"
    # the include's q0 (a dict of joint values) is edited as JSON in the inspector, with undo
    from studio.qt.window.inspector import Inspector
    from studio.qt.document.selection import Selection
    selection = Selection()
    inspector = Inspector(doc, selection)
    qtbot.addWidget(inspector)
    selection.set(("robot",))
    editor = inspector.editor("q0")
    editor.edit.setPlainText('{"spin": 0.3}')
    editor.edit.finished.emit()                          # (a JSON field is a text area: it commits leaving it)
    assert doc.spec.robot.q0 == {"spin": 0.3}
    model = core.compile_scene(doc.spec)
    assert model.q0[model.q_slice("spin")][0] == pytest.approx(0.3)
    doc.undo_stack.undo()
    assert doc.spec.robot.q0 == {}
    shiboken6.delete(doc)


def test_unpacking_the_robot_makes_its_links_the_documents_bodies(tmp_path, qtbot):
    """Edit ▸ Unpack the Robot into Bodies: the include's links become the document's bodies (with its q0 and base
    applied), one undo step; a link is then edited like any body, and the same motion is simulated."""
    from studio.qt.document.document import SceneDocument
    from studio.qt.window.item_actions import ItemActions
    from studio.qt.document.selection import Selection
    from studio.document import edits
    urdf = _robot(tmp_path)
    spec = core.read_spec(urdf)
    doc = SceneDocument(spec)
    doc.apply(edits.set_value(spec, ("robot", "q0"), {"spin": 0.3}), "q0")
    before = core.compile_scene(doc.spec)
    selection = Selection()
    actions = ItemActions(doc, selection)
    assert not actions.unpack_action.isEnabled()
    selection.set(("robot",))
    assert actions.unpack_action.isEnabled()
    actions.unpack_action.trigger()
    assert doc.spec.robot is None and [b.name for b in doc.spec.bodies] == ["base", "ring"]
    after = core.compile_scene(doc.spec)
    np.testing.assert_array_equal(after.q0, before.q0)
    np.testing.assert_array_equal(after.inertia, before.inertia)
    runs = [core.Simulation(m, dt=1e-3) for m in (before, after)]
    for sim in runs:
        sim.run(0.05)
    np.testing.assert_array_equal(runs[1].state.q, runs[0].state.q)
    ring = next(i for i, b in enumerate(doc.spec.bodies) if b.name == "ring")
    doc.apply(edits.set_value(doc.spec, ("bodies", ring, "joint", "q0"), 1.0), "ring q0")
    assert core.compile_scene(doc.spec).q0[0] == pytest.approx(1.0)
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.spec.robot is not None and doc.spec.robot.q0 == {"spin": 0.3}
    with pytest.raises(core.SceneError, match="includes no robot"):
        edits.unpack_robot(core.compile_scene(doc.spec).spec.model_copy(update={"robot": None}))
    shiboken6.delete(doc)


def test_an_included_robots_mimic_joint_draws_no_constraint_force_arrows(tmp_path):
    """A mimic joint of an included robot is a joint-space constraint the document does not declare: the
    viewport's legend must not speak of constraint-force arrows for it (it has none), as for a declared one."""
    from types import SimpleNamespace

    from studio.document.kinds import constraint_kinds
    from studio.qt.viewport.overlays import Overlays
    from test_robots import MIMIC
    spec = core.read_spec(write(tmp_path, MIMIC, "mimic_robot.urdf"))
    model = core.compile_scene(spec)
    assert not spec.constraints and model.constraints[0].name == "mimic_follower"   # (then its <limit> rows)
    assert set(constraint_kinds(model)) == {"joint_space"}
    legend = Overlays.legend(SimpleNamespace(arrow_reference=0.2, force_reference=10.0), model)
    assert "constraint force" not in legend
