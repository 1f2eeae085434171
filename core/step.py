"""The public step: ``core.step(model, state, inputs, dt) -> (state, data, events)`` and
``core.evaluate(model, state, inputs) -> data`` — one pipeline for every scene, the command line, the sweeps
and the studio (DESIGN.md; MuJoCo's viewer only calls ``mj_step``).

Both are pure: they read a :class:`~core.model.Model` (frozen), a :class:`~core.model.State` (never modified;
a step returns a new one) and :class:`Inputs` — what may change between steps without changing the model: the
formulation, the integrator and its tolerance, the solver, dragged nails, actuator commands, the studio's mouse
spring and edited controller gains. Everything else a step needs (the compiled tables, an evaluation already
made at the state it starts from) is cached behind them, per model and inputs; a cache never changes a result.

A step handles the events at its start (thesis §2.3.4 and Kearney: an active constraint beyond its deviation
bound breaks and is removed; a change of the constraint Jacobian's rank deficiency is reported), then advances
one step of the compiled integrator (:mod:`core.integrators`). :func:`advance` takes a whole batch in one call
and stops at the first event, which the next step then handles — :meth:`core.Simulation.run` uses it.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from .constraints import constraint_table
from .contacts import (MODE_NAMES, OPEN, PENETRATION, SLIP, STICK, contact_point_body, contact_rows, impact,
                       limit_triggers, plane_frames, separations, slipping_away, tangential_velocity, touch_times,
                       triggers)
from .control.kernels import COMPUTED_TORQUE, PROJECTED, controller_table
from .data import Data
from .forces import ACTUATOR, force_table, pull_force
from .formulations import FORMULATIONS, RANK_TOLERANCE
from .integrators import CLOCK, EVENT, NOT_FINITE, RUNNING, advance as advance_kernel
from .joint_constraints import JOINT_SPACE
from .forward import workspace
from .layout import (FORMULATION_CODES, INTEGRATOR_CODES, PROJECTION, SETTINGS, VARIANT_CODES, OutputArrays, Outputs,
                     Tables, outputs)
from .model import Model, State
from .points import link_kinematics
from .records import record_columns

__all__ = ["Inputs", "Batch", "step", "evaluate", "advance", "DivergenceError", "INTEGRATOR_NAMES", "handle_events",
           "record_layout", "touching_at_start", "actuator_response"]

INTEGRATOR_NAMES = tuple(INTEGRATOR_CODES)


class DivergenceError(RuntimeError):
    """The state became non-finite or could not be evaluated; the caller keeps its last good state.
    ``records``: what :meth:`core.Simulation.run` recorded up to that state (None elsewhere)."""

    def __init__(self, message: str, records: dict | None = None):
        super().__init__(message)
        self.records = records


@dataclass(frozen=True)
class Inputs:
    """What may change between steps without changing the model (all optional; None: the scene's own).

    - ``formulation``: dynamic_constraints | projection | multipliers; ``integrator``: rk4 | cash_karp |
      semi_implicit_euler; ``tolerance``: cash_karp's error tolerance; ``solver``: ((key, value), …) over the
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


# ---- plans: the compiled tables of a model under some inputs --------------------------------------------

@dataclass
class _Plan:
    """The tables of one (model, inputs), the sizes of the integrated vector, and the output buffer of the last
    full evaluation with the state it belongs to (``at``: t, q, q̇, z, active)."""
    tables: Tables
    controllers: tuple
    nq: int
    nv: int
    nw: int
    integrator: str
    formulation: str
    out: OutputArrays
    kernel_out: Outputs
    workspace: object
    stage: Outputs
    clock: np.ndarray
    constraints: np.ndarray                # the tables' constraint and force rows (the contacts write theirs)
    forces: np.ndarray
    actuator_rows: tuple = ()              # rows of the force table that are actuators (:func:`_command`)
    commanded: tuple | None = None         # the actuator commands written into the force table
    targeted: tuple | None = None          # the constraint targets written into the constraint table
    at_state: State | None = None          # the State `out` was evaluated at (States are values)
    clear_state: State | None = None       # a State whose events were checked: none at its start
    lock: threading.Lock = field(default_factory=threading.Lock)


_PLANS: dict = {}
_PLANS_LOCK = threading.Lock()


def _plan(model: Model, inputs: Inputs) -> _Plan:
    """The plan of (model, inputs), cached. Actuator commands and constraint targets are not part of the key:
    they are written into the plan's tables (:func:`_command`), so a controller or program that commands
    actuators at every step reuses one plan."""
    plan = _cached_plan(_PLANS, _PLANS_LOCK, 32, model, _keyed(inputs))
    _command(model, plan, inputs)
    return plan


def _keyed(inputs: Inputs) -> Inputs:
    """``inputs`` without its actuator commands and constraint targets: the key of its plan (made once)."""
    keyed = inputs.__dict__.get("_keyed")
    if keyed is None:
        keyed = replace(inputs, actuators=(), targets=()) if inputs.actuators or inputs.targets else inputs
        object.__setattr__(inputs, "_keyed", keyed)
    return keyed


def _cached_plan(cache: dict, lock, limit: int, model: Model, keyed: Inputs) -> _Plan:
    """The plan of (model, keyed inputs) in ``cache``, built on a miss (at most ``limit`` kept, oldest out)."""
    key = (id(model), keyed)
    plan = cache.get(key)
    if plan is None or plan[0] is not model:
        plan = (model, _build_plan(model, keyed))
        with lock:
            if len(cache) > limit:
                cache.pop(next(iter(cache)))
            cache[key] = plan
    return plan[1]


def _command(model: Model, plan: _Plan, inputs: Inputs) -> None:
    """Write the actuator commands and constraint targets of ``inputs`` (else the scene's) into the plan's
    tables; an evaluation cached under other ones is dropped."""
    if plan.commanded is inputs.actuators and plan.targeted is inputs.targets:
        return
    if plan.targeted is not inputs.targets:
        targets = dict(inputs.targets)
        names = model.constraint_names
        for name in targets:
            if name not in names or model.constraints[names.index(name)].kind != JOINT_SPACE:
                raise KeyError(f"no joint-space constraint {name!r} to set the value of")
        for i, c in enumerate(model.constraints):
            if c.kind == JOINT_SPACE:
                value = float(targets.get(c.name, c.value))
                if plan.constraints["value"][i] != value:
                    plan.constraints["value"][i] = value
                    plan.at_state = plan.clear_state = None
        plan.targeted = inputs.targets
    given = dict(inputs.actuators)
    for name in given:
        if all(model.forces[i].name != name for i in plan.actuator_rows):
            known = ", ".join(model.forces[i].name for i in plan.actuator_rows) or "none"
            raise KeyError(f"no force element {name!r} (actuators: {known})")
    changed = False
    for i in plan.actuator_rows:
        e = model.forces[i]
        u = given.get(e.name, e.torque)
        if plan.forces["command"][i] != u:
            plan.forces["command"][i] = u
            changed = True
    if changed:
        plan.at_state = plan.clear_state = None
    plan.commanded = inputs.actuators


def controllers_under(model: Model, inputs: Inputs) -> tuple:
    """The model's controllers with the gains of ``inputs`` applied (copies; validated by each controller)."""
    if not inputs.gains:
        return model.controllers
    out = []
    for c in model.controllers:
        mine = [(p, v) for name, p, v in inputs.gains if name == c.name]
        if mine:
            c = copy.copy(c)
            for p, v in mine:
                c.set_parameter(p, list(v) if isinstance(v, tuple) else v)
        out.append(c)
    return tuple(out)


def _build_plan(model: Model, inputs: Inputs) -> _Plan:
    s = model.settings
    formulation = inputs.formulation or s.get("formulation", "dynamic_constraints")
    if formulation not in FORMULATIONS:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")
    integrator = inputs.integrator or s.get("integrator", "rk4")
    if integrator not in INTEGRATOR_CODES:
        raise ValueError(f"unknown integrator {integrator!r}; choose one of {', '.join(INTEGRATOR_CODES)}")
    names = model.constraint_names
    for name, *_ in inputs.nails:
        if name not in names:
            raise KeyError(f"no constraint {name!r}; constraints: {', '.join(names)}")
    force_names = [f.name for f in model.forces]
    for name, _ in inputs.actuators:
        if name not in force_names:
            raise KeyError(f"no force element {name!r}")
    solver = {**s.get("solver", {}), **dict(inputs.solver)}
    projection = s.get("projection", {}) or {}
    drags = {n: (t0, np.array(p), np.array(v)) for n, t0, p, v in inputs.nails}
    cons, tape, variables = constraint_table(model.constraints, drags)
    pull = () if inputs.pull is None else (pull_force(*inputs.pull),)
    forces = force_table(model.forces + pull, dict(inputs.actuators))
    controllers = controllers_under(model, inputs)
    K = len(model.constraints)
    ctl, ints, floats = controller_table(controllers, model.nv, K)
    kinds = set(ctl["kind"].tolist())
    settings = np.zeros(1, SETTINGS)
    st = settings[0]
    st["formulation"] = FORMULATION_CODES[formulation]
    st["method"] = 1 if solver.get("method", "svd") == "damped_least_squares" else 0
    st["rcond"], st["rho"] = solver.get("rcond", 1e-12), solver.get("rho", 1e-3)
    st["rank_tolerance"] = s.get("rank_tolerance", RANK_TOLERANCE)
    st["variant"] = VARIANT_CODES[projection.get("variant", "Mc")]
    st["gamma"] = projection.get("gamma") or np.nan
    st["projection_tolerance"] = projection.get("tolerance") or st["rank_tolerance"]
    st["position_tolerance"] = projection.get("position_tolerance", 1e-12)
    st["max_iterations"] = projection.get("max_iterations", 20)
    st["integrator"] = INTEGRATOR_CODES[integrator]
    tolerance = inputs.tolerance if inputs.tolerance is not None else s.get("tolerance", 1e-8)
    if not (np.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"the integrator tolerance must be positive, got {tolerance}")
    st["tolerance"] = tolerance
    st["mass_matrix"] = (st["formulation"] == PROJECTION or COMPUTED_TORQUE in kinds or PROJECTED in kinds)
    st["gravity_torque"] = any(c.kind == "computed_torque" and not c.model_gravity for c in controllers)
    tables = Tables(cons, tape, variables, forces, ctl, ints, floats, settings)
    nz = sum(c.n_state for c in controllers)
    nc = sum(c.n for c in controllers)
    R = sum(c.rows for c in model.constraints)
    arrays, out = outputs(model.nv, K, R, nz, nc, len(controllers))
    stage = outputs(model.nv, K, R, nz, nc, len(controllers))[1]
    L = max([len(c.tape) for c in model.constraints if c.kind == JOINT_SPACE] + [1])
    V = max([len(c.names) for c in model.constraints if c.kind == JOINT_SPACE] + [1])
    P = max([10 * model.n_links] + [c.n_parameters for c in controllers if c.kind == "slotine_li"]) \
        if controllers else 0                                   # the regressors' columns (Slotine–Li)
    F = max([2 * c.n * c.experts for c in controllers if c.kind == "mixture"] + [1])
    ws = workspace(model.n_links, model.nv, K, R, L, V, P, F, model.nq + model.nv + K + 4 + nz)
    actuators = tuple(i for i, e in enumerate(model.forces) if e.kind == ACTUATOR)
    return _Plan(tables, controllers, model.nq, model.nv, K + 4 + nz, integrator, formulation, arrays, out, ws,
                 stage, np.zeros(1, CLOCK), cons, forces, actuators)


# ---- the state as the integrated vector ----------------------------------------------------------------

def _pack(model: Model, state: State) -> np.ndarray:
    """A fresh integrated vector y = [q, q̇, work, z] of ``state`` (the kernel advances it in place)."""
    y = state.__dict__.get("_y")
    if y is not None and state.q.base is y and state.qd.base is y and state.work.base is y and state.z.base is y:
        return y.copy()                                       # (a State made by _unpack: its fields are views)
    return np.concatenate([np.asarray(state.q, float), np.asarray(state.qd, float), state.work, state.z])


def _unpack(model: Model, y: np.ndarray, state: State, t: float, corrections: float, step_size: float,
            iterations: int) -> State:
    """The State of the integrated vector y (which it takes over: q, q̇, work and z are views of it)."""
    nq, nv = model.nq, model.nv
    w = nq + nv + len(model.constraints) + 4
    new = State(t, y[:nq], y[nq:nq + nv], y[w:], y[nq + nv:w], state.active.copy(), corrections, step_size,
                state.rank_deficient, iterations, state.slip, state.touched)
    new.__dict__["_y"] = y
    return new


def _key(state: State) -> tuple:
    return (state.t, state.q.tobytes(), state.qd.tobytes(), state.z.tobytes(), state.active.tobytes())


def _holds(plan: _Plan, state: State) -> bool:
    """Whether the plan's output buffer holds the evaluation at ``state`` (the same State, or an equal one)."""
    at = plan.at_state
    return at is not None and (at is state or _key(at) == _key(state))


_NO_TRACE = np.zeros((0, 1))


class Batch(NamedTuple):
    """What :func:`advance` did: the ``state`` after the last good step, the ``steps`` taken, the ``status``
    ("ok", "event": stopped after a step that ends with an event, "diverged": the next step failed), the rows
    ``recorded`` into the trace, the steps ``since`` the last record and the contact ``events`` resolved inside
    the steps (scenes with contacts)."""
    state: State
    steps: int
    status: str
    recorded: int
    since: int
    events: tuple = ()


def _run(model: Model, state: State, plan: _Plan, dt: float, t_end: float, max_steps: int, trace=_NO_TRACE,
         energy0: float = 0.0, record_every: int = 1, since: int = 0, record_first: bool = False) -> Batch:
    """One call of the compiled batch; the plan's output buffer then holds the full evaluation at the returned
    state (unless it diverged before one could be made)."""
    y = _pack(model, state)
    clock = plan.clock
    clock[0] = (state.t, t_end, dt, state.step_size, state.corrections, max_steps, 0, 0,
                state.projection_iterations, state.rank_deficient, _holds(plan, state), energy0, max(1, record_every),
                since, 0, record_first)
    advance_kernel(model.kernel_tree, plan.tables, plan.workspace, plan.stage, y, state.active, clock,
                   plan.kernel_out, trace)
    t, _, _, step_size, corrections, _, steps, status, iterations, _, evaluated, _, _, since, recorded, _ = \
        clock[0].item()
    new = state if steps == 0 else _unpack(model, y, state, t, corrections, step_size, iterations)
    plan.at_state = new if evaluated else None
    if steps > 0 and status == RUNNING:
        plan.clear_state = new                                # the kernel found no event at its end
    return Batch(new, steps, _STATUS[status], recorded, since)


_STATUS = {RUNNING: "ok", EVENT: "event", NOT_FINITE: "diverged"}


def _evaluated(model: Model, state: State, plan: _Plan) -> None:
    """Make sure the plan's output buffer holds the full evaluation at ``state``."""
    if model.contacts:
        _contact_tables(model, plan, state)
    if _holds(plan, state):
        return
    if _run(model, state, plan, 1.0, state.t, 0).status == "diverged":
        raise DivergenceError(f"the dynamics could not be evaluated near t = {state.t:.6g} s (non-finite "
                              f"accelerations or powers); the state is diverging")


def _data(model: Model, plan: _Plan, state: State) -> Data:
    """A :class:`Data` (copies) of the plan's output buffer, which holds the evaluation at ``state``."""
    o = plan.out
    sc = o.scalars[0]
    K = len(model.constraints)
    R = o.singular_values.shape[0]
    ns = int(sc["n_svals"])
    sv = np.full(R, np.nan)
    sv[:ns] = o.singular_values[:ns]
    force = o.constraint_force.copy()
    m = int(sc["rows"])
    controllers, k = {}, 0
    for i, c in enumerate(plan.controllers):
        controllers[c.name] = {"tracking_error": o.tracking_error[k:k + c.n].copy(),
                               "desired": o.desired[k:k + c.n].copy(),
                               "sliding_variable": o.sliding[k:k + c.n].copy(),
                               "s_energy": float(o.s_energy[i]), "torque": o.torque[i].copy()}
        k += c.n
    return Data(qdd=o.qdd.copy(), tau_applied=o.tau.copy(), tau_control=o.tau_control.copy(), constraint_force=force,
                constraint_force_magnitude=np.linalg.norm(force, axis=1) if K else np.zeros(0),
                point_a=o.point_a.copy(), point_b=o.point_b.copy(), velocity_a=o.velocity_a.copy(),
                deviation=o.deviation.copy(), deviation_rate=o.deviation_rate.copy(), residual=o.residual.copy(),
                singular_values=sv, rank=int(sc["rank"]), dropped=int(sc["dropped"]),
                singular_value_cutoff=float(sc["cutoff"]), jacobian_rank=int(sc["jacobian_rank"]),
                rank_deficient=bool(m > 0 and sc["jacobian_rank"] < m), power_constraints=o.power[:K].copy(),
                power_sources=o.power[K:].copy(), energy_kinetic=float(sc["energy_kinetic"]),
                energy_gravity=float(sc["energy_gravity"]), energy_elastic=float(sc["energy_elastic"]),
                controller_rate=o.z_rate.copy(), controllers=controllers)


# ---- contacts: events inside a step (Kearney §3) ----------------------------------------------------------

#: At most this many contact events inside one step; more is chatter the rest speed did not end (a DivergenceError).
MAX_EVENTS_PER_STEP = 64
#: A point that switches between stick and slip this many times inside one step sticks until the step ends.
_MAX_SWITCHES = 4


def _contact_tables(model: Model, plan: _Plan, state: State, lead: float = 0.0) -> None:
    """Write what the contacts' rows take from ``state`` into the plan's tables: the friction force of every
    slipping point (``State.slip``) and, for spheres, the body point that touches the plane now (``lead``
    seconds later: half the step about to be taken, :func:`core.contacts.contact_point_body`). When that
    changes an evaluation cached at a state is stale, so it is dropped."""
    changed = False
    kin = None
    for c in model.contacts:
        for p in c.points:
            if p.friction < 0:
                continue
            f = state.slip[p.slot]
            if not np.array_equal(plan.forces["force"][p.friction], f):
                plan.forces["force"][p.friction] = f
                if p.reaction >= 0:
                    plan.forces["force"][p.reaction] = -f
                changed = True
            if (p.radius > 0 or p.reaction >= 0) and state.active[p.normal]:
                if kin is None:
                    kin = link_kinematics(model, state.q, state.qd if lead else None)
                n, _ = c.plane(kin)
                omega = None
                if lead:                                      # the point's link turning relative to the plane
                    omega = kin.v[p.link, :3]
                    if c.plane_link >= 0:
                        omega = omega - kin.R_WL[p.link].T @ (kin.R_WL[c.plane_link] @ kin.v[c.plane_link, :3])
                r = contact_point_body(p, kin.R_WL[p.link], n, omega, lead)
                if not np.array_equal(plan.constraints["r_a"][p.stick], r):
                    plan.constraints["r_a"][p.stick] = r
                    plan.forces["r_a"][p.friction] = r
                    changed = True
                if p.reaction >= 0:                           # the reaction acts on b's point where p touches
                    x = kin.p_WL[p.link] + kin.R_WL[p.link] @ r
                    rb = kin.R_WL[c.plane_link].T @ (x - kin.p_WL[c.plane_link])
                    if not np.array_equal(plan.forces["r_a"][p.reaction], rb):
                        plan.forces["r_a"][p.reaction] = rb
                        changed = True
    if changed:
        plan.at_state = None
        plan.clear_state = None


def _refresh_slip(model: Model, plan: _Plan, state: State) -> State:
    """``state`` with its slipping points' friction forces μN opposing their slip velocity, N and the velocity
    from the evaluation at ``state`` in the plan's output buffer (the direction kept while the point hardly
    moves)."""
    slip = None
    out = plan.out
    normals = None
    k = -1
    for c in model.contacts:
        if c.friction == 0:
            k += len(c.points)
            continue
        for p in c.points:
            k += 1
            if not state.active[p.normal] or state.active[p.stick]:
                continue
            if normals is None:
                normals = plane_frames(model, state.q)
            n = normals[k]
            N = max(float(n @ out.constraint_force[p.normal]), 0.0)
            vt = tangential_velocity(n, out, p)
            speed = float(np.linalg.norm(vt))
            old = state.slip[p.slot]
            direction = -vt / speed if speed > 1e-9 else old / max(float(np.linalg.norm(old)), 1e-300)
            f = c.friction * N * direction
            if np.linalg.norm(f - old) > 1e-12 * (np.linalg.norm(f) + 1e-300):
                if slip is None:
                    slip = state.slip.copy()
                slip[p.slot] = f
    return state if slip is None else replace(state, slip=slip)


def _contact_event(kind: str, state: State, c, p, **more) -> dict:
    return {"t": state.t, "type": kind, "contact": c.name, "point": p.label, **more}


def _limit_event(kind: str, state: State, lim, k: int, **more) -> dict:
    return {"t": state.t, "type": kind, "joint": lim.joint, "bound": ("lower", "upper")[k], **more}


def _rows_of(p) -> list[str]:
    return [p.label] + ([f"{p.label}.stick"] if p.stick >= 0 else [])


def _resolve(model: Model, plan: _Plan, state: State, fired: list, held=frozenset(),
             respond=None) -> tuple[State, list[dict]]:
    """Resolve the contact events ``fired`` at ``state`` (evaluated in the plan's buffer): an impact for the
    touchdowns (:func:`core.contacts.impact`), removed rows for lift-offs, slip and stick switches; then, until
    the modes are consistent (at most 8 rounds), lift-offs and slips the new modes cause at once. With
    ``respond`` (:func:`_contact_step`), the control programs answer the switches before the modes are settled,
    so the settling sees the commands they set (the events are handed to it, and returned as well)."""
    events: list[dict] = []
    active, slip, qd = state.active.copy(), state.slip.copy(), state.qd
    corrections = state.corrections
    touch = [(c, p) for kind, c, p, _ in fired if kind == "touchdown"]
    reached = [(lim, k) for kind, lim, k, _ in fired if kind == "limit"]
    if touch or reached:
        touching = touch + [(c, p) for c in model.contacts for p in c.points if state.active[p.normal]]
        bounds = reached + [(lim, k) for lim in model.limits for k in (0, 1)
                            if state.active[lim.rows[k]] and (lim, k) not in reached]
        qd, info = impact(model, state, touching, contact_rows(model), bounds)
        corrections += info["energy_change"]
        for lim, k in bounds:
            pn, _, vn, mode = info[(lim.label(k), lim.label(k))]
            was = bool(state.active[lim.rows[k]])
            active[lim.rows[k]] = mode != OPEN
            if (lim, k) in reached:
                events.append(_limit_event("limit" if mode != OPEN else "limit-bounce", state, lim, k, impulse=pn,
                                           unit="N·m·s" if lim.angular else "N·s", velocity=vn,
                                           added=[lim.label(k)] if mode != OPEN else []))
            elif was and mode == OPEN:
                events.append(_limit_event("limit-release", state, lim, k, force=0.0,
                                           unit="N·m" if lim.angular else "N", removed=[lim.label(k)]))
        new = {p.label for _, p in touch}
        for c, p in touching:
            pn, pt, vn, mode = info[(c.name, p.label)]
            was = bool(state.active[p.normal])
            active[p.normal] = mode != OPEN
            if p.stick >= 0:
                active[p.stick] = mode == STICK
                slip[p.slot] = 0.0
                if mode == SLIP:
                    tn = float(np.linalg.norm(pt))
                    slip[p.slot] = c.friction * 1e-300 * (pt / tn if tn > 0 else 0.0)   # direction; μN below
            if p.label in new:
                events.append(_contact_event("bounce" if mode == OPEN else "touchdown", state, c, p, impulse=pn,
                                             tangential_impulse=float(np.linalg.norm(pt)), normal_velocity=vn,
                                             restitution=c.restitution, mode=MODE_NAMES[mode],
                                             added=_rows_of(p)[:1 + (mode == STICK)] if mode != OPEN else []))
            elif was and mode == OPEN:
                events.append(_contact_event("lift-off", state, c, p, normal_force=0.0, removed=_rows_of(p)))
    _switch(model, state, plan.out, fired, active, slip, events)
    before = state.active
    state = replace(state, qd=np.array(qd, dtype=float), active=active, slip=slip, corrections=corrections)
    state = replace(state, touched=touch_times(model, before, state))
    plan.at_state = plan.clear_state = None
    if respond is not None and events:
        state, inputs = respond(state, events)
        _command(model, plan, inputs)
    for _ in range(8):                                        # consistent modes at the event
        _contact_tables(model, plan, state)
        _evaluated(model, state, plan)
        refreshed = _refresh_slip(model, plan, state)
        if refreshed is not state:
            state = refreshed
            continue
        now = [f for f in _fired(model, state, plan.out, state, None, held) if f[0] in ("lift-off", "slip",
                                                                                        "limit-release")]
        if not now:
            break
        active, slip = state.active.copy(), state.slip.copy()
        more: list[dict] = []
        _switch(model, state, plan.out, now, active, slip, more)
        before, state = state.active, replace(state, active=active, slip=slip)
        state = replace(state, touched=touch_times(model, before, state))
        plan.at_state = plan.clear_state = None
        if respond is not None:
            state, inputs = respond(state, more)
            _command(model, plan, inputs)
        events.extend(more)
    return state, events


def _switch(model: Model, state: State, out, fired: list, active: np.ndarray, slip: np.ndarray,
            events: list) -> None:
    """Apply the mode switches of ``fired`` at ``state`` (``out``: its evaluation) to ``active`` and ``slip``,
    and log them: lift-offs and released joint limits remove their rows, a slip removes a point's stick rows and
    continues its stick force's direction with magnitude μN, a stick adds them back."""
    for kind, c, p, g in fired:
        if kind == "limit-release":
            active[c.rows[p]] = False
            events.append(_limit_event("limit-release", state, c, p, force=g, unit="N·m" if c.angular else "N",
                                       removed=[c.label(p)]))
        elif kind == "lift-off":
            active[p.normal] = False
            if p.stick >= 0:
                active[p.stick] = False
                slip[p.slot] = 0.0
            events.append(_contact_event("lift-off", state, c, p, normal_force=g, removed=_rows_of(p)))
        elif kind == "slip":
            F = out.constraint_force[p.stick]
            N = float(plane_frames(model, state.q)[p.slot] @ out.constraint_force[p.normal])
            active[p.stick] = False
            slip[p.slot] = c.friction * N * F / max(float(np.linalg.norm(F)), 1e-300)
            events.append(_contact_event("slip", state, c, p, tangential_force=float(np.linalg.norm(F)),
                                         normal_force=N, removed=[f"{p.label}.stick"]))
        elif kind == "stick":
            active[p.stick] = True
            slip[p.slot] = 0.0
            events.append(_contact_event("stick", state, c, p, added=[f"{p.label}.stick"]))


def _fired(model: Model, state: State, out, before: State, eligible, held) -> list:
    """The contact and joint-limit events whose triggers hold at ``state`` (a step from ``before``)."""
    found = triggers(model, state, out, before, eligible, held) if model.contacts else []
    return found + limit_triggers(model, state, out) if model.limits else found


def _contact_step(model: Model, state: State, plan: _Plan, dt: float, t_end: float,
                  respond=None) -> tuple[State, list, str]:
    """One step of ``dt`` (to ``t_end`` at most) of a scene with contacts: ``(state, events, status)``. A step
    whose end triggers a contact event (:func:`core.contacts.triggers`) is isolated: re-stepped from the kept
    state with bisected step lengths until the event time is bracketed within ``simulation.event_tolerance``
    (Kearney's isolation predicate on time), resolved at the bracket's end, and the step goes on from there to
    its end. Status "diverged": the state returned is the last good one. ``respond(state, events) -> (state,
    inputs)``, when given, takes the events at once (instead of returning them) and answers with the state and
    the actuator commands to go on with from the event (the control programs' event hooks)."""
    target = min(state.t + dt, t_end)
    tolerance = float(model.settings.get("event_tolerance", 1e-9))
    events: list[dict] = []
    count = 0
    kernel_event = False
    switches: dict[str, int] = {}
    held: frozenset = frozenset()
    while state.t < target - 1e-12 * max(1.0, abs(target)):
        _contact_tables(model, plan, state, 0.5 * (target - state.t))
        batch = _run(model, state, plan, target - state.t, target, 1)
        if batch.status == "diverged" or batch.steps == 0:
            return state, events, "diverged"
        kernel_event = kernel_event or batch.status == "event"
        eligible = slipping_away(model, state) if state.slip.any() else None
        fired = _fired(model, batch.state, plan.out, state, eligible, held)
        if not fired:
            state = _refresh_slip(model, plan, batch.state)
            continue
        lo, hi, at = 0.0, batch.state.t - state.t, batch.state
        while hi - lo > tolerance:
            trial = _run(model, state, plan, 0.5 * (lo + hi), state.t + 0.5 * (lo + hi), 1)
            if trial.status == "diverged" or trial.steps == 0:
                break
            if _fired(model, trial.state, plan.out, state, eligible, held):
                hi, at = trial.state.t - state.t, trial.state
            else:
                lo = trial.state.t - state.t
        _evaluated(model, at, plan)
        state, resolved = _resolve(model, plan, at, _fired(model, at, plan.out, state, eligible, held), held,
                                   respond)                   # (control programs answer at the event, Kearney §4)
        if respond is None:
            events.extend(resolved)
        for e in resolved:                                    # stick–slip chatter at the cone's edge: hold it
            if e["type"] in ("slip", "stick"):
                switches[e["point"]] = switches.get(e["point"], 0) + 1
                if switches[e["point"]] >= _MAX_SWITCHES:
                    held = held | {p.slot for c in model.contacts for p in c.points if p.label == e["point"]}
        count += 1
        if count > MAX_EVENTS_PER_STEP:
            raise DivergenceError(f"more than {MAX_EVENTS_PER_STEP} contact events inside one step at t = "
                                  f"{state.t:.6g} s (chatter: a contact that keeps switching); lower the step or "
                                  f"raise the contacts' rest_speed")
    return state, events, "event" if kernel_event or events else "ok"


def touching_at_start(model: Model, state: State, inputs: Inputs = NO_INPUTS) -> tuple[State, list[dict]]:
    """``state`` with the contact points that touch it — open, within :data:`core.contacts.PENETRATION` of
    their plane — closed as at a touchdown (an impact with their current velocities, so a point that slides
    starts slipping), and the events that says. :class:`core.Simulation` starts every run this way, so a block
    put on the ground rests from t = 0 instead of falling the penetration tolerance first."""
    state = model.complete(state)
    if not model.contacts:
        return state, []
    plan = _plan(model, inputs)
    with plan.lock:
        _evaluated(model, state, plan)
        h = separations(model, plan.out, plane_frames(model, state.q))
        fired = [("touchdown", c, p, 0.0) for c in model.contacts for p in c.points
                 if not state.active[p.normal] and abs(h[p.slot]) <= PENETRATION]
        if not fired:
            return state, []
        return _resolve(model, plan, state, fired)


def _contact_advance(model: Model, state: State, plan: _Plan, dt: float, t_end: float, max_steps: int, trace,
                     energy0: float, record_every: int, since: int, record_first: bool, respond=None) -> Batch:
    """:func:`advance` for scenes with contacts: contact steps one at a time (:func:`_contact_step`), records
    written row by row; it stops after a step with events."""
    eps = 1e-12 * max(1.0, abs(t_end)) if np.isfinite(t_end) else 0.0
    rows, steps, status, events = 0, 0, "ok", []
    every = max(1, record_every)

    def record(s: State) -> None:
        nonlocal rows
        _contact_tables(model, plan, s)
        rows += _run(model, s, plan, dt, s.t, 0, trace[rows:rows + 1], energy0, 1, 0, True).recorded

    if record_first and trace.shape[0] > rows:
        record(state)
    while steps < max_steps and state.t < t_end - eps and (trace.shape[0] == 0 or rows < trace.shape[0]):
        new, more, status = _contact_step(model, state, plan, dt, t_end, respond)
        if status == "diverged":
            break
        state = new
        steps += 1
        since += 1
        events.extend(more)
        if trace.shape[0] and (since >= every or state.t >= t_end - eps):
            record(state)
            since = 0
        if status == "event":
            break
    plan.at_state = None
    return Batch(state, steps, status, rows, since, tuple(events))




# ---- the public face ---------------------------------------------------------------------------------------

def evaluate(model: Model, state: State, inputs: Inputs = NO_INPUTS) -> Data:
    """Everything derived at ``state`` under ``inputs`` (:class:`core.data.Data`); raises
    :class:`DivergenceError` if the dynamics cannot be evaluated there (non-finite results)."""
    state = model.complete(state)
    plan = _plan(model, inputs)
    with plan.lock:
        _evaluated(model, state, plan)
        return _data(model, plan, state)


_PROBES: dict = {}
_PROBES_LOCK = threading.Lock()


def actuator_response(model: Model, state: State, inputs: Inputs, actuators, read) -> tuple[np.ndarray, np.ndarray]:
    """How the quantities ``read(data)`` (a vector of whatever :class:`Data` gives: constraint and contact forces,
    accelerations …) at ``state`` depend on the commands of ``actuators`` (names), the other inputs held:
    ``(y0, G)`` with ``y(u) = y0 + G u`` — exact, since the constrained dynamics are affine in the applied
    forces at a state (while the solve keeps its rank and its force bounds do not act). Made from
    len(actuators) + 1 evaluations on a plan of its own, so a control program may call it while a step is
    under way (inside an event's answer) without touching the step's buffers (Kearney §4.2: "the system of
    equations is solved to determine the force required to satisfy the ... constraint")."""
    state = model.complete(state)
    plan = _cached_plan(_PROBES, _PROBES_LOCK, 8, model, _keyed(inputs))
    names = list(actuators)
    limits = {model.forces[i].name: model.forces[i].limit for i in plan.actuator_rows}
    unknown = [n for n in names if n not in limits]
    if unknown:
        raise KeyError(f"no actuator {unknown[0]!r} (actuators: {', '.join(limits) or 'none'})")
    unit = [min(1.0, 0.5 * limits[n]) for n in names]          # (inside the limit: a command is clipped to it)
    columns = []
    with plan.lock:
        for k in range(len(names) + 1):
            commands = {n: (unit[j] if j == k - 1 else 0.0) for j, n in enumerate(names)}
            _command(model, plan, inputs.with_(actuators=commands))
            _evaluated(model, state, plan)
            columns.append(np.array(read(_data(model, plan, state)), dtype=float).reshape(-1))
    y0 = columns[0]
    G = np.stack([(c - y0) / u for c, u in zip(columns[1:], unit)], axis=1) if names else np.zeros((len(y0), 0))
    return y0, G


def handle_events(model: Model, state: State, inputs: Inputs = NO_INPUTS) -> tuple[State, list[dict]]:
    """The events at ``state`` (thesis §2.3.4; Kearney's named constraints removed at run time): every active
    constraint whose deviation exceeds its bound breaks (``{"t", "type": "break", "constraint", "deviation",
    "max_deviation"}``), and a change of the constraint Jacobian's rank deficiency since the last report is
    reported (``{"t", "type": "rank_deficient" | "full_rank", "jacobian_rank", "rows", "formulation"}``).
    Returns the state with the broken constraints inactive and the report updated, and the events."""
    state = model.complete(state)
    plan = _plan(model, inputs)
    events: list[dict] = []
    if plan.clear_state is state:
        return state, events
    with plan.lock:
        _evaluated(model, state, plan)
        dev = plan.out.deviation
        broken = [i for i, c in enumerate(model.constraints)
                  if state.active[i] and dev[i] > c.max_deviation]
        if broken:
            active = state.active.copy()
            for i in broken:
                c = model.constraints[i]
                active[i] = False
                events.append({"t": state.t, "type": "break", "constraint": c.name, "deviation": float(dev[i]),
                               "max_deviation": c.max_deviation})
            state = replace(state, active=active)
            _evaluated(model, state, plan)
        sc = plan.out.scalars[0]
        m = int(sc["rows"])
        deficient = bool(m > 0 and sc["jacobian_rank"] < m)
        if deficient != state.rank_deficient:
            events.append({"t": state.t, "type": "rank_deficient" if deficient else "full_rank",
                           "jacobian_rank": int(sc["jacobian_rank"]), "rows": m,
                           "formulation": plan.formulation})
            state = replace(state, rank_deficient=deficient)
        plan.clear_state = state
    return state, events


def step(model: Model, state: State, inputs: Inputs = NO_INPUTS, dt: float | None = None):
    """Advance ``state`` by one step of ``dt`` (default: the scene's; with cash_karp, one accepted adaptive step
    of at most ``dt``): ``(new state, its Data, events)``. The events at the start are handled first
    (:func:`handle_events`). Raises :class:`DivergenceError` if the step gives a non-finite state or one whose
    dynamics cannot be evaluated; ``state`` is never modified."""
    dt = _dt(model, dt)
    state, events = handle_events(model, state, inputs)
    plan = _plan(model, inputs)
    with plan.lock:
        if model.contacts or model.limits:
            new, more, status = _contact_step(model, state, plan, dt, np.inf)
            if status == "diverged":
                raise DivergenceError(f"the step from t = {new.t:.6g} s (dt = {dt:g} s) gave a non-finite state "
                                      f"or dynamics; the state is diverging")
            _contact_tables(model, plan, new)
            _evaluated(model, new, plan)
            return new, _data(model, plan, new), events + more
        new, steps, status = _run(model, state, plan, dt, np.inf, 1)[:3]
        if status == "diverged" or steps == 0:
            raise DivergenceError(f"the step from t = {state.t:.6g} s (dt = {dt:g} s) gave a non-finite state or "
                                  f"dynamics; the state is diverging")
        return new, _data(model, plan, new), events


def advance(model: Model, state: State, inputs: Inputs = NO_INPUTS, dt: float | None = None,
            t_end: float = np.inf, max_steps: int = 1, trace: np.ndarray | None = None, energy0: float = 0.0,
            record_every: int = 1, since: int = 0, record_first: bool = False, respond=None) -> Batch:
    """Up to ``max_steps`` steps of ``dt`` from ``state`` in one compiled call, none past ``t_end`` (the last one
    shortened to land on it): a :class:`Batch`. It stops early after a step that ends with an event (handle it
    with :func:`handle_events` or :func:`step`) or before a step that fails; events at ``state`` itself are not
    handled. With a ``trace`` (rows x :func:`core.records.record_width`), records are written into its rows:
    ``state`` itself when ``record_first``, every ``record_every``-th step counting ``since`` steps already
    taken since the last record, and the step that reaches ``t_end``; a full trace ends the batch. Scenes with
    contacts or joint limits: ``respond`` as for :func:`_contact_step` (:class:`core.Simulation` answers with
    its control programs)."""
    dt = _dt(model, dt)
    state = model.complete(state)
    plan = _plan(model, inputs)
    with plan.lock:
        if model.contacts or model.limits:
            return _contact_advance(model, state, plan, dt, t_end, int(max_steps),
                                    _NO_TRACE if trace is None else trace, energy0, record_every, since, record_first,
                                    respond)
        return _run(model, state, plan, dt, t_end, int(max_steps), _NO_TRACE if trace is None else trace,
                    energy0, record_every, since, record_first)


def record_layout(model: Model, inputs: Inputs = NO_INPUTS) -> list:
    """The columns of the records of ``model`` under ``inputs`` (:func:`core.records.record_columns`)."""
    return record_columns(model, _plan(model, inputs).controllers)


def _dt(model: Model, dt) -> float:
    dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"time step must be positive, got {dt}")
    return dt
