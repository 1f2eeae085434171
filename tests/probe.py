"""Look inside one evaluation of the compiled pipeline (tests only).

:func:`core.evaluate` returns a :class:`core.Data`; the quantities a stage computes on the way — the stacked
constraint rows J, γ, D, Ḋ and the stabilization term (:mod:`core.constraints`), A = J M⁻¹Jᵀ and B of the
dynamic-constraints solve, the projector P = I − J⁺J and J⁺ of the projection formulation, the multipliers λ of
the active rows — stay in the pipeline's named workspace (numba StructRefs, :mod:`core.layout`). :func:`look`
runs one full evaluation on a private plan of its own (so no cache of :mod:`core.step` is touched) and copies
them out with small compiled getters. :func:`project` runs the projection formulation's drift removal
(:func:`core.formulations.project_state`) and :func:`bounded_solve` the bounded group solve
(:func:`core.solver.solve_groups`) on a system given in NumPy.
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

import core
from core.constraints import CONSTRAINT
from core.formulations import project_state
from core.forward import evaluate
from core.integrators import _layout
from core.jit import njit
from core.model import State
from core.solver import DAMPED_LEAST_SQUARES, SVD, solve_groups
from core.plan import build_plan, data as plan_data, run

__all__ = ["look", "stage", "project", "bounded_solve", "with_settings"]


@njit
def _rows(ws, m):
    r = ws.rows
    return (r.J[:m].copy(), r.gamma[:m].copy(), r.D[:m].copy(), r.D_rate[:m].copy(), r.stab[:m].copy(),
            r.row_of.copy(), r.group_of.copy())


@njit
def _solve(ws, m):
    s = ws.solve
    return s.B[:m].copy(), s.Y[:, :m].copy(), s.qdd_free.copy()


@njit
def _dense(ws, m):
    d = ws.dense
    return d.P.copy(), d.Jpinv[:, :m].copy(), d.sj[:m].copy()


def _scale(model, active) -> float:
    return max([c.jacobian_scale for c, on in zip(model.constraints, active) if on] + [0.0])


def with_settings(model: core.Model, **settings) -> core.Model:
    """``model`` with some of its ``simulation`` settings replaced (projection, solver, rank_tolerance …)."""
    return dataclasses.replace(model, settings={**model.settings, **settings})


def look(model: core.Model, t=0.0, q=None, qd=None, z=None, active=None, inputs: core.Inputs = core.Inputs()):
    """One full evaluation at (t, q, q̇, z) with the constraints ``active`` (defaults: the initial state's).

    Returns a namespace: ``data`` (:class:`core.Data`), ``m`` active rows, ``J`` (m x nv), ``gamma``, ``D``,
    ``D_rate``, ``stab`` (m), ``slices`` (per constraint: its rows, or None when inactive), ``groups`` (per
    constraint: its group, −1 when inactive), ``scale`` (the rank tests' floor), ``lam`` (m multipliers); with
    dynamic constraints or multipliers ``A`` = J M⁻¹Jᵀ, ``B`` = J M⁻¹(τ − b) + γ + stab, ``MinvJt`` (nv x m) and
    ``qdd_free`` = M⁻¹(τ − b); with projection ``P`` = I − J⁺J, ``Jpinv`` (nv x m) and ``sj`` (J's singular
    values)."""
    init = model.initial_state()
    state = State(float(t), np.array(init.q if q is None else q, float), np.array(init.qd if qd is None else qd, float),
                  init.z if z is None else np.array(z, float), init.work,
                  init.active if active is None else np.array(active, bool))
    state = model.complete(state)
    plan = build_plan(model, inputs)
    if run(model, state, plan, 1.0, state.t, 0, check_events=False).status == "diverged":
        raise core.DivergenceError("the evaluation is not finite")
    data = plan_data(model, plan, state)
    m = int(plan.out.scalars[0]["rows"])
    J, gamma, D, D_rate, stab, row_of, group_of = _rows(plan.workspace, m)
    slices = [None if r < 0 else slice(int(r), int(r) + c.rows) for r, c in zip(row_of, model.constraints)]
    out = SimpleNamespace(data=data, m=m, J=J, gamma=gamma, D=D, D_rate=D_rate, stab=stab, slices=slices,
                          groups=group_of, scale=_scale(model, state.active), lam=plan.out.multipliers[:m].copy(),
                          A=None, B=None, MinvJt=None, qdd_free=None, P=None, Jpinv=None, sj=None)
    formulation = inputs.formulation or model.settings.get("formulation", "dynamic_constraints")
    if formulation == "projection":
        out.P, out.Jpinv, out.sj = _dense(plan.workspace, m)
    else:
        out.B, out.MinvJt, out.qdd_free = _solve(plan.workspace, m)
        out.A = J @ out.MinvJt                                # (the pipeline forms A's blocks only as it needs them)
    return out


@njit
def _stage(tree, tab, ws, t, q, qd, z, active, stage_out):
    m, n_groups, scale = _layout(tab, tree, ws.rows, active)
    evaluate(tree, tab, ws, t, q, qd, z, m, n_groups, scale, False, stage_out)
    return stage_out.qdd.copy(), stage_out.multipliers[:m].copy()


def stage(model: core.Model, t, q, qd, active, inputs: core.Inputs = core.Inputs()):
    """An integrator stage's evaluation at (t, q, q̇) with the constraints ``active`` — the solve a step's later
    stages take, without the full evaluation's diagnostics (:func:`core.forward.evaluate` without ``full``), on a
    plan whose contact tables were written at that state: ``(q̈, multipliers of the active rows)``."""
    state = model.complete(State(float(t), np.array(q, float), np.array(qd, float), active=np.array(active, bool)))
    plan = build_plan(model, inputs)
    if run(model, state, plan, 1.0, state.t, 0, check_events=False).status == "diverged":
        raise core.DivergenceError("the evaluation is not finite")
    return _stage(model.kernel_tree, plan.tables, plan.workspace, float(t), state.q, state.qd, state.z,
                  state.active, plan.stage)


def project(model: core.Model, t, q, qd, active=None, inputs: core.Inputs = core.Inputs()):
    """The projection formulation's drift removal at (t, q, q̇) (Newton–Raphson on the positions, Aghili eq. 39,
    then the velocity projection), with the model's ``projection`` settings: ``(q, q̇, iterations)``."""
    active = np.array([c.enabled for c in model.constraints] if active is None else active, bool)
    plan = build_plan(model, inputs)
    q, qd = np.array(q, float), np.array(qd, float)
    iterations = project_state(model.kernel_tree, plan.tables, plan.workspace, float(t), q, qd, active,
                               _scale(model, active))
    return q, qd, int(iterations)


@njit
def _bounded(A, B, cons, row_of, group_of, n_groups, method, rcond, rho):
    m = B.shape[0]
    F, svals = np.full(m, np.nan), np.full(m, np.nan)
    span = np.zeros((m, 3), np.int64)                         # (every row spans m velocities: no compression)
    span[:, 1] = m
    rank, dropped, kept, ns = solve_groups(A.copy(), np.eye(m), B.copy(), cons, row_of, group_of, n_groups, method,
                                           rcond, rho, F, svals, np.zeros(m, np.int64), np.zeros((m, m)),
                                           np.zeros((m, m)), np.zeros(m), np.zeros(m), np.zeros(m), span,
                                           np.zeros((m, m)), np.zeros((m, m)), False, np.zeros(n_groups, np.bool_))
    return F, rank, dropped, kept, svals[:ns].copy()


def bounded_solve(A, B, blocks, bases, bounds, groups, method="svd", rcond=1e-12, rho=1e-3):
    """:func:`core.solver.solve_groups` on A F = −B: constraint c has the rows ``blocks[c]`` (a slice, in order),
    the force basis ``bases[c]`` (3 x rows) and the bound ``bounds[c]``; ``groups`` lists constraint indices.
    Returns a namespace ``F``, ``residual`` (A F + B), ``rank``, ``dropped``, ``min_kept``, ``svals``."""
    K = len(blocks)
    cons = np.zeros(K, CONSTRAINT)
    row_of, group_of = np.full(K, -1, np.int64), np.full(K, -1, np.int64)
    for c in range(K):
        n = blocks[c].stop - blocks[c].start
        cons[c]["rows"], cons[c]["max_force"] = n, bounds[c]
        cons[c]["basis"][:, :n] = bases[c]
        row_of[c] = blocks[c].start
    for g, members in enumerate(groups):
        group_of[list(members)] = g
    A, B = np.ascontiguousarray(A, float), np.ascontiguousarray(B, float)
    method = {"svd": SVD, "damped_least_squares": DAMPED_LEAST_SQUARES}[method]
    F, rank, dropped, kept, svals = _bounded(A, B, cons, row_of, group_of, len(groups), method, float(rcond),
                                             float(rho))
    return SimpleNamespace(F=F, residual=A @ F + B, rank=int(rank), dropped=int(dropped), min_kept=float(kept),
                           svals=svals)


def impact_at(model: core.Model, state, entries, new=None, inputs: core.Inputs = core.Inputs()):
    """The compiled impact (:func:`core.impacts.impact`) at ``state`` for ``entries`` — ``("point", slot)`` or
    ``("bound", 2 · limit + bound)`` — of which ``new`` (default all) touch down now. Returns a namespace ``qd``
    (q̇⁺), ``pn``, ``pt`` (E x 3), ``vn``, ``mode`` per entry and ``energy_change``."""
    from core.impacts import BOUND, POINT, impact
    from core.plan import build_plan, evaluated
    state = model.complete(state)
    plan = build_plan(model, inputs)
    evaluated(model, state, plan)
    E = len(entries)
    ents = np.array([[POINT if kind == "point" else BOUND, i] for kind, i in entries], dtype=np.int64).reshape(E, 2)
    fresh = np.ones(E, bool) if new is None else np.array(new, bool)
    qd = np.zeros(model.nv)
    result = np.zeros((E, 6))
    ke = float(plan.out.scalars[0]["energy_kinetic"])
    de = impact(model.kernel_tree, plan.tables, plan.workspace, np.array(state.q, float), np.array(state.qd, float),
                ke, state.active.copy(), ents, fresh, E, qd, result)
    return SimpleNamespace(qd=qd, pn=result[:, 0].copy(), pt=result[:, 1:4].copy(), vn=result[:, 4].copy(),
                           mode=result[:, 5].astype(int), energy_change=float(de))
