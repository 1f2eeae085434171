"""One evaluation of the constrained dynamics at a state: applied forces → dynamics (M, b) → constraint solve →
accelerations, with everything the step derives recorded in :class:`Data` (DESIGN.md's pipeline).

With active constraints (thesis §2.4.3, eq. 2.38–2.41; the "dynamic constraints" formulation)::

    M q̈ = τ − b + Jᵀ F                       generalized coordinates, constraint forces F at points
    D̈ = J q̈ + γ = A F + β,   A = J M⁻¹ Jᵀ,   β = J M⁻¹ (τ − b) + γ          (eq. 2.39, blocks 3 x 3)
    A F = −B,   B = β + 2λḊ + λ²D                                          (eq. 2.21–2.24)

Without constraints the articulated-body algorithm gives q̈ in O(N). With constraints, the scene's
``formulation`` (dynamic constraints, projection or multipliers; :mod:`core.formulations`) solves for q̈ and the
constraint forces from the same assembled M, b, τ, J, γ.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor

from .aba import forward_dynamics
from .constraints import constraint_rows
from .crba import mass_matrix
from .energy import kinetic_energy, potential_energy
from .forces import POWER_SOURCES, applied_forces
from .model import Model
from .points import link_kinematics
from .rnea import nonlinear_effects
from .formulations import Assembled, solve

__all__ = ["Data", "evaluate"]


@dataclass
class Data:
    """What one evaluation derives (K constraints; inactive ones have zero force and NaN residual).

    - ``qdd`` (nv,); ``tau_applied`` (nv,): generalized applied forces (springs, drag, actuators, point forces)
    - ``constraint_force`` (K, 3): world force on each constraint's point a; ``constraint_force_magnitude`` (K,)
    - ``deviation``, ``deviation_rate`` (K,): ‖D‖ and ‖Ḋ‖; ``residual`` (K,): ‖η‖ of each constraint's rows
    - ``singular_values`` (n_rows_all,): of A, descending, NaN-padded; ``rank`` (above rcond), ``dropped`` (for
      force bounds) and ``singular_value_cutoff``, the smallest singular value used (the directions of smaller
      ones were dropped; NaN if none was used); with the projection formulation these are J's singular values
    - ``jacobian_rank``: rank of the stacked constraint Jacobian J; ``rank_deficient``: J has fewer independent rows
      than constraint rows (redundant or singular constraints: the multipliers are not unique, Remark 4)
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
    jacobian_rank: int
    rank_deficient: bool
    power_constraints: np.ndarray
    power_sources: np.ndarray
    energy_kinetic: float
    energy_gravity: float
    energy_elastic: float
    tau_control: np.ndarray | None = None          # (nv,) the controllers' joint torques (in tau_applied too)
    controller_rate: np.ndarray | None = None      # ż of the controllers' integrated state (set by Simulation)

    @property
    def power(self) -> np.ndarray:
        """All non-conservative powers, in the order the energy audit integrates them."""
        return np.concatenate([self.power_constraints, self.power_sources])


def total_constraint_rows(model: Model) -> int:
    return sum(c.rows for c in model.constraints)


def evaluate(model: Model, t: float, q: np.ndarray, qd: np.ndarray, active: np.ndarray, overrides=None,
             actuator_values=None, solver: dict | None = None, energies: bool = True,
             formulation: str | None = None, extra_forces: tuple = (),
             tau_control: np.ndarray | None = None) -> Data:
    """Accelerations and diagnostics at (t, q, qd) with the constraints flagged in ``active``; the energies are
    left NaN unless ``energies`` (the integrator's inner stages do not need them). ``tau_control`` (nv) are the
    controllers' joint torques (:mod:`core.control`), added to the applied forces; their power is booked with
    the actuators'."""
    solver = solver or model.settings.get("solver", {})
    K = len(model.constraints)
    kin = link_kinematics(model, q, qd) if (model.forces or K or extra_forces) else None
    applied = applied_forces(model, kin, q, qd, t, model.forces + tuple(extra_forces), actuator_values)
    tau = applied.tau
    if tau_control is not None:                         # the controllers' torques act through the actuators
        tau = tau + tau_control
        applied.power[POWER_SOURCES.index("actuators")] += float(tau_control @ qd)
    rows = constraint_rows(model, kin, model.constraints, active, t, overrides, q=q, qd=qd)
    force = np.zeros((K, 3))
    residual = np.full(K, np.nan)
    svals = np.full(total_constraint_rows(model), np.nan)
    power_c = np.zeros(K)
    rank = dropped = 0
    cutoff = np.nan
    jacobian_rank, deficient = 0, False
    if rows.J.shape[0] == 0:
        qdd = forward_dynamics(model, q, qd, tau)                              # ABA, O(N)
    else:
        M = mass_matrix(model, q)
        idx = [i for i in range(K) if rows.slices[i] is not None]
        sol = solve(formulation or model.settings.get("formulation", "dynamic_constraints"),
                    Assembled(model, M, cho_factor(M), nonlinear_effects(model, q, qd), tau, rows, idx,
                              {**model.settings, "solver": solver}))
        qdd = sol.qdd
        Jqd = rows.J @ qd
        for i in idx:
            s = rows.slices[i]
            force[i] = model.constraints[i].basis @ sol.lam[s]
            residual[i] = np.linalg.norm(sol.residual[s])
            power_c[i] = sol.lam[s] @ Jqd[s]                                   # λ·(J q̇): work rate on the system
            if model.constraints[i].first_order:                              # velocity constraint: Ḋ = J q̈ + γ
                rows.deviation_rate[i] = np.linalg.norm(rows.J[s] @ qdd + rows.gamma[s])
        svals[:sol.singular_values.size] = sol.singular_values
        rank, dropped, cutoff = sol.rank, sol.dropped, sol.cutoff
        jacobian_rank, deficient = sol.jacobian_rank, sol.rank_deficient
    return Data(qdd=qdd, tau_applied=tau, constraint_force=force,
                constraint_force_magnitude=np.linalg.norm(force, axis=1), deviation=rows.deviation,
                deviation_rate=rows.deviation_rate, residual=residual, singular_values=svals, rank=rank,
                dropped=dropped, singular_value_cutoff=cutoff, jacobian_rank=jacobian_rank,
                rank_deficient=deficient, power_constraints=power_c, power_sources=applied.power,
                energy_kinetic=kinetic_energy(model, q, qd) if energies else np.nan,
                energy_gravity=potential_energy(model, q) if energies else np.nan,
                energy_elastic=applied.potential, tau_control=tau_control)


def total_energy(model: Model, t: float, q: np.ndarray, qd: np.ndarray) -> float:
    """Kinetic + gravitational + elastic energy at a state (what the energy audit balances)."""
    elastic = 0.0
    if model.forces:
        elastic = applied_forces(model, link_kinematics(model, q, qd), q, qd, t, model.forces).potential
    return kinetic_energy(model, q, qd) + potential_energy(model, q) + elastic
