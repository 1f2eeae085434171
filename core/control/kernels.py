"""The controller stage of the compiled step: every controller's law, evaluated in each integrator stage
(thesis ch. 3; Aghili §7; Todorov's slides), from one table (:data:`CONTROLLER`) and two pools of numbers, so
that gains change between steps without compiling anything.

Tracking quantities (eq. 3.4–3.8) over a controller's n coordinates: ``e = q − q_d``, ``ė``, ``λ = K_d⁻¹K_p``,
``q̇_r = q̇_d − λe``, ``q̈_r = q̈_d − λė``, ``s = ė + λe``. The laws:

=====================  ==================================================  =====================================
controller             torque                                              adaptation (rate of its slice of z)
=====================  ==================================================  =====================================
PD                     ``−K_p e − K_d ė``  (eq. 3.3, 3.4)                   none
computed torque        ``M (q̈_d − K_d ė − K_p e) + b``                     none (feedback linearization)
Slotine–Li             ``−K_d s + Y(q, q̇, q̇_r, q̈_r) â``  (eq. 3.17)       ``â̇ = −η Yᵀ s``  (eq. 3.21)
mixture                ``−K_d s + W Φ``, ``Φ = g(q) ⊗ [q̈_r; q̇_r]``          gradient ``Ẇ = −η s Φᵀ`` (3.26) or
                       (eq. 3.11–3.15, 3.22–3.25)                          recursive ``Ẇ = −s (PΦ)ᵀ``,
                                                                          ``Ṗ = −PΦ (PΦ)ᵀ`` (3.27–3.28)
projected inverse      ``f∥ = P (b + M u_p)`` (Aghili eq. 45–48), with      ``∫e_f`` (force control)
dynamics               force control (51–52) or passive joints (55–62)
=====================  ==================================================  =====================================

A controller's torques are clipped to its limits and added to the applied forces; a disabled one applies
nothing and holds its state. :class:`core.control.base.Controller` describes each controller (its parameters
and validation); :func:`controller_table` turns them into the table.
"""
from __future__ import annotations

import numpy as np

from ..energy import energies_kernel
from ..formulations import jacobian_svd, pseudo_inverse
from ..jit import njit
from ..kinematics import velocities_kernel
from ..linalg import lu_apply, lu_factor, pinv_apply, svd_columns
from .regressor import regressor_kernel
from .trajectories import trajectory_kernel

__all__ = ["CONTROLLER", "controller_table", "control_stage", "PD", "COMPUTED_TORQUE", "SLOTINE_LI", "MIXTURE",
           "PROJECTED", "GRADIENT", "RECURSIVE", "KIND_CODES", "AS_WRITTEN", "FORGETTING", "FLOOR",
           "COVARIANCE_CODES"]

PD, COMPUTED_TORQUE, SLOTINE_LI, MIXTURE, PROJECTED = range(5)
KIND_CODES = {"pd": PD, "computed_torque": COMPUTED_TORQUE, "slotine_li": SLOTINE_LI, "mixture": MIXTURE,
              "projected_inverse_dynamics": PROJECTED}
GRADIENT, RECURSIVE = range(2)
AS_WRITTEN, FORGETTING, FLOOR = range(3)
COVARIANCE_CODES = {"as_written": AS_WRITTEN, "forgetting": FORGETTING, "floor": FLOOR}

#: One controller of the compiled step. Offsets point into the integer pool (``dofs``, ``qidx``: its n entries of
#: q̇ and q; ``actuated``: nv flags; ``has_desired``: K flags) or the float pool (``kp``, ``kd``, ``limit``: n
#: each, ``limit`` inf where unlimited; ``trajectory``: its parameters, laid out by ``trajectory_kind``;
#: ``centres``: experts x n; ``desired``: K x 3 world forces). ``z_start``, ``n_state``: its slice of State.z,
#: whose first ``n_parameters`` are adaptive parameters;
#: ``diag``: its first coordinate in the per-coordinate diagnostics. ``regressor_gravity``: whether Y models
#: gravity (Slotine–Li); ``model_gravity``: whether b includes it (computed torque). Slotine–Li: ``kmat``,
#: ``kgrav`` the maps K, K_g (10N x n_p, row-major) of its parameterization, ``split`` whether they differ,
#: ``gain`` Γ (n_p x n_p; the law uses η Γ). Mixture: ``covariance`` the P rule (AS_WRITTEN, FORGETTING,
#: FLOOR), ``forgetting`` its factor, ``floor`` p_min.
CONTROLLER = np.dtype([
    ("kind", np.int64), ("enabled", np.bool_), ("n", np.int64), ("dofs", np.int64), ("qidx", np.int64),
    ("kp", np.int64), ("kd", np.int64), ("limit", np.int64),
    ("trajectory_kind", np.int64), ("trajectory", np.int64), ("segments", np.int64), ("time_scale", np.float64),
    ("z_start", np.int64), ("n_state", np.int64), ("n_parameters", np.int64), ("diag", np.int64),
    ("eta", np.float64), ("sigma", np.float64), ("forgetting", np.float64), ("rule", np.int64),
    ("model_gravity", np.bool_), ("experts", np.int64), ("centres", np.int64),
    ("actuated", np.int64), ("all_actuated", np.bool_), ("force_control", np.bool_), ("has_desired", np.int64),
    ("desired", np.int64), ("force_gain", np.float64), ("force_integral_gain", np.float64),
    ("kmat", np.int64), ("kgrav", np.int64), ("split", np.bool_), ("gain", np.int64),
    ("covariance", np.int64), ("floor", np.float64),
], align=True)


def controller_table(controllers, nv: int, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(table, ints, floats)`` of :data:`CONTROLLER` rows and their pools for ``controllers``
    (:class:`core.control.base.Controller` objects, in ``Model.controllers`` order)."""
    table = np.zeros(len(controllers), CONTROLLER)
    ints: list = []
    floats: list = []

    def put(pool, values) -> int:
        start = len(pool)
        pool.extend(np.asarray(values).ravel().tolist())
        return start

    z_start = diag = 0
    for row, c in zip(table, controllers):
        n = c.n
        row["kind"], row["enabled"], row["n"] = KIND_CODES[c.kind], c.enabled, n
        row["dofs"], row["qidx"] = put(ints, c.dofs), put(ints, c.qidx)
        row["kp"], row["kd"] = put(floats, c.kp), put(floats, c.kd)
        row["limit"] = put(floats, np.full(n, np.inf) if c.torque_limit is None else c.torque_limit)
        kind, params, segments = c.trajectory.packed()
        row["trajectory_kind"], row["trajectory"], row["segments"] = kind, put(floats, params), segments
        row["time_scale"] = c.trajectory.time_scale
        row["z_start"], row["n_state"], row["n_parameters"], row["diag"] = z_start, c.n_state, c.n_parameters, diag
        z_start += c.n_state
        diag += n
        row["eta"] = getattr(c, "eta", 0.0)
        row["model_gravity"] = getattr(c, "model_gravity", False)
        if row["kind"] == SLOTINE_LI:
            p = c.parameterization
            row["kmat"] = put(floats, p.K)
            row["split"] = p.split
            row["kgrav"] = put(floats, p.K_gravity) if p.split else row["kmat"]
            row["gain"] = put(floats, c.gamma)
        if row["kind"] == MIXTURE:
            row["sigma"], row["forgetting"], row["floor"] = c.sigma, c.forgetting, c.floor
            row["covariance"] = COVARIANCE_CODES[c.covariance]
            row["rule"] = RECURSIVE if c.rule == "recursive" else GRADIENT
            row["experts"], row["centres"] = c.experts, put(floats, c.centres)
        if row["kind"] == PROJECTED:
            row["actuated"], row["all_actuated"] = put(ints, c.actuated.astype(np.int64)), bool(c.actuated.all())
            row["force_control"] = c.force_control
            flags, forces = np.zeros(K, np.int64), np.zeros((K, 3))
            for i, f in (c.desired_force or {}).items():
                flags[i], forces[i] = 1, f
            row["has_desired"], row["desired"] = put(ints, flags), put(floats, forces)
            row["force_gain"], row["force_integral_gain"] = c.gf, c.gi
    return (table, np.array(ints, dtype=np.int64) if ints else np.zeros(1, np.int64),
            np.array(floats, dtype=np.float64) if floats else np.zeros(1))


# ---- the stage -----------------------------------------------------------------------------------------------

@njit
def control_stage(tree, kin, plant, rows, dense, cw, m, cons, ctl, ints, floats, t, q, qd, z, tau_ext, tau,
                  z_rate, out, full):
    """τ += the torques of every controller of ``ctl`` at (t, q, q̇) with the controllers' state z; ``z_rate``
    ← ż; with ``full``, the diagnostics (tracking error, desired, sliding variable, ½ sᵀMs, torque) into ``out``.
    ``kin`` holds the parent → link transforms; ``plant`` M, b, g when ``settings.mass_matrix``; ``rows`` the
    active constraint rows (m);
    ``tau_ext`` the force elements' generalized force (a force sensor, for constraint-force control)."""
    nv = qd.shape[0]
    for c in range(ctl.shape[0]):
        con = ctl[c]
        n = con.n
        dofs = ints[con.dofs:con.dofs + n]
        qidx = ints[con.qidx:con.qidx + n]
        kp = floats[con.kp:con.kp + n]
        kd = floats[con.kd:con.kd + n]
        zc = z[con.z_start:con.z_start + con.n_state]
        zr = z_rate[con.z_start:con.z_start + con.n_state]
        q_d, qd_d, qdd_d, e, e_dot, s = cw.q_d[:n], cw.qd_d[:n], cw.qdd_d[:n], cw.e[:n], cw.e_dot[:n], cw.s[:n]
        trajectory_kernel(con.trajectory_kind, n, con.segments, con.time_scale, floats, con.trajectory, t,
                          q_d, qd_d, qdd_d)
        for i in range(n):                                   # tracking quantities (eq. 3.4–3.8)
            lam = kp[i] / kd[i]                              # λ = K_d⁻¹ K_p   (eq. 3.7)
            e[i] = q[qidx[i]] - q_d[i]
            e_dot[i] = qd[dofs[i]] - qd_d[i]
            s[i] = e_dot[i] + lam * e[i]                     # s = ė + λe
        u = cw.u                                             # the law's torque: n entries (nv for projected)
        for k in range(nv):
            u[k] = 0.0
        for k in range(zr.shape[0]):
            zr[k] = 0.0
        if con.enabled:
            if con.kind == PROJECTED:
                _projected(tree, plant, rows, dense, cw, m, cons, con, ints, floats, dofs, kp, kd, zc, zr, tau_ext,
                           nv, u)
            else:
                _tracking_law(tree, plant, cw, con, floats, q, qd, dofs, kp, kd, zc, zr, n, nv, u)
        torque = out.torque[c]
        for k in range(nv):
            torque[k] = 0.0
        lim = floats[con.limit:con.limit + n]
        if con.kind == PROJECTED:                            # every joint; the limits bound the controlled ones
            for k in range(nv):
                torque[k] = u[k]
            for i in range(n):
                torque[dofs[i]] = min(max(u[dofs[i]], -lim[i]), lim[i])
        else:
            for i in range(n):
                torque[dofs[i]] = min(max(u[i], -lim[i]), lim[i])
        for k in range(nv):
            tau[k] += torque[k]
        if full:
            o = con.diag
            s_full = cw.v4
            for k in range(nv):
                s_full[k] = 0.0
            for i in range(n):
                out.tracking_error[o + i] = e[i]
                out.desired[o + i] = q_d[i]
                out.sliding[o + i] = s[i]
                s_full[dofs[i]] = s[i]
            out.s_energy[c] = _kinetic_energy(tree, kin, plant.v, s_full)   # V_s = ½ sᵀ M s   (eq. 3.5)


@njit
def _kinetic_energy(tree, kin, v, w):
    """½ wᵀ M(q) w, as the kinetic energy Σ ½ v_iᵀ I_i v_i of the links moving with joint velocities w, plus the
    armature's Σ ½ a_k w_k² (O(N), no mass matrix; ``v``: N x 6 scratch)."""
    velocities_kernel(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.E, kin.r, w, v)
    return energies_kernel(tree.inertia, tree.armature, tree.gravity, kin.R_WL, kin.p_WL, v, w)[0]


@njit
def _tracking_law(tree, plant, cw, con, floats, q, qd, dofs, kp, kd, zc, zr, n, nv, u):
    """u (n) and ż of the joint-space tracking controllers (PD, computed torque, Slotine–Li, mixture)."""
    e, e_dot = cw.e, cw.e_dot
    if con.kind == PD:                                       # τ = −K_p e − K_d ė   (eq. 3.3, 3.4)
        for i in range(n):
            u[i] = -kp[i] * e[i] - kd[i] * e_dot[i]
    elif con.kind == COMPUTED_TORQUE:                        # τ = M (q̈_d − K_d ė − K_p e) + b
        v = cw.v1
        for i in range(n):
            v[i] = cw.qdd_d[i] - kd[i] * e_dot[i] - kp[i] * e[i]
        for i in range(n):
            a = dofs[i]
            t = plant.b[a] - (0.0 if con.model_gravity else plant.g[a])
            for j in range(n):
                t += plant.M[a, dofs[j]] * v[j]
            u[i] = t
    else:
        qd_r, qdd_r = cw.qd_r, cw.qdd_r                      # q̇_r = q̇_d − λe, q̈_r = q̈_d − λė
        for i in range(n):
            lam = kp[i] / kd[i]
            qd_r[i] = cw.qd_d[i] - lam * e[i]
            qdd_r[i] = cw.qdd_d[i] - lam * e_dot[i]
        if con.kind == SLOTINE_LI:
            _slotine_li(tree, cw, con, floats, q, qd, dofs, kd, zc, zr, n, nv, u)
        else:
            _mixture(cw, con, floats, q, kd, zc, zr, n, u)


@njit
def _slotine_li(tree, cw, con, floats, q, qd, dofs, kd, zc, zr, n, nv, u):
    """τ = −K_d s + Y_p â, â̇ = −η Γ Y_pᵀ s (eq. 3.17, 3.21 with a gain matrix) with Y_p = Y_in K + Y_g K_g, the
    regressor of :mod:`core.control.regressor` mapped to the adapted parameters (:mod:`core.control.parameters`;
    Y = Y_in + Y_g, its parts without gravity and of gravity alone). Every dof is controlled, so the reference
    motion fills q̇_r, q̈_r in joint order. ``cw.Y``: [0] Y (or Y_in), [1] Y_g, [2] Y_p."""
    qdr, qddr, g, zero = cw.v2, cw.v3, cw.g3, cw.v1
    for k in range(nv):
        qdr[k] = 0.0
        qddr[k] = 0.0
        zero[k] = 0.0
    for i in range(n):
        qdr[dofs[i]] = cw.qd_r[i]
        qddr[dofs[i]] = cw.qdd_r[i]
    for a in range(3):
        g[a] = tree.gravity[a] if con.model_gravity else 0.0
    split = con.split and con.model_gravity
    Y, Yg, Yp = cw.Y[0], cw.Y[1], cw.Y[2]
    Y[:, :] = 0.0
    if split:                                                # Y_g (gravity alone), then Y_in (no gravity)
        Yg[:, :] = 0.0
        regressor_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.S, tree.q_start,
                         tree.v_start, tree.nv_j, g, q, zero[:nv], zero[:nv], zero[:nv], Yg)
        for a in range(3):
            g[a] = 0.0
        regressor_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.S, tree.q_start,
                         tree.v_start, tree.nv_j, g, q, qd, qdr, qddr, Y)
    else:
        regressor_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.S, tree.q_start,
                         tree.v_start, tree.nv_j, g, q, qd, qdr, qddr, Y)
    npar = con.n_state
    nstd = 10 * tree.parent.shape[0]
    for i in range(n):                                       # Y_p = Y_in K (+ Y_g K_g), the controlled rows
        row = dofs[i]
        for p in range(npar):
            t = 0.0
            for k in range(nstd):
                t += Y[row, k] * floats[con.kmat + k * npar + p]
            if split:
                for k in range(nstd):
                    t += Yg[row, k] * floats[con.kgrav + k * npar + p]
            Yp[row, p] = t
    s = cw.s
    for i in range(n):
        row = dofs[i]
        t = -kd[i] * s[i]
        for p in range(npar):
            t += Yp[row, p] * zc[p]
        u[i] = t
    w = cw.wp
    for p in range(npar):                                    # w = Y_pᵀ s
        t = 0.0
        for i in range(n):
            t += Yp[dofs[i], p] * s[i]
        w[p] = t
    for p in range(npar):                                    # â̇ = −η Γ w
        t = 0.0
        for k in range(npar):
            t += floats[con.gain + p * npar + k] * w[k]
        zr[p] = -con.eta * t


@njit
def _mixture(cw, con, floats, q, kd, zc, zr, n, u):
    """τ = −K_d s + W Φ with Φ = g(q) ⊗ [q̈_r; q̇_r] (eq. 3.11–3.15, 3.22–3.25); gradient rule Ẇ = −η s Φᵀ
    (eq. 3.26) or recursive Ẇ = −s (PΦ)ᵀ, Ṗ = −PΦ (PΦ)ᵀ (eq. 3.27–3.28; with forgetting, + ρP so that
    tr P ≤ tr P(0))."""
    N = con.experts
    F = 2 * n * N
    qidx_o = con.centres
    phi, Pphi, gate = cw.phi, cw.Pphi, cw.v1
    sigma = con.sigma
    d2min = np.inf
    for j in range(N):                                       # normalized Gaussian gates (eq. 3.13–3.14)
        d2 = 0.0
        for i in range(n):
            d = cw.e[i] + cw.q_d[i] - floats[qidx_o + j * n + i]      # q_i − c_ji  (q_i = e_i + q_d,i)
            d2 += d * d
        gate[j] = d2 / (2.0 * sigma * sigma)
        d2min = min(d2min, gate[j])
    total = 0.0
    for j in range(N):
        gate[j] = np.exp(-(gate[j] - d2min))                 # shifted: the sum never underflows
        total += gate[j]
    for j in range(N):
        gate[j] /= total
        for i in range(n):                                   # Φ = [g_1 φ; …; g_N φ], φ = [q̈_r; q̇_r]
            phi[j * 2 * n + i] = gate[j] * cw.qdd_r[i]
            phi[j * 2 * n + n + i] = gate[j] * cw.qd_r[i]
    s = cw.s
    for i in range(n):                                       # τ = −K_d s + W Φ   (eq. 3.23)
        t = -kd[i] * s[i]
        for j in range(F):
            t += zc[i * F + j] * phi[j]
        u[i] = t
    if con.rule == GRADIENT:                                 # Ẇ = −η s Φᵀ   (eq. 3.26)
        for i in range(n):
            for j in range(F):
                zr[i * F + j] = -con.eta * s[i] * phi[j]
        return
    P = zc[n * F:n * F + F * F]
    trace = 0.0
    for a in range(F):                                       # PΦ (P symmetric)
        t = 0.0
        for b in range(F):
            t += P[a * F + b] * phi[b]
        Pphi[a] = t
        trace += P[a * F + a]
    for i in range(n):                                       # Ẇ = −s (PΦ)ᵀ   (eq. 3.27)
        for j in range(F):
            zr[i * F + j] = -s[i] * Pphi[j]
    if con.covariance == FLOOR:                              # Q = P − p_min 1:  Q̇ = −QΦ (QΦ)ᵀ
        QPhi = cw.v1
        for a in range(F):
            QPhi[a] = Pphi[a] - con.floor * phi[a]
        for a in range(F):
            for b in range(F):
                zr[n * F + a * F + b] = -QPhi[a] * QPhi[b]
        return
    rho = 0.0
    if con.covariance == FORGETTING:                         # bounded-gain forgetting: ρ = λ0 (1 − tr P / tr P(0))
        rho = con.forgetting * (1.0 - trace / (con.eta * F))
    for a in range(F):                                       # Ṗ = −PΦ (PΦ)ᵀ (+ ρ P)   (eq. 3.28)
        for b in range(F):
            zr[n * F + a * F + b] = -Pphi[a] * Pphi[b] + rho * P[a * F + b]


@njit
def _projected(tree, plant, rows, dense, cw, m, cons, con, ints, floats, dofs, kp, kd, zc, zr, tau_ext, nv, f):
    """Aghili §7 (notation of :mod:`core.control.projected`): f∥ = P(b + M u_p), u_p = [J; S_θ]⁺[−J̇q̇; θ̈_d +
    G_D ė_p + G_P e_p] (eq. 45–46); with force control f = f∥ + f⊥ (eq. 51–52), with passive joints
    f = (I + H) f∥ (eq. 55–62), else f = f∥ (eq. 48). The projector here uses a relative tolerance of 1e-9."""
    n = con.n
    M, h = plant.M, plant.b
    P = dense.P
    r = 0
    if m > 0:
        jacobian_svd(rows.J, m, nv, dense)
        for a in range(m):
            if dense.sj[a] > 1e-9 * dense.sj[0]:
                r += 1
    pseudo_inverse(dense, m, nv, r)                          # P = I − J⁺J, J⁺   (eq. 15)
    S2, b2, up = cw.S2, cw.b2, cw.v1
    p2 = m + n                                               # [J; S_θ]ᵀ, columns: the stacked rows
    for a in range(p2):
        for k in range(nv):
            S2[k, a] = 0.0
    for a in range(m):
        for k in range(nv):
            S2[k, a] = rows.J[a, k]
        b2[a] = -rows.gamma[a]
    for i in range(n):                                       # θ̈_d + G_D ė_p + G_P e_p  (e_p = −e)
        S2[dofs[i], m + i] = 1.0
        b2[m + i] = cw.qdd_d[i] - kd[i] * cw.e_dot[i] - kp[i] * cw.e[i]
    svd_columns(S2, nv, p2, cw.V2, cw.s2)
    r2 = 0
    for a in range(p2):                                      # numpy's lstsq cut-off: ε max(rows, cols) σ_max
        if cw.s2[a] > 2.220446049250313e-16 * max(p2, nv) * cw.s2[0]:
            r2 += 1
    pinv_apply(S2, cw.V2, cw.s2, p2, r2, b2, up)             # u_p   (eq. 46)
    w = cw.v2
    for k in range(nv):                                      # f∥ = P (h + M u_p)   (eq. 45)
        t = h[k]
        for j in range(nv):
            t += M[k, j] * up[j]
        w[k] = t
    for k in range(nv):
        t = 0.0
        for j in range(nv):
            t += P[k, j] * w[j]
        f[k] = t
    if con.force_control:
        _force_control(plant, rows, dense, cw, m, cons, con, ints, floats, zc, zr, tau_ext, nv, f)
    elif not con.all_actuated:
        _passive(dense, cw, con, ints, nv, f)


@njit
def _force_control(plant, rows, dense, cw, m, cons, con, ints, floats, zc, zr, tau_ext, nv, f):
    """f += f⊥ = h⊥ + μ(f∥ − h∥ + M C q̇) + u_𝓕 (eq. 51), u_𝓕 = 𝓕_d + G_F e_f + G_I ∫e_f (eq. 52), with
    μ = (I − P) M M_c⁻¹ (eq. 32), M_c = M + PM − MP (eq. 23) and the measured-force loop solved exactly:
    e_f = −(G_I ∫e_f + d)/(1 + G_F), d = (I − P) τ_ext − μ P τ_ext; ż = e_f."""
    M, h, P, Jp = plant.M, plant.b, dense.P, dense.Jpinv
    Mc, mu, T = dense.Mc, cw.N1, cw.N2
    for i in range(nv):                                      # M_c = M + PM − MP, stored transposed for μ below
        for j in range(nv):
            pm = 0.0
            mp = 0.0
            for k in range(nv):
                pm += P[i, k] * M[k, j]
                mp += M[i, k] * P[k, j]
            Mc[j, i] = M[i, j] + pm - mp
    lu_factor(Mc, nv, dense.piv)                             # Mc ᵀ = LU
    for j in range(nv):                                      # X = M M_c⁻¹: M_cᵀ Xᵀ = M (M symmetric)
        for k in range(nv):
            cw.v3[k] = M[k, j]
        lu_apply(Mc, nv, dense.piv, cw.v3, cw.v3)
        for k in range(nv):
            T[j, k] = cw.v3[k]
    for i in range(nv):                                      # μ = (I − P) X
        for j in range(nv):
            t = T[i, j]
            for k in range(nv):
                t -= P[i, k] * T[k, j]
            mu[i, j] = t
    x, y, w, g = cw.v2, cw.v3, cw.v4, dense.x                # scratch vectors
    for k in range(nv):                                      # C q̇ = −J⁺ J̇q̇   (eq. 16)
        t = 0.0
        for a in range(m):
            t -= Jp[k, a] * rows.gamma[a]
        g[k] = t
    lam_d = dense.ra
    for a in range(m):
        lam_d[a] = 0.0
    for c in range(cons.shape[0]):                           # λ_d on the rows of the constrained points
        row = rows.row_of[c]
        if row >= 0 and ints[con.has_desired + c]:
            E = cons[c].basis
            for b in range(cons[c].rows):
                lam_d[row + b] = (E[0, b] * floats[con.desired + 3 * c] + E[1, b] * floats[con.desired + 3 * c + 1]
                                  + E[2, b] * floats[con.desired + 3 * c + 2])
    for k in range(nv):                                      # P τ_ext, then d = Q τ_ext − μ P τ_ext
        t = 0.0
        for j in range(nv):
            t += P[k, j] * tau_ext[j]
        x[k] = t
    gf, gi = con.force_gain, con.force_integral_gain
    zf = dense.y
    for k in range(nv):                                      # zf = Q ∫e_f
        t = zc[k]
        for j in range(nv):
            t -= P[k, j] * zc[j]
        zf[k] = t
    for k in range(nv):
        d = tau_ext[k] - x[k]
        for j in range(nv):
            d -= mu[k, j] * x[j]
        e_f = -(gi * zf[k] + d) / (1.0 + gf)
        zr[k] = e_f
        F_d = 0.0                                            # 𝓕_d = −Jᵀλ_d (our sign)
        for a in range(m):
            F_d -= rows.J[a, k] * lam_d[a]
        w[k] = F_d + gf * e_f + gi * zf[k]                   # u_𝓕
    for k in range(nv):                                      # y = f∥ − P h + M C q̇
        t = f[k]
        for j in range(nv):
            t += -P[k, j] * h[j] + M[k, j] * g[j]
        y[k] = t
    for k in range(nv):                                      # f⊥ = Q h + μ y + u_𝓕;  f = f∥ + f⊥
        t = h[k] + w[k]
        for j in range(nv):
            t += -P[k, j] * h[j] + mu[k, j] * y[j]
        dense.w[k] = t
    for k in range(nv):
        f[k] += dense.w[k]


@njit
def _passive(dense, cw, con, ints, nv, f):
    """Passive joints (eq. 55–62): B the actuated selector, Q = (I − B)(I − P), H = −(I − P) Q⁺ (I − B),
    f = (I + H) f∥, zero on the passive joints."""
    P = dense.P
    act = ints[con.actuated:con.actuated + nv]
    Qm, V = cw.N1, cw.N2
    for i in range(nv):                                      # Qmᵀ (for the SVD of Q): Q[i, j] = (1 − B_i)(δ_ij − P_ij)
        for j in range(nv):
            Qm[j, i] = (0.0 if act[i] else 1.0) * ((1.0 if i == j else 0.0) - P[i, j])
    s = dense.w
    svd_columns(Qm, nv, nv, V, s)                            # Qᵀ = (UΣ) Vᵀ  →  Q⁺ = Σ (u_k/σ_k²) v_kᵀ … as pinv_apply
    r = 0
    for a in range(nv):                                      # numpy's pinv cut-off: 1e-15 σ_max
        if s[a] > 1e-15 * s[0]:
            r += 1
    x, y = cw.v2, cw.v3
    for k in range(nv):                                      # x = (I − B) f∥
        x[k] = 0.0 if act[k] else f[k]
    pinv_apply(Qm, V, s, nv, r, x, y)                        # y = Q⁺ x
    for k in range(nv):                                      # H f∥ = −(I − P) y;  f = f∥ + H f∥
        t = y[k]
        for j in range(nv):
            t -= P[k, j] * y[j]
        f[k] -= t
    for k in range(nv):
        if not act[k]:
            f[k] = 0.0
