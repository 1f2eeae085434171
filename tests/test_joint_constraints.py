"""Joint-space constraints Φ(q) = value given in a scene (Aghili eq. 11, 66–67): the expression whitelist (a scene
is data, never code), validation with JSON paths, the differentiability check at compile time, the rows against
the analytic Jacobian and bias of the slider condition and against the point-on-plane constraint that states the
same condition, and their force, bounds, breaking and grouping with point constraints.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.constraints import JOINT_SPACE
from core.joint_constraints import ExpressionError, derivative_problems, joint_space_rows, parse_expression
from core.scene import SceneError, compile_scene, parse_spec, read_spec, save_spec
from probe import look

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def slider_doc(constraint: dict, q1=0.3, bodies_extra=()) -> dict:
    """The slider-crank of scenes/slider_crank.json with another constraint."""
    doc = read_spec(SCENES / "slider_crank.json").model_dump(mode="json", exclude_defaults=True)
    doc["format_version"] = 1
    doc["bodies"][0]["joint"]["q0"] = q1
    doc["bodies"] += list(bodies_extra)
    doc["constraints"] = [constraint]
    return doc


def joint_space(expression: str, **kw) -> dict:
    return {"type": "joint_space", "name": "phi", "expression": expression, **kw}


# ------------------------------------------------------------------------------------------- the whitelist
@pytest.mark.parametrize("text, names", [
    ("sin(crank) + sin(crank + rod)", {"crank", "rod"}),
    ("-x**2 + 3.5*y/2 - pi", {"x", "y"}),
    ("sqrt(exp(log(abs(x)))) * tan(cos(y))", {"x", "y"}),
    ("+x - -2", {"x"}),
    ("  (a - b) ** 2", {"a", "b"}),
])
def test_whitelisted_expressions_parse_and_name_their_joints(text, names):
    assert parse_expression(text).names == names


@pytest.mark.parametrize("text, what", [
    ("__import__('os').system('true')", "may call only"),
    ("x.real", "attribute"),
    ("x[0]", "indexing"),
    ("(lambda: 1)()", "may call only"),
    ("x if y else z", "conditional"),
    ("x < y", "comparison"),
    ("x and y", "boolean"),
    ("'a' + x", "constant 'a'"),
    ("True * x", "constant True"),
    ("sin(x, y)", "exactly one argument"),
    ("sin(x=1)", "exactly one argument"),
    ("hypot(x)", "may call only"),
    ("sin + x", "is a function"),
    ("x % 2", "operator Mod"),
    ("x // 2", "operator FloorDiv"),
    ("x @ y", "operator MatMult"),
    ("1e999 * x", "finite"),
    ("x; y", "not a valid expression"),
    ("x = 1", "not a valid expression"),
    ("", "non-empty"),
    ("[x, y]", "list"),
])
def test_anything_else_is_refused_with_what_and_where(text, what):
    with pytest.raises(ExpressionError) as info:
        parse_expression(text)
    assert what in str(info.value)


def test_the_column_of_a_refused_node_is_reported():
    with pytest.raises(ExpressionError) as info:
        parse_expression("  x + y.real")
    assert info.value.column == 7 and "column 7" in str(info.value)


def test_deep_nesting_is_refused_not_crashing():
    with pytest.raises(ExpressionError):
        parse_expression("(" * 5000 + "x" + ")" * 5000)


def test_power_cannot_hang_the_evaluator():
    """Numbers are floats, so 9**9**9**9 overflows to inf at once instead of computing a huge integer."""
    expr = parse_expression("9**9**9**9 * x")
    with np.errstate(all="ignore"):
        assert not np.isfinite(expr.evaluate({"x": 1.0}))


# ------------------------------------------------------------------------------------------- validation
def test_scene_validation_reports_expression_problems_with_their_paths():
    doc = slider_doc(joint_space("sin(crank) + foo"))
    doc["constraints"].append(joint_space("open('x')", name="bad"))
    doc["constraints"].append({"type": "nail", "name": "n", "body": "nobody", "point": [0, 0, 0]})
    with pytest.raises(SceneError) as info:
        parse_spec(doc)
    problems = {p.path: p.message for p in info.value.problems}
    assert "unknown name 'foo'" in problems["$.constraints[0].expression"]
    assert "crank, rod" in problems["$.constraints[0].expression"]          # the joints it could use
    assert "may call only" in problems["$.constraints[1].expression"]
    assert "$.constraints[2].body" in problems                              # all problems at once


def test_only_hinge_and_slider_coordinates_may_be_read():
    ball = {"name": "wrist", "parent": "rod", "joint": {"type": "ball", "position": [1, 0, 0]},
            "inertial": {"mass": 1.0}}
    with pytest.raises(SceneError) as info:
        parse_spec(slider_doc(joint_space("crank + wrist"), bodies_extra=[ball]))
    (problem,) = info.value.problems
    assert problem.path == "$.constraints[0].expression" and "'wrist' is a ball joint" in problem.message


def test_a_joint_named_like_a_constant_cannot_be_read():
    doc = slider_doc(joint_space("sin(crank) + sin(crank + pi)"))
    doc["bodies"][1]["joint"]["name"] = "pi"
    with pytest.raises(SceneError) as info:
        parse_spec(doc)
    assert any("always means the constant" in p.message for p in info.value.problems)


def test_an_expression_without_joints_is_refused():
    with pytest.raises(SceneError, match="reads no joint coordinate"):
        parse_spec(slider_doc(joint_space("pi - 3")))


@pytest.mark.parametrize("expression, q1, what", [
    ("abs(crank) - 0.1", 0.0, "not differentiable with respect to 'crank'"),
    ("sqrt(crank)", 0.0, "not finite"),
    ("log(crank - 0.3)", 0.3, "not finite"),
])
def test_compile_refuses_an_expression_not_differentiable_at_the_start(expression, q1, what):
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(slider_doc(joint_space(expression), q1=q1)))
    (problem,) = info.value.problems
    assert problem.path == "$.constraints[0].expression" and what in problem.message


def test_a_kink_away_from_the_start_is_accepted():
    model = compile_scene(parse_spec(slider_doc(joint_space("abs(crank) - 0.1"), q1=0.3)))
    assert derivative_problems(model.constraints[0], model.q0) == []
    q = model.q0.copy()
    q[0] = 0.0
    assert derivative_problems(model.constraints[0], q)


def test_scene_with_a_joint_space_constraint_round_trips(tmp_path):
    spec = read_spec(SCENES / "slider_crank_joint_space.json")
    save_spec(spec, tmp_path / "s.json")
    again = read_spec(tmp_path / "s.json")
    assert again == spec and again.constraints[0].expression == "sin(crank) + sin(crank + rod)"


# ------------------------------------------------------------------------------------------- the rows
@pytest.fixture(scope="module")
def crank_models():
    return core.load_scene(SCENES / "slider_crank_joint_space.json"), core.load_scene(SCENES / "slider_crank.json")


def test_rows_match_the_analytic_slider_condition(crank_models):
    """Φ = sin q1 + sin(q1 + q2), J = [c1 + c12, c12] (eq. 69), γ = −s1 q̇1² − s12 (q̇1 + q̇2)²: exact (forward-mode
    derivatives of the compiled expression), to round-off of the terms — in ``joint_space_rows`` and in the rows
    the pipeline stacks."""
    model, _ = crank_models
    c = model.constraints[0]
    assert c.kind == JOINT_SPACE and c.rows == 1
    rng = np.random.default_rng(1)
    eps = np.finfo(float).eps
    for _ in range(50):
        q, qd = rng.uniform(-20, 20, 2), rng.uniform(-10, 10, 2)
        s1, s12, c1, c12 = np.sin(q[0]), np.sin(q.sum()), np.cos(q[0]), np.cos(q.sum())
        J_exact = np.array([c1 + c12, c12])
        gamma_exact = -s1 * qd[0] ** 2 - s12 * qd.sum() ** 2
        rows = look(model, 0.0, q, qd)
        for d, d_rate, J, gamma in (joint_space_rows(c, q, qd, model.nv),
                                    (rows.D[0], rows.D_rate[0], rows.J[0], rows.gamma[0])):
            assert d == pytest.approx(s1 + s12, abs=4 * eps)
            np.testing.assert_allclose(J, J_exact, rtol=0, atol=4 * eps)
            assert d_rate == pytest.approx(J_exact @ qd, abs=8 * eps * np.abs(qd).sum())
            assert gamma == pytest.approx(gamma_exact, abs=8 * eps * (qd @ qd + qd.sum() ** 2))
        assert rows.data.deviation[0] == abs(rows.D[0]) and rows.data.deviation_rate[0] == abs(rows.D_rate[0])


def test_gamma_is_the_rest_of_the_second_time_derivative(crank_models):
    """D̈ = J q̈ + γ along q(t) = q + q̇ t + ½ q̈ t² (finite differences in time)."""
    model, _ = crank_models
    c = model.constraints[0]
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-3, 3, 2), rng.uniform(-4, 4, 2), rng.uniform(-5, 5, 2)
    h = 1e-4
    D = [joint_space_rows(c, q + qd * t + 0.5 * qdd * t * t, qd + qdd * t, 2)[0] for t in (-h, 0.0, h)]
    _, _, J, gamma = joint_space_rows(c, q, qd, 2)
    assert (D[0] - 2 * D[1] + D[2]) / h ** 2 == pytest.approx(J @ qdd + gamma, abs=1e-5)


def test_joint_space_rows_equal_the_point_on_plane_rows(crank_models):
    """The slider stated two ways — y_C(q) in joint space, and C on the plane y = 0 — has the same D, Ḋ, J, γ (both
    exact: agreement to round-off), the same stabilization term and the same Jacobian scale."""
    js, pp = crank_models
    rng = np.random.default_rng(3)
    for _ in range(20):
        q, qd = rng.uniform(-7, 7, 2), rng.uniform(-8, 8, 2)
        a, b = look(js, 0.0, q, qd), look(pp, 0.0, q, qd)
        np.testing.assert_allclose(a.D, b.D, atol=1e-14)
        np.testing.assert_allclose(a.D_rate, b.D_rate, atol=1e-14 * (1 + np.abs(qd).sum()))
        np.testing.assert_allclose(a.J, b.J, atol=1e-14)
        np.testing.assert_allclose(a.gamma, b.gamma, atol=1e-14 * (1 + qd @ qd))
        np.testing.assert_allclose(a.stab, b.stab, atol=1e-12 * (1 + np.abs(b.stab).max()))
        np.testing.assert_allclose(a.data.qdd, b.data.qdd, rtol=1e-12, atol=1e-12)
        assert a.scale == pytest.approx(b.scale, rel=1e-14)       # both the norm of J at q0


# ------------------------------------------------------------------------------------------- force, bounds
def test_its_force_is_the_multiplier_along_x_and_its_power_is_lambda_J_qd(crank_models):
    """With no point to act on, constraint_force holds (λ, 0, 0); Jᵀλ is its generalized force."""
    model, _ = crank_models
    q, qd = model.q0, model.qd0
    data = core.evaluate(model, model.initial_state())
    lam = data.constraint_force[0, 0]
    np.testing.assert_array_equal(data.constraint_force[0, 1:], 0.0)
    assert data.constraint_force_magnitude[0] == abs(lam)
    _, _, J, _ = joint_space_rows(model.constraints[0], q, qd, model.nv)
    assert data.power_constraints[0] == pytest.approx(lam * (J @ qd), rel=1e-12, abs=1e-12)
    M_qdd = core.mass_matrix(model, q) @ data.qdd + core.nonlinear_effects(model, q, qd)
    np.testing.assert_allclose(M_qdd, J * lam, rtol=1e-12, atol=1e-12)          # M q̈ + b = Jᵀλ (no applied forces)


def test_force_bound_and_breaking_apply_to_joint_space_constraints():
    """max_force bounds |λ| (the direction is dropped, dynamic constraints); max_deviation breaks it."""
    weak = compile_scene(parse_spec(slider_doc(joint_space("sin(crank) + sin(crank + rod)", max_force=1e-3))))
    data = core.evaluate(weak, weak.initial_state(), core.Inputs(formulation="dynamic_constraints"))
    assert data.constraint_force_magnitude[0] <= 1e-3 and data.dropped == 1
    off = compile_scene(parse_spec(slider_doc(joint_space("sin(crank) + sin(crank + rod)", value=0.05,
                                                          max_deviation=0.01))))
    sim = core.Simulation(off)
    sim.run(0.01)
    (event,) = [e for e in sim.events if e.kind == "break"]
    assert event.constraint == "phi" and event.deviation == pytest.approx(0.05, rel=1e-9)


def test_a_joint_space_constraint_joins_the_group_of_the_trees_it_reads():
    """Two pendulums on separate trees, the left one's tip nailed, and a gear ``left = right`` between them:
    the dynamic-constraints solver groups the gear with both trees, so it agrees with the multipliers."""
    def pendulum(name, x):
        return {"name": name, "joint": {"type": "hinge", "axis": [0, 0, 1], "position": [x, 0, 0], "q0": 0.4,
                                       "qd0": 1.0},
                "shapes": [{"type": "cylinder", "radius": 0.05, "length": 1, "axis": [1, 0, 0],
                            "position": [0.5, 0, 0], "mass": 1.0}], "points": {"tip": [1, 0, 0]}}
    doc = {"format_version": 1, "name": "gear", "gravity": [0, -9.81, 0],
           "bodies": [pendulum("left", 0.0), pendulum("right", 2.0)],
           "constraints": [{"type": "point_on_plane", "name": "rail", "body": "left", "point": "tip",
                            "origin": [0, 0, 0], "normal": [0.3, 1, 0]},
                           joint_space("left - 2 * right", name="gear", value=-0.4)]}
    model = compile_scene(parse_spec(doc))
    q = model.q0 + [0.01, -0.02]
    dc = look(model, 0.0, q, model.qd0, inputs=core.Inputs(formulation="dynamic_constraints"))
    mu = look(model, 0.0, q, model.qd0, inputs=core.Inputs(formulation="multipliers"))
    assert list(dc.groups) == [0, 0]                              # one group: the gear ties the two trees
    np.testing.assert_allclose(dc.data.qdd, mu.data.qdd, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dc.J @ dc.data.qdd + dc.gamma + dc.stab, 0.0, atol=1e-10)
