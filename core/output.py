"""Writing a run's results: ``timeseries.npz`` (arrays), ``timeseries.csv`` (one column per scalar) and
``summary.json``. Every file is written atomically (temporary file, then rename)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from .fileio import atomic_write_bytes
from .model import Model

__all__ = ["write_run", "csv_columns"]


def _coordinate_names(model: Model, prefix: str, velocity: bool) -> list[str]:
    """Column names of q or qd entries, after the joint names (``q_elbow``, ``qd_box_3`` for multi-dof)."""
    names = []
    for i in range(model.n_links):
        n = int(model.nv_j[i] if velocity else model.nq_j[i])
        joint = model.joint_link_names[i]
        names += [f"{prefix}_{joint}"] if n == 1 else [f"{prefix}_{joint}_{k}" for k in range(n)]
    return names


PER_CONSTRAINT = ("work_constraints", "constraint_force", "constraint_force_magnitude", "deviation",
                  "deviation_rate", "residual", "active")


def csv_columns(model: Model, data: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    """Flatten a run's arrays to named scalar columns: ``t``, ``q_<joint>``, ``qd_<joint>``, the scalar series,
    per-constraint columns named after the constraint (``deviation_<name>``, ``constraint_force_<name>_x``) and
    numbered columns for the rest (``singular_values_0`` …)."""
    names, cols = [], []
    cnames = model.constraint_names
    for key, arr in data.items():
        arr = np.asarray(arr)
        if arr.ndim == 1:
            names.append(key)
            cols.append(arr[:, None])
        elif key in ("q", "qd"):
            names += _coordinate_names(model, key, velocity=(key == "qd"))
            cols.append(arr)
        elif key in PER_CONSTRAINT:
            if arr.ndim == 3:
                names += [f"{key}_{c}_{axis}" for c in cnames for axis in "xyz"]
            else:
                names += [f"{key}_{c}" for c in cnames]
            cols.append(arr.reshape(arr.shape[0], -1))
        else:
            flat = arr.reshape(arr.shape[0], -1)
            names += [f"{key}_{k}" for k in range(flat.shape[1])]
            cols.append(flat)
    return names, np.hstack(cols)


def write_run(out: Path, model: Model, sim, data: dict[str, np.ndarray], scene_path: str | None = None) -> dict:
    """Write the three result files of a run into ``out`` (created if needed) and return the summary."""
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    np.savez_compressed(buf, **data)
    atomic_write_bytes(out / "timeseries.npz", buf.getvalue())
    names, table = csv_columns(model, data)
    text = io.StringIO()
    np.savetxt(text, table, delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    atomic_write_bytes(out / "timeseries.csv", text.getvalue().encode())
    E = data["energy_total"]
    scale = max(abs(E[0]), float(np.abs(data["energy_kinetic"]).max()), float(np.abs(data["energy_potential"]).max()), 1e-300)
    K = len(model.constraints)
    deviation = data.get("deviation", np.zeros((len(E), 0)))
    active = data.get("active", np.zeros((len(E), 0))) > 0.5
    summary = {
        "scene": model.name,
        "scene_file": scene_path,
        "duration_s": float(data["t"][-1]),
        "dt_s": sim.dt,
        "integrator": sim.integrator,
        "steps": int(sim.steps_taken),
        "wall_time_s": float(sim.wall_time),
        "cost_per_step_s": float(sim.wall_time / max(sim.steps_taken, 1)),
        "nq": model.nq,
        "nv": model.nv,
        "joint_names": model.joint_names,
        "constraint_names": model.constraint_names,
        "events": list(getattr(sim, "events", [])),
        "max_deviation": {c: float(np.nanmax(np.where(active[:, i], deviation[:, i], np.nan), initial=0.0))
                          if active[:, i].any() else None for i, c in enumerate(model.constraint_names)},
        "final_work_constraints_J": {c: float(data["work_constraints"][-1, i])
                                     for i, c in enumerate(model.constraint_names)} if K else {},
        "energy_initial_J": float(E[0]),
        "energy_final_J": float(E[-1]),
        "energy_change_J": float(E[-1] - E[0]),
        "energy_error_J": float(data["energy_error"][-1]),
        "energy_error_relative": float(abs(data["energy_error"][-1]) / scale),
        "energy_max_error_J": float(np.abs(data["energy_error"]).max()),
        "csv_columns": names,
    }
    atomic_write_bytes(out / "summary.json", (json.dumps(summary, indent=2) + "\n").encode())
    return summary
