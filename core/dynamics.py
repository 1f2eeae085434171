"""One evaluation of the constrained dynamics at a state: applied forces → dynamics (M, b) → constraint solve →
accelerations, with everything the step derives recorded in :class:`Data` (DESIGN.md's pipeline).

With active constraints (thesis §2.4.3, eq. 2.38–2.41; the "dynamic constraints" formulation)::

    M q̈ = τ − b + Jᵀ F                       generalized coordinates, constraint forces F at points
    D̈ = J q̈ + γ = A F + β,   A = J M⁻¹ Jᵀ,   β = J M⁻¹ (τ − b) + γ          (eq. 2.39, blocks 3 x 3)
    A F = −B,   B = β + 2λḊ + λ²D                                          (eq. 2.21–2.24)

Without constraints the articulated-body algorithm gives q̈ in O(N).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .aba import forward_dynamics
from .constraints import constraint_rows
from .crba import mass_matrix
from .energy import kinetic_energy, potential_energy
from .forces import applied_forces
from .model import Model
from .points import link_kinematics
from .rnea import nonlinear_effects
from .solver import constraint_groups, solve_constraint_forces

__all__ = ["Data", "evaluate"]


@dataclass
class Data:
    """What one evaluation derives (K constraints; inactive ones have zero force and NaN residual).

    - ``qdd`` (nv,); ``tau_applied`` (nv,): generalized applied forces (springs, drag, actuators, point forces)
    - ``constraint_force`` (K, 3): world force on each constraint's point a; ``constraint_force_magnitude`` (K,)
    - ``deviation``, ``deviation_rate`` (K,): ‖D‖ and ‖Ḋ‖; ``residual`` (K,): ‖η‖ of each constraint's rows
    - ``singular_values`` (n_rows_all,): of A, descending, NaN-padded; ``rank`` (above rcond), ``dropped`` (for
      force bounds) and ``singular_value_cutoff``, the smallest singular value used (the directions of smaller
      ones were dropped; NaN if none was used)
    - ``power_constraints`` (K,): F·(J q̇) of each constraint; ``power_sources`` (4,): dampers, drag, actuators,
      external; ``energy_kinetic``, ``energy_gravity``, ``energy_elastic``
    """
    qdd: np.ndarray
    tau_applied: np.ndarray
    constraint_force: np.ndarray
    constraint_force_magnitude: np.ndarray
    deviation: np.ndarray
    deviation_rate: np.ndarray
    residual: np.ndarray
    singular_values: np.ndarray
    rank: int
    dropped: int
    singular_value_cutoff: float
    power_constraints: np.ndarray
    power_sources: np.ndarray
    energy_kinetic: float
    energy_gravity: float
    energy_elastic: float

    @property
    def power(self) -> np.ndarray:
        """All non-conservative powers, in the order the energy audit integrates them."""
        return np.concatenate([self.power_constraints, self.power_sources])


def total_constraint_rows(model: Model) -> int:
    return sum(c.rows for c in model.constraints)


def evaluate(model: Model, t: float, q: np.ndarray, qd: np.ndarray, active: np.ndarray, overrides=None,
             actuator_values=None, solver: dict | None = None, energies: bool = True) -> Data:
    """Accelerations and diagnostics at (t, q, qd) with the constraints flagged in ``active``; the energies are
    left NaN unless ``energies`` (the integrator's inner stages do not need them)."""
    solver = solver or model.settings.get("solver", {})
    K = len(model.constraints)
    kin = link_kinematics(model, q, qd) if (model.forces or K) else None
    applied = applied_forces(model, kin, q, qd, t, model.forces, actuator_values)
    tau = applied.tau
    rows = constraint_rows(model, kin, model.constraints, active, t, overrides)
    force = np.zeros((K, 3))
    residual = np.full(K, np.nan)
    svals = np.full(total_constraint_rows(model), np.nan)
    power_c = np.zeros(K)
    rank = dropped = 0
    cutoff = np.nan
    if rows.J.shape[0] == 0:
        qdd = forward_dynamics(model, q, qd, tau)                              # ABA, O(N)
    else:
        H = mass_matrix(model, q)
        b = nonlinear_effects(model, q, qd)
        chol = cho_factor(H)
        a_free = cho_solve(chol, tau - b)                                      # M⁻¹(τ − b)
        MinvJt = cho_solve(chol, rows.J.T)                                     # M⁻¹Jᵀ
        A = rows.J @ MinvJt                                                    # A = J M⁻¹ Jᵀ   (eq. 2.41)
        B = rows.J @ a_free + rows.gamma + rows.stab                           # B = β + 2λḊ + λ²D  (eq. 2.24)
        idx = [i for i in range(K) if rows.slices[i] is not None]
        row_ids = [np.arange(rows.slices[i].start, rows.slices[i].stop) for i in idx]
        trees = [{model.root_of(model.constraints[i].link_a)} | ({model.root_of(model.constraints[i].link_b)}
                 if model.constraints[i].link_b >= 0 else set()) for i in idx]
        groups = constraint_groups(row_ids, trees)
        result = solve_constraint_forces(
            A, B, groups, [rows.slices[i] for i in idx], [model.constraints[i].basis for i in idx],
            [model.constraints[i].max_force for i in idx], method=solver.get("method", "svd"),
            rcond=solver.get("rcond", 1e-12), rho=solver.get("rho", 1e-3))
        qdd = a_free + MinvJt @ result.F                                       # q̈ = M⁻¹(τ − b + Jᵀ F)
        Jqd = rows.J @ qd
        for n, i in enumerate(idx):
            s = rows.slices[i]
            force[i] = model.constraints[i].basis @ result.F[s]
            residual[i] = np.linalg.norm(result.residual[s])
            power_c[i] = result.F[s] @ Jqd[s]                                  # F·(J q̇): work rate on the system
        svals[:result.singular_values.size] = result.singular_values
        rank, dropped, cutoff = result.rank, result.dropped, result.min_kept
    return Data(qdd=qdd, tau_applied=tau, constraint_force=force,
                constraint_force_magnitude=np.linalg.norm(force, axis=1), deviation=rows.deviation,
                deviation_rate=rows.deviation_rate, residual=residual, singular_values=svals, rank=rank,
                dropped=dropped, singular_value_cutoff=cutoff, power_constraints=power_c, power_sources=applied.power,
                energy_kinetic=kinetic_energy(model, q, qd) if energies else np.nan,
                energy_gravity=potential_energy(model, q) if energies else np.nan,
                energy_elastic=applied.potential)
