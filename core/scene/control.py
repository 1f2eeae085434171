"""Compile the ``controllers`` section of a validated spec into controller objects (:mod:`core.control`).

Cross-references are checked here, each problem reported with its JSON path like the rest of the document:
joints must exist and be hinges or sliders, trajectories must give one coordinate per controlled joint, gate
centres one per joint, controllers that cancel the whole dynamics (computed torque, Slotine–Li) must control
every degree of freedom, and a desired constraint force must name a constraint. A controller without a
``torque_limit`` is clipped, joint by joint, at the ``limit`` of the scene's actuator on that joint (a URDF
joint's effort: the motor's strength), where there is one.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..model import HINGE, SLIDER, Model
from .io import Problem, SceneError

__all__ = ["compile_controllers", "with_controllers"]

_FULL_ACTUATION = ("computed_torque", "slotine_li")


def _joint_dofs(model: Model, names, where: str, problems: list) -> tuple[list[int], list[int]]:
    dofs, qidx = [], []
    for k, name in enumerate(names):
        if name not in model.joint_link_names:
            problems.append(Problem(f"{where}[{k}]", "unknown joint; expected one of: "
                                    + ", ".join(model.joint_names), name, True))
            continue
        i = model.joint_link_names.index(name)
        if model.joint_type[i] not in (HINGE, SLIDER):
            problems.append(Problem(f"{where}[{k}]", "controllers drive hinge and slider joints only", name, True))
            continue
        dofs.append(int(model.v_start[i]))
        qidx.append(int(model.q_start[i]))
    if len(set(dofs)) != len(dofs):
        problems.append(Problem(where, "a joint is listed twice", list(names), True))
    return dofs, qidx


def _slotine_li_problems(model: Model, c, here: str, problems: list, extra: dict) -> None:
    """The parameterization (``extra["parameterization"]``), Γ and â(0) of a Slotine–Li spec, each problem with
    its JSON path: a custom parameter that is not a linear expression of standard parameters, a set that cannot
    represent the arm's torques, a Γ of the wrong shape or not symmetric positive definite."""
    from ..control import parameterization_of
    from ..control.parameters import ParameterizationError
    try:
        p = parameterization_of(model, c)
    except ParameterizationError as exc:
        problems.append(Problem(f"{here}.parameters" + (f".{exc.key}" if exc.key else ""), str(exc),
                                None, False))
        return
    extra["parameterization"] = p
    n = p.size
    if isinstance(c.initial_parameters, list) and len(c.initial_parameters) != n:
        problems.append(Problem(f"{here}.initial_parameters", f"needs {n} values, one per adapted parameter ("
                                + ", ".join(p.names[:12]) + (" …" if n > 12 else "") + ")",
                                c.initial_parameters, True))
    if c.gamma is not None:
        G = np.asarray(c.gamma, dtype=float) if not (isinstance(c.gamma, list) and c.gamma
                                                      and isinstance(c.gamma[0], list)) else None
        if G is None:
            if any(len(row) != len(c.gamma) for row in c.gamma):
                problems.append(Problem(f"{here}.gamma", "a matrix must be square", c.gamma, True))
                return
            G = np.asarray(c.gamma, dtype=float)
        if G.ndim == 1 and G.size != n:
            problems.append(Problem(f"{here}.gamma", f"a diagonal needs {n} values, one per adapted parameter",
                                    c.gamma, True))
        elif G.ndim == 1 and np.any(G <= 0):
            problems.append(Problem(f"{here}.gamma", "every diagonal entry must be positive", c.gamma, True))
        elif G.ndim == 2:
            if G.shape != (n, n):
                problems.append(Problem(f"{here}.gamma", f"a matrix must be {n} x {n} (one row and column per "
                                        f"adapted parameter), got {G.shape[0]} x {G.shape[1]}", c.gamma, True))
            elif not np.allclose(G, G.T, rtol=0, atol=1e-12 * max(1.0, np.abs(G).max())):
                problems.append(Problem(f"{here}.gamma", "the matrix must be symmetric", c.gamma, True))
            else:
                lowest = float(np.linalg.eigvalsh(G).min())
                if not lowest > 0:
                    problems.append(Problem(f"{here}.gamma", f"the matrix must be positive definite; its smallest "
                                            f"eigenvalue is {lowest:.6g}", c.gamma, True))


#: The torque limit of a controlled joint that has no actuator with a limit (unlimited: as_gain wants a number).
UNLIMITED = 1e300


def _clipped_at_actuators(model: Model, c, dofs: list[int]):
    """Spec ``c`` (which gives no ``torque_limit``) with the torque limit of each of its joints set to the
    strength of the joint's actuator — the ``limit`` of the scene's ``actuator`` on it (a URDF joint's
    ``<limit effort>``, :mod:`core.scene.urdf`), the smallest if it has several — so a controller drives the
    joint no harder than its motor can; ``c`` itself if none of its joints has an actuator with a limit."""
    from ..forces import ACTUATOR
    strength: dict[int, float] = {}
    for f in model.forces:
        if f.kind == ACTUATOR and np.isfinite(f.limit):
            strength[f.dof] = min(strength.get(f.dof, np.inf), float(f.limit))
    if not any(d in strength for d in dofs):
        return c
    return c.model_copy(update={"torque_limit": [strength.get(d, UNLIMITED) for d in dofs]})


def compile_controllers(model: Model, specs, source: str = "<scene>") -> tuple:
    """Controller objects for ``specs`` (the scene's ``controllers`` list); raises :class:`SceneError` listing
    every problem."""
    from ..control import build_controller
    from ..control.trajectories import from_spec

    problems: list[Problem] = []
    out, seen = [], {}
    all_names = [model.joint_link_names[i] for i in range(model.n_links) if model.nv_j[i] > 0]
    for n, c in enumerate(specs):
        here = f"$.controllers[{n}]"
        if c.name in seen:
            problems.append(Problem(f"{here}.name", f"duplicate name (controllers[{seen[c.name]}] has it too)",
                                    c.name, True))
        seen.setdefault(c.name, n)
        names = c.joints if c.joints is not None else all_names
        where = f"{here}.joints" if c.joints is not None else f"{here} (default joints: all)"
        before = len(problems)
        dofs, qidx = _joint_dofs(model, names, where, problems)
        if c.type in _FULL_ACTUATION and sorted(dofs) != list(range(model.nv)):
            problems.append(Problem(f"{here}.joints", f"{c.type} cancels the whole dynamics, so it must control "
                                    f"every degree of freedom ({model.nv}); "
                                    "every joint must be a hinge or slider and listed", list(names), True))
        traj = c.trajectory
        n_traj = {"set_point": lambda t: len(t.q), "sinusoid": lambda t: len(t.alpha),
                  "point_to_point": lambda t: len(t.points[0])}[traj.type](traj)
        if n_traj != len(names):
            problems.append(Problem(f"{here}.trajectory", f"gives {n_traj} coordinates for {len(names)} controlled "
                                    "joints", traj.model_dump(mode="json"), True))
        for key in ("kp", "kd", "torque_limit"):
            v = getattr(c, key)
            if isinstance(v, list) and len(v) != len(names):
                problems.append(Problem(f"{here}.{key}", f"needs 1 or {len(names)} values", v, True))
        extra = {}
        if c.type == "mixture" and c.centres is not None and len(c.centres[0]) != len(names):
            problems.append(Problem(f"{here}.centres", f"each centre needs {len(names)} coordinates", c.centres, True))
        if c.type == "slotine_li" and len(problems) == before:
            _slotine_li_problems(model, c, here, problems, extra)
        if c.type == "projected_inverse_dynamics":
            if c.actuated is not None:
                act_dofs, _ = _joint_dofs(model, c.actuated, f"{here}.actuated", problems)
                mask = np.zeros(model.nv, bool)
                mask[act_dofs] = True
                extra["actuated"] = mask
            if c.desired_force:
                cnames = model.constraint_names
                forces = {}
                for cname, f in c.desired_force.items():
                    if cname not in cnames:
                        problems.append(Problem(f"{here}.desired_force.{cname}", "unknown constraint; expected one "
                                                "of: " + (", ".join(cnames) or "none"), cname, True))
                    else:
                        forces[cnames.index(cname)] = np.array(f, dtype=float)
                extra["desired_force"] = forces
                if c.actuated is not None and not extra["actuated"].all():
                    problems.append(Problem(f"{here}.actuated", "constraint-force control needs every joint "
                                            "actuated (with passive joints the force may not be controllable)",
                                            c.actuated, True))
        if len(problems) > before:
            continue
        if c.torque_limit is None:
            c = _clipped_at_actuators(model, c, dofs)
        try:
            out.append(build_controller(model, c, dofs, qidx, from_spec(traj), **extra))
        except ValueError as exc:
            problems.append(Problem(here, str(exc)))
    if problems:
        raise SceneError(problems, source)
    return tuple(out)


def with_controllers(model: Model, specs, source: str = "<scene>") -> Model:
    """``model`` with its compiled controllers (the same model when there are none)."""
    if not specs:
        return model
    return dataclasses.replace(model, controllers=compile_controllers(model, specs, source))
