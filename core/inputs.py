"""What may change between steps without changing the model (:class:`Inputs`): the formulation, the integrator and
its tolerance, the solver, dragged nails, actuator commands, the studio's mouse spring, edited controller gains and
run-time constraint values. Immutable and hashable: a step caches its compiled tables per (model, inputs)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["Inputs", "NO_INPUTS"]


@dataclass(frozen=True)
class Inputs:
    """What may change between steps without changing the model (all optional; None: the scene's own).

    - ``formulation``: dynamic_constraints | projection | multipliers; ``integrator``: rk4 | cash_karp |
      semi_implicit_euler | implicitfast (:mod:`core.integrators`); ``tolerance``: cash_karp's error tolerance; ``solver``: ((key, value), …) over the
      scene's ``simulation.solver`` (method, rcond, rho);
    - ``nails``: ((name, t0, position, velocity), …) — a nail put at ``position`` at time t0, moving with
      ``velocity`` (the studio's drag);
    - ``actuators``: ((name, command), …);
    - ``pull``: (link, point in the link frame, world target, stiffness, damping) — the studio's mouse spring,
      whose work is booked as external;
    - ``gains``: ((controller, parameter, value), …) — edited controller parameters (kp, kd, eta, …);
    - ``targets``: ((constraint, value), …) — the values of joint-space constraints Φ(q) = value set at run time
      (a control program holding a joint where it is: Kearney's tightly coupled control, §4.2).

    Build new ones with :meth:`with_` (the instances are immutable and hashable)."""
    formulation: str | None = None
    integrator: str | None = None
    tolerance: float | None = None
    solver: tuple = ()
    nails: tuple = ()
    actuators: tuple = ()
    pull: tuple | None = None
    gains: tuple = ()
    targets: tuple = ()

    def __hash__(self) -> int:                # computed once: an Inputs is looked up at every step
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.formulation, self.integrator, self.tolerance, self.solver, self.nails, self.actuators,
                      self.pull, self.gains, self.targets))
            object.__setattr__(self, "_hash", h)
        return h

    def with_(self, **changes) -> "Inputs":
        """A copy with ``changes``; ``nails``, ``actuators``, ``gains`` and ``targets`` given as dicts are merged
        by name."""
        merged = {}
        for key, value in changes.items():
            if key == "nails" and isinstance(value, dict):
                old = {n[0]: n for n in self.nails}
                for name, (t0, p, v) in value.items():
                    old[name] = (name, float(t0), _vec(p), _vec(v))
                value = tuple(old.values())
            elif key in ("actuators", "targets") and isinstance(value, dict):
                old = dict(getattr(self, key))
                old.update({k: float(v) for k, v in value.items()})
                value = tuple(old.items())
            elif key == "gains" and isinstance(value, dict):
                old = {(c, p): v for c, p, v in self.gains}
                old.update({k: _hashable(v) for k, v in value.items()})
                value = tuple((c, p, v) for (c, p), v in old.items())
            elif key == "pull" and value is not None:
                link, r, target, k, c = value
                value = (int(link), _vec(r), _vec(target), float(k), float(c))
            elif key == "solver":
                value = tuple(sorted(dict(value).items()))
            merged[key] = value
        return replace(self, **merged)


def _vec(x) -> tuple:
    return tuple(float(v) for v in np.asarray(x, dtype=float).reshape(3))


def _hashable(v):
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(float(x) for x in np.asarray(v, dtype=float).ravel())
    return v


NO_INPUTS = Inputs()
