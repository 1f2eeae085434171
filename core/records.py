"""The records of a run: one row of numbers per recorded state, written by the compiled step as it goes
(:func:`write_record`) and cut into named time series in Python (:func:`record_columns`, :func:`split`).

The columns, in their order in a row (K constraints with R rows in all, the power sources dampers, drag,
actuators, external; per controller n coordinates and its adaptive parameters):

``t``; ``q`` (nq), ``qd`` (nv); ``energy_kinetic``, ``energy_potential`` (gravity + elastic), ``energy_gravity``,
``energy_elastic``, ``energy_total``; ``work_constraints`` (K), ``work_total_constraints``, ``work_dampers``,
``work_drag``, ``work_actuators``, ``work_external``, ``work_corrections``; ``energy_error`` = E − E(0) − Σ work
− corrections (the energy audit, thesis §2.3.2); ``jacobian_rank``, ``rank_deficient``,
``projection_iterations``; ``constraint_force`` (K x 3), ``constraint_force_magnitude``, ``deviation``,
``deviation_rate``, ``residual`` (K); ``singular_values`` (R, NaN-padded), ``rank``, ``dropped``,
``singular_value_cutoff``; ``active`` (K); then per controller ``tracking_error_<name>``, ``desired_<name>``,
``sliding_variable_<name>`` (n), ``s_energy_<name>``, ``torque_<name>`` (nv), ``parameters_<name>``.
"""
from __future__ import annotations

import math

import numpy as np

from .jit import njit

__all__ = ["record_columns", "record_width", "split", "write_record"]


def record_columns(model, controllers) -> list[tuple[str, tuple]]:
    """``[(name, shape of one record)]`` in row order (module docstring)."""
    K, nq, nv = len(model.constraints), model.nq, model.nv
    R = sum(c.rows for c in model.constraints)
    cols = [("t", ()), ("q", (nq,)), ("qd", (nv,)), ("energy_kinetic", ()), ("energy_potential", ()),
            ("energy_gravity", ()), ("energy_elastic", ()), ("energy_total", ()), ("work_constraints", (K,)),
            ("work_total_constraints", ()), ("work_dampers", ()), ("work_drag", ()), ("work_actuators", ()),
            ("work_external", ()), ("work_corrections", ()), ("energy_error", ()), ("jacobian_rank", ()),
            ("rank_deficient", ()), ("projection_iterations", ()), ("constraint_force", (K, 3)),
            ("constraint_force_magnitude", (K,)), ("deviation", (K,)), ("deviation_rate", (K,)),
            ("residual", (K,)), ("singular_values", (R,)), ("rank", ()), ("dropped", ()),
            ("singular_value_cutoff", ()), ("active", (K,))]
    for c in controllers:
        cols += [(f"tracking_error_{c.name}", (c.n,)), (f"desired_{c.name}", (c.n,)),
                 (f"sliding_variable_{c.name}", (c.n,)), (f"s_energy_{c.name}", ()), (f"torque_{c.name}", (nv,)),
                 (f"parameters_{c.name}", (c.n_parameters,))]
    return cols


def record_width(columns) -> int:
    return sum(math.prod(shape) for _, shape in columns)


def split(rows: np.ndarray, columns, copy: bool = True) -> dict[str, np.ndarray]:
    """The named time series of ``rows`` (n x width), each (n, *shape): copies, or, without ``copy`` (rows that no
    one writes again, handed over), views of ``rows`` — a run's records are then the one buffer the compiled
    call wrote, not a second copy of it (a wide scene's records are tens of kB a step, and each fresh copy pays
    its pages' first touch)."""
    out, o = {}, 0
    n = rows.shape[0]
    for name, shape in columns:
        size = math.prod(shape)
        series = rows[:, o:o + size].reshape((n,) + tuple(shape))
        out[name] = series.copy() if copy else series
        o += size
    return out


@njit
def audit_error(out, y, nq, nv, K, corrections, energy0):
    """The energy audit's error E − E(0) − Σ work − corrections (thesis §2.3.2) at the state of ``y`` (the work
    integrals of its K constraints and 4 sources follow q, q̇), from the full evaluation ``out`` there."""
    sc = out.scalars[0]
    work = 0.0
    for c in range(nq + nv, nq + nv + K + 4):
        work += y[c]
    return sc.energy_kinetic + sc.energy_gravity + sc.energy_elastic - energy0 - work - corrections


@njit
def write_record(out, ctl, t, y, nq, nv, corrections, iterations, energy0, active, row):
    """Write one row (module docstring) at time t from the full evaluation ``out`` at the integrated vector
    ``y = [q, q̇, work (K + 4), z]``, the controllers' table ``ctl``, the projection's ``iterations`` that produced
    the state, and E(0) ``energy0``."""
    K = active.shape[0]
    sc = out.scalars[0]
    o = 0
    row[o] = t
    o += 1
    for k in range(nq + nv):                                  # q, q̇
        row[o + k] = y[k]
    o += nq + nv
    ke, pg, pe = sc.energy_kinetic, sc.energy_gravity, sc.energy_elastic
    total = ke + pg + pe
    row[o], row[o + 1], row[o + 2], row[o + 3], row[o + 4] = ke, pg + pe, pg, pe, total
    o += 5
    w = nq + nv                                               # the work integrals in y
    work_c = 0.0
    for c in range(K):
        row[o + c] = y[w + c]
        work_c += y[w + c]
    o += K
    row[o] = work_c
    o += 1
    for s in range(4):
        row[o + s] = y[w + K + s]
    o += 4
    row[o] = corrections
    row[o + 1] = audit_error(out, y, nq, nv, K, corrections, energy0)
    m = sc.rows
    row[o + 2] = sc.jacobian_rank
    row[o + 3] = 1.0 if (m > 0 and sc.jacobian_rank < m) else 0.0
    row[o + 4] = iterations
    o += 5
    for c in range(K):
        for a in range(3):
            row[o + 3 * c + a] = out.constraint_force[c, a]
    o += 3 * K
    for c in range(K):
        f = out.constraint_force[c]
        row[o + c] = np.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])
        row[o + K + c] = out.deviation[c]
        row[o + 2 * K + c] = out.deviation_rate[c]
        row[o + 3 * K + c] = out.residual[c]
    o += 4 * K
    R = out.singular_values.shape[0]
    for k in range(R):
        row[o + k] = out.singular_values[k] if k < sc.n_svals else np.nan
    o += R
    row[o], row[o + 1], row[o + 2] = sc.rank, sc.dropped, sc.cutoff
    o += 3
    for c in range(K):
        row[o + c] = 1.0 if active[c] else 0.0
    o += K
    z0 = nq + nv + K + 4
    for i in range(ctl.shape[0]):
        con = ctl[i]
        n, d = con.n, con.diag
        for k in range(n):
            row[o + k] = out.tracking_error[d + k]
            row[o + n + k] = out.desired[d + k]
            row[o + 2 * n + k] = out.sliding[d + k]
        o += 3 * n
        row[o] = out.s_energy[i]
        o += 1
        for k in range(nv):
            row[o + k] = out.torque[i, k]
        o += nv
        for k in range(con.n_parameters):
            row[o + k] = y[z0 + con.z_start + k]
        o += con.n_parameters
