"""Controllers, desired trajectories and the inertial-parameter regressor (thesis
ch. 3; Aghili §7; Todorov's slides).

- :mod:`~core.control.trajectories` — set points, sinusoids (eq. 3.38–3.39), sigmoid point-to-point movements
  (eq. 3.40–3.43), each with analytic q_d, q̇_d, q̈_d.
- :mod:`~core.control.regressor` — ``Y(q, q̇, q̇_r, q̈_r)`` for any tree with ``Y θ = M q̈_r + C q̇_r + g``.
- :mod:`~core.control.controllers` — PD, computed torque, Slotine–Li, mixtures of experts (parameters).
- :mod:`~core.control.projected` — projected inverse-dynamics, constraint-force and passive-joint control.
- :mod:`~core.control.kernels` — every law, compiled: the controller stage of the step.

Controllers are scene-document entities (``controllers`` in :mod:`core.scene.schema`); a
:func:`core.step` evaluates them in every integrator stage and integrates their adaptive state.
"""
from __future__ import annotations

import numpy as np

from .base import Controller
from .controllers import PD, ComputedTorque, Mixture, SlotineLi, default_centres, grid_centres
from .projected import ProjectedInverseDynamics
from .regressor import coriolis_matrix, inertial_parameters, regressor, slotine_li_torque
from .trajectories import PointToPoint, SetPoint, Sinusoid, bandwidth, sanner_slotine

__all__ = ["Controller", "PD", "ComputedTorque", "SlotineLi", "Mixture", "ProjectedInverseDynamics",
           "build_controller", "grid_centres", "default_centres", "regressor", "slotine_li_torque",
           "coriolis_matrix", "inertial_parameters", "SetPoint", "Sinusoid", "PointToPoint", "sanner_slotine",
           "bandwidth", "state_slices", "parameterization_of"]


def build_controller(model, spec, dofs, qidx, trajectory, **extra) -> Controller:
    """A controller object from its validated scene spec (see :mod:`core.scene.control`)."""
    common = dict(kp=spec.kp, kd=spec.kd, torque_limit=spec.torque_limit, enabled=spec.enabled)
    args = (spec.name, model, dofs, qidx, trajectory)
    if spec.type == "pd":
        return PD(*args, **common)
    if spec.type == "computed_torque":
        return ComputedTorque(*args, model_gravity=spec.model_gravity, **common)
    if spec.type == "slotine_li":
        p = extra.get("parameterization") or parameterization_of(model, spec)
        init = spec.initial_parameters
        a0 = None if init == "zero" else p.of(inertial_parameters(model)) if init == "model" else init
        return SlotineLi(*args, eta=spec.eta, model_gravity=spec.model_gravity, parameterization=p,
                         gamma=spec.gamma, initial_parameters=a0, **common)
    if spec.type == "mixture":
        centres = spec.centres if spec.centres is not None else default_centres(trajectory, spec.experts)
        cov = spec.covariance
        extra_cov = {} if cov is None else dict(covariance=cov.rule, forgetting=cov.forgetting_factor,
                                                 floor=cov.floor)
        return Mixture(*args, centres=centres, sigma=spec.sigma, eta=spec.eta, rule=spec.rule, **extra_cov,
                       **common)
    if spec.type == "projected_inverse_dynamics":
        return ProjectedInverseDynamics(*args, gf=spec.force_gain, gi=spec.force_integral_gain, **extra, **common)
    raise ValueError(f"unknown controller type {spec.type!r}")


def parameterization_of(model, spec):
    """The :class:`~core.control.parameters.Parameterization` a Slotine–Li spec asks for (raises
    :class:`~core.control.parameters.ParameterizationError` for a custom one that cannot be used)."""
    from .parameters import base_parameterization, custom_parameterization, standard_parameterization
    g = model.gravity if spec.model_gravity else np.zeros(3)
    choice = spec.parameters
    if choice == "standard":
        return standard_parameterization(model, g)
    if choice == "base":
        return base_parameterization(model, g)
    return custom_parameterization(model, dict(choice.inertial), dict(choice.gravity), g)


def state_slices(controllers) -> list[slice]:
    """Where each controller's integrated state sits in ``State.z``."""
    out, start = [], 0
    for c in controllers:
        out.append(slice(start, start + c.n_state))
        start += c.n_state
    return out
