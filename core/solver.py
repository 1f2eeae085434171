"""Robust solution of the constraint equation A F = −B (thesis eq. 2.22, §2.3.4), compiled.

A = J M⁻¹ Jᵀ is symmetric positive semi-definite and block diagonal over groups of constraints that share no
tree (eq. 2.41: "a matrix block i, j will be zero if constraints i and j do not act on a common body"); each
group is solved on its own (:func:`core.constraints.active_layout` numbers the groups). Within a group,
A = U Σ Vᵀ and

- ``svd``: F = −V_k Σ_k⁻¹ U_kᵀ B with the k largest singular values (A is symmetric positive semi-definite, so its
  SVD is its eigen-decomposition A = Q Λ Qᵀ with σ = |λ|, computed by Jacobi rotations, whose small eigenvalues
  are accurate to ~ε‖A‖ as an SVD's are); while some constraint's force exceeds its bound (its joint strength),
  the smallest kept singular value is dropped and the solve repeated (Mitchell's iterative scheme). Singular
  values below ``rcond`` × the largest are never used.
- ``damped_least_squares``: 1/σ replaced by σ / (σ² + ρ²) (Wampler), with the same bound iteration on top, so
  that no solve can inject forces beyond the bounds into the integrator.

The residual η = A F + B measures how well the constrained acceleration was achieved (fig. 2.3).
"""
from __future__ import annotations

import numpy as np

from .jit import njit

__all__ = ["symmetric_eigen", "solve_groups", "SVD", "DAMPED_LEAST_SQUARES"]

SVD, DAMPED_LEAST_SQUARES = 0, 1


@njit
def symmetric_eigen(A, n, lam, Q):
    """A[:n, :n] = Q diag(λ) Qᵀ by cyclic Jacobi rotations (A is overwritten; eigenpairs sorted by |λ|,
    largest first)."""
    for a in range(n):
        for b in range(n):
            Q[a, b] = 1.0 if a == b else 0.0
    norm2 = 0.0
    for a in range(n):
        for b in range(n):
            norm2 += A[a, b] * A[a, b]
    for _ in range(100):
        off = 0.0
        for p in range(n):
            for r in range(p + 1, n):
                off += A[p, r] * A[p, r]
        if off <= 1e-32 * norm2 or off == 0.0:
            break
        for p in range(n - 1):
            for r in range(p + 1, n):
                apr = A[p, r]
                if apr == 0.0:
                    continue
                theta = (A[r, r] - A[p, p]) / (2.0 * apr)
                if abs(theta) > 1e150:
                    tt = 0.5 / theta
                else:
                    tt = (1.0 if theta >= 0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                cs = 1.0 / np.sqrt(tt * tt + 1.0)
                sn = tt * cs
                for k in range(n):
                    if k != p and k != r:
                        akp, akr = A[k, p], A[k, r]
                        A[k, p] = cs * akp - sn * akr
                        A[p, k] = A[k, p]
                        A[k, r] = sn * akp + cs * akr
                        A[r, k] = A[k, r]
                A[p, p] -= tt * apr
                A[r, r] += tt * apr
                A[p, r] = 0.0
                A[r, p] = 0.0
                for k in range(n):
                    qkp, qkr = Q[k, p], Q[k, r]
                    Q[k, p] = cs * qkp - sn * qkr
                    Q[k, r] = sn * qkp + cs * qkr
    for a in range(n):
        lam[a] = A[a, a]
    for a in range(n):                                        # selection sort by |λ|, descending
        best = a
        for b in range(a + 1, n):
            if abs(lam[b]) > abs(lam[best]):
                best = b
        if best != a:
            lam[a], lam[best] = lam[best], lam[a]
            for k in range(n):
                Q[k, a], Q[k, best] = Q[k, best], Q[k, a]


@njit
def solve_groups(A, B, cons, row_of, group_of, n_groups, method, rcond, rho, F, svals, idx, Ag, Q, lam, QtB, Fg):
    """A F = −B group by group with force bounds (module docstring); ``cons`` the constraint table
    (:data:`core.constraints.CONSTRAINT`: rows, basis, max_force), ``row_of``/``group_of`` from
    :func:`core.constraints.active_layout`. Returns ``(rank, dropped, min_kept, n_svals)``; ``svals[:n_svals]``
    are the singular values of A (all groups, sorted descending). ``idx`` (int), ``lam``, ``QtB``, ``Fg`` (m) and
    ``Ag``, ``Q`` (m x m) are scratch."""
    rank_total, dropped_total, min_kept, ns = 0, 0, np.inf, 0
    for g in range(n_groups):
        n = 0
        for c in range(cons.shape[0]):                        # rows of the group, in constraint order
            if group_of[c] == g:
                for b in range(cons[c].rows):
                    idx[n] = row_of[c] + b
                    n += 1
        if n == 0:
            continue
        for a in range(n):
            for b in range(n):
                Ag[a, b] = A[idx[a], idx[b]]
        symmetric_eigen(Ag, n, lam, Q)
        smax = abs(lam[0])
        k = 0
        if smax > 0:
            for a in range(n):
                if abs(lam[a]) > rcond * smax:
                    k += 1
        rank = k
        for a in range(n):
            s = 0.0
            for b in range(n):
                s += Q[b, a] * B[idx[b]]
            QtB[a] = s
        while True:
            for a in range(n):                                # F = −Q Λ_k⁺ Qᵀ B  (or damped: λ/(λ² + ρ²))
                s = 0.0
                for b in range(k):
                    inv = lam[b] / (lam[b] * lam[b] + rho * rho) if method == DAMPED_LEAST_SQUARES else 1.0 / lam[b]
                    s += Q[a, b] * inv * QtB[b]
                Fg[a] = -s
            over = False
            pos = 0
            for c in range(cons.shape[0]):                    # Mitchell: a force beyond its bound?
                if group_of[c] != g:
                    continue
                E = cons[c].basis
                f2 = 0.0
                for a in range(3):
                    fa = 0.0
                    for b in range(cons[c].rows):
                        fa += E[a, b] * Fg[pos + b]
                    f2 += fa * fa
                if np.sqrt(f2) > cons[c].max_force:
                    over = True
                pos += cons[c].rows
            if not over or k == 0:
                break
            k -= 1                                            # drop the smallest kept singular value
        for a in range(n):
            F[idx[a]] = Fg[a]
            svals[ns + a] = abs(lam[a])
        ns += n
        rank_total += rank
        dropped_total += rank - k
        if k > 0:
            min_kept = min(min_kept, abs(lam[k - 1]))
    for a in range(1, ns):                                    # all groups' singular values, descending
        x = svals[a]
        b = a - 1
        while b >= 0 and svals[b] < x:
            svals[b + 1] = svals[b]
            b -= 1
        svals[b + 1] = x
    return rank_total, dropped_total, (min_kept if np.isfinite(min_kept) else np.nan), ns
