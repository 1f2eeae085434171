"""Joint-space constraints ``Φ(q) = value`` written in a scene as an expression of hinge and slider coordinates
(Aghili §3, eq. 11 and 67: the slider condition ``y_C(q) = l (sin q1 + sin(q1 + q2)) = 0``).

A scene is pure data, never code: the expression is parsed with :mod:`ast` and only this whitelist is accepted —
numbers, the coordinate of a hinge or slider joint (by joint name), ``+ - * / **``, unary ``-`` and ``+``,
``sin cos tan sqrt exp log abs`` and ``pi``. Anything else is refused with its column in the text; nothing is
ever ``eval``-ed. :meth:`Expression.evaluate` walks the checked tree with NumPy, on a batch of configurations at
once.

Rows (one per constraint; nv columns, non-zero only at the named joints)::

    D = Φ(q) − value          Ḋ = J q̇          D̈ = J q̈ + γ
    J = ∂Φ/∂q                 γ = J̇ q̇ = q̇ᵀ (∂²Φ/∂q²) q̇   (the second derivative of Φ along q̇)

J and γ are exact (to rounding): the checked tree is compiled once into a flat program, the *tape*
(:func:`compile_tape`, a :data:`TAPE` array: one instruction per register, each reading earlier registers, a
joint variable or a constant; sub-expressions without joints are folded into constants, identical
sub-expressions share a register, ``u ** c`` with a constant exponent c is its own op), and the compiled kernel
:func:`tape_jet` runs it in forward-mode Taylor arithmetic: every register carries the value f, the first and
second derivatives f', f'' along ``t ↦ q + q̇ t`` and the gradient ∇f over the constraint's joints, so Φ, Φ̇ = J q̇,
γ = Φ̈ and J come out of one pass. The kernel has one signature for every scene (a tape, ints and float arrays),
so no expression ever triggers a recompile; the compiled step runs all joint-space constraints' tapes back to
back (:func:`core.constraints.constraint_table`).

:func:`derivative_problems` checks the expression at a configuration on the same tape: a value or a derivative
that is not finite (``sqrt`` or ``log`` at 0, a power of 0 with an exponent below 1, ...), and a kink: an
``abs`` whose argument is zero there while moving with the joints, whose two branches give different
derivatives (reported as the derivatives from the left and from the right). The compiler runs it at the initial
configuration only: a kink the motion reaches later is not seen (J jumps there).

The multiplier λ of a joint-space constraint is a generalized force per unit of Φ (N when Φ is a length and the
joints are hinges, as for the slider); its generalized force is ``Jᵀλ``. With no point to act on, its force
"vector" (the ``constraint_force`` column of a run) is ``(λ, 0, 0)``: the constraint's basis is the 3 x 1 unit
vector ``e_x``, so the magnitude recorded is |λ| and the force bound ``max_force`` bounds |λ|.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np

from .jit import njit

JOINT_SPACE = 5

FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
             "abs": np.abs}
CONSTANTS = {"pi": float(np.pi)}
MAX_LENGTH = 2000
_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide, ast.Pow: np.power}
_UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}
_E_X = np.array([[1.0], [0.0], [0.0]])
_E_X.setflags(write=False)

__all__ = ["JOINT_SPACE", "FUNCTIONS", "CONSTANTS", "MAX_LENGTH", "ExpressionError", "Expression", "parse_expression",
           "JointSpaceConstraint", "joint_space_rows", "derivative_problems", "TAPE", "compile_tape", "tape_jet",
           "OP_CONST", "OP_VAR", "OP_ADD", "OP_SUB", "OP_MUL", "OP_DIV", "OP_POW", "OP_POWC", "OP_NEG", "OP_SIN",
           "OP_COS", "OP_TAN", "OP_SQRT", "OP_EXP", "OP_LOG", "OP_ABS", "OP_NAMES"]


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
    except RecursionError:                           # e.g. 1000 unary minus signs: parsed, but too deep to walk
        raise ExpressionError("is nested too deeply") from None
    return Expression(text, tree, frozenset(names))


def _check(node, names: set) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"may not contain {_describe(node)}", _where(node))
        try:
            finite = np.isfinite(float(node.value))
        except OverflowError:                        # an integer literal beyond the float range
            finite = False
        if not finite:
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


# ------------------------------------------------------------------------------------------------ the tape
#: One instruction of a compiled expression: instruction k of a program computes register k (registers are
#: numbered from the program's first instruction) from the registers ``a`` and ``b`` (< k), loads the joint
#: variable ``a`` (OP_VAR), the constant ``value`` (OP_CONST), or raises register ``a`` to the constant power
#: ``value`` (OP_POWC). Unused fields are −1 (indices) and 0.0. The program's result is its last register.
TAPE = np.dtype([("op", np.int64), ("a", np.int64), ("b", np.int64), ("value", np.float64)], align=True)

OP_CONST, OP_VAR = 0, 1                                          # leaves
OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW = 2, 3, 4, 5, 6            # binary: registers a and b
OP_POWC, OP_NEG = 7, 8                                           # register a (and the exponent in value)
OP_SIN, OP_COS, OP_TAN, OP_SQRT, OP_EXP, OP_LOG, OP_ABS = 9, 10, 11, 12, 13, 14, 15      # functions of register a
OP_NAMES = {OP_CONST: "const", OP_VAR: "var", OP_ADD: "add", OP_SUB: "sub", OP_MUL: "mul", OP_DIV: "div",
            OP_POW: "pow", OP_POWC: "powc", OP_NEG: "neg", OP_SIN: "sin", OP_COS: "cos", OP_TAN: "tan",
            OP_SQRT: "sqrt", OP_EXP: "exp", OP_LOG: "log", OP_ABS: "abs"}
_BINARY_OP = {ast.Add: OP_ADD, ast.Sub: OP_SUB, ast.Mult: OP_MUL, ast.Div: OP_DIV, ast.Pow: OP_POW}
_FUNCTION_OP = {"sin": OP_SIN, "cos": OP_COS, "tan": OP_TAN, "sqrt": OP_SQRT, "exp": OP_EXP, "log": OP_LOG,
                "abs": OP_ABS}
_UNARY_OPS = frozenset({OP_POWC, OP_NEG, *_FUNCTION_OP.values()})
_BINARY_OPS = frozenset(_BINARY_OP.values())


class _Program:
    """The instructions emitted so far; identical instructions share one register."""

    def __init__(self):
        self.rows: list[tuple] = []
        self.seen: dict = {}

    def emit(self, op: int, a: int = -1, b: int = -1, value: float = 0.0) -> int:
        key = (op, a, b, float(value).hex())                     # hex: keeps −0.0 apart from 0.0
        k = self.seen.get(key)
        if k is None:
            k = self.seen[key] = len(self.rows)
            self.rows.append((op, a, b, value))
        return k

    def register(self, item) -> int:
        """The register of an operand: ``("r", k)`` already is one; a folded constant ``("c", value)`` is loaded."""
        kind, x = item
        return x if kind == "r" else self.emit(OP_CONST, value=x)


def compile_tape(expression: Expression, names: tuple[str, ...]) -> np.ndarray:
    """The :data:`TAPE` program of a checked ``expression`` over the variables ``names`` (OP_VAR j reads
    ``names[j]``; names the expression does not read are allowed). Sub-expressions without variables are folded
    into constants (computed as :meth:`Expression.evaluate` computes them, with NumPy), ``pi`` is a constant,
    unary ``+`` emits nothing, ``a ** c`` with a constant exponent c is OP_POWC. The walk is iterative (post-order,
    an explicit stack), so nesting depth is limited only by memory. Raises :class:`ExpressionError` for a name
    not in ``names`` or a node outside the whitelist."""
    index = {name: j for j, name in enumerate(names)}
    program = _Program()
    stack: list = [(expression.tree, False)]
    out: list = []                                               # operands: ("c", value) or ("r", register)
    with np.errstate(all="ignore"):
        while stack:
            node, children_done = stack.pop()
            if isinstance(node, ast.Constant):
                if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                    raise ExpressionError(f"may not contain {_describe(node)}", _where(node))
                out.append(("c", float(node.value)))
            elif isinstance(node, ast.Name):
                if node.id in CONSTANTS:
                    out.append(("c", CONSTANTS[node.id]))
                elif node.id in index:
                    out.append(("r", program.emit(OP_VAR, index[node.id])))
                else:
                    raise ExpressionError(f"reads {node.id!r}, which is not one of its variables "
                                          f"({', '.join(names) or 'none'})", _where(node))
            elif isinstance(node, ast.BinOp) and type(node.op) in _BINARY_OP:
                if not children_done:
                    stack += [(node, True), (node.right, False), (node.left, False)]     # left is walked first
                    continue
                right, left = out.pop(), out.pop()
                if left[0] == "c" and right[0] == "c":
                    out.append(("c", float(_BINARY[type(node.op)](left[1], right[1]))))
                elif isinstance(node.op, ast.Pow) and right[0] == "c":
                    out.append(("r", program.emit(OP_POWC, program.register(left), value=right[1])))
                else:
                    a = program.register(left)
                    out.append(("r", program.emit(_BINARY_OP[type(node.op)], a, program.register(right))))
            elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
                if not children_done:
                    stack += [(node, True), (node.operand, False)]
                    continue
                operand = out.pop()
                if isinstance(node.op, ast.UAdd):
                    out.append(operand)
                elif operand[0] == "c":
                    out.append(("c", float(np.negative(operand[1]))))
                else:
                    out.append(("r", program.emit(OP_NEG, operand[1])))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTION_OP
                  and len(node.args) == 1 and not node.keywords):
                if not children_done:
                    stack += [(node, True), (node.args[0], False)]
                    continue
                operand = out.pop()
                if operand[0] == "c":
                    out.append(("c", float(FUNCTIONS[node.func.id](operand[1]))))
                else:
                    out.append(("r", program.emit(_FUNCTION_OP[node.func.id], operand[1])))
            else:
                raise ExpressionError(f"may not contain {_describe(node)}", _where(node))
        (result,) = out
        last = program.register(result)
    # The root is emitted last: a register stands for one expression, and no instruction inside an expression can
    # repeat the instruction of the whole expression (a folded constant root is the only instruction).
    assert last == len(program.rows) - 1
    tape = np.zeros(len(program.rows), TAPE)
    for k, row in enumerate(program.rows):
        tape[k] = row
    return tape


# ------------------------------------------------------------------------------------------ the constraint
@dataclass(frozen=True, eq=False)
class JointSpaceConstraint:
    """A compiled joint-space constraint ``Φ(q) = value`` (one row).

    ``names`` are the joints the expression reads, ``q_index`` / ``v_index`` their entries in q and q̇ (hinges
    and sliders: one each), ``links`` the links those joints move (for grouping the constraint with their
    trees). ``stabilization``, ``max_force`` (bound on |λ|) and ``max_deviation`` (bound on |D|, in Φ's unit)
    mean what they mean for a point constraint. ``jacobian_scale`` is the size of J used as the floor of the
    rank test (see :mod:`core.formulations`). ``tape`` is the expression's program over ``names``
    (:func:`compile_tape`; compiled on construction when not given)."""
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
    tape: np.ndarray = field(default_factory=lambda: np.zeros(0, TAPE))

    rows = 1
    first_order = False

    def __post_init__(self):
        """Every constraint carries its program: compiled here from ``expression`` over ``names`` unless given."""
        if len(self.tape) == 0:
            object.__setattr__(self, "tape", compile_tape(self.expression, tuple(self.names)))

    @property
    def basis(self) -> np.ndarray:
        """``e_x`` (3 x 1): the multiplier is reported as the force vector (λ, 0, 0)."""
        return _E_X

    def phi(self, x: np.ndarray) -> np.ndarray:
        """Φ at joint coordinates ``x`` (n,) or a batch ``x`` (n, k), n = len(names)."""
        return np.asarray(self.expression.evaluate(dict(zip(self.names, x))), dtype=float)


# ------------------------------------------------------------------------------------------ the Taylor kernel
@njit(error_model="numpy")                   # x/0 is ±inf or nan, as in NumPy, not a ZeroDivisionError
def tape_jet(tape, start, length, x, v, val, d1, d2, grad):
    """Φ(x), Φ̇ = ∇Φ·v, Φ̈ = vᵀ∇²Φ v and ∇Φ (over the n variables) of tape[start:start+length]
    evaluated at x (n,) moving with velocity v (n,), i.e. the Taylor coefficients of t ↦ Φ(x + v t)
    at t = 0 and the gradient. val, d1, d2 (≥ length,) and grad (≥ length, ≥ n) are scratch registers.
    Returns (phi, phi_dot, phi_ddot); grad[length - 1, :n] holds ∇Φ.

    Register k holds (f, f', f'', ∇f) of its sub-expression: the value, the first and second derivatives along
    t and the gradient over the variables (n = len(x); a variable the program does not read gets 0). A unary
    w = F(u) applies the chain rule with F' and F'' at u: w' = F' u', w'' = F'' u'² + F' u'', ∇w = F' ∇u.
    Exact to rounding; allocates nothing. A register that is not finite propagates nan or inf (0 ⋅ inf = nan)."""
    n = x.shape[0]
    for k in range(length):
        ins = tape[start + k]
        op = ins["op"]
        a = ins["a"]
        b = ins["b"]
        if op == OP_CONST:                                       # (c, 0, 0, 0)
            val[k] = ins["value"]
            d1[k] = 0.0
            d2[k] = 0.0
            for j in range(n):
                grad[k, j] = 0.0
            continue
        if op == OP_VAR:                                         # (x_a, v_a, 0, e_a)
            val[k] = x[a]
            d1[k] = v[a]
            d2[k] = 0.0
            for j in range(n):
                grad[k, j] = 0.0
            grad[k, a] = 1.0
            continue
        if op == OP_ADD:                                         # w = a + b, componentwise
            val[k] = val[a] + val[b]
            d1[k] = d1[a] + d1[b]
            d2[k] = d2[a] + d2[b]
            for j in range(n):
                grad[k, j] = grad[a, j] + grad[b, j]
            continue
        if op == OP_SUB:                                         # w = a − b, componentwise
            val[k] = val[a] - val[b]
            d1[k] = d1[a] - d1[b]
            d2[k] = d2[a] - d2[b]
            for j in range(n):
                grad[k, j] = grad[a, j] - grad[b, j]
            continue
        if op == OP_MUL:                                         # w = ab: w' = a'b + ab', w'' = a''b + 2a'b' + ab''
            fa, fb, pa, pb = val[a], val[b], d1[a], d1[b]
            val[k] = fa * fb
            d1[k] = pa * fb + fa * pb
            d2[k] = d2[a] * fb + 2.0 * pa * pb + fa * d2[b]
            for j in range(n):                                   # ∇w = b ∇a + a ∇b
                grad[k, j] = grad[a, j] * fb + fa * grad[b, j]
            continue
        if op == OP_DIV:
            # w = a/b, r = 1/b: from a = w b, w' = (a' − w b') r, w'' = (a'' − 2w'b' − w b'') r
            fb, pb = val[b], d1[b]
            r = 1.0 / fb
            w = val[a] / fb
            w1 = (d1[a] - w * pb) * r
            val[k] = w
            d1[k] = w1
            d2[k] = (d2[a] - 2.0 * w1 * pb - w * d2[b]) * r
            for j in range(n):                                   # ∇w = (∇a − w ∇b) r
                grad[k, j] = (grad[a, j] - w * grad[b, j]) * r
            continue
        if op == OP_POW:
            # w = a^b = exp(b log a), a > 0:  L = log a, L' = a'/a, L'' = (a'' − a'L')/a;  p = b L,
            # p' = b'L + bL', p'' = b''L + 2b'L' + bL'';  w' = w p', w'' = w (p'' + p'²), ∇w = w (L ∇b + (b/a) ∇a)
            fa, fb, pa, pb = val[a], val[b], d1[a], d1[b]
            w = fa ** fb
            L = np.log(fa)
            L1 = pa / fa
            L2 = (d2[a] - pa * L1) / fa
            p1 = pb * L + fb * L1
            p2 = d2[b] * L + 2.0 * pb * L1 + fb * L2
            val[k] = w
            d1[k] = w * p1
            d2[k] = w * (p2 + p1 * p1)
            ba = fb / fa
            for j in range(n):
                grad[k, j] = w * (L * grad[b, j] + ba * grad[a, j])
            continue
        if op == OP_NEG:                                         # w = −u, componentwise
            val[k] = -val[a]
            d1[k] = -d1[a]
            d2[k] = -d2[a]
            for j in range(n):
                grad[k, j] = -grad[a, j]
            continue
        # w = F(u) with F' = f1, F'' = f2 at u; then the chain rule below
        u = val[a]
        if op == OP_POWC:                                        # w = u^c: F' = c u^(c−1), F'' = c(c−1) u^(c−2)
            c = ins["value"]
            if c == 0.0:                                         # u⁰ = 1 (also at u = 0)
                w, f1, f2 = 1.0, 0.0, 0.0
            elif c == 1.0:
                w, f1, f2 = u, 1.0, 0.0
            else:
                w = u ** c
                f1 = c * u ** (c - 1.0)
                f2 = c * (c - 1.0) * u ** (c - 2.0)
        elif op == OP_SIN:                                       # w = sin u: F' = cos u, F'' = −sin u
            w = np.sin(u)
            f1 = np.cos(u)
            f2 = -w
        elif op == OP_COS:                                       # w = cos u: F' = −sin u, F'' = −cos u
            w = np.cos(u)
            f1 = -np.sin(u)
            f2 = -w
        elif op == OP_TAN:                                       # w = tan u: F' = 1 + w², F'' = 2w(1 + w²)
            w = np.tan(u)
            f1 = 1.0 + w * w
            f2 = 2.0 * w * f1
        elif op == OP_SQRT:                                      # w = √u: F' = 1/(2w), F'' = −1/(4w³) = −F'²/w
            w = np.sqrt(u)
            f1 = 0.5 / w
            f2 = -f1 * f1 / w
        elif op == OP_EXP:                                       # w = eᵘ: F' = F'' = w
            w = np.exp(u)
            f1 = w
            f2 = w
        elif op == OP_LOG:                                       # w = log u: F' = 1/u, F'' = −1/u²
            w = np.log(u)
            f1 = 1.0 / u
            f2 = -f1 * f1
        elif op == OP_ABS:                                       # w = |u|: F' = sign u (0 at 0), F'' = 0
            w = abs(u)
            f1 = 1.0 if u > 0.0 else (-1.0 if u < 0.0 else 0.0)
            f2 = 0.0
        else:                                                    # not an op code
            w, f1, f2 = np.nan, np.nan, np.nan
        pu = d1[a]
        val[k] = w                                               # w' = F' u', w'' = F'' u'² + F' u'', ∇w = F' ∇u
        d1[k] = f1 * pu
        d2[k] = f2 * pu * pu + f1 * d2[a]
        for j in range(n):
            grad[k, j] = f1 * grad[a, j]
    last = length - 1
    return val[last], d1[last], d2[last]


def _jet(c: JointSpaceConstraint, x: np.ndarray, v: np.ndarray, tape: np.ndarray | None = None):
    """``(phi, phi_dot, phi_ddot, val, grad)`` of ``c``'s tape (or ``tape``) at x moving with v."""
    tape = c.tape if tape is None else tape
    length, n = len(tape), x.size
    val, d1, d2 = np.empty(length), np.empty(length), np.empty(length)
    grad = np.empty((length, n))
    with np.errstate(all="ignore"):
        phi, phi_dot, phi_ddot = tape_jet(tape, 0, length, x, v, val, d1, d2, grad)
    return float(phi), float(phi_dot), float(phi_ddot), val, grad


def _gather(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=float)[index], dtype=float)


def joint_space_rows(c: JointSpaceConstraint, q: np.ndarray, qd: np.ndarray, nv: int):
    """``(D, Ḋ, J row (nv,), γ)`` of one joint-space constraint at (q, q̇): D = Φ − value, Ḋ = J q̇,
    J = ∂Φ/∂q, γ = J̇ q̇ = q̇ᵀ (∂²Φ/∂q²) q̇, exact (one pass of :func:`tape_jet`)."""
    x, v = _gather(q, c.q_index), _gather(qd, c.v_index)
    phi, phi_dot, phi_ddot, _, grad = _jet(c, x, v)
    J = np.zeros(nv)
    np.add.at(J, c.v_index, grad[-1])
    return phi - c.value, phi_dot, J, phi_ddot


def _operands(row) -> tuple:
    op = int(row["op"])
    if op in _BINARY_OPS:
        return int(row["a"]), int(row["b"])
    return (int(row["a"]),) if op in _UNARY_OPS else ()


def _cone(tape: np.ndarray, k: int) -> np.ndarray:
    """The registers that register k is computed from (k included)."""
    used = np.zeros(len(tape), bool)
    used[k] = True
    for r in range(k, -1, -1):
        if used[r]:
            used[list(_operands(tape[r]))] = True
    return used


def derivative_problems(c: JointSpaceConstraint, q: np.ndarray, tolerance: float = 1e-5) -> list[str]:
    """What is wrong with differentiating Φ at q (an empty list if nothing), from its exact derivatives:

    * Φ not finite (then nothing else is checked);
    * ∂Φ/∂q_j not finite (``sqrt`` or ``log`` at 0, a power of 0 below 1, ...);
    * a kink: an ``abs(u)`` with u within 1e-9 (1 + scale) of 0 (scale: the largest magnitude among the registers
      u is computed from) while ∇u ≠ 0. Φ's gradient is computed with ``abs`` replaced by each of its branches,
      +u and −u; a joint whose two derivatives differ by more than ``tolerance`` × (1 + their magnitude) is
      reported, with the derivatives from the left and from the right."""
    x = _gather(q, c.q_index)
    phi, _, _, val, grad = _jet(c, x, np.zeros_like(x))
    if not np.isfinite(phi):
        return [f"the expression's value at the initial configuration is not finite ({phi})"]
    problems = []
    g = grad[-1]
    finite = np.isfinite(g)
    for j in np.flatnonzero(~finite):
        why = "infinite, e.g. sqrt or log at 0" if np.isinf(g[j]) else "undefined, e.g. 0 ⋅ inf from sqrt at 0"
        problems.append(f"the expression's derivative with respect to {c.names[j]!r} is not finite at the initial "
                        f"configuration ({g[j]}: {why})")
    kinked = set()
    for k in np.flatnonzero(c.tape["op"] == OP_ABS):
        a = int(c.tape[k]["a"])
        scale = float(np.max(np.abs(val[_cone(c.tape, a)]), initial=0.0))
        if not (abs(val[a]) <= 1e-9 * (1.0 + scale) and np.any(grad[a] != 0.0)):
            continue
        branches = []
        for op, value in ((OP_POWC, 1.0), (OP_NEG, 0.0)):       # abs(u) → u (u¹), abs(u) → −u
            tape = c.tape.copy()
            tape[k] = (op, a, -1, value)
            branches.append(_jet(c, x, np.zeros_like(x), tape)[4][-1])
        plus, minus = branches
        for j in np.flatnonzero(finite & (grad[a] != 0.0)):
            jump = abs(plus[j] - minus[j])
            if j in kinked or not jump > tolerance * (1.0 + max(abs(plus[j]), abs(minus[j]))):
                continue
            kinked.add(j)
            right, left = (plus[j], minus[j]) if grad[a, j] > 0.0 else (minus[j], plus[j])
            problems.append(f"the expression is not differentiable with respect to {c.names[j]!r} at the initial "
                            f"configuration (an abs() of something that is 0 there): the derivative from the left is "
                            f"{left:.6g}, from the right {right:.6g}")
    return problems
