"""One evaluation of the constrained dynamics at a state, as a pipeline of compiled stages over one named
workspace (DESIGN.md's step; MJX's ``forward``): what q̈, ż and the powers are at (t, q, q̇, z), and — in a
full evaluation — everything :class:`core.data.Data` reports.

Stages, each a small function beside its physics, in the order they run::

    kinematics      link poses, velocities v, c = v × S q̇ and a_vp (eq. 2.65)        core.kinematics, core.points
    rows            J, γ, D, Ḋ, 2κḊ + κ²D of the active constraints (eq. 2.37–2.39, 2.21)   core.constraints
    programs        the control programs' quantities and servo commands (Kearney §4.1)       core.programs.kernels
    forces          τ of the force elements by power source, their elastic energy (§2.3.1)   core.forces
    plant           M (CRBA), b = C q̇ + g and g (RNEA), when a stage needs them            core.crba, core.rnea
    controllers     τ_c and ż of every controller (ch. 3; Aghili §7)                       core.control.kernels
    dynamics        ABA with τ: q̈_free = M⁻¹(τ − b) and the factorization (§2.4.2)          core.aba
    solve           the formulation: dynamic constraints, multipliers or projection          core.formulations
                    — with control equations (Kearney §4.2), solved for their actuators' commands here
    powers          each constraint's power λ·(J q̇) and each source's τ_s · q̇                 here
    diagnostics     constraint forces, residuals, ranks, energies                          here

Controllers run after the rows and the applied forces because projected inverse dynamics needs J and γ and
constraint-force control reads the applied forces (its force sensor); their torques then join τ before the
dynamics. The projection formulation needs M and b explicitly (Aghili eq. 22–32); the other two need only
ABA's factorization (M⁻¹Jᵀ by one O(N) solve per row).
"""
from __future__ import annotations

import numpy as np

from .aba import aba_passes, aba_solve, tree_span
from .constraints import POINT_VELOCITY, rows_kernel
from .control.kernels import control_stage
from .crba import mass_matrix_kernel
from .energy import energies_kernel
from .forces import ACTUATORS, forces_kernel
from .formulations import (dynamic_constraints, jacobian_rank, jacobian_svd, minv_jt, multipliers,
                           projection)
from .jit import njit
from .kinematics import fk_kernel, world_frame
from .layout import (MULTIPLIERS, PROJECTION, ControlWork, Dense, EventWork, IntegratorWork, ProgramWork, RowsWork,
                     SolveWork, Workspace, articulated_work, kinematics_work, plant_work)
from .linalg import numerical_rank, pinv_apply, svd_columns
from .points import velocity_product_kernel
from .programs.kernels import L_ACCEL, L_ACTUATOR, L_FORCE, L_MOMENT, L_QACCEL, law, point_or_com, quantities_kernel, \
    servo_commands
from .rnea import rnea_passes

__all__ = ["evaluate", "workspace", "powers"]


@njit
def kinematics_stage(tree, kin, q, qd, velocities):
    """Link poses at q and, with ``velocities``, the links' velocities and velocity-product accelerations in
    link coordinates (what the constraint rows, the force elements and the energies read)."""
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, kin.E, kin.r,
              kin.R_WL, kin.p_WL)
    if velocities:
        velocity_product_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.E, kin.r, qd, kin.v, kin.c,
                                kin.a_vp)


@njit
def rows_stage(tree, tab, ws, t, q, qd, m, full, out):
    """The rows of the active constraints (``ws.rows``) and, with ``full``, every constraint's deviation norms and
    end points."""
    kin, rows = ws.kin, ws.rows
    rows.J[:m, :] = 0.0
    rows_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, kin.v, kin.a_vp,
                tab.constraints, tab.tape, tab.variables, rows.row_of, t, q, qd, rows.J, rows.gamma, rows.D,
                rows.D_rate, rows.stab, out.deviation, out.deviation_rate, out.point_a, out.point_b, out.velocity_a,
                rows.P3, (rows.val, rows.d1, rows.d2, rows.grad, rows.xv, rows.vv), full)


@njit
def plant_stage(tree, kin, aba, plant, qd, with_gravity):
    """M (CRBA) and b = C q̇ + g (RNEA with q̈ = 0) at this state, and g (RNEA at rest) when asked, all three from
    the links' world motion subspaces and inertias (:func:`core.kinematics.world_frame`), made here into
    ``aba.Sw`` and ``aba.IA``: the dynamics stage's ABA then starts from them (its pass 2 accumulates into IA, after
    every use here)."""
    p, Sw, Iw = plant, aba.Sw, aba.IA
    world_frame(tree.S, tree.nv_j, tree.mass, tree.com, tree.inertia_com, kin.R_WL, kin.p_WL, Sw, Iw)
    mass_matrix_kernel(tree.parent, Sw, tree.v_start, tree.nv_j, tree.armature, Iw, p.Ic, p.M, p.F6)
    rnea_passes(tree.parent, Sw, tree.v_start, tree.nv_j, tree.armature, Iw, tree.gravity, qd, p.zero, p.fx,
                p.v, p.acc, p.f, p.b, p.s6)
    if with_gravity:
        rnea_passes(tree.parent, Sw, tree.v_start, tree.nv_j, tree.armature, Iw, tree.gravity, p.zero, p.zero,
                    p.fx, p.v, p.acc, p.f, p.g, p.s6)


@njit
def evaluate(tree, tab, ws, t, q, qd, z, m, n_groups, scale, full, out):
    """One evaluation at (t, q, q̇) with the controllers' state z and m active constraint rows in n_groups groups
    (laid out in ``ws.rows`` by :func:`core.constraints.active_layout`; ``scale`` the largest Jacobian scale of the
    active constraints). Always writes ``out.qdd``, ``out.tau_sources``, ``out.power`` (K constraints, then
    dampers, drag, actuators, external: :func:`powers`), ``out.z_rate`` and the programs' ``out.quantities``; with
    ``full`` also every diagnostic of :class:`core.layout.Outputs`. Returns False if q̈, ż or the powers are not
    finite (with ``full``: or the energies, deviations or constraint forces)."""
    st = tab.settings[0]
    cons, ctl = tab.constraints, tab.controllers
    kin, aba, rows, solve, plant, dense = ws.kin, ws.aba, ws.rows, ws.solve, ws.plant, ws.dense
    nv, K = qd.shape[0], cons.shape[0]
    programs = tab.quantities.shape[0] > 0
    kinematics_stage(tree, kin, q, qd, full or m > 0 or tab.forces.shape[0] > 0 or programs)
    if m > 0 or (full and K > 0) or tab.equations.shape[0] > 0:   # (the open constraints' rows unless ``out``
        rows_stage(tree, tab, ws, t, q, qd, m, full and not ws.integrator.flags[2], out)   # has this state's)
    extra = ws.programs.extra
    if programs:                                              # the programs' quantities and servos (Kearney §4.1)
        programs_stage(tree, tab, ws, t, q, qd, out)
    tau, power, sources = out.tau, out.power, out.tau_sources
    tau[:] = 0.0
    sources[:] = 0.0
    iw = ws.integrator
    h = st.implicit_step                                      # > 0: the implicitfast step's own evaluation
    damping = iw.damping if h > 0.0 else iw.damping[:, :0]
    damping[:] = 0.0
    elastic = forces_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, kin.v, q, qd, t,
                            tab.forces, tau, sources, rows.P3, extra, programs, damping)
    for s in range(sources.shape[0]):                         # τ: the elastic forces and every source's
        for k in range(nv):
            tau[k] += sources[s, k]
    armature = tree.armature
    if h > 0.0:            # (H + h C) q̈ = τ(q, q̇) − b + Jᵀλ: C = −∂τ/∂q̇ of the joint forces (diagonal), so that
        armature = iw.armature     # q̇ + h q̈ is the velocity those forces act at (MuJoCo's implicitfast)
        for k in range(nv):
            net = 0.0
            for s in range(damping.shape[0]):
                net += damping[s, k]
            if net <= 0.0:         # joint forces that do not damp their joint net are taken explicitly: C's
                net = 0.0          # column then zero in every source, so that ``damping`` holds what the step
                for s in range(damping.shape[0]):                 # takes (the first-order step books it)
                    damping[s, k] = 0.0
            armature[k] = tree.armature[k] + h * net
    if st.mass_matrix:
        plant_stage(tree, kin, aba, plant, qd, st.gravity_torque)
    out.tau_control[:] = 0.0
    if ctl.shape[0] > 0:                                      # τ_c, ż; the force elements' τ is the force sensor
        control_stage(tree, kin, plant, rows, dense, ws.control, m, cons, ctl, tab.control_ints, tab.control_floats,
                      t, q, qd, z, tau, out.tau_control, out.z_rate, out, full)
        for k in range(nv):
            tau[k] += out.tau_control[k]
            sources[ACTUATORS, k] += out.tau_control[k]           # the controllers act through the actuators
    formulation = st.formulation if m > 0 else -1
    if formulation != PROJECTION:                             # ABA in world axes (core.aba): q̈_free = M⁻¹(τ − b)
        aba_passes(tree, kin, aba, qd, tau, solve.qdd_free, st.mass_matrix, armature)   # (the plant stage made the
        #                                                                              frame)
        if m > 0:
            minv_jt(tree, aba, cons, rows, solve, m)
    if tab.equations.shape[0] > 0:                            # control equations (Kearney §4.2), with the dynamics
        equations_stage(tree, tab, ws, st, formulation, m, n_groups, scale, qd, tau, full, out)
    else:
        solve_stage(tree, cons, st, ws, formulation, m, n_groups, scale, tau, full, out)
    powers(cons, rows.row_of, rows.J, out.multipliers, sources, qd, power, solve.span, formulation != PROJECTION)
    ok = True
    qdd, z_rate = out.qdd, out.z_rate
    for k in range(nv):
        ok = ok and np.isfinite(qdd[k])
    for k in range(power.shape[0]):
        ok = ok and np.isfinite(power[k])
    for k in range(z_rate.shape[0]):
        ok = ok and np.isfinite(z_rate[k])
    if full:
        diagnostics(tree, cons, st, kin, rows, ws.solve, dense, m, n_groups, formulation, scale, elastic, qd, out)
        sc = out.scalars[0]                                   # what a step reports must be finite too: a state
        ok = ok and np.isfinite(sc.energy_kinetic + sc.energy_gravity + sc.energy_elastic)   # whose energy or
        deviation, rate, force = out.deviation, out.deviation_rate, out.constraint_force   # forces overflow
        total = 0.0                                                                       # is diverging
        for c in range(K):                                    # (a sum is finite only if every term is;
            total += deviation[c] + rate[c] + force[c, 0] + force[c, 1] + force[c, 2]
        ok = ok and np.isfinite(total)                        # one that overflows is diverging too)
    return ok


@njit
def solve_stage(tree, cons, st, ws, formulation, m, n_groups, scale, tau, full, out):
    """q̈ and the multipliers from the applied τ by the formulation (ABA's q̈_free and M⁻¹Jᵀ are made already,
    except for the projection, which works from M and b)."""
    rows, solve, plant, dense = ws.rows, ws.solve, ws.plant, ws.dense
    nv = out.qdd.shape[0]
    if formulation == PROJECTION:
        jacobian_svd(rows.J, m, nv, dense)
        projection(st, rows, solve, plant, dense, m, scale, tau, out)
    elif m == 0:
        out.qdd[:] = solve.qdd_free
    elif formulation == MULTIPLIERS:
        jacobian_svd(rows.J, m, nv, dense)
        multipliers(st, rows, solve, dense, m, scale, out)
    else:
        dynamic_constraints(tree, ws.aba, cons, st, rows, solve, dense, m, n_groups, full, out)


@njit
def programs_stage(tree, tab, ws, t, q, qd, out):
    """The programs' quantities at (t, q, q̇) into ``out.quantities``, then their servos' commands (per force row,
    ``ws.programs.extra``; the actuators the control equations solve for command 0 here: the equations stage
    adds theirs)."""
    pw = ws.programs
    quantities_kernel(tree, ws.kin, tab.quantities, t, q, qd, out.quantities, pw.rates, pw.grad, pw.bias, pw.dirs,
                      pw.E3)
    servo_commands(tab.servos, tab.terms, tab.forces, out.quantities, pw.grad, pw.extra)
    for j in range(tab.unknowns.shape[0]):
        pw.extra[tab.unknowns[j]] = 0.0


@njit
def constraint_force(cons, kin, rows, multipliers, c, f):
    """f ← constraint c's force vector E λ (world: E turned with link b for a basis fixed in it); zero when it is
    inactive."""
    f[0], f[1], f[2] = 0.0, 0.0, 0.0
    row = rows.row_of[c]
    if row < 0:
        return
    E = cons[c].basis
    for b in range(cons[c].rows):
        lam = multipliers[row + b]
        for a in range(3):
            f[a] += E[a, b] * lam
    if cons[c].body_basis:                                    # a basis fixed in link b: E = R_b E_b
        kb = cons[c].link_b
        f0, f1, f2 = f[0], f[1], f[2]
        for a in range(3):
            f[a] = kin.R_WL[kb, a, 0] * f0 + kin.R_WL[kb, a, 1] * f1 + kin.R_WL[kb, a, 2] * f2


@njit
def _lhs_reading(tree, tab, ws, out, e, c_com, f, g):
    """The left side of control equation e at the dynamics just solved into ``out``, without its actuator terms."""
    eq = tab.equations[e]
    cons, kin, rows, pw = tab.constraints, ws.kin, ws.rows, ws.programs
    total = 0.0
    for i in range(eq.lhs_first, eq.lhs_first + eq.lhs_n):
        term = tab.lhs[i]
        kind = term.kind
        if kind == L_ACCEL:
            total += term.weight * out.qdd[term.target]
        elif kind == L_QACCEL:
            s = pw.bias[term.target]
            for k in range(out.qdd.shape[0]):
                s += pw.grad[term.target, k] * out.qdd[k]
            total += term.weight * s
        elif kind == L_FORCE or kind == L_MOMENT:
            for a in range(3):
                g[a] = term.vec[a] if term.along < 0 else pw.dirs[term.along, a]
            n_parts = tab.points.shape[0] if term.contact else 1
            for p in range(n_parts):
                if term.contact:                              # a contact: its points' normal, stick and Coulomb forces
                    pt = tab.points[p]
                    if pt.contact != term.target or rows.row_of[pt.normal] < 0:
                        continue
                    constraint_force(cons, kin, rows, out.multipliers, pt.normal, f)
                    c0 = pt.normal
                    if pt.stick >= 0:
                        if rows.row_of[pt.stick] >= 0:
                            x0, x1, x2 = f[0], f[1], f[2]
                            constraint_force(cons, kin, rows, out.multipliers, pt.stick, f)
                            f[0], f[1], f[2] = f[0] + x0, f[1] + x1, f[2] + x2
                        elif pt.friction >= 0:
                            for a in range(3):
                                f[a] += tab.forces[pt.friction].force[a]
                else:
                    c0 = term.target
                    constraint_force(cons, kin, rows, out.multipliers, c0, f)
                if kind == L_FORCE:
                    total += term.weight * (g[0] * f[0] + g[1] * f[1] + g[2] * f[2])
                else:                                         # ((x − c) × f)·axis = f·(axis × (x − c))
                    x = out.point_a[c0]
                    d0, d1, d2 = x[0] - c_com[0], x[1] - c_com[1], x[2] - c_com[2]
                    total += term.weight * (f[0] * (g[1] * d2 - g[2] * d1) + f[1] * (g[2] * d0 - g[0] * d2) +
                                            f[2] * (g[0] * d1 - g[1] * d0))
    return total


@njit
def _least_squares(pw, E, U):
    """``pw.u[:U]`` ← A⁺ b, the least-squares solution of the control equations A u = b (``pw.A`` E x U, ``pw.b``)
    of least norm (:func:`core.linalg.pinv_apply` on Aᵀ's SVD), singular values below 1e-12 of the largest left
    out, as numpy's ``pinv(A, 1e-12)``."""
    At, s, u = pw.At[:U, :E], pw.s, pw.u[:U]
    for j in range(U):
        for e in range(E):
            At[j, e] = pw.A[e, j]
    svd_columns(At, U, E, pw.V, s)                            # Aᵀ = (WΣ) Vᵀ
    r = 0
    while r < min(U, E) and s[r] > 1e-12 * s[0]:
        r += 1
    pinv_apply(At, pw.V, s, E, r, pw.b, u)
    return u


@njit
def equations_stage(tree, tab, ws, st, formulation, m, n_groups, scale, qd, tau, full, out):
    """Solve the control equations with the dynamics (Kearney §4.2): the forces, accelerations and quantities'
    accelerations are affine in the commands u of the actuators the equations solve for (``tab.unknowns``), so
    with the dynamics solved once at u = 0 and once per unit command (ABA's factorization reused: M⁻¹ eᵢ by one
    O(N) solve, then the constraint solve), ``A u = b`` is exact at this state; its least-squares solution (the
    smallest when the equations leave freedom), clipped to the actuators' limits, then acts in the final solve.
    Runs at every evaluation, so the equations hold at every integrator stage."""
    pw, solve, aba = ws.programs, ws.solve, ws.aba
    cons = tab.constraints
    K = cons.shape[0]
    nv = qd.shape[0]
    U, E = tab.unknowns.shape[0], tab.equations.shape[0]
    f, g, c_com, cd = pw.v3[0], pw.v3[1], pw.v3[2], pw.v3[3]
    point_or_com(tree, ws.kin, -1, c_com, c_com, cd)
    projection_ = formulation == PROJECTION
    if not projection_:
        pw.qdd0[:] = solve.qdd_free
    for j in range(U + 1):
        if j > 0:                                             # the response to a unit command of unknown j − 1
            dof = tab.forces[tab.unknowns[j - 1]].dof
            pw.tau[:] = 0.0
            pw.tau[dof] = 1.0
            if projection_:
                pw.tau[dof] += tau[dof]
                for k in range(nv):
                    if k != dof:
                        pw.tau[k] = tau[k]
            else:
                lo, hi = tree_span(tree.parent, tree.root, tree.v_start, tree.nv_j, pw.tau, nv)
                solve.col[:] = 0.0
                aba_solve(tree.parent, aba.Sw, tree.v_start, tree.nv_j, aba.U, aba.W, aba.Dinv, pw.tau, solve.col,
                          aba.pA, aba.u, aba.acc, aba.s6[0], aba.s6[1], lo, hi)
                for k in range(nv):
                    pw.X[j - 1, k] = solve.col[k]
                    solve.qdd_free[k] = pw.qdd0[k] + solve.col[k]
            solve_stage(tree, cons, st, ws, formulation, m, n_groups, scale, pw.tau, False, out)
        else:                                                 # (the responses need no singular values: fast)
            solve_stage(tree, cons, st, ws, formulation, m, n_groups, scale, tau, False, out)
        for e in range(E):
            pw.Y[j, e] = _lhs_reading(tree, tab, ws, out, e, c_com, f, g)
    for e in range(E):
        eq = tab.equations[e]
        pw.b[e] = law(eq.c0, tab.terms, eq.first, eq.n, eq.lo, eq.hi, out.quantities) - pw.Y[0, e]
        for j in range(U):
            pw.A[e, j] = pw.Y[j + 1, e] - pw.Y[0, e]
        for i in range(eq.lhs_first, eq.lhs_first + eq.lhs_n):
            term = tab.lhs[i]
            if term.kind != L_ACTUATOR:
                continue
            known = True
            for j in range(U):
                if tab.unknowns[j] == term.target:
                    pw.A[e, j] += term.weight
                    known = False
            if known:
                el = tab.forces[term.target]
                u = el.command if np.isnan(pw.extra[term.target]) else pw.extra[term.target]
                pw.b[e] -= term.weight * min(max(u, -el.limit), el.limit)
    u = _least_squares(pw, E, U)
    if not projection_:
        solve.qdd_free[:] = pw.qdd0
    for j in range(U):
        el = tab.forces[tab.unknowns[j]]
        uj = min(max(u[j], -el.limit), el.limit) if np.isfinite(u[j]) else 0.0
        pw.u[j] = uj
        pw.extra[tab.unknowns[j]] = uj
        tau[el.dof] += uj
        out.tau_sources[ACTUATORS, el.dof] += uj
        if not projection_:
            for k in range(nv):
                solve.qdd_free[k] += uj * pw.X[j, k]
    solve_stage(tree, cons, st, ws, formulation, m, n_groups, scale, tau, full, out)


@njit
def powers(cons, row_of, J, multipliers, sources, v, power, span, spanned):
    """``power`` (K + 4) ← the power at the velocity v of each constraint's force J_cᵀλ_c, λ_c · (J_c v) (its rows
    of J and of the multipliers from ``row_of[c]``; zero for an inactive one), then of each source's generalized
    force τ_s · v (``sources``, 4 x nv: :func:`core.forces.forces_kernel`). The velocity is the state's q̇ in an
    evaluation, the end velocity q̇₁ of a first-order step, with the forces of its start (:mod:`core.integrators`):
    the forces held over a step, times the displacement it makes. With ``spanned`` each row's products run over
    the velocities ``span`` gives it (:func:`core.formulations.minv_jt`'s, outside which the row is zero)."""
    K, nv = cons.shape[0], v.shape[0]
    for c in range(K):
        row = row_of[c]
        p = 0.0
        if row >= 0:
            for b in range(cons[c].rows):
                jv = 0.0
                k0, k1 = (span[row + b, 0], span[row + b, 1]) if spanned else (0, nv)
                for k in range(k0, k1):
                    jv += J[row + b, k] * v[k]
                p += multipliers[row + b] * jv
        power[c] = p
    for s in range(sources.shape[0]):
        p = 0.0
        for k in range(nv):
            p += sources[s, k] * v[k]
        power[K + s] = p


@njit
def diagnostics(tree, cons, st, kin, rows, solve, dense, m, n_groups, formulation, scale, elastic, qd, out):
    """What a full evaluation adds: each constraint's force vector E λ (world: E turned with link b for a basis
    fixed in it) and residual ‖η‖ (NaN when inactive), a
    velocity constraint's Ḋ = J q̈ + γ, J's rank by ``rank_tolerance`` (every formulation, one rule:
    :mod:`core.formulations`), the energies."""
    nv = out.qdd.shape[0]
    sc = out.scalars[0]
    sc.rows = m
    if m == 0:
        sc.rank, sc.dropped, sc.cutoff, sc.n_svals, sc.jacobian_rank = 0, 0, np.nan, 0, 0
    J, gamma, qdd, residual_rows, residual = rows.J, rows.gamma, out.qdd, out.residual_rows, out.residual
    row_of, force = rows.row_of, out.constraint_force       # (read once: a structure's field is counted at each read)
    for c in range(cons.shape[0]):
        row = row_of[c]
        if row < 0:                                           # inactive: no force, no residual
            force[c, 0], force[c, 1], force[c, 2] = 0.0, 0.0, 0.0
            residual[c] = np.nan
            continue
        constraint_force(cons, kin, rows, out.multipliers, c, force[c])
        r2 = 0.0
        for b in range(cons[c].rows):
            r2 += residual_rows[row + b] ** 2
        residual[c] = np.sqrt(r2)
        if cons[c].kind == POINT_VELOCITY:                    # Ḋ = J q̈ + γ
            d2 = 0.0
            for b in range(cons[c].rows):
                s = gamma[row + b]
                for k in range(nv):
                    s += J[row + b, k] * qdd[k]
                d2 += s * s
            out.deviation_rate[c] = np.sqrt(d2)
    if m > 0:
        if formulation != PROJECTION and formulation != MULTIPLIERS:   # (the other two computed J's SVD already)
            sc.jacobian_rank = jacobian_rank(rows.J, cons, rows, solve, dense, m, n_groups, st.rank_tolerance, scale)
        else:
            sc.jacobian_rank = numerical_rank(dense.sj, m, st.rank_tolerance, scale)
    ke, pe = energies_kernel(tree.inertia, tree.armature, tree.gravity, kin.R_WL, kin.p_WL, kin.v, qd)
    sc.energy_kinetic, sc.energy_gravity, sc.energy_elastic = ke, pe, elastic


@njit
def workspace(N, nv, K, R, L, V, P, F, n, n_points, n_limits, n_forces, Q, E, U, W):
    """A :class:`Workspace` for N links, nv velocities, K constraints of R rows, joint-space programs of at
    most L instructions over V variables, a regressor of P parameters, mixtures of F features, an integrated
    vector of n entries, ``n_points`` contact points, ``n_limits`` joint limits and ``n_forces`` force rows, and
    control programs' declarations of at most Q quantities, E equations solved for U actuators, and W watches."""
    kin, aba = kinematics_work(N), articulated_work(N)
    Lr, Vr = max(L, 1), max(V, 1)
    rows = RowsWork(np.zeros((R, nv)), np.zeros(R), np.zeros(R), np.zeros(R), np.zeros(R),
                    np.full(K, -1, np.int64), np.full(K, -1, np.int64), np.zeros(K, np.int64), np.zeros((22, 3)),
                    np.zeros(Lr), np.zeros(Lr), np.zeros(Lr), np.zeros((Lr, Vr)), np.zeros(Vr), np.zeros(Vr))
    solve = SolveWork(np.zeros(nv), np.zeros(nv), np.zeros((nv, R)), np.zeros((R, R)), np.zeros(R),
                      np.zeros(max(R, 1)), np.zeros(R, np.int64), np.zeros((R, R)), np.zeros((R, R)), np.zeros(R),
                      np.zeros(R), np.zeros(R), np.zeros((R, 3), np.int64), np.zeros((nv, R)), np.zeros((nv, nv)))
    plant = plant_work(N, nv)
    dense = Dense(np.zeros((nv, R)), np.zeros((R, R)), np.zeros(R), np.zeros((nv, R)), np.zeros((nv, nv)),
                  np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(nv), np.zeros(nv),
                  np.zeros(nv), np.zeros(nv, np.int64), np.zeros(R), np.zeros(R))
    R2 = R + nv
    control = ControlWork(np.zeros((3, nv, P)), np.zeros(max(P, 1)), np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros(nv),
                          np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros(nv), np.zeros(F), np.zeros(F),
                          np.zeros((nv, R2)), np.zeros((R2, R2)), np.zeros(R2), np.zeros(R2), np.zeros((nv, nv)),
                          np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros(max(nv, F)), np.zeros(nv), np.zeros(nv),
                          np.zeros(nv), np.zeros(3))             # (v1 also holds a mixture's gates, one per expert)
    flags = np.zeros(3, np.bool_)
    flags[1] = True
    integrator = IntegratorWork(np.zeros((6, n)), np.zeros(n), np.zeros(n), flags, np.zeros((4, nv)), np.zeros(nv),
                                np.zeros((R, nv)), np.zeros(R), np.zeros((4, nv)))
    F_ev = n_points + 2 * n_limits + K + W + 1                # events found at one state, at most
    E = n_points + 2 * n_limits + 1                           # an impact's entries, at most
    events = EventWork(np.zeros(F_ev, np.int64), np.zeros(F_ev, np.int64), np.zeros(F_ev),
                       np.zeros(n_points, np.bool_), np.zeros(n_points, np.bool_), np.zeros(n_points, np.int64),
                       np.zeros((E, 2), np.int64), np.zeros(E, np.bool_), np.zeros((E, 6)), np.zeros(nv),
                       np.zeros(n), np.zeros(n), np.zeros(W, np.bool_), np.zeros((F_ev, 2), np.int64),
                       np.zeros((F_ev, 4)))
    programs = ProgramWork(np.zeros(Q), np.zeros((Q, nv)), np.zeros(Q), np.zeros((Q, 3)), np.full(n_forces, np.nan),
                           np.zeros((3, 3)), np.zeros(nv), np.zeros((U, nv)), np.zeros((U + 1, E)), np.zeros((E, U)),
                           np.zeros(E), np.zeros(U), np.zeros(nv), np.zeros((U, E)), np.zeros((E, E)), np.zeros(E),
                           np.zeros((4, 3)))
    return Workspace(kin, aba, rows, solve, plant, dense, control, integrator, events, programs)
