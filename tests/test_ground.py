"""A ground in one line (``"ground": {...}``), the shapes that touch it, and robots that stand on it.

Physics checked: a dropped box comes to rest on its face with its weight carried by the ground; a shape that is
visual only does not touch, a collision shape does (with its surface: a sphere rests at its radius); MuJoCo's
contype/conaffinity filter; an MJCF model's floor becomes the ground, and a quadruped with MuJoCo position
actuators lands and stands on it; a URDF robot (example-robot-data's Go2) with a ground and a PD stands on its
feet with no contact point written by hand, its normal forces summing to m g.
"""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import core
from core.scene import SceneError, compile_scene, parse_spec
from core.scene.collision import RIM_POINTS, body_points, shape_points

G = 9.81


def normal_forces(model, data):
    """The normal force n·F of every contact point against its plane."""
    return np.array([c.normal @ data.constraint_force[p.normal] for c in model.contacts for p in c.points])


def _box_scene(**ground) -> dict:
    return {"format_version": 1, "name": "box_drop", "simulation": {"dt": 0.001},
            "bodies": [{"name": "box", "joint": {"type": "free", "q0": [0.1, -0.2, 0.5, 1, 0, 0, 0]},
                        "shapes": [{"type": "box", "size": [0.4, 0.3, 0.2], "mass": 2.0}]}],
            "ground": ground}


def _settle(model, seconds: float):
    sim = core.Simulation(model)
    sim.run(seconds)
    return sim


def test_a_box_dropped_on_a_one_line_ground_rests_on_its_face_carrying_its_weight():
    model = compile_scene(parse_spec(_box_scene(), "box"))
    assert [c.name for c in model.contacts] == ["box.ground"] and len(model.contacts[0].points) == 8
    sim = _settle(model, 1.5)
    q, qd = sim.state.q, sim.state.qd
    assert q[2] == pytest.approx(0.1, abs=1e-6)                 # resting on its 0.2 m face
    assert np.abs(qd).max() < 1e-6
    assert normal_forces(model, sim.data).sum() == pytest.approx(2.0 * G, rel=1e-6)
    assert (normal_forces(model, sim.data) >= -1e-9).all()


def test_a_body_with_its_own_contact_on_the_ground_plane_is_left_to_it():
    """The same points twice against one plane would be the same rows twice (a rank-deficient J, and a contact
    scene ten times slower): a body that lists its own contact against the ground's plane keeps that one; one
    against another plane (a wall) still gets the ground's."""
    doc = _box_scene()
    doc["contacts"] = [{"name": "mine", "body": "box"}]                   # the plane against gravity: the ground's
    model = compile_scene(parse_spec(doc, "box"))
    assert [c.name for c in model.contacts] == ["mine"]
    sim = _settle(model, 1.5)
    assert sim.state.q[2] == pytest.approx(0.1, abs=1e-6)
    assert normal_forces(model, sim.data).sum() == pytest.approx(2.0 * G, rel=1e-6)
    doc["contacts"][0]["plane"] = {"normal": [1, 0, 0], "origin": [-1, 0, 0]}   # a wall: both
    assert [c.name for c in compile_scene(parse_spec(doc, "box")).contacts] == ["mine", "box.ground"]
    doc["contacts"][0]["plane"] = {"normal": [0, 0, 2], "origin": [5, 3, 0]}    # the ground's plane, written so
    assert [c.name for c in compile_scene(parse_spec(doc, "box")).contacts] == ["mine"]


def test_the_ground_keeps_its_origin_normal_and_friction():
    """A tilted ground (10°) with μ = 0.5 > tan 10°: the box sticks on the slope, its weight's normal part
    carried; with μ = 0.1 it slides down the slope at g (sin α − μ cos α)."""
    a = np.radians(10.0)
    n = [float(-np.sin(a)), 0.0, float(np.cos(a))]
    for mu, sticks in ((0.5, True), (0.1, False)):
        doc = _box_scene(origin=[0, 0, -0.05], normal=n, friction=mu)
        doc["bodies"][0]["joint"]["q0"] = [0.0, 0.0, 0.05 + 0.1 / np.cos(a) - 0.05 + 0.02, 1, 0, 0, 0]
        doc["bodies"][0]["joint"]["q0"][3:] = [float(np.cos(a / 2)), 0.0, float(-np.sin(a / 2)), 0.0]
        model = compile_scene(parse_spec(doc, "slope"))
        sim = _settle(model, 0.5)
        if sticks:
            assert np.abs(sim.state.qd).max() < 1e-6
            assert normal_forces(model, sim.data).sum() == pytest.approx(2.0 * G * np.cos(a), rel=1e-6)
        else:
            v1 = sim.state.qd[3:].copy()
            sim.run(0.5)
            v2 = sim.state.qd[3:]
            assert v2[0] < v1[0] < 0.0 and abs(v2[2]) < 1e-9       # down the slope (body −x), in its plane (body z = n)
            accel = (np.linalg.norm(v2) - np.linalg.norm(v1)) / 0.5
            assert accel == pytest.approx(G * (np.sin(a) - mu * np.cos(a)), rel=1e-6)


def test_visual_shapes_do_not_touch_and_a_collision_sphere_touches_with_its_surface():
    doc = {"format_version": 1, "name": "ball", "simulation": {"dt": 0.001},
           "bodies": [{"name": "ball", "joint": {"type": "free", "q0": [0, 0, 0.3, 1, 0, 0, 0]},
                       "inertial": {"mass": 1.0, "com": [0, 0, 0], "inertia": [0.004, 0.004, 0.004, 0, 0, 0]},
                       "shapes": [{"type": "box", "size": [1, 1, 1], "purpose": "visual"},
                                  {"type": "sphere", "radius": 0.1, "purpose": "collision"}]}],
           "ground": {}}
    model = compile_scene(parse_spec(doc, "ball"))
    assert len(model.contacts[0].points) == 1 and model.contacts[0].points[0].radius == 0.1
    sim = _settle(model, 1.0)
    assert sim.state.q[2] == pytest.approx(0.1, abs=1e-6)       # the sphere's surface, not the big visual box
    doc["bodies"][0]["shapes"][1]["purpose"] = "visual"                 # nothing touches: no contact
    assert compile_scene(parse_spec(doc, "ball")).contacts == ()


def test_contype_and_conaffinity_filter_the_ground_as_in_mujoco():
    doc = _box_scene(contype=1, conaffinity=1)
    doc["bodies"][0]["shapes"][0].update(contype=2, conaffinity=2)          # 2 & 1 = 0 both ways: no contact
    model = compile_scene(parse_spec(doc, "box"))
    assert model.contacts == ()
    sim = _settle(model, 0.5)
    assert sim.state.q[2] < 0.0                                             # it fell through
    doc["bodies"][0]["shapes"][0].update(contype=2, conaffinity=1)          # ground.contype & conaffinity
    assert len(compile_scene(parse_spec(doc, "box")).contacts) == 1


def test_cylinders_and_meshes_give_contact_points():
    from core.scene.schema import Body
    body = Body.model_validate({"name": "c", "joint": {"type": "free"},
                                "inertial": {"mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1, 0, 0, 0]},
                                "shapes": [{"type": "cylinder", "radius": 0.1, "length": 0.4,
                                            "purpose": "collision"}]})
    pts = body_points(body)
    assert len(pts) == 2 * RIM_POINTS
    r = np.array([p for p, _ in pts])
    assert np.allclose(np.hypot(r[:, 0], r[:, 1]), 0.1) and np.allclose(np.abs(r[:, 2]), 0.2)


def test_ground_references_are_checked_with_their_path():
    doc = _box_scene(bodies=["nope"])
    with pytest.raises(SceneError) as err:
        compile_scene(parse_spec(doc, "box"))
    assert "$.ground.bodies[0]" in str(err.value) and "nope" in str(err.value)
    doc = _box_scene(exclude=["box"])
    assert compile_scene(parse_spec(doc, "box")).contacts == ()
    doc = _box_scene()
    doc["contacts"] = [{"name": "box.ground", "body": "box", "points": [[0, 0, 0]],
                        "plane": {"normal": [1, 0, 0], "origin": [-1, 0, 0]}}]        # (a wall: both wanted)
    with pytest.raises(SceneError) as err:
        compile_scene(parse_spec(doc, "box"))
    assert "$.ground" in str(err.value) and "box.ground" in str(err.value)


# ---- MJCF: the floor is the ground, and a quadruped with position actuators stands ------------------------------
QUADRUPED = """<mujoco model="quad">
  <option timestep="0.002"/>
  <default>
    <geom contype="1" conaffinity="1"/>
    <default class="visual"><geom contype="0" conaffinity="0" group="2"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.9"/>
    <body name="torso" pos="0 0 0.33">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.04" mass="4"/>
      <geom type="sphere" size="0.3" class="visual"/>
      {legs}
    </body>
  </worldbody>
  <actuator>{actuators}</actuator>
</mujoco>
"""


def _quadruped(tmp_path):
    legs, acts = [], []
    for name, x, y in (("fl", 0.18, 0.1), ("fr", 0.18, -0.1), ("rl", -0.18, 0.1), ("rr", -0.18, -0.1)):
        legs.append(f'<body name="{name}" pos="{x} {y} -0.04"><joint name="{name}_hip" axis="0 1 0" '
                    f'range="-1 1"/><geom type="capsule" fromto="0 0 0 0 0 -0.25" size="0.02" mass="0.3"/>'
                    f'<geom name="{name}_foot" type="sphere" pos="0 0 -0.25" size="0.025" mass="0.05" group="3"/>'
                    f'</body>')
        acts.append(f'<position joint="{name}_hip" kp="60" kv="2" forcerange="-30 30"/>')
    path = tmp_path / "quad.xml"
    path.write_text(QUADRUPED.format(legs="".join(legs), actuators="".join(acts)))
    return path


def test_an_mjcf_floor_becomes_the_ground_and_a_quadruped_with_its_position_actuators_stands(tmp_path):
    pytest.importorskip("mujoco")
    path = _quadruped(tmp_path)
    doc = {"format_version": 1, "name": "quad_scene", "robot": {"file": str(path)}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = compile_scene(parse_spec(doc, str(tmp_path / "scene.json")))
    assert model.spec.ground is None                         # the document's own: none; the robot's is used
    names = [c.name for c in model.contacts]
    assert "torso.ground" in names and "fl.ground" in names
    torso = model.contacts[names.index("torso.ground")]
    assert len(torso.points) == 8                            # its box's corners; the visual sphere gives none
    sim = core.Simulation(model)
    lowest = np.inf
    for _ in range(20):
        sim.run(0.1)
        lowest = min(lowest, float(sim.state.q[2]))
    assert lowest > 0.2                                      # it landed on its feet, not its belly
    assert np.abs(sim.state.qd).max() < 1e-3                 # and came to rest
    m = float(model.mass.sum())
    assert normal_forces(model, sim.data).sum() == pytest.approx(m * G, rel=1e-6)
    feet = sum(normal_forces(model, sim.data)[k] for k in _point_indices(model, [f"{n}.ground" for n in
                                                                                  ("fl", "fr", "rl", "rr")]))
    assert feet == pytest.approx(m * G, rel=1e-6)            # on its four feet alone


def _point_indices(model, contact_names):
    out, k = [], 0
    for c in model.contacts:
        for _ in c.points:
            if c.name in contact_names:
                out.append(k)
            k += 1
    return out


# ---- URDF: example-robot-data's Go2 stands with a ground and a PD, no contact point written ----------------------
def test_example_robot_data_go2_stands_on_a_one_line_ground_with_a_pd(tmp_path):
    from test_robots import ROBOTS
    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    urdf = ROBOTS / "go2_description/urdf/go2.urdf"
    stand = {"hip": 0.0, "thigh": 0.9, "calf": -1.8}
    joints = [f"{leg}_{part}_joint" for leg in ("FL", "FR", "RL", "RR") for part in ("hip", "thigh", "calf")]
    doc = {"format_version": 1, "name": "go2_stands", "simulation": {"dt": 0.001},
           "robot": {"file": str(urdf), "base": "floating", "base_pose": [0, 0, 0.36, 1, 0, 0, 0],
                     "q0": {j: stand[j.split("_")[1]] for j in joints}},
           "ground": {"friction": 0.8},
           "controllers": [{"type": "pd", "name": "stand", "joints": joints, "kp": 80.0, "kd": 2.0,
                            "trajectory": {"type": "set_point", "q": [stand[j.split("_")[1]] for j in joints]}}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = compile_scene(parse_spec(doc, str(tmp_path / "go2.json")))
    assert len(model.contacts) == 15                           # every link with <collision> meshes, none written
    sim = core.Simulation(model)
    sim.run(3.0, record_every=100)
    m = float(model.mass.sum())
    N = normal_forces(model, sim.data)
    feet = _point_indices(model, [f"{leg}_foot.ground" for leg in ("FL", "FR", "RL", "RR")])
    assert N.sum() == pytest.approx(m * G, rel=1e-3)
    assert N[feet].sum() == pytest.approx(N.sum(), rel=1e-12)  # standing on its feet alone
    assert sim.state.q[2] > 0.25 and np.abs(sim.state.qd).max() < 5e-3


# ---- the studio: collision shapes drawn on request, a ground added in one undoable step -------------------------
def _ball_with_collision_sphere() -> dict:
    return {"format_version": 1, "name": "ball", "simulation": {"dt": 0.001},
            "bodies": [{"name": "ball", "joint": {"type": "free", "q0": [0, 0, 0.3, 1, 0, 0, 0]},
                        "inertial": {"mass": 1.0, "com": [0, 0, 0], "inertia": [0.004, 0.004, 0.004, 0, 0, 0]},
                        "shapes": [{"type": "box", "size": [0.1, 0.1, 0.1], "purpose": "visual",
                                    "color": [0.2, 0.2, 0.9]},
                                   {"type": "sphere", "radius": 0.15, "purpose": "collision",
                                    "color": [0.95, 0.1, 0.1]}]}]}


@pytest.mark.gui
def test_the_viewport_draws_collision_shapes_only_when_asked(gl_renderer, qtbot):
    from studio.headless import _viewport
    from test_studio import rgb_array
    model = compile_scene(parse_spec(_ball_with_collision_sphere(), "ball"))
    view = _viewport(model, (320, 240))
    qtbot.addWidget(view)

    def red(rgb):
        px = rgb.reshape(-1, 3).astype(int)
        return int(np.count_nonzero((px[:, 0] > 120) & (px[:, 1] < 60) & (px[:, 2] < 60)))
    hidden = red(rgb_array(view.render_image((320, 240), None)))
    view.set_collision_shown(True)
    shown = red(rgb_array(view.render_image((320, 240), None)))
    assert shown > 500 and hidden < 0.02 * shown             # the red collision sphere appears (the x axis is red)
    view.set_collision_shown(False)
    assert red(rgb_array(view.render_image((320, 240), None))) < 0.02 * shown


def test_adding_a_ground_in_the_document_and_the_robot_without_one_is_warned(tmp_path):
    from studio.document import edits
    spec = parse_spec(_ball_with_collision_sphere(), "ball")
    with_ground = edits.add_ground(spec)
    assert with_ground.ground is not None and spec.ground is None
    with pytest.raises(SceneError, match="already"):
        edits.add_ground(with_ground)
    urdf = tmp_path / "floater.urdf"
    urdf.write_text('<robot name="f"><link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" '
                    'ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry><sphere radius="0.1"/></geometry>'
                    '</collision></link></robot>')
    doc = {"format_version": 1, "name": "floats", "robot": {"file": str(urdf), "base": "floating"}}
    with pytest.warns(UserWarning, match="nothing is under it"):
        compile_scene(parse_spec(doc, str(tmp_path / "s.json")))
    doc["ground"] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = compile_scene(parse_spec(doc, str(tmp_path / "s.json")))
    assert not [w for w in caught if "nothing is under it" in str(w.message)]
    assert [c.name for c in model.contacts] == ["b.ground"] and model.contacts[0].points[0].radius == 0.1


def test_example_robot_data_solo12_stands_on_a_one_line_ground_with_a_pd(tmp_path):
    """Solo12's feet are meshes touching at hull points: a foot rocks from one point to the next, an event inside
    a step while other points stick. The energy books are judged where a step is taken, never at the unresolved
    end of a step with an event inside (judged there, this run stopped at 0.91 s as making energy from nothing).
    It rocks until about 3.2 s (a point its rocking lifts opens, core.impacts.LIFT_SPEED) and stands after: the
    normal forces carry its weight to 1e-3 at 4 s (3e-6 in one run)."""
    from test_robots import ROBOTS
    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    urdf = ROBOTS / "solo_description/robots/solo12.urdf"
    pose = {}
    for leg in ("FL", "FR", "HL", "HR"):
        front = leg[0] == "F"
        pose.update({f"{leg}_HAA": 0.0, f"{leg}_HFE": 0.8 if front else -0.8, f"{leg}_KFE": -1.6 if front else 1.6})
    doc = {"format_version": 1, "name": "solo_stands", "simulation": {"dt": 0.001},
           "robot": {"file": str(urdf), "base": "floating", "base_pose": [0, 0, 0.3, 1, 0, 0, 0], "q0": pose},
           "ground": {"friction": 0.8},
           "controllers": [{"type": "pd", "name": "stand", "joints": list(pose), "kp": 4.0, "kd": 0.08,
                            "trajectory": {"type": "set_point", "q": list(pose.values())}}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = compile_scene(parse_spec(doc, str(tmp_path / "solo.json")))
    sim = core.Simulation(model)
    sim.run(4.0, record_every=100)                             # (a DivergenceError fails the test)
    m = float(model.mass.sum())
    N = normal_forces(model, sim.data)
    feet = _point_indices(model, [f"{leg}_FOOT.ground" for leg in ("FL", "FR", "HL", "HR")])
    assert N.sum() == pytest.approx(m * G, rel=1e-3)
    assert N[feet].sum() == pytest.approx(N.sum(), rel=1e-12)
    assert sim.state.q[2] > 0.15 and np.abs(sim.state.qd).max() < 0.2      # (a soft PD: its joints still sway)


def test_a_robot_file_s_actuators_get_sliders_that_drive_it(tmp_path, gl_renderer, qtbot):
    """An MJCF robot's position actuators, which the document does not list, get a slider each in the control
    panel spanning their command (a target angle here, not a torque), and moving one drives its joint there."""
    pytest.importorskip("mujoco")
    from PySide6.QtCore import QSettings
    from studio.qt.window.control_panel import SLIDER_STEPS
    from studio.qt.window.main_window import MainWindow
    from test_studio import show
    robot = _quadruped(tmp_path)
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({"format_version": 1, "name": "quad", "gravity": [0, 0, 0],
                                 "robot": {"file": str(robot)}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = core.load_scene(scene)
    win = MainWindow(model, path=scene, settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    show(qtbot, win, 1280, 720)
    assert "fl_hip_actuator" in win.controls.actuator_sliders        # read from the robot file, as the tree does
    assert set(win.controls.actuator_sliders) == {f"{n}_hip_actuator" for n in ("fl", "fr", "rl", "rr")}
    slider = win.controls.actuator_sliders["fl_hip_actuator"]
    low, high = slider.span
    assert (low, high) == (-10.0, 10.0)                       # no ctrlrange in the file: ±10 of its command
    slider.setValue(round(0.5 / high * SLIDER_STEPS))          # a target of 0.5 rad, past the joint's range

    win.play()
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None and win.sim_thread.latest.t > 3.0, timeout=60_000)
    win.pause()
    qtbot.waitUntil(lambda: not win.sim_thread.latest.playing)
    q = win.sim_thread.latest.q
    # (the file's range="-1 1" is in degrees, MJCF's default): driven to its upper limit
    assert q[model.q_slice("fl_hip")][0] == pytest.approx(math.radians(1.0), abs=1e-3)
    assert abs(q[model.q_slice("fr_hip")][0]) < 1e-3           # the others hold their target, 0
    win.close()
