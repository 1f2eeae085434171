"""Robust solution of the constraint equation A F = −B (thesis eq. 2.22, §2.3.4).

A = J M⁻¹ Jᵀ is symmetric positive semi-definite and block diagonal over groups of constraints that share no
tree (eq. 2.41: "a matrix block i, j will be zero if constraints i and j do not act on a common body"); each
group is solved on its own. Within a group, A = U Σ Vᵀ and

- ``svd``: F = −V_k Σ_k⁻¹ U_kᵀ B with the k largest singular values; while some constraint's force exceeds its
  bound (its joint strength), the smallest kept singular value is dropped and the solve repeated (Mitchell's
  iterative scheme). Singular values below ``rcond`` × the largest are never used.
- ``damped_least_squares``: 1/σ replaced by σ / (σ² + ρ²) (Wampler), with the same bound iteration on top, so
  that no solve can inject forces beyond the bounds into the integrator.

The residual η = A F + B measures how well the constrained acceleration was achieved (fig. 2.3).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SolveResult", "solve_constraint_forces", "constraint_groups"]


@dataclass
class SolveResult:
    """``F`` (m,), ``residual`` η = A F + B (m,), the singular values of A (descending, all groups), ``rank`` (count
    above rcond), ``dropped`` (singular values dropped to respect force bounds), and per group the smallest
    singular value kept (``min_kept``, NaN where all were dropped)."""
    F: np.ndarray
    residual: np.ndarray
    singular_values: np.ndarray
    rank: int
    dropped: int
    min_kept: float


def constraint_groups(rows_of: list[np.ndarray], trees_of: list[set]) -> list[np.ndarray]:
    """Partition constraints into groups that share a tree (union–find); returns the row indices of each group.

    ``rows_of[c]`` are constraint c's row indices, ``trees_of[c]`` the root links of the trees it touches."""
    parent = list(range(len(rows_of)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    owner: dict[int, int] = {}
    for c, trees in enumerate(trees_of):
        for tree in trees:
            if tree in owner:
                parent[find(c)] = find(owner[tree])
            else:
                owner[tree] = c
    groups: dict[int, list[int]] = {}
    for c in range(len(rows_of)):
        groups.setdefault(find(c), []).append(c)
    return [np.concatenate([rows_of[c] for c in members]) for members in groups.values()], \
        [members for members in groups.values()]


def _bounded_solve(A, B, blocks, bounds, method, rcond, rho):
    U, s, Vt = np.linalg.svd(A)
    smax = s[0] if s.size else 0.0
    k = int(np.sum(s > rcond * smax)) if smax > 0 else 0
    rank = k
    UtB = U.T @ B
    while True:
        if method == "damped_least_squares":
            inv = np.where(np.arange(s.size) < k, s / (s * s + rho * rho), 0.0)
        else:
            inv = np.zeros_like(s)
            inv[:k] = 1.0 / s[:k]
        F = -Vt.T @ (inv * UtB)
        over = any(np.linalg.norm(E @ F[b]) > bound for b, E, bound in zip(blocks, *bounds))
        if not over or k == 0:
            return F, s, rank, rank - k, (s[k - 1] if k > 0 else np.nan)
        k -= 1                                                   # drop the smallest kept singular value


def solve_constraint_forces(A: np.ndarray, B: np.ndarray, groups, blocks, bases, bounds, method: str = "svd",
                            rcond: float = 1e-12, rho: float = 1e-3) -> SolveResult:
    """Solve A F = −B group by group with force bounds.

    ``groups``: (row indices of each group, constraint indices of each group) from :func:`constraint_groups`;
    ``blocks[c]``: the rows of constraint c *within the full system*; ``bases[c]`` its 3 x m force basis E (the
    force vector on its point is E F_c); ``bounds[c]`` its maximum force magnitude.
    """
    F = np.zeros(B.size)
    svals, rank, dropped, min_kept = [], 0, 0, np.inf
    for rows, members in zip(*groups):
        local = {}
        offset = 0
        for c in members:                                        # rows of each member inside the group
            n = blocks[c].stop - blocks[c].start
            local[c] = slice(offset, offset + n)
            offset += n
        Fg, s, r, d, mk = _bounded_solve(A[np.ix_(rows, rows)], B[rows], [local[c] for c in members],
                                         ([bases[c] for c in members], [bounds[c] for c in members]),
                                         method, rcond, rho)
        F[rows] = Fg
        svals.append(s)
        rank += r
        dropped += d
        min_kept = min(min_kept, mk) if not np.isnan(mk) else min_kept
    s_all = np.sort(np.concatenate(svals))[::-1] if svals else np.zeros(0)
    return SolveResult(F, A @ F + B, s_all, rank, dropped, min_kept if np.isfinite(min_kept) else np.nan)
