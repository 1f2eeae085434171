"""The plots' time series: which columns one sample row has for a model (:class:`SampleLayout`) and how a row is
read off a simulation (:func:`sample_row`) or out of the records of ``core.Simulation.run`` (:func:`sample_rows`, the
same columns for a batch of steps run in one call).

Thread: any (:func:`sample_row` on the worker, which owns the simulation). Plain NumPy over ``core`` objects.

One row per sample, groups of columns (K constraints, R constraint rows, J hinge and slider joints):

=================  ====  ==================================================================================
group              size  content
=================  ====  ==================================================================================
``t``              1     simulated time (s)
``energy``         5     kinetic, potential (gravity + elastic), total, work done by constraints, audit error
                         E − E₀ − Σ work (J)
``force``          K     ‖constraint force‖ per constraint (N)
``deviation``      K     ‖D‖ (m; m/s for velocity constraints)
``deviation_rate`` K     ‖Ḋ‖ (m/s)
``residual``       K     ‖η‖, the solve residual of each constraint's rows (m/s²; NaN when inactive)
``singular``       R     singular values of the constraint matrix, descending (NaN-padded)
``joint``          J     hinge angles (rad) and slider positions (m)
``desired``        C     each controller's desired coordinates q_d of the joints it controls
``tracking_error`` C     e = q − q_d
``parameters``     P     the controllers' adaptive parameter estimates (thesis fig. 3.10)
=================  ====  ==================================================================================

The controller groups come from ``core.Simulation.controller_diagnostics`` (one state) or the controllers' columns
of the records (a batch), and are empty for a scene without controllers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.document.kinds import MOVING_JOINTS, joint_kinds

__all__ = ["SampleLayout", "sample_layout", "sample_row", "sample_rows", "ENERGY_LABELS"]

ENERGY_LABELS = ("kinetic", "potential", "total", "work by constraints", "audit error")


@dataclass(frozen=True)
class SampleLayout:
    """Any thread (frozen). Column layout of the sample rows of one model: ``groups`` maps a group name to its slice
    of a row and ``labels`` to the names of its columns; ``joint_q`` are the q indices of the ``joint`` columns
    and ``joint_units`` their units."""
    groups: dict
    labels: dict
    joint_q: tuple
    joint_units: tuple
    controllers: tuple = ()

    @property
    def width(self) -> int:
        return max(s.stop for s in self.groups.values())

    def columns(self) -> list[str]:
        """A name for every column, e.g. ``force[tip_nail]`` (for CSV headers)."""
        names = [""] * self.width
        for group, s in self.groups.items():
            for k, label in zip(range(s.start, s.stop), self.labels[group]):
                names[k] = group if group == "t" else f"{group}[{label}]"
        return names

    def size(self, group: str) -> int:
        s = self.groups[group]
        return s.stop - s.start


def _controller_columns(model, sim) -> dict:
    """Labels of the controller groups, read off the simulation's controllers (empty without any)."""
    out = {"desired": [], "tracking_error": [], "parameters": []}
    controllers = getattr(sim, "controllers", ()) if sim is not None else ()
    if not controllers:
        return out
    joint_of_q = {int(model.q_start[i]): model.joint_link_names[i] for i in range(model.n_links)}
    for c in controllers:
        joints = [joint_of_q.get(int(k), f"q{k}") for k in getattr(c, "qidx", ())]
        out["desired"] += [(c.name, j) for j in joints]
        out["tracking_error"] += [(c.name, j) for j in joints]
        named = getattr(getattr(c, "parameterization", None), "names", None)      # Slotine–Li: a1 …, b1 …
        out["parameters"] += [(c.name, f"â {named[k]}" if named else f"â{k + 1}")
                              for k in range(int(getattr(c, "n_parameters", 0)))]
    return out


def sample_layout(model, sim=None) -> SampleLayout:
    """The layout of ``model``'s sample rows (``sim``, running ``model``, adds its controllers' groups)."""
    K = len(model.constraints)
    R = sum(c.rows for c in model.constraints)
    kinds = joint_kinds(model)
    joints = [i for i in range(model.n_links) if kinds[i] in MOVING_JOINTS]
    control = _controller_columns(model, sim)
    sizes = [("t", 1), ("energy", len(ENERGY_LABELS)), ("force", K), ("deviation", K), ("deviation_rate", K),
             ("residual", K), ("singular", R), ("joint", len(joints))] + [(g, len(v)) for g, v in control.items()]
    groups, start = {}, 0
    for name, n in sizes:
        groups[name] = slice(start, start + n)
        start += n
    names = tuple(model.constraint_names)
    labels = {"t": ("t",), "energy": ENERGY_LABELS, "force": names, "deviation": names,
              "deviation_rate": names, "residual": names, "singular": tuple(f"σ{k + 1}" for k in range(R)),
              "joint": tuple(model.joint_link_names[i] for i in joints)}
    several = len({name for name, _ in control["desired"]}) > 1
    for group, columns in control.items():
        labels[group] = tuple(f"{c}: {j}" if several else j for c, j in columns)
    return SampleLayout(groups=groups, labels=labels, joint_q=tuple(int(model.q_start[i]) for i in joints),
                        joint_units=tuple("rad" if kinds[i] == "hinge" else "m" for i in joints),
                        controllers=tuple(dict.fromkeys(name for name, _ in control["desired"]
                                                        + control["parameters"])))


def sample_row(sim, layout: SampleLayout) -> np.ndarray:
    """One row at the simulation's current state (uses ``sim.data``, which the step has already evaluated)."""
    d, s = sim.data, sim.state
    g = layout.groups
    row = np.full(layout.width, np.nan)
    K = g["force"].stop - g["force"].start
    potential = d.energy_gravity + d.energy_elastic
    work_c = float(np.sum(sim.work[:K]))
    row[g["t"]] = s.t
    row[g["energy"]] = (d.energy_kinetic, potential, d.energy_kinetic + potential, work_c, sim.energy_error())
    row[g["force"]] = d.constraint_force_magnitude
    row[g["deviation"]] = d.deviation
    row[g["deviation_rate"]] = d.deviation_rate
    row[g["residual"]] = d.residual
    sv = np.asarray(d.singular_values, dtype=float)
    n = min(sv.size, layout.size("singular"))
    row[g["singular"].start:g["singular"].start + n] = sv[:n]
    row[g["joint"]] = np.asarray(s.q)[list(layout.joint_q)] if layout.joint_q else ()
    if layout.controllers:
        diagnostics = sim.controller_diagnostics()
        for group, key in (("desired", "desired"), ("tracking_error", "tracking_error"),
                           ("parameters", "parameters")):
            values = [np.ravel(diagnostics.get(f"{key}_{name}", ())) for name in layout.controllers]
            values = np.concatenate(values) if values else np.zeros(0)
            n = min(values.size, layout.size(group))
            row[g[group].start:g[group].start + n] = values[:n]
    return row


def sample_rows(records: dict, layout: SampleLayout) -> np.ndarray:
    """The rows (n, width) of the states recorded by ``core.Simulation.run`` (its returned arrays, the columns of
    ``core.records``): what :func:`sample_row` reads at each of them, the controllers' ``desired_<name>``,
    ``tracking_error_<name>`` and ``parameters_<name>`` included."""
    t = np.asarray(records["t"], dtype=float)
    n, g = t.shape[0], layout.groups
    rows = np.full((n, layout.width), np.nan)

    def put(group, values):
        s = g[group]
        if s.stop > s.start:
            rows[:, s] = _columns(values, n)[:, :s.stop - s.start]

    rows[:, g["t"].start] = t
    rows[:, g["energy"].start:g["energy"].stop] = np.column_stack([
        records["energy_kinetic"], records["energy_potential"], records["energy_total"],
        records["work_total_constraints"], records["energy_error"]])
    for group, key in (("force", "constraint_force_magnitude"), ("deviation", "deviation"),
                       ("deviation_rate", "deviation_rate"), ("residual", "residual")):
        put(group, records[key])
    sv = _columns(records["singular_values"], n)
    k = min(sv.shape[1], layout.size("singular"))
    rows[:, g["singular"].start:g["singular"].start + k] = sv[:, :k]
    if layout.joint_q:
        rows[:, g["joint"]] = _columns(records["q"], n)[:, list(layout.joint_q)]
    for group in ("desired", "tracking_error", "parameters"):
        s = g[group]
        parts = [_columns(records[f"{group}_{name}"], n) for name in layout.controllers
                 if f"{group}_{name}" in records]
        if parts and s.stop > s.start:
            values = np.concatenate(parts, axis=1)
            m = min(values.shape[1], s.stop - s.start)
            rows[:, s.start:s.start + m] = values[:, :m]
    return rows


def _columns(values, n: int) -> np.ndarray:
    """A recorded series (n, *shape) as n rows of columns (n, prod(shape)); works for empty shapes too."""
    values = np.asarray(values, dtype=float)
    return values.reshape(n, int(np.prod(values.shape[1:], dtype=int)))
