"""limbstudio core: dynamics of constrained rigid bodies and articulated limbs in one kinematic forest.

Pure NumPy/SciPy with compiled kernels (numba); never imports Qt. The stable scripting API::

    import core
    model = core.load_scene("scenes/three_link_arm.json")      # or "robot.urdf", or core.load_urdf("robot.urdf")
    state = model.initial_state()
    state, data, events = core.step(model, state)              # one step of the compiled pipeline (pure)
    data = core.evaluate(model, state)                         # everything derived at a state
    H = core.mass_matrix(model, state.q)
    qdd = core.forward_dynamics(model, state.q, state.qd, tau)
    tau = core.inverse_dynamics(model, state.q, state.qd, qdd)
    J = core.point_jacobian(model, state.q, "link3", "tip")
    core.kinetic_energy(model, state.q, state.qd), core.potential_energy(model, state.q)
    draw = core.draw_list(core.Simulation(model))              # what a viewer draws at a state (frozen)
"""
from __future__ import annotations

import os as _os
from pathlib import Path

# The core's matrices are small (tens to a few hundred rows): OpenBLAS's threads only add synchronization, and on
# a busy machine (the studio's GUI and worker threads on two cores) a 120 x 120 inverse took 27 ms with them and
# 0.17 ms without. One BLAS thread unless the user chose otherwise (effective when numpy is not yet imported).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")

from .aba import forward_dynamics
from .crba import mass_matrix
from .data import Data
from .drawing import DrawList, draw_list, resting_draw_list
from .energy import center_of_mass, kinetic_energy, potential_energy
from .kinematics import (configuration_derivative, configuration_difference, forward_kinematics,
                         integrate_configuration, normalize_configuration)
from .model import Model, State
from .points import point_acceleration, point_bias_acceleration, point_jacobian, point_position, point_velocity
from .rnea import inverse_dynamics, nonlinear_effects
from .scene import Scene, SceneError, compile_scene, read_spec, save_spec
from .simulation import Simulation, Snapshot
from .step import DivergenceError, Inputs, advance, evaluate, handle_events, step, steps

__all__ = [
    "Model", "State", "Data", "Inputs", "Scene", "SceneError", "Simulation", "Snapshot", "DivergenceError",
    "step", "steps", "evaluate", "advance", "handle_events",
    "load_scene", "load_urdf", "save_scene", "read_spec", "compile_scene",
    "mass_matrix", "inverse_dynamics", "forward_dynamics", "nonlinear_effects",
    "forward_kinematics", "configuration_derivative", "integrate_configuration", "normalize_configuration",
    "configuration_difference",
    "point_position", "point_velocity", "point_jacobian", "point_bias_acceleration", "point_acceleration",
    "kinetic_energy", "potential_energy", "center_of_mass",
    "DrawList", "draw_list", "resting_draw_list",
]


def load_scene(path: str | Path) -> Model:
    """Read, validate and compile a scene document (JSON), or a robot file (``.urdf``) as the scene that includes
    it, into a frozen :class:`Model`.

    Raises :class:`SceneError` listing every problem (JSON path, value, what was expected).
    """
    return compile_scene(read_spec(path), str(path))


def save_scene(scene: Scene | Model, path: str | Path) -> Path:
    """Write a scene spec (or the spec a model was compiled from) to ``path`` atomically."""
    spec = scene.spec if isinstance(scene, Model) else scene
    if spec is None:
        raise ValueError("this model was not compiled from a scene spec; nothing to save")
    return save_spec(spec, path)


def load_urdf(path: str | Path, floating_base: bool = False, inertia: str = "refuse", q0: dict | None = None,
              base_pose=None) -> Model:
    """Build a Model from a URDF robot (see :mod:`core.urdf`; ``inertia`` is the policy for unphysical link
    inertias, ``"refuse"`` or ``"repair"``; ``q0`` the initial joint coordinates by name; ``base_pose`` the root
    link's ``[x, y, z, qw, qx, qy, qz]``)."""
    from .urdf import urdf_to_spec
    spec = urdf_to_spec(path, floating_base=floating_base, inertia=inertia, q0=q0, base_pose=base_pose)
    return compile_scene(spec, str(path))
