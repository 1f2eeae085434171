"""The ``implicitfast`` integrator (core.integrators): a semi-implicit Euler step whose q̈ solves
(H + h C) q̈ = τ(q, q̇) − b + Jᵀλ, C the joint forces' −∂τ/∂q̇ (dampers, actuators' velocity gains).

Physics checked here (MuJoCo's own trajectories are matched in tests/test_mjcf.py): on one damped hinge the step
is the closed form v₁ = (v + h a₀)/(1 + h c/I), and its books close to the step's own loss −½ I (v₁ − v₀)² with
the damper's work booked at v₁; a nailed arm with joints damped far beyond RK4's bound stays
stable at a long step with its nail held, converges at first order to the RK4 solution at a short step, and loses
energy at every step; with no damping the step is semi-implicit Euler's to round-off; the projection
formulation, which does not solve through the articulated-body factorization, is refused with the reason.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import core
from core.scene import SceneError, compile_scene, parse_spec

ROOT = Path(__file__).resolve().parents[1]


def _nailed_arm(damping: float, integrator: str = "implicitfast", dt: float = 0.01) -> dict:
    doc = json.loads((ROOT / "scenes" / "three_link_arm_nailed.json").read_text())
    doc["simulation"].update(dt=dt, integrator=integrator)
    doc["forces"] = [{"type": "joint_spring", "name": f"damper_{j}", "joint": j, "damping": damping}
                     for j in ("shoulder", "elbow", "wrist")]
    return doc


def _wheel(I: float, c: float, h: float, w0: float) -> dict:
    """A horizontal wheel (no gravity torque) of inertia I about its hinge, spinning at ω₀, with a damper c."""
    return {"format_version": 1, "name": "wheel", "gravity": [0, 0, -9.81],
            "simulation": {"dt": h, "integrator": "implicitfast"},
            "bodies": [{"name": "wheel", "parent": "world",
                        "joint": {"type": "hinge", "name": "spin", "axis": [0, 0, 1], "qd0": w0},
                        "inertial": {"mass": 1.0, "com": [0, 0, 0], "inertia": [0.01, 0.01, I, 0, 0, 0]}}],
            "forces": [{"type": "joint_spring", "name": "damper", "joint": "spin", "damping": c}]}


def test_one_damped_hinge_takes_the_closed_form_step():
    """A horizontal wheel (no gravity torque) on a hinge of inertia I with a damper c: one step of h from ω₀ is
    ω₁ = ω₀ / (1 + h c / I) exactly, for any c h / I (RK4 diverges beyond 2.785)."""
    I, c, h, w0 = 0.02, 40.0, 0.01, 3.0
    sim = core.Simulation(compile_scene(parse_spec(_wheel(I, c, h, w0))))
    w = w0
    for _ in range(5):
        sim.step()
        w = w / (1.0 + h * c / I)
        assert sim.state.qd[0] == pytest.approx(w, rel=1e-13)
    assert c * h / I > 7 * 2.785


def test_one_damped_hinge_books_what_its_step_loses():
    """The same wheel's books, step by step: the damper, taken implicitly, acts at the step's end velocity, so its
    booked work is −c h ω₁² (not −c h ω₀², which at c h / I = 20 is 21² times as much), and as (I + h c) ω₁ = I ω₀
    the books of the step close to ½ I (ω₁² − ω₀²) + c h ω₁² = −½ I (ω₁ − ω₀)²: implicit Euler's own numerical
    dissipation, to round-off. That loss piles up to most of the wheel's energy within a few steps, far past half
    the energy scale, and the run is not stopped: a first-order run's books are judged on gains alone."""
    I, c, h, w0 = 0.02, 40.0, 0.01, 3.0
    sim = core.Simulation(compile_scene(parse_spec(_wheel(I, c, h, w0))))
    w, work, error = w0, 0.0, 0.0
    for _ in range(5):
        sim.step()
        w1 = sim.state.qd[0]
        assert sim.state.work[0] - work == pytest.approx(-c * h * w1 ** 2, rel=1e-9, abs=1e-16)
        assert sim.energy_error() - error == pytest.approx(-0.5 * I * (w1 - w) ** 2, rel=1e-9, abs=1e-16)
        w, work, error = w1, sim.state.work[0], sim.energy_error()
    records = sim.run(0.5)                                    # (no DivergenceError)
    energy0 = 0.5 * I * w0 ** 2
    assert records["energy_error"][-1] < -0.9 * energy0 and records["energy_error"].max() <= 1e-15


def test_a_velocity_servo_and_a_damper_on_one_hinge_book_their_own_shares():
    """The wheel driven towards ω* by a velocity servo of gain kv (τ = kv (ω* − ω): bias [0, 0, −kv]) beside its
    damper c: both are taken implicitly, (I + h (c + kv)) ω₁ = I ω₀ + h kv ω*, and each source books its own
    force at ω₁ (dampers −c h ω₁², actuators h kv (ω* − ω₁) ω₁), so the step's books close to −½ I (ω₁ − ω₀)²."""
    I, c, kv, target, h, w0 = 0.02, 10.0, 30.0, 5.0, 0.01, 3.0
    doc = _wheel(I, c, h, w0)
    doc["forces"].append({"type": "actuator", "name": "servo", "joint": "spin", "torque": target, "gain": kv,
                          "bias": [0.0, 0.0, -kv]})
    sim = core.Simulation(compile_scene(parse_spec(doc)))
    w, work, error = w0, np.zeros(4), 0.0
    for _ in range(5):
        sim.step()
        w1 = (I * w + h * kv * target) / (I + h * (c + kv))
        assert sim.state.qd[0] == pytest.approx(w1, rel=1e-13)
        booked = sim.state.work - work
        assert booked[0] == pytest.approx(-c * h * w1 ** 2, rel=1e-9)
        assert booked[2] == pytest.approx(h * kv * (target - w1) * w1, rel=1e-9)
        assert sim.energy_error() - error == pytest.approx(-0.5 * I * (w1 - w) ** 2, rel=1e-9, abs=1e-14)
        w, work, error = w1, sim.state.work.copy(), sim.energy_error()      # (round-off: 1e-16 of E ≈ 0.3 J)


def test_a_nailed_arm_damped_beyond_rk4s_bound_is_stable_holds_its_nail_and_loses_energy():
    """Dampers of 200 N·m·s on 1 kg·m²-scale links at 10 ms (λ·dt ≈ 6–60 on the joints' own modes): RK4
    diverges, implicitfast runs 3 s with the nail's deviation below 1e-4 m (first-order drift, stabilized) and
    the total energy falling at every step."""
    with pytest.raises(core.DivergenceError):
        core.Simulation(compile_scene(parse_spec(_nailed_arm(200.0, "rk4")))).run(0.5)
    sim = core.Simulation(compile_scene(parse_spec(_nailed_arm(200.0))))
    records = sim.run(3.0)
    assert np.all(np.isfinite(records["q"]))
    assert np.abs(records["deviation"]).max() < 1e-4
    energy = records["energy_total"]
    assert np.all(np.diff(energy) <= 1e-12) and energy[0] - energy[-1] > 0.02   # (overdamped: it creeps)


def test_the_step_converges_at_first_order_to_the_rk4_solution():
    """Dampers of 2 N·m·s (within RK4's reach at 0.1 ms): implicitfast's error at t = 1 s against RK4 at 0.1 ms
    halves (ratio 1.7–2.3) each time dt halves from 4 ms to 1 ms."""
    ref = core.Simulation(compile_scene(parse_spec(_nailed_arm(2.0, "rk4", 1e-4))))
    ref.run(1.0)
    errors = []
    for dt in (0.004, 0.002, 0.001):
        sim = core.Simulation(compile_scene(parse_spec(_nailed_arm(2.0, dt=dt))))
        sim.run(1.0)
        errors.append(np.abs(np.asarray(sim.state.q) - np.asarray(ref.state.q)).max())
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(1.7 < r < 2.3 for r in ratios), (errors, ratios)


def test_without_damping_the_step_is_semi_implicit_eulers():
    """No joint force depends on q̇: H + h C = H, and the run is semi-implicit Euler's to round-off."""
    runs = []
    for integrator in ("implicitfast", "semi_implicit_euler"):
        sim = core.Simulation(compile_scene(parse_spec(_nailed_arm(0.0, integrator, 0.002))))
        runs.append(sim.run(1.0)["q"])
    np.testing.assert_allclose(runs[0], runs[1], rtol=0, atol=1e-13)


def test_the_projection_formulation_is_refused_with_the_reason():
    doc = _nailed_arm(1.0)
    doc["simulation"]["formulation"] = "projection"
    with pytest.raises(SceneError, match="implicitfast integrator takes the dynamic_constraints"):
        compile_scene(parse_spec(doc))
    sim = core.Simulation(compile_scene(parse_spec(_nailed_arm(1.0))))
    with pytest.raises(ValueError, match="articulated-body factorization"):
        sim.set_formulation("projection")
    sim = core.Simulation(compile_scene(parse_spec(_nailed_arm(1.0, "rk4"))))
    sim.set_formulation("projection")
    with pytest.raises(ValueError, match="not projection"):
        sim.set_integrator("implicitfast")

