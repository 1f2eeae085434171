"""Small dense linear algebra for the compiled step, allocation-free (the matrices are a few tens of rows: the
constraint rows of one scene, or its degrees of freedom) but for LAPACK's on the larger ones.

- :func:`svd_columns` — the singular value decomposition by one-sided Jacobi rotations (Hestenes), which
  resolves small singular values to high relative accuracy, as LAPACK's SVD does and an eigen-decomposition of
  A Aᵀ does not (σ² would lose them below ~1e-8 σ_max).
- :func:`singular_values` — the singular values alone: one-sided Jacobi below :data:`VALUES_LAPACK_SIZE`
  columns, LAPACK's ``gesdd`` for the values alone (``jobz = 'N'``, through numba) from there, where Jacobi's
  sweeps cost n³ each (an 18 x 12 block: Jacobi 26 µs, LAPACK's values 10 µs, its whole SVD 29 µs; 30 x 16: 64,
  18 and 47 µs; 6 columns: even).
- :func:`lu_factor`, :func:`lu_apply`, :func:`lu_solve` — A x = b by Gaussian elimination with partial pivoting.
- :func:`pinv_apply` — the minimum-norm least-squares solution A⁺b from an SVD.
- :func:`numerical_rank` — how many singular values count (:mod:`core.formulations`, *Rank*).
"""
from __future__ import annotations

import numpy as np

from .jit import njit

#: From this many rows of a symmetric matrix its eigenvalues alone are LAPACK's, not Jacobi's.
LAPACK_SIZE = 16
#: From this many columns a matrix's singular values alone are LAPACK's, not Jacobi's (measured: module docstring).
VALUES_LAPACK_SIZE = 8

try:                               # LAPACK's gesdd with jobz = 'N': the values without the vectors (numba's own,
    from numba.np.linalg import _compute_singular_values as _gesdd_values   # behind np.linalg.norm(A, 2))
except ImportError:                # (a numba without it: the values of the whole SVD)
    _gesdd_values = None

if _gesdd_values is not None:
    @njit
    def _lapack_values(A):
        return _gesdd_values(A)
else:
    @njit
    def _lapack_values(A):
        return np.linalg.svd(np.ascontiguousarray(A), False)[1]

__all__ = ["svd_columns", "singular_values", "lapack_ready", "LAPACK_SIZE", "VALUES_LAPACK_SIZE", "lu_factor", "lu_apply", "lu_solve", "numerical_rank", "pinv_apply", "cholesky_factor",
           "cholesky_solve", "symmetric_product"]


@njit
def svd_columns(A, p, n, V, s):
    """One-sided Jacobi SVD of the p x n matrix ``A[:p, :n]``: on return ``A[:p, :n]`` holds U Σ (orthogonal
    columns, column k of length σ_k), ``V[:n, :n]`` the orthogonal V, so that the original A = (UΣ) Vᵀ, and
    ``s[:n]`` the singular values σ, sorted descending (columns of A and V permuted alike).

    Rotations of column pairs (a_i, a_j) make them orthogonal; sweeps stop when every pair has
    |a_i·a_j| ≤ 1e-15 ‖a_i‖‖a_j‖ (Demmel & Veselić: relative accuracy of every σ) or one of the two columns is
    below 1e-15 of A's norm (a zero singular value: rotating it against the others would never settle)."""
    norm2 = 0.0
    for a in range(n):
        for b in range(n):
            V[a, b] = 1.0 if a == b else 0.0
        for k in range(p):
            norm2 += A[k, a] * A[k, a]
    tiny = 1e-30 * norm2                                      # a column this small is a zero singular value
    for _ in range(60):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for k in range(p):
                    alpha += A[k, i] * A[k, i]
                    beta += A[k, j] * A[k, j]
                    gamma += A[k, i] * A[k, j]
                if gamma == 0.0 or abs(gamma) <= 1e-15 * np.sqrt(alpha * beta) or alpha <= tiny or beta <= tiny:
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = (1.0 if zeta >= 0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                sn = c * t
                for k in range(p):
                    ai, aj = A[k, i], A[k, j]
                    A[k, i] = c * ai - sn * aj
                    A[k, j] = sn * ai + c * aj
                for k in range(n):
                    vi, vj = V[k, i], V[k, j]
                    V[k, i] = c * vi - sn * vj
                    V[k, j] = sn * vi + c * vj
        if not rotated:
            break
    for a in range(n):
        t = 0.0
        for k in range(p):
            t += A[k, a] * A[k, a]
        s[a] = np.sqrt(t)
    for a in range(n):                                        # selection sort, descending
        best = a
        for b in range(a + 1, n):
            if s[b] > s[best]:
                best = b
        if best != a:
            s[a], s[best] = s[best], s[a]
            for k in range(p):
                A[k, a], A[k, best] = A[k, best], A[k, a]
            for k in range(n):
                V[k, a], V[k, best] = V[k, best], V[k, a]


@njit
def numerical_rank(s, n, tolerance, scale):
    """How many of the singular values ``s[:n]`` (descending) exceed ``tolerance · max(s[0], scale)``."""
    ref = max(s[0] if n > 0 else 0.0, scale)
    if ref <= 0.0:
        return 0
    r = 0
    for a in range(n):
        if s[a] > tolerance * ref:
            r += 1
    return r


@njit
def lapack_ready(A, p, n, out):
    """Whether ``A[:p, :n]`` is all finite, as numba's LAPACK wrappers need (they raise otherwise); if not,
    ``out[:n]`` ← NaN: the values of a diverging state's matrix, which the step then stops on."""
    for a in range(p):
        for b in range(n):
            if not np.isfinite(A[a, b]):
                out[:n] = np.nan
                return False
    return True


@njit
def singular_values(A, p, n, V, s):
    """``s[:n]`` ← the singular values of the p x n matrix ``A[:p, :n]``, descending (A and ``V`` are scratch:
    :func:`svd_columns` below :data:`VALUES_LAPACK_SIZE` columns, LAPACK's values of a copy from there)."""
    if p == 0:                                              # (rows on links that cannot move: no columns)
        for j in range(n):
            s[j] = 0.0
        return
    if n < VALUES_LAPACK_SIZE:
        svd_columns(A, p, n, V, s)
        return
    if not lapack_ready(A, p, n, s):
        return
    sv = _lapack_values(A[:p, :n])
    for a in range(n):
        s[a] = sv[a] if a < sv.shape[0] else 0.0


@njit
def lu_factor(A, n, piv):
    """A[:n, :n] ← its LU factors with partial pivoting (``piv[k]``: the row swapped with k at step k).
    Returns False if A is singular to working precision."""
    for k in range(n):
        p = k
        for a in range(k + 1, n):
            if abs(A[a, k]) > abs(A[p, k]):
                p = a
        piv[k] = p
        if A[p, k] == 0.0:
            return False
        if p != k:
            for c in range(n):
                A[k, c], A[p, c] = A[p, c], A[k, c]
        for a in range(k + 1, n):
            f = A[a, k] / A[k, k]
            A[a, k] = f
            for c in range(k + 1, n):
                A[a, c] -= f * A[k, c]
    return True


@njit
def lu_apply(A, n, piv, b, x):
    """x ← A⁻¹ b with the factors of :func:`lu_factor` (x may be b): the row interchanges in order, then the
    unit-lower and the upper triangular solves (whole rows, multipliers included, were interchanged)."""
    for k in range(n):
        x[k] = b[k]
    for k in range(n):
        p = piv[k]
        if p != k:
            x[k], x[p] = x[p], x[k]
    for k in range(n):
        for a in range(k + 1, n):
            x[a] -= A[a, k] * x[k]
    for k in range(n - 1, -1, -1):
        s = x[k]
        for c in range(k + 1, n):
            s -= A[k, c] * x[c]
        x[k] = s / A[k, k]


@njit
def lu_solve(A, n, b, x, piv):
    """x ← A⁻¹ b for the n x n ``A`` (overwritten by its LU factors) by Gaussian elimination with partial
    pivoting (``piv``: n ints of scratch). Returns False (x untouched) if A is singular to working precision."""
    if not lu_factor(A, n, piv):
        return False
    lu_apply(A, n, piv, b, x)
    return True


@njit
def pinv_apply(US, V, s, n, r, b, x):
    """x ← A⁺ b = Σ_{i<r} u_i σ_i⁻¹ (v_iᵀ b) for A = V Σ Uᵀ given as :func:`svd_columns` of Aᵀ (``US`` = UΣ, p x n;
    ``V`` n x n; σ descending): the minimum-norm least-squares solution of A x = b, with the r largest σ."""
    p = US.shape[0]
    for k in range(p):
        x[k] = 0.0
    for i in range(r):
        t = 0.0
        for a in range(n):
            t += V[a, i] * b[a]
        t /= s[i] * s[i]
        for k in range(p):
            x[k] += US[k, i] * t


@njit
def cholesky_factor(C, n):
    """C[:n, :n] ← its lower Cholesky factor L (in place, lower triangle). False when a pivot is not above 1e-8
    of the largest diagonal entry (C is then not safely positive definite)."""
    top = 0.0
    for a in range(n):
        top = max(top, C[a, a])
    if not top > 0.0:
        return False
    for j in range(n):
        d = C[j, j]
        for k in range(j):
            d -= C[j, k] * C[j, k]
        if not d > 1e-8 * top:
            return False
        d = np.sqrt(d)
        C[j, j] = d
        for i in range(j + 1, n):
            s = C[i, j]
            for k in range(j):
                s -= C[i, k] * C[j, k]
            C[i, j] = s / d
    return True


@njit
def cholesky_solve(L, n, x):
    """x ← (L Lᵀ)⁻¹ x."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@njit
def symmetric_product(X, Y, A, m, n):
    """A[:m, :m] ← X[:m, :n] Y[:n, :m] for a product known to be symmetric (J M⁻¹Jᵀ): the upper triangle,
    mirrored."""
    for a in range(m):
        for b in range(a, m):
            s = 0.0
            for k in range(n):
                s += X[a, k] * Y[k, b]
            A[a, b] = s
            A[b, a] = s
