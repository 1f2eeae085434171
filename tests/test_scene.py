"""Scene documents: validation names every problem with its JSON path, saving is atomic and round-trips exactly,
compilation orders coordinates and converts initial velocities, and the command line reports and writes runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import core
from core.__main__ import main as core_main
from core.scene import SceneError, parse_spec, read_spec, save_spec, spec_to_json
from trees import random_tree_spec

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "scenes").glob("*.json"))

BROKEN = {
    "format_version": 1, "name": "bad scene", "gravty": [0, 0, -9.81],
    "bodies": [
        {"name": "a", "joint": {"type": "hinge", "axis": [0, 0, 0], "q0": "x"},
         "shapes": [{"type": "cylindr", "radius": 0.1}]},
        {"name": "b", "parent": "c", "joint": {"type": "ball", "q0": [1, 1, 0, 0]},
         "shapes": [{"type": "box", "size": [1, -1, 1], "mass": 1}]},
        {"name": "a", "joint": {"type": "free"}, "inertial": {"mass": -1, "inertia": [1, 1, 5, 0, 0, 0]}},
    ]}


def test_shipped_scenes_exist():
    names = {p.stem for p in SHIPPED}
    assert {"free_tumbling_box", "three_link_arm", "spatial_chain_7"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scene_validates_and_compiles(path):
    model = core.load_scene(path)
    assert model.nv > 0 and np.all(np.isfinite(model.q0))


def test_three_link_arm_matches_its_specification():
    model = core.load_scene(ROOT / "scenes" / "three_link_arm.json")
    assert model.joint_names == ["shoulder", "elbow", "wrist"]
    np.testing.assert_allclose(model.gravity, [0, -9.81, 0])
    np.testing.assert_allclose(model.mass, 1.0)
    for i in range(3):                                        # hinges about z; links 1 m apart
        np.testing.assert_allclose(model.axis[i], [0, 0, 1])
    np.testing.assert_allclose(core.point_position(model, np.zeros(3), "link3", "tip"), [3, 0, 0], atol=1e-15)
    # a 1 kg solid cylinder of radius 0.1 m, length 1 m along x, about its end: I_zz = m(3r² + L²)/12 + m(L/2)²
    assert model.inertia[0][2, 2] == pytest.approx((3 * 0.01 + 1) / 12 + 0.25)


def test_every_problem_is_reported_with_its_path_and_value():
    with pytest.raises(SceneError) as info:
        parse_spec(BROKEN, "broken.json")
    text = {str(p) for p in info.value.problems}
    expected = [
        "$.gravty: unknown field",
        "$.name: must be a name",
        "$.bodies[0].joint.axis (body 'a'): must be a non-zero direction (got [0, 0, 0])",
        "$.bodies[0].joint.q0 (body 'a'): Input should be a valid number",
        "$.bodies[0].shapes[0] (body 'a'): Input tag 'cylindr'",
        "$.bodies[1].parent (body 'b'): unknown parent body; expected 'world' or one of: a, b (got \"c\")",
        "$.bodies[1].joint.q0 (body 'b'): must be a unit quaternion",
        "$.bodies[1].shapes[0].size[1] (body 'b'): Input should be greater than 0 (got -1)",
        "$.bodies[2].name: duplicate body name",
        "$.bodies[2].inertial.mass (body 'a'): Input should be greater than or equal to 0 (got -1)",
        "$.bodies[2].inertial.inertia (body 'a'): principal moments [1.0, 1.0, 5.0] violate the triangle inequality",
    ]
    for e in expected:
        assert any(t.startswith(e) for t in text), f"missing: {e}\nin:\n" + "\n".join(sorted(text))
    assert str(info.value).startswith("broken.json: ")


@pytest.mark.parametrize("doc,where,what", [
    ({"format_version": 1, "name": "s", "bodies": [{"name": "a", "joint": {"type": "hinge"},
                                                     "shapes": [{"type": "sphere", "radius": 0.1}]}]},
     "$.bodies[0]", "neither mass nor density"),
    ({"format_version": 1, "name": "s", "bodies": [{"name": "a", "parent": "b", "joint": {"type": "hinge"},
                                                     "inertial": {"mass": 1}},
                                                    {"name": "b", "parent": "a", "joint": {"type": "hinge"},
                                                     "inertial": {"mass": 1}}]},
     "$.bodies[0].parent", "loops back"),
    ({"format_version": 2, "name": "s"}, "$.format_version", "newer"),
    ({"format_version": 1, "name": "s", "bodies": [{"name": "a", "joint": {"type": "free", "q0": [0, 0, 0, 0, 0, 0, 0]},
                                                     "inertial": {"mass": 1}}]},
     "$.bodies[0].joint.q0", "unit quaternion"),
    ({"format_version": 1, "name": "s", "gravity": [0, 0, float("nan")]}, "$.gravity[2]", "finite"),
])
def test_single_problems(doc, where, what):
    with pytest.raises(SceneError) as info:
        parse_spec(doc)
    assert any(str(p).startswith(where) and what in str(p) for p in info.value.problems), info.value


def test_a_joint_that_moves_no_mass_is_named():
    doc = {"format_version": 1, "name": "s", "bodies": [
        {"name": "arm", "joint": {"type": "hinge"}, "inertial": {"mass": 1, "com": [1, 0, 0]}},
        {"name": "ghost", "parent": "arm", "joint": {"type": "hinge", "position": [1, 0, 0]},
         "inertial": {"mass": 0}}]}
    with pytest.raises(SceneError) as info:
        core.compile_scene(parse_spec(doc))
    assert [p.path for p in info.value.problems] == ["$.bodies[1].joint (body 'ghost')"]


def test_invalid_json_reports_line_and_column(tmp_path):
    f = tmp_path / "s.json"
    f.write_text('{"format_version": 1,\n "name": }')
    with pytest.raises(SceneError, match=r"line 2, column 10"):
        read_spec(f)


@pytest.mark.parametrize("seed", range(5))
def test_save_load_round_trip_is_exact(tmp_path, seed):
    spec = parse_spec(random_tree_spec(np.random.default_rng(seed), 6))
    path = save_spec(spec, tmp_path / "tree.json")
    again = read_spec(path)
    assert again == spec
    assert spec_to_json(again) == path.read_text()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scenes_round_trip(tmp_path, path):
    spec = read_spec(path)
    assert read_spec(save_spec(spec, tmp_path / path.name)) == spec


def test_save_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "scene.json"
    target.write_text("previous contents")
    spec = read_spec(SHIPPED[0])

    def failing_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        save_spec(spec, target)
    assert target.read_text() == "previous contents"
    assert [p.name for p in tmp_path.iterdir()] == ["scene.json"]      # no temporary file left behind


def test_joint_order_and_slices_with_mixed_joints():
    doc = {"format_version": 1, "name": "mixed", "bodies": [
        {"name": "base", "joint": {"type": "free", "name": "float"}, "inertial": {"mass": 2, "inertia": [1, 1, 1, 0, 0, 0]}},
        {"name": "weld", "parent": "base", "joint": {"type": "fixed"}, "inertial": {"mass": 1}},
        {"name": "left", "parent": "base", "joint": {"type": "ball", "name": "shoulder"},
         "inertial": {"mass": 1, "com": [0, 0.3, 0], "inertia": [0.1, 0.1, 0.1, 0, 0, 0]}},
        {"name": "right", "parent": "base", "joint": {"type": "slider", "name": "rail", "axis": [1, 0, 0]},
         "inertial": {"mass": 1}},
        {"name": "hand", "parent": "left", "joint": {"type": "hinge", "name": "wrist"}, "inertial": {"mass": 1, "com": [0.1, 0, 0]}}]}
    model = core.compile_scene(parse_spec(doc))
    # depth-first from the root, children in document order: base, left, hand, right (weld, on a fixed joint, is
    # merged into base)
    assert model.link_names == ("base", "left", "hand", "right") and model.body_names[-1] == "weld"
    assert model.link_index("weld") == 0 and model.mass[0] == 3.0
    assert model.joint_names == ["float", "shoulder", "wrist", "rail"]
    assert model.nq == 7 + 4 + 1 + 1 and model.nv == 6 + 3 + 1 + 1
    assert model.q_slice("shoulder") == slice(7, 11) and model.qd_slice("shoulder") == slice(6, 9)
    assert model.q_slice("rail") == slice(12, 13) and model.qd_slice("wrist") == slice(9, 10)
    with pytest.raises(KeyError, match="no joint 'weld'"):          # merged away with its body
        model.q_slice("weld")
    with pytest.raises(KeyError, match="no joint 'elbow'"):
        model.q_slice("elbow")


def test_free_joint_initial_velocity_is_given_in_the_world_frame():
    w, v = np.array([0.3, -1.0, 2.0]), np.array([1.0, 2.0, -0.5])
    quat = np.array([np.cos(0.4), 0, np.sin(0.4), 0])
    doc = {"format_version": 1, "name": "s", "bodies": [
        {"name": "b", "joint": {"type": "free", "q0": [1, 2, 3, *quat], "qd0": [*w, *v]},
         "inertial": {"mass": 1, "inertia": [1, 2, 2.5, 0, 0, 0]}, "points": {"p": [0.2, 0.1, -0.3]}}]}
    model = core.compile_scene(parse_spec(doc))
    s = model.initial_state()
    np.testing.assert_allclose(core.point_velocity(model, s.q, s.qd, "b", [0, 0, 0]), v, atol=1e-14)
    p = core.point_position(model, s.q, "b", "p")
    np.testing.assert_allclose(core.point_velocity(model, s.q, s.qd, "b", "p"), v + np.cross(w, p - [1, 2, 3]), atol=1e-14)


def test_cli_validate_exit_codes(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(BROKEN))
    assert core_main(["validate", *map(str, SHIPPED)]) == 0
    assert core_main(["validate", str(SHIPPED[0]), str(bad)]) == 2
    out = capsys.readouterr().out
    assert "bad.json: INVALID" in out and "$.bodies[1].parent (body 'b')" in out


def test_cli_run_writes_timeseries_and_summary(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "core", "run", str(ROOT / "scenes" / "three_link_arm.json"),
                           "--duration", "0.2", "--dt", "0.002", "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    data = np.load(out / "timeseries.npz")
    assert data["q"].shape == (101, 3) and data["t"][-1] == pytest.approx(0.2)
    header = (out / "timeseries.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["t", "q_shoulder", "q_elbow", "q_wrist"] and "energy_total" in header
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 100 and summary["joint_names"] == ["shoulder", "elbow", "wrist"]
    assert summary["energy_error_relative"] < 1e-9


def test_cli_run_refuses_bad_arguments(tmp_path):
    scene = str(ROOT / "scenes" / "three_link_arm.json")
    assert core_main(["run", scene, "--dt", "-1", "--out", str(tmp_path / "x")]) == 2
    assert core_main(["run", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")]) == 2
