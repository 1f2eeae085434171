"""Real robots: every URDF of the ``example-robot-data`` package (a test dependency) either loads and agrees with
Pinocchio (CRBA, RNEA, ABA at random states) or is refused for a genuine problem, with the message asserted;
robot files included in scene documents (overrides, references, JSON paths, saving relative paths); mimic joints
held as joint-space constraints in a simulation; the inertia policy; a singular initial state and its way out."""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import core
from core.inertia import inertia_problem, nearest_physical_inertia
from core.scene import SceneError, read_spec, save_spec
from core.urdf import URDFWarning, urdf_to_spec

if os.environ.get("CI") is None:
    pinocchio = pytest.importorskip("pinocchio")
else:                                   # on CI a missing reference is a failure, not a skip
    import pinocchio

from test_urdf import PinocchioMap, random_state, write, link, joint  # noqa: E402  (shared helpers)


def _robots_root() -> Path | None:
    """The ``robots`` folder of the installed example-robot-data (a cmeel package: no importable module)."""
    import sysconfig
    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        p = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if p.is_dir():
            return p
    return None


ROBOTS = _robots_root()
if ROBOTS is None and os.environ.get("CI") is not None:
    raise RuntimeError("example-robot-data is not installed (pip install -e .[test])")
FILES = sorted(str(p.relative_to(ROBOTS)) for p in ROBOTS.rglob("*.urdf")) if ROBOTS else []
needs_robots = pytest.mark.skipif(ROBOTS is None, reason="example-robot-data is not installed")

# Files refused under the default policy, each for a genuine problem, and a part of the message that says which.
# "repair" marks the ones the inertia policy "repair" then loads.
REFUSED = {
    "alex_description/urdf/alex_psyonic_hands.urdf":
        ("robot/joint[@name='Left_index_q2']/mimic/@joint: no joint of that name in this robot", None),
    "allegro_hand_description/urdf/allegro_left_hand.urdf": ("violate the triangle inequality", "repair"),
    "allegro_hand_description/urdf/allegro_right_hand.urdf": ("violate the triangle inequality", "repair"),
    "anymal_c_simple_description/urdf/anymal.urdf":
        ("robot/link[@name='depth_camera_front_camera']/inertial: principal moments", "repair"),
    "hyq_description/robots/hyq_no_sensors.urdf": ("robot/link[@name='lf_foot']/inertial", "repair"),
    "icub_description/robots/icub.urdf": ("of joint 'neck_roll' moves no mass", "q0"),
    "pr2_description/urdf/pr2.urdf": ("robot/link[@name='sensor_mount_link']/inertial", "repair"),
    "romeo_description/urdf/romeo.urdf": ("of joint 'LHand' moves no mass", None),
    "romeo_description/urdf/romeo_laas_small.urdf":      # repaired, its grippers still move no mass: refused
        ("robot/link[@name='body']/inertial: inertia must be positive semi-definite",
         "repair, then: of joint 'l_gripper_joint' moves no mass"),
    "romeo_description/urdf/romeo_small.urdf": ("robot/link[@name='RShoulderYawLink']/inertial", "repair"),
    "tiago_description/robots/tiago.urdf": ("robot/link[@name='base_antenna_left_link']/inertial", "repair"),
    "tiago_description/robots/tiago_dual.urdf": ("robot/link[@name='base_antenna_left_link']/inertial", "repair"),
    "tiago_description/robots/tiago_no_hand.urdf":
        ("robot/link[@name='base_antenna_left_link']/inertial", "repair"),
    "ur_description/urdf/ur3.urdf": ("the robot has no <link>", None),
}
ICUB_POSE = {"neck_yaw": 0.3}           # iCub's neck is singular at q = 0 (three axes through one point)


def _load(rel: str, **options) -> core.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)     # meshes drawn approximately, notes
        return core.load_urdf(ROBOTS / rel, **options)


def _assert_matches_pinocchio(model: core.Model, path: Path, states: int = 2) -> dict:
    pm = pinocchio.buildModelFromUrdf(str(path))
    pm.gravity.linear = np.array(model.gravity)
    pd = pm.createData()
    mp = PinocchioMap(model, pm, False)
    rng = np.random.default_rng(16)
    worst = {"crba": 0.0, "rnea": 0.0, "aba": 0.0, "aba_vs_bound": 0.0}
    for _ in range(states):
        q, qd, qdd, tau = random_state(model, rng)
        pq, pv = mp.q(q), mp.v(qd)
        M_ref = pinocchio.crba(pm, pd, pq)
        M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
        M_ref = M_ref[np.ix_(mp.perm, mp.perm)]
        M = core.mass_matrix(model, q)
        worst["crba"] = max(worst["crba"], np.abs(M - M_ref).max() / np.abs(M_ref).max())
        tau_ref = mp.back(pinocchio.rnea(pm, pd, pq, pv, mp.v(qdd)))
        tau_ours = core.inverse_dynamics(model, q, qd, qdd)
        worst["rnea"] = max(worst["rnea"], np.abs(tau_ours - tau_ref).max() / np.abs(tau_ref).max())
        # forward dynamics: the difference of the two accelerations as the generalized force it stands for,
        # M (q̈_ours − q̈_ref), relative to M q̈_ref — so that a badly conditioned M (a hand's tiny fingers beside a
        # heavy torso, where both solvers' q̈ carry cond(M)·ε) is fair to both
        qdd_ref = mp.back(pinocchio.aba(pm, pd, pq, pv, mp.v(tau)))
        qdd_ours = core.forward_dynamics(model, q, qd, tau)
        # (relative to ε·cond(M), the accuracy any solver can promise: e.g. human.urdf at cond(M) = 4.5e8 differs
        # by 4.8e-10, where Pinocchio's own residual is 1.5e-11 and a dense solve's 2e-11)
        err = np.abs(M_ref @ (qdd_ours - qdd_ref)).max() / np.abs(M_ref @ qdd_ref).max()
        worst["aba"] = max(worst["aba"], err)
        worst["aba_vs_bound"] = max(worst["aba_vs_bound"], err / (1e-12 + 1e-14 * np.linalg.cond(M_ref)))
    assert worst["crba"] < 1e-12 and worst["rnea"] < 1e-12 and worst["aba_vs_bound"] < 1.0, f"{path.name}: {worst}"
    return worst


@needs_robots
def test_every_file_is_accounted_for():
    assert len(FILES) >= 60
    missing = set(REFUSED) - set(FILES)
    assert not missing, f"files named in REFUSED are not in the package: {missing}"


@needs_robots
@pytest.mark.parametrize("rel", FILES)
def test_example_robot_data(rel):
    """Loads and matches Pinocchio, or is refused with the message of its genuine problem (and, where a way out
    exists, loads through it: the inertia policy 'repair', or another initial pose)."""
    if rel not in REFUSED:
        model = _load(rel)
        assert model.n_links >= 1
        if model.nv:
            _assert_matches_pinocchio(model, ROBOTS / rel)
        return
    message, way_out = REFUSED[rel]
    with pytest.raises(SceneError) as info:
        _load(rel)
    assert message in str(info.value), str(info.value)
    assert "Traceback" not in str(info.value)
    if way_out is not None and way_out.startswith("repair, then: "):
        assert "'repair'" in str(info.value)
        with pytest.raises(SceneError, match=way_out.removeprefix("repair, then: ")):
            _load(rel, inertia="repair")
    elif way_out == "repair":
        assert "'repair'" in str(info.value)              # the refusal names the way forward
        model = _load(rel, inertia="repair")
        for I in model.inertia:                           # every link's inertia about its com is physical now
            m = I[3, 3]
            if m > 0:
                c = np.array([I[2, 4], I[0, 5], I[1, 3]]) / m      # com from the spatial inertia's m[c]× block
                Ic = I[:3, :3] - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
                assert inertia_problem(Ic) is None
        assert "inertia policy: repair" in model.spec.description and "was repaired" in model.spec.description
    elif way_out == "q0":
        model = _load(rel, q0=ICUB_POSE)
        _assert_matches_pinocchio(model, ROBOTS / rel)


@needs_robots
def test_fixed_base_root_inertia_is_ignored_with_a_note():
    rel = "anymal_b_simple_description/robots/anymal.urdf"   # base inertia: the placeholder 1e-6·ones(3, 3)
    with pytest.warns(URDFWarning, match="the inertia of the root link 'base' is ignored"):
        spec = urdf_to_spec(ROBOTS / rel)
    assert spec.bodies[0].name == "base" and spec.bodies[0].inertial.mass == 0
    assert "root link 'base' is ignored" in spec.description
    with pytest.raises(SceneError, match=r"robot/link\[@name='base'\]/inertial: principal moments"):
        urdf_to_spec(ROBOTS / rel, floating_base=True)  # floating, the base moves: its inertia matters


@needs_robots
def test_urdf_names_with_dots_and_slashes():
    model = _load("allegro_hand_description/urdf/allegro_right_hand.urdf", inertia="repair")
    assert "joint_0.0" in model.joint_names and "link_0.0" in model.link_names
    iris = _load("iris_description/robots/iris.urdf")
    assert any("/" in n for n in iris.body_names)


# ---------------------------------------------------------------------------------------------- mimic joints
MIMIC = (link("base") + link("a") + link("b") + link("c")
         + joint("leader", "base", "a", extra='<axis xyz="0 0 1"/><origin xyz="0 0 0.1"/>')
         + joint("follower", "a", "b", extra='<axis xyz="0 1 0"/><origin xyz="0.3 0 0"/>'
                 '<mimic joint="leader" multiplier="-0.5" offset="0.2"/>')
         + joint("free_joint", "b", "c", extra='<axis xyz="0 1 0"/><origin xyz="0.3 0 0"/>'))


def test_mimic_joint_holds_its_relation_in_a_simulation(tmp_path):
    p = write(tmp_path, MIMIC)
    model = core.load_urdf(p, q0={"leader": 0.4})
    assert model.constraint_names[0] == "mimic_follower"            # (then the joints' <limit> rows)
    assert all(n.endswith((".lower", ".upper")) for n in model.constraint_names[1:])
    q0 = model.q0
    assert q0[model.q_slice("follower")][0] == pytest.approx(-0.5 * 0.4 + 0.2)   # starts on its relation
    sim = core.Simulation(model, dt=1e-3)
    sim.run(1.0)
    q = sim.state.q
    lead, follow = q[model.q_slice("leader")][0], q[model.q_slice("follower")][0]
    assert abs(follow - (-0.5 * lead + 0.2)) < 1e-6
    assert abs(q[model.q_slice("free_joint")][0] - q0[model.q_slice("free_joint")][0]) > 0.05   # things moved
    data = core.evaluate(model, sim.state)
    load = np.asarray(data.constraint_force).ravel()
    assert np.abs(load).max() > 1e-3                     # the constraint carries the follower's load


def test_mimic_of_a_missing_joint_and_a_mimic_q0_are_refused(tmp_path):
    p = write(tmp_path, MIMIC.replace('<mimic joint="leader"', '<mimic joint="nobody"'))
    with pytest.raises(SceneError) as info:
        core.load_urdf(p)
    assert [(q.path, q.value) for q in info.value.problems] == [
        ("robot/joint[@name='follower']/mimic/@joint", "nobody")]
    p = write(tmp_path, MIMIC)
    with pytest.raises(SceneError, match="a mimic joint's initial coordinate follows 'leader'"):
        core.load_urdf(p, q0={"follower": 1.0})


def test_planar_joint_is_refused_alone(tmp_path):
    p = write(tmp_path, link("a") + link("b") + link("c") + joint("slide", "a", "b", "planar")
              + joint("j", "b", "c"))
    with pytest.raises(SceneError) as info:
        core.load_urdf(p)
    assert [(q.path, q.value) for q in info.value.problems] == [("robot/joint[@name='slide']/@type", "planar")]


# ---------------------------------------------------------------------------------------------- inertia policy
def test_nearest_physical_inertia():
    bad = np.diag([1.0, 1.0, 5.0])                       # 1 + 1 < 5
    fixed = nearest_physical_inertia(bad)
    assert inertia_problem(bad) is not None and inertia_problem(fixed) is None
    np.testing.assert_allclose(np.linalg.eigvalsh(fixed), [2.0, 2.0, 4.0])   # moved by (5 - 2)/3 onto a + b = c
    good = np.array([[2.0, 0.1, 0.0], [0.1, 3.0, 0.2], [0.0, 0.2, 4.0]])
    np.testing.assert_allclose(nearest_physical_inertia(good), good, atol=1e-15)   # a physical one is kept
    R = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))[0]
    neg = R @ np.diag([-0.1, 1.0, 1.5]) @ R.T
    # -0.1 is raised to 0; then 0 + 1 < 1.5, so the moments move by 0.5/3 onto a + b = c; the axes are kept
    np.testing.assert_allclose(nearest_physical_inertia(neg), R @ np.diag([1 / 6, 7 / 6, 4 / 3]) @ R.T, atol=1e-12)


def test_inertia_policy_repair_is_stated(tmp_path):
    bad = ('<link name="b"><inertial><mass value="1"/>'
           '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="5"/></inertial></link>')
    p = write(tmp_path, link("a") + bad + joint("j", "a", "b"))
    with pytest.raises(SceneError, match="import with the inertia policy 'repair'"):
        core.load_urdf(p)
    with pytest.warns(URDFWarning, match="link 'b' was repaired"):
        model = core.load_urdf(p, inertia="repair")
    np.testing.assert_allclose(np.diag(model.inertia[1][:3, :3]), [2.0, 2.0, 4.0])
    with pytest.raises(SceneError, match="unknown inertia policy"):
        core.load_urdf(p, inertia="guess")


# ---------------------------------------------------------------------------------------------- scene documents
def _scene(tmp_path, robot: dict, **sections) -> Path:
    (tmp_path / "robots").mkdir(exist_ok=True)
    write(tmp_path / "robots", MIMIC, "arm.urdf")
    doc = {"format_version": 1, "name": "with_robot", "robot": {"file": "robots/arm.urdf", **robot}, **sections}
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(doc))
    return path


def test_scene_includes_a_robot_with_overrides(tmp_path):
    path = _scene(tmp_path, {"base": "floating", "base_pose": [0, 0, 1, 1, 0, 0, 0], "q0": {"leader": 0.2}},
                  bodies=[{"name": "tool", "parent": "c", "joint": {"type": "fixed", "position": [0.2, 0, 0]},
                           "inertial": {"mass": 0.5}, "points": {"tip": [0.1, 0, 0]}}],
                  constraints=[{"type": "nail", "name": "hold", "body": "tool", "point": "tip"}],
                  forces=[{"type": "joint_spring", "name": "spring", "joint": "free_joint", "stiffness": 2.0}])
    spec = read_spec(path)
    assert Path(spec.robot.file).is_absolute() and len(spec.bodies) == 1
    model = core.load_scene(path)
    assert model.link_names == ("base", "a", "b", "c") and model.body_names[-1] == "tool"    # welded to c
    assert model.constraint_names[:2] == ["mimic_follower", "hold"]   # (then the joints' <limit> rows)
    assert model.q0[:7].tolist() == [0, 0, 1, 1, 0, 0, 0]          # the floating base's pose
    assert model.q0[model.q_slice("leader")][0] == pytest.approx(0.2)
    assert model.spec == spec                                        # the document, not the flat scene
    # saved elsewhere, the include is written relative to the new document, not as the robot's bodies
    out = tmp_path / "elsewhere" / "copy.json"
    out.parent.mkdir()
    save_spec(spec, out)
    saved = json.loads(out.read_text())
    assert saved["robot"]["file"] == "../robots/arm.urdf" and len(saved["bodies"]) == 1
    assert core.load_scene(out).body_names == model.body_names


def test_scene_include_problems_have_json_paths(tmp_path):
    path = _scene(tmp_path, {"q0": {"nobody": 1.0}},
                  constraints=[{"type": "nail", "name": "n", "body": "ghost", "point": [0, 0, 0]}])
    with pytest.raises(SceneError) as info:
        read_spec(path)
    found = {(p.path, p.value) for p in info.value.problems}
    assert ("$.robot.q0.nobody", "nobody") in found
    path = _scene(tmp_path, {}, constraints=[{"type": "nail", "name": "n", "body": "ghost", "point": [0, 0, 0]}])
    with pytest.raises(SceneError) as info:
        read_spec(path)
    assert [(p.path, p.value) for p in info.value.problems] == [("$.constraints[0].body", "ghost")]
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({"format_version": 1, "name": "m", "robot": {"file": "nowhere.urdf"}}))
    with pytest.raises(SceneError) as info:
        read_spec(missing)
    assert info.value.problems[0].path == "$.robot.file" and "cannot read the file" in str(info.value)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format_version": 1, "name": "m", "robot": {"file": "scene.json"}}))
    with pytest.raises(SceneError, match=r"not a robot file this program reads \(\.urdf, \.xml\)"):
        read_spec(wrong)


def test_command_line_runs_a_urdf_and_validates_with_exit_codes(tmp_path, capsys):
    from core.__main__ import main
    p = write(tmp_path, MIMIC)
    assert main(["validate", str(p)]) == 0
    assert "ok (4 bodies)" in capsys.readouterr().out
    bad = write(tmp_path, link("a") + '<link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" '
                'iyy="1" iyz="0" izz="5"/></inertial></link>' + joint("j", "a", "b"), "bad.urdf")
    assert main(["validate", str(bad)]) == 2
    assert "triangle inequality" in capsys.readouterr().out
    assert main(["validate", "--inertia", "repair", str(bad)]) == 0
    out = tmp_path / "run"
    assert main(["run", str(p), "--duration", "0.05", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["robot"]["inertia_policy"] == "refuse" and summary["constraint_names"][0] == "mimic_follower"
    (tmp_path / "junk.urdf").write_bytes(b"\x00\xff<robot")
    assert main(["validate", str(tmp_path / "junk.urdf")]) == 2
    assert "not a valid XML file" in capsys.readouterr().out


@pytest.mark.parametrize("data", [b"", b"\x00" * 100, bytes(range(256)) * 40, b"<robot name='a'>" * 5000,
                                  b"<?xml version='1.0'?><!DOCTYPE r [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;"
                                  b"&a;&a;&a;&a;&a;'><!ENTITY c '&b;&b;&b;&b;&b;&b;&b;&b;'>]><robot name='&c;'/>",
                                  b"<robot><link name='a'/><joint name='j' type='revolute'><parent link='a'/>"
                                  b"<child link='a'/></joint></robot>"])
def test_hostile_urdf_bytes_are_refused_with_a_message(tmp_path, data):
    from core.__main__ import main
    p = tmp_path / "hostile.urdf"
    p.write_bytes(data)
    with pytest.raises(SceneError) as info:
        core.load_urdf(p)
    assert str(p) in str(info.value)
    assert main(["validate", str(p)]) == 2


def test_an_oversized_urdf_is_refused_before_parsing(tmp_path):
    from core.scene.limits import MAX_DOCUMENT_BYTES
    p = tmp_path / "huge.urdf"
    with open(p, "wb") as f:
        f.write(b"<robot name='big'>")
        f.write(b" " * (MAX_DOCUMENT_BYTES + 10))
        f.write(b"</robot>")
    with pytest.raises(SceneError, match="larger than"):
        core.load_urdf(p)


def test_a_pipe_or_a_folder_is_not_read(tmp_path):
    fifo = tmp_path / "robot.urdf"
    os.mkfifo(fifo)                                      # reading it would block for ever
    with pytest.raises(SceneError, match="not a regular file"):
        core.load_urdf(fifo)
    (tmp_path / "folder.urdf").mkdir()
    with pytest.raises(SceneError, match="not a regular file"):
        core.load_urdf(tmp_path / "folder.urdf")


def test_the_command_line_prints_import_notes_on_one_line(tmp_path):
    import subprocess
    import sys
    p = write(tmp_path, link("a") + '<link name="b"><visual><geometry><mesh filename="gone.stl"/></geometry>'
              '</visual><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
              '</inertial></link>' + joint("j", "a", "b"))
    out = subprocess.run([sys.executable, "-m", "core", "validate", str(p)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=300)
    assert out.returncode == 0 and "ok (2 bodies)" in out.stdout
    assert out.stderr.startswith("python -m core: warning: ") and "mesh 'gone.stl' was not found" in out.stderr
    assert "URDFWarning" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
