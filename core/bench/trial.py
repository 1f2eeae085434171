"""One trial of the adaptive-control bench (thesis §3.4): an arm, a desired trajectory at bandwidth k, one
controller, an adaptation gain η and gravity on or off; simulated for ``adapt + measure`` seconds (30 + 10) and
scored by the L2 error norm over the last ``measure`` seconds,

    L2 = ( 1/(t_N − t_0) Σ_i ‖e(t_i)‖² (t_{i+1} − t_i) )^½         (eq. 3.29 evaluated as eq. 3.44)

over the integrator's sample times t_i in [adapt, adapt + measure]. The trial builds a scene document — the arm's
scene with the gravity set, the joints started on the trajectory (q(0) = q_d(0), q̇(0) = 0) and the controller as
its only ``controllers`` entry — and runs it with :class:`core.Simulation`, so the bench exercises exactly what
the studio runs. A trial whose error exceeds ``unstable_error`` rad, or whose state stops being finite, is
stopped and reported unstable (thesis fig. 3.7) instead of failing the sweep; a trial that raises (a scene the
controller does not fit, an error in the step) is a failed result carrying the error's message
(``failed``, ``reason``), never the end of the sweep.

Controller labels: ``pd``, ``computed_torque``, ``idsl`` (Slotine–Li adapting the arm's own parameterization:
the one its sweep entry or its scene's slotine_li controller gives, e.g. Slotine & Li's a1…a4, else the base
parameters), ``idsl_base`` and ``idsl_standard`` (the base parameters, the ten standard ones per link; Γ = η·1),
``m<N>`` (mixture of N experts, gradient rule), ``m<N>_rls`` (recursive-estimation rule). A result records the
parameterization an IDSL trial adapted (``custom(a1,a2,a3,a4)``, ``base(4)``, ``standard(20)``) and its gain
(``eta*I``, or ``eta*`` and the matrix Γ).
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["in_area", "adapted", "Trial", "TrialResult", "run_trial", "failed_result", "build_model", "controller_spec", "trajectory_spec", "TRAJECTORIES",
           "adaptive", "parse_controller", "controller_key", "trial_id", "DEFAULT_GAINS"]

DEFAULT_GAINS = (9.0, 1.0)

TRAJECTORIES = {
    # eq. 3.38–3.39 with the Sanner–Slotine values; k scales time
    "sanner_slotine": {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75],
                       "omega": [0.75 * math.pi, 2.0 * math.pi]},
    # fig. 3.3: q_d = (1.33 (1 − cos 2πkt), 0.75 cos 2πkt)
    "bandwidth": {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75], "omega": [2.0 * math.pi] * 2},
    # fig. 3.2c: straight movements with bell-shaped speed profiles around the same region, 1 s each, repeated for
    # 160 s (longer adaptation windows than the thesis's 30 + 10 s still track a moving target)
    "point_to_point": {"type": "point_to_point",
                       "points": [[0.0, 0.75], [1.33, -0.75], [2.66, 0.75], [1.33, 0.0]] * 40 + [[0.0, 0.75]],
                       "durations": 1.0, "rate": 12.0},
}


def in_area(trajectory: dict, offset) -> dict:
    """A trajectory spec translated by ``offset`` in joint space: fig. 3.2a's joint-space areas, eq. 3.38–3.39's α
    ("α_i and β_i are chosen to translate and scale the trajectory into one of the joint space regions"); the
    points of a point-to-point trajectory and a set point move by the same offset."""
    out = dict(trajectory)
    off = np.asarray(offset, dtype=float)
    if out["type"] == "sinusoid":
        out["alpha"] = (np.asarray(out["alpha"], dtype=float) + off).tolist()
    elif out["type"] == "point_to_point":
        out["points"] = (np.asarray(out["points"], dtype=float) + off).tolist()
    elif out["type"] == "set_point":
        out["q"] = (np.asarray(out["q"], dtype=float) + off).tolist()
    return out


def parse_controller(label: str) -> dict:
    """``{"kind", "experts", "rule"}`` of a controller label (see the module docstring)."""
    if label in ("pd", "computed_torque"):
        return {"kind": label}
    if label in ("idsl", "idsl_base", "idsl_standard"):
        return {"kind": "idsl", "parameters": label[5:] or "arm"}
    m = re.fullmatch(r"m(\d+)(_rls)?", label)
    if m and int(m.group(1)) >= 1:
        return {"kind": "mixture", "experts": int(m.group(1)), "rule": "recursive" if m.group(2) else "gradient"}
    raise ValueError(f"unknown controller {label!r}: expected pd, computed_torque, idsl, idsl_base, idsl_standard, "
                     "m<N> or m<N>_rls")


def controller_key(label: str) -> tuple:
    """The order controllers are listed in: PD, computed torque, IDSL, the gradient mixtures by N, then the
    recursive ones, each at its gain levels by K_p."""
    base, _, gains = label.partition("_kp")
    info = parse_controller(base)
    rank = {"pd": 0, "computed_torque": 1, "idsl": 2, "mixture": 3}[info["kind"]]
    kp = float(gains.split("_kd")[0]) if gains else DEFAULT_GAINS[0]
    order = {"arm": 0, "base": 1, "standard": 2}.get(info.get("parameters", "arm"), 0)
    return rank, info.get("rule", "") == "recursive", info.get("experts", 0), order, kp


def trial_id(t: dict) -> str:
    """The file stem of a trial's traces, from a trial dict or a results row."""
    eta = "" if t["eta"] is None else f"_eta{t['eta']:g}"
    traj = t.get("trajectory_name", t.get("trajectory"))
    label = t.get("label") or t["controller"]
    variant = f"__{t['variant']}" if t.get("variant") else ""
    return (f"{t['arm']}__{traj}__k{t['k']:g}__{label}{eta}__{'gravity' if t['gravity'] else 'nogravity'}"
            f"{variant}")


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
    idsl_parameters: Any = None              # the arm's own IDSL parameterization ("base", or a custom object)
    idsl_gamma: Any = None                   # and its Γ (None: the identity)
    initial: str = "zero"                    # IDSL's initial estimates: "zero" (the thesis's) or "model"
    variant: str = ""                        # the spec's variant this trial runs under ("" when it has none)


@dataclass
class TrialResult:
    trial: dict
    l2_error: float
    unstable: bool
    reason: str
    wall_time: float
    steps: int
    traces: dict = field(default_factory=dict)
    failed: bool = False
    parameterization: str = ""               # what an IDSL trial adapted, e.g. custom(a1,a2,a3,a4)
    gamma: str = ""                          # its adaptation gain: eta*I or eta*[[…]]


def failed_result(trial: Trial | dict, exc: BaseException, wall_time: float = 0.0) -> TrialResult:
    """The result of a trial that raised: no error measured, the exception's type and message as its reason."""
    t = asdict(trial) if isinstance(trial, Trial) else dict(trial)
    message = str(exc).strip().replace("\n", "; ")
    message = message if len(message) <= 500 else message[:497] + "..."
    return TrialResult(t, math.nan, False, f"failed: {type(exc).__name__}: {message}", wall_time, 0, {}, True)


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
        out = {**base, "type": "slotine_li", "kp": trial.kp, "kd": trial.kd, "eta": trial.eta}
        if info["parameters"] != "arm":
            out["parameters"] = info["parameters"]
        else:                                  # the arm entry's choice, else the scene's own slotine_li's
            own = next((c for c in trial.scene.get("controllers", []) if isinstance(c, dict)
                        and c.get("type") == "slotine_li"), {})
            given = trial.idsl_parameters is not None or trial.idsl_gamma is not None
            parameters = trial.idsl_parameters if given else own.get("parameters")
            gamma = trial.idsl_gamma if given else own.get("gamma")
            if parameters is not None:
                out["parameters"] = parameters
            if gamma is not None:
                out["gamma"] = gamma
        if trial.initial != "zero":
            out["initial_parameters"] = trial.initial
        return out
    return {**base, "type": "mixture", "kp": trial.kp, "kd": trial.kd, "eta": trial.eta, "experts": info["experts"],
            "rule": info["rule"], "sigma": trial.sigma}


def build_simulation(trial: Trial):
    """The :class:`core.Simulation` of a trial and its controller."""
    from .. import Simulation
    model = build_model(trial)
    sim = Simulation(model, dt=trial.dt, integrator=trial.integrator, tolerance=trial.tolerance)
    return sim, sim.controllers[0]


def build_model(trial: Trial):
    """The compiled model of a trial's scene (raises :class:`core.SceneError` if the scene refuses it)."""
    from ..scene import compile_scene, parse_spec
    from ..control.trajectories import from_spec

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
    return compile_scene(spec, f"{trial.arm} (bench trial)")


def run_trial(trial: Trial | dict) -> TrialResult:
    """Simulate one trial and score it (runs in a worker process or on a Dask worker). The simulation runs in
    chunks of one simulated second, each one compiled call that records every step; the L2 error sums over the
    integrator's own sample times, the tracking error the step derived (:class:`core.Simulation`'s records).
    Never raises (but for KeyboardInterrupt and the like): a trial that fails is a :func:`failed_result`."""
    start = time.perf_counter()
    try:
        return _run_trial(trial if isinstance(trial, Trial) else Trial(**trial))
    except Exception as exc:                                      # noqa: BLE001 — a failed row, not a failed sweep
        return failed_result(trial, exc, time.perf_counter() - start)


def _run_trial(trial: Trial) -> TrialResult:
    from ..simulation import DivergenceError

    start = time.perf_counter()
    sim, ctrl = build_simulation(trial)
    t_end = trial.adapt + trial.measure
    eps = 1e-9 * max(1.0, t_end)
    max_steps = int(50 * t_end / trial.dt) + 1000                 # an adaptive step that collapses is divergence
    name = ctrl.name
    t_all, e_all, q_all, qd_all, par_all = [], [], [], [], []
    unstable, reason = False, ""
    while sim.state.t < t_end - eps:
        try:
            rec = sim.run(min(1.0, t_end - sim.state.t))
        except DivergenceError as exc:
            unstable, reason = True, str(exc)
            break
        first = 1 if t_all else 0                                 # (a chunk's first record ends the last one)
        t_all.append(rec["t"][first:])
        e_all.append(rec[f"tracking_error_{name}"][first:])
        q_all.append(rec["q"][first:][:, ctrl.qidx])
        qd_all.append(rec[f"desired_{name}"][first:])
        par_all.append(rec[f"parameters_{name}"][first:])
        worst = np.abs(e_all[-1])
        bad = ~np.isfinite(worst).all(axis=1) | (np.nan_to_num(worst, nan=np.inf).max(axis=1) > trial.unstable_error)
        if bad.any():
            i = int(np.argmax(bad))
            unstable, reason = True, (f"tracking error {np.nanmax(worst[i]):.3g} rad at t = {t_all[-1][i]:.3f} s")
            break
        if sim.steps_taken > max_steps:
            unstable, reason = True, f"the step size collapsed ({sim.steps_taken} steps by t = {sim.state.t:.3f} s)"
            break
    t = np.concatenate(t_all) if t_all else np.zeros(0)
    e = np.concatenate(e_all) if e_all else np.zeros((0, ctrl.n))
    l2 = math.nan
    if not unstable and t.size > 1:                               # Σ ‖e(t_i)‖² (t_{i+1} − t_i)   (eq. 3.44)
        h = np.diff(t)
        measured = t[:-1] >= trial.adapt - eps
        span = float(h[measured].sum())
        l2 = math.sqrt(float(np.sum(np.sum(e[:-1] ** 2, axis=1)[measured] * h[measured])) / span) if span > 0 \
            else math.nan
    q = np.concatenate(q_all) if q_all else np.zeros((0, ctrl.n))
    desired = np.concatenate(qd_all) if qd_all else np.zeros((0, ctrl.n))
    parameters = np.concatenate(par_all) if par_all else np.zeros((0, 0))
    keep = _every(t, trial.trace_every, eps)
    traces = {"t": t[keep], "error": e[keep], "q": q[keep], "desired": desired[keep]}
    if ctrl.n_parameters and parameters.size:
        keep = _every(t, trial.parameter_every, eps)
        traces.update(parameter_t=t[keep], parameters=parameters[keep])
    else:
        traces.update(parameter_t=np.zeros(0), parameters=np.zeros((0, 0)))
    parameterization, gamma = adapted(ctrl)
    return TrialResult(asdict(trial), l2, unstable, reason, time.perf_counter() - start, sim.steps_taken, traces,
                       parameterization=parameterization, gamma=gamma)


def adapted(ctrl) -> tuple[str, str]:
    """``(parameterization, gamma)`` of a Slotine–Li controller as the results record them (empty otherwise)."""
    p = getattr(ctrl, "parameterization", None)
    if p is None:
        return "", ""
    what = f"{p.kind}({','.join(p.names)})" if p.kind == "custom" else f"{p.kind}({p.size})"
    G = ctrl.gamma
    if np.array_equal(G, np.eye(p.size)):
        return what, "eta*I"
    return what, "eta*[" + ",".join("[" + ",".join(f"{v:.6g}" for v in row) + "]" for row in G) + "]"


def _every(t: np.ndarray, period: float, eps: float) -> np.ndarray:
    """Indices of the first sample at or after each multiple of ``period``."""
    keep, next_t = [], 0.0
    for i, ti in enumerate(t):
        if ti >= next_t - eps:
            keep.append(i)
            next_t += period
            while ti >= next_t - eps:                             # (a long step may pass several)
                next_t += period
    return np.array(keep, dtype=np.int64)
