"""What every controller shares: the input it sees at one integrator stage, the tracking quantities of the
thesis's §3.2 (error, reference velocity, sliding variable), gains, torque limits and editable parameters.

A controller is a small object with identity (DESIGN.md): its gains are attributes that may be edited between
steps (:meth:`Controller.set_parameter`); its *state* — adaptive parameters, integrals — is not kept in the
object but in the simulation's integrated state vector ``z`` (the slice ``z[offset : offset + n_state]``), so
the integrator advances it together with q and q̇ in every stage, and a rejected adaptive step or a reset
cannot leave it out of step with the arm.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from ..crba import mass_matrix
from ..model import Model
from ..rnea import nonlinear_effects

__all__ = ["ControlInput", "Controller", "Tracking", "as_gain"]


@dataclass
class ControlInput:
    """The plant as one controller stage sees it at (t, q, q̇): ``M`` (nv x nv) and ``b`` = C q̇ + g (nv) are
    computed on first use and shared by every controller of the stage. ``active``/``overrides`` are the
    simulation's constraint flags and moved nails; ``external`` a callable giving the generalized force of the
    scene's force elements (a force sensor; only the constraint-force controller uses it)."""
    model: Model
    t: float
    q: np.ndarray
    qd: np.ndarray
    active: np.ndarray | None = None
    overrides: dict | None = None
    external: object = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def M(self) -> np.ndarray:
        if "M" not in self._cache:
            self._cache["M"] = mass_matrix(self.model, self.q)
        return self._cache["M"]

    @property
    def b(self) -> np.ndarray:
        if "b" not in self._cache:
            self._cache["b"] = nonlinear_effects(self.model, self.q, self.qd)
        return self._cache["b"]

    @property
    def gravity_torque(self) -> np.ndarray:
        """g(q): the generalized gravity force (RNEA at rest)."""
        if "g" not in self._cache:
            zero = np.zeros(self.model.nv)
            self._cache["g"] = nonlinear_effects(self.model, self.q, zero)
        return self._cache["g"]

    @property
    def tau_external(self) -> np.ndarray:
        if "ext" not in self._cache:
            self._cache["ext"] = np.zeros(self.model.nv) if self.external is None else self.external()
        return self._cache["ext"]


def as_gain(value, n: int, what: str) -> np.ndarray:
    """A positive gain given as a scalar or one value per controlled coordinate, as an (n,) array."""
    g = np.asarray(value, dtype=float).reshape(-1)
    if g.size == 1:
        g = np.full(n, g[0])
    if g.size != n:
        raise ValueError(f"{what} needs 1 or {n} values, got {g.size}")
    if not np.all(np.isfinite(g)) or np.any(g < 0):
        raise ValueError(f"{what} must be finite and non-negative, got {g.tolist()}")
    return g


@dataclass
class Tracking:
    """The tracking quantities at one instant (eq. 3.4–3.8), over the controlled coordinates:
    ``e = q − q_d``, ``ė``, ``λ = K_d⁻¹K_p``, reference velocity ``q̇_r = q̇_d − λe``, ``q̈_r = q̈_d − λė`` and the
    sliding variable (reference velocity error) ``s = q̇ − q̇_r = ė + λe``."""
    q_d: np.ndarray
    qd_d: np.ndarray
    qdd_d: np.ndarray
    e: np.ndarray
    e_dot: np.ndarray
    qd_r: np.ndarray
    qdd_r: np.ndarray
    s: np.ndarray


class Controller(ABC):
    """Base class. ``dofs`` are the controlled entries of q̇ (and τ), ``qidx`` the matching entries of q (hinge and
    slider joints only, so both have one entry per joint). Subclasses implement :meth:`law`."""
    kind = "controller"
    EDITABLE = ("kp", "kd", "torque_limit", "enabled")

    def __init__(self, name: str, model: Model, dofs, qidx, trajectory, kp, kd, torque_limit=None,
                 enabled: bool = True):
        self.name = name
        self.model = model
        self.nv = model.nv
        self.dofs = np.asarray(dofs, dtype=np.int64)
        self.qidx = np.asarray(qidx, dtype=np.int64)
        self.trajectory = trajectory
        self.enabled = bool(enabled)
        self.kp = as_gain(kp, self.n, "kp")
        self.kd = as_gain(kd, self.n, "kd")
        self.torque_limit = None if torque_limit is None else as_gain(torque_limit, self.n, "torque_limit")

    @property
    def n(self) -> int:
        return self.dofs.size

    # ---- state --------------------------------------------------------------------------------------------
    @property
    def n_state(self) -> int:
        """Size of this controller's slice of the integrated state (adaptive parameters, integrals)."""
        return 0

    def initial_state(self) -> np.ndarray:
        return np.zeros(self.n_state)

    def parameter_estimates(self, z: np.ndarray) -> np.ndarray:
        """The adaptive parameters recorded as a diagnostic (fig. 3.10); empty for a fixed controller."""
        return z[:0]

    # ---- parameters -----------------------------------------------------------------------------------------
    def set_parameter(self, key: str, value) -> None:
        """Edit a gain between steps (the studio's parameter panel); validated like the scene document."""
        if key not in self.EDITABLE:
            raise KeyError(f"controller {self.name!r} ({self.kind}) has no editable parameter {key!r}; "
                           f"editable: {', '.join(self.EDITABLE)}")
        if key in ("kp", "kd"):
            setattr(self, key, as_gain(value, self.n, key))
        elif key == "torque_limit":
            self.torque_limit = None if value is None else as_gain(value, self.n, key)
        elif key == "enabled":
            self.enabled = bool(value)
        else:
            value = float(value)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{key} must be finite and non-negative, got {value}")
            setattr(self, key, value)

    # ---- the law ---------------------------------------------------------------------------------------------
    def tracking(self, inp: ControlInput) -> Tracking:
        q_d, qd_d, qdd_d = self.trajectory.evaluate(inp.t)
        e = inp.q[self.qidx] - q_d
        e_dot = inp.qd[self.dofs] - qd_d
        lam = self.kp / self.kd                                   # λ = K_d⁻¹ K_p          (eq. 3.7)
        qd_r = qd_d - lam * e                                     # q̇_r = q̇_d − λe
        qdd_r = qdd_d - lam * e_dot                               # q̈_r = q̈_d − λė
        return Tracking(q_d, qd_d, qdd_d, e, e_dot, qd_r, qdd_r, e_dot + lam * e)   # s = ė + λe

    @abstractmethod
    def law(self, inp: ControlInput, z: np.ndarray, tr: Tracking) -> tuple[np.ndarray, np.ndarray]:
        """``(τ over the controlled coordinates (n,), ż (n_state,))``; each controller defines it."""

    def output(self, inp: ControlInput, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(τ (nv,), ż)``: the law's torques clipped to the actuator limits and placed in joint space. A disabled
        controller applies nothing and holds its state."""
        tau = np.zeros(self.nv)
        if not self.enabled:
            return tau, np.zeros(self.n_state)
        tr = self.tracking(inp)
        u, z_rate = self.law(inp, z, tr)
        tau[self.output_dofs] = self.limit(u)
        return tau, z_rate

    @property
    def output_dofs(self) -> np.ndarray:
        return self.dofs

    def limit(self, u: np.ndarray) -> np.ndarray:
        return u if self.torque_limit is None else np.clip(u, -self.torque_limit, self.torque_limit)

    def diagnostics(self, inp: ControlInput, z: np.ndarray) -> dict[str, np.ndarray]:
        """Tracking error e, desired q_d, sliding variable s, the s-energy ``V_s = ½ sᵀ M s`` (eq. 3.5, M over the
        controlled coordinates), the torques applied and the adaptive parameters (fig. 3.10)."""
        tr = self.tracking(inp)
        tau, _ = self.output(inp, z)
        M = inp.M[np.ix_(self.dofs, self.dofs)]
        return {"tracking_error": tr.e, "desired": tr.q_d, "sliding_variable": tr.s,
                "s_energy": np.float64(0.5 * tr.s @ M @ tr.s), "torque": tau,
                "parameters": self.parameter_estimates(z)}
