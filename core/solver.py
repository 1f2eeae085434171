"""Robust solution of the constraint equation A F = −B (thesis eq. 2.22, §2.3.4).

A = J M⁻¹ Jᵀ is symmetric positive semi-definite and block diagonal over groups of constraints that share no
tree (eq. 2.41: "a matrix block i, j will be zero if constraints i and j do not act on a common body"); each
group is solved on its own. Within a group, A = U Σ Vᵀ and

- ``svd``: F = −V_k Σ_k⁻¹ U_kᵀ B with the k largest singular values (A is symmetric positive semi-definite,
  so its SVD is its eigen-decomposition A = Q Λ Qᵀ with σ = |λ|, computed by Jacobi rotations); while some
  constraint's force exceeds its bound (its joint strength), the smallest kept singular value is dropped and the
  solve repeated (Mitchell's iterative scheme). Singular values below ``rcond`` × the largest are never used.
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


def solve_constraint_forces(A: np.ndarray, B: np.ndarray, groups, blocks, bases, bounds, method: str = "svd",
                            rcond: float = 1e-12, rho: float = 1e-3) -> SolveResult:
    """Solve A F = −B group by group with force bounds, by the compiled :func:`core.stepper.solve_groups` (the
    one implementation the compiled step uses; A's SVD is its symmetric eigen-decomposition, σ = |λ|).

    ``groups``: (row indices of each group, constraint indices of each group) from :func:`constraint_groups`;
    ``blocks[c]``: the rows of constraint c *within the full system*; ``bases[c]`` its 3 x m force basis E (the
    force vector on its point is E F_c); ``bounds[c]`` its maximum force magnitude.
    """
    from .stepper import solve_groups
    if method not in ("svd", "damped_least_squares"):
        raise ValueError(f"unknown solver method {method!r}; choose svd or damped_least_squares")
    A = np.ascontiguousarray(A, dtype=float)
    B = np.ascontiguousarray(B, dtype=float)
    K, m = len(blocks), B.size
    ci = np.full((K, 6), -1, np.int64)
    cf = np.zeros((K, 40))
    for g, members in enumerate(groups[1]):
        for c in members:
            ci[c, 5] = g
    for c, (block, E, bound) in enumerate(zip(blocks, bases, bounds)):
        n = block.stop - block.start
        ci[c, 3], ci[c, 4] = n, block.start
        E3 = np.zeros((3, 3))
        E3[:, :n] = E
        cf[c, 6:15] = E3.ravel()
        cf[c, 16] = bound
    F, svals = np.zeros(m), np.zeros(max(m, 1))
    rank, dropped, min_kept, ns = solve_groups(A, B, ci, cf, len(groups[1]), method == "damped_least_squares",
                                               float(rcond), float(rho), F, svals, np.empty(m, np.int64),
                                               np.empty((m, m)), np.empty((m, m)), np.empty(m), np.empty(m),
                                               np.empty(m))
    return SolveResult(F, A @ F + B, svals[:ns].copy(), int(rank), int(dropped), float(min_kept))
