"""The three formulations of the constrained dynamics in NumPy, on the same assembled quantities: M (CRBA),
b = C q̇ + g (RNEA), the applied forces τ, and the stacked constraint rows J, γ, D, Ḋ, stab of :mod:`oracle.rows`.

Sign convention: ``M q̈ + b = τ + Jᵀλ``; λ are the constraint forces on the constrained points (the world force
on constraint c's point a is E_c λ_c). Aghili writes M q̈ + h = f − 𝓕 with 𝓕 = Aᵀλ, so his 𝓕 is our −Jᵀλ;
McClamroch writes M q̈ + G = T + Jᵀf, as we do.

1. ``dynamic_constraints`` (Barzel–Barr; Mitchell eq. 2.21–2.24, 2.39–2.41, §2.3.4)::

       A λ = −B,   A = J M⁻¹Jᵀ,   B = J M⁻¹(τ − b) + γ + 2κḊ + κ²D,   q̈ = M⁻¹(τ − b + Jᵀλ)

   solved group by group (A is block diagonal over constraints that share no tree, eq. 2.41) through the
   eigen-decomposition of each symmetric positive semi-definite block, A = Q Λ Qᵀ (its SVD, σ = |λ|). With the k
   largest |λ| that exceed ``rcond`` x the largest, ``λ = −Q_k Λ_k⁻¹ Q_kᵀ B`` (``damped_least_squares``:
   1/λ → λ/(λ² + ρ²)); while the force of some constraint of the group exceeds its bound (‖E_c λ_c‖ > max_force),
   the smallest kept value is dropped and the solve repeated (Mitchell's iteration). Reported: all |λ| sorted,
   the rank (count above rcond), how many were dropped for the bounds, the smallest kept (NaN if none), and the
   residual η = A λ + B.
2. ``multipliers`` (McClamroch eq. 24–28): ``λ = (J M⁻¹Jᵀ)⁻¹(−J M⁻¹(τ − b) − γ − 2κḊ − κ²D)`` (eq. 26) and
   ``M q̈ = τ − b + Jᵀλ`` (eq. 27) when J has full row rank; when it has not, the reduced system of the r
   independent combinations U_rᵀJ (U_r from J's SVD): λ = U_r (U_rᵀ A U_r)⁻¹ U_rᵀ rhs (minimum norm, Remark 4).
   Reported: |eigenvalues| of A, rank r, the smallest eigenvalue of the system solved (signed), residual A λ − rhs.
3. ``projection`` (Aghili eq. 4, 15, 16, 22–32): P = I − J⁺J from J's SVD with Aghili's ε, C q̇ = −J⁺γ (eq. 16),
   ``Mc q̈ = P(τ − b) + Cc q̇`` (eq. 22) with Mc = M + PM − MP, Cc q̇ = M C q̇ (eq. 23–24); M′c = PMP + (I−P)M(I−P),
   C′c q̇ = (I − 2P) M C q̇ (eq. 27–28); M″c = PM + γ(I − P), C″c q̇ = γ C q̇, γ = ‖M‖₂ unless set (eq. 29). The
   generalized constraint force by projection, Jᵀλ = (I − P)(M q̈ + b − τ) (eq. 32 in our sign), and λ = J⁺ᵀ(Jᵀλ).
   No Baumgarte term: drift is removed after each step by :func:`project_state` — Newton–Raphson
   ``q ← q ⊕ (−J⁺Φ(q))`` (eq. 39) while ‖Φ‖ > position_tolerance (keeping the best iterate), then the velocity
   projection q̇ ← q̇ − J⁺Ḋ (q̇ ← q̇ − J⁺D for velocity rows). Reported: J's singular values, its rank by ε, the
   smallest kept singular value, residual J q̈ + γ.

Rank (every formulation's ``jacobian_rank`` and ``rank_deficient``): a singular value σ of J counts when
σ > rank_tolerance · max(σ_max(J), scale), ``scale`` the largest Jacobian scale of the active constraints.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .rows import constraint_groups, constraint_rows

FORMULATIONS = ("dynamic_constraints", "projection", "multipliers")
RANK_TOLERANCE = 1e-3

__all__ = ["Solution", "solve", "bounded_solve", "numerical_rank", "pseudo_inverse", "project_state",
           "projection_tolerance", "FORMULATIONS"]


@dataclass
class Solution:
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
    """How many singular values exceed ``tolerance · max(s[0], scale)``."""
    ref = max(float(s[0]) if s.size else 0.0, scale)
    return int(np.sum(s > tolerance * ref)) if ref > 0 else 0


def pseudo_inverse(J: np.ndarray, tolerance: float, scale: float = 0.0):
    """``(J⁺, V_r, r, σ)`` from an SVD, σ ≤ tolerance · max(σ_max, scale) treated as zero."""
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    r = numerical_rank(s, tolerance, scale)
    return Vt[:r].T @ (U[:, :r] / s[:r]).T, Vt[:r].T, r, s


def projection_tolerance(settings: dict) -> float:
    """Aghili's ε: ``projection.tolerance``, else ``rank_tolerance``."""
    return (settings.get("projection") or {}).get("tolerance") or settings.get("rank_tolerance", RANK_TOLERANCE)


def _jacobian_rank(J, scale, settings, s=None) -> tuple[int, bool]:
    if s is None:
        s = np.linalg.svd(J, compute_uv=False)
    r = numerical_rank(s, settings.get("rank_tolerance", RANK_TOLERANCE), scale)
    return r, r < J.shape[0]


# ---- the bounded group solve (Mitchell §2.3.4) ----------------------------------------------------------------

def bounded_solve(A, B, blocks, bases, bounds, groups, method="svd", rcond=1e-12, rho=1e-3):
    """Solve A λ = −B with force bounds, group by group.

    ``blocks[c]``: constraint c's rows (a slice of the full system); ``bases[c]`` its 3 x m force basis;
    ``bounds[c]`` its force bound; ``groups``: lists of constraint positions c. Returns ``(λ, η, σ (all groups,
    descending), rank, dropped, smallest kept)``."""
    if method not in ("svd", "damped_least_squares"):
        raise ValueError(f"unknown solver method {method!r}")
    dls = method == "damped_least_squares"
    A = 0.5 * (A + A.T)
    F = np.zeros(B.size)
    svals, rank_total, dropped_total, min_kept = [], 0, 0, np.inf
    for members in groups:
        idx = np.concatenate([np.arange(blocks[c].start, blocks[c].stop) for c in members])
        if idx.size == 0:
            continue
        lam, Q = np.linalg.eigh(A[np.ix_(idx, idx)])
        order = np.argsort(-np.abs(lam), kind="stable")              # by |λ|, largest first
        lam, Q = lam[order], Q[:, order]
        smax = abs(lam[0])
        rank = int(np.sum(np.abs(lam) > rcond * smax)) if smax > 0 else 0
        k = rank
        QtB = Q.T @ B[idx]
        while True:
            inv = lam[:k] / (lam[:k] ** 2 + rho * rho) if dls else 1.0 / lam[:k]
            Fg = -Q[:, :k] @ (inv * QtB[:k])
            over, pos = False, 0
            for c in members:
                mc = blocks[c].stop - blocks[c].start
                if np.linalg.norm(bases[c] @ Fg[pos:pos + mc]) > bounds[c]:
                    over = True
                pos += mc
            if not over or k == 0:
                break
            k -= 1                                                   # drop the smallest kept singular value
        F[idx] = Fg
        svals.extend(np.abs(lam))
        rank_total += rank
        dropped_total += rank - k
        if k > 0:
            min_kept = min(min_kept, abs(lam[k - 1]))
    svals = np.sort(np.array(svals, dtype=float))[::-1]
    return F, A @ F + B, svals, rank_total, dropped_total, (min_kept if np.isfinite(min_kept) else np.nan)


# ---- the formulations -------------------------------------------------------------------------------------------

def _dynamic_constraints(model, M, chol, b, tau, rows, settings) -> Solution:
    solver = settings.get("solver") or {}
    a_free = cho_solve(chol, tau - b)                                # M⁻¹(τ − b)
    MinvJt = cho_solve(chol, rows.J.T)                               # M⁻¹Jᵀ
    A = rows.J @ MinvJt                                              # A = J M⁻¹Jᵀ           (eq. 2.41)
    B = rows.J @ a_free + rows.gamma + rows.stab                     # B = β + 2κḊ + κ²D     (eq. 2.24)
    on = [i for i, s in enumerate(rows.slices) if s is not None]
    pos = {i: n for n, i in enumerate(on)}
    groups = [[pos[i] for i in g] for g in constraint_groups(model, on)]
    cons = [model.constraints[i] for i in on]
    F, eta, svals, rank, dropped, cutoff = bounded_solve(
        A, B, [rows.slices[i] for i in on], [np.asarray(c.basis, float) for c in cons],
        [float(c.max_force) for c in cons], groups, solver.get("method", "svd"), solver.get("rcond", 1e-12),
        solver.get("rho", 1e-3))
    eta = A @ F + B                                                  # η with A as assembled
    qdd = a_free + MinvJt @ F                                        # q̈ = M⁻¹(τ − b + Jᵀλ)
    jr, deficient = _jacobian_rank(rows.J, rows.scale, settings)
    return Solution(qdd, F, eta, svals, rank, dropped, cutoff, jr, deficient)


def _multipliers(model, M, chol, b, tau, rows, settings) -> Solution:
    a_free = cho_solve(chol, tau - b)
    MinvJt = cho_solve(chol, rows.J.T)
    A = rows.J @ MinvJt                                              # B M⁻¹Bᵀ                (McClamroch eq. 25)
    rhs = -(rows.J @ a_free + rows.gamma + rows.stab)                # eq. 24 + Baumgarte terms
    U, s, _ = np.linalg.svd(rows.J, full_matrices=False)
    r, deficient = _jacobian_rank(rows.J, rows.scale, settings, s)
    if not deficient:
        lam = np.linalg.solve(A, rhs)                                # eq. 26
        used = np.linalg.eigvalsh(A)
    else:                                                            # the r independent combinations U_rᵀJ
        Ur = U[:, :r]
        Ar = Ur.T @ A @ Ur
        lam = Ur @ np.linalg.solve(Ar, Ur.T @ rhs) if r else np.zeros_like(rhs)
        used = np.linalg.eigvalsh(Ar) if r else np.zeros(0)
    qdd = a_free + MinvJt @ lam                                      # eq. 27
    eig = np.sort(np.abs(np.linalg.eigvalsh(A)))[::-1]
    return Solution(qdd, lam, A @ lam - rhs, eig, r, 0, float(used.min()) if used.size else np.nan, r, deficient)


def constraint_inertia(M, P, variant="Mc", gamma=None):
    """``(Mc, K)`` with Cc q̇ = K (C q̇): Aghili eq. 23–24, 27–28, 29."""
    n = M.shape[0]
    Q = np.eye(n) - P
    if variant == "Mc":
        return M + P @ M - M @ P, M
    if variant == "Mc_symmetric":
        return P @ M @ P + Q @ M @ Q, (np.eye(n) - 2.0 * P) @ M
    if variant == "Mc_gamma":
        g = float(gamma) if gamma else float(np.linalg.norm(M, 2))
        return P @ M + g * Q, g * np.eye(n)
    raise ValueError(f"unknown constraint inertia {variant!r}")


def _projection(model, M, chol, b, tau, rows, settings) -> Solution:
    opts = settings.get("projection") or {}
    J_pinv, V, r, s = pseudo_inverse(rows.J, projection_tolerance(settings), rows.scale)
    P = np.eye(M.shape[0]) - V @ V.T                                 # P = I − J⁺J        (eq. 4, 15)
    Cqd = -J_pinv @ rows.gamma                                       # C q̇ = −J⁺ J̇q̇       (eq. 16)
    Mc, K = constraint_inertia(M, P, opts.get("variant", "Mc"), opts.get("gamma"))
    qdd = np.linalg.solve(Mc, P @ (tau - b) + K @ Cqd)               # Mc q̈ = P(τ − b) + Cc q̇   (eq. 22)
    g = M @ qdd + b - tau
    Qc = g - P @ g                                                   # Jᵀλ = (I − P)(M q̈ + b − τ)   (eq. 32)
    lam = J_pinv.T @ Qc                                              # minimum-norm λ (Remark 4)
    jr, deficient = _jacobian_rank(rows.J, rows.scale, settings, s)
    return Solution(qdd, lam, rows.J @ qdd + rows.gamma, s, r, 0, float(s[r - 1]) if r else np.nan, jr,
                    deficient)


_SOLVERS = {"dynamic_constraints": _dynamic_constraints, "multipliers": _multipliers, "projection": _projection}


def solve(formulation, model, M, b, tau, rows, settings) -> Solution:
    """q̈ and the multipliers by the named formulation (rows non-empty)."""
    if formulation not in _SOLVERS:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")
    return _SOLVERS[formulation](model, M, cho_factor(M), b, tau, rows, settings)


# ---- drift removal after a step (Aghili §6) ---------------------------------------------------------------------

def project_state(model, t, q, qd, active, nails, settings):
    """Newton–Raphson position correction (eq. 39) and velocity projection; ``(q, qd, iterations, ‖Φ‖ before)``.
    The rows are evaluated with the step's q̇ throughout; the iterate with the smallest ‖Φ‖ is kept."""
    import core
    opts = settings.get("projection") or {}
    tol = projection_tolerance(settings)
    max_iterations = opts.get("max_iterations", 20)
    position_tolerance = opts.get("position_tolerance", 1e-12)
    rows = constraint_rows(model, t, q, qd, active, nails)
    pos = ~rows.first_order
    norm = phi0 = float(np.linalg.norm(rows.D[pos]))
    iterations = 0
    while norm > position_tolerance and iterations < max_iterations:
        J_pinv = pseudo_inverse(rows.J[pos], tol, rows.scale)[0]
        q_new = core.normalize_configuration(model, core.integrate_configuration(model, q, -J_pinv @ rows.D[pos],
                                                                                 1.0))   # q ← q ⊕ (−J⁺Φ)
        rows_new = constraint_rows(model, t, q_new, qd, active, nails)
        norm_new = float(np.linalg.norm(rows_new.D[pos]))
        iterations += 1
        if not norm_new < norm:                                      # diverging or stalled: keep the best
            break
        q, rows, norm = q_new, rows_new, norm_new
    velocity_error = np.where(rows.first_order, rows.D, rows.D_rate)
    qd = qd - pseudo_inverse(rows.J, tol, rows.scale)[0] @ velocity_error
    return q, qd, iterations, phi0
