"""Three formulations of the constrained dynamics on the same assembled quantities (DESIGN.md, "One system,
several formulations"): the joint-space inertia M (with its Cholesky factor), the bias b, the applied forces τ,
and the stacked constraint rows J, γ (D̈ = J q̈ + γ), D, Ḋ and the stabilization term of :mod:`core.constraints`.

Sign convention: ``M q̈ + b = τ + Jᵀ λ``; λ are the constraint forces on the constrained points (the force
vector on a point is E λ), so Jᵀλ is the generalized constraint force.

1. ``dynamic_constraints`` (Barzel–Barr; Mitchell §2.2–2.4): A λ = −B, A = J M⁻¹Jᵀ, B = J M⁻¹(τ − b) + γ +
   2κḊ + κ²D (eq. 2.21–2.24, κ the stabilization rate), solved by SVD with force bounds (:mod:`core.solver`).
2. ``multipliers`` (McClamroch's reduction, eq. 24–28): the same A and B with Baumgarte terms, solved as a
   symmetric positive-definite system. It assumes J has full row rank; when it does not, the solution is the
   minimum-norm one and ``rank_deficient`` says so (the multipliers are then not unique).
3. ``projection`` (Aghili, eq. 15–32): P = I − J⁺J from an SVD of J (rank tolerance ``tolerance`` × σ_max),
   the normal acceleration C q̇ = −J⁺γ (eq. 16), and the direct dynamics Mc q̈ = P(τ − b) + Cc q̇ with one of
   three constraint inertia matrices (eq. 23, 28, 29); the generalized constraint force is recovered by
   projection (eq. 32: Jᵀλ = (I − P)(M q̈ + b − τ)) and λ = J⁺ᵀ(Jᵀλ), the minimum-norm multipliers (unique only
   when J has full row rank, Remark 4). No Baumgarte term: drift is removed between steps by Newton–Raphson
   position correction (eq. 39) and velocity projection (:func:`project_state`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_solve

from .solver import constraint_groups, solve_constraint_forces

FORMULATIONS = ("dynamic_constraints", "projection", "multipliers")
PROJECTION_VARIANTS = ("Mc", "Mc_symmetric", "Mc_gamma")

__all__ = ["Assembled", "Solution", "solve", "FORMULATIONS", "PROJECTION_VARIANTS", "pseudo_inverse"]


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
    settings: dict                # the scene's simulation settings (solver, projection)


@dataclass
class Solution:
    """``qdd`` (nv,), multipliers ``lam`` (m,), the acceleration-level residual (m,) of the equation the
    formulation solved, singular values (of A for dynamic constraints and multipliers, of J for projection),
    ``rank``, ``dropped`` (for force bounds), ``cutoff`` (smallest singular value used), ``jacobian_rank`` and
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


def pseudo_inverse(J: np.ndarray, tolerance: float):
    """``(J⁺, V_r, rank, singular values)`` from an SVD; singular values below tolerance × σ_max are zero."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    r = int(np.sum(s > tolerance * s[0])) if s.size and s[0] > 0 else 0
    J_pinv = Vt[:r].T @ ((U[:, :r] / s[:r]).T)
    return J_pinv, Vt[:r].T, r, s


def _jacobian_rank(J: np.ndarray, tolerance: float = 1e-9) -> int:
    s = np.linalg.svd(J, compute_uv=False)
    return int(np.sum(s > tolerance * s[0])) if s.size and s[0] > 0 else 0


def _dynamic_constraints(a: Assembled) -> Solution:
    rows, model, solver = a.rows, a.model, a.settings.get("solver", {})
    a_free = cho_solve(a.chol, a.tau - a.b)                              # M⁻¹(τ − b)
    MinvJt = cho_solve(a.chol, rows.J.T)                                 # M⁻¹Jᵀ
    A = rows.J @ MinvJt                                                  # A = J M⁻¹ Jᵀ   (eq. 2.41)
    B = rows.J @ a_free + rows.gamma + rows.stab                         # B = β + 2λḊ + λ²D  (eq. 2.24)
    cons = [model.constraints[i] for i in a.active_index]
    slices = [rows.slices[i] for i in a.active_index]
    row_ids = [np.arange(s.start, s.stop) for s in slices]
    trees = [{model.root_of(c.link_a)} | ({model.root_of(c.link_b)} if c.link_b >= 0 else set()) for c in cons]
    result = solve_constraint_forces(A, B, constraint_groups(row_ids, trees), slices, [c.basis for c in cons],
                                     [c.max_force for c in cons], method=solver.get("method", "svd"),
                                     rcond=solver.get("rcond", 1e-12), rho=solver.get("rho", 1e-3))
    qdd = a_free + MinvJt @ result.F                                     # q̈ = M⁻¹(τ − b + Jᵀ F)
    jr = _jacobian_rank(rows.J)
    return Solution(qdd, result.F, result.residual, result.singular_values, result.rank, result.dropped,
                    result.min_kept, jr, jr < rows.J.shape[0])


def _multipliers(a: Assembled) -> Solution:
    rows, solver = a.rows, a.settings.get("solver", {})
    a_free = cho_solve(a.chol, a.tau - a.b)
    MinvJt = cho_solve(a.chol, rows.J.T)
    A = rows.J @ MinvJt                                                  # B M⁻¹ Bᵀ   (McClamroch eq. 25)
    rhs = -(rows.J @ a_free + rows.gamma + rows.stab)                    # eq. 24 with Baumgarte terms
    s = np.linalg.eigvalsh(A)[::-1]
    rank = int(np.sum(s > solver.get("rcond", 1e-12) * s[0])) if s[0] > 0 else 0
    deficient = rank < A.shape[0]
    if deficient:                                                        # not unique: minimum-norm, flagged
        lam = np.linalg.lstsq(A, rhs, rcond=solver.get("rcond", 1e-12))[0]
    else:
        lam = np.linalg.solve(A, rhs)                                    # λ = (B M⁻¹ Bᵀ)⁻¹(…)   (eq. 26)
    qdd = a_free + MinvJt @ lam                                          # eq. 27
    return Solution(qdd, lam, A @ lam - rhs, np.abs(s), rank, 0, s[rank - 1] if rank else np.nan,
                    _jacobian_rank(rows.J), deficient)


def _projection(a: Assembled) -> Solution:
    rows, M = a.rows, a.M
    opts = a.settings.get("projection", {})
    n = M.shape[0]
    J_pinv, V, r, s = pseudo_inverse(rows.J, opts.get("tolerance", 1e-9))
    P = np.eye(n) - V @ V.T                                              # P = I − J⁺J   (eq. 15)
    Cqd = -J_pinv @ rows.gamma                                           # C q̇ = −J⁺ J̇q̇   (eq. 16)
    f = P @ (a.tau - a.b)
    variant = opts.get("variant", "Mc")
    if variant == "Mc":                                                  # Mc = M + PM − MP      (eq. 23–24)
        Mc, rhs = M + P @ M - M @ P, f + M @ Cqd                         # Cc = M C              (eq. 22)
    elif variant == "Mc_symmetric":                                      # M'c = PMP + (I−P)M(I−P)   (eq. 28)
        Q = np.eye(n) - P
        Mc, rhs = P @ M @ P + Q @ M @ Q, f + (np.eye(n) - 2 * P) @ (M @ Cqd)   # C'c = (I − 2P) M C  (eq. 27)
    else:                                                                # M''c = PM + γ(I − P)  (eq. 29)
        g = opts.get("gamma") or float(np.linalg.norm(M, 2))
        Mc, rhs = P @ M + g * (np.eye(n) - P), f + g * Cqd
    qdd = np.linalg.solve(Mc, rhs)
    Qc = (np.eye(n) - P) @ (M @ qdd + a.b - a.tau)                       # Jᵀλ = (I − P)(M q̈ + b − τ)  (eq. 32)
    lam = J_pinv.T @ Qc                                                  # λ = J⁺ᵀ Jᵀλ (minimum norm, Remark 4)
    return Solution(qdd, lam, rows.J @ qdd + rows.gamma, s, r, 0, s[r - 1] if r else np.nan, r,
                    r < rows.J.shape[0])


_SOLVERS = {"dynamic_constraints": _dynamic_constraints, "multipliers": _multipliers, "projection": _projection}


def solve(formulation: str, assembled: Assembled) -> Solution:
    """Accelerations and multipliers by the named formulation."""
    return _SOLVERS[formulation](assembled)


def project_state(model, t: float, q: np.ndarray, qd: np.ndarray, active, overrides, opts: dict):
    """Remove constraint drift between steps (Aghili §6): Newton–Raphson ``q ← q ⊕ (−J⁺Φ(q))`` (eq. 39) while
    ‖Φ‖ exceeds ``position_tolerance`` (at most ``max_iterations``), then project the velocity onto the
    constraint's null space, ``q̇ ← q̇ − J⁺ Ḋ`` (for velocity constraints, ``q̇ ← q̇ − J⁺ D``).

    Returns ``(q, qd, iterations, ‖Φ‖ before)``.
    """
    from .constraints import constraint_rows
    from .kinematics import integrate_configuration, normalize_configuration
    from .points import link_kinematics

    first_order = np.concatenate([np.full(c.rows, c.first_order) for c, on in zip(model.constraints, active) if on]
                                 or [np.zeros(0, bool)])
    tol = opts.get("tolerance", 1e-9)
    iterations, phi0 = 0, None
    for _ in range(opts.get("max_iterations", 20) + 1):
        rows = constraint_rows(model, link_kinematics(model, q, qd), model.constraints, active, t, overrides)
        phi = rows.D[~first_order]
        norm = float(np.linalg.norm(phi))
        phi0 = norm if phi0 is None else phi0
        if norm <= opts.get("position_tolerance", 1e-12) or iterations == opts.get("max_iterations", 20):
            break
        J_pinv = pseudo_inverse(rows.J[~first_order], tol)[0]
        q = normalize_configuration(model, integrate_configuration(model, q, -J_pinv @ phi, 1.0))   # eq. 39
        iterations += 1
    velocity_error = np.where(first_order, rows.D, rows.D_rate)
    qd = qd - pseudo_inverse(rows.J, tol)[0] @ velocity_error
    return q, qd, iterations, phi0
