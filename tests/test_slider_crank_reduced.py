"""The slider-crank (Aghili §8, eq. 65–71) against its exact reduced dynamics: on the branch q2 = 2π − 2 q1 the
mechanism has one degree of freedom θ = q1 with q = (θ, 2π − 2θ) = φ(θ), Λ = ∂q/∂θ = (1, −2) constant, and
Lagrange's equation in that coordinate is

    (Λᵀ M(q) Λ) θ̈ + Λᵀ b(q, Λ θ̇) = 0,

with M and b from the CRBA and the RNEA (checked against Pinocchio elsewhere). Λᵀ M Λ never vanishes, so the
reference passes the singular crossings q1 = π/2 + nπ (where the constraint's Jacobian A = c1 [2 1] vanishes)
untroubled; it is integrated by DOP853 at tolerances near round-off.

Every formulation must follow it, the slider written as a point-on-plane constraint or in joint space as
Φ(q) = sin q1 + sin(q1 + q2) (whose J and γ = J̇q̇ are now exact: with finite differences the dynamic-constraints
run was 8e-5 rad off over 5 s and got worse, 1.8e-4, when dt halved, because γ's error is divided by A → 0 at
each crossing).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import core

SCENES = Path(__file__).resolve().parent.parent / "scenes"
T = 5.0
LAMBDA = np.array([1.0, -2.0])


@pytest.fixture(scope="module")
def reference():
    model = core.load_scene(SCENES / "slider_crank_joint_space.json")

    def rhs(t, x):
        th, thd = x
        q, qd = np.array([th, 2 * np.pi - 2 * th]), LAMBDA * thd
        M, b = core.mass_matrix(model, q), core.nonlinear_effects(model, q, qd)
        return [thd, -(LAMBDA @ b) / (LAMBDA @ M @ LAMBDA)]

    assert np.isclose(model.q0[1], 2 * np.pi - 2 * model.q0[0]) and np.isclose(model.qd0[1], -2 * model.qd0[0])
    sol = solve_ivp(rhs, (0.0, T), [model.q0[0], model.qd0[0]], method="DOP853", rtol=1e-13, atol=1e-13,
                    dense_output=True)
    assert sol.success
    crossings = np.floor((sol.y[0] - np.pi / 2) / np.pi)
    assert np.unique(crossings).size >= 4                  # the crank passes the singular configuration ≥ 3 times
    return sol


def q1_error(scene: str, formulation: str, dt: float, reference) -> float:
    sim = core.Simulation(core.load_scene(SCENES / f"{scene}.json"), dt=dt)
    sim.set_formulation(formulation)
    rec = sim.run(T, record_every=max(1, round(0.005 / dt)))
    return float(np.abs(rec["q"][:, 0] - reference.sol(rec["t"])[0]).max())


@pytest.mark.parametrize("scene", ["slider_crank", "slider_crank_joint_space"])
@pytest.mark.parametrize("formulation", ["dynamic_constraints", "projection", "multipliers"])
def test_every_formulation_follows_the_reduced_dynamics(scene, formulation, reference):
    errors = {dt: q1_error(scene, formulation, dt, reference) for dt in (2e-3, 1e-3, 5e-4)}
    print(scene, formulation, {dt: f"{e:.1e}" for dt, e in errors.items()})
    assert max(errors.values()) < 1e-7, errors             # the target is 1e-6; finite differences: 8e-5
    assert errors[5e-4] < 1e-6 and errors[5e-4] < 10 * errors[2e-3] + 1e-8   # no growth as dt shrinks


def test_joint_space_and_point_on_plane_sliders_agree(reference):
    """The same slider written two ways gives the same motion (to the integration error of each)."""
    a = core.Simulation(core.load_scene(SCENES / "slider_crank.json"))
    b = core.Simulation(core.load_scene(SCENES / "slider_crank_joint_space.json"))
    ra, rb = a.run(2.0), b.run(2.0)
    assert np.abs(ra["q"] - rb["q"]).max() < 1e-8
    away = np.abs(np.cos(ra["q"][:, 0])) > 0.05            # the force is recovered by J⁺ᵀ: not near A → 0
    np.testing.assert_allclose(np.abs(ra["constraint_force"][away, 0, 1]), np.abs(rb["constraint_force"][away, 0, 0]),
                               atol=1e-6)                  # |λ|: N on C (y) both ways (Φ = y_C is a length)
