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
from .linalg import LAPACK_SIZE, cholesky_factor, cholesky_solve, lapack_ready

__all__ = ["symmetric_eigen", "symmetric_eigenvalues", "row_dot", "range_basis", "group_block", "group_members",
           "over_bound", "solve_groups", "SVD", "DAMPED_LEAST_SQUARES"]

SVD, DAMPED_LEAST_SQUARES = 0, 1
#: Groups of this many rows or more are solved through an orthonormal basis of their J's columns (r = J's rank
#: ≤ the rows): redundant constraints (three free bodies held by 18 rows of rank 12) then give an r x r problem.
COMPRESS_ROWS = 6


@njit
def symmetric_eigen(A, n, lam, Q, vectors=True):
    """A[:n, :n] = Q diag(λ) Qᵀ by cyclic Jacobi rotations (A is overwritten; eigenpairs sorted by |λ|,
    largest first); without ``vectors``, the eigenvalues alone (Q is not touched)."""
    if vectors:
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
                if vectors:
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
            if vectors:
                for k in range(n):
                    Q[k, a], Q[k, best] = Q[k, best], Q[k, a]


@njit
def symmetric_eigenvalues(A, n, lam):
    """The eigenvalues alone of the symmetric ``A[:n, :n]`` into ``lam[:n]``, sorted by |λ|, largest first:
    :func:`symmetric_eigen` below :data:`core.linalg.LAPACK_SIZE` (A is overwritten), LAPACK's from there."""
    if n < LAPACK_SIZE:
        symmetric_eigen(A, n, lam, A, False)
        return
    if not lapack_ready(A, n, n, lam):
        return
    w = np.linalg.eigvalsh(np.ascontiguousarray(A[:n, :n]))
    lo, hi = 0, n - 1                                         # ascending: the largest |λ| at either end
    for a in range(n):
        if abs(w[lo]) > abs(w[hi]):
            lam[a] = w[lo]
            lo += 1
        else:
            lam[a] = w[hi]
            hi -= 1


@njit(fastmath={"reassoc", "contract"})
def row_dot(A, i, B, j, n):
    """A[i, :n] · B[j, :n] — two contiguous rows, summed in any order (vectorized)."""
    s = 0.0
    for a in range(n):
        s += A[i, a] * B[j, a]
    return s


@njit
def range_basis(J, idx, n, c0, c1, Q1, Rq, coefficients):
    """The rows of ``Q1[:r, :n]`` ← an orthonormal basis of the column space of the rows ``idx[:n]`` of J over the
    columns c0 … c1 − 1 (classical Gram–Schmidt, a second pass for a column whose first left less than 1/√2 of
    its length — Kahan and Parlett's "twice is enough" —; a column left below 1e-12 of its length is dependent):
    basis vector i is the row Q1[i] (contiguous). With ``coefficients``, ``Rq[:r, :c1 − c0]`` ← R = Q₁ᵀ J, the
    Gram–Schmidt's own projections (zero below each column's last basis vector; ``Rq`` at least min(n, p) x p);
    without, ``Rq`` is not touched. Returns r."""
    r = 0
    p = c1 - c0
    if coefficients:
        for i in range(min(n, p)):
            for k in range(p):
                Rq[i, k] = 0.0
    for k in range(c0, c1):
        if r == n:                                            # the basis spans every row: the other columns are
            if not coefficients:                              # combinations of it
                break
            for j in range(n):
                t = 0.0
                for a in range(n):
                    t += Q1[j, a] * J[idx[a], k]
                Rq[j, k - c0] = t
            continue
        norm0 = 0.0
        for a in range(n):
            Q1[r, a] = J[idx[a], k]
            norm0 += Q1[r, a] * Q1[r, a]
        if norm0 == 0.0:
            continue
        norm = norm0
        for sweep in range(2):
            if sweep == 1 and norm >= 0.5 * norm0:
                break
            for j in range(r):
                d = row_dot(Q1, j, Q1, r, n)
                for a in range(n):
                    Q1[r, a] -= d * Q1[j, a]
                if coefficients:
                    Rq[j, k - c0] += d
            norm = row_dot(Q1, r, Q1, r, n)
        if norm <= 1e-24 * norm0:
            continue
        norm = np.sqrt(norm)
        for a in range(n):
            Q1[r, a] /= norm
        if coefficients:
            Rq[r, k - c0] = norm
        r += 1
    return r


@njit
def group_block(J, Y, span, idx, n, Ag):
    """Ag[:n, :n] ← the group's block of A = J M⁻¹Jᵀ (Y = M⁻¹Jᵀ; with Y = Jᵀ its Gram matrix J Jᵀ), each entry over
    the velocities both rows span."""
    for a in range(n):
        ra = idx[a]
        for b in range(a, n):
            rb = idx[b]
            s = 0.0
            for k in range(max(span[ra, 0], span[rb, 0]), min(span[ra, 1], span[rb, 1])):
                s += J[ra, k] * Y[k, rb]
            Ag[a, b] = s
            Ag[b, a] = s


@njit
def _compressed(J, Y, span, idx, n, c0, c1, Q1, R, T, C):
    """With Q₁ (the rows of ``Q1[:r, :n]``) an orthonormal basis of the group's J over the velocities c0 … c1 − 1:
    C ← Q₁ᵀ A Q₁ (r x r), from contiguous rows. With fewer velocities than rows (p < n) as (Q₁ᵀ J)(M⁻¹Jᵀ Q₁): the
    group's Y gathered in ``T`` (p x n), Q₁ᵀ J in ``R`` (r x p, the Gram–Schmidt's projections) and (M⁻¹Jᵀ Q₁)ᵀ in
    ``T`` (r x p);
    otherwise as Q₁ᵀ (A_g Q₁), the block A_g in ``R`` and (A_g Q₁)ᵀ in ``T`` (r x n): the scratch is n x n
    (m x m), which holds neither r x p nor p x r when p > n. Returns r."""
    p = c1 - c0
    r = range_basis(J, idx, n, c0, c1, Q1, R, p < n)          # (fewer velocities: Q₁ᵀ J with the basis, in R)
    if p >= n:
        group_block(J, Y, span, idx, n, R)
        for j in range(r):
            for a in range(n):
                T[j, a] = row_dot(R, a, Q1, j, n)
        for i in range(r):
            for j in range(i, r):
                C[i, j] = row_dot(Q1, i, T, j, n)
                C[j, i] = C[i, j]
        return r
    for k in range(p):                                        # Y's rows over the group
        for a in range(n):
            T[k, a] = Y[c0 + k, idx[a]]
    for k in range(p):                                        # (Y Q₁)ᵀ, each column of T at once
        for j in range(r):
            C[j, k] = row_dot(T, k, Q1, j, n)
    for j in range(r):
        for k in range(p):
            T[j, k] = C[j, k]
    for i in range(r):
        for j in range(i, r):
            C[i, j] = row_dot(R, i, T, j, p)
            C[j, i] = C[i, j]
    return r


@njit
def _group_eigen(J, Y, span, idx, n, lam, Q, Ag, Q1, C):
    """The eigen-decomposition of the group's block A[idx, idx] = Q diag(λ) Qᵀ (n x n, sorted by |λ|). A group
    with more rows than the velocities it spans (p: a body resting on four corners, 12 rows on 6 velocities)
    has A = J M⁻¹Jᵀ of rank ≤ p: with Q₁ an orthonormal basis of J's columns, A = Q₁ (Q₁ᵀ A Q₁) Q₁ᵀ, and the
    r x r problem (r = rank J ≤ p) gives every nonzero eigenpair, the other n − r eigenvalues being zero. Groups
    of :data:`COMPRESS_ROWS` rows or more go this way too (redundant rows make r < n)."""
    c0, c1 = span[idx[0], 0], span[idx[0], 1]
    for a in range(1, n):
        c0, c1 = min(c0, span[idx[a], 0]), max(c1, span[idx[a], 1])
    if n <= c1 - c0 and n < COMPRESS_ROWS:
        group_block(J, Y, span, idx, n, Ag)
        symmetric_eigen(Ag, n, lam, Q)
        return
    r = _compressed(J, Y, span, idx, n, c0, c1, Q1, Ag, Q, C)
    symmetric_eigen(C, r, lam, Ag)                            # C = V Λ Vᵀ (V in Ag)
    for a in range(n):                                        # Q = Q₁ V, then the null space's zero eigenvalues
        for j in range(r):
            s = 0.0
            for i in range(r):
                s += Q1[i, a] * Ag[i, j]
            Q[a, j] = s
        for j in range(r, n):
            Q[a, j] = 0.0
    for j in range(r, n):
        lam[j] = 0.0


@njit
def over_bound(cons, members, first, last, Fg):
    """Whether a constraint of a group (``members[first:last]``, in constraint order; its rows of ``Fg`` in that
    order) has a force beyond its bound."""
    pos = 0
    for j in range(first, last):
        c = members[j]
        E = cons[c].basis
        f2 = 0.0
        for a in range(3):
            fa = 0.0
            for b in range(cons[c].rows):
                fa += E[a, b] * Fg[pos + b]
            f2 += fa * fa
        if np.sqrt(f2) > cons[c].max_force:
            return True
        pos += cons[c].rows
    return False


@njit
def _group_cholesky(J, Y, B, span, idx, n, Ag, Q, Q1, C, x, Fg):
    """Fg[:n] ← −A_g⁻¹ B_g for the group's rows ``idx[:n]`` by a Cholesky factor — of the block itself, or (groups
    of :data:`COMPRESS_ROWS` rows or more, or with more rows than velocities) of C = Q₁ᵀ A Q₁ (F = −Q₁ C⁻¹ Q₁ᵀ B:
    the minimum-norm solution, as the eigen path's). The matrix factored is left in ``Q`` (its eigenvalues are
    A's nonzero ones). Returns its size, 0 when the factor is not well conditioned (the eigen path then starts
    afresh)."""
    c0, c1 = span[idx[0], 0], span[idx[0], 1]
    for a in range(1, n):
        c0, c1 = min(c0, span[idx[a], 0]), max(c1, span[idx[a], 1])
    if n <= c1 - c0 and n < COMPRESS_ROWS:
        group_block(J, Y, span, idx, n, Ag)
        for a in range(n):
            x[a] = B[idx[a]]
            for b in range(n):
                Q[a, b] = Ag[a, b]
        if not cholesky_factor(Ag, n):
            return 0
        cholesky_solve(Ag, n, x)
        for a in range(n):
            Fg[a] = -x[a]
        return n
    r = _compressed(J, Y, span, idx, n, c0, c1, Q1, Ag, Q, C)
    for i in range(r):                                        # x = Q₁ᵀ B
        s = 0.0
        for a in range(n):
            s += Q1[i, a] * B[idx[a]]
        x[i] = s
        for j in range(r):
            Q[i, j] = C[i, j]
    if r == 0 or not cholesky_factor(C, r):
        return 0
    cholesky_solve(C, r, x)
    for a in range(n):
        s = 0.0
        for i in range(r):
            s += Q1[i, a] * x[i]
        Fg[a] = -s
    return r


@njit
def group_members(group_of, K, n_groups):
    """The active constraints (of K; ``group_of`` −1 when inactive) by group, in constraint order:
    ``(start, members)``, group g's being ``members[start[g]:start[g + 1]]``."""
    start = np.zeros(n_groups + 1, np.int64)
    for c in range(K):
        if group_of[c] >= 0:
            start[group_of[c] + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    fill = start.copy()
    members = np.empty(max(K, 1), np.int64)
    for c in range(K):
        g = group_of[c]
        if g >= 0:
            members[fill[g]] = c
            fill[g] += 1
    return start, members


@njit
def solve_groups(J, Y, B, cons, row_of, group_of, n_groups, method, rcond, rho, F, svals, idx, Ag, Q, lam, QtB, Fg,
                 span, Q1, C, fast, solved):
    """A F = −B group by group with force bounds (module docstring), A = J Y (Y = M⁻¹Jᵀ) formed block by block over
    the velocities each row spans (``span``); ``cons`` the constraint table (:data:`core.constraints.CONSTRAINT`:
    rows, basis, max_force), ``row_of``/``group_of`` from :func:`core.constraints.active_layout`.
    Returns ``(rank, dropped, min_kept, n_svals)``; ``svals[:n_svals]`` are the singular values of A (all groups,
    sorted descending). ``idx`` (int), ``lam``, ``QtB``, ``Fg`` (m), ``Ag``, ``Q`` (m x m), ``Q1`` (m x nv) and
    ``C`` (nv x nv) are scratch. With the ``svd`` method, a group whose block (or its compressed form,
    :func:`_group_eigen`) has a Cholesky factor with every pivot above 1e-8 of the largest diagonal — far from the
    ``rcond`` truncation — and whose forces stay within their bounds is solved by that factor: the same F to
    round-off, without eigenvectors; its eigenvalues are then computed alone to be reported, or, with ``fast``
    (an integrator's stage), not at all (n_svals 0). Groups flagged in ``solved`` have their rows of F already."""
    rank_total, dropped_total, min_kept, ns = 0, 0, np.inf, 0
    gstart, members = group_members(group_of, cons.shape[0], n_groups)
    for g in range(n_groups):
        if solved[g]:                                         # (its rows of F written already)
            continue
        n = 0
        for j in range(gstart[g], gstart[g + 1]):             # rows of the group, in constraint order
            c = members[j]
            for b in range(cons[c].rows):
                idx[n] = row_of[c] + b
                n += 1
        if n == 0:
            continue
        size = _group_cholesky(J, Y, B, span, idx, n, Ag, Q, Q1, C, QtB, Fg) if method == SVD else 0
        if size > 0 and not over_bound(cons, members, gstart[g], gstart[g + 1], Fg):
            if fast:
                for a in range(n):
                    F[idx[a]] = Fg[a]
                continue
            symmetric_eigenvalues(Q, size, lam)               # A's singular values, to report
            for a in range(size, n):
                lam[a] = 0.0
            k = 0
            for a in range(n):
                if abs(lam[a]) > rcond * abs(lam[0]):
                    k += 1
            if k == size:                                     # (no value the truncation would drop)
                for a in range(n):
                    F[idx[a]] = Fg[a]
                    svals[ns + a] = abs(lam[a])
                ns += n
                rank_total += k
                min_kept = min(min_kept, abs(lam[k - 1]))
                continue
        _group_eigen(J, Y, span, idx, n, lam, Q, Ag, Q1, C)
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
            if not over_bound(cons, members, gstart[g], gstart[g + 1], Fg) or k == 0:   # Mitchell: beyond a bound?
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
