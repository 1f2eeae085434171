"""Compile every kernel of the core once, so that no later process waits for numba (``python -m core warm``).

The kernels are compiled for one set of argument types — every scene, robot and set of inputs uses the same —
and cached on disk (:mod:`core.jit`), so warming them on a small model warms them for all. ``.ci/setup`` runs
this after installing, and the studio runs it in a separate process when it finds the cache cold (the
compiler holds Python's lock, which would freeze a window).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["warm", "warm_functions", "warm_pipeline", "WARM_SCENE"]

_ROOT = str(Path(__file__).resolve().parent.parent)

#: A small scene that takes every path of the step: a hinge arm with a nail, a joint-space constraint, a spring,
#: an actuator and a controller, beside a free body and a ball joint.
WARM_SCENE = {
    "format_version": 1, "name": "warm-up", "gravity": [0, 0, -9.81],
    "bodies": [
        {"name": "a", "parent": "world", "joint": {"type": "hinge", "axis": [0, 1, 0], "q0": 0.3},
         "inertial": {"mass": 1.0, "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01, 0, 0, 0]},
         "points": {"tip": [0, 0, -1]}},
        {"name": "b", "parent": "a", "joint": {"type": "hinge", "axis": [0, 1, 0], "position": [0, 0, -1],
                                                "q0": 0.2},
         "inertial": {"mass": 1.0, "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01, 0, 0, 0]},
         "points": {"tip": [0, 0, -1]}},
        {"name": "c", "parent": "world", "joint": {"type": "ball", "position": [2, 0, 0]},
         "shapes": [{"type": "box", "size": [0.2, 0.2, 1.0], "position": [0, 0, -0.5], "mass": 1.0}]},
        {"name": "d", "parent": "world", "joint": {"type": "free", "q0": [0, 3, 0, 1, 0, 0, 0]},
         "shapes": [{"type": "sphere", "radius": 0.1, "mass": 1.0}]},
    ],
    "constraints": [
        {"type": "nail", "name": "nail", "body": "b", "point": "tip", "max_deviation": 10.0},
        {"type": "joint_space", "name": "keep", "expression": "sin(a) + 0.1 * b", "value": 0.3,
         "max_deviation": 10.0},
    ],
    "forces": [
        {"type": "spring", "name": "spring", "body_a": "c", "point_a": [0, 0, -1], "body_b": "world",
         "point_b": [2, 0, -1.5], "stiffness": 10.0},
        {"type": "actuator", "name": "motor", "joint": "a", "torque": 0.1},
    ],
    "controllers": [
        {"type": "pd", "name": "pd", "joints": ["b"], "trajectory": {"type": "set_point", "q": [0.1]}},
    ],
}


def _model():
    from .scene import compile_scene, parse_spec
    return compile_scene(parse_spec(WARM_SCENE, "warm-up"), "warm-up")


def warm_functions() -> None:
    """The public functions' kernels: dynamics algorithms, point kinematics, energies, trajectories."""
    from . import (forward_dynamics, inverse_dynamics, kinetic_energy, mass_matrix, point_acceleration,
                   point_jacobian, point_velocity, potential_energy)
    from .control.trajectories import Sinusoid
    model = _model()
    q, qd = np.array(model.q0), np.array(model.qd0)
    for f_ext in (None, np.zeros((model.n_links, 6))):
        inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext)
        forward_dynamics(model, q, qd, np.zeros(model.nv), f_ext)
    mass_matrix(model, q)
    point_jacobian(model, q, "b", "tip")
    point_velocity(model, q, qd, "b", "tip")
    point_acceleration(model, q, qd, np.zeros(model.nv), "b", "tip")
    kinetic_energy(model, q, qd), potential_energy(model, q)
    Sinusoid([0.0], [1.0], [1.0]).evaluate(0.5)


def warm_pipeline() -> None:
    """The step's kernels: the compiled pipeline and its workspace."""
    from . import Simulation
    sim = Simulation(_model())
    sim.data
    sim.run(0.002)


def _stamp() -> None:
    """Mark this version's cache complete (:func:`core.jit.kernels_cached`); a cache that cannot be written is
    numba's to report, not this."""
    import json

    from .jit import WARM_STAMP, cache_dir, source_stamps
    path = cache_dir()
    if path is not None:
        try:
            path.mkdir(parents=True, exist_ok=True)
            tmp = path / f".{WARM_STAMP}.{os.getpid()}"
            tmp.write_text(json.dumps(source_stamps()))
            os.replace(tmp, path / WARM_STAMP)
        except OSError:
            pass


def warm(verbose: bool = False, parallel: bool = True) -> float:
    """Compile (or load from the cache) every kernel; returns the seconds it took. With ``parallel``, the public
    functions' kernels compile in a second process while this one compiles the step's (numba compiles in one
    thread; the two share only small leaf kernels)."""
    start = time.perf_counter()
    helper = None
    if parallel and (os.cpu_count() or 1) > 1:
        helper = subprocess.Popen([sys.executable, "-c", "from core.warmup import warm_functions; warm_functions()"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=_ROOT)
    warm_pipeline()
    if helper is None:
        warm_functions()
    else:
        _, err = helper.communicate()
        if helper.returncode != 0:                            # said, then done here instead
            print(f"warm: the second compiler process failed ({err.decode(errors='replace').strip()[-300:]}); "
                  "compiling its kernels here", file=sys.stderr)
            warm_functions()
        warm_functions()                                      # now only loads them from the cache
    _stamp()
    if verbose:
        print(f"warm: the kernels are ready ({time.perf_counter() - start:.1f} s)")
    return time.perf_counter() - start
