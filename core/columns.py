"""Units and meanings of the records' series (:mod:`core.records`): the one table that ``python -m core run``
(``summary.json``'s ``csv_units`` beside ``csv_columns``), the studio's plots and its CSV exports share.

:func:`column_units` gives the unit of every CSV column of a run (the names of :func:`core.output.csv_columns`,
in its order); :func:`header` the studio's header cells, ``name [unit]``: ``t [s]``, ``q_elbow [rad]``,
``constraint_force_tip_nail_x [N]``, ``energy_error [J]``, ``rank``.
"""
from __future__ import annotations

import numpy as np

from .constraints import KIND_NAMES

__all__ = ["SERIES", "series_unit", "column_units", "header"]


def _constraint_kinds(model) -> list[str]:
    return [KIND_NAMES[c.kind] for c in model.constraints]


#: Every series of the records: (unit, what it is). Units of the per-coordinate and per-constraint series depend
#: on the joint or constraint and are filled in by :func:`column_units`.
SERIES = {
    "t": ("s", "simulated time"),
    "q": (None, "joint coordinates"),
    "qd": (None, "joint velocities"),
    "energy_kinetic": ("J", "kinetic energy"),
    "energy_potential": ("J", "potential energy (gravity + elastic)"),
    "energy_gravity": ("J", "potential energy of gravity"),
    "energy_elastic": ("J", "elastic energy of springs"),
    "energy_total": ("J", "total energy E"),
    "work_constraints": ("J", "work done by each constraint's force"),
    "work_total_constraints": ("J", "work done by all constraint forces"),
    "work_dampers": ("J", "work done by dampers"),
    "work_drag": ("J", "work done by drag"),
    "work_actuators": ("J", "work done by actuators and controllers"),
    "work_external": ("J", "work done by external forces (point forces, the mouse spring)"),
    "work_corrections": ("J", "energy changed by the projection's corrections"),
    "energy_error": ("J", "energy audit error E − E(0) − Σ work − corrections"),
    "jacobian_rank": ("", "rank of the constraint Jacobian J"),
    "rank_deficient": ("", "1 when J has lost row rank"),
    "projection_iterations": ("", "Newton–Raphson iterations of the projection's correction"),
    "constraint_force": ("N", "constraint force on the first point (x, y, z)"),
    "constraint_force_magnitude": ("N", "‖constraint force‖"),
    "deviation": (None, "deviation ‖D‖"),
    "deviation_rate": (None, "deviation rate ‖Ḋ‖"),
    "residual": (None, "solve residual ‖η‖"),
    "singular_values": ("", "singular values of A = J M⁻¹ Jᵀ, descending"),
    "rank": ("", "rank used by the solve"),
    "dropped": ("", "singular directions dropped by the solve"),
    "singular_value_cutoff": ("", "smallest singular value kept"),
    "active": ("", "1 while the constraint acts"),
    "tracking_error": (None, "tracking error e = q − q_d"),
    "desired": (None, "desired coordinate q_d"),
    "sliding_variable": (None, "sliding variable s"),
    "s_energy": ("J", "s-energy ½ sᵀMs"),
    "torque": ("N·m", "controller torque (N for sliders)"),
    "parameters": ("", "adaptive parameter estimates"),
}

_COORD_UNITS = {"hinge": (("rad",), ("rad/s",)), "slider": (("m",), ("m/s",)),
                "ball": (("",) * 4, ("rad/s",) * 3),
                "free": (("m",) * 3 + ("",) * 4, ("rad/s",) * 3 + ("m/s",) * 3), "fixed": ((), ())}


def series_unit(key: str) -> str:
    """The unit of a series name (controller series by their prefix); '' when dimensionless or mixed."""
    for prefix in ("tracking_error", "desired", "sliding_variable", "s_energy", "torque", "parameters"):
        if key.startswith(prefix + "_"):
            key = prefix
    unit = SERIES.get(key, ("", ""))[0]
    return unit or ""


def _coordinates(model, velocity: bool) -> list[str]:
    out = []
    for kind in model.joint_kinds:
        out += list(_COORD_UNITS[kind][1 if velocity else 0])
    return out


def _per_constraint(model, key: str) -> list[str]:
    kinds = _constraint_kinds(model)
    if key == "deviation":
        return ["m/s" if k == "point_velocity" else ("" if k == "joint_space" else "m") for k in kinds]
    if key == "deviation_rate":
        return ["m/s²" if k == "point_velocity" else ("" if k == "joint_space" else "m/s") for k in kinds]
    if key == "residual":
        return ["m/s" if k == "point_velocity" else ("" if k == "joint_space" else "m/s²") for k in kinds]
    return [series_unit(key)] * len(kinds)


def column_units(model, data: dict) -> list[str]:
    """The unit of every CSV column of ``data`` (a run's records), in ``core.output.csv_columns`` order."""
    units: list[str] = []
    n_joint_q, n_joint_v = _coordinates(model, False), _coordinates(model, True)
    for key, arr in data.items():
        shape = np.asarray(arr).shape[1:]
        size = int(np.prod(shape)) if shape else 1
        if key == "q":
            units += n_joint_q if len(n_joint_q) == size else [""] * size
        elif key == "qd":
            units += n_joint_v if len(n_joint_v) == size else [""] * size
        elif key in ("deviation", "deviation_rate", "residual"):
            per = _per_constraint(model, key)
            units += per if len(per) == size else [series_unit(key)] * size
        elif key.startswith(("tracking_error_", "desired_")):
            units += [""] * size            # radians or metres by joint: said in the plots
        elif key.startswith("sliding_variable_"):
            units += [""] * size
        else:
            units += [series_unit(key)] * size
    return units


def header(names: list[str], units: list[str]) -> list[str]:
    """Header cells: ``name [unit]``, or the bare name for a dimensionless column."""
    return [f"{n} [{u}]" if u else n for n, u in zip(names, units)]
