"""Forward kinematics of the forest and the configuration-space maps that quaternion joints need (nq ≠ nv).

- :func:`forward_kinematics` — link poses in the world and the parent-to-child motion transforms ``X_up``.
- :func:`link_velocities` — spatial velocities of every link, in link coordinates.
- :func:`configuration_derivative` — ``q̇ = G(q) qd`` (quaternion rates ½ q ⊗ (0, ω), thesis §2.2.1).
- :func:`integrate_configuration` — ``q ⊕ v dt`` with the exponential map on each quaternion.
- :func:`normalize_configuration` — renormalize every quaternion (done after every integration stage).
"""
from __future__ import annotations

import numpy as np

from .model import BALL, FREE, HINGE, SLIDER, Model
from .spatial import motion_transform, quat_exp, quat_multiply, quat_to_rotation, rotation_about_axis

__all__ = ["joint_transform", "forward_kinematics", "link_velocities", "configuration_derivative",
           "integrate_configuration", "normalize_configuration", "configuration_difference",
           "link_forces_from_world"]


def joint_transform(model: Model, i: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(R_PC, p_PC)``: pose of link i's frame C in its parent's frame P at configuration q."""
    qi = q[model.q_start[i]:model.q_start[i] + model.nq_j[i]]
    jt = model.joint_type[i]
    R_PJ, p_PJ = model.R_tree[i], model.p_tree[i]
    if jt == HINGE:
        return R_PJ @ rotation_about_axis(model.axis[i], qi[0]), p_PJ
    if jt == SLIDER:
        return R_PJ, p_PJ + R_PJ @ (model.axis[i] * qi[0])
    if jt == BALL:
        return R_PJ @ quat_to_rotation(qi), p_PJ
    if jt == FREE:
        return R_PJ @ quat_to_rotation(qi[3:7]), p_PJ + R_PJ @ qi[0:3]
    return R_PJ, p_PJ


def forward_kinematics(model: Model, q: np.ndarray):
    """Link poses and parent-to-child transforms at configuration q.

    Returns ``(R_WL, p_WL, X_up)``: rotations (N, 3, 3) and origins (N, 3) of every link frame L in the world W,
    and ``X_up`` (N, 6, 6) with ``X_up[i] = X_{i,parent(i)}`` (the world for a root link), the motion transform
    from parent to link coordinates.
    """
    N = model.n_links
    R_WL = np.empty((N, 3, 3))
    p_WL = np.empty((N, 3))
    X_up = np.empty((N, 6, 6))
    for i in range(N):
        R_PC, p_PC = joint_transform(model, i, q)
        X_up[i] = motion_transform(R_PC, p_PC)
        lam = model.parent[i]
        if lam < 0:
            R_WL[i], p_WL[i] = R_PC, p_PC
        else:
            R_WL[i] = R_WL[lam] @ R_PC
            p_WL[i] = p_WL[lam] + R_WL[lam] @ p_PC
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
    qdot = np.zeros(model.nq)
    for i in range(model.n_links):
        qs, vs, jt = model.q_start[i], model.v_start[i], model.joint_type[i]
        if jt == HINGE or jt == SLIDER:
            qdot[qs] = qd[vs]
        elif jt == BALL:
            qdot[qs:qs + 4] = 0.5 * quat_multiply(q[qs:qs + 4], np.array([0.0, qd[vs], qd[vs + 1], qd[vs + 2]]))
        elif jt == FREE:
            quat = q[qs + 3:qs + 7]
            qdot[qs:qs + 3] = quat_to_rotation(quat) @ qd[vs + 3:vs + 6]
            qdot[qs + 3:qs + 7] = 0.5 * quat_multiply(quat, np.array([0.0, qd[vs], qd[vs + 1], qd[vs + 2]]))
    return qdot


def integrate_configuration(model: Model, q: np.ndarray, v: np.ndarray, dt: float) -> np.ndarray:
    """``q ⊕ v dt``: adds for hinges and sliders, ``quat ⊗ exp(ω dt)`` for quaternions (body-frame ω), and moves
    a free joint's origin by ``R v dt``. First-order consistent with :func:`configuration_derivative`."""
    out = q.copy()
    for i in range(model.n_links):
        qs, vs, jt = model.q_start[i], model.v_start[i], model.joint_type[i]
        if jt == HINGE or jt == SLIDER:
            out[qs] += v[vs] * dt
        elif jt == BALL:
            out[qs:qs + 4] = quat_multiply(q[qs:qs + 4], quat_exp(v[vs:vs + 3] * dt))
        elif jt == FREE:
            quat = q[qs + 3:qs + 7]
            out[qs:qs + 3] += quat_to_rotation(quat) @ v[vs + 3:vs + 6] * dt
            out[qs + 3:qs + 7] = quat_multiply(quat, quat_exp(v[vs:vs + 3] * dt))
    return out


def configuration_difference(model: Model, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """``v`` (nv) such that ``integrate_configuration(q0, v, 1) ≈ q1``: the inverse of the retraction above
    (exact for hinges, sliders and quaternions; for a free joint's translation, ``R(q0)^T (p1 - p0)``)."""
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
    for s in model.quat_starts:
        q[s:s + 4] /= np.sqrt(q[s:s + 4] @ q[s:s + 4])
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


def link_forces_from_world(R_WL: np.ndarray, p_WL: np.ndarray, f_ext: np.ndarray | None) -> np.ndarray | None:
    """Per-link external spatial forces given in world coordinates about the world origin, ``[n_O; f]`` (N, 6),
    expressed in each link's own coordinates about its origin: ``[R^T (n_O - p × f); R^T f]``."""
    if f_ext is None:
        return None
    f_ext = np.asarray(f_ext, dtype=float)
    out = np.empty_like(f_ext)
    for i in range(f_ext.shape[0]):
        n, f = f_ext[i, :3], f_ext[i, 3:]
        out[i, :3] = R_WL[i].T @ (n - np.cross(p_WL[i], f))
        out[i, 3:] = R_WL[i].T @ f
    return out
