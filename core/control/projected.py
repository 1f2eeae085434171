"""Control of constrained systems by projection (Aghili §7): projected inverse-dynamics motion control with the
minimum-norm torque (eq. 45–48), constraint-force control (eq. 51–52) and systems with passive joints
(eq. 55–62).

Notation (Aghili; our sign convention is M q̈ + b = τ + Jᵀλ, so Aghili's generalized constraint force is
``𝓕 = −Jᵀλ`` and his h is our b): A = J the stacked Jacobian of the active constraints (m x nv, any rank),
``P = I − J⁺J`` the projector onto its null space 𝒩, ``C q̇ = −J⁺ J̇q̇`` the normal acceleration (eq. 16),
``M_c = M + PM − MP`` (eq. 23), ``μ = (I − P) M M_c⁻¹`` (eq. 32). θ are k independent coordinates chosen among
the joints (``θ = S_θ q``), and ``Λ = ∂q/∂θ`` spans 𝒩 with ``S_θ Λ = 1``.

- Motion (eq. 45–46): ``f∥ = P (b + M u_p)``, ``u_p = Λ̇θ̇ + Λ (θ̈_d + G_D ė_p + G_P e_p)``, ``e_p = θ_d − θ``.
  u_p is the acceleration that is consistent with the constraints (``J u_p = −J̇q̇``) and whose θ-part is the
  desired ``θ̈_d + G_D ė_p + G_P e_p``, so it is found without differentiating Λ by solving
  ``[J; S_θ] u_p = [−J̇q̇; θ̈_d + G_D ė_p + G_P e_p]``. The error obeys ``ë_p + G_D ė_p + G_P e_p = 0`` (eq. 47)
  and f∥ ∈ 𝒩 is the minimum-norm torque that produces the motion (eq. 48).
- Constraint force (eq. 51–52): ``f⊥ = h⊥ + μ (f∥ − h∥ + M C q̇) + u_𝓕``, ``u_𝓕 = 𝓕_d + G_F e_f + G_I ∫e_f``,
  ``e_f = 𝓕_d − 𝓕``. With the model exact the constraint force is ``𝓕 = u_𝓕 + d``, where d is what the scene's
  force elements (unmodelled external forces, read from a force sensor) add to it (eq. 32), so the measured
  force and the control close an algebraic loop; it is solved exactly, ``e_f = −(G_I ∫e_f + d)/(1 + G_F)``, which
  is eq. 52's error dynamics ``(G_F + 1) ė_f + G_I e_f = 0`` for a constant d.
- Passive joints (eq. 55–62): with B the diagonal selector of the actuated joints, ``Q = (I − B)(I − P)``,
  ``H = −(I − P) Q⁺ (I − B)`` and ``f = (I + H) f∥``: a component in 𝒩⊥ (which moves nothing) is added so that the
  passive joints get no torque, the smallest such one.

This module holds the controller's parameters; its law is compiled in :mod:`core.control.kernels`
(``_projected``), where the projector uses a relative tolerance of 1e-9 on J's singular values.
"""
from __future__ import annotations

import numpy as np

from .base import Controller

__all__ = ["ProjectedInverseDynamics"]


class ProjectedInverseDynamics(Controller):
    """Projected inverse-dynamics control of a constrained system (see the module docstring). ``dofs``/``qidx``
    are the independent coordinates θ (hinge or slider joints) the trajectory gives; the torque acts on every
    actuated degree of freedom. ``actuated`` (nv bools) marks the actuated ones (default all); ``desired_force``
    (m,) are the constraint multipliers λ_d wanted on the rows of ``force_rows`` (constraint names); ``gf``,
    ``gi`` the PI gains of eq. 52. Gains kp = G_P (1/s²), kd = G_D (1/s)."""
    kind = "projected_inverse_dynamics"
    EDITABLE = Controller.EDITABLE + ("gf", "gi")

    def __init__(self, *args, actuated=None, desired_force=None, gf: float = 0.0, gi: float = 0.0, **kw):
        super().__init__(*args, **kw)
        self.actuated = np.ones(self.nv, bool) if actuated is None else np.asarray(actuated, bool)
        self.desired_force = desired_force          # {constraint index: world force on its point a (3,)} or None
        self.gf, self.gi = float(gf), float(gi)
        if self.desired_force and not self.actuated.all():
            raise ValueError("constraint-force control needs every joint actuated (Aghili §7.4: with passive "
                             "joints the constraint force may not be controllable)")

    @property
    def output_dofs(self) -> np.ndarray:
        return np.arange(self.nv)

    @property
    def force_control(self) -> bool:
        return bool(self.desired_force)

    @property
    def n_state(self) -> int:
        return self.nv if self.force_control else 0                  # ∫ e_f dt (generalized force, nv)
