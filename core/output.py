"""Writing a run's results: ``timeseries.npz`` (arrays, and the event log as ``event_*`` arrays:
:func:`event_arrays`), ``timeseries.csv`` (one column per scalar) and ``summary.json``.

:class:`RunWriter` takes the records while the simulation runs (``Simulation.run(sink=writer)``: chunks of a few
thousand rows), so memory stays bounded whatever the duration: CSV rows are appended as they come, each array's
rows go to a raw file and the NPZ is assembled from them at the end, one member at a time. Everything is written
into a hidden staging folder beside the output (``.NAME.partial-XXXX``) that is renamed into place when complete
(:func:`core.fileio.publish_directory`): the output folder holds the previous complete run or the new complete
one, never a mixture, even if the process is killed. A run that diverges keeps every record up to its last good
state and says so in ``summary.json``, which is strict JSON (a value that is not finite is ``null``, and
``null_values`` says why)."""
from __future__ import annotations

import json
import math
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from .columns import column_units
from .fileio import check_replaceable, mark_output, publish_directory, staging_directory
from .model import Model

__all__ = ["write_run", "csv_columns", "RunWriter", "strict_json", "event_arrays"]


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


def _identity(path: Path):
    """(device, inode, modification time) of what ``path`` names, None if nothing."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns


#: summary.json lists the newest this many events (timeseries.npz has every one the run kept).
SUMMARY_EVENTS = 10_000


def event_arrays(events) -> dict[str, np.ndarray]:
    """The event log (:class:`core.events.Event`) as arrays, one entry per event (``timeseries.npz``): ``event_t``
    (s), ``event_type``, ``event_what`` (the contact point, joint bound, constraint or program it concerns),
    ``event_impulse`` (N·s or N·m·s at an impact, NaN otherwise), ``event_added`` and ``event_removed`` (the
    constraint rows, joined by ``;``)."""
    events = list(events)
    return {"event_t": np.array([e.t for e in events], dtype=float),
            "event_type": np.array([e.kind for e in events], dtype=str),
            "event_what": np.array([e.what for e in events], dtype=str),
            "event_impulse": np.array([e.impulse for e in events], dtype=float),
            "event_added": np.array([";".join(e.added) for e in events], dtype=str),
            "event_removed": np.array([";".join(e.removed) for e in events], dtype=str)}


def write_run(out: Path, model: Model, sim, data: dict[str, np.ndarray], scene_path: str | None = None,
              replace: bool = True) -> dict:
    """Write the three result files of a run whose records are in memory (``data``) into ``out``, replacing an
    existing output when ``replace``; return the summary (:class:`RunWriter` does the writing)."""
    writer = RunWriter(out, model, list((k, np.asarray(v).shape[1:]) for k, v in data.items()), replace)
    try:
        writer(data)
        return writer.finish(sim, scene_path=scene_path)
    except BaseException:
        writer.abort()
        raise


def strict_json(value, nulls: dict[str, str], path: str = "") -> object:
    """``value`` with every float that is not finite replaced by None, its path and why recorded in ``nulls``;
    numpy scalars and arrays as plain numbers and lists."""
    if isinstance(value, dict):
        return {k: strict_json(v, nulls, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v, nulls, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return strict_json(value.tolist(), nulls, path)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        nulls[path] = f"not finite ({value}): the run's values overflowed or diverged"
        return None
    return value


class _Stats:
    """What the summary needs from every record, accumulated chunk by chunk (nothing kept per row)."""

    def __init__(self, K: int):
        self.rows = 0
        self.first: dict[str, np.ndarray] = {}
        self.last: dict[str, np.ndarray] = {}
        self.max_abs = {"energy_kinetic": 0.0, "energy_potential": 0.0, "energy_error": 0.0}
        self.max_deviation = np.full(K, -np.inf)
        self.ever_active = np.zeros(K, bool)

    def add(self, chunk: dict[str, np.ndarray]) -> None:
        n = len(chunk["t"])
        if n == 0:
            return
        if not self.rows:
            self.first = {k: np.array(v[0]) for k, v in chunk.items()}
        self.last = {k: np.array(v[-1]) for k, v in chunk.items()}
        self.rows += n
        with np.errstate(all="ignore"):
            for key in self.max_abs:
                if key in chunk:
                    self.max_abs[key] = max(self.max_abs[key], float(np.max(np.abs(chunk[key]))))
            if "deviation" in chunk and chunk["deviation"].shape[1]:
                active = chunk["active"] > 0.5
                self.ever_active |= active.any(axis=0)
                masked = np.where(active, chunk["deviation"], -np.inf)
                self.max_deviation = np.fmax(self.max_deviation, masked.max(axis=0))


class RunWriter:
    """Streams the records of one run into a staging folder beside ``out`` and publishes it at the end.

    Call it with each chunk of records (a dict of arrays with rows first, :func:`core.records.split`), then
    :meth:`finish` (writes the NPZ and ``summary.json``, renames the folder into place) or :meth:`abort`
    (removes the staging folder). ``columns``: ``[(name, shape of one record)]`` in record order. An existing
    ``out`` is refused at once, before anything runs (:func:`core.fileio.check_replaceable`: ``FileExistsError``
    without ``replace``, :class:`~core.fileio.NotReplaced` if it is not an earlier run's output), and again when
    publishing."""

    def __init__(self, out: str | os.PathLike, model: Model, columns, replace: bool = False):
        check_replaceable(out, "run", replace)
        self.out = Path(out)
        self.replace = replace
        self.model = model
        self.columns = [(name, tuple(shape)) for name, shape in columns]
        self.stats = _Stats(len(model.constraints))
        self.csv_names, _ = csv_columns(model, {name: np.zeros((1,) + shape) for name, shape in self.columns})
        self._found = _identity(self.out)               # what is at the output now (another run may replace it)
        self.staged = staging_directory(self.out)
        self._raw = {}
        try:
            self._csv = open(self.staged / "timeseries.csv", "w", encoding="utf-8", newline="\n")
            self._csv.write(",".join(self.csv_names) + "\n")
            for name, _ in self.columns:
                self._raw[name] = open(self.staged / f".{name}.raw", "wb")
        except BaseException:
            self.abort()
            raise

    def __call__(self, chunk: dict[str, np.ndarray]) -> None:
        """Append one chunk of records."""
        if not len(chunk["t"]):
            return
        for name, _ in self.columns:
            self._raw[name].write(np.ascontiguousarray(chunk[name], dtype="<f8").tobytes())
        _, table = csv_columns(self.model, {name: chunk[name] for name, _ in self.columns})
        np.savetxt(self._csv, table, delimiter=",", fmt="%.17g")
        self.stats.add(chunk)

    def _close(self) -> None:
        for f in [getattr(self, "_csv", None), *self._raw.values()]:
            if f is not None and not f.closed:
                f.close()

    def abort(self) -> None:
        """Remove the staging folder (the output is left as it was)."""
        self._close()
        shutil.rmtree(self.staged, ignore_errors=True)

    def _write_npz(self, events=()) -> None:
        rows = self.stats.rows
        with zipfile.ZipFile(self.staged / "timeseries.npz", "w", compression=zipfile.ZIP_DEFLATED,
                             allowZip64=True) as zf:
            for name, array in event_arrays(events).items():     # the event log beside the time series
                with zf.open(f"{name}.npy", "w") as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
            for name, shape in self.columns:
                raw = self.staged / f".{name}.raw"
                with zf.open(f"{name}.npy", "w", force_zip64=True) as member, open(raw, "rb") as src:
                    header = {"descr": "<f8", "fortran_order": False, "shape": (rows,) + shape}
                    np.lib.format.write_array_header_1_0(member, header) if rows * max(1, int(np.prod(shape))) \
                        < 2 ** 31 else np.lib.format.write_array_header_2_0(member, header)
                    shutil.copyfileobj(src, member, 1 << 20)
                raw.unlink()

    def finish(self, sim, scene_path: str | None = None, diverged: str | None = None) -> dict:
        """Complete the files, write ``summary.json`` and rename the staging folder to the output (an existing
        output only if replaceable, as at the start; else ``FileExistsError`` or ``NotReplaced``, the staging
        folder kept and named in it). ``diverged``: the divergence message, if the run stopped on one. Returns the summary."""
        self._close()
        self._write_npz(getattr(sim, "events", ()))
        summary = self._summary(sim, scene_path, diverged)
        nulls: dict[str, str] = {}
        clean = strict_json(summary, nulls)
        clean["null_values"] = nulls
        text = json.dumps(clean, indent=2, allow_nan=False) + "\n"
        with open(self.staged / "summary.json", "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        for name in ("timeseries.csv", "timeseries.npz"):
            with open(self.staged / name, "rb+") as f:
                os.fsync(f.fileno())
        mark_output(self.staged, "run")
        if _identity(self.out) != self._found:
            raise FileExistsError(17, f"{self.out} was written by another run while this one ran; this run's "
                                  f"output is kept in {self.staged}", str(self.out))
        try:
            publish_directory(self.staged, self.out, replace=self.replace, command="run")
        except FileExistsError as exc:
            raise FileExistsError(exc.errno, f"{self.out} exists (use --force to replace it); this run's output "
                                  f"is kept in {self.staged}", str(self.out)) from None
        return summary

    def _summary(self, sim, scene_path: str | None, diverged: str | None) -> dict:
        model, st = self.model, self.stats
        first, last = st.first, st.last
        names = model.constraint_names
        with np.errstate(all="ignore"):
            E0 = float(first["energy_total"]) if st.rows else math.nan
            E1 = float(last["energy_total"]) if st.rows else math.nan
            err = float(last["energy_error"]) if st.rows else math.nan
            scale = max(abs(E0), st.max_abs["energy_kinetic"], st.max_abs["energy_potential"], 1e-300)
            summary = {
                "scene": model.name,
                "scene_file": scene_path,
                "robot": _robot_record(model),
                "status": "diverged" if diverged else "complete",
                "diverged": None if not diverged else {
                    "message": diverged,
                    "last_good_t_s": float(last["t"]) if st.rows else None,
                    "records_kept": st.rows},
                "records": st.rows,
                "duration_s": float(last["t"]) if st.rows else 0.0,
                "dt_s": sim.dt,
                "integrator": sim.integrator,
                "steps": int(sim.steps_taken),
                "wall_time_s": float(sim.wall_time),
                "cost_per_step_s": float(sim.wall_time / max(sim.steps_taken, 1)),
                "nq": model.nq,
                "nv": model.nv,
                "joint_names": model.joint_names,
                "constraint_names": names,
                "events": [e.as_dict() for e in getattr(sim, "events", [])[-SUMMARY_EVENTS:]],
                "events_total": len(getattr(sim, "events", [])) + getattr(sim, "events_dropped", 0),
                "max_deviation": {c: float(st.max_deviation[i]) if st.ever_active[i] else None
                                  for i, c in enumerate(names)},
                "final_work_constraints_J": {c: float(last["work_constraints"][i]) for i, c in enumerate(names)}
                if names and st.rows else {},
                "energy_initial_J": E0,
                "energy_final_J": E1,
                "energy_change_J": E1 - E0,
                "energy_error_J": err,
                "energy_error_relative": abs(err) / scale,
                "energy_max_error_J": st.max_abs["energy_error"] if st.rows else math.nan,
                "csv_columns": self.csv_names,
                "csv_units": column_units(model, {name: np.zeros((1,) + shape) for name, shape in self.columns}),
            }
        return summary


def _robot_record(model) -> dict | None:
    """What the summary says of an included robot file: the file, the overrides and what its import noted (the
    inertia policy, repaired inertias, an ignored root inertia)."""
    spec = getattr(model, "spec", None)
    if spec is None or getattr(spec, "robot", None) is None:
        return None
    from .scene.robots import robot_scene
    include = spec.robot
    robot = robot_scene(include)
    floating = [b.name for b in robot.bodies if b.parent == "world" and b.joint.type == "free"]
    # (an MJCF model's joints are its own: its base is floating where a root body has a free joint)
    base = include.base if Path(include.file).suffix.lower() != ".xml" else "floating" if floating else "fixed"
    return {"file": include.file, "base": base, "floating_bodies": floating, "inertia_policy": include.inertia,
            "q0": dict(include.q0), "import": robot.description}
