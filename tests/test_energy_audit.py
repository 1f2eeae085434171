"""Forces, integrators and the energy audit (thesis §2.3.2): every source's work is integrated with the state, so
E(t) − E(0) − Σ work is integration error alone; breakable constraints, moving nails, Cash–Karp error control."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import core
from core.__main__ import main as cli_main
from core.scene import compile_scene, parse_spec

ROOT = Path(__file__).resolve().parents[1]


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
    model = compile_scene(parse_spec(arm_doc(forces=[EVERY_FORCE[0], EVERY_FORCE[2]])))   # (none on the puck)
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


# ---- the first-order integrators' books (core.integrators._first_order_step, BOOKS_FACTOR) ----------------------

def slider_pendulum(dt: float) -> dict:
    """A 1 kg mass on two sliders (x on a 0.5 kg carriage, then z) held on the unit circle by the joint-space
    constraint x² + z² = 1, released from rest at (0.6, −0.8): a pendulum whose M is constant and whose gravity
    potential is linear in q."""
    def body(name, parent, axis, mass, q0):
        return {"name": name, "parent": parent, "joint": {"type": "slider", "name": name, "axis": axis, "q0": q0},
                "inertial": {"mass": mass, "com": [0, 0, 0], "inertia": [0.01, 0.01, 0.01, 0, 0, 0]}}
    return {"format_version": 1, "name": "slider_pendulum", "gravity": [0, 0, -9.81],
            "simulation": {"dt": dt, "integrator": "semi_implicit_euler"},
            "bodies": [body("x", "world", [1, 0, 0], 0.5, 0.6), body("z", "x", [0, 0, 1], 1.0, -0.8)],
            "constraints": [{"type": "joint_space", "name": "rod", "expression": "x**2 + z**2", "value": 1.0,
                             "max_deviation": 1.0}]}


def test_semi_implicit_euler_books_close_to_its_own_numerical_dissipation():
    """Semi-implicit Euler moves q by h q̇₁ with M Δq̇ = h (Jᵀλ − g), so ΔT = q̇₁ᵀ M Δq̇ − ½ Δq̇ᵀ M Δq̇ (M constant)
    and ΔV = h gᵀq̇₁ (V linear): with the rod's work booked as h λᵀJ q̇₁, the force held over the step times the
    displacement it makes, every step's books close to −½ Δq̇ᵀ M Δq̇ exactly — the method's own numerical
    dissipation, a loss. Booked at the start velocity, as before, the rod's work was off by h² λᵀJ q̈ a step, of
    the loss's own size and either sign (measured: a gain of 2.6e-3 J a step against a loss of 4e-4 J)."""
    model = compile_scene(parse_spec(slider_pendulum(0.01)))
    sim = core.Simulation(model)
    qd, error = np.array(sim.state.qd), sim.energy_error()
    for _ in range(100):
        sim.step()
        dqd = sim.state.qd - qd
        loss = -0.5 * dqd @ core.mass_matrix(model, sim.state.q) @ dqd
        assert loss < -1e-4
        assert sim.energy_error() - error == pytest.approx(loss, rel=1e-9)
        qd, error = np.array(sim.state.qd), sim.energy_error()
    assert abs(sim.state.work[0]) > 1e-4                      # (the rod does book work: Baumgarte's and h's)


def test_semi_implicit_euler_books_error_shrinks_linearly_with_the_step():
    """The nailed three-link arm with joint dampers of 0.5 N·m·s under semi-implicit Euler (M(q), a nonlinear
    gravity potential, a constraint and a source): the books' error at t = 1 s is a loss at every step length
    and halves (ratio 1.9–2.1) each time dt halves from 4 ms to 1 ms — the sum of the steps' O(h²) numerical
    dissipation, O(h) over a fixed time."""
    doc = json.loads((ROOT / "scenes" / "three_link_arm_nailed.json").read_text())
    doc["forces"] = [{"type": "joint_spring", "name": f"damper_{j}", "joint": j, "damping": 0.5}
                     for j in ("shoulder", "elbow", "wrist")]
    errors = []
    for dt in (0.004, 0.002, 0.001):
        doc["simulation"].update(dt=dt, integrator="semi_implicit_euler")
        records = core.Simulation(compile_scene(parse_spec(doc))).run(1.0)
        assert records["energy_error"].max() <= 1e-12 and records["work_dampers"][-1] < -0.2
        errors.append(records["energy_error"][-1])
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(1.9 < r < 2.1 for r in ratios), (errors, ratios)


def sprung_mass(dt: float, integrator: str = "semi_implicit_euler") -> dict:
    """A 1 kg mass on a slider, held by a spring of 900 N/m (ω = 30 rad/s) from 0.1 m, no gravity along it."""
    return {"format_version": 1, "name": "sprung_mass", "gravity": [0, 0, 0],
            "simulation": {"dt": dt, "integrator": integrator},
            "bodies": [{"name": "mass", "parent": "world",
                        "joint": {"type": "slider", "name": "x", "axis": [1, 0, 0], "q0": 0.1},
                        "inertial": {"mass": 1.0, "com": [0, 0, 0], "inertia": [0.01, 0.01, 0.01, 0, 0, 0]}}],
            "forces": [{"type": "spring", "name": "spring", "body_a": "mass", "point_a": [0, 0, 0],
                        "point_b": [0, 0, 0], "stiffness": 900.0}]}


@pytest.mark.parametrize("integrator", ["semi_implicit_euler", "implicitfast"])
def test_a_first_order_run_that_makes_energy_is_stopped(integrator, tmp_path):
    """The spring at h ω = 3, beyond semi-implicit Euler's bound of 2 (implicitfast takes only joint dampers and
    gains implicitly, not a spring): the step multiplies the amplitude by 6.85 (λ² + 7 λ + 1 = 0), and the first
    step's energy is 73 times E(0), from no source. Before the first-order runs were judged this run completed
    "ok" over 2 s with x = 6e15 m and E = 2e34 J; now its first step is refused as diverged (Simulation.run,
    exit code 3 from ``python -m core run``). At h ω = 0.1 the same scene runs 2 s with its books within 0.06 of
    its energy scale (semi-implicit Euler's bounded energy oscillation)."""
    sim = core.Simulation(compile_scene(parse_spec(sprung_mass(0.1, integrator))))
    with pytest.raises(core.DivergenceError, match="energy audit's error") as caught:
        sim.run(2.0)
    assert sim.state.t == 0.0 and len(caught.value.records["t"]) == 1
    path = tmp_path / "sprung.json"
    path.write_text(json.dumps(sprung_mass(0.1, integrator)))
    assert cli_main(["run", str(path), "--out", str(tmp_path / "out"), "--duration", "2", "--quiet"]) == 3
    stable = core.Simulation(compile_scene(parse_spec(sprung_mass(1 / 300, integrator)))).run(2.0)
    assert stable["t"][-1] == pytest.approx(2.0)
    assert np.abs(stable["energy_error"]).max() < 0.06 * stable["energy_total"].max()


def test_the_books_start_from_the_state_a_run_starts_from():
    """A state put in place of the scene's before the first step (a keyframe: the arm bent the other way and the
    puck 3 m higher): E(0) is its energy, so the books close to integration error over the run, as they do from the
    scene's own initial state. Before, E(0) was always the scene's initial state's, and a robot started from a
    keyframe 0.28 m higher (Menagerie's Barkour) was stopped at its first step as "energy from no source"."""
    model = compile_scene(parse_spec(arm_doc(forces=[EVERY_FORCE[0], EVERY_FORCE[2]])))   # (none on the puck)
    sim = core.Simulation(model)
    q = np.array(model.q0, dtype=float)
    q[0], q[1], q[3] = 1.0, -0.4, 3.0                         # j1, j2 and the puck's height (y: up)
    sim.state = core.State(0.0, q, np.zeros(model.nv))
    sim.run(1.0)
    assert abs(sim.energy_error()) < 1e-6
    assert sim.state.q[3] == pytest.approx(3.0 - 0.5 * 9.81, abs=1e-9)      # the puck's free fall from rest
