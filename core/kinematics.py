"""Forward kinematics of the forest and the configuration-space maps that quaternion joints need (nq ≠ nv).

Compiled kernels (``*_kernel``, see :mod:`core.jit`) do the work on the model's arrays; the public functions
wrap them:

- :func:`forward_kinematics` — link poses in the world and the parent-to-child motion transforms ``X_up``.
- :func:`link_velocities` — spatial velocities of every link, in link coordinates.
- :func:`configuration_derivative` — ``q̇ = G(q) qd`` (quaternion rates ½ q ⊗ (0, ω), thesis §2.2.1).
- :func:`integrate_configuration` — ``q ⊕ v dt`` with the exponential map on each quaternion.
- :func:`normalize_configuration` — renormalize every quaternion (done after every integration stage).
"""
from __future__ import annotations

import numpy as np

from .jit import inline, motion_x, njit, quat_matrix
from .model import BALL, FREE, HINGE, SLIDER, Model
from .spatial import motion_transform, quat_multiply

__all__ = ["joint_transform", "forward_kinematics", "link_velocities", "configuration_derivative",
           "integrate_configuration", "normalize_configuration", "configuration_difference",
           "link_forces_from_world", "fk_kernel", "world_frame", "velocities_kernel", "qdot_kernel", "normalize_kernel",
           "integrate_kernel"]


@inline
def _joint_motion(jt, axis, i, q, qs):
    """The joint's own motion of C relative to J (table in core.model) as scalars: R_J row by row and p_J."""
    j00, j01, j02, j10, j11, j12, j20, j21, j22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    x0, x1, x2 = 0.0, 0.0, 0.0
    if jt == HINGE:                                           # Rodrigues: 1 + sinθ k^ + (1 − cosθ) k^²
        s, c = np.sin(q[qs]), np.cos(q[qs])
        kx, ky, kz = axis[i, 0], axis[i, 1], axis[i, 2]
        C = 1.0 - c
        j00, j01, j02 = c + kx * kx * C, kx * ky * C - kz * s, kx * kz * C + ky * s
        j10, j11, j12 = ky * kx * C + kz * s, c + ky * ky * C, ky * kz * C - kx * s
        j20, j21, j22 = kz * kx * C - ky * s, kz * ky * C + kx * s, c + kz * kz * C
    elif jt == SLIDER:
        x0, x1, x2 = axis[i, 0] * q[qs], axis[i, 1] * q[qs], axis[i, 2] * q[qs]
    elif jt == BALL:
        j00, j01, j02, j10, j11, j12, j20, j21, j22 = quat_matrix(q[qs], q[qs + 1], q[qs + 2], q[qs + 3])
    elif jt == FREE:
        j00, j01, j02, j10, j11, j12, j20, j21, j22 = quat_matrix(q[qs + 3], q[qs + 4], q[qs + 5], q[qs + 6])
        x0, x1, x2 = q[qs], q[qs + 1], q[qs + 2]
    return j00, j01, j02, j10, j11, j12, j20, j21, j22, x0, x1, x2


@njit(inline='always')
def fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL):
    """Per link: ``E[i] = R_PCᵀ``, ``r[i] = p_PC`` (parent → child transform) and the world pose ``R_WL``, ``p_WL``.

    ``R_PC = R_PJ R_J(q)``, ``p_PC = p_PJ + R_PJ p_J(q)``; ``R_WC = R_WP R_PC``, ``p_WC = p_WP + R_WP p_PC``.
    The joint's motion stays in scalars and every array is indexed whole (``E[i, a, b]``), never through a
    per-link view ``E[i]``: a view costs numba two atomic reference counts, which made this loop 2.8x slower."""
    for i in range(parent.shape[0]):
        j00, j01, j02, j10, j11, j12, j20, j21, j22, x0, x1, x2 = _joint_motion(jtype[i], axis, i, q, q_start[i])
        for a in range(3):                                    # E = (R_PJ R_J)ᵀ,  r = p_PJ + R_PJ p_J
            t0, t1, t2 = R_tree[i, a, 0], R_tree[i, a, 1], R_tree[i, a, 2]
            E[i, 0, a] = t0 * j00 + t1 * j10 + t2 * j20
            E[i, 1, a] = t0 * j01 + t1 * j11 + t2 * j21
            E[i, 2, a] = t0 * j02 + t1 * j12 + t2 * j22
            r[i, a] = p_tree[i, a] + t0 * x0 + t1 * x1 + t2 * x2
        lam = parent[i]
        if lam < 0:
            for a in range(3):
                p_WL[i, a] = r[i, a]
                for b in range(3):
                    R_WL[i, a, b] = E[i, b, a]
        else:
            r0, r1, r2 = r[i, 0], r[i, 1], r[i, 2]
            for a in range(3):
                p0, p1, p2 = R_WL[lam, a, 0], R_WL[lam, a, 1], R_WL[lam, a, 2]
                p_WL[i, a] = p_WL[lam, a] + p0 * r0 + p1 * r1 + p2 * r2
                for b in range(3):
                    R_WL[i, a, b] = p0 * E[i, b, 0] + p1 * E[i, b, 1] + p2 * E[i, b, 2]


@njit(inline='always')
def world_frame(S, nv_j, mass, com, inertia_com, R_WL, p_WL, Sw, I):
    """Per link, from its world pose (R, p): the motion subspace about W, s = [R S_ω; R S_v + p × R S_ω], and the
    rigid-body inertia about W, I = [[Ī + m (|c|² 1 − c cᵀ), m c^], [(m c^)ᵀ, m 1]] with c = p + R c_L the world
    centre of mass and Ī = R Ī_c Rᵀ its rotational inertia about the centre of mass (thesis eq. 2.77).

    What the world-coordinate algorithms work from (:mod:`core.aba`, :mod:`core.crba`, :mod:`core.rnea`): s_i moves
    with link i, so ṡ_i = v_i × s_i, and velocities, forces and inertias pass between links without transforms."""
    for i in range(R_WL.shape[0]):
        r00, r01, r02 = R_WL[i, 0, 0], R_WL[i, 0, 1], R_WL[i, 0, 2]
        r10, r11, r12 = R_WL[i, 1, 0], R_WL[i, 1, 1], R_WL[i, 1, 2]
        r20, r21, r22 = R_WL[i, 2, 0], R_WL[i, 2, 1], R_WL[i, 2, 2]
        p0, p1, p2 = p_WL[i, 0], p_WL[i, 1], p_WL[i, 2]
        for k in range(nv_j[i]):
            s0, s1, s2 = S[i, 0, k], S[i, 1, k], S[i, 2, k]
            w0 = r00 * s0 + r01 * s1 + r02 * s2
            w1 = r10 * s0 + r11 * s1 + r12 * s2
            w2 = r20 * s0 + r21 * s1 + r22 * s2
            s3, s4, s5 = S[i, 3, k], S[i, 4, k], S[i, 5, k]
            Sw[i, 0, k], Sw[i, 1, k], Sw[i, 2, k] = w0, w1, w2
            Sw[i, 3, k] = r00 * s3 + r01 * s4 + r02 * s5 + p1 * w2 - p2 * w1
            Sw[i, 4, k] = r10 * s3 + r11 * s4 + r12 * s5 + p2 * w0 - p0 * w2
            Sw[i, 5, k] = r20 * s3 + r21 * s4 + r22 * s5 + p0 * w1 - p1 * w0
        m = mass[i]
        l0, l1, l2 = com[i, 0], com[i, 1], com[i, 2]
        c0 = p0 + r00 * l0 + r01 * l1 + r02 * l2
        c1 = p1 + r10 * l0 + r11 * l1 + r12 * l2
        c2 = p2 + r20 * l0 + r21 * l1 + r22 * l2
        for a in range(3):                                    # Ī = R Ī_c Rᵀ (upper triangle, mirrored)
            ra0, ra1, ra2 = R_WL[i, a, 0], R_WL[i, a, 1], R_WL[i, a, 2]
            t0 = inertia_com[i, 0, 0] * ra0 + inertia_com[i, 0, 1] * ra1 + inertia_com[i, 0, 2] * ra2
            t1 = inertia_com[i, 1, 0] * ra0 + inertia_com[i, 1, 1] * ra1 + inertia_com[i, 1, 2] * ra2
            t2 = inertia_com[i, 2, 0] * ra0 + inertia_com[i, 2, 1] * ra1 + inertia_com[i, 2, 2] * ra2
            for b in range(a, 3):
                v = R_WL[i, b, 0] * t0 + R_WL[i, b, 1] * t1 + R_WL[i, b, 2] * t2
                I[i, a, b] = v
                I[i, b, a] = v
        cc = c0 * c0 + c1 * c1 + c2 * c2                      # + m (|c|² 1 − c cᵀ)
        I[i, 0, 0] += m * (cc - c0 * c0)
        I[i, 1, 1] += m * (cc - c1 * c1)
        I[i, 2, 2] += m * (cc - c2 * c2)
        I[i, 0, 1] -= m * c0 * c1
        I[i, 1, 0] = I[i, 0, 1]
        I[i, 0, 2] -= m * c0 * c2
        I[i, 2, 0] = I[i, 0, 2]
        I[i, 1, 2] -= m * c1 * c2
        I[i, 2, 1] = I[i, 1, 2]
        h0, h1, h2 = m * c0, m * c1, m * c2                   # m c^ and its transpose
        I[i, 0, 3], I[i, 0, 4], I[i, 0, 5] = 0.0, -h2, h1
        I[i, 1, 3], I[i, 1, 4], I[i, 1, 5] = h2, 0.0, -h0
        I[i, 2, 3], I[i, 2, 4], I[i, 2, 5] = -h1, h0, 0.0
        for a in range(3):
            for b in range(3):
                I[i, 3 + b, a] = I[i, a, 3 + b]
                I[i, 3 + a, 3 + b] = m if a == b else 0.0


@njit
def velocities_kernel(parent, S, v_start, nv_j, E, r, qd, v):
    """``v_i = X_i v_λ + S_i q̇_i`` in link coordinates (RNEA's forward pass)."""
    for i in range(parent.shape[0]):
        lam, vs, nv = parent[i], v_start[i], nv_j[i]
        if lam < 0:
            for a in range(6):
                v[i, a] = 0.0
        else:
            motion_x(E, r, i, v, lam, v, i)
        for a in range(6):
            s = 0.0
            for k in range(nv):
                s += S[i, a, k] * qd[vs + k]
            v[i, a] += s


@njit
def qdot_kernel(jtype, q_start, v_start, q, qd, out):
    """``q̇ = G(q) qd``: copies for hinges/sliders, ``½ q ⊗ (0, ω_C)`` for quaternions, ``ṗ = R_JC v_C``."""
    for i in range(jtype.shape[0]):
        qs, vs, jt = q_start[i], v_start[i], jtype[i]
        if jt == HINGE or jt == SLIDER:
            out[qs] = qd[vs]
        elif jt == BALL or jt == FREE:
            o = qs if jt == BALL else qs + 3
            w, x, y, z = q[o], q[o + 1], q[o + 2], q[o + 3]
            a, b, c = qd[vs], qd[vs + 1], qd[vs + 2]
            out[o] = 0.5 * (-x * a - y * b - z * c)
            out[o + 1] = 0.5 * (w * a + y * c - z * b)
            out[o + 2] = 0.5 * (w * b - x * c + z * a)
            out[o + 3] = 0.5 * (w * c + x * b - y * a)
            if jt == FREE:
                r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_matrix(w, x, y, z)
                v0, v1, v2 = qd[vs + 3], qd[vs + 4], qd[vs + 5]
                out[qs] = r00 * v0 + r01 * v1 + r02 * v2
                out[qs + 1] = r10 * v0 + r11 * v1 + r12 * v2
                out[qs + 2] = r20 * v0 + r21 * v1 + r22 * v2


@njit
def integrate_kernel(jtype, q_start, v_start, q, v, h, out):
    """``out ← q ⊕ v h``: adds for hinges and sliders, ``quat ⊗ exp(ω h)`` for quaternions (ω in the child
    frame), and moves a free joint's origin by ``R(quat) v h``; first-order consistent with :func:`qdot_kernel`.
    ``out`` may not be ``q``."""
    for k in range(q.shape[0]):
        out[k] = q[k]
    for i in range(jtype.shape[0]):
        qs, vs, jt = q_start[i], v_start[i], jtype[i]
        if jt == HINGE or jt == SLIDER:
            out[qs] += v[vs] * h
        elif jt == BALL or jt == FREE:
            o = qs if jt == BALL else qs + 3
            w, x, y, z = q[o], q[o + 1], q[o + 2], q[o + 3]
            if jt == FREE:
                r00, r01, r02, r10, r11, r12, r20, r21, r22 = quat_matrix(w, x, y, z)
                v0, v1, v2 = v[vs + 3], v[vs + 4], v[vs + 5]
                out[qs] += (r00 * v0 + r01 * v1 + r02 * v2) * h
                out[qs + 1] += (r10 * v0 + r11 * v1 + r12 * v2) * h
                out[qs + 2] += (r20 * v0 + r21 * v1 + r22 * v2) * h
            a0, a1, a2 = v[vs] * h, v[vs + 1] * h, v[vs + 2] * h        # exp(θ/2 n) = (cos θ/2, sin θ/2 n)
            angle = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
            if angle < 1e-12:
                ew, s = 1.0, 0.5                                        # sin(θ/2)/θ → 1/2
            else:
                ew, s = np.cos(0.5 * angle), np.sin(0.5 * angle) / angle
            ex, ey, ez = a0 * s, a1 * s, a2 * s
            out[o] = w * ew - x * ex - y * ey - z * ez                  # q ⊗ e
            out[o + 1] = w * ex + x * ew + y * ez - z * ey
            out[o + 2] = w * ey - x * ez + y * ew + z * ex
            out[o + 3] = w * ez + x * ey - y * ex + z * ew


@njit
def normalize_kernel(quat_starts, q):
    for s in quat_starts:
        n = np.sqrt(q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2)
        for k in range(4):
            q[s + k] /= n


def _E_r(model: Model, q: np.ndarray):
    N = model.n_links
    E, r = np.empty((N, 3, 3)), np.empty((N, 3))
    R_WL, p_WL = np.empty((N, 3, 3)), np.empty((N, 3))
    ka = model.tree
    fk_kernel(ka.parent, ka.joint_type, ka.axis, ka.R_tree, ka.p_tree, ka.q_start,
              np.ascontiguousarray(q, dtype=float), E, r, R_WL, p_WL)
    return E, r, R_WL, p_WL


def joint_transform(model: Model, i: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R_PC, p_PC)``: pose of link i's frame C in its parent's frame P at configuration q."""
    E, r, _, _ = _E_r(model, q)
    return E[i].T.copy(), r[i].copy()


def forward_kinematics(model: Model, q: np.ndarray):
    """Link poses and parent-to-child transforms at configuration q.

    Returns ``(R_WL, p_WL, X_up)``: rotations (N, 3, 3) and origins (N, 3) of every link frame L in the world W,
    and ``X_up`` (N, 6, 6) with ``X_up[i] = X_{i,parent(i)}`` (the world for a root link), the motion transform
    from parent to link coordinates.
    """
    E, r, R_WL, p_WL = _E_r(model, q)
    X_up = np.array([motion_transform(E[i].T, r[i]) for i in range(model.n_links)]).reshape(model.n_links, 6, 6)
    return R_WL, p_WL, X_up


def link_velocities(model: Model, X_up: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Spatial velocity ``v_i = X_up[i] v_parent + S_i qd_i`` of every link, in its own coordinates (N, 6)."""
    N = model.n_links
    v = np.zeros((N, 6))
    for i in range(N):
        vs, nv = model.v_start[i], model.nv_j[i]
        vJ = model.S[i, :, :nv] @ qd[vs:vs + nv]
        lam = model.parent[i]
        v[i] = vJ if lam < 0 else X_up[i] @ v[lam] + vJ
    return v


def configuration_derivative(model: Model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """``q̇`` (nq) from ``qd`` (nv): identity for hinges and sliders; ``½ q ⊗ (0, ω_C)`` for quaternions and
    ``ṗ = R_JC v_C`` for the translation of a free joint."""
    out = np.zeros(model.nq)
    ka = model.tree
    qdot_kernel(ka.joint_type, ka.q_start, ka.v_start, np.ascontiguousarray(q, dtype=float),
                np.ascontiguousarray(qd, dtype=float), out)
    return out


def integrate_configuration(model: Model, q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """``q ⊕ v dt``: adds for hinges and sliders, ``quat ⊗ exp(ω dt)`` for quaternions (body-frame ω), and moves
    a free joint's origin by ``R v dt``. First-order consistent with :func:`configuration_derivative`."""
    out = np.empty(model.nq)
    t = model.tree
    integrate_kernel(t.joint_type, t.q_start, t.v_start, np.ascontiguousarray(q, dtype=float),
                     np.ascontiguousarray(v, dtype=float), float(dt), out)
    return out


def configuration_difference(model: Model, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """``v`` (nv) such that ``integrate_configuration(q0, v, 1) ≈ q1``: the inverse of the retraction above
    (exact for hinges, sliders and quaternions; for a free joint's translation, ``R(q0)^T (p1 - p0)``)."""
    from .spatial import quat_to_rotation
    v = np.zeros(model.nv)
    for i in range(model.n_links):
        qs, vs, jt = model.q_start[i], model.v_start[i], model.joint_type[i]
        if jt == HINGE or jt == SLIDER:
            v[vs] = q1[qs] - q0[qs]
        elif jt == BALL:
            v[vs:vs + 3] = _quat_log(quat_multiply(_conj(q0[qs:qs + 4]), q1[qs:qs + 4]))
        elif jt == FREE:
            v[vs + 3:vs + 6] = quat_to_rotation(q0[qs + 3:qs + 7]).T @ (q1[qs:qs + 3] - q0[qs:qs + 3])
            v[vs:vs + 3] = _quat_log(quat_multiply(_conj(q0[qs + 3:qs + 7]), q1[qs + 3:qs + 7]))
    return v


def normalize_configuration(model: Model, q: np.ndarray) -> np.ndarray:
    """Renormalize every quaternion of q in place and return q."""
    if model.quat_starts.size:
        normalize_kernel(model.tree.quat_starts, q)
    return q


def _conj(qq):
    return np.array([qq[0], -qq[1], -qq[2], -qq[3]])


def _quat_log(qq):
    """Rotation vector of a unit quaternion (shortest rotation)."""
    if qq[0] < 0:
        qq = -qq
    s = np.sqrt(qq[1:] @ qq[1:])
    if s < 1e-12:
        return 2.0 * qq[1:]
    return 2.0 * np.arctan2(s, qq[0]) * qq[1:] / s


@njit
def link_forces_kernel(R_WL, p_WL, f_ext, out):
    """World forces about the world origin ``[n_O; f]`` → each link's coordinates about its origin:
    ``[Rᵀ (n_O − p × f); Rᵀ f]``."""
    for i in range(f_ext.shape[0]):
        p = p_WL[i]
        m0 = f_ext[i, 0] - (p[1] * f_ext[i, 5] - p[2] * f_ext[i, 4])
        m1 = f_ext[i, 1] - (p[2] * f_ext[i, 3] - p[0] * f_ext[i, 5])
        m2 = f_ext[i, 2] - (p[0] * f_ext[i, 4] - p[1] * f_ext[i, 3])
        for a in range(3):
            out[i, a] = R_WL[i, 0, a] * m0 + R_WL[i, 1, a] * m1 + R_WL[i, 2, a] * m2
            out[i, 3 + a] = R_WL[i, 0, a] * f_ext[i, 3] + R_WL[i, 1, a] * f_ext[i, 4] + R_WL[i, 2, a] * f_ext[i, 5]


def link_forces_from_world(R_WL: np.ndarray, p_WL: np.ndarray, f_ext: np.ndarray | None) -> np.ndarray | None:
    """Per-link external spatial forces given in world coordinates about the world origin, ``[n_O; f]`` (N, 6),
    expressed in each link's own coordinates about its origin: ``[R^T (n_O - p × f); R^T f]``."""
    if f_ext is None:
        return None
    out = np.empty((R_WL.shape[0], 6))
    link_forces_kernel(R_WL, p_WL, np.ascontiguousarray(f_ext, dtype=float), out)
    return out


_NO_FORCES = np.zeros((0, 6))


def external_forces(model: Model, f_ext) -> tuple[np.ndarray, bool]:
    """``(forces (N, 6), use)`` for the dynamics kernels: world spatial forces about the world origin per link,
    as given (None: none)."""
    if f_ext is None:
        return _NO_FORCES, False
    return np.ascontiguousarray(f_ext, dtype=float).reshape(model.n_links, 6), True
