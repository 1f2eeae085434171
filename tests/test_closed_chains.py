"""Closed chains with redundant constraints under every formulation: a crank-rocker four-bar closed by a
point-to-point constraint (its out-of-plane row is identically zero: rank 2 of 3) and a door on three collinear
hinges (18 rows, rank 5). All formulations give the same motion (within 1e-6 over 2 s at 1 ms RK4) and the same
generalized constraint force; the multipliers are indeterminate in rows − rank combinations (Aghili, Remark 4),
and every formulation returns the minimum-norm ones. The door is also checked against the one-degree-of-freedom
pendulum it is: I θ̈ = m g r sin α cos θ about its tilted axis.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import core
from core.formulations import FORMULATIONS
from core.kinematics import configuration_difference

SCENES = Path(__file__).resolve().parent.parent / "scenes"
T = 2.0


def run_all(name: str, duration: float = T):
    out = {}
    for f in FORMULATIONS:
        sim = core.Simulation(core.load_scene(SCENES / f"{name}.json"))
        sim.set_formulation(f)
        out[f] = (sim, sim.run(duration))
    return out


def max_difference(model, a, b) -> float:
    return max(np.linalg.norm(configuration_difference(model, x, y)) for x, y in zip(a["q"], b["q"]))


@pytest.fixture(scope="module")
def four_bar():
    return run_all("four_bar")


@pytest.fixture(scope="module")
def door():
    return run_all("door_three_hinges")


# ------------------------------------------------------------------------------------------- four-bar
def test_four_bar_starts_closed_and_grashof():
    model = core.load_scene(SCENES / "four_bar.json")
    a, b, c, d = 0.3, 1.0, 0.8, 0.9
    assert min(a, b, c, d) + max(a, b, c, d) < sum((a, b, c, d)) - min(a, b, c, d) - max(a, b, c, d)
    tip = core.point_position(model, model.q0, "coupler", "tip")
    np.testing.assert_allclose(tip, core.point_position(model, model.q0, "rocker", "tip"), atol=1e-14)
    J = core.point_jacobian(model, model.q0, "coupler", "tip") - core.point_jacobian(model, model.q0, "rocker", "tip")
    np.testing.assert_allclose(J @ model.qd0, 0.0, atol=1e-13)


@pytest.mark.slow
def test_four_bar_formulations_agree_and_report_the_redundant_row(four_bar):
    model = four_bar["projection"][0].model
    ref = four_bar["projection"][1]
    assert ref["q"][-1, 0] - ref["q"][0, 0] > 2 * np.pi                     # the crank turns fully
    for f, (sim, d) in four_bar.items():
        assert np.all(d["jacobian_rank"] == 2) and np.all(d["rank_deficient"] == 1), f
        (event,) = [e for e in sim.events if e.kind == "rank_deficient"]
        assert event.t == 0.0 and event.rows == 3 and event.rank == 2
        assert max_difference(model, ref, d) < 1e-6, f
        np.testing.assert_allclose(d["constraint_force"][:, 0, 2], 0.0, atol=1e-9)   # min-norm: no z force
        np.testing.assert_allclose(d["constraint_force"], ref["constraint_force"], rtol=1e-4, atol=1e-4)
        E = d["energy_total"]
        assert np.abs(E - E[0]).max() < 1e-6
        print(f"four_bar {f}: max |Δq| {max_difference(model, ref, d):.2e}, max dev {d['deviation'].max():.2e}, "
              f"energy drift {np.abs(E - E[0]).max():.2e} J, {1e3 * sim.wall_time / sim.steps_taken:.2f} ms/step")


# ------------------------------------------------------------------------------------------- door
def door_angle(model, q: np.ndarray) -> np.ndarray:
    """The door's rotation about its hinge axis: q_door = q_x(−α) ⊗ q_z(θ) (scene construction)."""
    alpha = np.arctan2(model.spec.constraints[0].axis[1], model.spec.constraints[0].axis[2])
    w, x = np.cos(alpha / 2), np.sin(alpha / 2)                              # q_x(α) ⊗ q
    qw, qx, qy, qz = q[:, 3], q[:, 4], q[:, 5], q[:, 6]
    zw = w * qw - x * qx
    zz = w * qz + x * qy
    return 2 * np.arctan2(zz, zw), alpha


@pytest.mark.slow
def test_door_formulations_agree_with_each_other_and_with_the_pendulum(door):
    model = door["projection"][0].model
    ref = door["projection"][1]
    theta, alpha = door_angle(model, ref["q"])
    m, w, t, r = 20.0, 0.9, 0.04, 0.45
    inertia = m * (w * w + t * t) / 12 + m * r * r                            # about the hinge axis
    sol = solve_ivp(lambda _, y: [y[1], m * 9.81 * r * np.sin(alpha) * np.cos(y[0]) / inertia], (0, T),
                    [theta[0], 0.0], t_eval=ref["t"], rtol=1e-12, atol=1e-12)
    assert theta.max() > 2.5                                                  # it swings through its lowest θ = π/2
    np.testing.assert_allclose(theta, sol.y[0], atol=1e-8)
    for f, (sim, d) in door.items():
        assert np.all(d["jacobian_rank"] == 5), f
        assert max_difference(model, ref, d) < 1e-6, f
        assert np.nanmax(d["deviation"]) < 1e-9
        gen = lambda data: data["constraint_force"].sum(axis=1)              # total hinge force on the door
        np.testing.assert_allclose(gen(d), gen(ref), atol=1e-8)
    print(f"door: θ from {theta[0]:.3f} to {theta.max():.3f} rad, |θ − θ_pendulum| ≤ "
          f"{np.abs(theta - sol.y[0]).max():.1e}")


def test_door_multipliers_are_indeterminate_in_13_combinations():
    """Remark 4 at one state: rows − rank = 13 combinations of the hinge forces do nothing; what the hinges
    carry together (the total force on the door) is unique: m (a_com − g), Newton's law for the door."""
    model = core.load_scene(SCENES / "door_three_hinges.json")
    sim = core.Simulation(model)
    sim.set_formulation("multipliers")
    d = sim.data
    assert d.jacobian_rank == 5 and d.rank_deficient
    rows = sum(c.rows for c in model.constraints)
    assert rows - d.jacobian_rank == 13
    s = sim.state
    a_com = core.point_acceleration(model, s.q, s.qd, d.qdd, "door", [0.45, 0.0, 1.0])
    np.testing.assert_allclose(d.constraint_force.sum(axis=0), 20.0 * (a_com - model.gravity), atol=1e-9)
    assert np.linalg.norm(a_com) > 0.1                                       # it starts swinging
