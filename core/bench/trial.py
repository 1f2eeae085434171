"""One trial of the adaptive-control bench (thesis §3.4): an arm, a desired trajectory at bandwidth k, one
controller, an adaptation gain η and gravity on or off; simulated for ``adapt + measure`` seconds (30 + 10) and
scored by the L2 error norm over the last ``measure`` seconds,

    L2 = ( 1/(t_N − t_0) Σ_i ‖e(t_i)‖² (t_{i+1} − t_i) )^½         (eq. 3.29 evaluated as eq. 3.44)

over the integrator's sample times t_i in [adapt, adapt + measure]. The trial builds a scene document — the arm's
scene with the gravity set, the joints started on the trajectory (q(0) = q_d(0), q̇(0) = 0) and the controller as
its only ``controllers`` entry — and runs it with :class:`core.Simulation`, so the bench exercises exactly what
the studio runs. A trial whose error exceeds ``unstable_error`` rad, or whose state stops being finite, is
stopped and reported unstable (thesis fig. 3.7) instead of failing the sweep.

Controller labels: ``pd``, ``computed_torque``, ``idsl`` (Slotine–Li), ``m<N>`` (mixture of N experts, gradient
rule), ``m<N>_rls`` (recursive-estimation rule).
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field

import numpy as np

__all__ = ["Trial", "TrialResult", "run_trial", "controller_spec", "trajectory_spec", "TRAJECTORIES",
           "adaptive", "parse_controller", "controller_key", "trial_id", "DEFAULT_GAINS"]

DEFAULT_GAINS = (9.0, 1.0)

TRAJECTORIES = {
    # eq. 3.38–3.39 with the Sanner–Slotine values; k scales time
    "sanner_slotine": {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75],
                       "omega": [0.75 * math.pi, 2.0 * math.pi]},
    # fig. 3.3: q_d = (1.33 (1 − cos 2πkt), 0.75 cos 2πkt)
    "bandwidth": {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75], "omega": [2.0 * math.pi] * 2},
    # fig. 3.2c: straight movements with bell-shaped speed profiles around the same region, repeated, 1 s each
    "point_to_point": {"type": "point_to_point",
                       "points": [[0.0, 0.75], [1.33, -0.75], [2.66, 0.75], [1.33, 0.0]] * 10 + [[0.0, 0.75]],
                       "durations": 1.0, "rate": 12.0},
}


def parse_controller(label: str) -> dict:
    """``{"kind", "experts", "rule"}`` of a controller label (see the module docstring)."""
    if label in ("pd", "computed_torque", "idsl"):
        return {"kind": label}
    m = re.fullmatch(r"m(\d+)(_rls)?", label)
    if m and int(m.group(1)) >= 1:
        return {"kind": "mixture", "experts": int(m.group(1)), "rule": "recursive" if m.group(2) else "gradient"}
    raise ValueError(f"unknown controller {label!r}: expected pd, computed_torque, idsl, m<N> or m<N>_rls")


def controller_key(label: str) -> tuple:
    """The order controllers are listed in: PD, computed torque, IDSL, the gradient mixtures by N, then the
    recursive ones, each at its gain levels by K_p."""
    base, _, gains = label.partition("_kp")
    info = parse_controller(base)
    rank = {"pd": 0, "computed_torque": 1, "idsl": 2, "mixture": 3}[info["kind"]]
    kp = float(gains.split("_kd")[0]) if gains else DEFAULT_GAINS[0]
    return rank, info.get("rule", "") == "recursive", info.get("experts", 0), kp


def trial_id(t: dict) -> str:
    """The file stem of a trial's traces, from a trial dict or a results row."""
    eta = "" if t["eta"] is None else f"_eta{t['eta']:g}"
    traj = t.get("trajectory_name", t.get("trajectory"))
    label = t.get("label") or t["controller"]
    return f"{t['arm']}__{traj}__k{t['k']:g}__{label}{eta}__{'gravity' if t['gravity'] else 'nogravity'}"


def adaptive(label: str) -> bool:
    """Whether the controller adapts (so η matters)."""
    return parse_controller(label)["kind"] in ("idsl", "mixture")


@dataclass
class Trial:
    """One cell of the grid. ``scene`` is the arm's scene document (a dict, so remote workers need no files);
    ``trajectory`` a trajectory spec of the scene schema; ``eta`` None for non-adaptive controllers."""
    arm: str
    scene: dict
    trajectory_name: str
    trajectory: dict
    k: float
    controller: str
    eta: float | None
    gravity: bool
    kp: float = 9.0
    kd: float = 1.0
    sigma: float = 0.5
    adapt: float = 30.0
    measure: float = 10.0
    dt: float = 0.01
    integrator: str = "cash_karp"
    tolerance: float = 1e-6
    unstable_error: float = 30.0
    trace_every: float = 0.02
    parameter_every: float = 0.05
    label: str = ""                          # the controller column (with a gains suffix when not the defaults)


@dataclass
class TrialResult:
    trial: dict
    l2_error: float
    unstable: bool
    reason: str
    wall_time: float
    steps: int
    traces: dict = field(default_factory=dict)


def trajectory_spec(trajectory: dict, k: float) -> dict:
    return {**trajectory, "time_scale": float(k)}


def controller_spec(trial: Trial, trajectory: dict) -> dict:
    """The ``controllers`` entry of the trial's scene document."""
    info = parse_controller(trial.controller)
    base = {"name": "controller", "trajectory": trajectory}
    if info["kind"] == "pd":
        return {**base, "type": "pd", "kp": trial.kp, "kd": trial.kd}
    if info["kind"] == "computed_torque":
        return {**base, "type": "computed_torque"}
    if info["kind"] == "idsl":
        return {**base, "type": "slotine_li", "kp": trial.kp, "kd": trial.kd, "eta": trial.eta}
    return {**base, "type": "mixture", "kp": trial.kp, "kd": trial.kd, "eta": trial.eta, "experts": info["experts"],
            "rule": info["rule"], "sigma": trial.sigma}


def build_simulation(trial: Trial):
    """The :class:`core.Simulation` of a trial and its controller."""
    from .. import Simulation
    from ..scene import compile_scene, parse_spec
    from .trajectories import from_spec

    traj = trajectory_spec(trial.trajectory, trial.k)
    doc = dict(trial.scene)
    doc["gravity"] = [0.0, -9.81, 0.0] if trial.gravity else [0.0, 0.0, 0.0]
    doc["controllers"] = [controller_spec(trial, traj)]
    spec = parse_spec(doc, f"{trial.arm} (bench trial)")
    q_d0 = from_spec(spec.controllers[0].trajectory).evaluate(0.0)[0]
    hinges = [b for b in spec.bodies if b.joint.type in ("hinge", "slider")]
    if len(hinges) != q_d0.size:
        raise ValueError(f"arm {trial.arm!r} has {len(hinges)} joints but the trajectory gives {q_d0.size}")
    for body, q0 in zip(hinges, q_d0):                            # q(0) = q_d(0), q̇(0) = 0
        body.joint.q0 = float(q0)
        body.joint.qd0 = 0.0
    model = compile_scene(spec, f"{trial.arm} (bench trial)")
    sim = Simulation(model, dt=trial.dt, integrator=trial.integrator, tolerance=trial.tolerance)
    return sim, sim.controllers[0]


def run_trial(trial: Trial | dict) -> TrialResult:
    """Simulate one trial and score it (runs in a worker process or on a Dask worker)."""
    from ..simulation import DivergenceError

    if isinstance(trial, dict):
        trial = Trial(**trial)
    start = time.perf_counter()
    sim, ctrl = build_simulation(trial)
    t_end = trial.adapt + trial.measure
    eps = 1e-9 * max(1.0, t_end)
    acc, span = 0.0, 0.0
    unstable, reason = False, ""
    t_trace, e_trace, q_trace, qd_trace = [], [], [], []
    t_par, par_trace = [], []
    next_trace, next_par = 0.0, 0.0
    max_steps = int(50 * t_end / trial.dt) + 1000                 # an adaptive step that collapses is divergence
    steps = 0
    while True:
        s = sim.state
        q_d = ctrl.trajectory.evaluate(s.t)[0]
        e = s.q[ctrl.qidx] - q_d
        if not np.all(np.isfinite(e)) or np.max(np.abs(e)) > trial.unstable_error:
            unstable, reason = True, f"tracking error {np.max(np.abs(e)):.3g} rad at t = {s.t:.3f} s"
            break
        if s.t >= next_trace - eps:
            t_trace.append(s.t), e_trace.append(e), q_trace.append(s.q[ctrl.qidx].copy()), qd_trace.append(q_d)
            next_trace += trial.trace_every
        if s.t >= next_par - eps and ctrl.n_state:
            t_par.append(s.t), par_trace.append(ctrl.parameter_estimates(sim.controller_state(ctrl.name)).copy())
            next_par += trial.parameter_every
        if s.t >= t_end - eps:
            break
        try:
            sim.step(dt_max=t_end - s.t)
        except DivergenceError as exc:
            unstable, reason = True, str(exc)
            break
        steps += 1
        if steps > max_steps:
            unstable, reason = True, f"the step size collapsed ({steps} steps by t = {sim.state.t:.3f} s)"
            break
        h = sim.state.t - s.t
        if s.t >= trial.adapt - eps:                              # Σ ‖e(t_i)‖² (t_{i+1} − t_i)   (eq. 3.44)
            acc += float(e @ e) * h
            span += h
    l2 = math.sqrt(acc / span) if (span > 0 and not unstable) else math.nan
    traces = {"t": np.array(t_trace), "error": np.array(e_trace), "q": np.array(q_trace),
              "desired": np.array(qd_trace), "parameter_t": np.array(t_par),
              "parameters": np.array(par_trace) if par_trace else np.zeros((0, 0))}
    return TrialResult(asdict(trial), l2, unstable, reason, time.perf_counter() - start, steps, traces)
