"""Joint-space constraints ``Φ(q) = value`` written in a scene as an expression of hinge and slider coordinates
(Aghili §3, eq. 11 and 67: the slider condition ``y_C(q) = l (sin q1 + sin(q1 + q2)) = 0``).

A scene is pure data, never code: the expression is parsed with :mod:`ast` and only this whitelist is accepted —
numbers, the coordinate of a hinge or slider joint (by joint name), ``+ - * / **``, unary ``-`` and ``+``,
``sin cos tan sqrt exp log abs`` and ``pi``. Anything else is refused with its column in the text. Evaluation
walks the checked tree with NumPy, on a batch of configurations at once.

Rows (one per constraint; nv columns, non-zero only at the named joints)::

    D = Φ(q) − value          Ḋ = J q̇          D̈ = J q̈ + γ
    J = ∂Φ/∂q                 γ = J̇ q̇ = q̇ᵀ (∂²Φ/∂q²) q̇   (the second derivative of Φ along q̇)

J by fourth-order central differences (step ``h = 1e-3`` in the coordinate's unit, rad or m, and never below
1e-9 |q_j|: truncation ~h⁴, round-off ~ε/h; a step relative to |q| would grow with a crank's turns), γ by the
fourth-order second difference of ``s ↦ Φ(q + s u)`` along the unit direction ``u = q̇/‖q̇‖`` (step 5e-3),
times ‖q̇‖². For the slider condition J is within ~1e-12 and γ within ~2e-10 ‖q̇‖² of the exact values.
:func:`derivative_problems` checks the expression at a configuration: central differences with two step sizes,
and the one-sided derivatives from the left and the right, must agree (a kink such as ``abs(q)`` at 0, or an
expression undefined on one side, is reported). The compiler runs it at the initial configuration only: a kink
the motion reaches later is not seen (J jumps there).

The multiplier λ of a joint-space constraint is a generalized force per unit of Φ (N when Φ is a length and the
joints are hinges, as for the slider); its generalized force is ``Jᵀλ``. With no point to act on, its force
"vector" (the ``constraint_force`` column of a run) is ``(λ, 0, 0)``: the constraint's basis is the 3 x 1 unit
vector ``e_x``, so the magnitude recorded is |λ| and the force bound ``max_force`` bounds |λ|.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np

JOINT_SPACE = 5

FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
             "abs": np.abs}
CONSTANTS = {"pi": float(np.pi)}
MAX_LENGTH = 2000
_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
_UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}
_E_X = np.array([[1.0], [0.0], [0.0]])
_E_X.setflags(write=False)

__all__ = ["JOINT_SPACE", "FUNCTIONS", "CONSTANTS", "ExpressionError", "Expression", "parse_expression",
           "JointSpaceConstraint", "joint_space_rows", "derivative_problems"]


class ExpressionError(ValueError):
    """An expression outside the whitelist; ``column`` is where in the text (1-based), or None."""

    def __init__(self, message: str, column: int | None = None):
        self.column = column
        super().__init__(message if column is None else f"{message} (at column {column})")


def _where(node) -> int | None:
    return getattr(node, "col_offset", -1) + 1 or None


def _describe(node) -> str:
    names = {ast.Attribute: "attribute access", ast.Subscript: "indexing", ast.Compare: "a comparison",
             ast.BoolOp: "a boolean operator", ast.IfExp: "a conditional", ast.Lambda: "a lambda",
             ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set",
             ast.NamedExpr: "an assignment", ast.JoinedStr: "a string", ast.Starred: "unpacking"}
    if isinstance(node, ast.BinOp):
        return f"the operator {type(node.op).__name__}"
    if isinstance(node, ast.UnaryOp):
        return f"the unary operator {type(node.op).__name__}"
    if isinstance(node, ast.Constant):
        return f"the constant {node.value!r} (only numbers are allowed)"
    return names.get(type(node), type(node).__name__)


@dataclass(frozen=True, eq=False)
class Expression:
    """A checked expression: its text, the checked syntax tree and the joint names it reads."""
    text: str
    tree: ast.AST
    names: frozenset

    def evaluate(self, values: dict) -> np.ndarray:
        """Φ at the coordinates ``values`` (name → float or array; arrays evaluate a batch at once)."""
        return _evaluate(self.tree, values)


def parse_expression(text: str) -> Expression:
    """Parse ``text`` and check it against the whitelist; raises :class:`ExpressionError` saying what and where.

    Which names are joints is checked later, against the scene (:meth:`Expression.names`)."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("must be a non-empty expression")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"is too long ({len(text)} characters; at most {MAX_LENGTH})")
    lead = len(text) - len(text.lstrip())
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"is not a valid expression: {exc.msg}",
                              None if exc.offset is None else exc.offset + lead) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError("is nested too deeply or cannot be parsed") from None
    names: set[str] = set()
    try:
        _check(tree, names)
    except ExpressionError as exc:
        if exc.column is None or not lead:
            raise
        raise ExpressionError(str(exc).rsplit(" (at column", 1)[0], exc.column + lead) from None
    return Expression(text, tree, frozenset(names))


def _check(node, names: set) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"may not contain {_describe(node)}", _where(node))
        if not np.isfinite(float(node.value)):
            raise ExpressionError("numbers must be finite", _where(node))
    elif isinstance(node, ast.Name):
        if node.id in FUNCTIONS:
            raise ExpressionError(f"'{node.id}' is a function: call it, as in {node.id}(x)", _where(node))
        if node.id not in CONSTANTS:
            names.add(node.id)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, names)
        _check(node.right, names)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, names)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else _describe(node.func)
            raise ExpressionError(f"may call only {', '.join(FUNCTIONS)}; not {what}", _where(node))
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise ExpressionError(f"{node.func.id}() takes exactly one argument", _where(node))
        _check(node.args[0], names)
    else:
        raise ExpressionError(f"may not contain {_describe(node)}; allowed are numbers, joint names, pi, "
                              f"+ - * / **, and {', '.join(FUNCTIONS)}", _where(node))


def _evaluate(node, values: dict):
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return CONSTANTS[node.id] if node.id in CONSTANTS else values[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, values))
    return FUNCTIONS[node.func.id](_evaluate(node.args[0], values))          # a checked Call


# ------------------------------------------------------------------------------------------ the constraint
@dataclass(frozen=True, eq=False)
class JointSpaceConstraint:
    """A compiled joint-space constraint ``Φ(q) = value`` (one row).

    ``names`` are the joints the expression reads, ``q_index`` / ``v_index`` their entries in q and q̇ (hinges
    and sliders: one each), ``links`` the links those joints move (for grouping the constraint with their
    trees). ``stabilization``, ``max_force`` (bound on |λ|) and ``max_deviation`` (bound on |D|, in Φ's unit)
    mean what they mean for a point constraint. ``jacobian_scale`` is the size of J used as the floor of the
    rank test (see :mod:`core.formulations`)."""
    name: str
    entity: str
    expression: Expression
    names: tuple
    q_index: np.ndarray
    v_index: np.ndarray
    links: tuple
    value: float
    stabilization: float
    max_force: float
    max_deviation: float
    enabled: bool = True
    jacobian_scale: float = 1.0
    kind: int = JOINT_SPACE
    link_a: int = -1
    link_b: int = -1
    r_a: np.ndarray = field(default_factory=lambda: np.zeros(3))
    r_b: np.ndarray = field(default_factory=lambda: np.zeros(3))
    path: tuple | None = None

    rows = 1
    first_order = False

    @property
    def basis(self) -> np.ndarray:
        """``e_x`` (3 x 1): the multiplier is reported as the force vector (λ, 0, 0)."""
        return _E_X

    def phi(self, x: np.ndarray) -> np.ndarray:
        """Φ at joint coordinates ``x`` (n,) or a batch ``x`` (n, k), n = len(names)."""
        return np.asarray(self.expression.evaluate(dict(zip(self.names, x))), dtype=float)


_H_J = 1e-3          # ≈ ε^(1/5): fourth-order first differences
_H_G = 5e-3          # fourth-order second differences: round-off ~ε/s², truncation ~s⁴


def _steps(x: np.ndarray, h: float) -> np.ndarray:
    return np.maximum(h, 1e-9 * np.abs(x))


def _gradient(c: JointSpaceConstraint, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """∂Φ/∂x by the fourth-order central difference (−f(2h) + 8f(h) − 8f(−h) + f(−2h)) / 12h, one batch."""
    n = x.size
    offsets = np.array([2.0, 1.0, -1.0, -2.0])
    X = np.repeat(x[:, None], 4 * n, axis=1)
    for j in range(n):
        X[j, 4 * j:4 * j + 4] += offsets * h[j]
    f = c.phi(X).reshape(n, 4)
    return (-f[:, 0] + 8.0 * f[:, 1] - 8.0 * f[:, 2] + f[:, 3]) / (12.0 * h)


def joint_space_rows(c: JointSpaceConstraint, q: np.ndarray, qd: np.ndarray, nv: int):
    """``(D, Ḋ, J row (nv,), γ)`` of one joint-space constraint at (q, q̇)."""
    x, v = q[c.q_index], qd[c.v_index]
    n = x.size
    grad = _gradient(c, x, _steps(x, _H_J))
    speed = float(np.linalg.norm(v))
    if speed > 0.0:                                       # γ = ‖v‖² d²/ds² Φ(x + s u),  u = v/‖v‖
        s = _H_G
        u = v / speed
        X = x[:, None] + np.outer(u, s * np.array([2.0, 1.0, 0.0, -1.0, -2.0]))
        f = c.phi(X)
        d = f[2] - c.value
        gamma = speed ** 2 * (-f[0] + 16.0 * f[1] - 30.0 * f[2] + 16.0 * f[3] - f[4]) / (12.0 * s * s)
    else:
        d, gamma = float(c.phi(x)) - c.value, 0.0
    J = np.zeros(nv)
    np.add.at(J, c.v_index, grad)
    return float(d), float(grad @ v), J, float(gamma)


def derivative_problems(c: JointSpaceConstraint, q: np.ndarray, tolerance: float = 1e-5) -> list[str]:
    """What is wrong with differentiating Φ at q (an empty list if nothing): Φ or J not finite, central
    differences with steps h and 2h that disagree, or one-sided derivatives from the left and the right that
    disagree (a kink), each beyond ``tolerance`` × (1 + |∂Φ/∂q_j|)."""
    x = q[c.q_index]
    with np.errstate(all="ignore"):
        f0 = float(c.phi(x))
        if not np.isfinite(f0):
            return [f"the expression's value at the initial configuration is not finite ({f0})"]
        h = _steps(x, _H_J)
        g1, g2 = _gradient(c, x, h), _gradient(c, x, 2.0 * h)
        problems = []
        for j, name in enumerate(c.names):
            if not (np.isfinite(g1[j]) and np.isfinite(g2[j])):
                problems.append(f"the expression's derivative with respect to {name!r} is not finite at the initial "
                                "configuration (the expression is undefined next to it)")
                continue
            e = np.zeros_like(x)
            e[j] = h[j]
            ahead = c.phi(np.column_stack([x + e, x + 2 * e]))
            behind = c.phi(np.column_stack([x - e, x - 2 * e]))
            right = (-3.0 * f0 + 4.0 * ahead[0] - ahead[1]) / (2.0 * h[j])      # one-sided, second order
            left = (3.0 * f0 - 4.0 * behind[0] + behind[1]) / (2.0 * h[j])
            scale = tolerance * (1.0 + abs(g1[j]))
            if abs(g1[j] - g2[j]) > scale:
                problems.append(f"the expression's derivative with respect to {name!r} is not well defined at the "
                                f"initial configuration: central differences with steps {h[j]:.1e} and {2 * h[j]:.1e} "
                                f"disagree ({g1[j]:.9g} vs {g2[j]:.9g})")
            elif not (np.isfinite(left) and np.isfinite(right)) or abs(right - left) > 1e2 * scale:
                problems.append(f"the expression is not differentiable with respect to {name!r} at the initial "
                                f"configuration: the derivative from the left is {left:.6g}, from the right "
                                f"{right:.6g}")
    return problems
