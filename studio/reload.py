"""Bring an edited scene into a running simulation at a step boundary.

Thread: worker (called by :class:`studio.worker.SimulationWorker` on a LOAD command). Plain Python over the core's
public API.

The new spec is compiled into a new frozen ``core.Model``. Then, when the state may be kept:

- only the run settings changed (time step, integrator, formulation, tolerance): the running simulation takes them
  in place, so its energy audit and event log go on;
- the joints are the same (same links, joint types and coordinate layout): a new simulation continues from the
  current t, q, q̇, keeping the user's inputs that still apply (actuator commands, dragged nails, the mouse spring)
  and the constraints that broke during the run (unless the edit disabled them anyway); its energy audit restarts;
- otherwise a new simulation starts from the scene's initial state.
"""
from __future__ import annotations

import numpy as np

import core
from core.constraints import NAIL

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
        new_model = core.compile_scene(spec)
        try:
            for name, parameter, value in gains:
                sim.set_controller_parameter(name, parameter, list(value) if isinstance(value, tuple) else value)
        except (KeyError, ValueError):
            pass                                      # not editable in place: recompile below
        else:
            sim.model = new_model                     # its controllers are the ones reset() will copy
            return sim, True
    if keep_state and old_model is not None and _only_run_settings_changed(old_spec, spec):
        settings = spec.simulation
        new_model = core.compile_scene(spec)          # validated: also checks that it still compiles
        sim.dt, sim.integrator, sim.tolerance = float(settings.dt), settings.integrator, float(settings.tolerance)
        sim.set_formulation(settings.formulation)
        sim.model = new_model                         # identical but for its settings
        return sim, True
    model = core.compile_scene(spec)
    new = core.Simulation(model)
    if not (keep_state and old_model is not None and same_coordinates(old_model, model)):
        return new, False
    new.state = sim.state.copy()
    z0 = getattr(new.state, "z", None)
    if z0 is not None and np.size(z0) != np.size(getattr(model.initial_state(), "z", z0)):
        new.state.z = model.initial_state().z           # other controllers: their own initial state
    names = set(model.constraint_names)
    forces = {f.name for f in model.forces}
    new.actuator_values.update({k: v for k, v in sim.actuator_values.items() if k in forces})
    for name, override in sim.nail_overrides.items():
        if name in names and model.constraints[model.constraint_names.index(name)].kind == NAIL:
            new.nail_overrides[name] = override
    broken = {c.name for c, on in zip(old_model.constraints, sim.active) if c.enabled and not on}
    for i, c in enumerate(model.constraints):
        if c.name in broken:
            new.active[i] = False
    new.pull = sim.pull
    return new, True
