"""MJCF import through MuJoCo's compiler (core/scene/mjcf.py): the joint-space inertia and the accelerations
agree with MuJoCo's own ``mj_fullM`` and ``qacc`` at random states (free, hinge, slide and ball joints, several
joints in one body, anchors off the body origin); ``connect`` equalities become point-to-point constraints at
MuJoCo's anchors; bad files are refused with MuJoCo's message. Issue 24: actuators (motor, position, velocity,
general), gravcomp and tendon springs give MuJoCo's qacc for the same ctrl and state; ranges are limits in the
scene's coordinates; joint and fixed-tendon equalities are joint-space constraints at MuJoCo's residual; joints
keep their names beside bodies of the same name; summary.json's base; joints too damped for RK4 at the model's
dt are named with the dt they need; whatever is not imported is named in a warning."""
from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest

import core
from core.scene import SceneError, read_spec

if os.environ.get("CI") is None:
    mujoco = pytest.importorskip("mujoco")
else:                                   # on CI a missing reference is a failure, not a skip
    import mujoco

from core.scene.mjcf import MJCFWarning, mjcf_to_spec  # noqa: E402

MODEL = """
<mujoco model="test">
  <option gravity="0.3 -0.2 -9.81" timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="torso" pos="0.1 0.2 1.0" quat="0.9 0.1 0.3 0.2">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05" pos="0.02 0 0" rgba="0.8 0.2 0.2 1"/>
      <geom type="sphere" size="0.07" pos="0 0.1 0.1"/>
      <body name="upper" pos="0.25 0 0" euler="0.3 0.1 0">
        <joint name="shoulder" type="hinge" axis="0 1 0.3" pos="-0.05 0.01 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <body name="lower" pos="0.3 0 0">
          <joint name="elbow" type="hinge" axis="0 0 1" pos="0.02 0 0.01"/>
          <joint name="telescope" type="slide" axis="1 0 0" pos="0.1 0 0"/>
          <geom type="cylinder" size="0.03 0.12" pos="0.12 0 0" euler="0 1.5708 0"/>
          <body name="hand" pos="0.25 0 0">
            <joint name="wrist" type="ball" pos="0.01 0.02 0"/>
            <geom type="ellipsoid" size="0.05 0.03 0.02" pos="0.04 0 0"/>
          </body>
        </body>
      </body>
      <body name="sensor" pos="0 0 0.12"><geom type="box" size="0.02 0.02 0.02" mass="0.05"/></body>
    </body>
    <body name="bob" pos="1 0 1">
      <joint name="swing" type="hinge" axis="0 1 0" pos="0 0 0.5"/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
  <equality>
    <connect name="tether" body1="bob" body2="world" anchor="0.02 0 0"/>
  </equality>
</mujoco>
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mjcf")
    path = folder / "test.xml"
    path.write_text(MODEL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        model = core.load_scene(path)
    return path, model, mujoco.MjModel.from_xml_path(str(path))


def _maps(model, m, q, qd):
    """MuJoCo's qpos and qvel of our (q, qd), the matrix T with qvel = T qd, and Ṫ qd."""
    qpos, T, Tdot_qd = m.qpos0.copy(), np.zeros((m.nv, model.nv)), np.zeros(m.nv)
    for j in range(m.njnt):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        qs, vs = model.q_slice(name), model.qd_slice(name)
        ia, iv = m.jnt_qposadr[j], m.jnt_dofadr[j]
        jt = m.jnt_type[j]
        if jt == mujoco.mjtJoint.mjJNT_FREE:
            qpos[ia:ia + 7] = q[qs]
            w, v = qd[vs][:3], qd[vs][3:]
            R = core.spatial.quat_to_rotation(q[qs][3:])
            T[iv:iv + 3, vs.start + 3:vs.stop] = R                  # MuJoCo: v in world coordinates, then ω local
            T[iv + 3:iv + 6, vs.start:vs.start + 3] = np.eye(3)
            Tdot_qd[iv:iv + 3] = R @ np.cross(w, v)
        elif jt == mujoco.mjtJoint.mjJNT_BALL:
            qpos[ia:ia + 4] = q[qs]
            T[iv:iv + 3, vs] = np.eye(3)
        else:
            qpos[ia] = q[qs][0] + m.qpos0[ia]
            T[iv, vs] = 1.0
    return qpos, T @ qd, T, Tdot_qd


def test_structure(files):
    _, model, m = files
    assert model.joint_names == ["root", "shoulder", "elbow", "telescope", "wrist", "swing"]
    assert "lower__elbow" in model.link_names                 # the massless link of lower's extra joint
    assert model.nv == m.nv == 6 + 1 + 1 + 1 + 3 + 1
    assert [n for n in model.constraint_names if ".ground." not in n] == ["tether"]
    assert model.spec.ground is None and {c.name for c in model.contacts} >= {"torso.ground"}   # the floor
    assert model.settings["dt"] == 0.002
    np.testing.assert_allclose(model.gravity, [0.3, -0.2, -9.81])
    kinds = sorted(s.kind for s in model.shapes)
    assert kinds == ["box", "box", "box", "capsule", "cylinder", "sphere", "sphere"]   # the ellipsoid as a box
    assert sum(model.mass) == pytest.approx(sum(m.body_mass))


def test_inertia_and_accelerations_agree_with_mujoco(files):
    _, model, m = files
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT   # unconstrained dynamics, as core's ABA
    d = mujoco.MjData(m)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = np.array(model.q0, dtype=float)
        for name in model.joint_names:
            qs = model.q_slice(name)
            if qs.stop - qs.start == 1:
                q[qs] = rng.uniform(-1.5, 1.5) if name != "telescope" else rng.uniform(-0.2, 0.2)
            elif qs.stop - qs.start == 4:
                u = rng.normal(size=4)
                q[qs] = u / np.linalg.norm(u)
            else:
                u = rng.normal(size=4)
                q[qs] = np.concatenate([rng.uniform(-1, 1, 3), u / np.linalg.norm(u)])
        qd = rng.normal(size=model.nv)
        qpos, qvel, T, Tdot_qd = _maps(model, m, q, qd)
        d.qpos[:], d.qvel[:] = qpos, qvel
        tau_mj = rng.normal(size=m.nv) * 5.0
        d.qfrc_applied[:] = tau_mj
        mujoco.mj_forward(m, d)
        M_mj = np.zeros((m.nv, m.nv))
        try:
            mujoco.mj_fullM(m, d, M_mj)                         # MuJoCo 4
        except TypeError:
            mujoco.mj_fullM(m, M_mj, d.qM)                      # MuJoCo 3
        M = core.mass_matrix(model, q)
        np.testing.assert_allclose(M, T.T @ M_mj @ T, atol=1e-12 * np.abs(M).max())
        qdd = core.forward_dynamics(model, q, qd, T.T @ tau_mj)
        np.testing.assert_allclose(T @ qdd + Tdot_qd, d.qacc, atol=1e-9 * np.abs(d.qacc).max())


def test_connect_equality_is_a_point_to_point_constraint_at_mujocos_anchors(files):
    _, model, m = files
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    c, = [k for k in model.constraints if ".ground." not in k.name]     # (the floor's contact rows aside)
    spec = model.spec
    flat = core.scene.robots.expand(spec) if spec.robot is not None else spec
    con, = flat.constraints
    assert (con.type, con.body_a, con.body_b) == ("point_to_point", "bob", "world")
    q = np.array(model.q0, dtype=float)
    p = core.point_position(model, q, "bob", tuple(con.point_a))
    bob = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "bob")
    np.testing.assert_allclose(p, d.xpos[bob] + d.xmat[bob].reshape(3, 3) @ m.eq_data[0][:3], atol=1e-12)
    np.testing.assert_allclose(p, con.point_b, atol=1e-12)    # the world anchor where the bob's anchor starts
    sim = core.Simulation(model, dt=1e-3)
    sim.run(0.5)
    np.testing.assert_allclose(core.point_position(model, sim.state.q, "bob", tuple(con.point_a)), con.point_b,
                               atol=1e-6)                      # held through a simulation…
    free = core.compile_scene(flat.model_copy(update={"constraints": []}))
    loose = core.Simulation(free, dt=1e-3)
    loose.run(0.5)                                             # …where gravity's x component swings it without
    assert np.linalg.norm(core.point_position(free, loose.state.q, "bob", tuple(con.point_a)) - con.point_b) > 1e-3


def test_a_scene_includes_an_mjcf_model_with_q0(files, tmp_path):
    path, _, _ = files
    doc = tmp_path / "scene.json"
    doc.write_text('{"format_version": 1, "name": "s", "robot": {"file": "%s", "q0": {"shoulder": 0.4}}}' % path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        model = core.load_scene(doc)
        assert model.q0[model.q_slice("shoulder")][0] == 0.4
        doc.write_text('{"format_version": 1, "name": "s", "robot": {"file": "%s", "base": "floating"}}' % path)
        with pytest.raises(SceneError) as info:
            read_spec(doc)
    assert info.value.problems[0].path == "$.robot.base"


EXCLUDED = """
<mujoco model="excluded">
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="a" pos="0 0 0.5">
      <joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" pos="0.2 0 0"/>
      <body name="b" pos="0.3 0 0">
        <joint name="jb" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05" pos="0.2 0 0"/>
        <body name="c" pos="0.3 0 0">
          <joint name="jc" type="hinge" axis="0 1 0"/>
          <geom type="sphere" size="0.05" pos="0.2 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <contact>%s</contact>
</mujoco>
"""


def _including(path, collisions: bool = True):
    """The model of a document that includes the MJCF file ``path`` (with ``"collisions": {}`` when asked)."""
    doc = {"format_version": 1, "name": "s", "robot": {"file": str(path)}}
    if collisions:
        doc["collisions"] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        return core.scene.compile_scene(core.scene.parse_spec(doc, str(path.parent / "s.json")))


def test_the_files_excludes_leave_out_body_pairs_and_the_floor(tmp_path):
    """MuJoCo's <exclude body1 body2>: a document that includes the model with "collisions": {} collides its
    bodies' shapes as MuJoCo would (not a parent and its child: a–c here), but not a pair the file excludes;
    an exclude against the world keeps that body off the floor (the scene's ground). Without the document's
    collisions, the file's excludes collide nothing themselves."""
    def model(rules, collisions=True):
        path = tmp_path / "excluded.xml"
        path.write_text(EXCLUDED % rules)
        return _including(path, collisions)

    def pairs(m):
        return {frozenset((c.body, c.plane_body)) for c in m.contacts if c.shape}

    def grounded(m):
        return {c.body for c in m.contacts if not c.shape}

    assert pairs(model("")) == {frozenset(("a", "c"))} and grounded(model("")) == {"a", "b", "c"}
    kept = model('<exclude body1="a" body2="c"/><exclude body1="world" body2="b"/>')
    assert pairs(kept) == set() and grounded(kept) == {"a", "c"}
    alone = model('<exclude body1="a" body2="c"/>', collisions=False)
    assert pairs(alone) == set() and grounded(alone) == {"a", "b", "c"}


PAIRED = """<mujoco model="pairs"><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1" contype="0" conaffinity="0"/>
  <body name="ball" pos="0 0 0.5"><freejoint/>
    <geom name="ball_geom" type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/></body>
  <body name="ghost" pos="1 0 0.5"><freejoint/>
    <geom name="ghost_geom" type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/></body>
  <body name="block" pos="0 1 0.5"><freejoint/>
    <geom name="block_geom" type="box" size="0.1 0.1 0.1" mass="1" contype="0" conaffinity="0"/></body>
</worldbody><contact>
  <pair geom1="floor" geom2="ball_geom"/><pair geom1="ghost_geom" geom2="block_geom"/>
</contact></mujoco>"""


@pytest.mark.parametrize("own_ground", [False, True])
def test_a_pair_with_the_floor_makes_its_geom_touch_the_ground(tmp_path, own_ground):
    """MuJoCo's <pair geom1="floor" geom2="ball_geom"/> on geoms that collide with nothing by their filter
    (contype = conaffinity = 0, drawn only before): the ball lands on the ground and rests at its radius, as in
    MuJoCo itself (whose soft contact sinks it ~1e-3 m), and the unpaired bodies fall through the floor in both; with
    the document's own ground too. The rules are named in a warning (their own friction is not imported)."""
    path = tmp_path / "pairs.xml"
    path.write_text(PAIRED)
    doc = {"format_version": 1, "name": "s", "robot": {"file": str(path)}}
    if own_ground:
        doc["ground"] = {"friction": 0.5}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = core.scene.compile_scene(core.scene.parse_spec(doc, str(tmp_path / "s.json")))
    said = " ".join(str(w.message) for w in caught)
    assert "2 <pair> contact rule(s) are imported as filter bits" in said and "not imported (" not in said
    assert [c.name for c in model.contacts] == ["ball.ground"]       # (the other pair: when the document asks)
    sim = core.Simulation(model)
    sim.run(1.0)
    z = sim.state.q.reshape(-1, 7)[:, 2]
    assert z[0] == pytest.approx(0.1, abs=1e-9) and z[1] < -1.0 and z[2] < -1.0
    m = mujoco.MjModel.from_xml_string(PAIRED)
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d, int(1.0 / m.opt.timestep))
    assert d.qpos[2] == pytest.approx(0.1, abs=2e-3) and d.qpos[9] < -1.0 and d.qpos[16] < -1.0


PAIRED_BODIES = """<mujoco model="paired_bodies"><worldbody>
  <geom name="floor" type="plane" size="5 5 0.1"/>
  <body name="table" pos="0 0 0.2">
    <geom name="top" type="box" size="0.3 0.3 0.05" contype="0" conaffinity="0"/></body>
  <body name="ball" pos="0.05 -0.02 0.6"><freejoint/>
    <geom name="ball_geom" type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/></body>
  <body name="ghost" pos="0.15 0.15 0.8"><freejoint/>
    <geom name="ghost_geom" type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  <body name="arm" pos="1 0 1"><joint name="swing" type="hinge" axis="0 1 0"/>
    <geom name="upper" type="capsule" fromto="0 0 0 0 0 -0.2" size="0.03" mass="1" contype="0" conaffinity="0"/>
    <body name="forearm" pos="0 0 -0.3"><joint name="bend" type="hinge" axis="0 1 0"/>
      <geom name="lower" type="capsule" fromto="0 0 -0.05 0 0 -0.3" size="0.03" mass="1" contype="0" conaffinity="0"/>
    </body></body>
</worldbody><contact>
  <pair geom1="ball_geom" geom2="top"/><pair geom1="upper" geom2="lower"/>
</contact></mujoco>"""


def test_a_pair_between_two_bodies_geoms_makes_them_collide(tmp_path):
    """MuJoCo's <pair geom1="ball_geom" geom2="top"/> between a free ball and a table's top, both filtered out
    of every collision (contype = conaffinity = 0; the floor's filter does not meet theirs): with the document's
    "collisions": {} the ball lands on the top and rests at the top's height plus its radius, as in MuJoCo (whose
    soft contact sinks it ~1e-3 m), while an unpaired ball passes through the table and the floor in both; without
    the document's collisions the pair collides nothing (a scene collides shapes when its document asks). A pair
    between a parent and its child (an arm's upper and lower capsules, left out as a parent and its child
    otherwise) is kept by the collisions' include_pairs, and no other pair of shapes collides."""
    path = tmp_path / "paired.xml"
    path.write_text(PAIRED_BODIES)

    def model(collisions=True):
        return _including(path, collisions)

    paired = model()
    assert sorted({frozenset((c.body, c.plane_body)) for c in paired.contacts if c.shape}, key=sorted) == \
        [frozenset(("arm", "forearm")), frozenset(("ball", "table"))]
    sim = core.Simulation(paired)
    sim.run(1.0)

    def height(sim, body):
        return core.point_position(sim.model, sim.state.q, body, [0, 0, 0])[2]

    assert height(sim, "ball") == pytest.approx(0.2 + 0.05 + 0.1, abs=1e-8) and height(sim, "ghost") < -1.0
    apart = core.Simulation(model(collisions=False))
    apart.run(1.0)
    assert height(apart, "ball") < -1.0
    m = mujoco.MjModel.from_xml_string(PAIRED_BODIES)
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d, int(1.0 / m.opt.timestep))
    assert d.body("ball").xpos[2] == pytest.approx(0.35, abs=2e-3) and d.body("ghost").xpos[2] < -1.0


@pytest.mark.parametrize("text, message", [
    ("garbage", "MuJoCo's compiler refused the file"),
    ("<mujoco><worldbody><body><joint type='hinge'/></body></worldbody></mujoco>", "MuJoCo's compiler refused"),
    ("<mujoco><worldbody><body name='a'><geom size='-1'/></body></worldbody></mujoco>", "MuJoCo's compiler refused"),
])
def test_bad_files_are_refused_with_mujocos_message(tmp_path, text, message):
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(SceneError, match=message):
        mjcf_to_spec(path)
    from core.__main__ import main
    assert main(["validate", str(path)]) == 2


def test_a_pipe_is_not_read(tmp_path):
    fifo = tmp_path / "model.xml"
    os.mkfifo(fifo)
    with pytest.raises(SceneError, match="not a regular file"):
        mjcf_to_spec(fifo)


def test_a_mesh_geom_is_drawn_from_its_file_where_mujoco_puts_it(tmp_path):
    """MuJoCo moves a mesh to its centre of mass and principal axes; the drawn triangles land where MuJoCo's own
    vertices are in the world. A file that does not match MuJoCo's vertices is drawn as the bounding box."""
    from studio.qt.viewport.meshes import shape_mesh
    (tmp_path / "assets").mkdir()
    v = np.array([[0.1, 0.2, 0.3], [0.5, 0.2, 0.3], [0.1, 0.9, 0.3], [0.1, 0.2, 1.6], [0.4, 0.6, 0.9]])
    faces = [[1, 3, 2], [1, 2, 4], [1, 4, 3], [2, 3, 4], [2, 5, 4], [3, 5, 4]]
    obj = "".join(f"v {a} {b} {c}\n" for a, b, c in v) + "".join(f"f {a} {b} {c}\n" for a, b, c in faces)
    (tmp_path / "assets" / "part.obj").write_text(obj)
    xml = tmp_path / "m.xml"
    xml.write_text('<mujoco><compiler meshdir="assets"/><asset><mesh name="part" file="part.obj" scale="1 2 0.5"/>'
                   '</asset><worldbody><body name="b" pos="0 0 1" euler="0.2 0.3 0"><joint type="hinge" '
                   'pos="0.05 0 0"/><geom type="mesh" mesh="part" pos="0.1 0 0" euler="0 0 0.4"/></body>'
                   '</worldbody></mujoco>')
    model = core.compile_scene(mjcf_to_spec(xml))
    s, = model.shapes
    assert s.kind == "mesh" and s.size["scale"] == (1.0, 2.0, 0.5)
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    theirs = d.geom_xpos[0] + m.mesh_vert[:m.mesh_vertnum[0]] @ d.geom_xmat[0].reshape(3, 3).T
    R_WL, p_WL, _ = core.forward_kinematics(model, model.q0)
    drawn = shape_mesh(s).vertexes().astype(float)
    ours = p_WL[s.link] + (s.p_LS + drawn @ s.R_LS.T) @ R_WL[s.link].T
    assert np.abs(ours[:, None, :] - theirs[None]).sum(axis=-1).min(axis=1).max() < 1e-6

def test_a_mesh_file_that_does_not_match_mujocos_vertices_is_drawn_as_their_box(tmp_path, monkeypatch):
    import core.meshfile
    from core.meshfile import MeshFile
    (tmp_path / "part.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    xml = tmp_path / "m.xml"
    xml.write_text('<mujoco><asset><mesh name="p" file="part.obj"/></asset><worldbody><body name="b">'
                   '<joint type="hinge"/><geom type="mesh" mesh="p"/></body></worldbody></mujoco>')
    other = MeshFile(np.array([[0, 0, 0], [2.0, 0, 0], [0, 1, 0], [0, 0, 1]]), np.array([[0, 2, 1]]), None)
    monkeypatch.setattr(core.meshfile, "read_mesh", lambda path, file_type=None: other)   # not what MuJoCo read
    with pytest.warns(MJCFWarning, match="could not be matched"):
        spec = mjcf_to_spec(xml)
    box = spec.bodies[0].shapes[0]
    assert box.type == "box"
    m = mujoco.MjModel.from_xml_path(str(xml))
    v = m.mesh_vert[:m.mesh_vertnum[0]]
    np.testing.assert_allclose(box.size, np.ptp(v, axis=0), rtol=1e-6)


PASSIVE = """
<mujoco model="passive">
  <option gravity="0.2 0 -9.81"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" type="hinge" axis="0 1 0" armature="0.3" damping="0.7" stiffness="4" springref="0.4"
             ref="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03"/>
      <body name="b" pos="0.4 0 0">
        <joint name="j2" type="slide" axis="1 0 0.2" armature="0.05" damping="1.5" stiffness="20"/>
        <geom type="box" size="0.05 0.05 0.05"/>
        <body name="c" pos="0.1 0 0">
          <joint name="j3" type="hinge" axis="0 0 1" armature="0.02" frictionloss="0.1"/>
          <geom type="sphere" size="0.04" pos="0.1 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_armature_damping_and_springs_agree_with_mujoco(tmp_path):
    """A hinge's or slide's armature joins the joint-space inertia and its damping and stiffness become a joint
    spring (rest = springref − ref): M against ``mj_fullM`` and the accelerations of the whole evaluation (passive
    forces included) against MuJoCo's ``qacc`` at random states; friction loss is named as not imported."""
    path = tmp_path / "passive.xml"
    path.write_text(PASSIVE)
    with pytest.warns(MJCFWarning, match=r"friction loss.*\(joints: j3\)"):
        model = core.load_scene(path)
    np.testing.assert_allclose(model.armature, [0.3, 0.05, 0.02])
    assert [f.name for f in model.forces] == ["j1_passive", "j2_passive"]      # (the robot's, in the flat scene)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        springs = {f.name: f for f in mjcf_to_spec(str(path)).forces}
    assert springs["j1_passive"].rest == pytest.approx(np.deg2rad(0.4 - 0.1)) and springs["j2_passive"].stiffness == 20
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT       # (friction loss is a constraint there)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q, qd = rng.uniform(-1, 1, 3), rng.normal(size=3)
        d.qpos[:], d.qvel[:] = q + m.qpos0, qd
        mujoco.mj_forward(m, d)
        M_mj = np.zeros((m.nv, m.nv))
        try:
            mujoco.mj_fullM(m, d, M_mj)
        except TypeError:
            mujoco.mj_fullM(m, M_mj, d.qM)
        np.testing.assert_allclose(core.mass_matrix(model, q), M_mj, atol=1e-12)
        state = model.initial_state()
        state.q[:], state.qd[:] = q, qd
        np.testing.assert_allclose(core.evaluate(model, state).qdd, d.qacc, atol=1e-9 * np.abs(d.qacc).max())


@pytest.mark.parametrize("body, what", [
    ('<replicate count="1000"><replicate count="1000"><body><geom size="0.1"/></body></replicate></replicate>',
     "once its <replicate> elements are expanded"),
    ('<flexcomp name="f" type="grid" count="300 300 1" spacing="0.01 0.01 0.01" dim="2"/>',
     "a flexcomp of 90000 points"),
    ('<body><geom type="mesh" mesh="m"/></body>', "part.stl is not a regular file"),
    ('<body><geom size="0.1"/></body>', "cannot read more.xml: not a regular file (a pipe (FIFO))"),
])
def test_mjcf_bombs_are_refused_before_mujoco_compiles_them(tmp_path, body, what):
    """Issue 28, reproducer 6: a 200-byte nested <replicate count="1000"> ran 400 s and 2.1 GB inside MuJoCo's
    compiler; a flexcomp likewise; an <include> or <mesh> that is a FIFO blocked it. The file's XML is read for
    them first: refused at once, naming the element."""
    os.mkfifo(tmp_path / "part.stl")
    os.mkfifo(tmp_path / "more.xml")
    extra = ('<asset><mesh name="m" file="part.stl"/></asset>' if "mesh" in body else
             '<include file="more.xml"/>' if "cannot read more" in what else "")
    path = tmp_path / "bomb.xml"
    path.write_text(f"<mujoco>{extra}<worldbody>{body}</worldbody></mujoco>")
    with pytest.raises(SceneError, match=re.escape(what)):
        mjcf_to_spec(path)


DRIVEN = """
<mujoco model="driven">
  <compiler angle="radian"/>
  <option gravity="0.2 0.1 -9.81" timestep="0.002"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" range="-1 1.5" ref="0.2" damping="0.3" armature="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      <body name="fore" pos="0.3 0 0" gravcomp="0.7">
        <joint name="elbow" type="hinge" axis="0 0.3 1" range="-2 2" actuatorfrcrange="-4 5"/>
        <geom type="box" size="0.1 0.05 0.05" pos="0.1 0 0"/>
        <body name="slide" pos="0.2 0 0" gravcomp="1">
          <joint name="reach" type="slide" axis="1 0 0" range="-0.1 0.2" ref="0.05"/>
          <geom type="sphere" size="0.05" pos="0 0.02 0"/>
          <body name="hand" pos="0.1 0 0">
            <joint name="wrist" type="hinge" axis="1 0 0"/>
            <geom type="sphere" size="0.04" pos="0 0.05 0"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="single" stiffness="3" damping="0.2" springlength="0.1"><joint joint="wrist" coef="2"/></fixed>
  </tendon>
  <actuator>
    <motor name="m1" joint="shoulder" gear="2" ctrlrange="-1 1" forcerange="-1.5 1"/>
    <position name="p2" joint="elbow" kp="20" kv="1.5" gear="1.5" ctrlrange="-1 1"/>
    <velocity name="v3" joint="reach" kv="4"/>
    <general name="g4" joint="wrist" gainprm="3" biastype="affine" biasprm="0.1 -2 -0.3" gear="-1.2"
             forcerange="-2 2" forcelimited="true"/>
    <position name="p5" joint="reach" kp="50" ctrlrange="-0.5 0.5"/>
  </actuator>
</mujoco>
"""


def _qacc_pairs(model, m, rng, n=6, ctrl_scale=1.5):
    """(ours, MuJoCo's) accelerations at random states inside the joint ranges and random controls (some
    outside their ctrlrange): MuJoCo's with its constraints off (the limits are not touched)."""
    from core.inputs import NO_INPUTS
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    d = mujoco.MjData(m)
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu)]
    for _ in range(n):
        lo = np.where(m.jnt_limited, m.jnt_range[:, 0], -1.0) - m.qpos0
        hi = np.where(m.jnt_limited, m.jnt_range[:, 1], 1.0) - m.qpos0
        q = rng.uniform(0.9 * lo, 0.9 * hi)
        qd, ctrl = rng.normal(size=m.nv), rng.uniform(-ctrl_scale, ctrl_scale, m.nu)
        d.qpos[:], d.qvel[:], d.ctrl[:] = q + m.qpos0, qd, ctrl
        mujoco.mj_forward(m, d)
        state = model.initial_state()
        state.q[:], state.qd[:] = q, qd
        inputs = NO_INPUTS.with_(actuators=dict(zip(names, map(float, ctrl))))
        yield core.evaluate(model, state, inputs).qdd, d.qacc.copy()


def test_actuators_gravcomp_and_tendon_springs_agree_with_mujoco(tmp_path):
    """Issue 24: motor (gear, ctrlrange, an asymmetric forcerange), position (kp, kv), velocity and general
    (affine bias, negative gear) actuators with joint transmissions, a joint's actuatorfrcrange, gravcomp on two
    bodies and a one-joint fixed tendon's spring, with refs: the same ctrl in the same state gives MuJoCo's qacc
    (mj_forward) to round-off."""
    path = tmp_path / "driven.xml"
    path.write_text(DRIVEN)
    model = core.load_scene(path)
    m = mujoco.MjModel.from_xml_path(str(path))
    spec = mjcf_to_spec(path)
    acts = {f.name: f for f in spec.forces if f.type == "actuator"}
    assert list(acts) == ["m1", "p2", "v3", "g4", "p5"]
    assert acts["m1"].force_range == (-3.0, 2.0) and acts["m1"].command_range == (-1.0, 1.0)
    assert acts["p2"].force_range == (-4.0, 5.0)            # the joint's actuatorfrcrange
    assert acts["g4"].limit == pytest.approx(2.4)
    assert {f.name for f in spec.forces if f.type == "point_force"} == {"fore_gravcomp", "slide_gravcomp"}
    rng = np.random.default_rng(11)
    for ours, theirs in _qacc_pairs(model, m, rng):
        np.testing.assert_allclose(ours, theirs, atol=1e-10 * np.abs(theirs).max())
    # without the actuators, gravcomp and the tendon spring the accelerations differ: they are what is compared
    bare = core.compile_scene(spec.model_copy(update={"forces": [f for f in spec.forces
                                                                 if f.type == "joint_spring" and
                                                                 f.name.endswith("_passive")]}))
    state = bare.initial_state()
    assert np.abs(core.evaluate(bare, state).qdd - core.evaluate(model, state).qdd).max() > 1.0


def test_joint_ranges_become_limits_in_the_scenes_coordinates(tmp_path):
    """A hinge's or slide's range is its limits, moved by ref (q = qpos − qpos0), and the joint stops there: a
    limp arm falls onto its shoulder's lower bound instead of swinging through it."""
    path = tmp_path / "driven.xml"
    path.write_text(DRIVEN)
    model = core.load_scene(path)
    spec = mjcf_to_spec(path)
    joints = {b.joint.name: b.joint for b in spec.bodies}
    assert joints["shoulder"].limits == pytest.approx((-1.2, 1.3))
    assert joints["reach"].limits == pytest.approx((-0.15, 0.15))
    assert joints["wrist"].limits is None
    sim = core.Simulation(core.compile_scene(spec.model_copy(update={"forces": []})), dt=1e-3)
    sim.run(1.5)
    q = sim.state.q[sim.model.q_slice("shoulder")][0]
    assert -1.2 - 1e-6 <= q <= 1.3 + 1e-6
    assert any(e.kind.startswith("limit") for e in sim.events)
    doc = tmp_path / "scene.json"                  # a q0 outside the range is refused at the include's q0
    doc.write_text('{"format_version": 1, "name": "s", "robot": {"file": "driven.xml", "q0": {"shoulder": 1.4}}}')
    with pytest.raises(SceneError) as info:
        core.load_scene(doc)
    assert [p.path for p in info.value.problems] == ["$.robot.q0.shoulder"]
    assert "outside the joint's range [-1.2, 1.3]" in str(info.value)


SERVO = """
<mujoco model="servo">
  <compiler angle="radian"/>
  <option timestep="0.001" integrator="RK4"/>
  <worldbody>
    <body name="upper" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" ref="0.3" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      <body name="fore" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" armature="0.002"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.03"/>
        <body name="tip" pos="0.25 0 0">
          <joint name="reach" type="slide" axis="1 0 0"/>
          <geom type="sphere" size="0.04"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="lift" joint="shoulder" kp="60" kv="2" ctrlrange="-2 2"/>
    <position name="bend" joint="elbow" kp="25" kv="0.5" gear="2" forcerange="-12 12"/>
    <general name="push" joint="reach" gainprm="40" biastype="affine" biasprm="1 -40 -4"/>
  </actuator>
</mujoco>
"""


def test_position_actuators_drive_the_arm_as_in_mujoco(tmp_path):
    """Driven by its file's own actuators (position servos with gear, a force range, a ref, and a general
    servo), the arm follows MuJoCo's trajectory: 1 s of both at the file's dt with RK4 (MuJoCo's constraints off:
    nothing here touches a limit), the same controls, within 1e-7 rad at every recorded step."""
    path = tmp_path / "servo.xml"
    path.write_text(SERVO)
    model = core.load_scene(path)
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    d = mujoco.MjData(m)
    ctrl = {"lift": 0.9, "bend": -0.4, "push": 0.05}
    d.ctrl[:] = list(ctrl.values())
    theirs = []
    for _ in range(1000):
        mujoco.mj_step(m, d)
        theirs.append(d.qpos - m.qpos0)
    sim = core.Simulation(model, dt=m.opt.timestep)
    for name, u in ctrl.items():
        sim.set_actuator(name, u)
    ours = sim.run(1.0)["q"]
    np.testing.assert_allclose(ours[-1000:], np.array(theirs), atol=1e-7)
    assert abs(theirs[-1][0] - (0.9 - 0.3)) < 0.1                # (it did move: toward its target, qpos = ctrl)


COUPLED = """
<mujoco model="coupled">
  <compiler angle="radian"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="ja" type="hinge" axis="0 1 0" ref="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      <body name="b" pos="0.3 0 0">
        <joint name="jb" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <body name="c" pos="0.3 0 0">
          <joint name="jc" type="slide" axis="1 0 0" ref="0.02"/>
          <geom type="sphere" size="0.05"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="sum"><joint joint="ja" coef="1"/><joint joint="jb" coef="0.5"/></fixed>
    <fixed name="other"><joint joint="jc" coef="2"/></fixed>
    <fixed name="spring" stiffness="4"><joint joint="ja" coef="1"/><joint joint="jb" coef="-1"/></fixed>
    <spatial name="rope" limited="true" range="0 1"><site site="s1"/><site site="s2"/></spatial>
  </tendon>
  <equality>
    <joint name="follow" joint1="jb" joint2="ja" polycoef="0.05 -0.8 0.3 0 0"/>
    <tendon name="tie" tendon1="other" tendon2="sum" polycoef="0 0.1 0 0 0"/>
  </equality>
  <actuator><motor name="pull" tendon="sum"/></actuator>
</mujoco>
"""


def test_joint_and_fixed_tendon_couplings_are_joint_space_constraints(tmp_path):
    """Joint equalities and equalities between fixed tendons become joint-space constraints in the scene's
    coordinates (q = qpos − qpos0): at states on MuJoCo's relation the constraint's residual is zero (MuJoCo's
    efc_pos of the equality); tendon springs over several joints, spatial tendons and a tendon actuator are named
    in the warning."""
    text = COUPLED.replace('<body name="c" pos="0.3 0 0">',
                           '<site name="s1"/><body name="c" pos="0.3 0 0"><site name="s2"/>')
    path = tmp_path / "coupled.xml"
    path.write_text(text)
    with pytest.warns(MJCFWarning) as said:
        spec = mjcf_to_spec(path)
    text = " ".join(str(w.message) for w in said)
    assert "pull (tendon transmission)" in text
    assert "spring (stiffness)" in text and "rope (limits, spatial)" in text
    cons = {c.name: c for c in spec.constraints}
    assert set(cons) == {"follow", "tie"}
    from core.joint_constraints import parse_expression
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(5)
    for _ in range(5):
        d.qpos[:] = m.qpos0 + rng.uniform(-0.5, 0.5, m.nq)
        mujoco.mj_forward(m, d)
        q = dict(zip(["ja", "jb", "jc"], d.qpos - m.qpos0))
        residual = {}
        for e, name in enumerate(["follow", "tie"]):
            rows = [i for i in range(d.nefc) if d.efc_type[i] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
                    and d.efc_id[i] == e]
            residual[name] = d.efc_pos[rows[0]]
            value = float(parse_expression(cons[name].expression).evaluate(q))
            assert value == pytest.approx(residual[name], abs=1e-12)


NAMESAKES = """
<mujoco model="namesakes">
  <compiler angle="radian"/>
  <worldbody>
    <body name="thorax" pos="0 0 1">
      <freejoint name="free"/>
      <geom type="box" size="0.1 0.05 0.05"/>
      <body name="abdomen" pos="0.1 0 0">
        <joint name="abdomen" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03"/>
        <body name="tail" pos="0.2 0 0">
          <joint name="abdomen_2" type="hinge" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
          <body name="wing" pos="0.1 0 0"><geom type="sphere" size="0.02"/></body>
        </body>
      </body>
      <body name="leg" pos="0 0 -0.1">
        <joint name="wing" type="hinge" axis="1 0 0"/>
        <joint name="leg" type="slide" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.2" size="0.02"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_a_joint_keeps_its_name_when_a_body_has_it(tmp_path):
    """Issue 24: flybody's ``abdomen`` joint (in body ``abdomen``) became ``abdomen_2``, the name of another joint.
    Bodies and joints are separate namespaces: every joint keeps its MuJoCo name (a body welded without joints,
    ``wing``, does not take the joint ``wing``'s name either), no warning of renaming, and the dynamics agree
    with MuJoCo's joint by joint."""
    path = tmp_path / "namesakes.xml"
    path.write_text(NAMESAKES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = core.load_scene(path)
    assert not [w for w in caught if "renam" in str(w.message)]
    assert model.joint_names == ["free", "abdomen", "abdomen_2", "wing", "leg"]
    assert {"abdomen", "tail", "wing", "leg"} <= set(model.body_names)
    m = mujoco.MjModel.from_xml_path(str(path))
    for j in range(m.njnt):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        assert model.qd_slice(name).start == m.jnt_dofadr[j]
    d = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    q = np.array(model.q0, dtype=float)
    q[7:] = rng.uniform(-1, 1, 4)
    qd = rng.normal(size=model.nv)
    qpos, qvel, T, Tdot_qd = _maps(model, m, q, qd)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    qdd = core.forward_dynamics(model, q, qd, np.zeros(model.nv))
    np.testing.assert_allclose(T @ qdd + Tdot_qd, d.qacc, atol=1e-9 * np.abs(d.qacc).max())


def test_the_summary_says_a_floating_mjcf_robot_is_floating(files, tmp_path):
    """summary.json said "base": "fixed" for every MJCF robot (the include's default); an MJCF model's base is
    what its root bodies' joints are."""
    import json

    from core.__main__ import main
    path, _, _ = files
    out = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        assert main(["run", str(path), "--duration", "0.004", "--out", str(out), "--quiet"]) == 0
    robot = json.loads((out / "summary.json").read_text())["robot"]
    assert robot["base"] == "floating" and robot["floating_bodies"] == ["torso"]
    fixed = tmp_path / "fixed.xml"
    fixed.write_text(DRIVEN)
    assert main(["run", str(fixed), "--duration", "0.004", "--out", str(tmp_path / "r2"), "--quiet"]) == 0
    robot = json.loads((tmp_path / "r2" / "summary.json").read_text())["robot"]
    assert robot["base"] == "fixed" and robot["floating_bodies"] == []


STIFF = """
<mujoco model="stiff">
  <option timestep="0.01" integrator="RK4"/>
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="soft" type="hinge" axis="0 1 0" damping="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04" mass="1"/>
      <body name="b" pos="0.3 0 0">
        <joint name="stiff" type="hinge" axis="0 1 0" damping="5" armature="0.001"/>
        <geom type="sphere" size="0.02" mass="0.01"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_validate_and_run_name_a_joint_damped_beyond_rk4s_bound(tmp_path, capsys):
    """A joint's damping over its effective inertia (armature included) times dt beyond RK4's bound (2.785):
    validate says which joint, its λ·dt and the dt it needs, and that dt is the stable one — the run at the file's
    dt diverges, at the advised dt it does not; the run warns too."""
    from core.__main__ import main
    from core.scene.stiffness import RK4_REAL_BOUND, stiff_joints
    path = tmp_path / "stiff.xml"
    path.write_text(STIFF)
    model = core.load_scene(path)
    (s,) = stiff_joints(model)
    H_inv = np.linalg.inv(core.mass_matrix(model, model.q0))
    assert s.joint == "stiff" and s.inertia == pytest.approx(1 / H_inv[1, 1])
    assert s.rate_dt == pytest.approx(5 * H_inv[1, 1] * 0.01) and s.rate_dt > RK4_REAL_BOUND
    assert s.needed_dt == pytest.approx(RK4_REAL_BOUND / (5 * H_inv[1, 1]), rel=1e-4)
    assert main(["validate", str(path)]) == 0
    said = capsys.readouterr().out
    assert "joint 'stiff' is too stiff for RK4 at dt = 0.01 s" in said and f"λ·dt = {s.rate_dt:.3g}" in said
    assert f"dt ≤ {s.needed_dt:.3g} s" in said and "'soft'" not in said
    with pytest.raises(core.DivergenceError):
        core.Simulation(model).run(0.5)
    sim = core.Simulation(model, dt=0.95 * s.needed_dt)
    sim.run(0.5)
    assert np.isfinite(sim.state.qd).all() and np.abs(sim.state.qd).max() < 20
    assert stiff_joints(model, dt=0.95 * s.needed_dt) == []
    assert main(["run", str(path), "--duration", "0.02", "--out", str(tmp_path / "r"), "--quiet"]) == 3
    assert "joint 'stiff' is too stiff" in capsys.readouterr().err


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
def test_a_stiffly_damped_model_runs_at_its_own_dt_with_mujocos_implicit_damping(tmp_path, capsys, integrator):
    """The same stiff model under MuJoCo's Euler (its default) or implicitfast integrator is imported with the
    implicitfast step (core.integrators): the joint damped at λ·dt ≈ 50 (18 times RK4's bound) runs at the file's
    dt without diverging, validate names no joint, and the trajectory is MuJoCo's own to round-off over 2 s
    (no actuators: MuJoCo's Euler and implicitfast both take (M + h D) q̈ = τ − b here)."""
    from core.__main__ import main
    from core.scene.stiffness import RK4_REAL_BOUND, stiff_joints
    path = tmp_path / "stiff.xml"
    path.write_text(STIFF.replace('integrator="RK4"', f'integrator="{integrator}"'))
    model = core.load_scene(path)
    assert model.settings["integrator"] == "implicitfast"
    assert stiff_joints(model) == [] and stiff_joints(model, integrator="rk4")[0].rate_dt > 15 * RK4_REAL_BOUND
    assert main(["validate", str(path)]) == 0 and "too stiff" not in capsys.readouterr().out
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    d.qpos[:] = [0.4, -1.0]
    d.qvel[:] = [0.0, 3.0]
    theirs = []
    for _ in range(200):
        mujoco.mj_step(m, d)
        theirs.append(np.concatenate([d.qpos, d.qvel]))
    sim = core.Simulation(model)
    sim.state = core.State(t=0.0, q=np.array([0.4, -1.0]), qd=np.array([0.0, 3.0]))
    records = sim.run(2.0)
    ours = np.column_stack([records["q"], records["qd"]])[-200:]
    np.testing.assert_allclose(ours, np.array(theirs), atol=1e-12)
    assert abs(theirs[-1][3]) < 0.5 and abs(theirs[-1][1] - theirs[-1][0]) > 0   # (it moved, and damped)


def test_actuator_armature_and_damping_join_the_joints(tmp_path):
    """MuJoCo 4's actuator ``armature`` and ``damping`` act on the joint through the gear (gear² times each): the
    imported joint's armature and damper carry them, and the accelerations agree with MuJoCo's."""
    path = tmp_path / "actdamp.xml"
    path.write_text("""<mujoco><compiler angle="radian"/><worldbody><body name="a" pos="0 0 1">
      <joint name="ja" type="hinge" axis="0 1 0" damping="0.1"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
      <body name="b" pos="0.3 0 0"><joint name="jb" type="slide" axis="1 0 0"/><geom type="sphere" size="0.05"/>
      </body></body></worldbody><actuator>
      <motor name="ma" joint="ja" gear="3" damping="0.2" armature="0.03"/>
      <position name="pb" joint="jb" kp="10" damping="0.5" armature="0.01" gear="0.5"/></actuator></mujoco>""")
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError:
        pytest.skip("this MuJoCo has no actuator armature and damping (MuJoCo 4 has)")
    model = core.load_scene(path)
    np.testing.assert_allclose(model.armature, [9 * 0.03, 0.25 * 0.01])
    for ours, theirs in _qacc_pairs(model, m, np.random.default_rng(1), n=4):
        np.testing.assert_allclose(ours, theirs, atol=1e-10 * np.abs(theirs).max())


def test_what_is_not_imported_is_named(tmp_path):
    """Issue 24: nothing is dropped silently — actuators with activation dynamics, a state-dependent gain or a
    site transmission, a ball joint's cone limit, a weld, and the medium's fluid forces are each named in an
    MJCFWarning (before, fluid forces and actuators went unsaid)."""
    path = tmp_path / "dropped.xml"
    path.write_text("""<mujoco><compiler angle="radian"/><option density="1.2" viscosity="1e-5"/>
      <worldbody><body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/><site name="tip" pos="0.3 0 0"/>
      <body name="b" pos="0.3 0 0"><joint name="ball" type="ball" range="0 0.5"/><geom type="sphere" size="0.05"/>
      </body></body><body name="c" pos="1 0 0"><freejoint/><geom size="0.1"/></body></worldbody>
      <equality><weld name="glue" body1="c"/></equality>
      <actuator><position name="slow" joint="ja" kp="5" timeconst="0.1"/><damper name="brake" joint="ja" kv="2" ctrlrange="0 1"/>
      <intvelocity name="integral" joint="ja" kp="3" actrange="-1 1"/><motor name="thrust" site="tip" gear="1 0 0 0 0 0"/>
      <motor name="kept" joint="ja"/></actuator></mujoco>""")
    with pytest.warns(MJCFWarning) as said:
        spec = mjcf_to_spec(path)
    text = " ".join(str(w.message) for w in said)
    for what in ("slow (filterexact activation dynamics)", "brake (a gain that depends on the state)",
                 "integral (integrator activation dynamics)", "thrust (site transmission)",
                 "ball joint limits (a cone) are not imported (joints: ball)", "glue (weld)",
                 "fluid forces (density 1.2 kg/m³, viscosity 1e-05 Pa·s) are not imported"):
        assert what in text
    assert [f.name for f in spec.forces if f.type == "actuator"] == ["kept"]
