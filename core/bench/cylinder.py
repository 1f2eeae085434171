"""The nailed cylinder of thesis §2.3.2–2.3.3 as a grid: the dynamic constraint (a nail, eq. 2.21's critically
damped stabilization) against a penalty method — a stiff spring of rest length zero from the same body point to
the nail (§2.3.3, "a very stiff ... spring with rest length zero between points"), optionally damped — each run
for ``duration`` seconds from the scene's state (fig. 2.6–2.7: started on the constraint, gravity, no damping),
scored by the point's drift from the nail and the change of the total energy.

The SPEC (TOML or JSON) has ``bench = "cylinder"`` and::

    scene          the nailed scene (one free body, one nail constraint)   default "../nail_cylinder_on_constraint.json"
    duration       simulated seconds                                       default 20
    methods        list of "nail", "penalty"                               default ["nail", "penalty"]
    stiffness      list of penalty spring stiffnesses k (N/m)              default [1e3, 1e4, 1e5, 1e6]
    damping        list of penalty damping ratios ζ (c = 2 ζ sqrt(k m))    default [0.0]
    stabilization  list of the nail's λ (1/s, eq. 2.21)                    default [the scene's]
    dt             list of steps (s; the largest step for cash_karp)        default [0.001]
    integrator     list of "rk4", "cash_karp", "semi_implicit_euler"        default ["rk4"]
    tolerance      cash_karp's error tolerance                             default 1e-8
    record_every   steps between records                                  default 10
    figures        draw fig2_7_energy.png and fig2_penalty.png             default true

``python -m core sweep SPEC --out DIR`` writes ``DIR/results.csv`` (one row a run: ``method, integrator, dt,
stiffness, damping_ratio, stabilization, status, max_deviation_m, final_deviation_m, energy_change_J,
max_energy_error_J, energy_rate_J_per_s, audit_error_J, steps, wall_time_s``; energy_change = E(T) − E(0) of the
mechanical energy, kinetic + gravity + the penalty spring's elastic energy; ``audit_error`` what the energy
books leave unexplained, E − E0 − the constraint's and dampers' work, i.e. the integrator's own error), the
figures, ``table.md`` and ``summary.json``; a run whose energy books or state blow up is ``diverged``, its
measures taken over its records up to the last good state (``last_t_s``). It runs on the local cores
(:func:`core.bench.pool.local_results`, as the sweep): a run that raises or whose worker dies is ``failed``, the
reason in ``table.md``, and the others stand.
"""
from __future__ import annotations

import csv
import io
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["CylinderSpec", "is_cylinder_spec", "parse_cylinder_spec", "run_cylinder_sweep", "cylinder_runs",
           "run_cylinder", "penalty_document", "CYLINDER_COLUMNS"]

CYLINDER_COLUMNS = ("method", "integrator", "dt", "stiffness", "damping_ratio", "stabilization", "status",
                    "max_deviation_m", "final_deviation_m", "energy_change_J", "max_energy_error_J",
                    "energy_rate_J_per_s", "audit_error_J", "last_t_s", "steps", "wall_time_s")
MAX_RUNS = 2000


class CylinderSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    bench: Literal["cylinder"]
    scene: str = "../nail_cylinder_on_constraint.json"
    duration: Annotated[float, Field(gt=0, le=600)] = 20.0
    methods: list[Literal["nail", "penalty"]] = Field(default_factory=lambda: ["nail", "penalty"], min_length=1)
    stiffness: list[Annotated[float, Field(gt=0, le=1e12)]] = Field(default_factory=lambda: [1e3, 1e4, 1e5, 1e6],
                                                                     min_length=1)
    damping: list[Annotated[float, Field(ge=0, le=100)]] = Field(default_factory=lambda: [0.0], min_length=1)
    stabilization: list[Annotated[float, Field(ge=0, le=1e6)]] | None = None
    dt: list[Annotated[float, Field(ge=1e-6, le=0.1)]] = Field(default_factory=lambda: [0.001], min_length=1)
    integrator: list[Literal["rk4", "cash_karp", "semi_implicit_euler"]] = Field(
        default_factory=lambda: ["rk4"], min_length=1)
    tolerance: Annotated[float, Field(ge=1e-14, le=1.0)] = 1e-8
    record_every: Annotated[int, Field(ge=1, le=100000)] = 10
    figures: bool = True

    @model_validator(mode="after")
    def _bounded(self):
        n = len(cylinder_runs(self))
        if n > MAX_RUNS:
            raise ValueError(f"the grid has {n} runs, more than the {MAX_RUNS} a cylinder sweep may run; split it")
        steps = self.duration / min(self.dt)
        if steps > 5e7:
            raise ValueError(f"duration / dt is {steps:.3g} steps, more than 5e7")
        return self


def is_cylinder_spec(raw) -> bool:
    return isinstance(raw, dict) and raw.get("bench") == "cylinder"


def cylinder_runs(spec: CylinderSpec) -> list[dict]:
    """Every run of the grid: the nail at each λ, the penalty spring at each stiffness and damping ratio; each at
    every dt and integrator."""
    runs = []
    for integrator in spec.integrator:
        for dt in spec.dt:
            for method in spec.methods:
                if method == "nail":
                    for lam in (spec.stabilization or [None]):
                        runs.append(dict(method="nail", integrator=integrator, dt=dt, stiffness=None,
                                         damping_ratio=None, stabilization=lam))
                else:
                    for k in spec.stiffness:
                        for zeta in spec.damping:
                            runs.append(dict(method="penalty", integrator=integrator, dt=dt, stiffness=k,
                                             damping_ratio=zeta, stabilization=None))
    return runs


def parse_cylinder_spec(raw: dict, source: str, base: Path):
    """A validated cylinder SPEC and its scene document, or :class:`core.bench.sweep.SweepSpecError`."""
    from ..scene import SceneError, compile_scene, read_spec
    from ..scene.io import Problem
    from .specs import SweepSpecError, validated
    spec = validated(CylinderSpec, raw, source)
    path = Path(spec.scene)
    path = path if path.is_absolute() else base / path
    try:
        model = compile_scene(read_spec(path), str(path))
    except SceneError as exc:
        raise SweepSpecError([Problem("$.scene", "not a usable scene: " + "; ".join(str(p) for p in exc.problems),
                                      spec.scene, True)], source) from None
    doc = json.loads(path.read_text(encoding="utf-8"))
    nails = [c for c in doc.get("constraints", []) if c.get("type") == "nail"]
    if len(nails) != 1 or len(doc.get("constraints", [])) != 1 or model.nv != 6:
        raise SweepSpecError([Problem("$.scene", "the cylinder bench needs one free body held by one nail "
                                      "constraint", spec.scene, True)], source)
    return CylinderResolved(spec, doc, source)


@dataclass(frozen=True)
class CylinderResolved:
    """A validated cylinder SPEC, its scene document and where it came from."""
    spec: CylinderSpec
    scene: dict
    source: str


def penalty_document(doc: dict, stiffness: float, damping_ratio: float) -> dict:
    """The scene with its nail replaced by a penalty spring (§2.3.3): rest length 0 from the nailed point to the
    nail's world position, stiffness k and damping c = 2 ζ sqrt(k m) (m the body's mass)."""
    from ..scene import compile_scene, parse_spec
    nail = next(c for c in doc["constraints"] if c["type"] == "nail")
    model = compile_scene(parse_spec(doc, "cylinder"))
    anchor = np.asarray(model.constraints[0].r_b, dtype=float)
    mass = float(model.mass[0])
    out = json.loads(json.dumps(doc))
    out["constraints"] = []
    out["forces"] = [f for f in out.get("forces", [])] + [{
        "type": "spring", "name": "penalty", "body_a": nail["body"], "point_a": nail["point"], "body_b": "world",
        "point_b": anchor.tolist(), "stiffness": float(stiffness),
        "damping": float(2.0 * damping_ratio * math.sqrt(stiffness * mass)), "rest_length": 0.0}]
    return out


def run_cylinder(scene: dict, run: dict, duration: float, tolerance: float, record_every: int) -> dict:
    """One run: the records' drift of the nailed point and the energy change (see the module docstring)."""
    from .. import Simulation
    from ..simulation import DivergenceError
    from ..points import link_kinematics, position_at
    from ..scene import compile_scene, parse_spec

    start = time.perf_counter()
    doc = json.loads(json.dumps(scene))
    if run["method"] == "nail":
        if run["stabilization"] is not None:
            doc["constraints"][0]["stabilization"] = float(run["stabilization"])
    else:
        doc = penalty_document(doc, run["stiffness"], run["damping_ratio"])
    model = compile_scene(parse_spec(doc, "cylinder"))
    ref = compile_scene(parse_spec(scene, "cylinder")).constraints[0]
    anchor = np.asarray(ref.r_b, dtype=float)
    sim = Simulation(model, dt=run["dt"], integrator=run["integrator"], tolerance=tolerance)
    status = "ok"
    try:
        rec = sim.run(duration, record_every=record_every, max_steps=int(100 * duration / run["dt"]) + 1000)
    except DivergenceError as exc:
        rec, status = exc.records, "diverged"
    t = np.asarray(rec["t"])
    link = ref.link_a
    point = np.asarray(ref.r_a, dtype=float)
    D = np.array([np.linalg.norm(position_at(link_kinematics(model, q), link, point) - anchor) for q in rec["q"]])
    E = np.asarray(rec["energy_total"])
    dE = E - E[0]
    rate = float(np.polyfit(t, dE, 1)[0]) if t.size > 2 and np.all(np.isfinite(dE)) else math.nan
    audit = np.asarray(rec.get("energy_error", np.zeros_like(E)))
    finite = lambda a: a[np.isfinite(a)] if a.size else a                                     # noqa: E731
    out = dict(run, status=status,
               max_deviation_m=float(finite(D).max()) if finite(D).size else math.nan,
               final_deviation_m=float(D[-1]) if D.size else math.nan,
               energy_change_J=float(dE[-1]) if dE.size else math.nan,
               max_energy_error_J=float(np.abs(finite(dE)).max()) if finite(dE).size else math.nan,
               energy_rate_J_per_s=rate,
               audit_error_J=float(np.abs(finite(audit)).max()) if finite(audit).size else math.nan,
               last_t_s=float(t[-1]) if t.size else 0.0, steps=int(sim.steps_taken),
               wall_time_s=time.perf_counter() - start)
    out["_trace"] = {"t": t, "deviation": D, "energy_change": dE}
    return out


def _run_task(task: dict) -> dict:
    """:func:`run_cylinder` of one task of the pool (:func:`core.bench.pool.local_results`), with its index in
    the grid (the pool gives rows as they finish)."""
    task = dict(task)
    index = task.pop("index")
    return dict(run_cylinder(**task), _index=index)


def _failed_task(task: dict, exc: BaseException) -> dict:
    """The row of a run that raised or whose worker died: status ``failed``, the reason kept, no measures."""
    nan = math.nan
    return dict(task["run"], _index=task["index"], status="failed", error=f"{type(exc).__name__}: {exc}"[:300],
                max_deviation_m=nan, final_deviation_m=nan, energy_change_J=nan, max_energy_error_J=nan,
                energy_rate_J_per_s=nan, audit_error_J=nan, last_t_s=0.0, steps=0, wall_time_s=0.0,
                _trace={"t": np.zeros(0), "deviation": np.zeros(0), "energy_change": np.zeros(0)})


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.6g}"
    return str(v)


def _label(r: dict) -> str:
    if r["method"] == "nail":
        return "nail" + ("" if r["stabilization"] is None else f" λ={r['stabilization']:g}")
    return f"penalty k={r['stiffness']:.0e}" + (f" ζ={r['damping_ratio']:g}" if r["damping_ratio"] else "")


def _table(rows: list[dict]) -> str:
    lines = ["| method | integrator | dt (s) | k (N/m) | ζ | λ (1/s) | status | max drift (m) | E(T) − E(0) (J) | "
             "books' error (J) |", "|---|---|---|---|---|---|---|---|---|---|"]
    def done(r) -> str:
        if r["status"] == "failed":
            return f"failed: {r['error']}".replace("|", "/")
        return r["status"] + ("" if r["status"] == "ok" else f" at {r['last_t_s']:.3g} s")
    for r in rows:
        lines.append(f"| {r['method']} | {r['integrator']} | {r['dt']:g} | {_fmt(r['stiffness'])} | "
                     f"{_fmt(r['damping_ratio'])} | {_fmt(r['stabilization'])} | {done(r)} | "
                     f"{r['max_deviation_m']:.3g} | {r['energy_change_J']:.3g} | {r['audit_error_J']:.3g} |")
    return "\n".join(lines) + "\n"


def _figures(out: Path, rows: list[dict], spec: CylinderSpec) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    nails = [r for r in rows if r["method"] == "nail" and r["status"] == "ok"]
    if nails:                  # fig. 2.7: E(t) − E(0) per integrator (lines: dt), then E(T) − E(0) against dt
        integrators = list(dict.fromkeys(r["integrator"] for r in nails))
        lams = list(dict.fromkeys(r["stabilization"] for r in nails))
        shown = 10.0 if 10.0 in lams else lams[0]          # the scene's λ (10 1/s) in the time plots
        fig, axes = plt.subplots(1, len(integrators) + 1, figsize=(4.2 * (len(integrators) + 1), 3.8),
                                 squeeze=False)
        for ax, integ in zip(axes[0], integrators):
            for n, r in enumerate(r for r in nails if r["integrator"] == integ and r["stabilization"] == shown):
                tr = r["_trace"]
                ax.plot(tr["t"], tr["energy_change"], lw=0.9, color=f"C{n}", label=f"dt = {r['dt'] * 1e3:g} ms")
            ax.axhline(0.0, color="k", lw=0.5)
            ax.set_yscale("symlog", linthresh=1e-10)
            ax.set_xlabel("t (s)")
            ax.set_ylabel("E(t) − E(0) (J)")
            ax.legend(fontsize=6)
            ax.set_title(f"{integ}" + ("" if shown is None else f", λ = {shown:g} 1/s"), fontsize=9)
        ax = axes[0][-1]
        for n, (integ, lam) in enumerate((i, l) for i in integrators for l in lams):
            sel = sorted([r for r in nails if r["integrator"] == integ and r["stabilization"] == lam],
                         key=lambda r: r["dt"])
            ax.loglog([r["dt"] for r in sel], [max(abs(r["energy_change_J"]), 1e-16) for r in sel], "-",
                      color=f"C{n}", lw=0.8, label=f"{integ}" + ("" if lam is None else f", λ = {lam:g}"))
            for r in sel:
                gain = r["energy_change_J"] > 0
                ax.plot(r["dt"], max(abs(r["energy_change_J"]), 1e-16), "^" if gain else "v", color=f"C{n}",
                        mfc=f"C{n}" if gain else "none", ms=5)
        ax.set_xlabel("dt (s)")
        ax.set_ylabel("|E(T) − E(0)| (J)")
        ax.legend(fontsize=5.5)
        ax.set_title("E(T) − E(0): ▲ gain, ▽ loss", fontsize=9)
        fig.suptitle(f"Fig. 2.7: total energy of the nailed cylinder started on the constraint (gravity, no "
                     f"damping, {spec.duration:g} s)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out / "fig2_7_energy.png", dpi=110)
        plt.close(fig)
        written.append(out / "fig2_7_energy.png")
    pens = [r for r in rows if r["method"] == "penalty"]
    if pens:                                           # §2.3.3: drift and energy against stiffness and dt
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        keys = sorted({(r["integrator"], r["dt"], r["damping_ratio"]) for r in pens})
        for n, (integ, dt, zeta) in enumerate(keys):
            sel = sorted([r for r in pens if (r["integrator"], r["dt"], r["damping_ratio"]) == (integ, dt, zeta)],
                         key=lambda r: r["stiffness"])
            ok = [r for r in sel if r["status"] == "ok"]
            label = f"{integ}, dt = {dt * 1e3:g} ms" + (f", ζ = {zeta:g}" if zeta else "")
            a.loglog([r["stiffness"] for r in ok], [r["max_deviation_m"] for r in ok], "o-", color=f"C{n}", ms=3,
                     label=label)
            b.loglog([r["stiffness"] for r in ok], [max(r["audit_error_J"], 1e-16) for r in ok], "o-",
                     color=f"C{n}", ms=3, label=label)
            for r in sel:
                if r["status"] != "ok":
                    b.plot(r["stiffness"], 1e3, "x", color=f"C{n}", ms=7)
        for n, r in enumerate(r for r in nails):
            style = dict(color="k", lw=0.8, ls=["--", ":", "-."][n % 3])
            a.axhline(r["max_deviation_m"], **style, label=f"nail, {r['integrator']} {r['dt'] * 1e3:g} ms")
            b.axhline(max(r["max_energy_error_J"], 1e-16), **style)
        a.set_xlabel("penalty stiffness k (N/m)")
        a.set_ylabel(f"max |p − nail| over {spec.duration:g} s (m)")
        a.legend(fontsize=6)
        a.set_title("a) drift of the held point", fontsize=9)
        b.set_xlabel("penalty stiffness k (N/m)")
        b.set_ylabel("max energy from no source (J)")
        b.set_title("b) nail: |E − E0| (its work); penalty: |E − E0 − W_damper|\n(× diverged: energy blown up, "
                    "drawn at 1e3 J)", fontsize=9)
        fig.suptitle("§2.3.3: the cylinder held by a stiff spring (penalty) vs the nail (dynamic constraint)",
                     fontsize=10)
        fig.tight_layout()
        fig.savefig(out / "fig2_penalty.png", dpi=110)
        plt.close(fig)
        written.append(out / "fig2_penalty.png")
    return written


def run_cylinder_sweep(res: CylinderResolved, out: Path, workers: int | None = None, progress: bool = True) -> dict:
    """Run every cell into ``out`` (a staging folder), write its files; return the summary."""
    import os
    from ..fileio import atomic_write_text
    from .pool import local_results
    spec = res.spec
    runs = cylinder_runs(spec)
    start = time.perf_counter()
    workers = workers or os.cpu_count() or 1
    tasks = [dict(index=k, scene=res.scene, run=r, duration=spec.duration, tolerance=spec.tolerance,
                  record_every=spec.record_every) for k, r in enumerate(runs)]
    rows = sorted(local_results(workers, tasks, _run_task, _failed_task), key=lambda row: row["_index"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CYLINDER_COLUMNS)
    for r in rows:
        w.writerow([_fmt(r[c]) for c in CYLINDER_COLUMNS])
    atomic_write_text(out / "results.csv", buf.getvalue())
    atomic_write_text(out / "table.md", _table(rows))
    figures, figures_error = [], None
    if spec.figures:
        try:
            figures = _figures(out, rows, spec)
        except Exception as exc:                                  # noqa: BLE001 — the results stand without them
            figures_error = f"{type(exc).__name__}: {exc}"[:300]
    summary = {"spec": res.source, "bench": "cylinder", "trials": len(rows),
               "unstable": sum(r["status"] == "diverged" for r in rows),
               "failed": sum(r["status"] == "failed" for r in rows), "workers": workers, "dask": None,
               "wall_time_s": time.perf_counter() - start, "figures": [p.name for p in figures],
               "figures_error": figures_error, "spec_resolved": json.loads(spec.model_dump_json())}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary
