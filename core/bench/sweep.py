"""The adaptive-control bench as a grid (thesis §3.4): arm × trajectory × bandwidth k × controller × η × gravity
(× PD gain level), each cell a :class:`~core.bench.trial.Trial`, run in parallel on the local cores
(``concurrent.futures.ProcessPoolExecutor``) or on a Dask cluster, then written as ``results.csv`` with the
figures of the thesis.

The SPEC file (JSON, or TOML with the same fields)::

    arms          list: a scene file, or the name of one in scenes/ ("slotine_li" → scenes/slotine_li_arm.json,
                  else scenes/slotine_li.json), or {"name": …, "scene": …, "idsl_parameters": …, "idsl_gamma":
                  …}: what the ``idsl`` label adapts on this arm (the ``parameters`` and ``gamma`` of a
                  slotine_li controller: "base", "standard" or a custom object; default: those of the scene's
                  own slotine_li controller, else the base parameters)  default ["slotine_li", "uno_kawato"]
    trajectories  list: "sanner_slotine", "bandwidth", "point_to_point", or {"name": …, <a trajectory of the
                  scene schema: type sinusoid | point_to_point | set_point, …>}      default ["sanner_slotine"]
    k             list of bandwidths (time scale of the trajectory, ≥ 0)            default [1.0]
    controllers   list of "pd", "computed_torque", "idsl", "idsl_base", "idsl_standard", "m<N>", "m<N>_rls"
                                                                                    default ["pd", "idsl", "m4"]
    eta           list of adaptation gains η > 0 (adaptive controllers only)        default [0.01]
    gravity       list of booleans (gravity −9.81 along −y when true)               default [false]
    gains         list of [K_p, K_d]: the PD part of every controller               default [[9, 1]]
    pd_gains      extra [K_p, K_d] levels run for PD alone (fig. 3.3)                default []
    sigma         width of the mixture gates (rad)                                  default 0.5
    adapt, measure  seconds of adaptation, then of measurement                      default 30, 10
    dt, integrator, tolerance   the largest step (s), "cash_karp" (the thesis's adaptive Runge–Kutta) | "rk4"
                  | "semi_implicit_euler", the cash_karp error tolerance          default 0.01, "cash_karp", 1e-6
    unstable_error  a trial is unstable once |e| exceeds this (rad)                 default 30
    areas         joint-space areas (fig. 3.2a): a table name → [offset per joint]; every trajectory is run in
                  every area, translated by the offset (eq. 3.38–3.39's α; point-to-point points too) and named
                  "<trajectory>@<area>"                                            default {} (as given)
    variants      list of tables {name, and any of integrator, dt, tolerance, sigma, adapt, measure, initial
                  ("zero" | "model": IDSL's initial estimates)}: the whole grid is run once per variant with
                  those settings replaced; results.csv names it in ``variant``, PD normalizes per variant,
                  and fig_variants.png compares them (the thesis's figures are drawn for grids without
                  variants)                                                         default [] (one run)
    traces        write DIR/traces/<trial>.npz (errors, q, q_d every 20 ms; parameters every 0.05 s)   default true
    figures       draw the thesis's figures as PNG                                  default true

PD runs once per task (it has no η) and is added when a grid lacks it, since normalized errors need it:
``normalized_error = L2(controller) / L2(PD with the same gains)`` on the same arm, trajectory, k and gravity.
Controllers with a non-default gain level are labelled ``<controller>_kp<K_p>_kd<K_d>``.
``results.csv`` has the columns ``arm, trajectory, k, controller, eta, gravity, l2_error, normalized_error,
unstable, status, reason, parameterization, gamma, variant`` (η empty for controllers without adaptation, errors ``nan``
for unstable and failed trials; ``status`` ok, unstable or failed, ``reason`` why; for IDSL the parameters it
adapted, e.g. ``custom(a1,a2,a3,a4)``, and its gain, ``eta*I`` for Γ = η·1). ``table.md`` gives the mean
normalized error ± s.d. and the unstable count of every (variant, arm, gravity, controller, η) over its tasks.

Failing well: every controller label is checked against each arm's scene before the first trial (one scene per
arm, trajectory and label is built and compiled: ``m100`` is refused there, with the scene's own message); a
trial that raises anyway becomes a failed row with its message. ``--dask ADDRESS`` must be
``[tcp|tls|ws|wss|ucx://]HOST:PORT``; a scheduler that refuses the connection is reported at once, one that
does not answer within :data:`DASK_CONNECT_TIMEOUT` seconds or has no worker within
:data:`DASK_WORKER_TIMEOUT` seconds is reported then.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..fileio import (atomic_write_bytes, atomic_write_text, check_replaceable, mark_output, publish_directory,
                      staging_directory)
from ..scene.io import Problem
from .pool import local_results
from .specs import SweepSpecError, spec_path as _path, validated
from .trial import (DEFAULT_GAINS, TRAJECTORIES, Trial, TrialResult, adaptive, build_model, controller_key,
                    failed_result, in_area, parse_controller, run_trial, trial_id)

__all__ = ["SweepSpec", "SweepSpecError", "ClusterError", "read_sweep_spec", "parse_sweep_spec", "make_trials", "run_sweep",
           "write_results", "COLUMNS", "check_dask_address", "DASK_CONNECT_TIMEOUT", "DASK_WORKER_TIMEOUT"]

COLUMNS = ("arm", "trajectory", "k", "controller", "eta", "gravity", "l2_error", "normalized_error", "unstable",
           "status", "reason", "parameterization", "gamma", "variant")
DASK_CONNECT_TIMEOUT = 10.0      # seconds to reach the scheduler
DASK_WORKER_TIMEOUT = 60.0       # seconds for the scheduler to have a worker
SCENES = Path(__file__).resolve().parents[2] / "scenes"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ArmEntry(_Strict):
    name: str
    scene: str
    idsl_parameters: Any = None
    idsl_gamma: Any = None


class Variant(_Strict):
    """Settings that replace the spec's own for one run of the whole grid (see the module docstring)."""
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]{1,40}$")]
    integrator: Literal["rk4", "cash_karp", "semi_implicit_euler"] | None = None
    dt: Annotated[float, Field(ge=1e-6, le=0.1)] | None = None
    tolerance: Annotated[float, Field(ge=1e-14, le=1.0)] | None = None
    sigma: Annotated[float, Field(gt=0)] | None = None
    adapt: Annotated[float, Field(ge=0, le=3600.0)] | None = None
    measure: Annotated[float, Field(gt=0, le=3600.0)] | None = None
    initial: Literal["zero", "model"] | None = None


def _adaptive_label(label: str) -> bool:
    try:
        return adaptive(label)
    except Exception:                                   # noqa: BLE001 — a bad label is reported on its own
        return True


#: A sweep's bounds, checked with its spec: trials in the grid, and simulated seconds per trial.
MAX_TRIALS = 10_000
MAX_TRIAL_SECONDS = 3600.0


class SweepSpec(_Strict):
    """A sweep grid (see the module docstring for every field)."""
    arms: list[Union[str, ArmEntry]] = Field(default_factory=lambda: ["slotine_li", "uno_kawato"], min_length=1)
    trajectories: list[Union[str, dict[str, Any]]] = Field(default_factory=lambda: ["sanner_slotine"],
                                                           min_length=1)
    k: list[Annotated[float, Field(ge=0)]] = Field(default_factory=lambda: [1.0], min_length=1)
    controllers: list[str] = Field(default_factory=lambda: ["pd", "idsl", "m4"], min_length=1)
    eta: list[Annotated[float, Field(gt=0)]] = Field(default_factory=lambda: [0.01], min_length=1)
    gravity: list[bool] = Field(default_factory=lambda: [False], min_length=1)
    gains: list[tuple[Annotated[float, Field(gt=0)], Annotated[float, Field(gt=0)]]] = Field(
        default_factory=lambda: [DEFAULT_GAINS], min_length=1)
    pd_gains: list[tuple[Annotated[float, Field(gt=0)], Annotated[float, Field(gt=0)]]] = Field(
        default_factory=list)
    sigma: Annotated[float, Field(gt=0)] = 0.5
    adapt: Annotated[float, Field(ge=0, le=MAX_TRIAL_SECONDS)] = 30.0
    measure: Annotated[float, Field(gt=0, le=MAX_TRIAL_SECONDS)] = 10.0
    dt: Annotated[float, Field(ge=1e-6, le=0.1)] = 0.01
    integrator: Literal["rk4", "cash_karp", "semi_implicit_euler"] = "cash_karp"
    tolerance: Annotated[float, Field(ge=1e-14, le=1.0)] = 1e-6
    unstable_error: Annotated[float, Field(gt=0)] = 30.0
    areas: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_.+-]{1,40}$")], list[float]] = Field(default_factory=dict)
    variants: list[Variant] = Field(default_factory=list)
    traces: bool = True
    figures: bool = True

    @model_validator(mode="after")
    def _bounded(self):
        labels = sum(len(self.eta) if _adaptive_label(c) else 1 for c in self.controllers)
        cells = (len(self.arms) * len(self.trajectories) * max(1, len(self.areas)) * len(self.k) * labels
                 * len(self.gravity) * len(self.gains) * max(1, len(self.variants)))
        if cells > MAX_TRIALS:
            raise ValueError(f"the grid has {cells} trials (arms × trajectories × areas × k × controllers, each "
                             f"adaptive one × eta, × gravity × gains × variants), more than the {MAX_TRIALS} a "
                             "sweep may run; split it")
        for v in [None, *self.variants]:
            adapt = self.adapt if v is None or v.adapt is None else v.adapt
            measure = self.measure if v is None or v.measure is None else v.measure
            if adapt + measure > MAX_TRIAL_SECONDS:
                raise ValueError(f"adapt + measure is {adapt + measure:g} s"
                                 + (f" in variant {v.name!r}" if v is not None else "")
                                 + f", more than the {MAX_TRIAL_SECONDS:g} s a trial may last")
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must differ: {names}")
        return self


@dataclass
class ResolvedSpec:
    """A validated spec with its arms loaded (name → scene document) and trajectories resolved
    (name → trajectory spec)."""
    spec: SweepSpec
    arms: dict[str, dict]
    trajectories: dict[str, dict]
    source: str = "<sweep>"
    arm_has_forces: dict[str, bool] = field(default_factory=dict)
    arm_idsl: dict[str, tuple] = field(default_factory=dict)     # name → an arm entry's (parameters, gamma)


def _arm_path(entry, base: Path) -> tuple[str, Path]:
    if isinstance(entry, ArmEntry):
        p = Path(entry.scene)
        return entry.name, p if p.is_absolute() else base / p
    p = Path(entry)
    if p.suffix == ".json":
        return p.stem.removesuffix("_arm"), p if p.is_absolute() else base / p
    p = SCENES / f"{entry}_arm.json"
    return entry, p if p.exists() else SCENES / f"{entry}.json"


def parse_sweep_spec(raw: Any, source: str = "<sweep>", base: Path | None = None) -> ResolvedSpec:
    """Validate a decoded SPEC and resolve its arms and trajectories, or raise :class:`SweepSpecError` listing
    every problem (JSON path, what was expected, the value)."""
    from ..scene import SceneError, compile_scene, read_spec
    from ..scene.schema import TrajectorySpec
    from pydantic import TypeAdapter

    base = base or Path.cwd()
    from .cylinder import is_cylinder_spec, parse_cylinder_spec
    if is_cylinder_spec(raw):                             # thesis §2.3.2–2.3.3: the nailed cylinder's grid
        return parse_cylinder_spec(raw, source, base)
    if not isinstance(raw, dict):
        raise SweepSpecError([Problem("$", "a sweep spec must be an object (a JSON object or a TOML table)",
                                      raw, True)], source)
    spec = validated(SweepSpec, raw, source)
    problems: list[Problem] = []
    for n, label in enumerate(spec.controllers):
        try:
            parse_controller(label)
        except ValueError as exc:
            problems.append(Problem(f"$.controllers[{n}]", str(exc).split(": ", 1)[1], label, True))
    arms, has_forces, n_joints, idsl = {}, {}, {}, {}
    for n, entry in enumerate(spec.arms):
        name, path = _arm_path(entry, base)
        if name in arms:
            problems.append(Problem(f"$.arms[{n}]", "duplicate arm name", name, True))
            continue
        try:
            scene = read_spec(path)
            model = compile_scene(scene, str(path))
        except SceneError as exc:
            problems.append(Problem(f"$.arms[{n}]", "not a usable scene: " + "; ".join(str(p) for p in exc.problems),
                                    str(entry if isinstance(entry, str) else entry.scene), True))
            continue
        arms[name] = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(entry, ArmEntry) and (entry.idsl_parameters is not None or entry.idsl_gamma is not None):
            idsl[name] = (entry.idsl_parameters, entry.idsl_gamma)
        has_forces[name] = bool(model.forces)
        n_joints[name] = sum(1 for b in scene.bodies if b.joint.type in ("hinge", "slider"))
        if model.nv != n_joints[name]:
            problems.append(Problem(f"$.arms[{n}]", "the bench drives arms of hinge and slider joints only", str(path),
                                    True))
    trajectories = {}
    adapter = TypeAdapter(TrajectorySpec)
    for n, entry in enumerate(spec.trajectories):
        if isinstance(entry, str):
            if entry not in TRAJECTORIES:
                problems.append(Problem(f"$.trajectories[{n}]", "unknown trajectory; expected one of: "
                                        + ", ".join(TRAJECTORIES) + ", or an object with a name and a trajectory",
                                        entry, True))
                continue
            name, traj = entry, TRAJECTORIES[entry]
        else:
            body = dict(entry)
            name = body.pop("name", None)
            if not isinstance(name, str) or not name:
                problems.append(Problem(f"$.trajectories[{n}].name", "a custom trajectory needs a name", name,
                                        name is not None))
                continue
            try:
                traj = adapter.validate_python(body).model_dump(mode="json", exclude_defaults=False)
            except ValidationError as exc:
                for err in exc.errors(include_url=False):
                    problems.append(Problem(f"$.trajectories[{n}]" + _path(err["loc"])[1:],
                                            err["msg"].removeprefix("Value error, "), err.get("input"), True))
                continue
            traj.pop("time_scale", None)
        if name in trajectories:
            problems.append(Problem(f"$.trajectories[{n}]", "duplicate trajectory name", name, True))
        trajectories[name] = traj
        dims = {"sinusoid": lambda t: len(t["alpha"]), "set_point": lambda t: len(t["q"]),
                "point_to_point": lambda t: len(t["points"][0])}[traj["type"]](traj)
        for arm, nj in n_joints.items():
            if dims != nj:
                problems.append(Problem(f"$.trajectories[{n}]", f"gives {dims} coordinates but arm {arm!r} has {nj} "
                                        "joints", name, True))
    if spec.areas and not problems:                  # fig. 3.2a: every trajectory in every joint-space area
        placed = {}
        for area, offset in spec.areas.items():
            for arm, nj in n_joints.items():
                if len(offset) != nj:
                    problems.append(Problem(f"$.areas.{area}", f"gives {len(offset)} offsets but arm {arm!r} has "
                                            f"{nj} joints", offset, True))
            for name, traj in trajectories.items():
                placed[f"{name}@{area}"] = in_area(traj, offset)
        trajectories = placed
    if problems:
        raise SweepSpecError(problems, source)
    res = ResolvedSpec(spec, arms, trajectories, source, has_forces, idsl)
    problems = _scene_problems(res)
    if problems:
        raise SweepSpecError(problems, source)
    return res


def _scene_problems(res: "ResolvedSpec") -> list[Problem]:
    """Every controller label checked against each arm's scene schema before any trial runs: one scene per arm,
    trajectory, controller and gain level is built and compiled as its trials will be."""
    from ..scene import SceneError
    where = {label: f"$.controllers[{n}]" for n, label in reversed(list(enumerate(res.spec.controllers)))}
    problems, seen = [], set()
    for t in make_trials(res):
        key = (t.arm, t.trajectory_name, t.label)
        if key in seen:
            continue
        seen.add(key)
        try:
            build_model(t)
        except SceneError as exc:
            why = "; ".join(str(p) for p in exc.problems[:3]) + (" …" if len(exc.problems) > 3 else "")
            problems.append(Problem(where.get(t.controller, "$.controllers"), f"arm {t.arm!r} with trajectory "
                                    f"{t.trajectory_name!r} refuses this controller: {why}", t.controller, True))
        except Exception as exc:                                  # noqa: BLE001 — named, never a traceback
            problems.append(Problem(where.get(t.controller, "$.controllers"), f"arm {t.arm!r} cannot be built "
                                    f"with this controller: {type(exc).__name__}: {exc}", t.controller, True))
    return problems


def read_sweep_spec(path: str | os.PathLike) -> ResolvedSpec:
    """Read a SPEC file (``.toml``, otherwise JSON) and validate it; paths in it are relative to its folder."""
    from ..fileio import read_regular_file
    from ..scene.limits import MAX_DOCUMENT_BYTES, check_values, decode_document
    path = Path(path)
    try:
        data = read_regular_file(path, MAX_DOCUMENT_BYTES)
    except (OSError, ValueError) as exc:
        raise SweepSpecError([Problem("$", f"cannot read the file: {getattr(exc, 'strerror', None) or exc}")],
                             str(path)) from None
    if path.suffix.lower() == ".toml":
        import tomllib
        try:
            raw = tomllib.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise SweepSpecError([Problem("$", f"not UTF-8 text: byte at offset {exc.start} cannot be decoded")],
                                 str(path)) from None
        except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
            raise SweepSpecError([Problem("$", f"not valid TOML: {str(exc)[:300]}")], str(path)) from None
    else:
        raw, problems = decode_document(data)
        if problems:
            raise SweepSpecError([Problem(p, m) for p, m in problems], str(path))
    problems, raw = check_values(raw)
    if problems:
        raise SweepSpecError([Problem(p, m, v, h) for p, m, v, h in problems][:100], str(path))
    try:
        return parse_sweep_spec(raw, str(path), path.resolve().parent)
    except SweepSpecError:
        raise
    except Exception as exc:                                      # noqa: BLE001 — named, never a traceback
        raise SweepSpecError([Problem("$", f"this spec could not be used: {type(exc).__name__}: "
                                      f"{str(exc)[:300]}")], str(path)) from None


def _label(controller: str, gains) -> str:
    if tuple(gains) == DEFAULT_GAINS:
        return controller
    return f"{controller}_kp{gains[0]:g}_kd{gains[1]:g}"


def make_trials(res: ResolvedSpec) -> list[Trial]:
    """Every cell of the grid: PD added where normalization needs it, η only for adaptive controllers, the
    ``pd_gains`` levels for PD alone."""
    s = res.spec
    controllers = list(dict.fromkeys((["pd"] if "pd" not in s.controllers else []) + list(s.controllers)))
    cells = [(tuple(g), c) for g in s.gains for c in controllers]
    cells += [(tuple(g), "pd") for g in s.pd_gains if tuple(g) not in {tuple(x) for x in s.gains}]
    trials = []
    for v in (s.variants or [None]):
        over = {} if v is None else {f: getattr(v, f) for f in ("integrator", "dt", "tolerance", "sigma", "adapt",
                                                                 "measure", "initial") if getattr(v, f) is not None}
        settings = dict(sigma=s.sigma, adapt=s.adapt, measure=s.measure, dt=s.dt, integrator=s.integrator,
                        tolerance=s.tolerance, initial="zero")
        settings.update(over)
        for arm, scene in res.arms.items():
            for tname, traj in res.trajectories.items():
                for k in s.k:
                    for gravity in s.gravity:
                        for gains, c in cells:
                            for eta in (s.eta if adaptive(c) else [None]):
                                trials.append(Trial(
                                    arm=arm, scene=scene, trajectory_name=tname, trajectory=traj, k=float(k),
                                    controller=c, eta=eta, gravity=bool(gravity), kp=float(gains[0]),
                                    kd=float(gains[1]), unstable_error=s.unstable_error, label=_label(c, gains),
                                    idsl_parameters=res.arm_idsl.get(arm, (None, None))[0],
                                    idsl_gamma=res.arm_idsl.get(arm, (None, None))[1],
                                    variant="" if v is None else v.name, **settings))
    return trials


def _rows(results: list[TrialResult], variants: tuple = ()) -> list[dict]:
    """The CSV rows, with the normalized errors against PD of the same task and gains."""
    key = lambda t: (t["arm"], t["trajectory_name"], t["k"], t["gravity"], t["kp"], t["kd"],      # noqa: E731
                     t.get("variant", ""))
    ok = lambda r: not r.unstable and not getattr(r, "failed", False)                           # noqa: E731
    pd = {key(r.trial): r.l2_error for r in results if r.trial["controller"] == "pd" and ok(r)}
    rows = []
    for r in results:
        t = r.trial
        ref = pd.get(key(t), math.nan)
        norm = r.l2_error / ref if (ref > 0 and ok(r)) else (1.0 if t["controller"] == "pd" and ok(r) else math.nan)
        status = "failed" if getattr(r, "failed", False) else "unstable" if r.unstable else "ok"
        rows.append({"arm": t["arm"], "trajectory": t["trajectory_name"], "k": t["k"], "controller": t["label"],
                     "eta": t["eta"], "gravity": t["gravity"], "l2_error": r.l2_error, "normalized_error": norm,
                     "unstable": r.unstable, "status": status, "reason": r.reason,
                     "parameterization": getattr(r, "parameterization", ""), "gamma": getattr(r, "gamma", ""),
                     "variant": t.get("variant", "")})
    order = {name: n for n, name in enumerate(variants)}                # the spec's order
    rows.sort(key=lambda r: (order.get(r["variant"], 0), r["arm"], r["trajectory"], r["gravity"], r["k"],
                             controller_key(r["controller"]), -1 if r["eta"] is None else r["eta"]))
    return rows


def results_table(rows: list[dict]) -> str:
    """A Markdown table of the rows: per (variant, arm, gravity, controller, η) the mean normalized error ± s.d.
    over its tasks, the mean L2 error (rad) and how many trials were unstable or failed."""
    groups: dict = {}
    for r in rows:
        key = (r["variant"], r["arm"], r["gravity"], r["controller"], r["eta"])
        groups.setdefault(key, []).append(r)
    lines = ["| variant | arm | gravity | controller | η | tasks | normalized L2 (mean ± s.d.) | L2 mean (rad) | "
             "unstable | failed |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (variant, arm, gravity, controller, eta), sel in groups.items():
        ok = [r for r in sel if r["status"] == "ok"]
        norm = np.array([r["normalized_error"] for r in ok if math.isfinite(r["normalized_error"])])
        l2 = np.array([r["l2_error"] for r in ok if math.isfinite(r["l2_error"])])
        cell = f"{norm.mean():.3f} ± {norm.std():.3f}" if norm.size else "–"
        lines.append(f"| {variant or '–'} | {arm} | {'yes' if gravity else 'no'} | {controller} | "
                     f"{'' if eta is None else f'{eta:g}'} | {len(sel)} | {cell} | "
                     f"{f'{l2.mean():.4g}' if l2.size else '–'} | {sum(r['status'] == 'unstable' for r in sel)} | "
                     f"{sum(r['status'] == 'failed' for r in sel)} |")
    return "\n".join(lines) + "\n"


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.10g}"
    return str(v)


def write_results(out: Path, results: list[TrialResult], variants: tuple = ()) -> list[dict]:
    """Write ``out/results.csv`` atomically (variants in the order given); return its rows."""
    rows = _rows(results, variants)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_fmt(r[c]) for c in COLUMNS])
    atomic_write_text(out / "results.csv", buf.getvalue())
    return rows


def _write_traces(out: Path, r: TrialResult) -> None:
    buf = io.BytesIO()
    arrays = {k: np.asarray(v, dtype=np.float32) for k, v in r.traces.items()}
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(out / "traces" / f"{trial_id(r.trial)}.npz", buf.getvalue())


class ClusterError(RuntimeError):
    """The Dask scheduler could not be reached."""


_DASK_ADDRESS = re.compile(r"^(?:(?P<scheme>tcp|tls|ws|wss|ucx)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)"
                           r":(?P<port>\d{1,5})/?$")


def check_dask_address(address: str) -> str | None:
    """Why ``address`` is not a Dask scheduler address (``[tcp|tls|ws|wss|ucx://]HOST:PORT``), or None."""
    m = _DASK_ADDRESS.match(address or "")
    if m is None:
        return (f"--dask {address!r} is not a scheduler address; expected [tcp|tls|ws|wss|ucx://]HOST:PORT, "
                "e.g. tcp://scheduler:8786")
    if not 0 < int(m["port"]) < 65536:
        return f"--dask {address!r}: the port must be between 1 and 65535"
    return None


def connect_dask(address: str):
    """A ``dask.distributed.Client`` of the scheduler at ``address`` with at least one worker, or
    :class:`ClusterError` saying why not: a bad address or a refused connection at once, no answer after
    :data:`DASK_CONNECT_TIMEOUT` s, no worker after :data:`DASK_WORKER_TIMEOUT` s."""
    why = check_dask_address(address)
    if why:
        raise ClusterError(why)
    m = _DASK_ADDRESS.match(address)
    host, port = m["host"].strip("[]"), int(m["port"])
    if m["scheme"] in (None, "tcp", "tls", "ws", "wss"):
        try:                                   # refused or unknown: said now, not after the client's retries
            socket.create_connection((host, port), timeout=DASK_CONNECT_TIMEOUT).close()
        except OSError as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: "
                               f"{exc.strerror or exc.__class__.__name__}") from None
    from dask.distributed import Client
    try:
        client = Client(address, timeout=f"{DASK_CONNECT_TIMEOUT:g}s")
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        client.wait_for_workers(1, timeout=DASK_WORKER_TIMEOUT)
    except (TimeoutError, OSError) as exc:
        client.close()
        raise ClusterError(f"the Dask scheduler at {address} has no workers after {DASK_WORKER_TIMEOUT:g} s; start "
                           f"some with `dask worker {address}`") from exc
    return client


def _dask_results(client, trials: list[dict]):
    """Yield results as the Dask cluster of ``client`` finishes them; a trial whose task fails (a worker lost)
    is a failed result."""
    from dask.distributed import as_completed
    with client:
        futures = client.map(run_trial, trials, pure=False)
        index = {f.key: t for f, t in zip(futures, trials)}
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:                                  # noqa: BLE001
                yield failed_result(index[fut.key], exc)


def run_sweep(res: ResolvedSpec, out: str | os.PathLike, workers: int | None = None, dask: str | None = None,
              progress: bool = True, replace: bool = False) -> dict:
    """Run every trial, write ``results.csv``, the traces and the figures into ``out``; return a summary. The
    files are written into a hidden folder beside ``out``, renamed to ``out`` when complete (as ``core run``):
    ``out`` holds one whole sweep or none, also under ``kill -9``. An existing ``out`` is refused before any trial
    unless it is an earlier sweep's output and ``replace`` (:func:`core.fileio.check_replaceable`)."""
    out = Path(out)
    check_replaceable(out, "sweep", replace)
    from .cylinder import CylinderResolved, run_cylinder_sweep
    if isinstance(res, CylinderResolved):                     # the cylinder grid is small: local cores only
        dask = None
    client = connect_dask(dask) if dask else None            # (before anything is written)
    staged = staging_directory(out)
    try:
        if isinstance(res, CylinderResolved):
            summary = run_cylinder_sweep(res, staged, workers, progress)
        else:
            summary = _run_into(res, staged, workers, dask, client, progress)
        mark_output(staged, "sweep")
        publish_directory(staged, out, replace=replace, command="sweep")
    except BaseException:
        import shutil
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return summary


def _run_into(res: ResolvedSpec, out: Path, workers, dask, client, progress: bool) -> dict:
    from dataclasses import asdict
    if res.spec.traces:
        (out / "traces").mkdir(exist_ok=True)
    trials = [asdict(t) for t in make_trials(res)]
    # slow trials first, so the pool is not left waiting on one long trial at the end
    cost = {"idsl": 3.0, "pd": 1.0, "computed_torque": 1.2}
    trials.sort(key=lambda t: -cost.get(t["controller"], 1.5 + 0.1 * len(t["controller"])))
    workers = workers or os.cpu_count() or 1
    start = time.perf_counter()
    source = _dask_results(client, trials) if dask else local_results(workers, trials, run_trial, failed_result)
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(trials), unit="trial", desc="sweep", dynamic_ncols=True)
    results = []
    for r in source:
        r.trial.pop("scene", None)
        results.append(r)
        if res.spec.traces:
            _write_traces(out, r)
        if bar is not None:
            bar.update(1)
            bar.set_postfix_str(f"{r.trial['arm']} {r.trial['label']} k={r.trial['k']:g}"
                                + (" UNSTABLE" if r.unstable else "") + (" FAILED" if r.failed else ""))
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - start
    rows = write_results(out, results, tuple(v.name for v in res.spec.variants))
    atomic_write_text(out / "table.md", results_table(rows))
    figures, figures_error = [], None
    if res.spec.figures:
        from .figures import draw_figures
        try:
            figures = draw_figures(out, rows, res)
        except Exception as exc:                                  # noqa: BLE001 — the results stand without them
            figures_error = f"{type(exc).__name__}: {exc}"[:300]
    summary = {
        "spec": res.source, "trials": len(results), "unstable": sum(r.unstable for r in results),
        "wall_time_s": wall, "cpu_time_s": sum(r.wall_time for r in results),
        "workers": None if dask else workers, "dask": dask,
        "failed": sum(r.failed for r in results),
        "unstable_trials": [{"trial": trial_id(r.trial), "reason": r.reason} for r in results if r.unstable],
        "failed_trials": [{"trial": trial_id(r.trial), "reason": r.reason} for r in results if r.failed],
        "figures": [p.name for p in figures], "figures_error": figures_error,
        "spec_resolved": json.loads(res.spec.model_dump_json()),
    }
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary
