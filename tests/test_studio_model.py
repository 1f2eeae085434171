"""The studio's Qt-free parts: document edits (validated, references kept), the plots' ring buffers and sample
rows, the overlay probe, reloading an edited scene into a running simulation, and the geometry of glyphs and mouse
picking. No display needed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import core
from core.constraints import JOINT_SPACE
from core.scene import SceneError
from studio import SCENES_DIR
from studio.document import edits
from studio.geometry import glyphs
from studio.run.history import History
from studio.geometry.picking import hit_shape, hit_sphere, pick_shape, ray_plane, ray_through
from core.drawing import draw_list as overlay, resting_draw_list as resting_overlay
from studio.run.reload import reload_simulation, same_coordinates
from studio.run.samples import sample_layout, sample_row, sample_rows

ARM = SCENES_DIR / "arm_nail_singular.json"


@pytest.fixture
def spec():
    return core.read_spec(ARM)


# ---- edits ----------------------------------------------------------------------------------------------------
def test_setting_a_field_gives_a_new_validated_spec(spec):
    new = edits.set_value(spec, ("forces", 0, "stiffness"), 55.0)
    assert new.forces[0].stiffness == 55.0 and spec.forces[0].stiffness == 20.0   # the old spec is untouched
    assert core.compile_scene(new).forces[0].stiffness == 55.0


@pytest.mark.parametrize("path,value,message", [
    (("bodies", 0, "joint", "axis"), [0, 0, 0], "non-zero direction"),
    (("bodies", 1, "shapes", 0, "mass"), -1.0, "greater than 0"),
    (("constraints", 0, "body"), "nowhere", "unknown body"),
    (("forces", 0, "point_a"), "nope", "no point of that name"),
    (("simulation", "dt"), 0.0, "greater than 0"),
])
def test_an_invalid_value_is_refused_with_the_validators_message_at_its_field(spec, path, value, message):
    with pytest.raises(SceneError) as exc:
        edits.set_value(spec, path, value)
    problems = edits.field_problems(exc.value, path)
    assert any(message in p for p in problems), problems


def test_a_body_without_mass_is_refused_by_the_compiler(spec):
    data = edits.to_data(spec)
    data["bodies"][2]["shapes"][0].pop("mass")
    data["bodies"][2]["inertial"] = {"mass": 0.0}
    with pytest.raises(SceneError) as exc:
        edits.validate(data)
    assert "moves no mass" in str(exc.value)


def test_renaming_a_body_updates_every_reference(spec):
    new = edits.rename(spec, ("bodies", 1), "upper_arm")
    assert new.bodies[1].name == "upper_arm" and new.bodies[2].parent == "upper_arm"
    new = edits.rename(new, ("bodies", 2), "forearm")
    assert new.constraints[0].body == "forearm" and new.forces[0].body_a == "forearm"


def test_renaming_a_joint_or_point_updates_their_users(spec):
    data = edits.to_data(spec)
    data["forces"].append({"type": "actuator", "name": "motor", "joint": "elbow", "limit": 5.0})
    spec = edits.validate(data)
    new = edits.rename(spec, ("bodies", 2, "joint"), "wrist")
    assert new.bodies[2].joint.name == "wrist" and new.forces[1].joint == "wrist"
    new = edits.rename(new, ("bodies", 2, "points", "tip"), "end")
    assert "end" in new.bodies[2].points and new.constraints[0].point == "end"
    with pytest.raises(SceneError):
        edits.rename(new, ("bodies", 2, "points", "end"), "mid")       # taken
    with pytest.raises(SceneError):
        edits.rename(new, ("bodies", 2), "link1")                       # taken


def test_deleting_a_body_takes_its_subtree_and_users_along(spec):
    new, gone = edits.delete(spec, ("bodies", 1))
    assert [b.name for b in new.bodies] == ["link1"]
    assert not new.constraints and not new.forces
    assert set(gone) == {"body 'link3'", "constraint 'tip_nail'", "force 'disturbance'"}
    with pytest.raises(SceneError, match="every body has a joint"):
        edits.delete(spec, ("bodies", 0, "joint"))


def test_duplicate_and_add_give_unique_names(spec):
    new, path = edits.duplicate(spec, ("constraints", 0))
    assert path == ("constraints", 1) and new.constraints[1].name == "tip_nail_2"
    new, path = edits.duplicate(new, ("bodies", 2))
    assert new.bodies[path[1]].name == "link3_2" and new.bodies[path[1]].parent == "link2"
    for (section, kind) in edits.ADDABLE:
        added, path = edits.add(spec, section, kind, "link3")
        assert edits.resolve(added, path) is not None, (section, kind)


def test_changing_a_joint_type_keeps_its_placement(spec):
    new = edits.change_type(spec, ("bodies", 1, "joint"), "slider")
    joint = new.bodies[1].joint
    assert joint.type == "slider" and joint.name == "shoulder" and tuple(joint.position) == (0, 0, 1.0)
    new = edits.change_type(new, ("bodies", 1, "shapes", 0), "box")
    assert new.bodies[1].shapes[0].type == "box" and new.bodies[1].shapes[0].mass == 1.0


def test_edits_round_trip_through_the_document_text(spec, tmp_path):
    new = edits.set_value(spec, ("constraints", 0, "stabilization"), 7.5)
    path = core.save_scene(new, tmp_path / "edited.json")
    assert core.read_spec(path) == new


# ---- history (ring buffers) -----------------------------------------------------------------------------------
def test_the_ring_keeps_the_newest_rows_as_one_view():
    h = History(2, capacity=5, overview_capacity=4)
    rows = np.column_stack([np.arange(12.0), 10 * np.arange(12.0)])
    for k in range(0, 12, 3):
        h.append(rows[k:k + 3])
    recent = h.recent()
    assert recent[:, 0].tolist() == [7, 8, 9, 10, 11]
    assert recent.base is not None                      # a view, not a copy
    assert h.window(2.0)[:, 0].tolist() == [9, 10, 11]
    assert h.count == 12 and h.last_time == 11


def test_the_overview_of_a_long_run_stays_bounded_and_spans_it():
    h = History(1, capacity=100, overview_capacity=64)
    for k in range(0, 100_000, 1000):
        h.append(np.arange(k, k + 1000, dtype=float)[:, None])
    whole = h.whole()
    assert len(whole) <= 65
    assert whole[0, 0] == 0 and whole[-1, 0] == 99_999
    assert np.all(np.diff(whole[:, 0]) > 0)
    assert np.all(whole[:-1, 0] % h.stride == 0)
    h.clear()
    assert h.count == 0 and len(h.recent()) == 0 and len(h.whole()) == 0


def test_a_wide_layout_keeps_fewer_rows_within_the_memory_bound():
    narrow, wide = History(10, capacity=40_000), History(1000, capacity=40_000)
    assert narrow.capacity == 40_000 and narrow.overview_capacity == 20_000
    held = wide._ring.nbytes + wide._overview.nbytes
    assert held <= 48 * 2**20 < 8 * 1000 * (2 * 40_000 + 20_000)       # unbounded, it would take 800 MB
    assert 0 < wide.capacity < 40_000 and 2 <= wide.overview_capacity < 20_000


@pytest.mark.parametrize("new_width", [3, 4000])         # the same capacity, and a row so wide it holds fewer
def test_remap_keeps_each_column_s_history(new_width):
    h = History(2, capacity=2000, overview_capacity=400, max_bytes=2**20)
    t = np.arange(5000.0)
    h.append(np.column_stack([t, -t]))
    source = [0, None, 1] + [None] * (new_width - 3)
    before_recent, before_whole = h.recent().copy(), h.whole().copy()
    h.remap(new_width, source)
    assert h.width == new_width
    recent, whole = h.recent(), h.whole()
    assert np.all(np.isnan(recent[:, 1])) and np.array_equal(recent[:, 2], -recent[:, 0])
    assert np.array_equal(whole[:, 2], -whole[:, 0]) and np.all(np.diff(whole[:, 0]) > 0)
    assert recent[-1, 0] == 4999 and whole[-1, 0] == 4999 and whole[0, 0] == 0
    if new_width == 3:                                   # nothing lost
        assert np.array_equal(recent[:, [0, 2]], before_recent) and np.array_equal(whole[:, [0, 2]], before_whole)
    else:                                                # the newest rows the smaller ring holds
        assert h.capacity < 2000 and len(recent) == h.capacity
        assert np.array_equal(recent[:, 0], before_recent[-h.capacity:, 0])
    h.append(np.full((1, new_width), np.nan))            # and it goes on
    assert h.count > 0


# ---- samples, probe and reload (the worker's side) ------------------------------------------------------------
def test_sample_rows_hold_what_the_plots_show():
    sim = core.Simulation(core.load_scene(ARM))
    sim.step()
    lay = sample_layout(sim.model)
    row = sample_row(sim, lay)
    d = sim.data
    g = lay.groups
    assert row[g["t"]][0] == pytest.approx(sim.state.t)
    kinetic, potential, total, work_c, audit = row[g["energy"]]
    assert total == pytest.approx(kinetic + potential)
    assert audit == pytest.approx(sim.energy_error())
    assert row[g["force"]] == pytest.approx(d.constraint_force_magnitude)
    assert row[g["residual"]] == pytest.approx(d.residual)
    assert lay.labels["joint"] == ("base", "shoulder", "elbow")
    assert row[g["joint"]] == pytest.approx(sim.state.q)
    assert len(lay.columns()) == lay.width and "force[tip_nail]" in lay.columns()


@pytest.mark.parametrize("scene", ["arm_nail_singular", "chain20_nailed", "three_link_free_bodies", "slotine_li_arm",
                                   "slider_crank_joint_space"])
def test_rows_from_a_batch_match_the_rows_read_step_by_step(scene):
    """The worker samples a batch of compiled steps from the records of Simulation.run: the same columns that
    sample_row reads off the simulation after each step."""
    sim = core.Simulation(core.load_scene(SCENES_DIR / f"{scene}.json"))
    lay = sample_layout(sim.model, sim)
    rows = sample_rows(sim.run(12 * sim.dt, record_every=4), lay)
    again = core.Simulation(sim.model)
    expected = [sample_row(again, lay)]
    for n in range(1, 13):
        again.step()
        if n % 4 == 0:
            expected.append(sample_row(again, lay))
    assert rows.shape == (4, lay.width)
    np.testing.assert_allclose(rows, np.array(expected), rtol=1e-9, atol=1e-12)
    if lay.controllers:                                     # the controllers' columns are filled from the records
        for group in ("desired", "tracking_error", "parameters"):
            assert lay.size(group) > 0 and np.all(np.isfinite(rows[:, lay.groups[group]])), group


def test_the_overlay_puts_the_nail_spring_and_force_where_the_core_says():
    sim = core.Simulation(core.load_scene(ARM))
    for _ in range(3):
        sim.step()
    ov = overlay(sim)
    model, q = sim.model, sim.state.q
    assert ov.nail_indices() == [0]
    assert ov.point_b[0] == pytest.approx([0, 0, 1.5])
    assert ov.point_a[0] == pytest.approx(core.point_position(model, q, "link3", "tip"))
    assert ov.velocity[0] == pytest.approx(core.point_velocity(model, q, sim.state.qd, "link3", "tip"))
    assert ov.force[0] == pytest.approx(sim.data.constraint_force[0])
    assert ov.ratio[0] == pytest.approx(np.linalg.norm(ov.force[0]) / 200_000.0)
    assert ov.springs.shape == (1, 2, 3) and ov.springs[0, 1] == pytest.approx([0, 0, 3.0])
    assert not ov.broken.any() and ov.pull is None
    with pytest.raises(ValueError):
        ov.point_a[0, 0] = 1.0                          # frozen copies cross the thread boundary
    sim.move_nail("tip_nail", [0.2, 0.0, 1.5])          # a dragged nail and the mouse spring, as the core has them
    sim.set_pull("link2", [0.0, 0.0, 0.5], [1.0, 0.0, 2.0], 30.0, 3.0)
    sim.step()
    ov = overlay(sim)
    assert ov.point_b[0] == pytest.approx([0.2, 0.0, 1.5])
    assert ov.pull[0] == pytest.approx(core.point_position(model, sim.state.q, "link2", [0.0, 0.0, 0.5]))
    assert ov.pull[1] == pytest.approx([1.0, 0.0, 2.0])


@pytest.mark.parametrize("scene", ["arm_nail_singular", "elbow_singularity", "four_bar", "slider_crank_joint_space",
                                   "nail_cylinder_spring"])
def test_the_resting_overlay_shows_the_scene_at_t0_as_the_simulation_does(scene):
    """Drawn while the step's kernels compile (from the geometry alone): the same ends and springs as the first
    snapshot's overlay, a moving nail where its path starts; no forces, no velocities."""
    model = core.load_scene(SCENES_DIR / f"{scene}.json")
    rest, live = resting_overlay(model), overlay(core.Simulation(model))
    np.testing.assert_allclose(rest.point_a, live.point_a, atol=1e-12)
    np.testing.assert_allclose(rest.point_b, live.point_b, atol=1e-12)
    np.testing.assert_allclose(rest.springs, live.springs, atol=1e-12)
    assert rest.nail_indices() == live.nail_indices() and np.array_equal(rest.active, live.active)
    assert not rest.force.any() and not rest.velocity.any()


@pytest.mark.skipif(not (SCENES_DIR / "slider_crank_joint_space.json").exists(), reason="no joint-space scene")
def test_a_joint_space_constraint_has_no_point_to_draw():
    sim = core.Simulation(core.load_scene(SCENES_DIR / "slider_crank_joint_space.json"))
    sim.step()
    ov = overlay(sim)
    joint_space = [i for i, c in enumerate(sim.model.constraints) if c.kind == JOINT_SPACE]
    assert joint_space and not ov.has_point[joint_space].any()
    assert not any(i in ov.nail_indices() for i in joint_space)
    assert np.all(ov.force[joint_space] == 0) and np.all(np.isnan(ov.point_a[joint_space]))


def test_an_edit_with_the_same_joints_keeps_the_running_state(spec):
    sim = core.Simulation(core.compile_scene(spec))
    for _ in range(5):
        sim.step()
    sim.move_nail("tip_nail", [0.1, 0.0, 1.5])
    state = sim.state.copy()
    new, kept = reload_simulation(sim, edits.set_value(spec, ("forces", 0, "stiffness"), 40.0))
    assert kept and new is not sim
    assert new.state.t == state.t and np.array_equal(new.state.q, state.q) and np.array_equal(new.state.qd,
                                                                                              state.qd)
    assert new.model.forces[0].stiffness == 40.0 and "tip_nail" in new.nail_overrides


def test_a_run_setting_changes_in_place_and_the_energy_books_go_on(spec):
    weak = edits.set_value(spec, ("constraints", 0, "max_deviation"), 1.0)      # breaks at the first step
    sim = core.Simulation(core.compile_scene(weak))
    for _ in range(5):
        sim.step()
    before = sim.snapshot()
    assert before.events and not sim.active[0]
    new, kept = reload_simulation(sim, edits.set_value(weak, ("simulation", "integrator"), "semi_implicit_euler"))
    assert kept and new.integrator == "semi_implicit_euler" and sim.integrator == "rk4"
    after = new.snapshot()
    assert after.state.t == before.state.t and np.array_equal(after.state.q, before.state.q)
    assert np.array_equal(new.work, before.state.work) and after.events == before.events
    assert after.steps_taken == before.steps_taken and after.energy0 == before.energy0
    assert not new.active[0]                                      # the broken nail stays broken
    new, kept = reload_simulation(new, edits.set_value(weak, ("simulation", "dt"), 0.0005))
    assert kept and new.dt == 0.0005 and new.integrator == "rk4"   # back to the document's integrator
    assert new.model.settings["dt"] == 0.0005
    new.step()
    assert new.state.t == pytest.approx(before.state.t + 0.0005)
    new.reset()
    assert new.dt == 0.0005 and new.integrator == "rk4" and new.state.t == 0.0   # reset: the new scene's


def test_a_gain_edit_goes_on_with_the_adaptive_state():
    path = SCENES_DIR / "slotine_li_arm.json"
    spec = core.read_spec(path)
    sim = core.Simulation(core.compile_scene(spec))
    sim.run(0.05)
    estimates = sim.controller_state("idsl").copy()
    new, kept = reload_simulation(sim, edits.set_value(spec, ("controllers", 0, "kp"), 20.0))
    assert kept and new.model.spec.controllers[0].kp == 20.0 and np.all(new.controller("idsl").kp == 20.0)
    assert new.state.t == sim.state.t and np.array_equal(new.controller_state("idsl"), estimates)
    back, kept = reload_simulation(new, spec)                      # undo: the scene's gain again
    assert kept and np.all(back.controller("idsl").kp == spec.controllers[0].kp)


def test_an_edit_with_the_same_joints_keeps_inputs_broken_constraints_and_work(spec):
    weak = edits.set_value(spec, ("constraints", 0, "max_deviation"), 1.0)
    sim = core.Simulation(core.compile_scene(weak))
    sim.step()
    sim.step()
    assert not sim.active[0]
    sim.set_pull("link2", [0.0, 0.0, 0.5], [0.5, 0.0, 2.0], 30.0, 3.0)
    sim.step()
    added, _ = edits.add(weak, "constraints", "point_on_plane", "link3")     # one more constraint
    new, kept = reload_simulation(sim, added)
    assert kept and len(new.model.constraints) == 2 and new.state.active.tolist() == [False, True]
    assert new.work.shape == (2 + 4,) and new.work[0] == sim.work[0] and new.work[1] == 0.0
    assert np.array_equal(new.work[2:], sim.work[1:])
    assert new.pull[0] == sim.pull[0] and np.allclose(new.pull[2], sim.pull[2])
    new.step()                                                      # and it runs
    assert np.all(np.isfinite(new.state.q))


def test_an_edit_that_changes_the_joints_starts_over(spec):
    sim = core.Simulation(core.compile_scene(spec))
    sim.step()
    changed, _ = edits.add(spec, "bodies", "free")
    new, kept = reload_simulation(sim, changed)
    assert not kept and new.state.t == 0.0 and new.model.nq == sim.model.nq + 7
    assert not same_coordinates(sim.model, new.model)


# ---- glyphs and picking ---------------------------------------------------------------------------------------
def _signed_volume(v, f):
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6


def test_glyph_meshes_face_outwards():
    v, f, c = glyphs.sphere_mesh([[0.0, 0.0, 0.0]], 1.0, [[1, 1, 1, 1]])
    assert _signed_volume(v, f) == pytest.approx(4 / 3 * math.pi, rel=0.06)
    v, f, c = glyphs.arrow_mesh([[0, 0, 0]], [[0, 0, 1.0]], 0.02, [[1, 0, 0, 1]])
    a, b, cc = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    n = np.cross(b - a, cc - a)
    centre = (a + b + cc) / 3
    side = np.abs(n[:, 2]) < 0.5 * np.linalg.norm(n, axis=1)
    assert np.all(np.einsum("ij,ij->i", n[side][:, :2], centre[side][:, :2]) > 0)   # sides face away from the axis
    assert len(c) == len(v) and np.max(v[:, 2]) == pytest.approx(1.0)
    assert len(glyphs.arrow_mesh([[0, 0, 0]], [[0, 0, 0.001]], 0.02, [[1, 0, 0, 1]])[1]) == 0   # too short


def test_arrow_lengths_and_colours():
    lengths = glyphs.soft_length([0.5, 1.0, 10.0, 1000.0], 1.0, 2.0)
    assert lengths.tolist() == pytest.approx([1.0, 2.0, 4.0, 8.0])
    assert glyphs.arrow_length([0.5, 1.0, 100.0, 1e12], 1.0, 2.0).tolist() == pytest.approx([1.0, 2.0, 4.0, 4.4])
    colours = glyphs.ratio_colour([0.0, 1.0, 5.0])
    assert colours[0, 2] > colours[0, 1] and colours[1, 0] > colours[1, 1] + 0.5   # violet, then red
    assert colours[0, 1] < colours[0, 0] and colours[0, 1] < colours[0, 2]          # never the y axis's green
    assert np.array_equal(colours[1], colours[2])
    segs = glyphs.coil([0, 0, 0], [0, 0, 1], 0.05)
    assert segs.shape[1] == 3 and len(segs) % 2 == 0
    assert segs[0] == pytest.approx([0, 0, 0]) and segs[-1] == pytest.approx([0, 0, 1])


def test_rays_hit_the_nearest_shape():
    P = np.diag([1.0, 1.0, -1.0, 1.0])
    P[2, 3] = -0.2                       # an orthographic-like projection: the ray goes along −z
    o, d = ray_through(0.0, 0.0, P, np.eye(4))
    assert d == pytest.approx([0, 0, -1]) or d == pytest.approx([0, 0, 1])
    down = np.array([0.0, 0.0, -1.0])
    X = np.eye(4)
    assert hit_shape([0, 0, 5], down, "box", {"size": (2, 2, 2)}, X) == pytest.approx(4.0)
    assert hit_shape([0, 0, 5], down, "sphere", {"radius": 0.5}, X) == pytest.approx(4.5)
    assert hit_shape([0, 0, 5], down, "cylinder", {"radius": 0.5, "length": 2.0}, X) == pytest.approx(4.0)
    assert hit_shape([0, 0, 5], down, "capsule", {"radius": 0.5, "length": 2.0}, X) == pytest.approx(3.5)
    assert hit_shape([3, 0, 5], down, "box", {"size": (2, 2, 2)}, X) is None
    side = np.eye(4)
    side[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]  # a cylinder lying along x
    assert hit_shape([0.9, 0, 5], down, "cylinder", {"radius": 0.5, "length": 2.0}, side) == pytest.approx(4.5)
    shapes = [type("S", (), {"kind": "sphere", "size": {"radius": 0.5}})() for _ in range(2)]
    poses = [np.eye(4), np.eye(4)]
    poses[1][:3, 3] = [0, 0, 2]
    assert pick_shape([0, 0, 5], down, shapes, poses)[0] == 1
    assert hit_sphere([0, 0, 5], down, [0, 0, 0], 1.0) == pytest.approx(4.0)
    assert ray_plane([0, 0, 5], down, [0, 0, 1], [0, 0, 1]) == pytest.approx([0, 0, 1])
    assert ray_plane([0, 0, 5], [1.0, 0, 0], [0, 0, 1], [0, 0, 1]) is None


def test_the_studio_models_do_not_import_qt():
    """napari's rule (STYLE.md): what can be plain data stays Qt-free, so the worker-side and document logic run
    and test without a display. Every module of studio.document, studio.run and studio.geometry is imported."""
    import subprocess
    import sys
    code = ("import importlib, pkgutil, sys\n"
            "import studio.document, studio.run, studio.geometry\n"
            "names = [i.name for p in (studio.document, studio.run, studio.geometry)\n"
            "         for i in pkgutil.walk_packages(p.__path__, p.__name__ + '.')]\n"
            "assert len(names) >= 15, names\n"
            "for n in names: importlib.import_module(n)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'OpenGL', 'pyqtgraph')"
            " or m.startswith('studio.qt')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
