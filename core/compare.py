"""One scene under every formulation, side by side (``python -m core compare SCENE --duration T --out DIR``).

Each formulation (:mod:`core.formulations`) runs the scene from the same initial state with the same step and
integrator; a formulation that diverges keeps the records up to its last good state. Per formulation:

- ``max_phi``, ``max_phi_rate``: constraint drift, the largest ‖Φ‖ and ‖Φ̇‖ over the run, where Φ stacks the
  deviations D of the active constraints (a velocity constraint's D is its velocity error);
- ``energy_error_J``: the largest |E(t) − E(0) − W_applied(t)|, W_applied the work of dampers, drag, actuators
  and external forces. Ideal constraints do no work, so this is everything the formulation adds or removes
  (integration error, Baumgarte forces acting on drift, projection corrections); ``audit_error_J`` is the
  energy audit's own residual (what remains after booking the constraint work and corrections too);
- ``cost_per_step_ms``: wall time per step;
- ``rank_min`` / ``rank_max`` of the constraint Jacobian against its ``rows``, ``indeterminate`` = rows − rank_min
  (multiplier combinations that are not unique, Aghili Remark 4), and ``rank_events`` (how often J lost rank);
- ``max_force``: the largest constraint force magnitude (spikes reveal multipliers solved near a singularity);
- ``max_dq``: the largest ‖q − q_ref‖ against the reference formulation (tangent-space difference, so
  quaternions are compared as rotations).

Writes ``DIR/comparison.md`` (the table and what it means), ``DIR/comparison.csv`` (one row per formulation)
and ``DIR/differences.png`` (‖q − q_ref‖ and ‖Φ‖ through time, matplotlib's Agg canvas; no GUI backend).
"""
from __future__ import annotations

import io
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .fileio import atomic_write_bytes, atomic_write_text
from .model import POWER_SOURCES
from .formulations import FORMULATIONS
from .kinematics import configuration_difference
from .model import Model
from .simulation import DivergenceError, Simulation

__all__ = ["FormulationRun", "run_formulations", "summarize", "write_comparison", "COLUMNS"]

COLUMNS = ("formulation", "status", "t_end_s", "steps", "cost_per_step_ms", "max_phi", "max_phi_rate",
           "energy_error_J", "audit_error_J", "max_force", "rows", "rank_min", "rank_max", "indeterminate",
           "rank_events", "max_projection_iterations", "max_dq")


@dataclass
class FormulationRun:
    """The records of one formulation's run (arrays, as :meth:`Simulation.run` returns them), its events, step
    count and wall time, and why it stopped early (``diverged``, None if it did not)."""
    formulation: str
    data: dict
    events: list
    steps: int
    wall_time: float
    diverged: str | None = None
    summary: dict = field(default_factory=dict)


def _run(model: Model, formulation: str, duration: float, dt, integrator, record_every: int) -> FormulationRun:
    sim = Simulation(model, dt=dt, integrator=integrator)
    sim.set_formulation(formulation)
    diverged = None
    start = time.perf_counter()
    try:
        data = sim.run(duration, record_every=record_every)
    except DivergenceError as exc:                          # a result: keep the records up to the last good state
        diverged, data = str(exc), exc.records
    wall = time.perf_counter() - start
    return FormulationRun(formulation, data, list(sim.events), sim.steps_taken, wall, diverged)


def run_formulations(model: Model, duration: float, formulations=FORMULATIONS, dt: float | None = None,
                     integrator: str | None = None, record_every: int = 1) -> list[FormulationRun]:
    """Run ``model`` for ``duration`` seconds under each of ``formulations`` (same step and integrator)."""
    return [_run(model, f, duration, dt, integrator, record_every) for f in formulations]


def _drift(data: dict) -> tuple[np.ndarray, np.ndarray]:
    """‖Φ‖ and ‖Φ̇‖ of the active constraints at every record."""
    if data["deviation"].ndim < 2 or data["deviation"].shape[1] == 0:
        zero = np.zeros(len(data["t"]))
        return zero, zero
    on = data["active"] > 0.5
    phi = np.sqrt(np.sum(np.where(on, data["deviation"], 0.0) ** 2, axis=1))
    rate = np.sqrt(np.sum(np.where(on, data["deviation_rate"], 0.0) ** 2, axis=1))
    return phi, rate


def _dq(model: Model, ref: dict, data: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(t, ‖q − q_ref‖)`` over the times both runs cover (the reference interpolated if the grids differ)."""
    t, q = data["t"], data["q"]
    keep = t <= ref["t"][-1] + 1e-12
    t, q = t[keep], q[keep]
    if len(ref["t"]) >= len(t) and np.allclose(ref["t"][:len(t)], t, rtol=0, atol=1e-12):
        q_ref = ref["q"][:len(t)]
    else:
        q_ref = np.column_stack([np.interp(t, ref["t"], ref["q"][:, j]) for j in range(ref["q"].shape[1])])
    return t, np.array([np.linalg.norm(configuration_difference(model, a, b)) for a, b in zip(q_ref, q)])


def summarize(model: Model, runs: list[FormulationRun], reference: str | None = None) -> str | None:
    """Fill ``run.summary`` (the columns of :data:`COLUMNS`) of every run; returns the reference formulation
    used for ``max_dq`` (``reference`` if it ran to the end, else the first that did; None if none did)."""
    finished = [r for r in runs if r.diverged is None]
    ref = next((r for r in finished if r.formulation == reference), finished[0] if finished else None)
    for r in runs:
        d = r.data
        phi, rate = _drift(d)
        applied = sum(d[f"work_{s}"] for s in POWER_SOURCES)
        energy = d["energy_total"] - d["energy_total"][0] - applied
        rank_events = sum(1 for e in r.events if e.kind == "rank_deficient")
        rows = sum(c.rows for c in model.constraints if c.enabled)
        r.summary = {
            "formulation": r.formulation,
            "status": "ok" if r.diverged is None else "diverged",
            "t_end_s": float(d["t"][-1]),
            "steps": int(r.steps),
            "cost_per_step_ms": 1e3 * r.wall_time / max(r.steps, 1),
            "max_phi": float(phi.max()),
            "max_phi_rate": float(rate.max()),
            "energy_error_J": float(np.abs(energy).max()),
            "audit_error_J": float(np.abs(d["energy_error"]).max()),
            "max_force": float(d["constraint_force_magnitude"].max()) if d["constraint_force_magnitude"].size else 0.0,
            "rows": rows,
            "rank_min": int(d["jacobian_rank"].min()),
            "rank_max": int(d["jacobian_rank"].max()),
            "indeterminate": int(rows - d["jacobian_rank"].min()) if rows else 0,
            "rank_events": rank_events,
            "max_projection_iterations": int(d["projection_iterations"].max()),
            "max_dq": float(_dq(model, ref.data, d)[1].max()) if ref is not None else float("nan"),
        }
    return ref.formulation if ref is not None else None


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if np.isfinite(value) else "—"
    return str(value)


def _markdown(model: Model, runs: list[FormulationRun], reference, duration, scene_path) -> str:
    first = runs[0]
    dt = first.data["t"][1] - first.data["t"][0] if len(first.data["t"]) > 1 else float("nan")
    lines = [f"# {model.name}: the formulations compared", ""]
    if scene_path:
        lines.append(f"Scene `{scene_path}`, {duration:g} s from the same initial state, "
                     f"integrator {model.settings.get('integrator', 'rk4')}, first recorded interval {dt:g} s; "
                     f"differences against **{reference}**.")
    lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in runs:
        lines.append("| " + " | ".join(_fmt(r.summary[c]) for c in COLUMNS) + " |")
    lines += ["", "- `max_phi`, `max_phi_rate`: the largest ‖Φ‖, ‖Φ̇‖ of the active constraints (constraint drift).",
              "- `energy_error_J`: the largest |E − E₀ − W_applied| (ideal constraints do no work, so it is all "
              "the formulation's doing); `audit_error_J`: what the energy audit leaves after booking the constraint "
              "work and projection corrections.",
              "- `rank_min`/`rank_max`: rank of the constraint Jacobian (`simulation.rank_tolerance`); "
              "`indeterminate` = rows − rank_min, the multiplier combinations that are not unique (Aghili, "
              "Remark 4); `rank_events`: times J lost rank.",
              "- `max_dq`: the largest ‖q − q_ref‖ (tangent space) against the reference; see differences.png.", ""]
    for r in runs:
        if r.diverged:
            lines.append(f"- **{r.formulation} diverged**: {r.diverged}")
        times = [e.t for e in r.events if e.kind == "rank_deficient"]
        if times:
            shown = ", ".join(f"{t:.4g}" for t in times[:12]) + (" …" if len(times) > 12 else "")
            lines.append(f"- {r.formulation}: J lost rank at t = {shown} s")
    return "\n".join(lines) + "\n"


def _figure(model: Model, runs: list[FormulationRun], reference) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 6.5), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True)
    ref = next((r for r in runs if r.formulation == reference), None)
    tiny = 1e-18
    styles = ("-", "--", ":", "-.")                     # curves that coincide stay visible
    for n, r in enumerate(runs):
        style = dict(ls=styles[n % len(styles)], color=f"C{n}")
        if ref is not None and r is not ref:
            t, dq = _dq(model, ref.data, r.data)
            top.semilogy(t, np.maximum(dq, tiny), label=f"{r.formulation} − {reference}", **style)
        phi, _ = _drift(r.data)
        bottom.semilogy(r.data["t"], np.maximum(phi, tiny), label=r.formulation, **style)
        for e in r.events:
            if e.kind == "rank_deficient":
                bottom.axvline(e.t, color="0.8", lw=0.6, zorder=0)
    top.set_ylabel("‖q − q_ref‖")
    top.set_title(f"{model.name}: trajectory differences against {reference}")
    bottom.set_ylabel("‖Φ‖ (constraint drift)")
    bottom.set_xlabel("t (s)")
    bottom.set_title("constraint drift (grey lines: J lost rank)")
    for ax in (top, bottom):
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def write_comparison(out: Path, model: Model, runs: list[FormulationRun], reference: str | None = "projection",
                     duration: float | None = None, scene_path: str | None = None) -> list[dict]:
    """Summarize ``runs`` and write ``comparison.md``, ``comparison.csv`` and ``differences.png`` into ``out``
    (created if needed; every file written atomically). Returns the table's rows."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    reference = summarize(model, runs, reference)
    duration = duration if duration is not None else max(float(r.data["t"][-1]) for r in runs)
    rows = [r.summary for r in runs]
    csv = io.StringIO()
    csv.write(",".join(COLUMNS) + "\n")
    for row in rows:
        csv.write(",".join(repr(row[c]) if isinstance(row[c], float) else str(row[c]) for c in COLUMNS) + "\n")
    atomic_write_text(out / "comparison.csv", csv.getvalue())
    atomic_write_text(out / "comparison.md", _markdown(model, runs, reference, duration, scene_path))
    atomic_write_bytes(out / "differences.png", _figure(model, runs, reference))
    return rows
