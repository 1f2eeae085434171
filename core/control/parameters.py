"""Which parameters a Slotine–Li controller adapts: the *parameterization* of ``τ_r = Y(q, q̇, q̇_r, q̈_r) a``
(thesis eq. 3.17: "the parameters â correspond to sums and products of inertial constants").

Every parameterization is a linear image of the ten standard inertial parameters of every link, θ (10N,;
:func:`core.control.regressor.inertial_parameters`; named ``<body>.<p>`` with p one of
``m hx hy hz Ixx Iyy Izz Ixy Ixz Iyz``: the mass, the first moment h = m c and the rotational inertia about the
link's origin, so ``Izz = I_c,zz + m (c_x² + c_y²)``; a body welded to a link by fixed joints is merged into it
by the compiler, so its mass is part of that link's parameters):

    a = C θ          (the adapted parameters: n_p of them)
    Y_p = Y_in K + Y_g K_g        with  Y_p C θ = Y θ for the arm's true θ

where ``Y_in`` is the regressor without gravity and ``Y_g`` its gravity part (Y is linear in the base
acceleration −g, so Y = Y_in + Y_g). Three kinds:

- ``standard``: a = θ, K = K_g = C = 1 (10 per link).
- ``base``: the identifiable base parameters β of the chain, computed numerically as in Gautier's method: the
  regressor stacked at random states, W, is factored by QR with column pivoting, W Π = Q R; its numerical rank r
  is the number of base parameters; the r pivot columns are kept (K = K_g = Π₁, Y_b = Y Π₁) and
  ``β = P_b θ``, ``P_b Π = [1, R₁₁⁻¹ R₁₂]``, so that Y θ = Y_b β for every θ (C = P_b). Which parameters are
  identifiable depends on whether gravity is in Y: without it, e.g., a planar arm's first-link mass moments
  disappear.
- ``custom``: a scene writes each adapted parameter as a linear expression of named standard parameters, one
  set for M q̈_r + C q̇_r (``inertial``) and, optionally, one for g(q) (``gravity``, used only when gravity is
  modelled), as Slotine & Li's a1…a4 and a5…a7. Then K = [C_in⁺, 0], K_g = [0, C_g⁺] (K_g = K without a
  gravity set); the compiler checks that the expressions are linear, independent and able to represent the
  arm's own torques (Y_in (1 − C_in⁺C_in) θ = 0 at random states, and the same for gravity).

The adaptation law is the same for all: ``â̇ = −η Γ Y_pᵀ s`` (eq. 3.21 with a gain matrix). Because
Y_std = Y_p C on the arm, the standard law's loop equals a parameterization's law with Γ_p = C Cᵀ (and two
parameterizations a = T b give the same closed loop when Γ_a = T Γ_b Tᵀ): a parameterization *is* a choice of
adaptation gain.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..model import Model
from .regressor import PARAMETER_NAMES, inertial_parameters, regressor

__all__ = ["Parameterization", "standard_names", "standard_parameterization", "base_parameterization",
           "custom_parameterization", "parse_linear", "random_states", "describe", "ParameterizationError"]

_RANK_TOLERANCE = 1e-9          # |R_ii| / |R_00| below this is a dependent column
_ZERO = 1e-10                   # entries of the maps below this (relative) are printed and kept as zero


class ParameterizationError(ValueError):
    """A custom parameterization that cannot be used; ``key`` names the parameter (or None for the whole)."""

    def __init__(self, message: str, key: str | None = None):
        self.key = key
        super().__init__(message)


@dataclass(frozen=True, eq=False)
class Parameterization:
    """The adapted parameters a = C θ and the regressor maps K (inertial part) and K_g (gravity part) with
    ``Y_p = Y_in K + Y_g K_g`` (see the module docstring). ``names`` are the n_p parameters' names, ``rank`` the
    number of base parameters of the arm (with the gravity setting the map was made for)."""
    kind: str
    names: tuple[str, ...]
    C: np.ndarray
    K: np.ndarray
    K_gravity: np.ndarray
    rank: int
    expressions: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def split(self) -> bool:
        """Whether the gravity part has its own parameters (K_g ≠ K)."""
        return not (self.K_gravity is self.K or np.array_equal(self.K_gravity, self.K))

    def of(self, theta: np.ndarray) -> np.ndarray:
        """a = C θ: the parameters of an arm whose standard parameters are θ."""
        return self.C @ theta

    def regressor(self, model: Model, q, qd, qdr, qddr, gravity) -> np.ndarray:
        """Y_p (nv x n_p) at one state (NumPy; the compiled law forms the same product)."""
        g = np.asarray(gravity, dtype=float)
        zeros = np.zeros(model.nv)
        Y_in = regressor(model, q, qd, qdr, qddr, np.zeros(3))
        Y_g = regressor(model, q, zeros, zeros, zeros, g)
        return Y_in @ self.K + Y_g @ self.K_gravity


def standard_names(model: Model) -> tuple[str, ...]:
    """``<body>.<p>`` for every link and each of its ten parameters, in θ's order."""
    return tuple(f"{b}.{p}" for b in model.link_names for p in PARAMETER_NAMES)


def random_states(model: Model, count: int, seed: int = 0):
    """``count`` random (q, q̇, q̇_r, q̈_r): hinge and slider coordinates uniform in [−π, π], unit quaternions,
    free-joint positions and every velocity standard normal (a fixed seed: the maps are reproducible)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        for s in model.quat_starts:
            u = rng.normal(size=4)
            q[s:s + 4] = u / np.linalg.norm(u)
        out.append((q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)))
    return out


def _samples(model: Model) -> int:
    return max(12, (3 * 10 * model.n_links) // max(model.nv, 1) + 12)


def _stacked(model: Model, gravity, seed: int = 0) -> np.ndarray:
    g = np.asarray(gravity, dtype=float)
    return np.vstack([regressor(model, q, qd, qdr, qddr, g) for q, qd, qdr, qddr in
                      random_states(model, _samples(model), seed)])


def _clean(A: np.ndarray) -> np.ndarray:
    A = np.array(A, dtype=float)
    A[np.abs(A) < _ZERO * max(1.0, np.abs(A).max(initial=0.0))] = 0.0
    return A


def standard_parameterization(model: Model, gravity) -> Parameterization:
    n = 10 * model.n_links
    eye = np.eye(n)
    W = _stacked(model, gravity)
    rank = int(np.linalg.matrix_rank(W, tol=_RANK_TOLERANCE * max(np.linalg.norm(W, 2), 1e-300)))
    return Parameterization("standard", standard_names(model), eye, eye, eye, rank)


def base_parameterization(model: Model, gravity, seed: int = 0) -> Parameterization:
    """The base parameters (Gautier's numerical method, see the module docstring) for the regressor with
    ``gravity`` (zeros: gravity unmodelled)."""
    from scipy.linalg import qr, solve_triangular

    names = standard_names(model)
    n = len(names)
    W = _stacked(model, gravity, seed)
    _, R, piv = qr(W, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > _RANK_TOLERANCE * d[0])) if d.size and d[0] > 0 else 0
    P = np.zeros((r, n))
    P[:, piv[:r]] = np.eye(r)
    if r < n:
        P[:, piv[r:]] = solve_triangular(R[:r, :r], R[:r, r:n])
    K = np.zeros((n, r))
    K[piv[:r], np.arange(r)] = 1.0
    order = np.argsort(piv[:r])                         # base parameters in θ's order of their pivot column
    P, K = _clean(P[order]), K[:, order]
    labels = tuple(f"b{k + 1}" for k in range(r))
    exprs = tuple(_combination(P[k], names) for k in range(r))
    return Parameterization("base", labels, P, K, K, r, exprs)


# ---- custom: linear expressions of named standard parameters ---------------------------------------------------

_REFERENCE = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_\-]*)\.(" + "|".join(PARAMETER_NAMES) + r")\b")


def parse_linear(text: str, model: Model) -> np.ndarray:
    """The row c (10N,) with ``text`` = c · θ: ``text`` is an expression of the safe language of joint-space
    constraints (:func:`core.joint_constraints.parse_expression`) whose names are standard parameters
    ``<body>.<p>``; it must be linear in them (no constant term). Raises :class:`ParameterizationError`."""
    from ..joint_constraints import ExpressionError, parse_expression

    names = standard_names(model)
    index = {nm: k for k, nm in enumerate(names)}
    used: dict[str, int] = {}

    def swap(m):
        key = f"{m.group(1)}.{m.group(2)}"
        if m.group(1) in model.frames:                  # welded to a link: its mass is part of the link's
            link = model.link_names[model.link_index(m.group(1))]
            raise ParameterizationError(f"body {m.group(1)!r} in {key!r} is fixed to {link!r} and merged into "
                                        f"its parameters: write {link}.{m.group(2)}; bodies with parameters: "
                                        + ", ".join(model.link_names))
        if m.group(1) not in model.link_names:
            raise ParameterizationError(f"unknown body {m.group(1)!r} in {key!r}; bodies: "
                                        + ", ".join(model.link_names))
        used.setdefault(key, len(used))
        return f"__p{used[key]}"

    if not isinstance(text, str):
        raise ParameterizationError("must be an expression (a string)")
    plain = _REFERENCE.sub(swap, text)
    other = re.search(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_\-]*)\.([A-Za-z_][A-Za-z0-9_]*)", plain)
    if other:
        raise ParameterizationError(f"{other.group(0)!r} is not a standard parameter; write <body>.<p> with p one "
                                    f"of {' '.join(PARAMETER_NAMES)}")
    try:
        expr = parse_expression(plain)
    except ExpressionError as exc:
        message = str(exc).replace("joint names", "standard parameters <body>.<p>")
        raise ParameterizationError(f"the expression {message}") from None
    stray = sorted(n for n in expr.names if not n.startswith("__p"))
    if stray:
        raise ParameterizationError(f"{', '.join(map(repr, stray))} is not a standard parameter; write "
                                    f"<body>.<p> with p one of {' '.join(PARAMETER_NAMES)} (e.g. "
                                    f"{model.link_names[0]}.Izz)")
    keys = list(used)
    k = len(keys)

    def f(x):
        with np.errstate(all="ignore"):
            return np.asarray(expr.evaluate({f"__p{j}": x[j] for j in range(k)}), dtype=float)

    f0 = f(np.zeros(k))
    coef = np.array([f(e) - f0 for e in np.eye(k)]).reshape(k) if k else np.zeros(0)
    rng = np.random.default_rng(12345)
    probes = rng.normal(size=(4, k)) * 3.0
    values = [f(x) for x in probes]
    scale = max(1.0, np.abs(coef).max(initial=0.0))
    if not (np.all(np.isfinite(coef)) and np.isfinite(f0) and all(np.isfinite(v) for v in values)):
        raise ParameterizationError("the expression is not finite for all parameter values (a division by a "
                                    "parameter, a log or a square root?): it must be linear")
    if abs(float(f0)) > 1e-12 * scale:
        raise ParameterizationError(f"the expression has a constant term ({float(f0):g}); it must be a linear "
                                    "combination of standard parameters")
    if any(abs(float(v) - coef @ x) > 1e-9 * scale * (1.0 + np.abs(x).sum()) for v, x in zip(values, probes)):
        raise ParameterizationError("the expression is not linear in the standard parameters (a product of "
                                    "two parameters, or a function of one?)")
    row = np.zeros(len(names))
    for j, key in enumerate(keys):
        row[index[key]] += coef[j]
    return row


def _rows(section: dict, model: Model, where: str) -> np.ndarray:
    rows = []
    for name, text in section.items():
        try:
            rows.append(parse_linear(text, model))
        except ParameterizationError as exc:
            raise ParameterizationError(str(exc), f"{where}.{name}") from None
    C = np.array(rows).reshape(len(rows), 10 * model.n_links)
    if C.shape[0]:
        rank = np.linalg.matrix_rank(C, tol=1e-10 * max(np.abs(C).max(), 1e-300))
        if rank < C.shape[0]:
            for k, name in enumerate(section):                # the first row that depends on the earlier ones
                if np.linalg.matrix_rank(C[:k + 1], tol=1e-10 * max(np.abs(C).max(), 1e-300)) <= k:
                    raise ParameterizationError("is a linear combination of the parameters before it (it adds "
                                                "nothing to adapt); leave it out", f"{where}.{name}")
    return C


def _residual(model: Model, Y_of, C: np.ndarray, theta: np.ndarray) -> float:
    """max |Y (1 − C⁺C) θ| / max |Y θ| over random states: how much of the arm's torque the parameters miss."""
    miss = theta - np.linalg.pinv(C) @ (C @ theta) if C.shape[0] else theta
    worst, scale = 0.0, 0.0
    for state in random_states(model, _samples(model), seed=7):
        Y = Y_of(*state)
        worst = max(worst, float(np.abs(Y @ miss).max(initial=0.0)))
        scale = max(scale, float(np.abs(Y @ theta).max(initial=0.0)))
    return worst / scale if scale > 0 else 0.0


def custom_parameterization(model: Model, inertial: dict, gravity_terms: dict | None, gravity) -> Parameterization:
    """The parameters of a scene's ``custom`` section (see the module docstring): ``inertial`` name →
    expression for M q̈_r + C q̇_r; ``gravity_terms`` name → expression for g(q), used only when ``gravity`` (the
    gravity the controller models) is not zero. Raises :class:`ParameterizationError` naming the parameter."""
    if not inertial:
        raise ParameterizationError("give at least one parameter", "inertial")
    g = np.asarray(gravity, dtype=float)
    modelled = bool(np.any(g != 0.0))
    C_in = _rows(inertial, model, "inertial")
    names = list(inertial)
    exprs = [inertial[k] for k in inertial]
    theta = inertial_parameters(model)
    zeros, g0 = np.zeros(model.nv), np.zeros(3)
    miss = _residual(model, lambda q, qd, qdr, qddr: regressor(model, q, qd, qdr, qddr, g0), C_in, theta)
    if miss > 1e-9:
        raise ParameterizationError(f"these parameters cannot represent the arm's inertial torques M q̈_r + C q̇_r "
                                    f"(they miss {miss:.3g} of them, relative): a combination the dynamics depend on "
                                    "is absent (compare `python -m core parameters SCENE`, base)", "inertial")
    n = 10 * model.n_links
    if modelled and gravity_terms:
        dup = sorted(set(gravity_terms) & set(inertial))
        if dup:
            raise ParameterizationError(f"{', '.join(dup)} is named in inertial too", f"gravity.{dup[0]}")
        C_g = _rows(gravity_terms, model, "gravity")
        miss = _residual(model, lambda q, qd, qdr, qddr: regressor(model, q, zeros, zeros, zeros, g), C_g, theta)
        if miss > 1e-9:
            raise ParameterizationError(f"these parameters cannot represent the arm's gravity torques g(q) (they "
                                        f"miss {miss:.3g} of them, relative)", "gravity")
        p_in, p_g = C_in.shape[0], C_g.shape[0]
        K = np.zeros((n, p_in + p_g))
        K_g = np.zeros((n, p_in + p_g))
        K[:, :p_in] = np.linalg.pinv(C_in)
        K_g[:, p_in:] = np.linalg.pinv(C_g)
        C = np.vstack([C_in, C_g])
        names += list(gravity_terms)
        exprs += [gravity_terms[k] for k in gravity_terms]
    else:
        if modelled:
            miss = _residual(model, lambda q, qd, qdr, qddr: regressor(model, q, zeros, zeros, zeros, g), C_in,
                             theta)
            if miss > 1e-9:
                raise ParameterizationError(f"gravity is modelled but these parameters cannot represent the arm's "
                                            f"gravity torques (they miss {miss:.3g} of them); add a gravity set",
                                            "inertial")
        C = C_in
        K = K_g = np.linalg.pinv(C_in)
    rank = base_parameterization(model, g).rank
    return Parameterization("custom", tuple(names), _clean(C), _clean(K), _clean(K_g) if K_g is not K else
                            _clean(K), rank, tuple(exprs))


# ---- the report of `python -m core parameters` ------------------------------------------------------------------

def _combination(row: np.ndarray, names) -> str:
    terms = []
    for c, nm in zip(row, names):
        if c == 0.0:
            continue
        mag = abs(c)
        coef = "" if abs(mag - 1.0) < 1e-12 else f"{mag:.6g}·"
        terms.append(("− " if c < 0 else "+ ") + coef + nm)
    if not terms:
        return "0"
    text = " ".join(terms)
    return text[2:] if text.startswith("+ ") else "−" + text[2:]


def describe(p: Parameterization, model: Model, eta: float | None = None, gamma: np.ndarray | None = None) -> str:
    """The parameters as sums and products of the named link constants, with their values on this arm, and the
    adaptation gain η Γ when ``eta`` is given."""
    names = standard_names(model)
    theta = inertial_parameters(model)
    a = p.of(theta)
    lines = [f"{p.kind}: {p.size} adapted parameter(s); the arm has {p.rank} base (identifiable) parameter(s)"]
    width = max(len(n) for n in p.names)
    for k, nm in enumerate(p.names):
        src = f"   [{p.expressions[k]}]" if p.kind == "custom" else ""
        lines.append(f"  {nm:<{width}} = {_combination(p.C[k], names)}  = {a[k]:.6g}{src}")
    if eta is None:
        return "\n".join(lines)
    G = eta * (np.eye(p.size) if gamma is None else gamma)
    if np.allclose(G, G[0, 0] * np.eye(p.size)):
        lines.append(f"  Γ = {G[0, 0]:.6g}·1")
    elif np.allclose(G, np.diag(np.diag(G))):
        lines.append("  Γ = diag(" + ", ".join(f"{v:.6g}" for v in np.diag(G)) + ")")
    else:
        lines.append("  Γ =")
        lines += ["    [" + ", ".join(f"{v:.6g}" for v in row) + "]" for row in G]
    return "\n".join(lines)
