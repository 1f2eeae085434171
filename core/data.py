"""What one evaluation derives at a state (DESIGN.md: Model / State / Data). A leaf module: it imports nothing of
the core, so every layer may hand a :class:`Data` on.

A :class:`Data` is made by :func:`core.evaluate` and :func:`core.step` from the compiled pipeline's output buffers
(copies: it never aliases memory the pipeline writes again). Sizes: nv velocities, K constraints (inactive ones
have zero force and NaN residual), R the rows of all constraints together, 4 power sources (dampers, drag,
actuators, external, :data:`core.model.POWER_SOURCES`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Data"]


@dataclass
class Data:
    """Everything derived at one state (t, q, q̇, z) under one set of inputs.

    Dynamics and forces (world frame for vectors at points, joint space otherwise):

    - ``qdd`` (nv): the constrained accelerations q̈;
    - ``tau_applied`` (nv): generalized force of the force elements (springs, joint springs, drag, actuators,
      point forces, the studio's pull) and the controllers; ``tau_control`` (nv): the controllers' part;
    - ``constraint_force`` (K, 3): world force on each constraint's point a (a joint-space constraint reports its
      multiplier λ as (λ, 0, 0)); ``constraint_force_magnitude`` (K);
    - ``point_a``, ``point_b`` (K, 3): world positions of each point constraint's two ends (the nail or the line
      or plane origin for a world end; zero for joint-space constraints) — what the studio draws;
      ``velocity_a`` (K, 3): the velocity of point a.

    Constraint diagnostics:

    - ``deviation``, ``deviation_rate`` (K): ‖D‖ and ‖Ḋ‖ of every constraint (thesis eq. 2.21; for a velocity
      constraint D is its velocity error and Ḋ its rate); ``residual`` (K): ‖η‖ of each active constraint's rows,
      η the acceleration-level residual of the equation its formulation solved (fig. 2.3);
    - ``singular_values`` (R): of A = J M⁻¹Jᵀ (dynamic constraints, multipliers) or of J (projection),
      descending, NaN-padded; ``rank`` (the count used), ``dropped`` (dropped to respect force bounds, §2.3.4),
      ``singular_value_cutoff`` (the smallest used; NaN if none);
    - ``jacobian_rank``: rank of the stacked Jacobian J by ``simulation.rank_tolerance``; ``rank_deficient``: J
      has fewer independent rows than active rows (redundant or singular constraints, Aghili Remark 4).

    Energy audit (thesis §2.3.2): ``power_constraints`` (K) = F·(J q̇) of each constraint; ``power_sources`` (4);
    ``energy_kinetic``, ``energy_gravity``, ``energy_elastic`` (J).

    Controllers: ``controller_rate`` ż (the rate of State.z) and ``controllers``: per controller name, its
    ``tracking_error`` e = q − q_d, ``desired`` q_d, ``sliding_variable`` s = ė + λe, ``s_energy`` ½ sᵀMs over
    its coordinates (eq. 3.5), ``torque`` (nv) it applies.
    """
    qdd: np.ndarray
    tau_applied: np.ndarray
    tau_control: np.ndarray
    constraint_force: np.ndarray
    constraint_force_magnitude: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    velocity_a: np.ndarray
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
    controller_rate: np.ndarray
    controllers: dict = field(default_factory=dict)
    quantities: dict = field(default_factory=dict)       # the control programs' quantities: name → value

    @property
    def power(self) -> np.ndarray:
        """All non-conservative powers, in the order the energy audit integrates them (State.work)."""
        return np.concatenate([self.power_constraints, self.power_sources])

    @property
    def energy_total(self) -> float:
        """Kinetic + gravitational + elastic energy (J): what the energy audit balances."""
        return self.energy_kinetic + self.energy_gravity + self.energy_elastic
