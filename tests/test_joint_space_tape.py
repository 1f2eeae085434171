"""The tape of a joint-space constraint Φ(q) (core.joint_constraints): the compiled program of the checked
expression and its forward-mode Taylor evaluation. Φ, ∇Φ, Φ̇ = ∇Φ·v and γ = Φ̈ = vᵀ∇²Φ v against derivatives
worked out by hand for each expression, against finite differences of t ↦ Φ(x + v t), and, on random expression
trees (hypothesis), against Expression.evaluate and finite differences; the differentiability check on the tape
(kinks of abs, sqrt and log at 0); deep nesting; one kernel signature for every expression.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import os
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.joint_constraints import (OP_ABS, OP_ADD, OP_CONST, OP_NEG, OP_POW, OP_POWC, OP_SIN, OP_VAR, TAPE, Expression,
                                    ExpressionError, JointSpaceConstraint, compile_tape, derivative_problems,
                                    joint_space_rows, parse_expression, tape_jet)

PI = math.pi


def jet(expr: Expression, names, x, v):
    """(Φ, Φ̇, Φ̈, ∇Φ) from the compiled kernel."""
    tape = compile_tape(expr, tuple(names))
    n, length = len(names), len(tape)
    val, d1, d2, grad = np.empty(length), np.empty(length), np.empty(length), np.empty((length, n))
    x, v = np.array(x, dtype=float), np.array(v, dtype=float)
    phi, phi_dot, phi_ddot = tape_jet(tape, 0, length, x, v, val, d1, d2, grad)
    return phi, phi_dot, phi_ddot, grad[length - 1, :n].copy()


def constraint(text: str, names=None, value: float = 0.0) -> JointSpaceConstraint:
    expr = parse_expression(text)
    names = tuple(sorted(expr.names)) if names is None else tuple(names)
    index = np.arange(len(names), dtype=np.int64)
    return JointSpaceConstraint("c", "c", expr, names, index, index.copy(), tuple(range(len(names))), value,
                                1.0, np.inf, np.inf)


def phi_batch(expr: Expression, names, X: np.ndarray) -> np.ndarray:
    """Φ at the columns of X (n, k), by Expression.evaluate (NumPy on the checked tree)."""
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(expr.evaluate(dict(zip(names, X))), dtype=float), X.shape[1:])


def fd_gradient(expr, names, x, h=1e-4):
    """Fourth-order central differences (−f(2h) + 8f(h) − 8f(−h) + f(−2h)) / 12h."""
    g = np.empty(len(x))
    for j in range(len(x)):
        X = np.repeat(np.asarray(x, float)[:, None], 4, axis=1)
        X[j] += h * np.array([2.0, 1.0, -1.0, -2.0])
        f = phi_batch(expr, names, X)
        g[j] = (-f[0] + 8 * f[1] - 8 * f[2] + f[3]) / (12 * h)
    return g


_D2 = np.array([1 / 90, -3 / 20, 3 / 2, -49 / 18, 3 / 2, -3 / 20, 1 / 90])      # sixth-order second difference


def fd_gamma(expr, names, x, v, h=5e-3):
    """d²/dt² Φ(x + v t) at t = 0, sixth-order central differences (truncation ~h⁶, round-off ~ε|Φ|/h²)."""
    t = h * np.arange(-3, 4)
    f = phi_batch(expr, names, np.asarray(x, float)[:, None] + np.outer(v, t))
    return float(_D2 @ f) / (h * h), float(np.max(np.abs(f)))


# --------------------------------------------------------------------------- expressions with their derivatives
def _slider(q):
    c, r = q
    s1, s12, c1, c12 = math.sin(c), math.sin(c + r), math.cos(c), math.cos(c + r)
    return s1 + s12, [c1 + c12, c12], [[-s1 - s12, -s12], [-s12, -s12]]


def _product(q):
    x, y, z = q
    return x * y * z, [y * z, x * z, x * y], [[0, z, y], [z, 0, x], [y, x, 0]]


def _over_one_plus_square(q):                        # x / (1 + y²)
    x, y = q
    s = 1 + y * y
    fxy = -2 * y / s ** 2
    return x / s, [1 / s, -2 * x * y / s ** 2], [[0, fxy], [fxy, -2 * x / s ** 2 + 8 * x * y * y / s ** 3]]


def _difference_over_sum(q):                         # (x − y) / (x + y)
    x, y = q
    s = x + y
    return (x - y) / s, [2 * y / s ** 2, -2 * x / s ** 2], [[-4 * y / s ** 3, 2 * (x - y) / s ** 3],
                                                           [2 * (x - y) / s ** 3, 4 * x / s ** 3]]


def _cubic(q):                                       # x³ − 2x²   (x < 0 too)
    (x,) = q
    return x ** 3 - 2 * x ** 2, [3 * x * x - 4 * x], [[6 * x - 4]]


def _power_2_5(q):
    (x,) = q
    return x ** 2.5, [2.5 * x ** 1.5], [[3.75 * x ** 0.5]]


def _power_minus_2(q):                               # x⁻²   (x < 0 too)
    (x,) = q
    return x ** -2.0, [-2 * x ** -3.0], [[6 * x ** -4.0]]


def _cube_root(q):                                   # y^(1/3): the exponent 1/3 is folded into a constant
    (y,) = q
    return y ** (1 / 3), [y ** (-2 / 3) / 3], [[-2 / 9 * y ** (-5 / 3)]]


def _squared_product(q):                             # (x y)² = x²y²
    x, y = q
    return (x * y) ** 2, [2 * x * y * y, 2 * x * x * y], [[2 * y * y, 4 * x * y], [4 * x * y, 2 * x * x]]


def _x_to_the_y(q):                                  # x^y, x > 0
    x, y = q
    w, L = x ** y, math.log(x)
    return w, [y * x ** (y - 1), w * L], [[y * (y - 1) * x ** (y - 2), x ** (y - 1) * (1 + y * L)],
                                          [x ** (y - 1) * (1 + y * L), w * L * L]]


def _sin_cos_times(q):                               # sin(cos(x) y)
    x, y = q
    u = math.cos(x) * y
    du = [-math.sin(x) * y, math.cos(x)]
    ddu = [[-math.cos(x) * y, -math.sin(x)], [-math.sin(x), 0.0]]
    s, c = math.sin(u), math.cos(u)
    return s, [c * du[0], c * du[1]], [[-s * du[i] * du[j] + c * ddu[i][j] for j in range(2)] for i in range(2)]


def _exp_log(q):                                     # eˣ log y
    x, y = q
    e, L = math.exp(x), math.log(y)
    return e * L, [e * L, e / y], [[e * L, e / y], [e / y, -e / (y * y)]]


def _norm(q):                                        # √(x² + y²)
    x, y = q
    r = math.hypot(x, y)
    n = np.array([x, y]) / r
    return r, list(n), (np.eye(2) - np.outer(n, n)) / r


def _tan_half(q):                                    # tan(x/2)
    (x,) = q
    t = math.tan(x / 2)
    return t, [(1 + t * t) / 2], [[t * (1 + t * t) / 2]]


def _abs_times(q):                                   # |x − y| y, away from x = y
    x, y = q
    s = math.copysign(1.0, x - y)
    return abs(x - y) * y, [s * y, abs(x - y) - s * y], [[0.0, s], [s, -2 * s]]


def _pi_and_signs(q):                                # π x² − −x + +y
    x, y = q
    return PI * x * x + x + y, [2 * PI * x + 1, 1.0], [[2 * PI, 0.0], [0.0, 0.0]]


def _negated_and_gaussian(q):                        # −(x y) / −2 + exp(−x x / 2)
    x, y = q
    e = math.exp(-x * x / 2)
    return x * y / 2 + e, [y / 2 - x * e, x / 2], [[e * (x * x - 1), 0.5], [0.5, 0.0]]


def _log_one_plus_square(q):                         # log(1 + x²)
    (x,) = q
    s = 1 + x * x
    return math.log(s), [2 * x / s], [[2 * (1 - x * x) / s ** 2]]


def _sqrt_exp_quotient(q):                           # sqrt(x) / exp(y) = √x e⁻ʸ
    x, y = q
    r, e = math.sqrt(x), math.exp(-y)
    return r * e, [0.5 / r * e, -r * e], [[-0.25 * x ** -1.5 * e, -0.5 / r * e], [-0.5 / r * e, r * e]]


def _uniform(low, high, n):
    return lambda rng: rng.uniform(low, high, n)


def _signed(low, high, n):
    return lambda rng: rng.choice([-1.0, 1.0], n) * rng.uniform(low, high, n)


def _apart(rng):                                     # |x − y| > 0.1
    while True:
        q = rng.uniform(-3, 3, 2)
        if abs(q[0] - q[1]) > 0.1:
            return q


CASES = [
    ("sin(crank) + sin(crank + rod)", ("crank", "rod"), _slider, _uniform(-20, 20, 2)),
    ("x * y * z", ("x", "y", "z"), _product, _uniform(-3, 3, 3)),
    ("x / (1 + y*y)", ("x", "y"), _over_one_plus_square, _uniform(-3, 3, 2)),
    ("(x - y) / (x + y)", ("x", "y"), _difference_over_sum, _uniform(0.5, 2, 2)),
    ("x**3 - 2*x**2", ("x",), _cubic, _uniform(-3, 3, 1)),
    ("x**2.5", ("x",), _power_2_5, _uniform(0.1, 4, 1)),
    ("x**-2", ("x",), _power_minus_2, _signed(0.3, 3, 1)),
    ("y**(1/3)", ("y",), _cube_root, _uniform(0.2, 5, 1)),
    ("(x*y)**2", ("x", "y"), _squared_product, _uniform(-3, 3, 2)),
    ("x**y", ("x", "y"), _x_to_the_y, lambda rng: np.array([rng.uniform(0.2, 3), rng.uniform(-2, 2)])),
    ("sin(cos(x)*y)", ("x", "y"), _sin_cos_times, _uniform(-3, 3, 2)),
    ("exp(x) * log(y)", ("x", "y"), _exp_log, lambda rng: np.array([rng.uniform(-2, 2), rng.uniform(0.2, 5)])),
    ("sqrt(x*x + y*y)", ("x", "y"), _norm, _signed(0.2, 3, 2)),
    ("tan(x/2)", ("x",), _tan_half, _uniform(-2.5, 2.5, 1)),
    ("abs(x - y) * y", ("x", "y"), _abs_times, _apart),
    ("pi * x**2 - -x + +y", ("x", "y"), _pi_and_signs, _uniform(-3, 3, 2)),
    ("-(x*y) / -2 + exp(-x*x/2)", ("x", "y"), _negated_and_gaussian, _uniform(-3, 3, 2)),
    ("log(1 + x*x)", ("x",), _log_one_plus_square, _uniform(-3, 3, 1)),
    ("sqrt(x) / exp(y)", ("x", "y"), _sqrt_exp_quotient,
     lambda rng: np.array([rng.uniform(0.1, 4), rng.uniform(-2, 2)])),
]


@pytest.mark.parametrize("text, names, exact, sample", CASES, ids=[c[0] for c in CASES])
def test_value_gradient_and_gamma_are_the_analytic_ones(text, names, exact, sample):
    """Φ equals Expression.evaluate and the hand-derived Φ; ∇Φ and γ = vᵀ∇²Φ v equal the hand-derived
    derivatives to ~1e-12 relative; Φ̇ = ∇Φ·v."""
    expr = parse_expression(text)
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    for _ in range(40):
        x, v = sample(rng), rng.uniform(-5, 5, len(names))
        phi, phi_dot, phi_ddot, grad = jet(expr, names, x, v)
        f, g, H = exact(x)
        g, H = np.array(g, float), np.array(H, float)
        assert phi == pytest.approx(float(expr.evaluate(dict(zip(names, x)))), rel=1e-13, abs=1e-14)
        assert phi == pytest.approx(f, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(grad, g, rtol=1e-12, atol=1e-12 * np.max(np.abs(g), initial=1e-3))
        gamma = v @ H @ v
        assert phi_ddot == pytest.approx(gamma, rel=1e-12, abs=1e-12 * (np.abs(v) @ np.abs(H) @ np.abs(v) + 1e-3))
        assert phi_dot == pytest.approx(g @ v, rel=1e-12, abs=1e-12 * (np.abs(g) @ np.abs(v) + 1e-3))
        assert phi_dot == pytest.approx(grad @ v, rel=1e-13, abs=1e-13 * (np.abs(grad) @ np.abs(v) + 1e-3))


@pytest.mark.parametrize("text, names, exact, sample", CASES, ids=[c[0] for c in CASES])
def test_gamma_and_gradient_agree_with_finite_differences(text, names, exact, sample):
    """Independently of the hand derivations: γ against the sixth-order second difference of t ↦ Φ(x + v t) and
    ∇Φ against fourth-order central differences, both of Expression.evaluate."""
    expr = parse_expression(text)
    rng = np.random.default_rng(7 + zlib.crc32(text.encode()))
    for _ in range(10):
        x, v = sample(rng), rng.uniform(-1, 1, len(names))
        _, _, phi_ddot, grad = jet(expr, names, x, v)
        gamma_fd, size = fd_gamma(expr, names, x, v)
        assert phi_ddot == pytest.approx(gamma_fd, rel=1e-6, abs=1e-6 * (1 + size))
        np.testing.assert_allclose(grad, fd_gradient(expr, names, x), rtol=1e-7, atol=1e-7 * (1 + np.abs(grad).max()))


def test_gamma_is_the_rest_of_the_second_time_derivative():
    """Along q(t) = q + q̇ t + ½ q̈ t²: d²Φ/dt² = J q̈ + γ (finite differences in time), with q and q̇ read from
    state vectors through q_index and v_index (here not equal: a 7-coordinate free joint comes first)."""
    c = constraint("sin(crank) * rod**2 / (2 + cos(rod)) - exp(-crank*crank)", ("crank", "rod"))
    c = dataclasses.replace(c, q_index=np.array([7, 8]), v_index=np.array([6, 7]), value=0.25)
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-2, 2, 9), rng.uniform(-2, 2, 8), rng.uniform(-2, 2, 8)
    d, d_rate, J, gamma = joint_space_rows(c, q, qd, 8)
    x, v = q[[7, 8]], qd[[6, 7]]
    assert d == pytest.approx(float(c.phi(x)) - 0.25, rel=1e-13)
    np.testing.assert_array_equal(J[:6], 0.0)
    np.testing.assert_allclose(J[6:], fd_gradient(c.expression, c.names, x), rtol=1e-8)
    assert d_rate == pytest.approx(J @ qd, rel=1e-13)
    h = 1e-3

    def D(t):
        qt = q.copy()
        qt[[7, 8]] += v * t + 0.5 * qdd[[6, 7]] * t * t
        return joint_space_rows(c, qt, qd, 8)[0]
    second = (-D(2 * h) + 16 * D(h) - 30 * D(0) + 16 * D(-h) - D(-2 * h)) / (12 * h * h)
    assert second == pytest.approx(J @ qdd + gamma, rel=1e-7, abs=1e-7)


def test_powers_of_a_negative_base_with_a_constant_exponent():
    """x**2 is u^c (OP_POWC), not exp(2 log x): exact at x < 0, where a power through log would be nan."""
    expr = parse_expression("x**2 + x**3")
    tape = compile_tape(expr, ("x",))
    assert set(tape["op"]) == {OP_VAR, OP_POWC, OP_ADD} and OP_POW not in tape["op"]
    phi, phi_dot, phi_ddot, grad = jet(expr, ("x",), [-3.0], [0.5])
    assert (phi, grad[0], phi_ddot) == pytest.approx((9 - 27, -6 + 27, (2 - 18) * 0.25), rel=1e-15)
    assert phi_dot == pytest.approx(21 * 0.5, rel=1e-15)
    zero = jet(parse_expression("x**0 + x**1"), ("x",), [0.0], [1.0])
    assert zero[0] == 1.0 and zero[1] == 1.0 and zero[2] == 0.0 and zero[3][0] == 1.0


# ------------------------------------------------------------------------------------------------- the tape
def test_the_tape_of_the_slider_condition():
    """Instructions read only earlier registers, crank is loaded once, the result is the last register."""
    tape = compile_tape(parse_expression("sin(crank) + sin(crank + rod)"), ("crank", "rod"))
    assert tape.dtype == TAPE and TAPE.itemsize == 32 and TAPE.names == ("op", "a", "b", "value")
    assert list(tape["op"]).count(OP_VAR) == 2 and list(tape["op"]).count(OP_SIN) == 2
    for k, row in enumerate(tape):
        if row["op"] not in (OP_CONST, OP_VAR):
            assert 0 <= row["a"] < k and row["b"] < k
    assert sorted(tape[tape["op"] == OP_VAR]["a"]) == [0, 1]
    assert tape[-1]["op"] == OP_ADD


def test_constants_fold_pi_is_a_constant_and_unary_plus_emits_nothing():
    assert list(compile_tape(parse_expression("+x"), ("x",))["op"]) == [OP_VAR]
    pi = compile_tape(parse_expression("pi"), ("x",))
    assert list(pi["op"]) == [OP_CONST] and pi[0]["value"] == PI
    folded = compile_tape(parse_expression("2**3 * x - -(pi/2)"), ("x",))
    consts = folded[folded["op"] == OP_CONST]["value"]
    assert sorted(consts) == [-PI / 2, 8.0]
    neg = compile_tape(parse_expression("-x"), ("x",))
    assert list(neg["op"]) == [OP_VAR, OP_NEG]
    assert OP_ABS in compile_tape(parse_expression("abs(x)"), ("x",))["op"]


def test_a_name_outside_the_variables_is_refused():
    with pytest.raises(ExpressionError, match="'rod'"):
        compile_tape(parse_expression("crank + rod"), ("crank",))
    # an unread variable only gets a zero derivative
    _, _, _, grad = jet(parse_expression("crank**2"), ("crank", "rod"), [1.5, 2.0], [1.0, 1.0])
    np.testing.assert_array_equal(grad, [3.0, 0.0])


def test_every_constraint_carries_its_tape():
    c = constraint("sin(crank) + sin(crank + rod)")
    assert c.tape.dtype == TAPE and len(c.tape) > 0
    expected = compile_tape(c.expression, c.names)
    np.testing.assert_array_equal(c.tape, expected)
    again = dataclasses.replace(c, jacobian_scale=2.0)
    assert again.tape is c.tape                                          # given, not recompiled
    # the tape follows the names' order: variable j is names[j]
    swapped = constraint("sin(crank) + sin(crank + rod)", ("rod", "crank"))
    _, _, J, _ = joint_space_rows(swapped, np.array([0.4, 1.0]), np.zeros(2), 2)
    np.testing.assert_allclose(J, [math.cos(1.4), math.cos(1.0) + math.cos(1.4)], rtol=1e-15)


@pytest.mark.skipif(bool(os.environ.get("LIMBSTUDIO_NO_JIT")), reason="plain Python")
def test_one_kernel_signature_for_every_expression():
    texts = ["x", "sin(x) + y", "x**y * z / (1 + abs(z))", "pi", "log(1 + x*x) - sqrt(2 + y)"]
    joint_space_rows(constraint(texts[0]), np.array([0.3]), np.array([0.1]), 1)
    before = len(tape_jet.signatures)
    for text in texts:
        c = constraint(text, ("x", "y", "z"))
        joint_space_rows(c, np.array([0.3, 0.7, -0.2]), np.array([0.1, 0.2, 0.3]), 3)
        derivative_problems(c, np.array([0.3, 0.7, -0.2]))
    assert len(tape_jet.signatures) == before


# ------------------------------------------------------------------------------------------- nesting depth
def _chain(depth: int):
    """x → −x → sin(·) → 0.999·(·) → … , ``depth`` nodes deep, and its reference value and derivatives."""
    node: ast.AST = ast.Name("x", ast.Load())

    def reference(x, v):
        f, d, dd = x, v, 0.0
        for i in range(depth):
            if i % 3 == 0:
                f, d, dd = -f, -d, -dd
            elif i % 3 == 1:
                f, d, dd = math.sin(f), math.cos(f) * d, -math.sin(f) * d * d + math.cos(f) * dd
            else:
                f, d, dd = 0.999 * f, 0.999 * d, 0.999 * dd
        return f, d, dd
    for i in range(depth):
        if i % 3 == 0:
            node = ast.UnaryOp(ast.USub(), node)
        elif i % 3 == 1:
            node = ast.Call(ast.Name("sin", ast.Load()), [node], [])
        else:
            node = ast.BinOp(ast.Constant(0.999), ast.Mult(), node)
    return Expression("<built>", node, frozenset({"x"})), reference


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_a_deeply_nested_tree_compiles_without_recursion(depth):
    expr, reference = _chain(depth)
    tape = compile_tape(expr, ("x",))
    assert len(tape) == depth + 2                                        # x, 0.999 (shared) and one per node
    phi, phi_dot, phi_ddot, grad = jet(expr, ("x",), [0.7], [1.3])
    f, d, dd = reference(0.7, 1.3)
    assert (phi, phi_dot, phi_ddot) == pytest.approx((f, d, dd), rel=1e-12, abs=1e-300)
    assert grad[0] * 1.3 == pytest.approx(d, rel=1e-12)


@pytest.mark.parametrize("text", ["-" * 999 + "x", "x" + "+x" * 999, "sin(" * 150 + "x" + ")" * 150,
                                  "(" * 190 + "x" + ")" * 190, "x**" * 600 + "2"])
def test_a_deeply_nested_text_is_refused_cleanly_or_compiled(text):
    try:
        expr = parse_expression(text)
    except ExpressionError as exc:
        assert "nested" in str(exc) or "valid expression" in str(exc)
        return
    tape = compile_tape(expr, ("x",))
    assert tape.dtype == TAPE and len(tape) >= 1


# -------------------------------------------------------------------------------------- derivative_problems
def test_a_kink_of_abs_at_zero_is_reported_with_the_joints_whose_derivative_jumps():
    c = constraint("abs(x - y) + x + 2*z")
    problems = derivative_problems(c, np.array([0.7, 0.7, 1.0]))
    assert len(problems) == 2
    px, py = problems
    assert "not differentiable with respect to 'x'" in px and "from the left is 0, from the right 2" in px
    assert "not differentiable with respect to 'y'" in py and "from the left is -1, from the right 1" in py
    # within rounding of zero: 0.1 + 0.2 − 0.3 ≠ 0 in floating point, still a kink
    assert derivative_problems(constraint("abs(x - 0.3)"), np.array([0.1 + 0.2]))
    assert derivative_problems(constraint("abs(x - 0.3)"), np.array([0.3 + 1e-6])) == []


def test_abs_at_zero_without_a_jump_of_the_derivative_is_accepted():
    """|x|² and |x| y at x = y = 0 have a continuous gradient: both branches of abs give the same one."""
    assert derivative_problems(constraint("abs(x)**2"), np.array([0.0])) == []
    assert derivative_problems(constraint("abs(x) * y"), np.array([0.0, 0.0])) == []
    assert derivative_problems(constraint("abs(x) * y"), np.array([0.0, 2.0]))
    assert derivative_problems(constraint("abs(y - y) + x"), np.array([0.3, 0.5])) == []    # ∇(y − y) = 0


def test_sqrt_and_log_at_zero_are_reported():
    problems = derivative_problems(constraint("sqrt(x - 1) + y"), np.array([1.0, 0.4]))
    assert "derivative with respect to 'x' is not finite at the initial configuration (inf" in problems[0]
    # 'y' too: its derivative is 1 + inf ⋅ 0 = nan (the kernel does not assume that 0 ⋅ inf is 0: sqrt(x*x*y) at
    # x = 0 is |x| √y, whose kink in x shows only as such a nan)
    assert all("not finite" in p for p in problems) and len(problems) <= 2
    problems = derivative_problems(constraint("sqrt(x*x*y)"), np.array([0.0, 1.0]))
    assert any("with respect to 'x' is not finite" in p for p in problems)
    (problem,) = derivative_problems(constraint("log(x - 0.3) + y"), np.array([0.3, 0.4]))
    assert "value at the initial configuration is not finite" in problem
    (problem,) = derivative_problems(constraint("sqrt(x*x)"), np.array([0.0]))      # |x| in disguise
    assert "not finite" in problem


@pytest.mark.parametrize("text", [c[0] for c in CASES if "abs" not in c[0]])
def test_smooth_expressions_are_accepted(text):
    names, sample = next((c[1], c[3]) for c in CASES if c[0] == text)
    rng = np.random.default_rng(5)
    for _ in range(5):
        assert derivative_problems(constraint(text, names), sample(rng)) == []


# ------------------------------------------------------------------------------------- random expression trees
VARS = ("x", "y", "z")
_leaves = st.one_of(st.sampled_from(VARS), st.sampled_from(VARS), st.sampled_from(["pi", "2", "0.5", "1"]),
                    st.floats(-1.5, 1.5, allow_nan=False).map(lambda c: repr(round(c, 3))))


def _extend(inner):
    pair = st.tuples(inner, inner)
    return st.one_of(
        pair.map(lambda t: f"({t[0]} + {t[1]})"),
        pair.map(lambda t: f"({t[0]} - {t[1]})"),
        pair.map(lambda t: f"({t[0]} * {t[1]})"),
        pair.map(lambda t: f"({t[0]}) / (2 + cos({t[1]}))"),
        pair.map(lambda t: f"(1.5 + cos({t[0]}))**({t[1]})"),                 # a general power, base > 0
        pair.map(lambda t: f"(2 + sin({t[0]}))**cos({t[1]})"),
        inner.map(lambda a: f"sin({a})"),
        inner.map(lambda a: f"cos({a})"),
        inner.map(lambda a: f"-({a})"),
        inner.map(lambda a: f"+({a})"),
        inner.map(lambda a: f"exp(sin({a}))"),
        inner.map(lambda a: f"log(1 + ({a})*({a}))"),
        inner.map(lambda a: f"sqrt(1 + ({a})*({a}))"),
        inner.map(lambda a: f"tan(sin({a}))"),
        inner.map(lambda a: f"abs(-2 + cos({a}))"),
        st.tuples(inner, st.sampled_from(["2", "3", "-1", "0.5", "-1.5", "2.5", "(1/3)"])).map(
            lambda t: f"(2 + sin({t[0]}))**{t[1]}"),
        st.tuples(inner, st.sampled_from(["2", "3", "4"])).map(lambda t: f"(sin({t[0]}))**{t[1]}"),
    )


EXPRESSIONS = st.recursive(_leaves, _extend, max_leaves=8)
POINTS = st.tuples(*[st.floats(-1.5, 1.5, allow_nan=False)] * 3)
VELOCITIES = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(text=EXPRESSIONS, x=POINTS, v=VELOCITIES, n=st.sampled_from([2, 3]))
def test_random_expression_trees(text, x, v, n):
    names = VARS[:n]
    text = text.replace("z", "x") if n == 2 else text               # over n variables
    expr = parse_expression(text)
    x, v = np.array(x[:n]), np.array(v[:n])
    tape = compile_tape(expr, names)
    for k, row in enumerate(tape):
        if row["op"] not in (OP_CONST, OP_VAR):
            assert 0 <= row["a"] < k and row["b"] < k
    phi, phi_dot, phi_ddot, grad = jet(expr, names, x, v)
    reference = float(phi_batch(expr, names, x[:, None])[0])
    assert phi == pytest.approx(reference, rel=1e-11, abs=1e-12)
    assert phi_dot == pytest.approx(grad @ v, rel=1e-11, abs=1e-11 * (1 + np.abs(grad) @ np.abs(v)))
    gamma_fd, size = fd_gamma(expr, names, x, v)
    assert phi_ddot == pytest.approx(gamma_fd, rel=1e-6, abs=1e-6 * (1 + size))
    np.testing.assert_allclose(grad, fd_gradient(expr, names, x), rtol=1e-6, atol=1e-6 * (1 + abs(phi)))
