"""Forces, integrators and the energy audit (thesis §2.3.2): every source's work is integrated with the state, so
E(t) − E(0) − Σ work is integration error alone; breakable constraints, moving nails, Cash–Karp error control."""
from __future__ import annotations

import numpy as np
import pytest

import core
from core.scene import compile_scene, parse_spec


def arm_doc(constraints=(), forces=(), **sim):
    """A planar two-link arm hanging from a hinge, with a tip point."""
    bodies = []
    for i in range(2):
        bodies.append({"name": f"l{i + 1}", "parent": "world" if i == 0 else "l1",
                       "joint": {"type": "hinge", "name": f"j{i + 1}", "axis": [0, 0, 1],
                                 "position": [0 if i == 0 else 1, 0, 0], "q0": [-1.2, 0.6][i]},
                       "shapes": [{"type": "cylinder", "radius": 0.05, "length": 1, "axis": [1, 0, 0],
                                   "position": [0.5, 0, 0], "mass": 1.0}],
                       "points": {"tip": [1, 0, 0], "mid": [0.5, 0, 0]}})
    bodies.append({"name": "puck", "joint": {"type": "free", "q0": [2.5, 0, 0, 1, 0, 0, 0],
                                             "qd0": [0, 0, 1, 0, 0.5, 0]},
                   "shapes": [{"type": "sphere", "radius": 0.1, "mass": 0.5}]})
    return {"format_version": 1, "name": "audit", "gravity": [0, -9.81, 0], "bodies": bodies,
            "constraints": list(constraints), "forces": list(forces), "simulation": sim}


EVERY_FORCE = [
    {"type": "spring", "name": "s_world", "body_a": "l2", "point_a": "tip", "point_b": [2, 1, 0],
     "stiffness": 10, "damping": 3, "rest_length": 0.5},
    {"type": "spring", "name": "s_zero", "body_a": "puck", "point_a": [0, 0, 0], "body_b": "l2", "point_b": "tip",
     "stiffness": 20, "damping": 1},
    {"type": "joint_spring", "name": "js", "joint": "j2", "stiffness": 5, "damping": 0.4, "rest": 0.3},
    {"type": "drag", "name": "air", "body": "l1", "point": "mid", "linear": 0.2, "quadratic": 0.3},
    {"type": "actuator", "name": "motor", "joint": "j1", "torque": 3.0, "limit": 2.0},
    {"type": "point_force", "name": "push", "body": "puck", "force": [1.5, 0, 0], "start": 0.3, "stop": 1.7},
]


def test_energy_books_close_with_every_source():
    sim = core.Simulation(compile_scene(parse_spec(arm_doc(
        constraints=[{"type": "point_on_plane", "name": "slide", "body": "puck", "point": [0, 0, 0],
                      "origin": [0, 0, 0], "normal": [0, 0, 1], "stabilization": 20}],
        forces=EVERY_FORCE))), dt=1e-3)
    d = sim.run(2.0, record_every=10)
    sources = {k: d[k][-1] for k in ("work_dampers", "work_drag", "work_actuators", "work_external")}
    assert sources["work_dampers"] < 0 and sources["work_drag"] < 0                # dissipative
    assert abs(sources["work_actuators"]) > 0.1 and abs(sources["work_external"]) > 1e-3
    total_change = d["energy_total"][-1] - d["energy_total"][0]
    assert abs(total_change) > 0.5                                                   # energy really moves
    assert np.abs(d["energy_error"]).max() < 1e-7 * max(1.0, np.abs(d["energy_total"]).max())


def test_actuator_is_clipped_and_its_work_is_torque_times_angle():
    sim = core.Simulation(compile_scene(parse_spec(arm_doc(forces=[EVERY_FORCE[4]]))), dt=1e-3)
    d = sim.run(1.0)
    angle = d["q"][-1, 0] - d["q"][0, 0]
    assert d["work_actuators"][-1] == pytest.approx(2.0 * angle, rel=1e-9)          # τ = limit, W = ∫τ q̇ dt
    sim.set_actuator("motor", -0.5)
    before = sim.work[-2]
    sim.run(0.5)
    assert sim.work[-2] - before == pytest.approx(-0.5 * (sim.state.q[0] - d["q"][-1, 0]), rel=1e-9)


def test_spring_alone_conserves_energy_including_its_potential():
    forces = [{**EVERY_FORCE[0], "damping": 0.0}]
    d = core.Simulation(compile_scene(parse_spec(arm_doc(forces=forces))), dt=1e-3).run(2.0, record_every=20)
    E = d["energy_total"]
    assert np.ptp(d["energy_elastic"]) > 1.0
    assert np.abs(E - E[0]).max() < 1e-8 * np.abs(E).max()
    assert np.abs(d["work_dampers"]).max() == 0.0


def test_integrators_agree_and_cash_karp_meets_its_tolerance():
    model = compile_scene(parse_spec(arm_doc(forces=EVERY_FORCE[:3])))
    ref = core.Simulation(model, dt=2.5e-4, integrator="rk4").run(1.0)["q"][-1]
    ck = core.Simulation(model, dt=0.05, integrator="cash_karp", tolerance=1e-9)
    q_ck = ck.run(1.0)["q"][-1]
    assert np.abs(q_ck - ref).max() < 1e-6
    assert ck.steps_taken < 1000                                                      # it takes large steps
    euler = core.Simulation(model, dt=1e-3, integrator="semi_implicit_euler").run(1.0)["q"][-1]
    rk4 = core.Simulation(model, dt=1e-3, integrator="rk4").run(1.0)["q"][-1]
    assert np.abs(rk4 - ref).max() < 1e-3 * np.abs(euler - ref).max()


def test_adaptive_run_ends_exactly_at_duration():
    model = compile_scene(parse_spec(arm_doc()))
    sim = core.Simulation(model, dt=0.1, integrator="cash_karp", tolerance=1e-6)
    d = sim.run(0.73)
    assert d["t"][-1] == pytest.approx(0.73, abs=1e-12) and np.all(np.diff(d["t"]) > 0)


def test_constraint_breaks_beyond_its_deviation_bound_and_the_rest_is_resolved():
    nails = [{"type": "nail", "name": "hold_tip", "body": "l2", "point": "tip", "max_deviation": 0.05,
              "stabilization": 5},
             {"type": "nail", "name": "hold_puck", "body": "puck", "point": [0, 0, 0], "stabilization": 40}]
    sim = core.Simulation(compile_scene(parse_spec(arm_doc(constraints=nails))), dt=1e-3)
    sim.run(0.2)
    breaks = lambda: [e for e in sim.events if e.kind == "break"]          # noqa: E731
    assert breaks() == [] and sim.active.all()
    sim.move_nail("hold_tip", sim.data.constraint_force[0] * 0 + [5.0, 5.0, 0.0])  # yank it out of reach
    d = sim.run(0.2)
    assert [e.constraint for e in breaks()] == ["hold_tip"]
    assert breaks()[0].deviation > 0.05 and list(sim.active) == [False, True]
    assert d["constraint_force_magnitude"][-1, 0] == 0.0                                 # removed from the solve
    assert d["deviation"][-1, 1] < 1e-6                                                   # the other still holds


def test_moving_nail_is_followed():
    sim = core.Simulation(compile_scene(parse_spec(arm_doc(constraints=[
        {"type": "nail", "name": "drag", "body": "puck", "point": [0, 0, 0], "stabilization": 30}]))), dt=1e-3)
    start = sim.data.deviation[0]
    assert start == pytest.approx(0.0, abs=1e-15)
    p0 = core.point_position(sim.model, sim.state.q, "puck", [0, 0, 0])
    sim.move_nail("drag", p0, velocity=[0.2, 0.0, 0.0])
    d = sim.run(1.0)
    p1 = core.point_position(sim.model, sim.state.q, "puck", [0, 0, 0])
    np.testing.assert_allclose(p1, p0 + [0.2, 0, 0], atol=1e-6)
    # the jumps in nail and puck velocity are absorbed critically damped: D ≤ |ΔḊ| / (λ e), then it decays
    assert d["deviation"][:, 0].max() < np.linalg.norm([0.2, -0.5]) / (30 * np.e) * 1.01
    assert d["deviation"][-1, 0] < 1e-9


def test_force_bounds_hold_and_damped_least_squares_is_selectable():
    doc = arm_doc(constraints=[{"type": "nail", "name": "far", "body": "l2", "point": "tip", "position": [2.5, 0, 0],
                                "stabilization": 20, "max_force": 50}])
    svd = core.Simulation(compile_scene(parse_spec(doc)), dt=1e-3).run(0.5)
    assert svd["constraint_force_magnitude"].max() <= 50 * (1 + 1e-9)
    doc["simulation"] = {"solver": {"method": "damped_least_squares", "rho": 0.05}}
    dls = core.Simulation(compile_scene(parse_spec(doc)), dt=1e-3).run(0.5)
    assert dls["constraint_force_magnitude"].max() <= 50 * (1 + 1e-9)
    assert np.all(np.isfinite(dls["q"]))


def test_divergence_is_reported_and_the_state_kept():
    model = compile_scene(parse_spec(arm_doc(forces=[
        {"type": "joint_spring", "name": "stiff", "joint": "j2", "stiffness": 1e9}])))
    sim = core.Simulation(model, dt=0.05)
    with pytest.raises(core.DivergenceError, match="the state is diverging"):
        for _ in range(2000):
            good = sim.state
            sim.step()
    assert sim.state is good and np.all(np.isfinite(sim.state.q))


def test_mouse_pull_moves_the_body_and_its_work_is_external():
    sim = core.Simulation(compile_scene(parse_spec(arm_doc())), dt=1e-3)
    sim.set_pull("puck", [0, 0, 0], target=[2.5, -1.0, 0.0], stiffness=40, damping=4)
    d = sim.run(1.0)
    assert d["work_external"][-1] != 0.0
    assert np.abs(d["energy_error"]).max() < 1e-8 * np.abs(d["energy_total"]).max()
    y = core.point_position(sim.model, sim.state.q, "puck", [0, 0, 0])[1]
    sim.clear_pull()
    assert sim.pull is None and y < -0.5
