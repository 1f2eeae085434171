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

from .jit import inline, motion_x, njit, quat_rot
from .model import BALL, FREE, HINGE, SLIDER, Model
from .spatial import motion_transform, quat_multiply

__all__ = ["joint_transform", "forward_kinematics", "link_velocities", "configuration_derivative",
           "integrate_configuration", "normalize_configuration", "configuration_difference",
           "link_forces_from_world", "fk_kernel", "velocities_kernel", "qdot_kernel", "normalize_kernel",
           "subspace_times", "kinematics_with_forces", "integrate_kernel"]


@inline
def _joint_motion(jt, axis, q, qs, Rj, pj):
    """Rj, pj ← the joint's own motion of C relative to J (table in core.model)."""
    for a in range(3):
        pj[a] = 0.0
        for b in range(3):
            Rj[a, b] = 1.0 if a == b else 0.0
    if jt == HINGE:                                           # Rodrigues: 1 + sinθ k^ + (1 − cosθ) k^²
        s, c = np.sin(q[qs]), np.cos(q[qs])
        kx, ky, kz = axis[0], axis[1], axis[2]
        C = 1.0 - c
        Rj[0, 0] = c + kx * kx * C
        Rj[0, 1] = kx * ky * C - kz * s
        Rj[0, 2] = kx * kz * C + ky * s
        Rj[1, 0] = ky * kx * C + kz * s
        Rj[1, 1] = c + ky * ky * C
        Rj[1, 2] = ky * kz * C - kx * s
        Rj[2, 0] = kz * kx * C - ky * s
        Rj[2, 1] = kz * ky * C + kx * s
        Rj[2, 2] = c + kz * kz * C
    elif jt == SLIDER:
        for a in range(3):
            pj[a] = axis[a] * q[qs]
    elif jt == BALL:
        quat_rot(q[qs], q[qs + 1], q[qs + 2], q[qs + 3], Rj)
    elif jt == FREE:
        quat_rot(q[qs + 3], q[qs + 4], q[qs + 5], q[qs + 6], Rj)
        for a in range(3):
            pj[a] = q[qs + a]


@njit
def fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL):
    """Per link: ``E[i] = R_PCᵀ``, ``r[i] = p_PC`` (parent → child transform) and the world pose ``R_WL``, ``p_WL``.

    ``R_PC = R_PJ R_J(q)``, ``p_PC = p_PJ + R_PJ p_J(q)``; ``R_WC = R_WP R_PC``, ``p_WC = p_WP + R_WP p_PC``.
    A hinge, the common joint, is done in scalars (Rodrigues, R_J = 1 + sinθ k^ + (1 − cosθ) k^²); the other
    joints' motion R_J, p_J is held in link i's world-pose rows until they are written."""
    for i in range(parent.shape[0]):
        Rt, pt, Ei = R_tree[i], p_tree[i], E[i]
        if jtype[i] == HINGE:
            s, c = np.sin(q[q_start[i]]), np.cos(q[q_start[i]])
            kx, ky, kz = axis[i, 0], axis[i, 1], axis[i, 2]
            C = 1.0 - c
            j00, j01, j02 = c + kx * kx * C, kx * ky * C - kz * s, kx * kz * C + ky * s
            j10, j11, j12 = ky * kx * C + kz * s, c + ky * ky * C, ky * kz * C - kx * s
            j20, j21, j22 = kz * kx * C - ky * s, kz * ky * C + kx * s, c + kz * kz * C
            for a in range(3):                                # E = (R_PJ R_J)ᵀ,  r = p_PJ
                t0, t1, t2 = Rt[a, 0], Rt[a, 1], Rt[a, 2]
                Ei[0, a] = t0 * j00 + t1 * j10 + t2 * j20
                Ei[1, a] = t0 * j01 + t1 * j11 + t2 * j21
                Ei[2, a] = t0 * j02 + t1 * j12 + t2 * j22
                r[i, a] = pt[a]
        else:
            Rj, pj = R_WL[i], p_WL[i]
            _joint_motion(jtype[i], axis[i], q, q_start[i], Rj, pj)
            for a in range(3):
                r[i, a] = pt[a] + Rt[a, 0] * pj[0] + Rt[a, 1] * pj[1] + Rt[a, 2] * pj[2]
                for b in range(3):
                    Ei[b, a] = Rt[a, 0] * Rj[0, b] + Rt[a, 1] * Rj[1, b] + Rt[a, 2] * Rj[2, b]
        lam = parent[i]
        Ri, pi = R_WL[i], p_WL[i]
        if lam < 0:
            for a in range(3):
                pi[a] = r[i, a]
                for b in range(3):
                    Ri[a, b] = Ei[b, a]
        else:
            Rp, pp = R_WL[lam], p_WL[lam]
            r0, r1, r2 = r[i, 0], r[i, 1], r[i, 2]
            for a in range(3):
                p0, p1, p2 = Rp[a, 0], Rp[a, 1], Rp[a, 2]
                pi[a] = pp[a] + p0 * r0 + p1 * r1 + p2 * r2
                Ri[a, 0] = p0 * Ei[0, 0] + p1 * Ei[0, 1] + p2 * Ei[0, 2]
                Ri[a, 1] = p0 * Ei[1, 0] + p1 * Ei[1, 1] + p2 * Ei[1, 2]
                Ri[a, 2] = p0 * Ei[2, 0] + p1 * Ei[2, 1] + p2 * Ei[2, 2]


@inline
def subspace_times(S, i, nv, x, offset, out):
    """out ← S_i x[offset:offset+nv] (6,), a joint's spatial velocity or acceleration from its coordinates."""
    for c in range(6):
        s = 0.0
        for k in range(nv):
            s += S[i, c, k] * x[offset + k]
        out[c] = s


@njit
def kinematics_with_forces(parent, jtype, axis, R_tree, p_tree, q_start, q, f_ext, use_f_ext):
    """The common prologue of the dynamics kernels: parent → link transforms ``E``, ``r``, world poses, and the
    external forces in link coordinates ``fx`` (zero unless ``use_f_ext``)."""
    N = parent.shape[0]
    E, r = np.empty((N, 3, 3)), np.empty((N, 3))
    R_WL, p_WL = np.empty((N, 3, 3)), np.empty((N, 3))
    fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL)
    fx = np.zeros((N, 6))
    if use_f_ext:
        link_forces_kernel(R_WL, p_WL, f_ext, fx)
    return E, r, R_WL, p_WL, fx


@njit
def velocities_kernel(parent, S, v_start, nv_j, E, r, qd, v):
    """``v_i = X_i v_λ + S_i q̇_i`` in link coordinates (RNEA's forward pass)."""
    tmp = np.empty(6)
    for i in range(parent.shape[0]):
        lam = parent[i]
        if lam < 0:
            for a in range(6):
                tmp[a] = 0.0
        else:
            motion_x(E[i], r[i], v[lam], tmp)
        subspace_times(S, i, nv_j[i], qd, v_start[i], v[i])
        for a in range(6):
            v[i, a] += tmp[a]


@njit
def qdot_kernel(jtype, q_start, v_start, q, qd, out):
    """``q̇ = G(q) qd``: copies for hinges/sliders, ``½ q ⊗ (0, ω_C)`` for quaternions, ``ṗ = R_JC v_C``."""
    R = np.empty((3, 3))
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
                quat_rot(w, x, y, z, R)
                for k in range(3):
                    out[qs + k] = R[k, 0] * qd[vs + 3] + R[k, 1] * qd[vs + 4] + R[k, 2] * qd[vs + 5]


@njit
def integrate_kernel(jtype, q_start, v_start, q, v, h, out):
    """``out ← q ⊕ v h``: adds for hinges and sliders, ``quat ⊗ exp(ω h)`` for quaternions (ω in the child
    frame), and moves a free joint's origin by ``R(quat) v h``; first-order consistent with :func:`qdot_kernel`.
    ``out`` may not be ``q``."""
    R = np.empty((3, 3))
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
                quat_rot(w, x, y, z, R)
                for a in range(3):
                    out[qs + a] += (R[a, 0] * v[vs + 3] + R[a, 1] * v[vs + 4] + R[a, 2] * v[vs + 5]) * h
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
