"""Bring an edited scene into a running simulation at a step boundary.

Thread: worker (called by :class:`studio.worker.SimulationWorker` on a LOAD command). Plain Python over the core's
public API: ``Simulation.snapshot``/``restore``, the ``set_*`` methods and a new ``State`` assigned whole — never
a write into a simulation's internals.

The new spec is compiled into a new frozen ``core.Model``. Then, when the state may be kept:

- only the run settings changed (time step, integrator, formulation, tolerance), or only controller gains: a
  simulation of the new model takes over the running one's snapshot (state, inputs, events, energy reference)
  and then the new settings (``set_integrator``, ``set_formulation``) or gains (``set_controller_parameter``),
  so its energy audit and event log go on;
- the joints are the same (same links, joint types and coordinate layout): a new simulation continues from the
  current t, q, q̇ (and the controllers' state and the work integrals where they still fit), keeping the user's
  inputs that still apply (actuator commands, dragged nails, the mouse spring) and the constraints that broke
  during the run (unless the edit disabled them anyway); its reference energy is the new scene's;
- otherwise a new simulation starts from the scene's initial state.
"""
from __future__ import annotations

import numpy as np

import core
from core.constraints import NAIL
from core.model import N_POWER_SOURCES, State

__all__ = ["reload_simulation", "same_coordinates", "RUN_SETTINGS"]

#: Settings a running simulation can change in place.
RUN_SETTINGS = ("dt", "integrator", "formulation", "tolerance")


def same_coordinates(a, b) -> bool:
    """Whether two models have the same links, joint types and coordinate layout (q of one fits the other)."""
    return (a.link_names == b.link_names and np.array_equal(a.joint_type, b.joint_type)
            and np.array_equal(a.nq_j, b.nq_j) and np.array_equal(a.nv_j, b.nv_j)
            and np.array_equal(a.parent, b.parent))


def _only_run_settings_changed(old_spec, new_spec) -> bool:
    if old_spec is None:
        return False
    keep = {k: getattr(old_spec.simulation, k) for k in RUN_SETTINGS}
    if new_spec.simulation.model_copy(update=keep) != old_spec.simulation:
        return False
    return new_spec.model_copy(update={"simulation": old_spec.simulation}) == old_spec


#: Controller fields of the scene document that a running controller takes in place, and its name for them.
CONTROLLER_GAINS = {"kp": "kp", "kd": "kd", "torque_limit": "torque_limit", "enabled": "enabled", "eta": "eta",
                    "sigma": "sigma", "model_gravity": "model_gravity", "force_gain": "gf",
                    "force_integral_gain": "gi"}


def _gain_changes(old_spec, new_spec):
    """``[(controller, parameter, value)]`` when the specs differ only in controller gains, else None."""
    old_c, new_c = getattr(old_spec, "controllers", None), getattr(new_spec, "controllers", None)
    if old_spec is None or not old_c or new_c is None or len(old_c) != len(new_c):
        return None
    if new_spec.model_copy(update={"controllers": old_c}) != old_spec:
        return None
    changes = []
    for a, b in zip(old_c, new_c):
        if a.name != b.name or a.type != b.type:
            return None
        for field in type(a).model_fields:
            if getattr(a, field) != getattr(b, field):
                if field not in CONTROLLER_GAINS:
                    return None
                changes.append((b.name, CONTROLLER_GAINS[field], getattr(b, field)))
    return changes


def reload_simulation(sim, spec, keep_state: bool = True):
    """``(simulation, kept)``: the simulation to run ``spec`` with, and whether the current state was kept."""
    old_model = getattr(sim, "model", None)
    old_spec = getattr(old_model, "spec", None)
    gains = _gain_changes(old_spec, spec) if keep_state else None
    if gains:
        new = _taking_over(sim, core.compile_scene(spec))
        try:
            for name, parameter, value in gains:
                new.set_controller_parameter(name, parameter, list(value) if isinstance(value, tuple) else value)
        except (KeyError, ValueError):
            pass                                      # not editable in a running controller: recompile below
        else:
            return new, True
    if keep_state and old_model is not None and _only_run_settings_changed(old_spec, spec):
        settings = spec.simulation
        new = _taking_over(sim, core.compile_scene(spec))       # validated: also checks that it still compiles
        new.set_integrator(settings.integrator, tolerance=float(settings.tolerance), dt=float(settings.dt))
        new.set_formulation(settings.formulation)
        return new, True
    model = core.compile_scene(spec)
    new = core.Simulation(model)
    if not (keep_state and old_model is not None and same_coordinates(old_model, model)):
        return new, False
    new.state = _continued_state(sim, old_model, model)
    forces = {f.name for f in model.forces}
    for name, value in sim.actuator_values.items():
        if name in forces:
            new.set_actuator(name, value)
    names = model.constraint_names
    for name, (t0, position, velocity) in sim.nail_overrides.items():
        if name in names and model.constraints[names.index(name)].kind == NAIL:
            now = np.asarray(position, dtype=float) + np.asarray(velocity, dtype=float) * (new.state.t - t0)
            new.move_nail(name, now, velocity)
    if sim.pull is not None:
        link, point, target, stiffness, damping = sim.pull
        new.set_pull(link, point, target, stiffness, damping)
    return new, True


def _taking_over(sim, model):
    """A ``core.Simulation`` of ``model`` (the running one's but for settings or gains) restored to ``sim``'s
    snapshot: the state, the inputs, the events and the energy audit's reference go on."""
    new = core.Simulation(model)
    new.restore(sim.snapshot())
    return new


def _controllers_key(model) -> tuple:
    return tuple((c.name, c.kind, c.n_state) for c in model.controllers)


def _continued_state(sim, old_model, model) -> State:
    """The state of ``model`` that continues ``sim`` (running ``old_model``, same coordinates): its t, q, q̇; the
    controllers' state if the controllers are the same; the work integrals of the constraints that are still
    there (by name) and of the other sources; the constraints that broke stay removed."""
    old, init = sim.state, model.initial_state()
    z = np.array(old.z, dtype=float) if _controllers_key(old_model) == _controllers_key(model) else init.z
    work = np.zeros_like(init.work)
    old_names = old_model.constraint_names
    old_work = np.asarray(old.work, dtype=float)
    for i, name in enumerate(model.constraint_names):
        if name in old_names:
            work[i] = old_work[old_names.index(name)]
    work[-N_POWER_SOURCES:] = old_work[-N_POWER_SOURCES:]
    broken = {c.name for c, on in zip(old_model.constraints, old.active) if c.enabled and not on}
    active = np.array([c.enabled and c.name not in broken for c in model.constraints], dtype=bool)
    return State(old.t, np.array(old.q, dtype=float), np.array(old.qd, dtype=float), z, work, active,
                 float(old.corrections), float(old.step_size), bool(old.rank_deficient))
