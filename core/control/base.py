"""What every controller shares: its joints, desired trajectory, gains, torque limits and editable parameters.

A controller is a small object with identity (DESIGN.md): its gains are attributes that may be edited between
steps (:meth:`Controller.set_parameter`), and the compiled step reads them from a table
(:func:`core.control.kernels.controller_table`), where every law is evaluated (:mod:`core.control.kernels`). Its
*state* — adaptive parameters, integrals — is not kept in the object but in the simulation's integrated state
vector ``State.z`` (the slice ``z[offset : offset + n_state]``), so the integrator advances it together with q
and q̇ in every stage, and a rejected adaptive step or a reset cannot leave it out of step with the arm.
"""
from __future__ import annotations

from abc import ABC

import numpy as np

from ..model import Model

__all__ = ["Controller", "as_gain"]


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


class Controller(ABC):
    """Base class. ``dofs`` are the controlled entries of q̇ (and τ), ``qidx`` the matching entries of q (hinge and
    slider joints only, so both have one entry per joint); ``kind`` names the law the compiled step applies."""
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

    @property
    def n_parameters(self) -> int:
        """How many of its state's first entries are adaptive parameters (recorded, fig. 3.10)."""
        return 0

    def parameter_estimates(self, z: np.ndarray) -> np.ndarray:
        """The adaptive parameters recorded as a diagnostic (fig. 3.10); empty for a fixed controller."""
        return z[:self.n_parameters]

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

    @property
    def output_dofs(self) -> np.ndarray:
        """The entries of τ the controller may drive (its own joints; every joint for projected control)."""
        return self.dofs

