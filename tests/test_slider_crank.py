"""Aghili's slider-crank (§8, eq. 65–71) through its singular configurations, under every formulation.

Two massless 1 m links with 1 kg point masses at their distal ends (M of eq. 68), the distal end C held on y = 0,
q1(0) = 0.3, q2(0) = 2π − 2q1(0), q̇1(0) = 5 rad/s, 5 s at 1 ms RK4. On the branch q2 = 2π − 2q1 the Jacobian is
A = c1 [2 1] (eq. 69): it vanishes at q1 = π/2 + nπ, where this branch crosses the folded one (q2 = π), and the
crank passes there six times in 5 s. (At even multiples of π/2 the mechanism is stretched flat along the slider:
a dead point of the crank, but J = ±[2 1] has full rank there.)

- projection carries it through on the right branch with |y_C| ≤ 1e-9 (measured ~5e-12), a physical slider force
  and the energy conserved to ~1e-8 J;
- multipliers: the same motion, and at the singularity a ``rank_deficient`` event and record instead of a
  multiplier divided by σ²;
- dynamic constraints (the thesis's SVD, no rank floor, force bound 1e6 N): the same motion within ~5e-7, but
  its multiplier spikes to ~1e4 N in the step next to the singularity (reported, not a failure).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.formulations import FORMULATIONS

SCENES = Path(__file__).resolve().parent.parent / "scenes"
DURATION = 5.0


def y_C(q: np.ndarray) -> np.ndarray:
    return np.sin(q[:, 0]) + np.sin(q[:, 0] + q[:, 1])                       # eq. 66 (l = 1)


def off_branch(q: np.ndarray) -> np.ndarray:
    """q2 − (2π − 2q1), wrapped to (−π, π]: zero on the branch the crank starts on."""
    return np.angle(np.exp(1j * (q[:, 1] + 2 * q[:, 0])))


@pytest.fixture(scope="module")
def runs():
    out = {}
    for f in FORMULATIONS:
        sim = core.Simulation(core.load_scene(SCENES / "slider_crank.json"))
        sim.set_formulation(f)
        out[f] = (sim, sim.run(DURATION))
    return out


def crossings(q1: np.ndarray) -> int:
    """How many times q1 passes π/2 + nπ."""
    return int(np.abs(np.diff(np.floor((q1 - np.pi / 2) / np.pi))).sum())


def test_scene_is_the_model_of_eq_68():
    model = core.load_scene(SCENES / "slider_crank.json")
    assert model.settings["dt"] == 1e-3 and model.settings["integrator"] == "rk4"
    assert model.settings["formulation"] == "projection"
    np.testing.assert_allclose(model.q0, [0.3, 2 * np.pi - 0.6])
    np.testing.assert_allclose(model.qd0, [5.0, -10.0])
    for q2 in (0.3, 1.9, np.pi):
        c2 = np.cos(q2)
        np.testing.assert_allclose(core.mass_matrix(model, np.array([0.1, q2])),
                                   [[3 + 2 * c2, 1 + c2], [1 + c2, 1]], atol=1e-14)


@pytest.mark.slow
def test_projection_carries_it_through_the_singularities_on_its_branch(runs):
    sim, d = runs["projection"]
    q = d["q"]
    assert crossings(q[:, 0]) >= 5
    assert np.abs(y_C(q)).max() <= 1e-9
    assert np.abs(off_branch(q)).max() <= 1e-6
    assert d["projection_iterations"].max() >= 1                             # Newton–Raphson did work
    E = d["energy_total"]
    assert np.abs(E - E[0]).max() < 1e-6
    assert d["constraint_force_magnitude"].max() < 30.0                      # the physical force stays ~26 N
    assert np.abs(d["energy_error"]).max() < 1e-6                            # books close with the corrections
    print(f"projection: max |y_C| {np.abs(y_C(q)).max():.2e}, off-branch {np.abs(off_branch(q)).max():.2e}, "
          f"energy drift {np.abs(E - E[0]).max():.2e} J, max force {d['constraint_force_magnitude'].max():.4g} N, "
          f"{crossings(q[:, 0])} crossings, rank events at {[round(e.t, 3) for e in sim.events][::2]}")


@pytest.mark.slow
def test_multipliers_flag_rank_loss_at_the_singularity(runs):
    sim, d = runs["multipliers"]
    q = d["q"]
    lost = [e for e in sim.events if e.kind == "rank_deficient"]
    assert lost and all(e.formulation == "multipliers" and e.rank == 0 for e in lost)
    flagged = d["rank_deficient"] > 0.5
    assert flagged.any()
    assert np.abs(np.cos(q[flagged, 0])).max() < 2e-3                       # only next to q1 = π/2 + nπ
    assert np.all(d["jacobian_rank"][~flagged] == 1)
    assert np.all(np.isfinite(d["constraint_force"]))
    assert d["constraint_force_magnitude"].max() < 30.0                      # no garbage multiplier
    assert np.abs(y_C(q)).max() < 1e-8 and np.abs(off_branch(q)).max() <= 1e-6
    print(f"multipliers: {len(lost)} rank_deficient events at t = {[round(e.t, 3) for e in lost]}, "
          f"max |y_C| {np.abs(y_C(q)).max():.2e}, max force {d['constraint_force_magnitude'].max():.4g} N")


@pytest.mark.slow
def test_dynamic_constraints_follow_the_branch_but_their_multiplier_spikes(runs):
    sim, d = runs["dynamic_constraints"]
    q = d["q"]
    assert np.abs(y_C(q)).max() < 1e-8 and np.abs(off_branch(q)).max() <= 1e-5
    assert any(e.kind == "rank_deficient" for e in sim.events)          # reported, though not acted on
    spike = d["constraint_force_magnitude"].max()
    print(f"dynamic_constraints: max |y_C| {np.abs(y_C(q)).max():.2e}, off-branch {np.abs(off_branch(q)).max():.2e}, "
          f"max force {spike:.4g} N next to the singularity (projection and multipliers: ~26 N)")


@pytest.mark.slow
def test_the_three_formulations_give_the_same_motion(runs):
    ref = runs["projection"][1]["q"]
    for f in ("dynamic_constraints", "multipliers"):
        diff = np.abs(runs[f][1]["q"] - ref).max()
        assert diff < 1e-6, f
    away = np.abs(np.cos(ref[:, 0])) > 0.05                                  # forces agree off the singularity
    Fp = runs["projection"][1]["constraint_force"][:, 0, 1]
    Fm = runs["multipliers"][1]["constraint_force"][:, 0, 1]
    np.testing.assert_allclose(Fp[away], Fm[away], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_the_joint_space_slider_moves_like_the_point_on_plane_slider(runs):
    """Both descriptions have exact rows (equal to round-off, test_joint_constraints), so over 2 s the motions agree
    to round-off grown by the dynamics (measured 9e-13) and the slider forces too, away from the singularity."""
    sim = core.Simulation(core.load_scene(SCENES / "slider_crank_joint_space.json"))
    d = sim.run(2.0)
    ref = runs["projection"][1]
    n = len(d["t"])
    np.testing.assert_allclose(d["t"], ref["t"][:n])
    assert np.abs(d["q"] - ref["q"][:n]).max() < 1e-11
    assert np.abs(y_C(d["q"])).max() <= 1e-9
    assert np.abs(d["energy_error"] - ref["energy_error"][:n]).max() < 1e-11
    away = np.abs(np.cos(d["q"][:, 0])) > 0.05        # near q1 = π/2 the recovered λ = (Jᵀλ)/σ is sensitive
    np.testing.assert_allclose(d["constraint_force"][away, 0, 0], ref["constraint_force"][:n][away, 0, 1],
                               rtol=0, atol=1e-8)      # measured 2.3e-9 N of up to 26 N
