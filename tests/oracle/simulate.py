"""One evaluation, one step and a run: the former Python path of ``core.Simulation``, in plain NumPy.

Evaluation at (t, q, q̇, z) (Mitchell thesis §2.4.3, eq. 2.38–2.41)::

    controllers → τ_c, ż          (thesis ch. 3, Aghili §7; :mod:`oracle.controllers`)
    force elements → τ_e, powers   (:mod:`oracle.forces`);   τ = τ_e + τ_c, τ_c·q̇ booked with the actuators
    rows J, γ, D, Ḋ, stab          (:mod:`oracle.rows`)
    no active rows:   q̈ = M⁻¹(τ − b)
    otherwise:        the formulation's solve (:mod:`oracle.solve`) → q̈, λ
    constraint force on point a: E λ;  its power λ·(J q̇);  residual ‖η‖ per constraint

The step (DESIGN.md; Kearney's events around the integrator)::

    at the step boundary: active constraints with ‖D‖ > max_deviation break (event "break", thesis §2.3.4);
                          a change of J's row-rank deficiency is logged ("rank_deficient" / "full_rank")
    integrate (q, q̇) and w = [work (K + 4), z] with rk4 | cash_karp | semi_implicit_euler
    a constraint beyond its bound at the step's end: the step taken again from its start with bisected lengths
    until the crossing is bracketed within ``simulation.event_tolerance``; it breaks at the bracket's end and
    the step goes on from there to its end
    projection formulation with active constraints: Newton–Raphson + velocity projection (Aghili eq. 39); the
    energy it changes is booked as ``corrections``

Cash–Karp step control: h = min(h_prev, dt, dt_max); the error ``max |err| / (tol (1 + |x|))`` over q, q̇ and z
(not the work integrals); accept when ≤ 1 (or h < 1e-12), then h_next = min(h · min(5, max(1, 0.9 err^−0.2)),
dt) (5 when err = 0); otherwise shrink h by max(0.1, 0.9 err^−0.25) (by 0.1 when err is not finite) and retry.

Energy audit (thesis §2.3.2): ``energy_error = E(t) − E(0) − Σ work − corrections`` with E = kinetic + gravity +
elastic; it is the integration error alone.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

import core

from .controllers import ControlInput, build_controllers, control_stage, state_slices
from .forces import POWER_SOURCES, applied_forces, pull_element
from .integrators import ADAPTIVE, FIXED_STEP
from .rows import constraint_rows
from .solve import project_state, solve

__all__ = ["evaluate", "initial_state", "step", "run", "total_energy", "controller_diagnostics",
           "DivergenceError", "POWER_SOURCES"]

INTEGRATORS = tuple(FIXED_STEP) + tuple(ADAPTIVE)


class DivergenceError(RuntimeError):
    """The state became non-finite (the oracle's step leaves its input state untouched)."""


def _controllers(model, controllers):
    if controllers is True:
        return build_controllers(model)
    if not controllers:
        return ()
    return tuple(controllers)


def _default_active(model):
    return np.array([c.enabled for c in model.constraints], dtype=bool)


def initial_z(model, controllers=True) -> np.ndarray:
    cs = _controllers(model, controllers)
    return np.concatenate([c.initial_state() for c in cs]) if cs else np.zeros(0)


def _elements(model, pull):
    return tuple(model.forces) + ((pull_element(model, pull),) if pull is not None else ())


def _control_input(model, t, q, qd, active, nails, actuators, pull):
    def external():                           # the force elements' generalized force (a force sensor)
        return applied_forces(model, t, q, qd, _elements(model, pull), actuators)[0]
    return ControlInput(model, t, q, qd, active, nails or {}, external)


def _evaluate(model, t, q, qd, z, active, nails, actuators, pull, formulation, controllers, energies=True):
    """The evaluation (see the module docstring); the dict of :func:`evaluate` without controller diagnostics."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    K, nv = len(model.constraints), model.nv
    cs = _controllers(model, controllers)
    z = initial_z(model, cs) if z is None else np.asarray(z, dtype=float)
    active = _default_active(model) if active is None else np.asarray(active, dtype=bool)
    formulation = formulation or model.settings.get("formulation", "dynamic_constraints")
    tau_c, z_rate = np.zeros(nv), np.zeros(0)
    if cs:
        tau_c, z_rate = control_stage(cs, _control_input(model, t, q, qd, active, nails, actuators, pull), z)
    tau, power_sources, elastic, forces_sources = applied_forces(model, t, q, qd, _elements(model, pull), actuators)
    if cs:                                                    # the controllers act through the actuators
        tau = tau + tau_c
        power_sources[POWER_SOURCES.index("actuators")] += float(tau_c @ qd)
        forces_sources[POWER_SOURCES.index("actuators")] += tau_c
    rows = constraint_rows(model, t, q, qd, active, nails)
    total_rows = sum(c.rows for c in model.constraints)
    force = np.zeros((K, 3))
    residual = np.full(K, np.nan)
    svals = np.full(total_rows, np.nan)
    power_c = np.zeros(K)
    forces_c = np.zeros((K, nv))
    rank = dropped = jacobian_rank = 0
    cutoff, deficient = np.nan, False
    deviation_rate = rows.deviation_rate.copy()
    M = core.mass_matrix(model, q)
    b = core.nonlinear_effects(model, q, qd)
    if rows.J.shape[0] == 0:
        qdd = cho_solve(cho_factor(M), tau - b)
    else:
        sol = solve(formulation, model, M, b, tau, rows, model.settings)
        qdd = sol.qdd
        Jqd = rows.J @ qd
        for i, s in enumerate(rows.slices):
            if s is None:
                continue
            c = model.constraints[i]
            force[i] = rows.bases[i] @ sol.lam[s]
            residual[i] = np.linalg.norm(sol.residual[s])
            power_c[i] = sol.lam[s] @ Jqd[s]                              # λ·(J q̇)
            forces_c[i] = rows.J[s].T @ sol.lam[s]                        # Jᵀλ
            if c.first_order:                                             # velocity constraint: Ḋ = J q̈ + γ
                deviation_rate[i] = np.linalg.norm(rows.J[s] @ qdd + rows.gamma[s])
        svals[:sol.singular_values.size] = sol.singular_values
        rank, dropped, cutoff = sol.rank, sol.dropped, sol.cutoff
        jacobian_rank, deficient = sol.jacobian_rank, bool(sol.rank_deficient)
    return {
        "qdd": qdd, "tau_applied": tau, "tau_control": tau_c, "constraint_force": force,
        "constraint_force_magnitude": np.linalg.norm(force, axis=1), "deviation": rows.deviation,
        "deviation_rate": deviation_rate, "residual": residual, "singular_values": svals, "rank": int(rank),
        "dropped": int(dropped), "singular_value_cutoff": float(cutoff), "jacobian_rank": int(jacobian_rank),
        "rank_deficient": deficient, "power_constraints": power_c, "power_sources": power_sources,
        "power_forces": np.vstack([forces_c, forces_sources]),
        "energy_kinetic": core.kinetic_energy(model, q, qd) if energies else np.nan,
        "energy_gravity": core.potential_energy(model, q) if energies else np.nan,
        "energy_elastic": elastic, "controller_rate": z_rate,
    }


def controller_diagnostics(model, t, q, qd, z=None, active=None, nails=None, actuators=None, pull=None,
                           controllers=True) -> dict:
    """Per controller name: tracking_error (e = q − q_d), desired (q_d), sliding_variable (s), s_energy
    (½ sᵀ M s over the controlled coordinates), torque (nv, clipped), parameters (adaptive parameters), and
    constraint_force_error for constraint-force control."""
    cs = _controllers(model, controllers)
    if not cs:
        return {}
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    z = initial_z(model, cs) if z is None else np.asarray(z, dtype=float)
    active = _default_active(model) if active is None else np.asarray(active, dtype=bool)
    inp = _control_input(model, t, q, qd, active, nails, actuators, pull)
    return {c.name: c.diagnostics(inp, z[s]) for c, s in zip(cs, state_slices(cs))}


def evaluate(model, t, q, qd, z=None, active=None, nails=None, actuators=None, pull=None, formulation=None,
             controllers=True) -> dict:
    """Everything one evaluation derives at (t, q, q̇) with the controller state z (default: the controllers'
    initial state), the constraint flags ``active`` (default: as enabled in the scene), dragged ``nails``
    {name: (t0, position, velocity)}, ``actuators`` {name: command}, the mouse ``pull`` (link, r, target,
    stiffness, damping) and the ``formulation`` (default: the scene's). ``controllers``: True (the scene's, built
    from the spec), False (none) or a sequence of oracle controllers.

    Keys: qdd, tau_applied, tau_control, constraint_force (K, 3), constraint_force_magnitude, deviation,
    deviation_rate, residual (K; NaN inactive), singular_values (NaN-padded to the total row count), rank,
    dropped, singular_value_cutoff, jacobian_rank, rank_deficient, power_constraints (K), power_sources
    (dampers, drag, actuators, external), power_forces (K + 4, nv: their generalized forces), energy_kinetic,
    energy_gravity, energy_elastic, controller_rate (ż), controllers ({name: diagnostics})."""
    d = _evaluate(model, t, q, qd, z, active, nails, actuators, pull, formulation, controllers)
    d["controllers"] = controller_diagnostics(model, t, q, qd, z, active, nails, actuators, pull, controllers)
    return d


def total_energy(model, t, q, qd) -> float:
    """Kinetic + gravitational + elastic (the scene's force elements) energy."""
    elastic = applied_forces(model, t, q, qd, tuple(model.forces))[2] if model.forces else 0.0
    return core.kinetic_energy(model, q, qd) + core.potential_energy(model, q) + elastic


def _first_stage(d) -> tuple:
    """The first stage of a step from the evaluation d: ``(q̈, ẇ, the power categories' generalized forces)``."""
    return (d["qdd"], np.concatenate([d["power_constraints"], d["power_sources"], d["controller_rate"]]),
            d["power_forces"])


def _energy(d) -> float:
    return d["energy_kinetic"] + d["energy_gravity"] + d["energy_elastic"]


# ---- the step ---------------------------------------------------------------------------------------------------

def initial_state(model, dt=None, controllers=True) -> dict:
    """The scene's initial state: t = 0, q0, q̇0, the controllers' initial z, zero work (K + 4), no corrections,
    the enabled constraints, and the adaptive step size h = dt."""
    return {"t": 0.0, "q": np.array(model.q0, dtype=float), "qd": np.array(model.qd0, dtype=float),
            "z": initial_z(model, controllers), "work": np.zeros(len(model.constraints) + len(POWER_SOURCES)),
            "corrections": 0.0, "active": _default_active(model),
            "h": float(dt if dt is not None else model.settings.get("dt", 1e-3)), "rank_deficient": False,
            "energy0": None, "projection_iterations": 0, "events": []}


class _Stepper:
    """The inputs of a run (fixed between steps) and the step itself."""

    def __init__(self, model, dt, integrator, formulation, tolerance, nails, actuators, pull, controllers):
        self.model = model
        self.dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
        self.integrator = integrator or model.settings.get("integrator", "rk4")
        if self.integrator not in INTEGRATORS:
            raise ValueError(f"unknown integrator {self.integrator!r}")
        self.formulation = formulation or model.settings.get("formulation", "dynamic_constraints")
        self.tolerance = float(tolerance if tolerance is not None else model.settings.get("tolerance", 1e-8))
        self.nails, self.actuators, self.pull = nails or {}, actuators or {}, pull
        self.controllers = _controllers(model, controllers)

    def data(self, t, q, qd, z, active, energies=True):
        return _evaluate(self.model, t, q, qd, z, active, self.nails, self.actuators, self.pull, self.formulation,
                         self.controllers, energies)

    def step(self, state: dict, data: dict | None, dt_max=None):
        """``(new state, data at the new state)``; ``data``: the evaluation at ``state`` if known."""
        model = self.model
        s = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in state.items()}
        s["events"] = []
        active = s["active"]
        if data is None:
            data = self.data(s["t"], s["q"], s["qd"], s["z"], active)
        if s.get("energy0") is None:
            s["energy0"] = _energy(data)
        # events at the step boundary: breaking constraints (thesis §2.3.4), then rank changes
        broken = [i for i, c in enumerate(model.constraints) if active[i] and data["deviation"][i] > c.max_deviation]
        for i in broken:
            c = model.constraints[i]
            active[i] = False
            s["events"].append({"t": s["t"], "type": "break", "constraint": c.name,
                                "deviation": float(data["deviation"][i]), "max_deviation": c.max_deviation})
        if broken:
            data = self.data(s["t"], s["q"], s["qd"], s["z"], active)
        if data["rank_deficient"] != s["rank_deficient"]:
            s["rank_deficient"] = data["rank_deficient"]
            rows = sum(c.rows for c, on in zip(model.constraints, active) if on)
            s["events"].append({"t": s["t"], "type": "rank_deficient" if data["rank_deficient"] else "full_rank",
                                "jacobian_rank": int(data["jacobian_rank"]), "rows": rows,
                                "formulation": self.formulation})
        nw = s["work"].size

        def f(t, q, qd, w):
            d = self.data(t, q, qd, w[nw:], active, energies=False)
            return d["qdd"], np.concatenate([d["power_constraints"], d["power_sources"], d["controller_rate"]])

        k1 = _first_stage(data)
        limit = self.dt if dt_max is None else min(self.dt, dt_max)
        h, solution = self._length(s, f, k1, limit, nw)
        target = s["t"] + h
        while True:
            moved = self._advance(s, f, k1, h, nw, active, solution)
            d1 = self.data(*moved[:4], active)
            beyond = self._beyond(d1, active)
            if beyond:
                # a break inside the step (thesis §2.3.4), isolated as core's witnesses isolate it: the step taken
                # again from its start with bisected lengths until the crossing is bracketed within the event
                # tolerance; the constraints beyond their bound at the bracket's end break there
                lo, hi = 0.0, h
                while hi - lo > model.settings.get("event_tolerance", 1e-9):
                    mid = 0.5 * (lo + hi)
                    tried = self._advance(s, f, k1, mid, nw, active)
                    d_mid = self.data(*tried[:4], active)
                    beyond_mid = self._beyond(d_mid, active)
                    if beyond_mid:
                        hi, moved, d1, beyond = mid, tried, d_mid, beyond_mid
                    else:
                        lo = mid
            s["t"], s["q"], s["qd"], s["z"], dw, correction, s["projection_iterations"] = moved
            s["work"] = s["work"] + dw[:nw]
            s["corrections"] += correction
            if not beyond:
                return s, d1
            for i in beyond:
                c = model.constraints[i]
                active[i] = False
                s["events"].append({"t": s["t"], "type": "break", "constraint": c.name,
                                    "deviation": float(d1["deviation"][i]), "max_deviation": c.max_deviation})
            data = self.data(s["t"], s["q"], s["qd"], s["z"], active)
            if s["t"] >= target - 1e-12 * max(1.0, abs(target)):
                return s, data
            k1 = _first_stage(data)
            h, solution = self._length(s, f, k1, target - s["t"], nw)   # the rest of the step
            target = s["t"] + h if self.integrator in ADAPTIVE else target

    def _beyond(self, d, active) -> list:
        """The active constraints beyond their deviation bound in the evaluation ``d``."""
        return [i for i, c in enumerate(self.model.constraints) if active[i] and d["deviation"][i] > c.max_deviation]

    def _length(self, s, f, k1, limit, nw) -> tuple:
        """The step from ``s``: ``(limit, None)``, or with Cash–Karp the accepted adaptive step no longer than it
        and its fifth-order ``(q, q̇, Δw)`` (s["h"] becomes the next step to try)."""
        if self.integrator in FIXED_STEP:
            return limit, None
        w = np.concatenate([s["work"], s["z"]])
        h = min(s["h"], limit)
        while True:
            (q, qd, dw), (eq, ev, ew) = ADAPTIVE[self.integrator](self.model, f, s["t"], s["q"], s["qd"], h, k1, w)
            z = s["z"] + dw[nw:]
            scale = self.tolerance * np.concatenate([1.0 + np.abs(q), 1.0 + np.abs(qd), 1.0 + np.abs(z)])
            err = float(np.max(np.abs(np.concatenate([eq, ev, ew[nw:]])) / scale)) if scale.size else 0.0
            if err <= 1.0 or h < 1e-12:
                grow = 5.0 if err == 0 else min(5.0, max(1.0, 0.9 * err ** -0.2))
                s["h"] = min(h * grow, self.dt)
                return h, (q, qd, dw)
            h *= 0.1 if not np.isfinite(err) else max(0.1, 0.9 * err ** -0.25)

    def _advance(self, s, f, k1, h, nw, active, solution=None) -> tuple:
        """A step of h from ``s`` (the fixed-step integrator, or Cash–Karp's fifth-order solution; ``solution``:
        that step's ``(q, q̇, Δw)`` already made) with the projection formulation's drift removal:
        ``(t, q, q̇, z, Δw, correction, projection iterations)``. Raises :class:`DivergenceError` on a non-finite
        state."""
        model = self.model
        w = np.concatenate([s["work"], s["z"]])
        t0 = s["t"]
        if solution is not None:
            q, qd, dw = solution
        elif self.integrator in FIXED_STEP:
            q, qd, dw = FIXED_STEP[self.integrator](model, f, t0, s["q"], s["qd"], h, k1, w)
        else:
            q, qd, dw = ADAPTIVE[self.integrator](model, f, t0, s["q"], s["qd"], h, k1, w)[0]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.isfinite(dw))):
            raise DivergenceError(f"the step from t = {t0:.6g} s (dt = {h:g} s) gave a non-finite state")
        correction, iterations = 0.0, 0
        if self.formulation == "projection" and active.any():       # Aghili's drift removal (eq. 39)
            qp, qdp, iterations, _ = project_state(model, t0 + h, q, qd, active, self.nails, model.settings)
            if np.all(np.isfinite(qp)) and np.all(np.isfinite(qdp)):
                correction = total_energy(model, t0 + h, qp, qdp) - total_energy(model, t0 + h, q, qd)
                q, qd = qp, qdp
        return t0 + h, q, qd, s["z"] + dw[nw:], dw, correction, iterations

    def safe_step(self, state, data, dt_max=None):
        with np.errstate(all="ignore"):
            try:
                return self.step(state, data, dt_max)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
                raise DivergenceError(f"the dynamics could not be evaluated near t = {state['t']:.6g} s "
                                      f"({type(exc).__name__}: {exc})") from exc


def _complete(model, state, dt, controllers):
    full = initial_state(model, dt, controllers)
    full.update({k: v for k, v in state.items() if v is not None})
    full["active"] = np.asarray(full["active"], dtype=bool).copy()
    return full


def step(model, state: dict, dt=None, integrator=None, formulation=None, *, tolerance=None, dt_max=None,
         nails=None, actuators=None, pull=None, controllers=True) -> dict:
    """One step of the Python path from ``state`` (a dict as :func:`initial_state` makes; missing keys take their
    initial values). ``dt``: the step (the largest step with cash_karp), default the scene's. Returns the new
    state dict (t, q, qd, z, work, corrections, active, h, rank_deficient, energy0, projection_iterations, and
    ``events``: the events logged in this step). Raises :class:`DivergenceError` on a non-finite result."""
    stepper = _Stepper(model, dt, integrator, formulation, tolerance, nails, actuators, pull, controllers)
    return stepper.safe_step(_complete(model, state, stepper.dt, controllers), None, dt_max)[0]


def _record(rec: dict, model, s: dict, d: dict, cs, stepper) -> None:
    K = len(model.constraints)
    E = _energy(d)
    work = s["work"]
    row = {"t": s["t"], "q": s["q"], "qd": s["qd"], "z": s["z"], "work": work,
           "energy_kinetic": d["energy_kinetic"], "energy_potential": d["energy_gravity"] + d["energy_elastic"],
           "energy_gravity": d["energy_gravity"], "energy_elastic": d["energy_elastic"], "energy_total": E,
           "work_constraints": work[:K], "work_total_constraints": work[:K].sum(),
           **{f"work_{name}": work[K + n] for n, name in enumerate(POWER_SOURCES)},
           "work_corrections": s["corrections"],
           "energy_error": E - s["energy0"] - work.sum() - s["corrections"],
           "jacobian_rank": d["jacobian_rank"], "rank_deficient": float(d["rank_deficient"]),
           "projection_iterations": s["projection_iterations"],
           "constraint_force": d["constraint_force"], "constraint_force_magnitude": d["constraint_force_magnitude"],
           "deviation": d["deviation"], "deviation_rate": d["deviation_rate"], "residual": d["residual"],
           "singular_values": d["singular_values"], "rank": d["rank"], "dropped": d["dropped"],
           "singular_value_cutoff": d["singular_value_cutoff"], "active": s["active"].astype(float)}
    if cs:
        diag = controller_diagnostics(model, s["t"], s["q"], s["qd"], s["z"], s["active"], stepper.nails,
                                      stepper.actuators, stepper.pull, cs)
        for name, values in diag.items():
            for key, value in values.items():
                row[f"{key}_{name}"] = value
    for key, value in row.items():
        rec.setdefault(key, []).append(np.array(value, dtype=float, copy=True))


def run(model, duration, dt=None, integrator=None, formulation=None, record_every=1, *, state=None,
        tolerance=None, nails=None, actuators=None, pull=None, controllers=True) -> dict:
    """Step until ``duration`` more seconds have passed (the last step shortened to land on the end), recording
    every ``record_every`` steps and at the end. Returns arrays t, q, qd, z, work, energy_* (kinetic, potential,
    gravity, elastic, total), energy_error, work_* (constraints, total_constraints, dampers, drag, actuators,
    external, corrections), deviation, deviation_rate, constraint_force, constraint_force_magnitude, residual,
    singular_values, rank, dropped, singular_value_cutoff, jacobian_rank, rank_deficient, projection_iterations,
    active, the controllers' diagnostics as ``<key>_<controller>``, and ``events`` (list of dicts), ``state``
    (the final state dict) and ``steps``."""
    stepper = _Stepper(model, dt, integrator, formulation, tolerance, nails, actuators, pull, controllers)
    s = _complete(model, state or {}, stepper.dt, controllers)
    d = stepper.data(s["t"], s["q"], s["qd"], s["z"], s["active"])
    if s.get("energy0") is None:
        s["energy0"] = _energy(d)
    t_end = s["t"] + duration
    rec: dict = {}
    events: list = []
    _record(rec, model, s, d, stepper.controllers, stepper)
    n = 0
    eps = 1e-12 * max(1.0, abs(t_end))
    while s["t"] < t_end - eps:
        s, d = stepper.safe_step(s, d, dt_max=t_end - s["t"])
        events.extend(s["events"])
        n += 1
        if n % record_every == 0 or s["t"] >= t_end - eps:
            _record(rec, model, s, d, stepper.controllers, stepper)
    out = {key: np.array(values) for key, values in rec.items()}
    out["events"] = events
    out["state"] = s
    out["steps"] = n
    return out
