"""What a Slotine–Li controller adapts (core.control.parameters): the base parameters reproduce the inverse
dynamics with the minimal number of columns on random chains; a parameterization is a choice of adaptation gain
(base and Slotine & Li's a1…a4 give the same closed loop when Γ is mapped, Γ_base = T Γ_book Tᵀ; the ten standard
parameters per link with Γ = η·1 are the book's law with Γ = η C Cᵀ); custom expressions and Γ are validated with
their JSON paths."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import core
from core.control.parameters import (base_parameterization, custom_parameterization, parse_linear,
                                     ParameterizationError, random_states, standard_names)
from core.control.regressor import inertial_parameters, regressor
from core.scene import SceneError, compile_scene, parse_spec
from trees import random_state, random_tree

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "scenes"
SS = {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75], "omega": [0.75 * math.pi, 2 * math.pi]}


def arm_doc(controller: dict, arm: str = "slotine_li_arm", gravity=(0.0, 0.0, 0.0)) -> dict:
    doc = json.loads((SCENES / f"{arm}.json").read_text())
    doc["gravity"] = list(gravity)
    doc["controllers"] = [{"name": "c", "trajectory": SS, **controller}]
    return doc


def arm_with(controller: dict, arm: str = "slotine_li_arm", gravity=(0.0, 0.0, 0.0)) -> core.Model:
    return compile_scene(parse_spec(arm_doc(controller, arm, gravity)))


BOOK = json.loads((SCENES / "slotine_li_arm.json").read_text())["controllers"][0]["parameters"]


# ---------------------------------------------------------------------------------------------- base parameters
@pytest.mark.parametrize("seed", range(10))
def test_base_regressor_reproduces_rnea_with_the_minimal_number_of_columns(seed):
    """Y_b β = τ (RNEA) to 1e-12 at fresh random states on random serial chains of hinges and sliders, with
    gravity; the number of base parameters is the rank of the standard regressor stacked at other states
    (an independent SVD), and Y_b has full column rank."""
    rng = np.random.default_rng(seed)
    model = random_tree(rng, int(rng.integers(2, 7)), joints=("hinge", "slider"), branching=0.0)
    g = model.gravity
    p = base_parameterization(model, g)
    theta = inertial_parameters(model)
    beta = p.of(theta)
    W_b, W = [], []
    for _ in range(6):
        q, qd = random_state(rng, model)
        qdd = rng.normal(size=model.nv)
        tau = core.inverse_dynamics(model, q, qd, qdd)
        Y = regressor(model, q, qd, qd, qdd, g)
        Y_b = Y @ p.K
        assert Y_b.shape == (model.nv, p.size)
        assert np.abs(Y_b @ beta - tau).max() <= 1e-12 * max(1.0, np.abs(tau).max())
        W.append(Y)
        W_b.append(Y_b)
    for q, qd, qdr, qddr in random_states(model, 40, seed=seed + 1000):
        W.append(regressor(model, q, qd, qdr, qddr, g))
    W = np.vstack(W)
    sv = np.linalg.svd(W, compute_uv=False)
    rank = int(np.sum(sv > 1e-9 * sv[0]))
    assert p.size == p.rank == rank < 10 * model.n_links
    sv_b = np.linalg.svd(np.vstack(W_b + [W @ p.K]), compute_uv=False)
    assert sv_b[-1] > 1e-9 * sv_b[0]                                   # no dependent column left
    # Y θ = Y_b β for any θ, not only the arm's own: the map P_b holds on the whole parameter space
    other = rng.normal(size=theta.size)
    assert np.abs(W @ p.K @ p.of(other) - W @ other).max() <= 1e-10 * max(1.0, np.abs(W @ other).max())


def test_base_parameters_of_the_planar_arm_with_and_without_gravity():
    """Without gravity the two-link planar arm has four base parameters (Slotine & Li's a1…a4); with gravity in
    Y, two more (the first link's mass moments, one of them regrouped with m2 l1)."""
    arm = arm_with({"type": "pd"})
    assert base_parameterization(arm, np.zeros(3)).size == 4
    assert base_parameterization(arm, np.array([0.0, -9.81, 0.0])).size == 6


# ---------------------------------------------------------------------------------------------- custom
def test_book_parameters_have_the_books_values():
    """a1 = I1 + m1 lc1² + Ie + me lce² + me l1², a2 = Ie + me lce², a3 = me l1 lce cos δe, a4 = me l1 lce sin δe
    (Slotine & Li, Example 9.1 numbers: 3.34, 0.97, 1.0392, 0.6) and, with gravity modelled,
    a5 = m1 lc1 + me l1, a6 = me lce cos δe, a7 = me lce sin δe."""
    arm = arm_with({"type": "slotine_li", "parameters": BOOK, "model_gravity": True}, gravity=(0, -9.81, 0))
    c = arm.controllers[0]
    assert c.parameterization.names == ("a1", "a2", "a3", "a4", "a5", "a6", "a7")
    de = math.radians(30)
    expected = [0.12 + 1 * 0.25 + 0.25 + 2 * 0.36 + 2 * 1.0, 0.25 + 2 * 0.36, 2 * 1.0 * 0.6 * math.cos(de),
                2 * 1.0 * 0.6 * math.sin(de), 1 * 0.5 + 2 * 1.0, 2 * 0.6 * math.cos(de), 2 * 0.6 * math.sin(de)]
    np.testing.assert_allclose(c.true_parameters(), expected, rtol=1e-12)
    # the book's H11 = a1 + 2 a3 cos q2 + 2 a4 sin q2, H12 = a2 + a3 cos q2 + a4 sin q2, H22 = a2
    a1, a2, a3, a4 = expected[:4]
    for q2 in (-1.0, 0.3, 2.0):
        M = core.mass_matrix(arm, np.array([0.4, q2]))
        np.testing.assert_allclose(M, [[a1 + 2 * a3 * math.cos(q2) + 2 * a4 * math.sin(q2),
                                        a2 + a3 * math.cos(q2) + a4 * math.sin(q2)],
                                       [a2 + a3 * math.cos(q2) + a4 * math.sin(q2), a2]], rtol=1e-12)


def test_linear_expressions():
    arm = arm_with({"type": "pd"})
    names = standard_names(arm)
    row = parse_linear("2 * upper.Izz - effector.hy / 4 + (1 + 1) ** 2 * effector.m - pi * upper.m", arm)
    want = np.zeros(20)
    want[names.index("upper.Izz")], want[names.index("effector.hy")] = 2.0, -0.25
    want[names.index("effector.m")], want[names.index("upper.m")] = 4.0, -math.pi
    np.testing.assert_allclose(row, want, rtol=1e-15)
    for bad, why in [("upper.m * effector.m", "not linear"), ("sin(upper.Izz)", "not linear"),
                     ("upper.Izz + 1", "constant term"), ("lower.m", "unknown body"), ("upper.mass", "not a standard"),
                     ("1 / upper.m", "not finite"), ("upper.m[0]", "may not contain"), ("", "non-empty")]:
        with pytest.raises(ParameterizationError, match=why):
            parse_linear(bad, arm)


@pytest.mark.parametrize("parameters,gamma,path,why", [
    ({"type": "custom", "inertial": {**BOOK["inertial"], "a1": "upper.Izz * effector.m"}}, None,
     "$.controllers[0].parameters.inertial.a1", "not linear"),
    ({"type": "custom", "inertial": {k: v for k, v in BOOK["inertial"].items() if k != "a2"}}, None,
     "$.controllers[0].parameters.inertial", "cannot represent"),
    ({"type": "custom", "inertial": {**BOOK["inertial"], "a5": "2 * effector.Izz"}}, None,
     "$.controllers[0].parameters.inertial.a5", "combination of the parameters before it"),
    (BOOK, [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 2.0], [0.0, 0.0, 2.0, 1.0]],
     "$.controllers[0].gamma", "positive definite; its smallest eigenvalue is -1"),
    (BOOK, [[1.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]],
     "$.controllers[0].gamma", "symmetric"),
    (BOOK, [1.0, 2.0, 3.0], "$.controllers[0].gamma", "needs 4 values"),
    (BOOK, [1.0, 2.0, -3.0, 1.0], "$.controllers[0].gamma", "positive"),
    ("base", [[1.0, 0.0], [0.0, 1.0]], "$.controllers[0].gamma", "must be 4 x 4"),
])
def test_bad_parameterizations_and_gains_name_their_json_path(parameters, gamma, path, why):
    spec = {"type": "slotine_li", "parameters": parameters}
    if gamma is not None:
        spec["gamma"] = gamma
    with pytest.raises(SceneError) as info:
        arm_with(spec)
    assert any(p.path == path and why in p.message for p in info.value.problems), info.value.problems


def test_gravity_modelled_without_gravity_parameters_is_refused():
    """The book's a1…a4 alone cannot represent g(q): gravity modelled needs the gravity set (a5…a7)."""
    with pytest.raises(SceneError) as info:
        arm_with({"type": "slotine_li", "model_gravity": True,
                  "parameters": {"type": "custom", "inertial": BOOK["inertial"]}}, gravity=(0, -9.81, 0))
    assert any("gravity" in p.message and p.path == "$.controllers[0].parameters.inertial"
               for p in info.value.problems)


def test_validate_cli_reports_a_bad_gamma_with_exit_2(tmp_path):
    doc = arm_doc({"type": "slotine_li", "parameters": BOOK, "gamma": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                                                                         [0, 0, 0, -1]]})
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "core", "validate", str(f)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert "$.controllers[0].gamma" in r.stdout and "Traceback" not in r.stdout + r.stderr


# ---------------------------------------------------------------------------------------------- a choice of gain
def _run(model, seconds=3.0):
    sim = core.Simulation(model, dt=0.002, integrator="rk4")
    rec = sim.run(seconds)
    return rec["q"], rec["parameters_c"], rec["torque_c"] if "torque_c" in rec else None


def test_base_and_book_parameters_give_the_same_closed_loop_when_gamma_is_mapped():
    """β = T a (T invertible, 4 x 4, from the two maps), so Y_book = Y_base T; with Γ_base = T Γ_book Tᵀ and
    â_base(0) = T â_book(0) the two loops are one: the same motion, â_base(t) = T â_book(t)."""
    eta = 0.05
    book = arm_with({"type": "slotine_li", "parameters": BOOK, "eta": eta})
    base = arm_with({"type": "slotine_li", "parameters": "base", "eta": eta})
    Pb, Pc = base.controllers[0].parameterization, book.controllers[0].parameterization
    T = Pb.C @ np.linalg.pinv(Pc.C)
    np.testing.assert_allclose(T @ Pc.C, Pb.C, atol=1e-12)           # the same identifiable combinations
    assert abs(np.linalg.det(T)) > 1e-6
    for q, qd, qdr, qddr in random_states(book, 5, seed=3):            # Y_book = Y_base T, state by state
        Y_c = Pc.regressor(book, q, qd, qdr, qddr, np.zeros(3))
        Y_b = Pb.regressor(base, q, qd, qdr, qddr, np.zeros(3))
        assert np.abs(Y_c - Y_b @ T).max() <= 1e-12 * max(1.0, np.abs(Y_c).max())
    mapped = arm_with({"type": "slotine_li", "parameters": "base", "eta": eta, "gamma": (T @ T.T).tolist()})
    q_book, a_book, _ = _run(book)
    q_map, a_map, _ = _run(mapped)
    q_base, _, _ = _run(base)
    assert np.abs(q_map - q_book).max() <= 1e-10
    assert np.abs(a_map - a_book @ T.T).max() <= 1e-10
    assert np.abs(q_base - q_book).max() > 1e-4                       # unmapped Γ: a different loop


def test_standard_parameters_are_the_book_law_with_gamma_c_ct():
    """The ten standard parameters per link with Γ = η·1 (the project's former IDSL) is the book's law with
    Γ = η C Cᵀ (a = C θ): the same motion. On the Uno arm C Cᵀ has l1² = 0.09 on the a3, a4 directions."""
    eta = 0.05
    standard = arm_with({"type": "slotine_li", "parameters": "standard", "eta": eta}, "uno_kawato_arm")
    uno_book = json.loads(json.dumps(BOOK).replace("upper", "upper_arm").replace("effector", "forearm")
                          .replace("1.0", "0.3"))
    book = arm_with({"type": "slotine_li", "parameters": uno_book, "eta": eta}, "uno_kawato_arm")
    C = book.controllers[0].parameterization.C
    G = C @ C.T
    np.testing.assert_allclose(np.diag(G)[2:], [0.09, 0.09], rtol=1e-12)
    mapped = arm_with({"type": "slotine_li", "parameters": uno_book, "eta": eta, "gamma": G.tolist()},
                      "uno_kawato_arm")
    q_std, a_std, _ = _run(standard)
    q_map, a_map, _ = _run(mapped)
    q_book, _, _ = _run(book)
    scale = np.abs(q_std).max()
    assert np.abs(q_map - q_std).max() <= 1e-10 * scale
    assert np.abs(a_map - a_std @ C.T).max() <= 1e-10
    assert np.abs(q_book - q_std).max() > 1e-4 * scale


def test_initial_parameters_model_maps_the_arm_and_tracks_perfectly():
    """``initial_parameters: model`` starts â at the arm's own a = C θ in any parameterization: Y_p a = τ_r, the
    dynamics are cancelled and only RK4's truncation error remains."""
    for p in (BOOK, "base", "standard"):
        model = arm_with({"type": "slotine_li", "parameters": p, "initial_parameters": "model", "eta": 0.0})
        e = np.abs(core.Simulation(model, dt=0.005).run(2.0)["tracking_error_c"]).max()
        assert e < 1e-7, p


def test_custom_parameters_cannot_represent_what_the_arm_lacks():
    """A direct check of custom_parameterization: leaving a4 out is fine only where the true a4 is zero (the Uno
    forearm's centre of mass lies on its axis; the Slotine–Li load's does not)."""
    uno = arm_with({"type": "pd"}, "uno_kawato_arm")
    p = custom_parameterization(uno, {"a1": "upper_arm.Izz + forearm.Izz + 0.09 * forearm.m", "a2": "forearm.Izz",
                                      "a3": "0.3 * forearm.hx"}, {}, np.zeros(3))
    assert p.size == 3
    with pytest.raises(ParameterizationError, match="cannot represent"):
        custom_parameterization(arm_with({"type": "pd"}), {"a1": "upper.Izz + effector.Izz + effector.m",
                                                            "a2": "effector.Izz", "a3": "effector.hx"}, {},
                                np.zeros(3))


def test_parameters_cli_prints_the_parameters_as_link_constants():
    r = subprocess.run([sys.executable, "-m", "core", "parameters", str(SCENES / "slotine_li_arm.json")], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "a1 = upper.Izz + effector.m + effector.Izz" in r.stdout and "= 3.34" in r.stdout
    assert "base: 4 adapted parameter(s)" in r.stdout
    r = subprocess.run([sys.executable, "-m", "core", "parameters", str(SCENES / "no_such.json")], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr


@pytest.mark.parametrize("seed", range(6))
def test_base_parameters_on_random_trees_of_every_joint_type(seed):
    """The same on branched trees with ball and free joints (nq ≠ nv): Y_b β = τ (RNEA) and the count is the
    standard regressor's rank."""
    rng = np.random.default_rng(500 + seed)
    model = random_tree(rng, int(rng.integers(2, 6)))
    p = base_parameterization(model, model.gravity)
    beta = p.of(inertial_parameters(model))
    W = []
    for _ in range(4):
        q, qd = random_state(rng, model)
        qdd = rng.normal(size=model.nv)
        tau = core.inverse_dynamics(model, q, qd, qdd)
        Y = regressor(model, q, qd, qd, qdd, model.gravity)
        assert np.abs(Y @ p.K @ beta - tau).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(tau).max(initial=0.0))
        W.append(Y)
    W += [regressor(model, *s, model.gravity) for s in random_states(model, 60, seed=seed + 77)]
    sv = np.linalg.svd(np.vstack(W), compute_uv=False)
    assert p.size == int(np.sum(sv > 1e-9 * sv[0]))
