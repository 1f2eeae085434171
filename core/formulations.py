"""Three formulations of the constrained dynamics on the same assembled quantities (DESIGN.md, "One system,
several formulations"): the joint-space inertia M (with its Cholesky factor), the bias b, the applied forces τ,
and the stacked constraint rows J, γ (D̈ = J q̈ + γ), D, Ḋ and the stabilization term of :mod:`core.constraints`.

Sign convention: ``M q̈ + b = τ + Jᵀ λ``; λ are the constraint forces on the constrained points (the force
vector on a point is E λ), so Jᵀλ is the generalized constraint force. (Aghili writes M q̈ + h = f − ℱ with
ℱ = Aᵀλ: his ℱ is our −Jᵀλ; McClamroch writes M q̈ + G = T + Jᵀf, as we do.)

1. ``dynamic_constraints`` (Barzel–Barr; Mitchell §2.2–2.4): A λ = −B, A = J M⁻¹Jᵀ, B = J M⁻¹(τ − b) + γ +
   2κḊ + κ²D (eq. 2.21–2.24, κ the stabilization rate), solved by SVD with force bounds (:mod:`core.solver`).
2. ``multipliers`` (McClamroch's reduction, eq. 24–28): the same A and right-hand side with the Baumgarte terms,
   ``λ = (J M⁻¹ Jᵀ)⁻¹(−J M⁻¹(τ − b) − γ − 2κḊ − κ²D)`` (eq. 26), then ``M q̈ = τ − b + Jᵀλ`` (eq. 27). The
   reduction assumes J has full row rank; when it has not (see *Rank* below), A is singular or so ill-conditioned
   that λ would be noise amplified by 1/σ². Then the formulation says so (``rank_deficient``, a
   ``rank_deficient`` event in a run) and, instead of producing garbage, solves the reduced system of the r
   independent combinations Uᵣᵀ J of the rows (Uᵣ from the SVD of J): λ = Uᵣ λᵣ is the minimum-norm multiplier
   (the indeterminate part, Remark 4, set to zero) and the dropped directions are not enforced at that instant.
3. ``projection`` (Aghili, eq. 15–32): P = I − J⁺J from an SVD of J (eq. 4, 15), the normal acceleration
   C q̇ = −J⁺γ (eq. 16; γ includes the rheonomic terms of moving nails), and the direct dynamics
   Mc q̈ = P(τ − b) + Cc q̇ (eq. 22) with one of three constraint inertia matrices: Mc = M + PM − MP, Cc = MC
   (eq. 23–24); M′c = PMP + (I−P)M(I−P), C′c = (I − 2P)MC (eq. 27–28); M″c = PM + γ(I − P), C″c = γC with
   γ = ‖M‖₂ unless set (eq. 29). The generalized constraint force is recovered by projection (eq. 32, in our
   sign: Jᵀλ = (I − P)(M q̈ + b − τ)) and λ = J⁺ᵀ(Jᵀλ), the minimum-norm multipliers — unique only when J has
   full row rank (Remark 4). No Baumgarte term: drift is removed between steps by the Newton–Raphson position
   correction q ← q ⊕ (−J⁺Φ(q)) (eq. 39) and a velocity projection (:func:`project_state`).

Rank
----
One rule for "how many independent constraint rows": J = U Σ Vᵀ, and a singular value σᵢ counts when

    σᵢ > tolerance · σ_ref,      σ_ref = max(σ_max(J), scale)

where ``scale`` is the largest Jacobian scale of the active constraints (the norm of each constraint's rows at
the initial configuration, :mod:`core.constraints`). Relative to σ_max alone, the rule finds redundant rows
(three collinear hinges, a planar loop's out-of-plane row) at any size of the mechanism; the floor ``scale`` is
needed because a lone row whose Jacobian passes through zero (the slider-crank at q1 = π/2, where A = l c₁[2 1])
has σ = σ_max and would never look singular to a purely relative test — that is Aghili's absolute ε of eq. 70.
Tolerances:

- ``simulation.rank_tolerance`` (default 1e-3): the rank every formulation reports (``jacobian_rank``,
  ``rank_deficient``) and the one the multipliers formulation relies on. At 1e-3 the condition number of
  A = J M⁻¹Jᵀ relative to its scale stays below ~1e6.
- ``projection.tolerance`` (default: ``simulation.rank_tolerance``): Aghili's ε for P and J⁺ in the projection
  formulation and its Newton–Raphson and velocity corrections. Below it the direction is "virtually removed"
  (eq. 70: P = I at the slider-crank singularity). It must not be tiny: P itself stays a bounded projector
  however small σ gets, but C q̇ = −J⁺γ and the recovered λ = J⁺ᵀJᵀλ divide the integration error by σ (and
  λ by σ²). With ε = 1e-9 an RK4 step that lands 1.6e-5 rad from the slider-crank singularity recovers a
  slider force of 8e4 N (the physical one stays below 26 N) and jumps the energy by 1.6e-5 J; with 1e-3 the
  force stays physical and the energy drift over 5 s is 8e-9 J.
- ``solver.rcond`` (default 1e-12): the dynamic-constraints SVD of A, relative to each group's largest singular
  value (thesis §2.3.4), with the force bounds doing the rest.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve

from .solver import constraint_groups, solve_constraint_forces

FORMULATIONS = ("dynamic_constraints", "projection", "multipliers")
PROJECTION_VARIANTS = ("Mc", "Mc_symmetric", "Mc_gamma")
RANK_TOLERANCE = 1e-3

__all__ = ["Assembled", "Solution", "solve", "assemble", "FORMULATIONS", "PROJECTION_VARIANTS", "pseudo_inverse",
           "numerical_rank", "projector", "constraint_inertia", "project_state", "RANK_TOLERANCE"]


@dataclass
class Assembled:
    """What every formulation starts from at one state (nv dofs, m active constraint rows)."""
    model: object
    M: np.ndarray
    chol: tuple
    b: np.ndarray
    tau: np.ndarray
    rows: object                  # core.constraints.ConstraintRows
    active_index: list            # constraint indices that have rows
    settings: dict                # the scene's simulation settings (solver, projection, rank_tolerance)


@dataclass
class Solution:
    """``qdd`` (nv,), multipliers ``lam`` (m,), the acceleration-level residual (m,) of the equation the
    formulation solved, singular values (of A for dynamic constraints and multipliers, of J for projection),
    ``rank`` (the rank the formulation used), ``dropped`` (for force bounds), ``cutoff`` (smallest singular value
    used), ``jacobian_rank`` (J's rank by ``simulation.rank_tolerance``, the same rule for every formulation) and
    ``rank_deficient`` (J lost row rank: the multipliers are not unique)."""
    qdd: np.ndarray
    lam: np.ndarray
    residual: np.ndarray
    singular_values: np.ndarray
    rank: int
    dropped: int
    cutoff: float
    jacobian_rank: int
    rank_deficient: bool


def numerical_rank(s: np.ndarray, tolerance: float, scale: float = 0.0) -> int:
    """How many of the singular values ``s`` (descending) exceed ``tolerance · max(s[0], scale)``."""
    ref = max(float(s[0]) if s.size else 0.0, scale)
    return int(np.sum(s > tolerance * ref)) if ref > 0 else 0


def pseudo_inverse(J: np.ndarray, tolerance: float, scale: float = 0.0):
    """``(J⁺, V_r, rank, singular values)`` from an SVD; singular values at or below tolerance · σ_ref are zero
    (σ_ref = max(σ_max, scale), see the module's *Rank*)."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    r = numerical_rank(s, tolerance, scale)
    J_pinv = Vt[:r].T @ ((U[:, :r] / s[:r]).T)
    return J_pinv, Vt[:r].T, r, s


def projector(J: np.ndarray, tolerance: float = RANK_TOLERANCE, scale: float = 0.0) -> np.ndarray:
    """P = I − J⁺J = V₂V₂ᵀ, the orthogonal projector onto the null space of J (Aghili eq. 4, 15)."""
    _, V, _, _ = pseudo_inverse(J, tolerance, scale)
    return np.eye(J.shape[1]) - V @ V.T


def constraint_inertia(M: np.ndarray, P: np.ndarray, variant: str = "Mc", gamma: float | None = None):
    """``(Mc, K)``: the constraint inertia matrix of ``variant`` and the matrix K with Cc q̇ = K (C q̇) (eq. 22).

    ``Mc``: M + PM − MP, K = M (eq. 23–24); ``Mc_symmetric``: PMP + (I−P)M(I−P), K = (I − 2P)M (eq. 27–28);
    ``Mc_gamma``: PM + γ(I − P), K = γI with γ = ‖M‖₂ by default (eq. 29)."""
    n = M.shape[0]
    Q = np.eye(n) - P
    if variant == "Mc":
        return M + P @ M - M @ P, M
    if variant == "Mc_symmetric":
        return P @ M @ P + Q @ M @ Q, (np.eye(n) - 2.0 * P) @ M
    if variant == "Mc_gamma":
        g = float(gamma) if gamma else float(np.linalg.norm(M, 2))
        return P @ M + g * Q, g * np.eye(n)
    raise ValueError(f"unknown constraint inertia {variant!r}; choose one of {', '.join(PROJECTION_VARIANTS)}")


def _jacobian_rank(a: Assembled, s: np.ndarray | None = None) -> tuple[int, bool]:
    """J's rank by ``simulation.rank_tolerance`` (module *Rank*), and whether it is below the row count."""
    J = a.rows.J
    if s is None:
        s = np.linalg.svd(J, compute_uv=False)
    r = numerical_rank(s, a.settings.get("rank_tolerance", RANK_TOLERANCE), a.rows.scale)
    return r, r < J.shape[0]


def _dynamic_constraints(a: Assembled) -> Solution:
    from .constraints import constraint_links
    rows, model, solver = a.rows, a.model, a.settings.get("solver", {})
    a_free = cho_solve(a.chol, a.tau - a.b)                              # M⁻¹(τ − b)
    MinvJt = cho_solve(a.chol, rows.J.T)                                 # M⁻¹Jᵀ
    A = rows.J @ MinvJt                                                  # A = J M⁻¹ Jᵀ   (eq. 2.41)
    B = rows.J @ a_free + rows.gamma + rows.stab                         # B = β + 2λḊ + λ²D  (eq. 2.24)
    cons = [model.constraints[i] for i in a.active_index]
    slices = [rows.slices[i] for i in a.active_index]
    row_ids = [np.arange(s.start, s.stop) for s in slices]
    trees = [{model.root_of(k) for k in constraint_links(c)} for c in cons]
    result = solve_constraint_forces(A, B, constraint_groups(row_ids, trees), slices, [c.basis for c in cons],
                                     [c.max_force for c in cons], method=solver.get("method", "svd"),
                                     rcond=solver.get("rcond", 1e-12), rho=solver.get("rho", 1e-3))
    qdd = a_free + MinvJt @ result.F                                     # q̈ = M⁻¹(τ − b + Jᵀ F)
    jr, deficient = _jacobian_rank(a)
    return Solution(qdd, result.F, result.residual, result.singular_values, result.rank, result.dropped,
                    result.min_kept, jr, deficient)


def _multipliers(a: Assembled) -> Solution:
    rows = a.rows
    a_free = cho_solve(a.chol, a.tau - a.b)                              # M⁻¹(τ − b)
    MinvJt = cho_solve(a.chol, rows.J.T)
    A = rows.J @ MinvJt                                                  # A = B M⁻¹ Bᵀ   (McClamroch eq. 25)
    rhs = -(rows.J @ a_free + rows.gamma + rows.stab)                    # eq. 24 with the Baumgarte terms
    U, s, _ = np.linalg.svd(rows.J, full_matrices=False)
    r, deficient = _jacobian_rank(a, s)
    if not deficient:
        lam = np.linalg.solve(A, rhs)                                    # λ = (B M⁻¹ Bᵀ)⁻¹(…)   (eq. 26)
        used = np.linalg.eigvalsh(A)
    else:                                                                # reduced: the r independent rows Uᵣᵀ J
        Ur = U[:, :r]
        Ar = Ur.T @ A @ Ur
        lam = Ur @ np.linalg.solve(Ar, Ur.T @ rhs) if r else np.zeros_like(rhs)
        used = np.linalg.eigvalsh(Ar) if r else np.zeros(0)
    qdd = a_free + MinvJt @ lam                                          # M q̈ = τ − b + Jᵀλ   (eq. 27)
    eig = np.sort(np.abs(np.linalg.eigvalsh(A)))[::-1]
    return Solution(qdd, lam, A @ lam - rhs, eig, r, 0, float(used.min()) if used.size else np.nan, r, deficient)


def _projection(a: Assembled) -> Solution:
    rows, M = a.rows, a.M
    opts = a.settings.get("projection", {})
    J_pinv, V, r, s = pseudo_inverse(rows.J, _projection_tolerance(opts, a.settings), rows.scale)
    P = np.eye(M.shape[0]) - V @ V.T                                     # P = I − J⁺J   (eq. 4, 15)
    Cqd = -J_pinv @ rows.gamma                                           # C q̇ = −J⁺ J̇q̇   (eq. 16)
    Mc, K = constraint_inertia(M, P, opts.get("variant", "Mc"), opts.get("gamma"))
    qdd = np.linalg.solve(Mc, P @ (a.tau - a.b) + K @ Cqd)              # Mc q̈ = P(τ − b) + Cc q̇   (eq. 22, 27)
    Qc = (M @ qdd + a.b - a.tau) - P @ (M @ qdd + a.b - a.tau)           # Jᵀλ = (I − P)(M q̈ + b − τ)   (eq. 32)
    lam = J_pinv.T @ Qc                                                  # λ = J⁺ᵀ Jᵀλ (minimum norm, Remark 4)
    jr, deficient = _jacobian_rank(a, s)
    return Solution(qdd, lam, rows.J @ qdd + rows.gamma, s, r, 0, s[r - 1] if r else np.nan, jr, deficient)


def assemble(model, t: float, q: np.ndarray, qd: np.ndarray, active=None, tau: np.ndarray | None = None,
             overrides=None) -> Assembled:
    """The quantities every formulation starts from at (t, q, q̇): M and its Cholesky factor, b (Coriolis,
    centrifugal and gravity), the given joint forces ``tau`` (default zero; force elements are applied by
    :func:`core.dynamics.evaluate`, not here) and the rows of the ``active`` constraints (default: all)."""
    from scipy.linalg import cho_factor

    from .constraints import constraint_rows
    from .crba import mass_matrix
    from .points import link_kinematics
    from .rnea import nonlinear_effects
    K = len(model.constraints)
    active = np.ones(K, bool) if active is None else np.asarray(active, bool)
    rows = constraint_rows(model, link_kinematics(model, q, qd), model.constraints, active, t, overrides,
                           q=q, qd=qd)
    M = mass_matrix(model, q)
    return Assembled(model, M, cho_factor(M), nonlinear_effects(model, q, qd),
                     np.zeros(model.nv) if tau is None else np.asarray(tau, float), rows,
                     [i for i in range(K) if rows.slices[i] is not None], dict(model.settings))


def _projection_tolerance(opts: dict, settings: dict) -> float:
    """Aghili's ε: ``projection.tolerance``, or ``simulation.rank_tolerance`` when that is not set."""
    return opts.get("tolerance") or settings.get("rank_tolerance", RANK_TOLERANCE)


_SOLVERS = {"dynamic_constraints": _dynamic_constraints, "multipliers": _multipliers, "projection": _projection}


def solve(formulation: str, assembled: Assembled) -> Solution:
    """Accelerations and multipliers by the named formulation."""
    if formulation not in _SOLVERS:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")
    return _SOLVERS[formulation](assembled)


def project_state(model, t: float, q: np.ndarray, qd: np.ndarray, active, overrides, opts: dict):
    """Remove constraint drift between steps (Aghili §6): Newton–Raphson ``q ← q ⊕ (−J⁺Φ(q))`` (eq. 39) while
    ‖Φ‖ exceeds ``position_tolerance`` (at most ``max_iterations``; the iterate with the smallest ‖Φ‖ is kept, so
    a step that does not converge never makes things worse), then project the velocity onto the constraint's
    null space, ``q̇ ← q̇ − J⁺ Ḋ`` (for velocity constraints, ``q̇ ← q̇ − J⁺ D``). J⁺ is Aghili's pseudo-inverse
    with ``opts["tolerance"]`` (module *Rank*); the corrections are minimum-norm in the Euclidean metric of q̇.

    Returns ``(q, qd, iterations, ‖Φ‖ before)``.
    """
    from .constraints import constraint_rows
    from .kinematics import integrate_configuration, normalize_configuration
    from .points import link_kinematics

    def rows_at(q):
        return constraint_rows(model, link_kinematics(model, q, qd), model.constraints, active, t, overrides,
                               q=q, qd=qd)

    first_order = np.concatenate([np.full(c.rows, c.first_order) for c, on in zip(model.constraints, active) if on]
                                 or [np.zeros(0, bool)])
    tol = _projection_tolerance(opts, model.settings)
    max_iterations = opts.get("max_iterations", 20)
    rows = rows_at(q)
    norm = phi0 = float(np.linalg.norm(rows.D[~first_order]))
    iterations = 0
    while norm > opts.get("position_tolerance", 1e-12) and iterations < max_iterations:
        J_pinv = pseudo_inverse(rows.J[~first_order], tol, rows.scale)[0]
        q_new = normalize_configuration(model, integrate_configuration(model, q, -J_pinv @ rows.D[~first_order],
                                                                       1.0))   # q ← q − J⁺Φ(q)   (eq. 39)
        rows_new = rows_at(q_new)
        norm_new = float(np.linalg.norm(rows_new.D[~first_order]))
        iterations += 1
        if not norm_new < norm:                                          # diverging or stalled: keep the best
            break
        q, rows, norm = q_new, rows_new, norm_new
    velocity_error = np.where(first_order, rows.D, rows.D_rate)
    qd = qd - pseudo_inverse(rows.J, tol, rows.scale)[0] @ velocity_error
    return q, qd, iterations, phi0
