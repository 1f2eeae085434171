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
"""
from __future__ import annotations

import numpy as np

from ..constraints import constraint_rows
from ..points import link_kinematics
from .base import ControlInput, Controller, Tracking

__all__ = ["ProjectedInverseDynamics", "projector"]


def projector(J: np.ndarray, tolerance: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """``(P, J⁺)``: the null-space projector ``P = I − J⁺J`` (Aghili eq. 15) and the pseudo-inverse, from an SVD
    that treats singular values below ``tolerance`` × the largest as zero (redundant or singular constraints)."""
    n = J.shape[1]
    if J.shape[0] == 0:
        return np.eye(n), np.zeros((n, 0))
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    r = int(np.sum(s > tolerance * s[0])) if s.size and s[0] > 0 else 0
    V = Vt[:r].T
    return np.eye(n) - V @ V.T, V @ ((U[:, :r] / s[:r]).T)


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

    def limit(self, u):
        if self.torque_limit is None:
            return u
        lim = np.full(self.nv, np.inf)
        lim[self.dofs] = self.torque_limit
        return np.clip(u, -lim, lim)

    def _constraints(self, inp: ControlInput):
        model = self.model
        active = inp.active if inp.active is not None else np.array([c.enabled for c in model.constraints], bool)
        rows = constraint_rows(model, link_kinematics(model, inp.q, inp.qd), model.constraints, active, inp.t,
                               inp.overrides)
        return rows

    def solve(self, inp: ControlInput, z: np.ndarray, tr: Tracking) -> dict:
        """Everything the law computes at one state (for the torque and for diagnostics)."""
        M, h, n = inp.M, inp.b, self.nv
        rows = self._constraints(inp)
        J, gamma = rows.J, rows.gamma
        P, J_pinv = projector(J)
        S = np.zeros((self.n, n))
        S[np.arange(self.n), self.dofs] = 1.0                        # θ = S_θ q
        v = tr.qdd_d - self.kd * tr.e_dot - self.kp * tr.e           # θ̈_d + G_D ė_p + G_P e_p  (e_p = −e)
        u_p = np.linalg.lstsq(np.vstack([J, S]), np.concatenate([-gamma, v]), rcond=None)[0]   # (eq. 46)
        f_par = P @ (h + M @ u_p)                                    # f∥ = h∥ + P M u_p         (eq. 45)
        out = {"P": P, "f_par": f_par, "u_p": u_p, "rows": rows}
        if self.force_control:
            I = np.eye(n)
            Q = I - P
            Mc = M + P @ M - M @ P                                   # M_c = M + PM − MP          (eq. 23)
            mu = Q @ M @ np.linalg.inv(Mc)                           # μ = (I − P) α, α = M M_c⁻¹  (eq. 32)
            Cqd = -J_pinv @ gamma                                    # C q̇ = −J⁺ J̇q̇              (eq. 16)
            lam_d = np.zeros(J.shape[0])
            for i, force in self.desired_force.items():
                s = rows.slices[i]
                if s is not None:
                    lam_d[s] = self.model.constraints[i].basis.T @ force
            F_d = -J.T @ lam_d                                       # 𝓕_d = Aᵀλ_d, our sign: −Jᵀλ_d
            ext = inp.tau_external
            d = Q @ ext - mu @ (P @ ext)                             # what external forces add to 𝓕 (eq. 32)
            zf = Q @ z
            e_f = -(self.gi * zf + d) / (1.0 + self.gf)              # the loop 𝓕 = u_𝓕 + d solved for e_f
            u_F = F_d + self.gf * e_f + self.gi * zf                 # u_𝓕 = 𝓕_d + G_F e_f + G_I ∫e_f  (eq. 52)
            f_perp = Q @ h + mu @ (f_par - P @ h + M @ Cqd) + u_F    # f⊥ = h⊥ + μ(f∥ − h∥ + C_c q̇) + u_𝓕  (eq. 51)
            out.update(f=f_par + f_perp, e_f=e_f, F_d=F_d, F=F_d - e_f)
        elif not self.actuated.all():
            B = np.diag(self.actuated.astype(float))
            I = np.eye(n)
            Q = (I - B) @ (I - P)                                    # Q = I − B − P + BP          (eq. 57)
            H = -(I - P) @ np.linalg.pinv(Q) @ (I - B)               # H = −(I − P) Q⁺ (I − B)     (eq. 61)
            f = (I + H) @ f_par                                      # f = (I + H) f∥              (eq. 62)
            out.update(f=np.where(self.actuated, f, 0.0), passive_residual=float(np.abs(f[~self.actuated]).max()))
        else:
            out.update(f=f_par)                                      # minimum-norm torque         (eq. 48)
        return out

    def law(self, inp, z, tr: Tracking):
        sol = self.solve(inp, z, tr)
        z_rate = sol["e_f"] if self.force_control else z[:0]
        return sol["f"], z_rate

    def diagnostics(self, inp, z):
        d = super().diagnostics(inp, z)
        if self.force_control:
            sol = self.solve(inp, z, self.tracking(inp))
            d["constraint_force_error"] = sol["e_f"]
        return d
