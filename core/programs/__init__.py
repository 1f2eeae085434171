"""Control programs (Kearney, Hansen & Cremer §4): Python classes registered by name that a scene document names
and parameterizes — never code in the document. A program sees the simulation through :class:`Controls` and
has three hooks:

- :meth:`ControlProgram.start` at the start of a run (and after a reset);
- :meth:`ControlProgram.event` for every event of the step just taken (touchdowns, lift-offs, breaks …);
- :meth:`ControlProgram.step` before every step, where it commands actuators ("loosely coupled" control,
  §4.1) and adds or removes its own named constraints ("tightly coupled" control, §4.2): constraints on the
  configuration that the scene declares with ``"enabled": false`` and lists under the program's
  ``constraints`` (a program may never remove a mechanical constraint it does not own), and control equations
  on forces, torques and accelerations (:class:`Equation`, :meth:`Controls.impose`), solved with the dynamics
  for the actuator commands that satisfy them. Every addition and removal goes to the event log with its time
  and the program's name.

A scene's ``programs`` section: ``[{"name": "brain", "program": "raibert_hopper", "parameters": {…},
"constraints": [...]}]``. :data:`PROGRAMS` maps program names to classes; :func:`register` adds one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contacts import OPEN, SLIP, point_modes
from ..events import Event
from ..points import jacobian_at, link_kinematics, position_at, velocity_at

__all__ = ["ControlProgram", "Controls", "Equation", "ProgramSpec", "ProgramError", "PROGRAMS", "register",
           "momentum"]


class ProgramError(RuntimeError):
    """A control program misused the controls (an unknown actuator, a constraint it does not own)."""


@dataclass(frozen=True)
class ProgramSpec:
    """A program as a scene gives it: its ``name``, the registered ``program`` kind, its ``parameters`` (the
    class's defaults filled in) and the ``constraints`` it owns."""
    name: str
    program: str
    parameters: dict = field(default_factory=dict)
    constraints: tuple = ()

    def instantiate(self) -> "ControlProgram":
        return PROGRAMS[self.program](self.name, dict(self.parameters), self.constraints)


@dataclass
class Equation:
    """A control equation, linear in forces, actuator commands and accelerations (Kearney §4.2: "arbitrary linear
    constraints on accelerations, forces, and torques")::

        Σ forces[f] · F_f  +  Σ actuators[a] u_a  +  Σ accelerations[j] q̈_j  =  value

    ``forces``: a constraint's name → a world 3-vector (F its force on its point a; a joint-space constraint's
    multiplier λ is (λ, 0, 0), so a number there stands for (number, 0, 0)), or a contact's name → a 3-vector
    (F the ground's whole force on the body over its points: normal, stick and Coulomb forces); ``actuators``:
    an actuator's name → its coefficient; ``accelerations``: a hinge's or slider's name → its coefficient."""
    value: float = 0.0
    forces: dict = field(default_factory=dict)
    actuators: dict = field(default_factory=dict)
    accelerations: dict = field(default_factory=dict)


class ControlProgram:
    """Base of control programs. ``parameters``: the defaults of every parameter (a scene may give any subset;
    unknown names are validation errors); :meth:`check` returns ``[(parameter, message)]`` for bad values."""
    kind = ""
    parameters: dict[str, Any] = {}
    description = ""

    def __init__(self, name: str, parameters: dict, constraints: tuple = ()):
        self.name = name
        self.p = {**self.parameters, **parameters}
        self.owned = tuple(constraints)

    @classmethod
    def check(cls, parameters: dict, model) -> list[tuple[str, str]]:
        return []

    def start(self, ctl: "Controls") -> None:
        pass

    def event(self, ctl: "Controls", event: dict) -> None:
        pass

    def step(self, ctl: "Controls") -> None:
        pass

    def status(self) -> dict:
        """What the program reports about itself (the studio and ``core run`` show it)."""
        return {}


PROGRAMS: dict[str, type] = {}


def register(cls: type) -> type:
    """Register a :class:`ControlProgram` subclass under its ``kind`` (a class decorator)."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} has no kind")
    PROGRAMS[cls.kind] = cls
    return cls


def momentum(model, q: np.ndarray, qd: np.ndarray, kin=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(c, ċ, H_G)``: the centre of mass, its velocity and the angular momentum about it (world), from each
    link's spatial momentum I_k v_k (link frame, about its origin) moved to the world frame (``kin``: the link
    kinematics at (q, q̇), if already made)."""
    kin = link_kinematics(model, q, qd) if kin is None else kin
    h = np.einsum("kij,kj->ki", model.inertia, kin.v)           # [angular about the link origin; linear], link frames
    lin = np.einsum("kij,kj->ki", kin.R_WL, h[:, 3:])
    ang = np.einsum("kij,kj->ki", kin.R_WL, h[:, :3])
    H_O = (ang + _cross(kin.p_WL, lin)).sum(axis=0)
    L = lin.sum(axis=0)
    mass = float(model.mass.sum())
    c = (model.mass[:, None] * (kin.p_WL + np.einsum("kij,kj->ki", kin.R_WL, model.com))).sum(axis=0) / mass
    return c, L / mass, H_O - _cross(c, L)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b over the last axis (numpy's cross costs microseconds of argument handling per call)."""
    return np.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1], a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                     a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


class Controls:
    """What a program may read and do at the current state of a :class:`core.Simulation`."""

    def __init__(self, sim, program: ControlProgram):
        self._sim = sim
        self.program = program
        self._kin = None                                      # (state, its link kinematics)

    def kinematics(self):
        """The link kinematics (poses, velocities) at the current state, made once per state
        (:class:`core.points.LinkKinematics`)."""
        state = self._sim.state
        if self._kin is None or self._kin[0] is not state:
            self._kin = (state, link_kinematics(self._sim.model, state.q, state.qd))
        return self._kin[1]

    # ---- reading -----------------------------------------------------------------------------------------
    @property
    def t(self) -> float:
        return self._sim.state.t

    @property
    def q(self) -> np.ndarray:
        return self._sim.state.q

    @property
    def qd(self) -> np.ndarray:
        return self._sim.state.qd

    @property
    def model(self):
        return self._sim.model

    def joint(self, name: str) -> tuple[float, float]:
        """(position, velocity) of a hinge or slider joint."""
        m = self._sim.model
        return float(self.q[m.q_slice(name)][0]), float(self.qd[m.qd_slice(name)][0])

    def point(self, body: str, point) -> tuple[np.ndarray, np.ndarray]:
        """World position and velocity of a body point (a name or body coordinates)."""
        k, r = self._sim.model.resolve_point(body, point)
        kin = self.kinematics()
        return position_at(kin, k, r), velocity_at(kin, k, r)

    def jacobian(self, body: str, point) -> np.ndarray:
        """The world Jacobian (3 x nv) of a body point (a name or body coordinates)."""
        k, r = self._sim.model.resolve_point(body, point)
        return jacobian_at(self._sim.model, self.kinematics(), k, r)

    def orientation(self, body: str) -> np.ndarray:
        """The body's rotation matrix (world from body): ``R_WB = R_WL R_LB`` for a body merged into link L."""
        k, R_LB, _ = self._sim.model.body_frame(body)
        return self.kinematics().R_WL[k] @ R_LB

    def centre_of_mass(self) -> tuple[np.ndarray, np.ndarray]:
        c, cd, _ = momentum(self._sim.model, self.q, self.qd, self.kinematics())
        return c, cd

    def angular_momentum(self) -> np.ndarray:
        """The angular momentum about the centre of mass (world)."""
        return momentum(self._sim.model, self.q, self.qd, self.kinematics())[2]

    def in_contact(self, contact: str) -> bool:
        """Whether any point of ``contact`` touches now."""
        m = self._sim.model
        modes = point_modes(m, self._sim.state)
        k = 0
        for c in m.contacts:
            if c.name == contact:
                return bool(np.any(modes[k:k + len(c.points)] != OPEN))
            k += len(c.points)
        raise ProgramError(f"program {self.program.name!r}: no contact {contact!r}")

    # ---- acting ------------------------------------------------------------------------------------------
    def actuate(self, name: str, value: float) -> None:
        """Command actuator ``name`` from the next step on (clipped to its limit when applied)."""
        try:
            self._sim.set_actuator(name, value)
        except KeyError as exc:
            raise ProgramError(f"program {self.program.name!r}: {exc.args[0]}") from None

    def add(self, constraint: str) -> None:
        """Add (activate) one of the program's own named constraints; logged."""
        self._toggle(constraint, True)

    def remove(self, constraint: str) -> None:
        """Remove (deactivate) one of the program's own named constraints; logged."""
        self._toggle(constraint, False)

    def hold(self, constraint: str, value: float) -> None:
        """Add one of the program's own joint-space constraints Φ(q) = ``value`` (or move an active one to that
        value): its multiplier is then the actuator torque that holds it, solved with the contact forces
        (Kearney's tightly coupled control, §4.2: "the knee and hip joints were held in place")."""
        if constraint not in self.program.owned:
            raise ProgramError(f"program {self.program.name!r} may only hold its own constraints "
                               f"({', '.join(self.program.owned) or 'none'}), not {constraint!r}")
        try:
            self._sim.set_target(constraint, value)
        except KeyError as exc:
            raise ProgramError(f"program {self.program.name!r}: {exc.args[0]}") from None
        self._toggle(constraint, True)

    def impose(self, equations: dict, actuators) -> dict:
        """Impose the named control ``equations`` (name → :class:`Equation`) from this step on, solved with the
        dynamics at the current state for the commands of ``actuators`` (Kearney §4.2, tightly coupled control;
        the stance of §5.2, eq. 13–14, constrains the ground's force on the hopper). The forces and
        accelerations are affine in the commands at a state (:meth:`core.Simulation.actuator_response`), so the solve
        is exact at the state; the commands are then held over the step, like any sampled controller's. Fewer
        unknowns than equations: least squares; more: the smallest commands. Equations that were not imposed
        at the last call are logged as added and those no longer given as removed (``<program>.<equation>``);
        :meth:`retract` removes them all. Returns the commands and the equations' residual at them
        (``{"commands": {actuator: u}, "residual": {equation: r}}``; a command beyond its actuator's limit is
        clipped when applied, and the residual says by how much the equation is then missed)."""
        sim, m = self._sim, self._sim.model
        names, eqs = list(actuators), list(equations.items())
        rows = {}
        for _, e in eqs:
            for key in e.forces:
                if key not in rows:
                    rows[key] = self._force_rows(key)
        vel = {j: m.qd_slice(j).start for _, e in eqs for j in e.accelerations}
        limits = {f.name: f.limit for f in m.forces}
        for _, e in eqs:
            for a in e.actuators:
                if a not in limits:
                    raise ProgramError(f"program {self.program.name!r}: no actuator {a!r}")

        def read(d) -> list:
            out = []
            for _, e in eqs:
                v = 0.0
                for key, coef in e.forces.items():
                    coef = np.array([coef, 0.0, 0.0]) if np.isscalar(coef) else np.asarray(coef, float)
                    F = d.constraint_force[rows[key][0]].sum(axis=0) + rows[key][1]
                    v += float(coef @ F)
                for j, coef in e.accelerations.items():
                    v += coef * float(d.qdd[vel[j]])
                out.append(v)
            return out

        try:
            y0, G = sim.actuator_response(names, read)
        except KeyError as exc:
            raise ProgramError(f"program {self.program.name!r}: {exc.args[0]}") from None
        held = dict(sim.inputs.actuators)
        A = np.array(G, dtype=float).reshape(len(eqs), len(names))
        b = np.array([e.value for _, e in eqs], dtype=float) - np.asarray(y0, float).reshape(len(eqs))
        for r, (_, e) in enumerate(eqs):
            for a, coef in e.actuators.items():
                if a in names:
                    A[r, names.index(a)] += coef
                else:
                    b[r] -= coef * float(held.get(a, 0.0))
        u = np.linalg.lstsq(A, b, rcond=1e-12)[0] if A.size else np.zeros(len(names))
        applied = np.array([np.clip(x, -limits[n], limits[n]) for x, n in zip(u, names)])
        for n, x in zip(names, u):
            self.actuate(n, float(x))
        now = {name for name, _ in eqs}
        before = self.program.__dict__.setdefault("_equations", set())
        for name in sorted(now - before):
            self.log("added", constraint=f"{self.program.name}.{name}", control="equation")
        for name in sorted(before - now):
            self.log("removed", constraint=f"{self.program.name}.{name}", control="equation")
        self.program._equations = now
        residual = A @ applied - b
        return {"commands": dict(zip(names, map(float, u))),
                "residual": {name: float(r) for (name, _), r in zip(eqs, residual)}}

    def retract(self) -> None:
        """Remove every control equation :meth:`impose` imposed (logged); the actuators keep their last
        commands until the program sets others."""
        before = self.program.__dict__.get("_equations", set())
        for name in sorted(before):
            self.log("removed", constraint=f"{self.program.name}.{name}", control="equation")
        self.program._equations = set()

    def _force_rows(self, key: str) -> tuple[list, np.ndarray]:
        """The constraint rows whose forces make up force ``key`` of an :class:`Equation` (a constraint, or a
        contact: its points' normal and stick rows) and the part that does not depend on the commands (the
        Coulomb forces of its slipping points)."""
        m, state = self._sim.model, self._sim.state
        if key in m.constraint_names:
            return [m.constraint_names.index(key)], np.zeros(3)
        for c in m.contacts:
            if c.name == key:
                modes = point_modes(m, state)
                first = sum(len(d.points) for d in m.contacts[:m.contacts.index(c)])
                idx, slip = [], np.zeros(3)
                for k, p in enumerate(c.points):
                    idx.append(p.normal)
                    if p.stick >= 0:
                        idx.append(p.stick)
                        if modes[first + k] == SLIP:
                            slip = slip + state.slip[p.slot]
                return idx, slip
        raise ProgramError(f"program {self.program.name!r}: no constraint or contact {key!r} to constrain the "
                           f"force of")

    def log(self, kind: str, **fields) -> None:
        """Put an event of the program into the simulation's log."""
        self._sim.events.append(Event.logged(self.t, kind, self.program.name, **fields))

    def _toggle(self, constraint: str, on: bool) -> None:
        if constraint not in self.program.owned:
            raise ProgramError(f"program {self.program.name!r} may only add or remove its own constraints "
                               f"({', '.join(self.program.owned) or 'none'}), not {constraint!r}")
        i = self._sim.model.constraint_names.index(constraint)
        if bool(self._sim.state.active[i]) == on:
            return
        self._sim.set_active(constraint, on)
        self.log("added" if on else "removed", constraint=constraint)


from . import hopping  # noqa: E402,F401  (registers the hopping programs)
