"""An independent NumPy test oracle of limbstudio's constrained dynamics and its step.

It preserves, in plain NumPy/SciPy (and SymPy for the joint-space constraints), the semantics of the Python
assembly path ``core.Simulation(model, compiled=False)`` as it stood before core/ became one compiled
pipeline, so that the pipeline can be checked against it on every scene (tests/test_pipeline.py); its own
physics is checked in tests/test_oracle_selfcheck.py. It reads only the stable public
pieces of core (the scene loader, the compiled ``Model``'s tree data, constraints, force elements and spec, and
the tree algorithms ``core.mass_matrix`` (CRBA), ``core.nonlinear_effects`` (RNEA), the point kinematics
``core.point_position/velocity/jacobian/bias_acceleration``, the energies, the configuration arithmetic, and
``core.control.regressor.regressor_reference``); everything else is re-derived here from the papers:

=========================  ===========================================================================================
module                     what it implements
=========================  ===========================================================================================
:mod:`oracle.rows`         constraint rows J, γ, D, Ḋ, stabilization (Mitchell eq. 2.21, 2.37–2.39, 2.59), moving
                           and dragged nails, joint-space constraints Φ(q) with exact SymPy derivatives (Aghili eq. 11,
                           67), the grouping of constraints into independent blocks of A (eq. 2.41)
:mod:`oracle.forces`       springs, joint springs, drag, actuators, point forces, the mouse pull; powers per source
                           and elastic energy (thesis §2.3.1–2.3.2)
:mod:`oracle.solve`        the three formulations: dynamic constraints with the bounded SVD solve (eq. 2.22–2.24,
                           §2.3.4), multipliers (McClamroch eq. 24–28), projection (Aghili eq. 4, 15, 16, 22–32) and
                           the Newton–Raphson drift correction (Aghili eq. 39)
:mod:`oracle.controllers`  trajectories (thesis eq. 3.38–3.43), PD, computed torque, Slotine–Li (eq. 3.3–3.8, 3.17,
                           3.21), mixtures of experts (eq. 3.11–3.28), projected inverse dynamics, constraint-force
                           and passive-joint control (Aghili eq. 45–62)
:mod:`oracle.integrators`  RK4, Cash–Karp 4(5), semi-implicit Euler over (q, q̇, w) with w = [work integrals, z]
:mod:`oracle.simulate`     ``evaluate``, ``step``, ``run``: the step with its events (breaking constraints, rank
                           changes), adaptive step control, projection corrections and the energy audit
=========================  ===========================================================================================

Public API (the pipeline tests call these)::

    evaluate(model, t, q, qd, z=None, active=None, nails=None, actuators=None, pull=None, formulation=None,
             controllers=True) -> dict
    initial_state(model, dt=None) -> dict
    step(model, state, dt=None, integrator=None, formulation=None, *, tolerance=None, dt_max=None, nails=None,
         actuators=None, pull=None, controllers=True) -> dict
    run(model, duration, dt=None, integrator=None, formulation=None, record_every=1, *, state=None, ...) -> dict
"""
from .simulate import (DivergenceError, POWER_SOURCES, controller_diagnostics, evaluate, initial_state, run, step,
                       total_energy)
from .controllers import build_controllers

__all__ = ["evaluate", "initial_state", "step", "run", "total_energy", "controller_diagnostics",
           "build_controllers", "DivergenceError", "POWER_SOURCES"]
