"""Physics self-checks of the NumPy test oracle (``tests/oracle``), the independent re-derivation of the
constrained dynamics and the step that the compiled pipeline is held to (tests/test_pipeline.py).

The oracle must be right on its own, so it is checked against physics, never against the code it checks: the
constraint equation holds at full rank (J q̈ + γ + stab = 0) and the equation of motion closes
(M q̈ + b − τ − Jᵀλ ~ 1e-12), the three formulations agree where they must, energy is conserved on conservative
scenes and the energy audit closes, SymPy's exact joint-space derivatives match finite differences and the
equivalent point constraint, the projection's Newton–Raphson correction lands on the constraint manifold,
``step`` repeated equals ``run``, a weak nail breaks, divergence is reported; and it imports none of the code it
stands in for.

(Until the restructuring the oracle was also compared with core's former Python assembly path,
``Simulation(compiled=False)``, to ≤ 1.5e-12; that path is gone, and the comparison with the compiled pipeline
that replaced it lives in tests/test_pipeline.py.)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core

import oracle
from oracle.rows import constraint_rows, joint_space_functions
from variants import SCENES_DIR, build, scene_doc, variant


# ---- helpers ---------------------------------------------------------------------------------------------------

def _consistent_state(model, seed=1):
    """q0 with a random velocity projected onto the constraints' null space (D ≈ 0, Ḋ = 0)."""
    rng = np.random.default_rng(seed)
    q = np.array(model.q0, float)
    active = np.array([c.enabled for c in model.constraints], bool)
    J = constraint_rows(model, 0.0, q, np.zeros(model.nv), active).J
    qd = rng.standard_normal(model.nv)
    qd = qd - np.linalg.pinv(J) @ (J @ qd)
    return q, qd, active


def _multipliers_from_forces(model, o) -> np.ndarray:
    """λ (m,) of the active rows from the constraint forces E λ (E has orthonormal columns)."""
    return np.concatenate([np.asarray(c.basis).T @ o["constraint_force"][i]
                           for i, c in enumerate(model.constraints) if c.enabled])


@pytest.mark.parametrize("scene", ["nail_cylinder_gravity.json", "spherical_pendulum.json", "chain20_nailed.json"])
def test_nailed_pendulum_satisfies_the_constraint_and_the_equation_of_motion(scene):
    """At full rank: J q̈ + γ + 2κḊ + κ²D = 0 (eq. 2.21, 2.39) and M q̈ + b = τ + Jᵀλ."""
    model = core.load_scene(SCENES_DIR / scene)
    rng = np.random.default_rng(3)
    q = np.array(model.q0, float)
    qd = np.array(model.qd0, float) + 0.5 * rng.standard_normal(model.nv)
    t = 0.05
    o = oracle.evaluate(model, t, q, qd, formulation="dynamic_constraints")
    rows = constraint_rows(model, t, q, qd, np.ones(len(model.constraints), bool))
    assert not o["rank_deficient"] and o["jacobian_rank"] == rows.J.shape[0]
    lhs = rows.J @ o["qdd"]
    scale = max(1.0, np.abs(lhs).max(), np.abs(rows.gamma).max(), np.abs(rows.stab).max())
    assert np.abs(lhs + rows.gamma + rows.stab).max() <= 1e-11 * scale
    assert np.nanmax(o["residual"]) <= 1e-11 * scale
    lam = _multipliers_from_forces(model, o)
    M, b = core.mass_matrix(model, q), core.nonlinear_effects(model, q, qd)
    eom = M @ o["qdd"] + b - o["tau_applied"] - rows.J.T @ lam
    assert np.abs(eom).max() <= 1e-12 * max(1.0, np.abs(M @ o["qdd"]).max(), np.abs(b).max())


@pytest.mark.parametrize("scene", ["nail_cylinder_on_constraint.json", "spherical_pendulum.json", "chain20_nailed.json",
                                   "mcclamroch_two_arms.json", "mcclamroch_gripped_load.json", "slider_crank.json",
                                   "mcclamroch_surface.json"])
def test_the_three_formulations_agree_on_the_constraint_manifold_at_full_rank(scene):
    """With D = Ḋ = 0 the stabilization vanishes, and projection (Aghili), multipliers (McClamroch) and dynamic
    constraints (Mitchell) must give the same q̈ and the same (unique) constraint forces."""
    model = core.load_scene(SCENES_DIR / scene)
    q, qd, active = _consistent_state(model)
    rows = constraint_rows(model, 0.0, q, qd, active)
    assert np.abs(rows.D).max() < 1e-9 and np.abs(rows.D_rate).max() < 1e-9
    out = {f: oracle.evaluate(model, 0.0, q, qd, formulation=f)
           for f in ("dynamic_constraints", "projection", "multipliers")}
    ref = out["dynamic_constraints"]
    assert not ref["rank_deficient"]
    force_scale = max(1.0, np.abs(ref["constraint_force"]).max())
    for f in ("projection", "multipliers"):
        assert np.abs(out[f]["qdd"] - ref["qdd"]).max() <= 1e-8 * max(1.0, np.abs(ref["qdd"]).max()), f
        assert np.abs(out[f]["constraint_force"] - ref["constraint_force"]).max() <= 1e-8 * force_scale, f


@pytest.mark.parametrize("scene,drift", [("three_link_arm.json", 1e-8), ("spatial_chain_7.json", 1e-7),
                                         ("three_link_arm_nailed.json", 1e-8), ("spherical_pendulum.json", 1e-8),
                                         ("free_tumbling_box.json", 1e-12)])
def test_energy_is_conserved_on_conservative_scenes(scene, drift):
    """No force element does work and the constraints (nearly) none: E(t) stays at E(0) over 0.5 s (RK4, 1 ms)
    and the energy audit E − E(0) − Σ work closes to integration error."""
    model = core.load_scene(SCENES_DIR / scene)
    r = oracle.run(model, 0.5, record_every=25)
    E = r["energy_total"]
    scale = max(1.0, np.abs(r["energy_kinetic"]).max(), np.abs(r["energy_gravity"]).max())
    assert np.abs(E - E[0]).max() <= drift * scale
    assert np.abs(r["energy_error"]).max() <= drift * scale


def test_energy_audit_closes_with_every_source_and_a_working_constraint():
    """Springs, dampers, drag, an actuator, a point force and a velocity constraint that does work: the books
    E − E(0) − Σ work close although E itself changes by joules."""
    model = build(variant("velocity_constraint_and_forces"))
    r = oracle.run(model, 0.3, record_every=10)
    E = r["energy_total"]
    assert np.abs(E - E[0]).max() > 1e-2
    assert np.abs(r["work_dampers"][-1]) > 0 and np.abs(r["work_drag"][-1]) > 0
    assert np.abs(r["work_external"][-1]) > 0 and np.abs(r["work_actuators"][-1]) > 0
    assert np.abs(r["energy_error"]).max() <= 1e-8 * max(1.0, np.abs(E).max())


def test_joint_space_derivatives_are_exact():
    """SymPy's J and γ = q̇ᵀ(∂²Φ/∂q²)q̇ against central differences of the oracle's own Φ, and against the
    equivalent point-on-plane rows of the same slider-crank (l = 1: y_C = sin q1 + sin(q1 + q2))."""
    js = core.load_scene(SCENES_DIR / "slider_crank_joint_space.json")
    plane = core.load_scene(SCENES_DIR / "slider_crank.json")
    c = js.constraints[0]
    gradient, hessian = joint_space_functions(c)
    rng = np.random.default_rng(4)
    for _ in range(5):
        x = rng.uniform(-2.0, 2.0, 2)
        v = rng.standard_normal(2)
        phi = lambda y: np.sin(y[0]) + np.sin(y[0] + y[1])                   # noqa: E731 (the scene's Φ)
        h = 1e-5
        fd = np.array([(phi(x + h * e) - phi(x - h * e)) / (2 * h) for e in np.eye(2)])
        np.testing.assert_allclose(gradient(x), fd, atol=1e-9)
        s = 1e-4
        fd2 = (phi(x + s * v) - 2 * phi(x) + phi(x - s * v)) / (s * s)
        assert v @ hessian(x) @ v == pytest.approx(fd2, abs=1e-6 * (1 + abs(fd2)))
        q, qd = x.copy(), v.copy()
        a = constraint_rows(js, 0.0, q, qd, np.ones(1, bool))
        b = constraint_rows(plane, 0.0, q, qd, np.ones(1, bool))
        np.testing.assert_allclose(a.J, b.J, atol=1e-13)
        np.testing.assert_allclose(a.gamma, b.gamma, atol=1e-12 * (1 + np.abs(b.gamma).max()))
        np.testing.assert_allclose(a.D, b.D, atol=1e-14)
        ea = oracle.evaluate(js, 0.0, q, qd, formulation="projection")
        eb = oracle.evaluate(plane, 0.0, q, qd, formulation="projection")
        np.testing.assert_allclose(ea["qdd"], eb["qdd"], rtol=1e-10, atol=1e-10)


def test_projection_correction_lands_on_the_constraint_manifold():
    """After every projection step ‖Φ‖ is at round-off and Ḋ = 0 (Aghili eq. 39 and the velocity projection);
    the energy the corrections change is booked and small."""
    model = core.load_scene(SCENES_DIR / "slider_crank.json")
    r = oracle.run(model, 0.3, record_every=10)
    assert np.abs(r["deviation"]).max() < 1e-12
    assert np.abs(r["deviation_rate"]).max() < 1e-10
    assert abs(r["work_corrections"][-1]) < 1e-6
    assert np.abs(r["energy_error"]).max() < 1e-8


def test_step_repeated_equals_run_and_leaves_its_input_alone():
    model = core.load_scene(SCENES_DIR / "uno_kawato_arm_viscous.json")
    state = oracle.initial_state(model)
    q0 = state["q"].copy()
    s = state
    for _ in range(20):
        s = oracle.step(model, s)
    np.testing.assert_array_equal(state["q"], q0)
    r = oracle.run(model, 0.02)
    assert s["t"] == pytest.approx(0.02, abs=1e-15)
    np.testing.assert_allclose(s["q"], r["q"][-1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(s["qd"], r["qd"][-1], rtol=0, atol=1e-14)
    np.testing.assert_allclose(s["z"], r["z"][-1], rtol=0, atol=1e-15)
    np.testing.assert_allclose(s["work"], r["work"][-1], rtol=0, atol=1e-15)


def test_a_weak_nail_breaks_and_the_arm_falls_away():
    """Thesis §2.3.4: a constraint beyond its deviation bound breaks (event) and is removed."""
    model = build(variant("breaking_nail"))
    r = oracle.run(model, 0.1, record_every=10)
    kinds = [e["type"] for e in r["events"]]
    assert "break" in kinds
    assert r["active"][-1][0] == 0.0 and r["constraint_force_magnitude"][-1][0] == 0.0
    assert np.isnan(r["residual"][-1][0])


def test_divergence_is_reported_and_the_input_state_kept():
    doc = scene_doc("three_link_arm.json")
    model = build(doc)
    state = oracle.initial_state(model)
    state["qd"] = np.array([np.inf, 0.0, 0.0])
    with pytest.raises(oracle.DivergenceError):
        oracle.step(model, state)
    assert np.isinf(state["qd"][0]) and state["t"] == 0.0


def test_the_oracle_imports_none_of_the_code_it_checks():
    """Independence: the oracle may use core's scene loading, tree algorithms, point kinematics, energies,
    configuration arithmetic and the NumPy regressor, never the assembly, formulations, solver, stepper,
    integrators, force or constraint kernels, simulation internals or controller classes it stands in for."""
    import ast
    forbidden = ("core.dynamics", "core.formulations", "core.integrators", "core.stepper", "core.solver",
                 "core.forces", "core.constraints", "core.joint_constraints", "core.simulation", "core.control.base",
                 "core.control.controllers", "core.control.projected", "core.control.trajectories",
                 "core.control.kernels", "core.aba", "core.forward", "core.layout", "core.linalg", "core.step",
                 "core.records", "core.data")
    for path in sorted((Path(__file__).parent / "oracle").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                assert not name.startswith(forbidden), f"{path.name}:{node.lineno} imports {name}"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "core":
                assert node.attr not in ("Simulation", "forward_dynamics", "dynamics", "formulations", "stepper",
                                         "solver", "integrators", "step", "evaluate", "advance", "handle_events",
                                         "Inputs", "Data"), f"{path.name}:{node.lineno} uses core.{node.attr}"
