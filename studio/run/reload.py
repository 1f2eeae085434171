"""Bring an edited scene into a running simulation at a step boundary.

Thread: worker (called by :class:`studio.qt.run.worker.SimulationWorker` on EDIT and LOAD commands). Plain Python over
the core's public API: ``Simulation.snapshot``/``restore``, the ``set_*`` methods and a new ``State`` assigned
whole — never a write into a simulation's internals. Nothing is compiled here when the GUI sends the model it
compiled while validating the edit (:class:`studio.run.messages.Edit`).

When the state may be kept:

- the model has the same structure (:func:`same_structure`: the same joints, constraints and controllers; only
  values changed — a gain, a stiffness, a stabilization rate, the time step, the integrator, the formulation):
  a simulation of the new model takes over the running one's snapshot (state, inputs, events, the energy audit's
  reference), then the new model's run settings; the controllers' adaptive state goes on, and the keyframes of
  the timeline stay valid;
- the joints are the same (:func:`same_coordinates`: a constraint or force added or removed): a new simulation
  continues from the current t, q, q̇ (and the controllers' state and the work integrals where they still fit),
  keeping the user's inputs that still apply (actuator commands, dragged nails, the mouse spring) and the
  constraints that broke during the run (unless the edit disabled them anyway); its reference energy is the new
  scene's;
- otherwise a new simulation starts from the scene's initial state.
"""
from __future__ import annotations

import numpy as np

import core

from studio.document.kinds import constraint_kinds, joint_kinds

__all__ = ["reload_simulation", "apply_edit", "same_coordinates", "same_structure", "RUN_SETTINGS"]

#: Settings a running simulation can change in place.
RUN_SETTINGS = ("dt", "integrator", "formulation", "tolerance")


def same_coordinates(a, b) -> bool:
    """Whether two models have the same links, joint types and coordinate layout (q of one fits the other)."""
    return (a.link_names == b.link_names and joint_kinds(a) == joint_kinds(b)
            and np.array_equal(a.nq_j, b.nq_j) and np.array_equal(a.nv_j, b.nv_j)
            and np.array_equal(a.parent, b.parent))


def _controllers_key(model) -> tuple:
    return tuple((c.name, c.kind, c.n_state) for c in model.controllers)


def same_structure(a, b) -> bool:
    """Whether a snapshot of a simulation of ``a`` can be restored into one of ``b``: the same coordinates, the
    same constraints (names and rows) and the same controllers (their integrated state)."""
    return (same_coordinates(a, b) and a.constraint_names == b.constraint_names
            and [c.rows for c in a.constraints] == [c.rows for c in b.constraints]
            and _controllers_key(a) == _controllers_key(b))


def apply_edit(sim, edit):
    """``(simulation, kept)`` that runs the edited document ``edit`` (:class:`studio.run.messages.Edit`) from now on,
    and whether the run went on (module docstring). A nail whose position the edit sets is where the document puts
    it: a drag's override of it is dropped (a drag let go, its undo, a position typed in the inspector)."""
    new, kept = reload_simulation(sim, edit.spec, True, edit.model)
    placed = {edit.spec.constraints[path[1]].name for path, _ in edit.changes or ()
              if len(path) == 3 and path[0] == "constraints" and path[2] == "position"}
    if placed & set(new.nail_overrides):
        new.inputs = new.inputs.with_(nails=tuple(n for n in new.inputs.nails if n[0] not in placed))
    return new, kept


def reload_simulation(sim, spec, keep_state: bool = True, model=None):
    """``(simulation, kept)``: the simulation to run ``spec`` (compiled as ``model``, or compiled here) with, and
    whether the current state was kept."""
    old_model = getattr(sim, "model", None)
    model = model if model is not None else core.compile_scene(spec)
    if keep_state and old_model is not None and same_structure(old_model, model):
        new = core.Simulation(model)
        new.restore(sim.snapshot())
        apply_settings(new)
        return new, True
    new = core.Simulation(model)
    if not (keep_state and old_model is not None and same_coordinates(old_model, model)):
        return new, False
    new.state = _continued_state(sim, old_model, model)
    forces = {f.name for f in model.forces}
    for name, value in sim.actuator_values.items():
        if name in forces:
            new.set_actuator(name, value)
    names, kinds = model.constraint_names, constraint_kinds(model)
    for name, (t0, position, velocity) in sim.nail_overrides.items():
        if name in names and kinds[names.index(name)] == "nail":
            now = np.asarray(position, dtype=float) + np.asarray(velocity, dtype=float) * (new.state.t - t0)
            new.move_nail(name, now, velocity)
    if sim.pull is not None:
        link, point, target, stiffness, damping = sim.pull
        new.set_pull(link, point, target, stiffness, damping)
    return new, True


def apply_settings(sim) -> None:
    """Make ``sim`` run with its model's settings (time step, integrator, tolerance, formulation) and gains: after
    it took over a snapshot whose inputs were those of an earlier version of the document."""
    s = sim.model.settings
    integrator, tolerance, dt = s.get("integrator", "rk4"), s.get("tolerance", 1e-8), s.get("dt", sim.dt)
    if (sim.integrator, sim.tolerance, sim.dt) != (integrator, tolerance, dt):
        sim.set_integrator(integrator, tolerance=float(tolerance), dt=float(dt))
    formulation = s.get("formulation", "dynamic_constraints")
    if sim.formulation != formulation:
        sim.set_formulation(formulation)
    if sim.inputs.gains:                      # the model holds the document's gains
        sim.inputs = sim.inputs.with_(gains=())


def _continued_state(sim, old_model, model):
    """The state of ``model`` that continues ``sim`` (running ``old_model``, same coordinates): its t, q, q̇; the
    controllers' state if the controllers are the same; the work integrals of the constraints that are still
    there (by name) and of the other sources; the constraints that broke stay removed."""
    old, init = sim.state, model.initial_state()
    z = np.array(old.z, dtype=float) if _controllers_key(old_model) == _controllers_key(model) else init.z
    work = np.zeros_like(init.work)
    old_names = old_model.constraint_names
    old_work = np.asarray(old.work, dtype=float)
    K_old, K = len(old_names), len(model.constraint_names)
    for i, name in enumerate(model.constraint_names):
        if name in old_names:
            work[i] = old_work[old_names.index(name)]
    work[K:] = old_work[K_old:]               # dampers, drag, actuators, external
    broken = {c.name for c, on in zip(old_model.constraints, old.active) if c.enabled and not on}
    active = np.array([c.enabled and c.name not in broken for c in model.constraints], dtype=bool)
    return core.State(old.t, np.array(old.q, dtype=float), np.array(old.qd, dtype=float), z, work, active,
                      float(old.corrections), float(old.step_size), bool(old.rank_deficient))
