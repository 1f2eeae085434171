"""Controllers as scene entities inside the simulation step (thesis ch. 3), through the compiled pipeline: the
identities that hold exactly — with zero adaptive parameters Slotine–Li and the mixtures apply the PD torque, and
with η = 0 their runs are the PD run; the mixture's gates are a partition of unity (eq. 3.13–3.14); the Lyapunov
function of Slotine–Li is non-increasing; computed torque gives the designed linear error dynamics; the recursive
rule's P(t) stays symmetric and shrinks; controller power closes the energy books; the trajectories' derivatives
are analytic; bad controller entries are reported with their JSON paths."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import core
from core.control import grid_centres
from core.model import State
from core.control.trajectories import PointToPoint, SetPoint, Sinusoid, bandwidth, region, sanner_slotine
from core.scene import SceneError, compile_scene, parse_spec

SCENES = Path(__file__).resolve().parent.parent / "scenes"
SS = {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75], "omega": [0.75 * math.pi, 2 * math.pi]}


def arm_with(controller: dict, arm: str = "slotine_li_arm", gravity=(0.0, 0.0, 0.0), **joint_q0) -> core.Model:
    doc = json.loads((SCENES / f"{arm}.json").read_text())
    doc["gravity"] = list(gravity)
    doc["controllers"] = [controller]
    for body in doc["bodies"]:
        if body["joint"]["name"] in joint_q0:
            body["joint"]["q0"] = joint_q0[body["joint"]["name"]]
    return compile_scene(parse_spec(doc))


def ctrl(kind: str, **kw) -> dict:
    return {"type": kind, "name": "c", "trajectory": SS, **kw}


# ------------------------------------------------------------------------------------------------ trajectories
@pytest.mark.parametrize("traj", [
    sanner_slotine(1.0), bandwidth(0.7), SetPoint([0.3, -0.2], time_scale=2.0),
    Sinusoid(alpha=[0.1, -0.4, 1.0], beta=[0.5, 0.2, 0.3], omega=[1.0, 2.0, 3.0], one_minus_cos=[False, True, True],
             time_scale=1.3),
    PointToPoint(points=[[0.0, 0.75], [1.33, -0.75], [2.66, 0.75]], durations=[1.0, 1.5], rate=[12.0, 8.0],
                 time_scale=0.8)])
def test_trajectory_derivatives_are_analytic(traj):
    """q̇_d and q̈_d agree with central differences of q_d and q̇_d (time scale k included)."""
    h = 1e-5
    for t in np.linspace(0.0, 3.0, 13):
        q0, v0, a0 = traj.evaluate(t)
        qp, vp, _ = traj.evaluate(t + h)
        qm, vm, _ = traj.evaluate(t - h)
        assert np.allclose((qp - qm) / (2 * h), v0, atol=1e-6 * max(1.0, np.abs(v0).max()))
        assert np.allclose((vp - vm) / (2 * h), a0, atol=1e-5 * max(1.0, np.abs(a0).max()))


def test_thesis_trajectories():
    """Sanner–Slotine (eq. 3.38–3.39): q_d(0) = (0, 0.75), q̇_d(0) = 0, region [0, 2.66] x [−0.75, 0.75]; the
    bandwidth family at k: (1.33 (1 − cos 2πkt), 0.75 cos 2πkt); sigmoid segments have a bell-shaped speed
    peaking at λ/4 of the step mid-slot (eq. 3.42)."""
    q, v, _ = sanner_slotine().evaluate(0.0)
    assert np.allclose(q, [0.0, 0.75]) and np.allclose(v, 0.0)
    low, high = region(sanner_slotine())
    assert np.allclose(low, [0.0, -0.75]) and np.allclose(high, [2.66, 0.75])
    t, k = 0.37, 0.6
    assert np.allclose(bandwidth(k).evaluate(t)[0],
                       [1.33 * (1 - math.cos(2 * math.pi * k * t)), 0.75 * math.cos(2 * math.pi * k * t)])
    p2p = PointToPoint(points=[[0.0], [2.0]], durations=[2.0], rate=[10.0])
    ts = np.linspace(0, 2, 401)
    speed = np.array([p2p.evaluate(t)[1][0] for t in ts])
    assert ts[np.argmax(speed)] == pytest.approx(1.0, abs=0.01)
    assert speed.max() == pytest.approx(10.0 / 4 * 2.0, rel=1e-6)
    assert p2p.evaluate(2.0)[0][0] == pytest.approx(2.0, abs=2.0 * math.exp(-10.0))


def test_grid_centres():
    """The documented grids over the Sanner–Slotine region."""
    low, high = region(sanner_slotine())
    assert np.allclose(grid_centres(low, high, 1), [[1.33, 0.0]])
    assert np.allclose(grid_centres(low, high, 2), [[0.665, 0.0], [1.995, 0.0]])
    assert np.allclose(grid_centres(low, high, 4), [[0.665, -0.375], [0.665, 0.375], [1.995, -0.375], [1.995, 0.375]])
    c8 = grid_centres(low, high, 8)
    assert c8.shape == (8, 2) and len(np.unique(c8[:, 0])) == 4 and len(np.unique(c8[:, 1])) == 2


def mixture_torque(centres, sigma, W, t, q, qd) -> np.ndarray:
    """The torque of a gradient mixture with gate ``centres`` and width σ whose weights W = [W_1 … W_N] (n x 2nN)
    are set in its state, at (t, q, q̇), from the compiled pipeline."""
    model = arm_with(ctrl("mixture", experts=len(centres), centres=np.asarray(centres).tolist(), sigma=sigma,
                          kp=9.0, kd=1.0), "uno_kawato_arm")
    z = np.asarray(W, float).ravel()
    assert z.size == model.controllers[0].n_state
    return core.evaluate(model, State(t, np.asarray(q, float), np.asarray(qd, float), z)).controllers["c"]["torque"]


def test_mixture_gates_are_a_partition_of_unity():
    """Normalized Gaussian gates sum to one (eq. 3.13–3.14): N experts with the same weights W_i = B act as one
    expert with B, whatever the centres, the width and the state; and with a narrow gate at a centre only that
    expert acts."""
    low, high = region(sanner_slotine())
    c8 = grid_centres(low, high, 8)
    rng = np.random.default_rng(0)
    for _ in range(10):
        t, q, qd = rng.uniform(0, 5), rng.uniform(-5, 5, 2), rng.normal(size=2)
        B = rng.normal(size=(2, 4))
        one = mixture_torque([[0.3, 0.1]], 0.5, B, t, q, qd)
        for sigma in (0.05, 0.5, 3.0):
            np.testing.assert_allclose(mixture_torque(c8, sigma, np.tile(B, 8), t, q, qd), one,
                                       rtol=1e-13, atol=1e-13 * np.abs(one).max())
        W = np.zeros((2, 32))
        W[:, 12:16] = B                                                  # expert 3 only
        np.testing.assert_allclose(mixture_torque(c8, 0.01, W, t, c8[3], qd), mixture_torque([[0.3, 0.1]], 0.5, B,
                                                                                             t, c8[3], qd),
                                   rtol=1e-13, atol=1e-13)


# --------------------------------------------------------------------------------------- exact reductions to PD
@pytest.mark.parametrize("spec", [
    ctrl("slotine_li"), ctrl("mixture", experts=4), ctrl("mixture", experts=2, rule="recursive"),
    ctrl("mixture", experts=8, sigma=0.3)])
def test_zero_parameters_give_exactly_the_pd_torque(spec):
    """τ = −K_d s + Y·0 = −K_p e − K_d ė (eq. 3.7–3.8) at random states and times, to the last bit of PD's own
    arithmetic (λ = K_p/K_d, s = ė + λe)."""
    adaptive = arm_with({**spec, "kp": 9.0, "kd": 1.0})
    pd = arm_with(ctrl("pd", kp=9.0, kd=1.0))
    c = adaptive.controllers[0]
    rng = np.random.default_rng(1)
    for _ in range(10):
        t, q, qd = rng.uniform(0, 40), rng.uniform(-2, 2, 2), rng.normal(size=2)
        z0 = c.initial_state()
        z0[:c.n_parameters] = 0.0                                   # (the recursive rule's P(0) stays)
        tau_a = core.evaluate(adaptive, State(t, q, qd, z0)).tau_control
        tau_p = core.evaluate(pd, State(t, q, qd)).tau_control
        assert np.any(tau_p != 0.0)
        np.testing.assert_allclose(tau_a, tau_p, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("spec", [ctrl("slotine_li", eta=0.0), ctrl("mixture", experts=4, eta=0.0)])
def test_frozen_adaptation_runs_exactly_like_pd(spec):
    """With η = 0 the parameters stay at zero and the closed loop is the PD loop: the same trajectory."""
    a = core.Simulation(arm_with(spec), dt=0.005).run(1.0)
    b = core.Simulation(arm_with(ctrl("pd")), dt=0.005).run(1.0)
    assert np.abs(a["q"] - b["q"]).max() <= 1e-12
    assert np.all(a["parameters_c"] == 0.0)


# ---------------------------------------------------------------------------------------------- Slotine–Li
def lyapunov(sim: core.Simulation, eta: float) -> tuple[float, float]:
    """V = ½ sᵀ M s + ½ ãᵀ (ηΓ)⁻¹ ã (ã = â − a, a the arm's parameters in the controller's parameterization) and
    −sᵀ K_d s at the simulation's state (s and ½ sᵀ M s as the pipeline reports them, checked against M)."""
    diag = sim.data.controllers["c"]
    s = diag["sliding_variable"]
    M = core.mass_matrix(sim.model, sim.state.q)
    assert diag["s_energy"] == pytest.approx(0.5 * s @ M @ s, rel=1e-12, abs=1e-300)
    c = sim.controller("c")
    assert np.allclose(c.gain, eta * c.gamma)
    a_tilde = sim.controller_state("c") - c.true_parameters()
    return diag["s_energy"] + 0.5 * a_tilde @ np.linalg.solve(c.gain, a_tilde), -s @ (c.kd * s)


def book_parameters(arm: str) -> dict:
    """Slotine & Li's a1…a4 (a5…a7) of the arm scene (the Uno arm: the same expressions with its bodies and l1)."""
    doc = json.loads((SCENES / "slotine_li_arm.json").read_text())
    p = json.dumps(doc["controllers"][0]["parameters"])
    if arm.startswith("uno_kawato"):
        p = p.replace("upper", "upper_arm").replace("effector", "forearm").replace("1.0", "0.3")
    return json.loads(p)


@pytest.mark.parametrize("parameters", ["book", "base", "standard"])
@pytest.mark.parametrize("arm,gravity,model_gravity", [("slotine_li_arm", False, False),
                                                       ("uno_kawato_arm", True, True)])
def test_slotine_li_lyapunov_function_is_non_increasing(arm, gravity, model_gravity, parameters):
    """V = ½ sᵀ M s + ½ ãᵀ(ηΓ)⁻¹ã has V̇ = −sᵀ K_d s ≤ 0 when Y models every force (eq. 3.9 with τ_c = Y_p â, and
    Slotine & Li's proof): along an RK4 run V never rises by more than the integration error, and its decrease
    matches ∫ sᵀ K_d s. For the book's a1…a4 (a5…a7 with gravity modelled) with Γ = η·1, the arm's base
    parameters and the ten standard ones per link."""
    eta = 0.05
    p = book_parameters(arm) if parameters == "book" else parameters
    model = arm_with(ctrl("slotine_li", eta=eta, model_gravity=model_gravity, parameters=p), arm,
                     gravity=(0.0, -9.81, 0.0) if gravity else (0.0, 0.0, 0.0))
    assert model.controllers[0].n_parameters == {"book": 7 if model_gravity else 4, "base": 6 if gravity else 4,
                                                 "standard": 20}[parameters]
    sim = core.Simulation(model, dt=0.002, integrator="rk4")
    V, rate = lyapunov(sim, eta)
    V0 = V
    dissipated = 0.0
    worst = 0.0
    for _ in range(1500):                                     # 3 s
        sim.step()
        V_new, rate_new = lyapunov(sim, eta)
        worst = max(worst, V_new - V)
        dissipated += 0.5 * (rate + rate_new) * sim.dt         # ∫ −sᵀ K_d s, trapezoid
        V, rate = V_new, rate_new
    assert worst <= 1e-7 * V0                                  # never increases beyond integration error
    assert V < V0 - 1e-3 * V0                                  # and it does decrease (the test is not vacuous)
    assert V - V0 == pytest.approx(dissipated, rel=1e-4)       # V(t) − V(0) = −∫ sᵀ K_d s


def test_slotine_li_with_true_parameters_tracks_perfectly():
    """â = θ (``initial_parameters: model``) and q(0) = q_d(0): Y θ = τ_r cancels the dynamics, so the tracking
    error is RK4's truncation error alone (it falls ~16x when the step is halved)."""
    model = arm_with(ctrl("slotine_li", initial_parameters="model", eta=0.0))
    errors = [np.abs(core.Simulation(model, dt=dt).run(2.0)["tracking_error_c"]).max() for dt in (0.005, 0.0025)]
    assert errors[0] < 1e-7
    assert errors[1] < errors[0] / 10


def test_computed_torque_gives_the_designed_error_dynamics():
    """τ = M(q̈_d − K_d ė − K_p e) + b makes ë + K_d ė + K_p e = 0 (Todorov's feedback linearization), here with
    gravity and a 0.2 rad initial error: critically damped, e(t) = e0 (1 + ωt) e^{−ωt}, ω = 10/s."""
    model = arm_with(ctrl("computed_torque", kp=100.0, kd=20.0), "uno_kawato_arm", gravity=(0.0, -9.81, 0.0),
                     shoulder=0.2, elbow=0.75)
    d = core.Simulation(model, dt=0.001).run(1.0, record_every=50)
    t, e = d["t"], d["tracking_error_c"]
    expected = 0.2 * (1 + 10 * t) * np.exp(-10 * t)
    assert np.abs(e[:, 0] - expected).max() < 1e-7
    assert np.abs(e[:, 1]).max() < 1e-7


def test_recursive_rule_keeps_p_symmetric_and_shrinking():
    """P(0) = η 1 and Ṗ = −P Φ Φᵀ P (eq. 3.28): P stays symmetric positive definite and P(t) ≼ P(0)."""
    model = arm_with(ctrl("mixture", experts=2, rule="recursive", eta=0.01), "uno_kawato_arm")
    sim = core.Simulation(model, dt=0.005)
    sim.run(2.0)
    c = sim.controllers[0]
    z = sim.controller_state("c")
    P = z[c.n * c.n_features:].reshape(c.n_features, c.n_features)
    assert np.abs(P - P.T).max() < 1e-12
    eig = np.linalg.eigvalsh(P)
    assert eig.min() > 0 and eig.max() <= 0.01 * (1 + 1e-9)
    assert eig.min() < 0.5 * 0.01                              # excited directions have shrunk


def test_controller_power_closes_the_energy_books():
    """The controllers' τ·q̇ is booked with the actuators, so E(t) − E(0) − Σ work is integration error only."""
    model = arm_with(ctrl("slotine_li", eta=0.05), gravity=(0.0, -9.81, 0.0))
    d = core.Simulation(model, dt=0.001).run(2.0)
    assert np.abs(d["work_actuators"]).max() > 1.0
    assert np.abs(d["energy_error"]).max() < 1e-8 * np.abs(d["work_actuators"]).max()


def test_parameters_editable_while_running_and_reset():
    """set_controller_parameter applies at the next step and keeps the adaptive state; reset restores the scene."""
    model = arm_with(ctrl("slotine_li", eta=0.01))
    sim = core.Simulation(model, dt=0.005)
    sim.run(0.5)
    before = sim.controller_state("c").copy()
    sim.set_controller_parameter("c", "kd", 4.0)
    sim.set_controller_parameter("c", "eta", 0.0)
    assert np.allclose(sim.controller("c").kd, 4.0) and np.allclose(sim.controller_state("c"), before)
    sim.run(0.2)
    assert np.array_equal(sim.controller_state("c"), before)  # η = 0 froze the parameters
    with pytest.raises(KeyError):
        sim.set_controller_parameter("c", "sigma", 1.0)         # Slotine–Li has no gates
    with pytest.raises(ValueError):
        sim.set_controller_parameter("c", "kp", [1.0, 2.0, 3.0])
    assert np.allclose(model.controllers[0].kd, 1.0)           # the model's controller is untouched
    sim.reset()
    assert np.allclose(sim.controller("c").kd, 1.0) and not sim.state.z.any()


def test_adaptive_state_is_error_controlled_by_cash_karp():
    """The adaptive integrator's result agrees with a fine RK4 run, parameters included."""
    model = arm_with(ctrl("mixture", experts=4, eta=0.05), "uno_kawato_arm")
    a = core.Simulation(model, dt=0.01, integrator="cash_karp", tolerance=1e-9)
    a.run(1.0)
    b = core.Simulation(model, dt=0.0005, integrator="rk4")
    b.run(1.0)
    assert np.allclose(a.state.q, b.state.q, atol=1e-7)
    assert np.allclose(a.state.z, b.state.z, atol=1e-7 * max(1.0, np.abs(b.state.z).max()))


def test_torque_limit_clips_the_actuators():
    model = arm_with(ctrl("pd", kp=9.0, kd=1.0, torque_limit=0.5), shoulder=1.0)
    sim = core.Simulation(model)
    d = sim.run(0.2)
    assert np.abs(d["torque_c"]).max() == pytest.approx(0.5)


# -------------------------------------------------------------------------------------------- scene validation
def _problems(doc) -> list[str]:
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    return [str(p) for p in info.value.problems]


def test_bad_controllers_are_reported_with_their_paths():
    doc = json.loads((SCENES / "slotine_li_arm.json").read_text())
    doc["controllers"] = [
        {"type": "pd", "name": "a", "joints": ["shoulder", "wrist"], "trajectory": SS},
        {"type": "slotine_li", "name": "b", "joints": ["elbow"],
         "trajectory": {"type": "set_point", "q": [0.0]}},
        {"type": "mixture", "name": "b", "experts": 2, "centres": [[0, 0]], "trajectory": SS},
    ]
    with pytest.raises(SceneError) as info:
        parse_spec(doc)
    assert any("$.controllers[2]" in str(p) and "experts is 2 but 1 centres" in str(p) for p in info.value.problems)
    doc["controllers"][2] = {"type": "mixture", "name": "b", "experts": 2, "trajectory": SS, "kp": [1, 2, 3]}
    problems = _problems(doc)
    assert any(p.startswith("$.controllers[0].joints[1]") and "unknown joint" in p for p in problems)
    assert any(p.startswith("$.controllers[1].joints") and "every degree of freedom" in p for p in problems)
    assert any(p.startswith("$.controllers[2].name") and "duplicate" in p for p in problems)
    assert any(p.startswith("$.controllers[2].kp") for p in problems)
    doc["controllers"] = [{"type": "pd", "name": "a", "trajectory": {"type": "set_point", "q": [0.0]}}]
    assert any("gives 1 coordinates for 2 controlled joints" in p for p in _problems(doc))
    doc["controllers"] = [{"type": "pd", "name": "a", "trajectory": SS, "kpp": 3}]
    with pytest.raises(SceneError) as info:
        parse_spec(doc)
    assert any("$.controllers[0].kpp" in str(p) and "unknown field" in str(p) for p in info.value.problems)


def test_scenes_with_controllers_round_trip():
    for name in ("slotine_li_arm", "uno_kawato_arm", "arm_on_line_pidc", "three_link_passive_pidc"):
        spec = core.read_spec(SCENES / f"{name}.json")
        again = parse_spec(json.loads(core.scene.spec_to_json(spec)))
        assert again == spec
        assert len(core.compile_scene(spec).controllers) == 1


# ------------------------------------------------------------------------- the recursive rule's covariance
def _rls_run(covariance=None, seconds=40.0):
    spec = ctrl("mixture", experts=4, rule="recursive", eta=0.01, kp=9.0, kd=1.0)
    if covariance is not None:
        spec["covariance"] = covariance
    sim = core.Simulation(arm_with(spec), dt=0.005, integrator="rk4")
    rec = sim.run(seconds)
    t, e = rec["t"], rec["tracking_error_c"]
    last = t[:-1] >= seconds - 10.0                                    # L2 over the last 10 s (eq. 3.44)
    h = np.diff(t)[last]
    l2 = math.sqrt(np.sum(np.sum(e[:-1][last] ** 2, axis=1) * h) / h.sum())
    c = sim.controller("c")
    F = c.n_features
    P = sim.controller_state("c")[c.n_parameters:].reshape(F, F)
    W = rec["parameters_c"]
    late = np.abs(W[-1] - W[-1 - round(5.0 / sim.dt)]).max()          # how much W still moves in the last 5 s
    return l2, np.linalg.eigvalsh(0.5 * (P + P.T)), late


def test_recursive_rule_as_written_stalls_and_the_remedies_keep_adapting():
    """Eq. 3.28 as written only shrinks P (Ṗ = −PΦΦᵀP): on the Slotine–Li arm tr P falls far below tr P(0) and W
    nearly stops, leaving a normalized error above 1 (worse than PD; measured 1.28). Bounded-gain forgetting keeps
    tr P ≤ tr P(0) (measured 0.98 tr P(0) at 40 s, as written 0.19) and adapting, the floor keeps every eigenvalue
    of P ≥ p_min: both end with lower errors (measured 0.86 and 0.26)."""
    pd = core.Simulation(arm_with(ctrl("pd", kp=9.0, kd=1.0)), dt=0.005, integrator="rk4").run(40.0)
    t, e = pd["t"], pd["tracking_error_c"]
    last = t[:-1] >= 30.0
    h = np.diff(t)[last]
    l2_pd = math.sqrt(np.sum(np.sum(e[:-1][last] ** 2, axis=1) * h) / h.sum())
    l2_w, eig_w, late_w = _rls_run()
    l2_f, eig_f, late_f = _rls_run({"rule": "forgetting", "forgetting_factor": 1.0})
    l2_p, eig_p, late_p = _rls_run({"rule": "floor", "floor": 0.005})
    F = eig_w.size
    assert l2_w / l2_pd > 1.0                                          # the stalled rule: worse than PD
    assert eig_w.min() < 1e-2 * 0.01 and eig_w.sum() < 0.5 * 0.01 * F  # P collapsed
    assert eig_f.sum() <= 0.01 * F * (1 + 1e-9)                        # forgetting: bounded gain
    assert eig_p.min() >= 0.005 * (1 - 1e-9)                          # the floor holds
    assert eig_f.sum() > 4 * eig_w.sum() and eig_p.min() > 100 * eig_w.min()     # the gain is replenished
    assert late_f > 1.5 * late_w                                      # forgetting: W still moving late
    assert l2_f < 0.8 * l2_w and l2_p < 0.5 * l2_w


def test_covariance_options_are_validated():
    for cov, why in [({"rule": "forgetting"}, "forgetting_factor > 0"), ({"rule": "floor"}, "floor > 0"),
                     ({"rule": "floor", "floor": 0.02}, "must be below eta"), ({"rule": "reset"}, "")]:
        with pytest.raises(SceneError) as info:
            arm_with(ctrl("mixture", experts=2, rule="recursive", eta=0.01, covariance=cov))
        assert any(p.path.startswith("$.controllers[0].covariance") or p.path == "$.controllers[0]"
                   for p in info.value.problems), info.value.problems
        assert why in str(info.value)
    with pytest.raises(SceneError, match="recursive rule only"):
        arm_with(ctrl("mixture", experts=2, covariance={"rule": "floor", "floor": 0.001}))
