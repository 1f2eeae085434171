"""Self-check of the NumPy test oracle (``tests/oracle``), the independent re-derivation of the constrained
dynamics and the step that the compiled pipeline is checked against.

Two kinds of tests:

1. **Against today's Python assembly path** (``core.Simulation(model, compiled=False)``: ``core.dynamics``,
   ``core.formulations``, ``core.solver``, ``core.integrators``): on every scene of ``scenes/``, the oracle's
   ``evaluate`` equals the Python path's ``data`` / ``evaluate`` / ``controller_diagnostics`` field by field, and a
   0.2 s run equals ``run(0.2)`` (states, energy books, forces, deviations, ranks, events); also Cash–Karp with
   real step-size control and semi-implicit Euler on controlled scenes, the three formulations, run-time inputs
   (dragged nail, pull, actuators), a breaking constraint, a moving nail, a velocity constraint, every force
   element and controller type. These tests skip themselves once that path is removed from core
   (:data:`PYTHON_PATH`), so the file keeps passing after the restructuring.

   Tolerances: 1e-10 of each quantity's scale (its largest magnitude, or a floor in its unit for quantities at
   round-off level, as in tests/test_compiled_step.py) for evaluations, 1e-9 for runs (measured: ≲ 1.5e-12
   everywhere). Scenes with joint-space constraints are compared to 1e-6 instead: today's core differentiates Φ
   by fourth-order finite differences (J within ~1e-12, γ within ~2e-10 ‖q̇‖², core/joint_constraints.py) while
   the oracle's derivatives are exact (SymPy), so multipliers differ at ~3e-9 relative and the rates of
   deviations at ~1e-9. Cash–Karp runs with real step-size control are compared to 1e-7: the error estimate is
   a difference of the fourth- and fifth-order solutions (~1e-8 of q), so a round-off difference of 1e-16 in q̈
   (the oracle solves M q̈ = τ − b by Cholesky where core uses the articulated-body algorithm) changes the error
   ratio by ~1e-8 and the next step size h ∝ err^(−1/5) by ~2e-9; measured: t within 1.5e-10, q, q̇ within 1e-9.

2. **Physics self-checks of the oracle alone**, which survive the change of core: the constraint equation holds
   at full rank (J q̈ + γ + stab = 0) and the equation of motion closes (M q̈ + b − τ − Jᵀλ ~ 1e-12), the three
   formulations agree where they must, energy is conserved on conservative scenes and the energy audit closes,
   SymPy's exact joint-space derivatives match finite differences and the equivalent point constraint, the
   projection's Newton–Raphson correction lands on the constraint manifold, and ``step`` repeated equals ``run``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import core
from core.scene import compile_scene, parse_spec

import oracle
from oracle.rows import JOINT_SPACE, constraint_rows, joint_space_functions

SCENES_DIR = Path(__file__).resolve().parents[1] / "scenes"
ALL_SCENES = sorted(SCENES_DIR.glob("*.json"))


def _python_path_available() -> bool:
    """Whether today's Python assembly path still exists in core (removed by the compiled pipeline)."""
    try:
        import inspect

        import core.dynamics  # noqa: F401
        params = inspect.signature(core.Simulation.__init__).parameters
    except Exception:                                       # noqa: BLE001 - gone or half-restructured
        return False
    return "compiled" in params and hasattr(core.Simulation, "controller_diagnostics")


PYTHON_PATH = _python_path_available()
needs_python_path = pytest.mark.skipif(not PYTHON_PATH, reason="today's Python assembly path (core.dynamics, "
                                       "Simulation(compiled=False)) is gone: the oracle now stands on its own")

RTOL_EVAL = 1e-10
RTOL_RUN = 1e-9
RTOL_JOINT_SPACE = 1e-6           # finite-difference derivatives in today's core (module docstring)
RTOL_ADAPTIVE = 1e-7              # Cash–Karp step sizes amplify round-off (module docstring)
INTEGER_FIELDS = ("rank", "dropped", "jacobian_rank", "rank_deficient", "active", "projection_iterations")
FLOORS = {"q": 1.0, "qd": 1.0, "qdd": 1.0, "tau_applied": 1.0, "constraint_force": 1.0,
          "constraint_force_magnitude": 1.0, "deviation": 1e-2, "deviation_rate": 1e-2, "residual": 1.0,
          "singular_values": 1.0, "singular_value_cutoff": 1.0}
DATA_FIELDS = ("qdd", "tau_applied", "constraint_force", "constraint_force_magnitude", "deviation",
               "deviation_rate", "residual", "singular_values", "singular_value_cutoff")
ENERGY_FIELDS = ("power_constraints", "power_sources", "energy_kinetic", "energy_gravity", "energy_elastic")


def scene_doc(name: str) -> dict:
    return json.loads((SCENES_DIR / name).read_text())


def build(doc: dict) -> core.Model:
    return compile_scene(parse_spec(doc))


def has_joint_space(model) -> bool:
    return any(c.kind == JOINT_SPACE for c in model.constraints)


def assert_close(name: str, a, b, rtol: float, floor: float = 1.0) -> None:
    """|a − b| ≤ rtol · max(max|b|, floor), NaNs in the same places."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{name}: shapes {a.shape} != {b.shape}"
    nan = np.isnan(b)
    assert np.array_equal(np.isnan(a), nan), f"{name}: NaN in different places"
    if not a.size or nan.all():
        return
    scale = max(float(np.abs(b[~nan]).max()), floor)
    err = float(np.abs(a[~nan] - b[~nan]).max())
    assert err <= rtol * scale, f"{name}: max |oracle − core| = {err:.3g} > {rtol:g} × {scale:.3g}"


def energy_scale_of(d) -> float:
    return max(1.0, abs(d.energy_kinetic) + abs(d.energy_gravity) + abs(d.energy_elastic))


def assert_data_agree(o: dict, d, rtol: float, energy: float) -> None:
    """The oracle's evaluation ``o`` against a ``core.dynamics.Data`` ``d`` at the same state."""
    for key in ("rank", "dropped", "jacobian_rank", "rank_deficient"):
        assert o[key] == getattr(d, key), (key, o[key], getattr(d, key))
    for key in DATA_FIELDS:
        assert_close(key, o[key], getattr(d, key), rtol, FLOORS[key])
    for key in ENERGY_FIELDS:
        if np.isnan(getattr(d, key)).all():                 # an integrator stage's Data has no energies
            continue
        assert_close(key, o[key], getattr(d, key), rtol, energy)
    if d.tau_control is None:
        assert not np.any(o["tau_control"])
    else:
        assert_close("tau_control", o["tau_control"], d.tau_control, rtol)
    rate = np.zeros(0) if d.controller_rate is None else d.controller_rate
    assert_close("controller_rate", o["controller_rate"], rate, rtol)


def assert_diagnostics_agree(o: dict, ref: dict, rtol: float) -> None:
    """The oracle's ``controllers`` diagnostics against ``Simulation.controller_diagnostics()``."""
    keys = {f"{key}_{name}" for name, values in o.items() for key in values}
    assert keys == set(ref), (sorted(keys), sorted(ref))
    for name, values in o.items():
        for key, value in values.items():
            assert_close(f"{key}_{name}", value, ref[f"{key}_{name}"], rtol)


def assert_records_agree(o: dict, ref: dict, rtol: float, t_atol: float = 1e-14) -> None:
    """A run's records: every column core records, integers exactly, times to ``t_atol``, the rest to rtol of
    its scale."""
    missing = set(ref) - set(o)
    assert not missing, f"the oracle's run lacks {sorted(missing)}"
    energy = max(1.0, *(float(np.abs(ref[k]).max()) for k in ("energy_kinetic", "energy_potential",
                                                                "energy_total")))
    for key in ref:
        if key in INTEGER_FIELDS:
            np.testing.assert_array_equal(o[key], ref[key], err_msg=key)
        elif key == "t":
            np.testing.assert_allclose(o[key], ref[key], rtol=0, atol=t_atol, err_msg=key)
        elif key.startswith(("energy", "work")):
            assert_close(key, o[key], ref[key], rtol, energy)
        else:
            assert_close(key, o[key], ref[key], rtol, FLOORS.get(key, 1.0))


def assert_events_agree(a: list, b: list) -> None:
    assert len(a) == len(b), (a, b)
    for ea, eb in zip(a, b):
        assert ea.keys() == eb.keys()
        for key, value in eb.items():
            if isinstance(value, float):
                assert ea[key] == pytest.approx(value, rel=1e-9, abs=1e-14), (key, ea, eb)
            else:
                assert ea[key] == value, (key, ea, eb)


def reference(model, **kw):
    """Today's Python assembly path."""
    return core.Simulation(model, compiled=False, **kw)


def perturbed_state(model, seed: int = 0):
    """A state off the initial one: q ⊕ 0.05 v, q̇ + 0.3 v′, t = 0.137 s, controller state nudged."""
    rng = np.random.default_rng(seed)
    q = core.normalize_configuration(model, core.integrate_configuration(model, np.array(model.q0, float),
                                                                         rng.standard_normal(model.nv), 0.05))
    qd = np.array(model.qd0, float) + 0.3 * rng.standard_normal(model.nv)
    z = oracle.initial_state(model)["z"]
    z = z + 0.01 * rng.standard_normal(z.size)
    return 0.137, q, qd, z


# ---- 1. against today's Python assembly path ----------------------------------------------------------------

@needs_python_path
@pytest.mark.parametrize("path", ALL_SCENES, ids=[p.stem for p in ALL_SCENES])
def test_evaluate_at_the_initial_state_equals_the_python_path(path):
    model = core.load_scene(path)
    sim = reference(model)
    d = sim.data
    o = oracle.evaluate(model, sim.state.t, sim.state.q, sim.state.qd, z=sim.state.z)
    rtol = RTOL_JOINT_SPACE if has_joint_space(model) else RTOL_EVAL
    assert_data_agree(o, d, rtol, energy_scale_of(d))
    if model.constraints:
        assert o["singular_values"].shape == (sum(c.rows for c in model.constraints),)
    assert_diagnostics_agree(o["controllers"], sim.controller_diagnostics() if sim.controllers else {}, rtol)
    np.testing.assert_array_equal(oracle.initial_state(model)["z"], sim.state.z)


@needs_python_path
@pytest.mark.parametrize("path", ALL_SCENES, ids=[p.stem for p in ALL_SCENES])
def test_evaluate_off_the_initial_state_equals_the_python_path(path):
    model = core.load_scene(path)
    sim = reference(model)
    t, q, qd, z = perturbed_state(model)
    d = sim.evaluate(t, q, qd, z=z)
    o = oracle.evaluate(model, t, q, qd, z=z)
    rtol = RTOL_JOINT_SPACE if has_joint_space(model) else RTOL_EVAL
    assert_data_agree(o, d, rtol, energy_scale_of(d))


@needs_python_path
@pytest.mark.parametrize("path", ALL_SCENES, ids=[p.stem for p in ALL_SCENES])
def test_run_equals_the_python_path(path):
    model = core.load_scene(path)
    sim = reference(model)
    ref = sim.run(0.2)
    o = oracle.run(model, 0.2)
    rtol = RTOL_JOINT_SPACE if has_joint_space(model) else RTOL_RUN
    assert o["steps"] == sim.steps_taken == 200
    assert_records_agree(o, ref, rtol)
    assert_events_agree(o["events"], sim.events)
    np.testing.assert_array_equal(o["state"]["active"], sim.active)
    assert_close("z", o["state"]["z"], sim.state.z, rtol)
    assert_close("work", o["state"]["work"], sim.work, rtol, max(1.0, float(np.abs(ref["energy_total"]).max())))


@needs_python_path
@pytest.mark.parametrize("scene,integrator,dt", [
    ("uno_kawato_arm.json", "cash_karp", 0.02),            # real step-size control: h changes from step to step
    ("slotine_li_arm.json", "cash_karp", 0.02),
    ("three_link_passive_pidc.json", "cash_karp", 0.01),
    ("uno_kawato_arm.json", "semi_implicit_euler", None),
    ("arm_on_line_pidc.json", "semi_implicit_euler", None),
])
def test_other_integrators_on_controlled_scenes_equal_the_python_path(scene, integrator, dt):
    model = core.load_scene(SCENES_DIR / scene)
    sim = reference(model, integrator=integrator, dt=dt)
    ref = sim.run(0.2)
    o = oracle.run(model, 0.2, dt=dt, integrator=integrator)
    assert o["steps"] == sim.steps_taken
    if integrator == "cash_karp":
        assert_records_agree(o, ref, RTOL_ADAPTIVE, t_atol=RTOL_ADAPTIVE * 0.2)
        assert np.unique(np.round(np.diff(o["t"]), 12)).size > 1        # the step size did adapt
        assert o["state"]["h"] == pytest.approx(sim._h, rel=RTOL_ADAPTIVE)
    else:
        assert_records_agree(o, ref, RTOL_RUN)


@needs_python_path
@pytest.mark.parametrize("formulation", ["dynamic_constraints", "projection", "multipliers"])
@pytest.mark.parametrize("scene", ["three_link_arm_nailed.json", "four_bar.json", "door_three_hinges.json",
                                   "slider_crank.json", "mcclamroch_two_arms.json", "arm_nail_singular.json",
                                   "slider_crank_joint_space.json"])
def test_every_formulation_equals_the_python_path(scene, formulation):
    model = core.load_scene(SCENES_DIR / scene)
    sim = reference(model)
    sim.set_formulation(formulation)
    rtol = RTOL_JOINT_SPACE if has_joint_space(model) else RTOL_RUN
    try:
        ref = sim.run(0.1)
    except core.DivergenceError:                            # multipliers through arm_nail_singular's singular start
        with pytest.raises(oracle.DivergenceError):
            oracle.run(model, 0.1, formulation=formulation)
        return
    o = oracle.run(model, 0.1, formulation=formulation)
    assert_records_agree(o, ref, rtol)
    assert_events_agree(o["events"], sim.events)


def _variant_models() -> dict:
    """Scenes edited to exercise what the shipped ones do not: a breaking nail, a moving nail, a velocity
    constraint, every force element, the damped-least-squares solver, PD / computed-torque / recursive-mixture
    controllers with torque limits."""
    out = {}
    doc = scene_doc("three_link_arm_nailed.json")
    doc["constraints"][0].update(max_force=1.0, max_deviation=1e-3)          # cannot hold the arm: breaks
    out["breaking_nail"] = doc
    doc = scene_doc("nail_cylinder_gravity.json")
    doc["constraints"][0]["path"] = {"velocity": [0.05, 0.0, 0.0], "amplitude": [0.0, 0.1, 0.02],
                                     "frequency": 2.0, "phase": 0.3}
    out["moving_nail"] = doc
    doc = scene_doc("three_link_arm.json")
    doc["bodies"][2]["points"] = {"tip": [1.0, 0.0, 0.0]}
    doc["constraints"] = [{"type": "point_velocity", "name": "tip_velocity", "body": "link3", "point": "tip",
                           "velocity": [0.1, -0.2, 0.0], "stabilization": 20.0}]
    doc["forces"] = [
        {"type": "spring", "name": "s1", "body_a": "link3", "point_a": [0.5, 0, 0], "body_b": "link1",
         "point_b": [0.2, 0.1, 0], "stiffness": 40.0, "damping": 0.7, "rest_length": 0.3},
        {"type": "spring", "name": "s0", "body_a": "link2", "point_a": [0.5, 0, 0], "body_b": "world",
         "point_b": [1.0, 1.0, 0.0], "stiffness": 10.0, "damping": 0.2},
        {"type": "joint_spring", "name": "js", "joint": "elbow", "stiffness": 5.0, "damping": 0.3, "rest": 0.1},
        {"type": "drag", "name": "dr", "body": "link2", "point": [0.7, 0, 0], "linear": 0.4, "quadratic": 0.2},
        {"type": "actuator", "name": "act", "joint": "wrist", "torque": 9.0, "limit": 2.0},
        {"type": "point_force", "name": "pf", "body": "link1", "point": [0.5, 0, 0], "force": [0, 3.0, 1.0],
         "start": 0.05, "stop": 0.15}]
    out["velocity_constraint_and_forces"] = doc
    doc = scene_doc("arm_nail_singular.json")
    doc["simulation"]["solver"] = {"method": "damped_least_squares", "rho": 1e-2}
    out["damped_least_squares"] = doc
    doc = scene_doc("three_link_arm.json")
    doc["controllers"] = [
        {"type": "pd", "name": "pd", "joints": ["shoulder", "wrist"], "kp": [20.0, 5.0], "kd": 2.0,
         "torque_limit": [3.0, 1.0],
         "trajectory": {"type": "point_to_point", "points": [[0.0, 0.0], [0.5, -0.3], [0.2, 0.4]],
                        "durations": [0.1, 0.15], "rate": [40.0, 60.0]}},
        {"type": "computed_torque", "name": "ct", "kp": [100.0, 50.0, 80.0], "kd": 20.0, "model_gravity": False,
         "trajectory": {"type": "set_point", "q": [0.3, -0.2, 0.1]}}]
    out["pd_and_computed_torque"] = doc
    doc = scene_doc("uno_kawato_arm.json")
    doc["controllers"][0].update(rule="recursive", experts=2, sigma=0.7)
    doc["controllers"][0]["trajectory"]["time_scale"] = 1.5
    out["recursive_mixture"] = doc
    doc = scene_doc("slotine_li_arm_viscous.json")
    doc["controllers"][0].update(model_gravity=True, initial_parameters="model")
    out["slotine_li_model_parameters"] = doc
    return out


VARIANTS = _variant_models()


@needs_python_path
@pytest.mark.parametrize("name", VARIANTS)
def test_scene_variants_equal_the_python_path(name):
    model = build(VARIANTS[name])
    sim = reference(model)
    d = sim.data
    o = oracle.evaluate(model, 0.0, sim.state.q, sim.state.qd, z=sim.state.z)
    assert_data_agree(o, d, RTOL_EVAL, energy_scale_of(d))
    assert_diagnostics_agree(o["controllers"], sim.controller_diagnostics() if sim.controllers else {}, RTOL_EVAL)
    ref = sim.run(0.2)
    run = oracle.run(model, 0.2)
    assert_records_agree(run, ref, RTOL_RUN)
    assert_events_agree(run["events"], sim.events)
    if name == "breaking_nail":
        assert "break" in [e["type"] for e in run["events"]]


@needs_python_path
def test_run_time_inputs_equal_the_python_path():
    """A dragged nail and the mouse pull; actuator commands (one beyond its limit)."""
    model = core.load_scene(SCENES_DIR / "three_link_arm_nailed.json")
    name = model.constraints[0].name
    sim = reference(model)
    sim.move_nail(name, [0.1, 0.2, 0.0], [0.3, 0.0, 0.1])
    sim.set_pull(1, [0.1, 0.0, 0.0], [0.5, 0.5, 0.0], 30.0, 2.0)
    ref = sim.run(0.1)
    o = oracle.run(model, 0.1, nails={name: (0.0, np.array([0.1, 0.2, 0.0]), np.array([0.3, 0.0, 0.1]))},
                   pull=(1, [0.1, 0.0, 0.0], [0.5, 0.5, 0.0], 30.0, 2.0))
    assert_records_agree(o, ref, RTOL_RUN)
    assert_events_agree(o["events"], sim.events)

    model = core.load_scene(SCENES_DIR / "mcclamroch_two_arms.json")
    acts = [f.name for f in model.forces]
    sim = reference(model)
    sim.set_actuator(acts[0], 3.0)
    sim.set_actuator(acts[1], -500.0)
    ref = sim.run(0.1)
    o = oracle.run(model, 0.1, actuators={acts[0]: 3.0, acts[1]: -500.0})
    assert_records_agree(o, ref, RTOL_RUN)


# ---- 2. physics self-checks of the oracle alone ---------------------------------------------------------------

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
    model = build(VARIANTS["velocity_constraint_and_forces"])
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
    model = build(VARIANTS["breaking_nail"])
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
                 "core.control.controllers", "core.control.projected", "core.control.trajectories", "core.aba",
                 "core.forward", "core.layout", "core.linalg")
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
                                         "solver", "integrators"), f"{path.name}:{node.lineno} uses core.{node.attr}"
