"""Control programs (Kearney, Hansen & Cremer §4): Python classes registered by name that a scene document names
and parameterizes — never code in the document. A program is a set of *event handlers*; what it wants done
between events it *declares*, and the declarations run inside the compiled step at every integrator stage
(:mod:`core.programs.kernels`), so no Python runs between events:

- quantities (:meth:`Controls.declare`): named functions of the state — a joint, a body point, the centre of
  mass, a virtual leg's length or angle, a body's pitch, the angular momentum about the centre of mass, a rate;
- servos (:meth:`Controls.servo`, :meth:`Controls.actuate`): loosely coupled control (§4.1, eq. 10), a command
  linear in quantities, to actuators directly or through a quantity's gradient (a force along a virtual leg);
- control equations (:meth:`Controls.impose`): tightly coupled control (§4.2), linear in forces, moments,
  accelerations and commands, solved with the dynamics at every evaluation for the commands of their actuators;
- watches (:meth:`Controls.watch`): a quantity crossing a value — an event, isolated like a contact's;
- the program's own constraints (:meth:`Controls.add`, :meth:`Controls.remove`, :meth:`Controls.hold`): constraints
  the scene declares with ``"enabled": false`` and lists under the program's ``constraints``.

Hooks: :meth:`ControlProgram.start` when a run starts and :meth:`ControlProgram.event` for every event (contacts,
limits, breaks, its own watches), both at the event's state with a :class:`Controls`. A program's own state (its
attributes) and its declarations travel with the :class:`core.model.State` (``State.programs``,
``State.controls``), so :func:`core.step` stays pure: a handler works on copies. Every declaration added or removed
goes to the event log.

A scene's ``programs`` section: ``[{"name": "brain", "program": "raibert_hopper", "parameters": {…},
"constraints": [...]}]``. :data:`PROGRAMS` maps program names to classes; :func:`register` adds one.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..contacts import OPEN, point_modes
from ..events import Event
from ..forces import ACTUATOR
from ..points import jacobian_at, link_kinematics, position_at, velocity_at
from .kernels import (EQUATION, LHS, LHS_KINDS, QUANTITY, QUANTITY_KINDS, SERVO, TERM, WATCH,
                      evaluate_quantities)

__all__ = ["ControlProgram", "Controls", "Equation", "ProgramSpec", "ProgramError", "PROGRAMS", "register",
           "momentum", "Declarations", "start_programs", "answer"]


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
    """A control equation (Kearney §4.2: "arbitrary linear constraints on accelerations, forces, and torques")::

        Σ forces[f] · F_f + Σ moments[c] · M_c + Σ actuators[a] u_a + Σ accelerations[j] q̈_j
            + Σ quantity_accelerations[x] ẍ  =  clip(value + Σ terms[x] · x, lo, hi)

    ``forces``: a constraint's name → a world 3-vector (a joint-space constraint's multiplier λ is (λ, 0, 0), so
    a number stands for (number, 0, 0)), or a contact's name → a 3-vector (F the ground's whole force on the body
    over its points: normal, stick and Coulomb forces); instead of a vector, the name of a declared ``distance``
    quantity: its unit direction at every evaluation. ``moments``: a contact's name → the axis of the moment of
    its force about the centre of mass. ``actuators``: an actuator's name → its coefficient; ``accelerations``: a
    hinge's or slider's name → its coefficient; ``quantity_accelerations``: a declared joint, point,
    centre-of-mass, distance or angle quantity (declared with ``gradient=True``) → its coefficient (Kearney's
    composite quantities: ẍ = (∂ẋ/∂q̇) q̈ + its bias, a virtual leg's length or angle included). The right side is a law over
    declared quantities (``terms``: name → weight)."""
    value: float = 0.0
    forces: dict = field(default_factory=dict)
    actuators: dict = field(default_factory=dict)
    accelerations: dict = field(default_factory=dict)
    moments: dict = field(default_factory=dict)
    quantity_accelerations: dict = field(default_factory=dict)
    terms: dict = field(default_factory=dict)
    lo: float = -np.inf
    hi: float = np.inf


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

    @classmethod
    def check_owned(cls, parameters: dict, owned: tuple) -> list[tuple[str, str]]:
        """``[(parameter, message)]`` for parameters that must name one of the constraints the program owns
        (the scene's ``constraints`` list for it) and do not."""
        return []

    def start(self, ctl: "Controls") -> None:
        pass

    def event(self, ctl: "Controls", event: Event) -> None:
        pass

    def status(self) -> dict:
        """What the program reports about itself (the studio and ``core run`` show it)."""
        return {}

    def __deepcopy__(self, memo):
        """The copy a handler changes (:func:`_handle`, at every event the programs answer): its ``name``,
        ``owned`` and parameters ``p`` are shared — read-only after ``__init__`` — and everything else it holds
        is copied deeply (the generic copy of ``p``, some 40 entries, was most of a hopper's answer)."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        shared = ("name", "owned", "p")
        for key, value in self.__dict__.items():
            new.__dict__[key] = value if key in shared else copy.deepcopy(value, memo)
        return new


PROGRAMS: dict[str, type] = {}


def register(cls: type) -> type:
    """Register a :class:`ControlProgram` subclass under its ``kind`` (a class decorator)."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} has no kind")
    PROGRAMS[cls.kind] = cls
    return cls


# ---- declarations ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Declarations:
    """The control programs' declarations in force (a value: handlers make new ones). Keys are qualified by the
    program's name (``<program>.<name>``). ``quantities``: name → a :data:`QUANTITY` row (as a dict);
    ``servos``: name → (row dict, terms, actuators); ``equations``: name → (:class:`Equation`, actuators);
    ``watches``: name → (quantity, value, direction); ``targets``: constraint → value held."""
    quantities: tuple = ()
    servos: tuple = ()
    equations: tuple = ()
    watches: tuple = ()
    targets: tuple = ()

    def tables(self, model) -> dict:
        """The compiled tables of these declarations (:mod:`core.programs.kernels`), made once per value."""
        cached = self.__dict__.get("_tables")
        if cached is None:
            cached = _tables(model, self)
            object.__setattr__(self, "_tables", cached)
        return cached


NO_DECLARATIONS = Declarations()


def _records(dtype, rows: list) -> np.ndarray:
    """A table of ``dtype`` from dicts of field → value (a field not given: zero), made in one call (a record's
    fields set one by one cost about a microsecond each, and the tables are made anew whenever a program changes
    its declarations: a hopper's every touchdown, lift-off and apex)."""
    zero = np.zeros((), dtype).item()
    return np.array([tuple(row.get(name, z) for name, z in zip(dtype.names, zero)) for row in rows], dtype)


def _tables(model, d: Declarations) -> dict:
    qnames = [name for name, _ in d.quantities]
    index = {name: i for i, name in enumerate(qnames)}
    quantities = _records(QUANTITY, [{**spec, "ref": index[spec["ref"]]} if "ref" in spec else spec
                                     for _, spec in d.quantities])
    terms: list = []

    def law_terms(mapping) -> tuple[int, int]:
        first = len(terms)
        for name, w in mapping.items():
            terms.append({"quantity": index[name], "weight": float(w)})
        return first, len(mapping)

    forces = {f.name: i for i, f in enumerate(model.forces)}
    servos = []
    for _, (spec, mapping, actuators) in d.servos:
        first, n = law_terms(mapping)
        servos.append({"c0": spec["c0"], "lo": spec["lo"], "hi": spec["hi"], "first": first, "n": n,
                       "along": index[spec["along"]] if spec["along"] else -1,
                       "actuators": [forces[a] for a in actuators] + [-1] * (4 - len(actuators))})
    unknowns: list = []
    lhs: list = []
    equations = []
    contacts = {c.name: i for i, c in enumerate(model.contacts)}
    cnames = model.constraint_names
    for _, (eq, actuators) in d.equations:
        first, n = law_terms(eq.terms)
        lhs_first = len(lhs)
        for a in actuators:
            if forces[a] not in unknowns:
                unknowns.append(forces[a])
        for key, direction in eq.forces.items():
            along, vec = -1, np.zeros(3)
            if isinstance(direction, str):
                along = index[direction]
            elif np.isscalar(direction):
                vec[0] = float(direction)
            else:
                vec[:] = np.asarray(direction, float)
            contact = key in contacts
            lhs.append({"kind": LHS_KINDS["force"], "target": contacts[key] if contact else cnames.index(key),
                        "contact": contact, "along": along, "vec": vec, "weight": 1.0})
        for key, axis in eq.moments.items():
            lhs.append({"kind": LHS_KINDS["moment"], "target": contacts[key], "contact": True, "along": -1,
                        "vec": np.asarray(axis, float), "weight": 1.0})
        for joint, w in eq.accelerations.items():
            lhs.append({"kind": LHS_KINDS["acceleration"], "target": model.qd_slice(joint).start, "along": -1,
                        "weight": float(w)})
        for name, w in eq.quantity_accelerations.items():
            lhs.append({"kind": LHS_KINDS["quantity_acceleration"], "target": index[name], "along": -1,
                        "weight": float(w)})
        for a, w in eq.actuators.items():
            lhs.append({"kind": LHS_KINDS["actuator"], "target": forces[a], "along": -1, "weight": float(w)})
        equations.append({"c0": eq.value, "lo": eq.lo, "hi": eq.hi, "first": first, "n": n, "lhs_first": lhs_first,
                          "lhs_n": len(lhs) - lhs_first})
    watches = [{"quantity": index[quantity], "value": value, "direction": direction, "armed": True}
               for _, (quantity, value, direction) in d.watches]
    return {"quantities": quantities, "terms": _records(TERM, terms), "servos": _records(SERVO, servos),
            "watches": _records(WATCH, watches), "equations": _records(EQUATION, equations),
            "lhs": _records(LHS, lhs), "unknowns": np.array(unknowns, np.int64),
            "watch_names": tuple(tuple(name.split(".", 1)) for name, _ in d.watches), "quantity_names": tuple(qnames)}


def _put(items: tuple, key: str, value) -> tuple:
    """``items`` (a tuple of (key, value)) with ``key`` set to ``value`` (None: removed), order kept."""
    out = [(k, v) for k, v in items if k != key]
    if value is not None:
        old = [k for k, _ in items]
        out.insert(old.index(key) if key in old else len(out), (key, value))
    return tuple(out)


# ---- reading the state --------------------------------------------------------------------------------------

def _quantity_row(kind: str, **fields) -> dict:
    row = {"kind": QUANTITY_KINDS[kind], "link": -1, "link_b": -1, "qi": -1, "vi": -1, "ref": None,
           "gradient": False, "r": np.zeros(3), "r_b": np.zeros(3), "axis": np.zeros(3), "axis_b": np.zeros(3)}
    row.update(fields)
    if row["ref"] is None:
        row.pop("ref")
    return row


def momentum(model, q: np.ndarray, qd: np.ndarray, kin=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(c, ċ, H_G)``: the centre of mass, its velocity and the angular momentum about it (world), by the
    compiled quantities (:func:`core.programs.kernels.momentum_kernel`; ``kin`` is not needed)."""
    table = _momentum_table()
    values, rates = np.zeros(len(table)), np.zeros(len(table))
    evaluate_quantities.fast(model.kernel_tree, table, 0.0, np.asarray(q, float), np.asarray(qd, float), values,
                             rates)
    return values[:3], rates[:3], values[3:]


_MOMENTUM = None


def _momentum_table() -> np.ndarray:
    global _MOMENTUM
    if _MOMENTUM is None:
        rows = [_quantity_row("centre_of_mass", axis=e) for e in np.eye(3)] + \
               [_quantity_row("momentum", axis=e) for e in np.eye(3)]
        _MOMENTUM = np.zeros(6, QUANTITY)
        for row, spec in zip(_MOMENTUM, rows):
            for key, value in spec.items():
                row[key] = value
    return _MOMENTUM


class Controls:
    """What a program may read and do at an event's state (or at the start). Its actions change the
    declarations and the program's own constraints of the state the step goes on from."""

    def __init__(self, model, state, program: ControlProgram, declarations: Declarations, log: list):
        self.model = model
        self.state = state
        self.program = program
        self.declarations = declarations
        self.active = state.active
        self._log = log
        self._kin = None

    def _key(self, name: str) -> str:
        return f"{self.program.name}.{name}"

    def _fail(self, message: str):
        raise ProgramError(f"program {self.program.name!r}: {message}")

    # ---- reading -----------------------------------------------------------------------------------------
    @property
    def t(self) -> float:
        return self.state.t

    @property
    def q(self) -> np.ndarray:
        return self.state.q

    @property
    def qd(self) -> np.ndarray:
        return self.state.qd

    def kinematics(self):
        """The link kinematics (poses, velocities) at the state (:class:`core.points.LinkKinematics`)."""
        if self._kin is None:
            self._kin = link_kinematics(self.model, self.q, self.qd)
        return self._kin

    def joint(self, name: str) -> tuple[float, float]:
        """(position, velocity) of a hinge or slider joint."""
        m = self.model
        return float(self.q[m.q_slice(name)][0]), float(self.qd[m.qd_slice(name)][0])

    def point(self, body: str, point) -> tuple[np.ndarray, np.ndarray]:
        """World position and velocity of a body point (a name or body coordinates)."""
        k, r = self.model.resolve_point(body, point)
        kin = self.kinematics()
        return position_at(kin, k, r), velocity_at(kin, k, r)

    def jacobian(self, body: str, point) -> np.ndarray:
        """The world Jacobian (3 x nv) of a body point (a name or body coordinates)."""
        k, r = self.model.resolve_point(body, point)
        return jacobian_at(self.model, self.kinematics(), k, r)

    def orientation(self, body: str) -> np.ndarray:
        """The body's rotation matrix (world from body): ``R_WB = R_WL R_LB`` for a body merged into link L."""
        k, R_LB, _ = self.model.body_frame(body)
        return self.kinematics().R_WL[k] @ R_LB

    def centre_of_mass(self) -> tuple[np.ndarray, np.ndarray]:
        c, cd, _ = momentum(self.model, self.q, self.qd)
        return c, cd

    def angular_momentum(self) -> np.ndarray:
        """The angular momentum about the centre of mass (world)."""
        return momentum(self.model, self.q, self.qd)[2]

    def value(self, name: str) -> float:
        """The value of a declared quantity at the state (the compiled step's own function)."""
        tables = self.declarations.tables(self.model)
        names = tables["quantity_names"]
        if self._key(name) not in names:
            self._fail(f"no quantity {name!r} declared")
        values, rates = np.zeros(len(names)), np.zeros(len(names))
        evaluate_quantities.fast(self.model.kernel_tree, tables["quantities"], float(self.t),
                                 np.asarray(self.q, float), np.asarray(self.qd, float), values, rates)
        return float(values[names.index(self._key(name))])

    def in_contact(self, contact: str) -> bool:
        """Whether any point of ``contact`` touches now."""
        return self.points_touching(contact) > 0

    def points_touching(self, contact: str) -> int:
        """How many points of ``contact`` touch now (a planar foot: both heel and toe, or one)."""
        m = self.model
        modes = point_modes(m, replace(self.state, active=self.active))
        k = 0
        for c in m.contacts:
            if c.name == contact:
                return int(np.count_nonzero(modes[k:k + len(c.points)] != OPEN))
            k += len(c.points)
        self._fail(f"no contact {contact!r}")

    # ---- declaring ---------------------------------------------------------------------------------------
    def declare(self, name: str, kind: str, *, body=None, point=(0.0, 0.0, 0.0), body_b=None,
                point_b=(0.0, 0.0, 0.0), axis=None, axis_b=None, joint: str | None = None, of: str | None = None,
                gradient: bool = False) -> str:
        """Declare quantity ``name`` of ``kind`` (:data:`core.programs.kernels.QUANTITY_KINDS`): ``time``;
        ``joint`` (``joint``); ``point`` (``body``, ``point``; the component along ``axis``); ``centre_of_mass``
        (along ``axis``); ``distance`` from (``body``, ``point``) to (``body_b``, ``point_b``) — a body None is the
        centre of mass; ``angle`` of the line between them, atan2(axis·d, axis_b·d); ``body_angle`` of the body-fixed
        direction ``point`` of ``body``, atan2(axis·u, axis_b·u); ``momentum`` (about the centre of mass, along
        ``axis``); ``rate`` (the rate of quantity ``of``). ``gradient``: make ∂ẋ/∂q̇ (a servo ``along`` it, an
        equation's quantity acceleration). Returns ``name``."""
        if kind not in QUANTITY_KINDS:
            self._fail(f"unknown quantity kind {kind!r} (kinds: {', '.join(QUANTITY_KINDS)})")
        m = self.model
        spec = {"gradient": bool(gradient)}

        def where(b, p):
            if b is None:
                return -1, np.zeros(3)
            if isinstance(b, (int, np.integer)):               # a link index and link coordinates
                return int(b), np.asarray(p, float)
            k, r = m.resolve_point(b, p)
            return k, np.asarray(r, float)

        if kind == "joint":
            if joint not in m.joint_names:
                self._fail(f"no joint {joint!r}")
            spec.update(qi=m.q_slice(joint).start, vi=m.qd_slice(joint).start)
        elif kind in ("point", "distance", "angle"):
            spec["link"], spec["r"] = where(body, point)
            if kind != "point":
                spec["link_b"], spec["r_b"] = where(body_b, point_b)
        elif kind == "body_angle":
            k, R_LB, _ = m.body_frame(body)
            spec["link"], spec["r"] = k, R_LB @ np.asarray(point, float)
        elif kind == "rate":
            if self._key(of) not in dict(self.declarations.quantities):
                self._fail(f"no quantity {of!r} to take the rate of")
            spec["ref"] = self._key(of)
        if axis is not None:
            spec["axis"] = np.asarray(axis, float)
        if axis_b is not None:
            spec["axis_b"] = np.asarray(axis_b, float)
        self.declarations = replace(self.declarations, quantities=_put(self.declarations.quantities,
                                                                       self._key(name), _quantity_row(kind, **spec)))
        return name

    def _actuators(self, actuators) -> tuple:
        names = {f.name for f in self.model.forces if f.kind == ACTUATOR}
        actuators = tuple(actuators)
        for a in actuators:
            if a not in names:
                self._fail(f"no actuator {a!r} (actuators: {', '.join(sorted(names)) or 'none'})")
        if not 0 < len(actuators) <= 4:
            self._fail("a servo or an equation drives one to four actuators")
        return actuators

    def _terms(self, terms: dict) -> dict:
        known = dict(self.declarations.quantities)
        out = {}
        for name, w in terms.items():
            if self._key(name) not in known:
                self._fail(f"no quantity {name!r} declared")
            out[self._key(name)] = float(w)
        return out

    def servo(self, name: str, actuators, value: float = 0.0, terms: dict | None = None, along: str | None = None,
              lo: float = -np.inf, hi: float = np.inf) -> None:
        """Servo ``name``: the command u = clip(value + Σ terms[x] · x, lo, hi) over declared quantities, at every
        evaluation, to ``actuators`` — as it is, or through quantity ``along``'s gradient (τ = (∂x/∂q̇)ᵀ u on the
        actuated coordinates: a force along a virtual leg). Replaces a servo of that name; an actuator is
        commanded by the sum of the servos on it."""
        spec = {"c0": float(value), "lo": float(lo), "hi": float(hi),
                "along": None if along is None else self._key(along)}
        if along is not None and not dict(self.declarations.quantities)[self._key(along)]["gradient"]:
            self._fail(f"servo {name!r}: quantity {along!r} was declared without gradient=True")
        entry = (spec, self._terms(terms or {}), self._actuators(actuators))
        self.declarations = replace(self.declarations, servos=_put(self.declarations.servos, self._key(name), entry))

    def release(self, name: str) -> None:
        """Remove servo ``name`` (its actuators fall back to their other commands)."""
        self.declarations = replace(self.declarations, servos=_put(self.declarations.servos, self._key(name), None))

    def actuate(self, actuator: str, value: float) -> None:
        """Command ``actuator`` with a constant (clipped to its limit when applied): a servo of no terms."""
        self.servo(f"actuate:{actuator}", (actuator,), value)

    def watch(self, name: str, quantity: str, value: float, direction: int = 1) -> None:
        """Arm watch ``name``: an event when ``quantity`` crosses ``value`` rising (``direction`` +1) or falling
        (−1), isolated in time like a contact's; it fires once, at the crossing, and the program's
        :meth:`ControlProgram.event` hears of it (kind ``watch``, ``what`` ``<program>.<name>``)."""
        if self._key(quantity) not in dict(self.declarations.quantities):
            self._fail(f"no quantity {quantity!r} declared")
        entry = (self._key(quantity), float(value), 1.0 if direction >= 0 else -1.0)
        self.declarations = replace(self.declarations, watches=_put(self.declarations.watches, self._key(name), entry))

    def unwatch(self, name: str) -> None:
        self.declarations = replace(self.declarations, watches=_put(self.declarations.watches, self._key(name), None))

    def impose(self, equations: dict, actuators) -> None:
        """Impose the named control ``equations`` (name → :class:`Equation`), solved with the dynamics at every
        evaluation — every integrator stage — for the commands of ``actuators`` (Kearney §4.2, tightly coupled
        control; :func:`core.forward.equations_stage`). Fewer unknowns than equations: least squares; more: the
        smallest commands; commands beyond an actuator's limit are clipped. Replaces the program's equations:
        those new are logged as added, those no longer given as removed (``<program>.<equation>``)."""
        actuators = self._actuators(actuators)
        m = self.model
        for a in actuators:
            f = next(f for f in m.forces if f.name == a and f.kind == ACTUATOR)
            if f.gain != 1.0 or any(f.bias) or np.isfinite(f.command_range).any() or f.force_range is not None:
                self._fail(f"actuator {a!r} has a gain, a bias or a command or force range (an MJCF actuator): "
                           "control equations solve for the commands of plain actuators (force = command, ±limit)")
        contacts = {c.name for c in m.contacts}
        quantities = dict(self.declarations.quantities)
        new = []
        for name, e in equations.items():
            for key, direction in e.forces.items():
                if key not in contacts and key not in m.constraint_names:
                    self._fail(f"no constraint or contact {key!r} to constrain the force of")
                if isinstance(direction, str) and self._key(direction) not in quantities:
                    self._fail(f"no quantity {direction!r} declared")
            for key in e.moments:
                if key not in contacts:
                    self._fail(f"no contact {key!r} to constrain the moment of")
            for a in e.actuators:
                self._actuators((a,))
            for j in e.accelerations:
                if j not in m.joint_names:
                    self._fail(f"no joint {j!r}")
            qualified = replace(e, terms=self._terms(e.terms),
                                forces={k: (self._key(v) if isinstance(v, str) else v) for k, v in e.forces.items()},
                                quantity_accelerations=self._terms(e.quantity_accelerations))
            accelerable = {QUANTITY_KINDS[k] for k in ("joint", "point", "centre_of_mass", "distance", "angle")}
            for x in qualified.quantity_accelerations:
                if quantities[x]["kind"] not in accelerable:
                    self._fail(f"equation {name!r}: quantity {x.split('.', 1)[1]!r} has no acceleration an "
                               "equation can constrain (a joint, a point, the centre of mass, a distance or an "
                               "angle between two points)")
                if not quantities[x]["gradient"]:
                    self._fail(f"equation {name!r}: quantity {x.split('.', 1)[1]!r} needs gradient=True")
            new.append((self._key(name), (qualified, actuators)))
        mine = self.program.name + "."
        before = {k for k, _ in self.declarations.equations if k.startswith(mine)}
        now = {k for k, _ in new}
        for key in sorted(now - before):
            self.log("added", constraint=key, control="equation")
        for key in sorted(before - now):
            self.log("removed", constraint=key, control="equation")
        others = tuple((k, v) for k, v in self.declarations.equations if not k.startswith(mine))
        self.declarations = replace(self.declarations, equations=others + tuple(new))

    def retract(self) -> None:
        """Remove every control equation of the program (logged)."""
        mine = self.program.name + "."
        for key in sorted(k for k, _ in self.declarations.equations if k.startswith(mine)):
            self.log("removed", constraint=key, control="equation")
        self.declarations = replace(self.declarations, equations=tuple(
            (k, v) for k, v in self.declarations.equations if not k.startswith(mine)))

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
        self._owned(constraint)
        from ..joint_constraints import JOINT_SPACE
        i = self.model.constraint_names.index(constraint)
        if self.model.constraints[i].kind != JOINT_SPACE:
            self._fail(f"{constraint!r} is not a joint-space constraint")
        self.declarations = replace(self.declarations,
                                    targets=_put(self.declarations.targets, constraint, float(value)))
        self._toggle(constraint, True)

    def log(self, kind: str, **fields) -> None:
        """Put an event of the program into the log."""
        self._log.append(Event.logged(self.t, kind, self.program.name, **fields))

    def _owned(self, constraint: str) -> None:
        if constraint not in self.program.owned:
            self._fail(f"may only add, remove or hold its own constraints "
                       f"({', '.join(self.program.owned) or 'none'}), not {constraint!r}")

    def _toggle(self, constraint: str, on: bool) -> None:
        self._owned(constraint)
        i = self.model.constraint_names.index(constraint)
        if bool(self.active[i]) == on:
            return
        self.active = self.active.copy()
        self.active[i] = on
        self.log("added" if on else "removed", constraint=constraint)


# ---- running the handlers -----------------------------------------------------------------------------------

def _handle(model, state, call) -> tuple:
    """Run ``call(program, ctl)`` for every program on copies of the programs and declarations of ``state``:
    the new state and the events the programs logged."""
    programs = copy.deepcopy(state.programs)
    declarations = state.controls or NO_DECLARATIONS
    log: list = []
    active = state.active
    for program in programs:
        ctl = Controls(model, replace(state, active=active), program, declarations, log)
        call(program, ctl)
        declarations, active = ctl.declarations, ctl.active
    return replace(state, programs=programs, controls=declarations, active=active), log


def start_programs(model, state) -> tuple:
    """The state with the scene's control programs made and started (their :meth:`ControlProgram.start`), and
    the events they logged."""
    state = replace(state, programs=tuple(spec.instantiate() for spec in model.programs), controls=NO_DECLARATIONS)
    return _handle(model, state, lambda p, ctl: p.start(ctl))


def answer(model, state, events) -> tuple:
    """The programs' answer to ``events`` at ``state`` (the state where they happened): each program's
    :meth:`ControlProgram.event` for every event that is not a program's log and, of the watches, its own (a
    watch fired is disarmed first). Returns the new state and the events the programs logged."""
    declarations = state.controls or NO_DECLARATIONS
    fired = [e.what for e in events if e.kind == "watch"]
    if fired:
        declarations = replace(declarations, watches=tuple((k, v) for k, v in declarations.watches
                                                           if k not in fired))
        state = replace(state, controls=declarations)

    def call(program, ctl):
        for event in events:
            if event.kind == "watch" and event.program != program.name:
                continue
            if event.kind != "watch" and event.program:
                continue
            program.event(ctl, event)

    return _handle(model, state, call)


from . import flip, hopping, particle  # noqa: E402,F401  (registers the programs)
