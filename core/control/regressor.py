"""The inverse dynamics as a linear function of the links' inertial parameters, for any tree (thesis eq. 3.17;
Slotine & Li's regressor Y built by a recursion instead of symbolic manipulation).

Notation (RBDA; spatial vectors [angular; linear], link coordinates): link i with parent λ(i), ``X_i`` the
parent → link motion transform, ``S_i`` the motion subspace, ``v_i`` the link velocity from q̇. Each link's
spatial inertia about its own origin is linear in its ten inertial parameters

    θ_i = (m, h_x, h_y, h_z, I_xx, I_yy, I_zz, I_xy, I_xz, I_yz)     h = m c, Ī the rotational inertia about the
                                                                      link origin (not the centre of mass)
    I(θ_i) m = K(m) θ_i                                              K(m) is 6 x 10, for any motion vector m.

Slotine–Li's reference torque ``τ_r = M(q) q̈_r + C(q, q̇) q̇_r + g(q)`` (eq. 3.6) needs a C with Ṁ − 2C skew
(the property the Lyapunov proof rests on). With link Jacobians J_i (v_i = J_i q̇) and the body-level Coriolis
matrix ``B(v) = ½ [(v×*) I + I (v×) + (I v)×̄]`` (skew, and B(v) v = v ×* I v), ``C q̇_r = Σ J_iᵀ (I J̇_i q̇_r +
B(v_i) J_i q̇_r)`` is one such C; it is computed by a Newton–Euler recursion with two velocities::

    v_i  = X_i v_λ  + S_i q̇_i                  v_r,i = X_i v_r,λ + S_i q̇_r,i
    a_r,i = X_i a_r,λ + S_i q̈_r,i − (S_i q̇_i) × (X_i v_r,λ)           (a_r,0 = [0; −g], gravity as base acceleration)
    f_i  = I a_r,i + ½ [v_i ×* I v_r,i + I (v_i × v_r,i) + v_r,i ×* I v_i]
    τ_i  = S_iᵀ (f_i + Σ_children X_cᵀ f_c)

With q̇_r = q̇ and q̈_r = q̈ this is the ordinary RNEA. Because every f_i is linear in θ_i, the same recursion
applied to the 6 x 10 matrices ``K_i`` gives ``Y`` (nv x 10N) with ``Y θ = τ_r``.
"""
from __future__ import annotations

import numpy as np

from ..jit import cross_force, cross_motion, force_xt, motion_x, njit
from ..kinematics import fk_kernel, forward_kinematics
from ..model import Model
from ..spatial import crf, crm

__all__ = ["inertial_parameters", "parameters_to_inertia", "slotine_li_torque", "regressor", "regressor_reference",
           "coriolis_matrix", "regressor_kernel", "PARAMETER_NAMES"]

PARAMETER_NAMES = ("m", "hx", "hy", "hz", "Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")


def inertial_parameters(model: Model) -> np.ndarray:
    """θ (10N,): the ten inertial parameters of every link, in link order (see the module docstring)."""
    out = np.zeros((model.n_links, 10))
    for i, I in enumerate(model.inertia):
        Ibar = I[:3, :3]
        out[i] = (I[3, 3], I[2, 4], I[0, 5], I[1, 3],
                  Ibar[0, 0], Ibar[1, 1], Ibar[2, 2], Ibar[0, 1], Ibar[0, 2], Ibar[1, 2])
    return out.reshape(-1)


def parameters_to_inertia(theta_i: np.ndarray) -> np.ndarray:
    """The 6 x 6 spatial inertia about the link origin of one link's ten parameters."""
    m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz = theta_i
    H = np.array([[0.0, -hz, hy], [hz, 0.0, -hx], [-hy, hx, 0.0]])      # h^ = m c^
    I = np.zeros((6, 6))
    I[:3, :3] = [[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]]
    I[:3, 3:] = H
    I[3:, :3] = H.T
    I[3:, 3:] = m * np.eye(3)
    return I


def _K(m: np.ndarray) -> np.ndarray:
    """K(m) (6 x 10) with I(θ) m = K(m) θ: angular part Ī ω + h × u, linear part ω × h + m u, for m = [ω; u]."""
    w0, w1, w2, u0, u1, u2 = m
    return np.array([
        [0.0, 0.0, u2, -u1, w0, 0.0, 0.0, w1, w2, 0.0],
        [0.0, -u2, 0.0, u0, 0.0, w1, 0.0, w0, 0.0, w2],
        [0.0, u1, -u0, 0.0, 0.0, 0.0, w2, 0.0, w0, w1],
        [u0, 0.0, -w2, w1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [u1, w2, 0.0, -w0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [u2, -w1, w0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])


def _forward(model: Model, q, qd, qdr, qddr, gravity):
    """The forward pass: X_up, v_i, v_r,i, a_r,i (N x 6 each)."""
    N = model.n_links
    _, _, X_up = forward_kinematics(model, q)
    g = model.gravity if gravity is None else np.asarray(gravity, dtype=float)
    a0 = np.concatenate([np.zeros(3), -g])
    v, vr, ar = np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((N, 6))
    for i in range(N):
        vs, nv, lam = model.v_start[i], model.nv_j[i], model.parent[i]
        S = model.S[i, :, :nv]
        vJ = S @ qd[vs:vs + nv]
        Xvr = X_up[i] @ vr[lam] if lam >= 0 else np.zeros(6)
        v[i] = (X_up[i] @ v[lam] if lam >= 0 else 0.0) + vJ               # v_i = X v_λ + S q̇_i
        vr[i] = Xvr + S @ qdr[vs:vs + nv]                                  # v_r,i = X v_r,λ + S q̇_r,i
        ar[i] = (X_up[i] @ (ar[lam] if lam >= 0 else a0) + S @ qddr[vs:vs + nv]
                 - crm(vJ) @ Xvr)                                          # a_r,i = X a_r,λ + S q̈_r − S q̇ × X v_r,λ
    return X_up, v, vr, ar


def slotine_li_torque(model: Model, q: np.ndarray, qd: np.ndarray, qdr: np.ndarray, qddr: np.ndarray,
                      gravity: np.ndarray | None = None) -> np.ndarray:
    """``τ_r = M(q) q̈_r + C(q, q̇) q̇_r + g(q)`` (nv,) with the skew-consistent C of the module docstring.
    ``gravity`` defaults to the model's; pass zeros to leave gravity out (it is then an external force)."""
    X_up, v, vr, ar = _forward(model, q, qd, qdr, qddr, gravity)
    N = model.n_links
    f = np.zeros((N, 6))
    for i in range(N):
        I = model.inertia[i]
        f[i] = I @ ar[i] + 0.5 * (crf(v[i]) @ (I @ vr[i]) + I @ (crm(v[i]) @ vr[i]) + crf(vr[i]) @ (I @ v[i]))
    tau = np.zeros(model.nv)
    for i in range(N - 1, -1, -1):                                         # τ_i = S_iᵀ f_i;  f_λ += X_iᵀ f_i
        vs, nv, lam = model.v_start[i], model.nv_j[i], model.parent[i]
        tau[vs:vs + nv] = model.S[i, :, :nv].T @ f[i]
        if lam >= 0:
            f[lam] += X_up[i].T @ f[i]
    return tau


@njit
def _K_into(m, out, scale):
    """out += scale · K(m) (6 x 10), the matrix of I(θ) m = K(m) θ (see _K)."""
    w0, w1, w2, u0, u1, u2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0, 2] += scale * u2
    out[0, 3] -= scale * u1
    out[0, 4] += scale * w0
    out[0, 7] += scale * w1
    out[0, 8] += scale * w2
    out[1, 1] -= scale * u2
    out[1, 3] += scale * u0
    out[1, 5] += scale * w1
    out[1, 7] += scale * w0
    out[1, 9] += scale * w2
    out[2, 1] += scale * u1
    out[2, 2] -= scale * u0
    out[2, 6] += scale * w2
    out[2, 8] += scale * w0
    out[2, 9] += scale * w1
    out[3, 0] += scale * u0
    out[3, 2] -= scale * w2
    out[3, 3] += scale * w1
    out[4, 0] += scale * u1
    out[4, 1] += scale * w2
    out[4, 3] -= scale * w0
    out[5, 0] += scale * u2
    out[5, 1] -= scale * w1
    out[5, 2] += scale * w0


@njit
def regressor_kernel(parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, gravity, q, qd, qdr, qddr, Y):
    """Y ← the regressor of the module docstring (Y zeroed by the caller, nv x 10N)."""
    N = parent.shape[0]
    E, r = np.empty((N, 3, 3)), np.empty((N, 3))
    R_WL, p_WL = np.empty((N, 3, 3)), np.empty((N, 3))
    fk_kernel(parent, jtype, axis, R_tree, p_tree, q_start, q, E, r, R_WL, p_WL)
    v, vr, ar = np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((N, 6))
    w6 = np.zeros((6, 6))                                    # rows: a_0, S q̇_i, X v_r,λ, scratch, col, out
    A0, VJ, XVR, TMP, COL, OUT = 0, 1, 2, 3, 4, 5
    w6[A0, 3], w6[A0, 4], w6[A0, 5] = -gravity[0], -gravity[1], -gravity[2]
    K, Kv, Kvr, F = np.empty((6, 10)), np.empty((6, 10)), np.empty((6, 10)), np.empty((6, 10))
    for i in range(N):                                       # forward pass
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for c in range(6):
            s1, s2, s3 = 0.0, 0.0, 0.0
            for k in range(nv):
                s1 += S[i, c, k] * qd[vs + k]
                s2 += S[i, c, k] * qdr[vs + k]
                s3 += S[i, c, k] * qddr[vs + k]
            w6[VJ, c], vr[i, c], ar[i, c] = s1, s2, s3
        if lam < 0:
            motion_x(E, r, i, w6, A0, w6, TMP)
            for c in range(6):
                w6[XVR, c] = 0.0
                v[i, c] = w6[VJ, c]
                ar[i, c] += w6[TMP, c]
        else:
            motion_x(E, r, i, vr, lam, w6, XVR)
            motion_x(E, r, i, v, lam, w6, TMP)
            for c in range(6):
                v[i, c] = w6[TMP, c] + w6[VJ, c]             # v_i = X v_λ + S q̇_i
                vr[i, c] += w6[XVR, c]                       # v_r,i = X v_r,λ + S q̇_r,i
            motion_x(E, r, i, ar, lam, w6, TMP)
            for c in range(6):
                ar[i, c] += w6[TMP, c]
        cross_motion(w6, VJ, w6, XVR, w6, TMP)               # a_r,i = X a_r,λ + S q̈_r,i − S q̇_i × X v_r,λ
        for c in range(6):
            ar[i, c] -= w6[TMP, c]
    for i in range(N):                                       # K_i, then walk to the root
        K[:, :] = 0.0
        Kv[:, :] = 0.0
        Kvr[:, :] = 0.0
        _K_into(ar[i], K, 1.0)                               # K(a_r)
        cross_motion(v, i, vr, i, w6, TMP)
        _K_into(w6[TMP], K, 0.5)                             # + ½ K(v × v_r)
        _K_into(v[i], Kv, 1.0)
        _K_into(vr[i], Kvr, 1.0)
        for j in range(10):                                  # + ½ [v ×* K(v_r) + v_r ×* K(v)]
            for c in range(6):
                w6[COL, c] = Kvr[c, j]
            cross_force(v, i, w6, COL, w6, OUT)
            for c in range(6):
                K[c, j] += 0.5 * w6[OUT, c]
                w6[COL, c] = Kv[c, j]
            cross_force(vr, i, w6, COL, w6, OUT)
            for c in range(6):
                K[c, j] += 0.5 * w6[OUT, c]
        F[:, :] = K
        j = i
        while j >= 0:
            vs, nv = v_start[j], nv_j[j]
            for k in range(nv):                              # Y[j-rows, i-cols] = S_jᵀ F
                for p in range(10):
                    s = 0.0
                    for c in range(6):
                        s += S[j, c, k] * F[c, p]
                    Y[vs + k, 10 * i + p] = s
            if parent[j] >= 0:
                for p in range(10):                          # F ← X_jᵀ F
                    for c in range(6):
                        w6[COL, c] = F[c, p]
                    force_xt(E, r, j, w6, COL, w6, OUT)
                    for c in range(6):
                        F[c, p] = w6[OUT, c]
            j = parent[j]


def regressor(model: Model, q: np.ndarray, qd: np.ndarray, qdr: np.ndarray, qddr: np.ndarray,
              gravity: np.ndarray | None = None) -> np.ndarray:
    """``Y(q, q̇, q̇_r, q̈_r)`` (nv x 10N) with ``Y θ = slotine_li_torque(q, q̇, q̇_r, q̈_r)`` for the parameters θ
    of :func:`inertial_parameters` (eq. 3.17), by the recursion of the module docstring (compiled). Column block
    i belongs to link i; it is non-zero only in the rows of link i's joint and its ancestors'."""
    g = model.gravity if gravity is None else np.asarray(gravity, dtype=float)
    Y = np.zeros((model.nv, 10 * model.n_links))
    f = lambda x: np.ascontiguousarray(x, dtype=float)       # noqa: E731
    ka = model.tree
    regressor_kernel(ka.parent, ka.joint_type, ka.axis, ka.R_tree, ka.p_tree, ka.S, ka.q_start, ka.v_start,
                     ka.nv_j, f(g), f(q), f(qd), f(qdr), f(qddr), Y)
    return Y


def regressor_reference(model: Model, q: np.ndarray, qd: np.ndarray, qdr: np.ndarray, qddr: np.ndarray,
                        gravity: np.ndarray | None = None) -> np.ndarray:
    """The same Y in plain NumPy, one 6 x 10 matrix product at a time (the readable version; tests compare)."""
    X_up, v, vr, ar = _forward(model, q, qd, qdr, qddr, gravity)
    N = model.n_links
    Y = np.zeros((model.nv, 10 * N))
    for i in range(N):
        Ki = _K(ar[i]) + 0.5 * (crf(v[i]) @ _K(vr[i]) + _K(crm(v[i]) @ vr[i]) + crf(vr[i]) @ _K(v[i]))
        cols = slice(10 * i, 10 * i + 10)
        j = i
        while j >= 0:                                                      # walk to the root: Y_ji = S_jᵀ X…ᵀ K_i
            vs, nv = model.v_start[j], model.nv_j[j]
            if nv:
                Y[vs:vs + nv, cols] = model.S[j, :, :nv].T @ Ki
            if model.parent[j] >= 0:
                Ki = X_up[j].T @ Ki
            j = model.parent[j]
    return Y


def coriolis_matrix(model: Model, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """The skew-consistent C(q, q̇) (nv x nv) of :func:`slotine_li_torque`: ``Ṁ − 2C`` is skew-symmetric."""
    n = model.nv
    zeros = np.zeros(n)
    g0 = np.zeros(3)
    if n == 0:
        return np.zeros((0, 0))
    return np.column_stack([slotine_li_torque(model, q, qd, e, zeros, g0) for e in np.eye(n)])
