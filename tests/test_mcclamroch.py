"""McClamroch's three constrained-robot configurations (§2, §4), built as scenes of the forest and checked against
his reduced equations computed independently from the arm's own M, G, J and J̇q̇:

- an arm gripping an inertial load: the contact force f solves [m⁻¹I + J M⁻¹Jᵀ] f = J M⁻¹(G − T) − J̇q̇ − g
  (eq. 29) and the load obeys m p̈ = −f − m g (eq. 31);
- an arm whose tip slides on a rigid frictionless surface Φ(p) = n·(p − p0) = 0: the multiplier π solves
  [D J M⁻¹Jᵀ Dᵀ] π = D (J M⁻¹(G − T) − J̇q̇) (eq. 33; the text prints "+ J̇q̇" inside the braces, but the
  derivation — the same as eq. 29's — gives the minus sign), the contact force is Dᵀπ along the normal
  (eq. 8) and does no work;
- two arms gripping one load: f1, f2 solve the 6 x 6 system of eq. 36 and m p̈ = −f1 − f2 − m g (eq. 38).

Here f is the force on the arm's tip (our λ for D = x_tip − p) and g = −gravity = (0, 0, 9.81).
All three formulations give the same motion (slow tests: 2 s at 1 ms RK4, within 1e-6).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.formulations import FORMULATIONS
from core.kinematics import configuration_difference

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def arm_terms(model, q, qd, prefix=""):
    """The arm's own M, G, J (tip), J̇q̇ and its joint slice, from the core's public functions."""
    s = slice(model.qd_slice(f"{prefix}base").start, model.qd_slice(f"{prefix}elbow").stop)
    M = core.mass_matrix(model, q)[s, s]
    G = core.nonlinear_effects(model, q, qd)[s]
    J = core.point_jacobian(model, q, f"{prefix}fore", "tip")[:, s]
    Jdqd = core.point_bias_acceleration(model, q, qd, f"{prefix}fore", "tip")
    return M, G, J, Jdqd, s


def load_slice(model):
    return slice(model.qd_slice("load_x").start, model.qd_slice("load").stop)


def sample_states(name, formulation="projection", duration=0.6, every=100):
    """States along a run (projection keeps them on the constraint manifold to 1e-12), with the run's data."""
    sim = core.Simulation(core.load_scene(SCENES / f"{name}.json"))
    sim.set_formulation(formulation)
    out = [(sim.state.copy(), sim.data)]
    for _ in range(int(round(duration / sim.dt / every))):
        for _ in range(every):
            sim.step()
        out.append((sim.state.copy(), sim.data))
    return sim.model, out


def test_gripped_load_contact_force_solves_eq_29_and_the_load_obeys_eq_31():
    model, samples = sample_states("mcclamroch_gripped_load")
    m, g, T = 2.0, -model.gravity, np.array([2.0, 0.0, 0.0])
    for state, data in samples:
        M, G, J, Jdqd, _ = arm_terms(model, state.q, state.qd)
        f = np.linalg.solve(np.eye(3) / m + J @ np.linalg.solve(M, J.T),
                            J @ np.linalg.solve(M, G - T) - Jdqd - g)                          # eq. 29
        np.testing.assert_allclose(data.constraint_force[0], f, rtol=1e-6, atol=1e-6)
        p_dd = data.qdd[load_slice(model)]
        np.testing.assert_allclose(m * p_dd, -data.constraint_force[0] - m * g, atol=1e-9)   # eq. 31
    print(f"gripped load: |f| from {np.linalg.norm(samples[0][1].constraint_force[0]):.4g} to "
          f"{np.linalg.norm(samples[-1][1].constraint_force[0]):.4g} N")


def test_eq_29_matrix_is_the_assembled_constraint_matrix_and_never_singular():
    """The forest's A = [J, −I] M⁻¹ [J, −I]ᵀ, as the pipeline assembles it (M⁻¹Jᵀ by articulated-body solves), is
    McClamroch's m⁻¹I + J M⁻¹Jᵀ, positive definite even at the arm's singular (fully stretched) configuration."""
    from probe import look
    model = core.load_scene(SCENES / "mcclamroch_gripped_load.json")
    for q_arm in ([0.2, -0.5, 1.3], [0.0, 0.0, 0.0]):                       # the second: stretched, singular
        q = model.q0.copy()
        q[:3] = q_arm
        A = look(model, 0.0, q, np.zeros(model.nv), inputs=core.Inputs(formulation="dynamic_constraints")).A
        M, _, J, _, _ = arm_terms(model, q, np.zeros(model.nv))
        np.testing.assert_allclose(A, np.eye(3) / 2.0 + J @ np.linalg.solve(M, J.T), atol=1e-12)
        assert np.linalg.eigvalsh(A).min() >= 0.5 - 1e-12


def test_surface_contact_force_solves_eq_33_and_lies_along_the_normal():
    model, samples = sample_states("mcclamroch_surface", duration=1.5, every=50)
    n = model.constraints[0].basis[:, 0]
    T = np.zeros(3)
    pis = []
    for state, data in samples:
        M, G, J, Jdqd, _ = arm_terms(model, state.q, state.qd)
        D = n[None, :]
        pi = np.linalg.solve(D @ J @ np.linalg.solve(M, J.T) @ D.T,
                             D @ (J @ np.linalg.solve(M, G - T) - Jdqd))[0]                 # eq. 33
        f = data.constraint_force[0]
        assert f @ n == pytest.approx(pi, rel=1e-6, abs=1e-6)
        np.testing.assert_allclose(f, pi * n, atol=1e-9 * max(1.0, abs(pi)))               # f = Dᵀπ (eq. 8)
        pis.append(pi)
    pis = np.array(pis)
    print(f"surface: π from {pis[0]:.4g} N, range [{pis.min():.4g}, {pis.max():.4g}] N over 1.5 s")


@pytest.mark.slow
def test_surface_contact_does_no_work_and_reports_where_it_would_lift_off():
    """A frictionless bilateral surface: energy is conserved and the force stays along n. Where π < 0 the
    bilateral model of eq. 11 pulls the tip onto the surface; a real contact would lift off (§6, eq. 40–42)."""
    sim = core.Simulation(core.load_scene(SCENES / "mcclamroch_surface.json"))
    d = sim.run(3.0)
    n = sim.model.constraints[0].basis[:, 0]
    F = d["constraint_force"][:, 0, :]
    pi = F @ n
    np.testing.assert_allclose(F, np.outer(pi, n), atol=1e-9 * np.abs(pi).max())
    E = d["energy_total"]
    assert np.abs(E - E[0]).max() < 1e-5
    assert np.abs(d["work_constraints"]).max() < 1e-5
    pulling = d["t"][pi < 0]
    print(f"surface, 3 s: π in [{pi.min():.4g}, {pi.max():.4g}] N; π < 0 (the surface pulls) during "
          f"{len(pulling) * sim.dt:.3f} s" + (f" from t = {pulling[0]:.3f} s" if len(pulling) else "")
          + f"; energy drift {np.abs(E - E[0]).max():.2e} J")


def test_two_arms_contact_forces_solve_eq_36_and_the_load_obeys_eq_38():
    model, samples = sample_states("mcclamroch_two_arms")
    m, g = 2.0, -model.gravity
    T = {"a_": np.array([1.5, 0.0, 0.0]), "b_": np.array([-1.0, 0.0, 0.0])}
    for state, data in samples:
        blocks, rhs = [], []
        for prefix in ("a_", "b_"):
            M, G, J, Jdqd, _ = arm_terms(model, state.q, state.qd, prefix)
            blocks.append(np.eye(3) + m * J @ np.linalg.solve(M, J.T))
            rhs.append(m * (J @ np.linalg.solve(M, G - T[prefix]) - Jdqd - g))
        K = np.block([[blocks[0], np.eye(3)], [np.eye(3), blocks[1]]])                        # eq. 36
        f = np.linalg.solve(K, np.concatenate(rhs))
        np.testing.assert_allclose(data.constraint_force[:2].ravel(), f, rtol=1e-6, atol=1e-6)
        p_dd = data.qdd[load_slice(model)]
        np.testing.assert_allclose(m * p_dd, -f[:3] - f[3:] - m * g, atol=1e-6)              # eq. 38
    assert not samples[-1][1].rank_deficient and samples[-1][1].jacobian_rank == 6


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mcclamroch_gripped_load", "mcclamroch_surface", "mcclamroch_two_arms"])
def test_formulations_agree_on_mcclamroch_scenes(name):
    runs = {}
    for f in FORMULATIONS:
        sim = core.Simulation(core.load_scene(SCENES / f"{name}.json"))
        sim.set_formulation(f)
        runs[f] = (sim, sim.run(2.0))
    model = runs["projection"][0].model
    ref = runs["projection"][1]
    for f, (sim, d) in runs.items():
        diff = max(np.linalg.norm(configuration_difference(model, a, b)) for a, b in zip(ref["q"], d["q"]))
        assert diff < 1e-6, f
        assert not any(e.kind == "rank_deficient" for e in sim.events)
        E = d["energy_total"] - d["work_actuators"]
        print(f"{name} {f}: max |Δq| {diff:.2e}, max dev {np.nanmax(d['deviation']):.2e}, energy drift "
              f"{np.abs(E - E[0]).max():.2e} J, {1e3 * sim.wall_time / sim.steps_taken:.2f} ms/step")
