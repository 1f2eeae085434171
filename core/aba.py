"""Articulated-body algorithm: forward dynamics in O(N) (RBDA Table 7.1; the O(N) inversion of thesis §2.4.2
after Rodriguez and Kreutz-Delgado), in world coordinates.

Notation: link i, parent λ. Every spatial quantity here is expressed in world axes about the world origin W
(Featherstone's "absolute" form of the algorithm, RBDA §7.3): the motion subspace ``s_i = X_{W←i} S_i`` (6 x nv_i,
it moves with link i, so ṡ_i = v_i × s_i), the rigid-body inertia ``I_i`` of link i about W, the articulated
inertia I^A and bias force p^A. Velocities then add without transforms, ``v_i = v_λ + s_i q̇_i``, and an
articulated inertia passes to the parent as it is, ``I^A_λ += I^a_i`` — the 6 x 6 transform XᵀIX per link that
link coordinates need is gone. The price is round-off that grows with the distance from W (it stays at ~1e-15
relative for mechanisms within a few metres of the origin, as every scene here).

    pass 1  (root → leaves)  v_i = v_λ + s_i q̇_i,   c_i = v_i × s_i q̇_i,   p^A_i = v_i ×* I_i v_i − f^x_i
    pass 2  (leaves → root)  U_i = I^A_i s_i,  D_i = s_iᵀ U_i,  u_i = τ_i − s_iᵀ p^A_i,  W_i = U_i D_i⁻¹
                             I^A_λ += I^A_i − W_i U_iᵀ,   p^A_λ += p^A_i + I^a_i c_i + W_i u_i
    pass 3  (root → leaves)  a'_i = a_λ + c_i (a_0 = [0; −g]),  q̈_i = D_i⁻¹u_i − W_iᵀ a'_i,  a_i = a'_i + s_i q̈_i

Multi-dof joints invert D_i (at most 6 x 6) by Gauss–Jordan. The passes are separate kernels so that the
constrained step reuses the factorization of pass 2, which depends on q only: :func:`aba_solve` then gives M⁻¹τ
for any further τ in O(N) (the response to a unit constraint force, for A = J M⁻¹ Jᵀ), with no mass matrix.
"""
from __future__ import annotations

import threading

import numpy as np

from .jit import as_f64, carve, cross_force, cross_motion, entry, matvec6, njit
from .kinematics import external_forces, fk_kernel
from .model import Model

__all__ = ["forward_dynamics", "aba_entry", "aba_forces_entry", "workspace_size", "aba_eval", "aba_workspace", "world_frame", "aba_velocities",
           "aba_inertias", "aba_accelerations", "aba_solve"]


@njit
def _invert_small(D, n, out, A):
    """out[:n, :n] ← D[:n, :n]⁻¹ by Gauss–Jordan with partial pivoting (n ≤ 6; ``A`` a 6 x 12 scratch array)."""
    if n == 1:
        out[0, 0] = 1.0 / D[0, 0]
        return
    for a in range(n):
        for b in range(2 * n):
            A[a, b] = 0.0
        for b in range(n):
            A[a, b] = D[a, b]
        A[a, n + a] = 1.0
    for c in range(n):
        p = c
        for a in range(c + 1, n):
            if abs(A[a, c]) > abs(A[p, c]):
                p = a
        if p != c:
            for b in range(2 * n):
                A[c, b], A[p, b] = A[p, b], A[c, b]
        piv = A[c, c]
        for b in range(2 * n):
            A[c, b] /= piv
        for a in range(n):
            if a != c:
                m = A[a, c]
                for b in range(2 * n):
                    A[a, b] -= m * A[c, b]
    for a in range(n):
        for b in range(n):
            out[a, b] = A[a, n + b]


@njit
def world_frame(S, nv_j, mass, com, inertia_com, R_WL, p_WL, Sw, I):
    """Per link, from its world pose (R, p): the motion subspace about W, s = [R S_ω; R S_v + p × R S_ω], and the
    rigid-body inertia about W, I = [[Ī + m (|c|² 1 − c cᵀ), m c^], [(m c^)ᵀ, m 1]] with c = p + R c_L the world
    centre of mass and Ī = R Ī_c Rᵀ its rotational inertia about the centre of mass (thesis eq. 2.77)."""
    for i in range(R_WL.shape[0]):
        R, p = R_WL[i], p_WL[i]
        for k in range(nv_j[i]):
            w0 = R[0, 0] * S[i, 0, k] + R[0, 1] * S[i, 1, k] + R[0, 2] * S[i, 2, k]
            w1 = R[1, 0] * S[i, 0, k] + R[1, 1] * S[i, 1, k] + R[1, 2] * S[i, 2, k]
            w2 = R[2, 0] * S[i, 0, k] + R[2, 1] * S[i, 1, k] + R[2, 2] * S[i, 2, k]
            Sw[i, 0, k], Sw[i, 1, k], Sw[i, 2, k] = w0, w1, w2
            for a in range(3):
                Sw[i, 3 + a, k] = R[a, 0] * S[i, 3, k] + R[a, 1] * S[i, 4, k] + R[a, 2] * S[i, 5, k]
            Sw[i, 3, k] += p[1] * w2 - p[2] * w1
            Sw[i, 4, k] += p[2] * w0 - p[0] * w2
            Sw[i, 5, k] += p[0] * w1 - p[1] * w0
        m = mass[i]
        c0 = p[0] + R[0, 0] * com[i, 0] + R[0, 1] * com[i, 1] + R[0, 2] * com[i, 2]
        c1 = p[1] + R[1, 0] * com[i, 0] + R[1, 1] * com[i, 1] + R[1, 2] * com[i, 2]
        c2 = p[2] + R[2, 0] * com[i, 0] + R[2, 1] * com[i, 1] + R[2, 2] * com[i, 2]
        Ic = inertia_com[i]
        Ii = I[i]
        for a in range(3):                                    # Ī = R Ī_c Rᵀ (upper triangle, mirrored)
            t0 = Ic[0, 0] * R[a, 0] + Ic[0, 1] * R[a, 1] + Ic[0, 2] * R[a, 2]
            t1 = Ic[1, 0] * R[a, 0] + Ic[1, 1] * R[a, 1] + Ic[1, 2] * R[a, 2]
            t2 = Ic[2, 0] * R[a, 0] + Ic[2, 1] * R[a, 1] + Ic[2, 2] * R[a, 2]
            for b in range(a, 3):
                s = R[b, 0] * t0 + R[b, 1] * t1 + R[b, 2] * t2
                Ii[a, b] = s
                Ii[b, a] = s
        cc = c0 * c0 + c1 * c1 + c2 * c2                      # + m (|c|² 1 − c cᵀ)
        Ii[0, 0] += m * (cc - c0 * c0)
        Ii[1, 1] += m * (cc - c1 * c1)
        Ii[2, 2] += m * (cc - c2 * c2)
        Ii[0, 1] -= m * c0 * c1
        Ii[1, 0] = Ii[0, 1]
        Ii[0, 2] -= m * c0 * c2
        Ii[2, 0] = Ii[0, 2]
        Ii[1, 2] -= m * c1 * c2
        Ii[2, 1] = Ii[1, 2]
        h0, h1, h2 = m * c0, m * c1, m * c2                   # m c^ and its transpose
        Ii[0, 3], Ii[0, 4], Ii[0, 5] = 0.0, -h2, h1
        Ii[1, 3], Ii[1, 4], Ii[1, 5] = h2, 0.0, -h0
        Ii[2, 3], Ii[2, 4], Ii[2, 5] = -h1, h0, 0.0
        for a in range(3):
            for b in range(3):
                Ii[3 + b, a] = Ii[a, 3 + b]
                Ii[3 + a, 3 + b] = m if a == b else 0.0


@njit
def aba_velocities(parent, Sw, v_start, nv_j, I, qd, fx, v, c, pA, vJ, tmp):
    """Pass 1, root to leaves: v_i = v_λ + s_i q̇_i, c_i = v_i × s_i q̇_i, p^A_i = v_i ×* I_i v_i − f^x_i (world
    axes about W; ``fx``: external forces the same way; ``vJ``, ``tmp``: scratch 6)."""
    for i in range(parent.shape[0]):
        lam, vs, nv = parent[i], v_start[i], nv_j[i]
        for a in range(6):
            s = 0.0
            for k in range(nv):
                s += Sw[i, a, k] * qd[vs + k]
            vJ[a] = s
            v[i, a] = s if lam < 0 else v[lam, a] + s
        cross_motion(v[i], vJ, c[i])
        matvec6(I[i], v[i], tmp)
        cross_force(v[i], tmp, pA[i])
        for a in range(6):
            pA[i, a] -= fx[i, a]


@njit
def workspace_size(N):
    """Floats of :func:`aba_workspace` for N links."""
    return 240 * N + 72 + 36 + 48


@njit
def aba_workspace(buf, N):
    """The arrays of one ABA evaluation, cut from ``buf`` (at least :func:`workspace_size` floats):
    ``(E, r, R_WL, p_WL, Sw, fx, v, c, pA, IA, U, W, Dinv, u, acc, G, D, s6)`` (see :func:`aba_eval`; the last
    three are scratch)."""
    E, o = carve(buf, 0, 9 * N, (N, 3, 3))
    r, o = carve(buf, o, 3 * N, (N, 3))
    R_WL, o = carve(buf, o, 9 * N, (N, 3, 3))
    p_WL, o = carve(buf, o, 3 * N, (N, 3))
    Sw, o = carve(buf, o, 36 * N, (N, 6, 6))
    fx, o = carve(buf, o, 6 * N, (N, 6))
    v, o = carve(buf, o, 6 * N, (N, 6))
    c, o = carve(buf, o, 6 * N, (N, 6))
    pA, o = carve(buf, o, 6 * N, (N, 6))
    IA, o = carve(buf, o, 36 * N, (N, 6, 6))
    U, o = carve(buf, o, 36 * N, (N, 6, 6))
    W, o = carve(buf, o, 36 * N, (N, 6, 6))
    Dinv, o = carve(buf, o, 36 * N, (N, 6, 6))
    u, o = carve(buf, o, 6 * N, (N, 6))
    acc, o = carve(buf, o, 6 * N, (N, 6))
    G, o = carve(buf, o, 72, (6, 12))
    D, o = carve(buf, o, 36, (6, 6))
    s6, o = carve(buf, o, 48, (8, 6))
    return E, r, R_WL, p_WL, Sw, fx, v, c, pA, IA, U, W, Dinv, u, acc, G, D, s6


@njit
def aba_inertias(parent, Sw, v_start, nv_j, tau, c, pA, IA, U, W, Dinv, u, G, D, pa):
    """Pass 2, leaves to root (thesis eq. 2.77; RBDA Table 7.1), in world axes about W::

        U_i = I^A_i s_i,  D_i = s_iᵀ U_i,  W_i = U_i D_i⁻¹,  u_i = τ_i − s_iᵀ p^A_i
        I^A_λ += I^A_i − W_i U_iᵀ,   p^A_λ += p^A_i + I^a_i c_i + W_i u_i

    On entry ``IA`` holds the links' rigid-body inertias and ``pA`` pass 1's bias forces; both accumulate here.
    ``U``, ``W``, ``Dinv`` depend on q only (the factorization :func:`aba_solve` reuses); ``u`` on τ and q̇ too.
    ``G`` (6 x 12), ``D`` (6 x 6), ``pa`` (6) are scratch."""
    for i in range(parent.shape[0] - 1, -1, -1):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        Ii = IA[i]
        if nv == 1:                                           # hinges and sliders: D is a scalar
            su = tau[vs]
            d = 0.0
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += Ii[a, b] * Sw[i, b, 0]
                U[i, a, 0] = s
                su -= Sw[i, a, 0] * pA[i, a]
                d += Sw[i, a, 0] * s
            u[i, 0] = su
            Dinv[i, 0, 0] = 1.0 / d
            for a in range(6):
                W[i, a, 0] = U[i, a, 0] / d
        else:
            for k in range(nv):
                for a in range(6):                            # U_i = I^A_i s_i
                    s = 0.0
                    for b in range(6):
                        s += Ii[a, b] * Sw[i, b, k]
                    U[i, a, k] = s
                s = tau[vs + k]                               # u_i = τ_i − s_iᵀ p^A_i
                for a in range(6):
                    s -= Sw[i, a, k] * pA[i, a]
                u[i, k] = s
            for k in range(nv):
                for m in range(nv):                           # D_i = s_iᵀ U_i
                    s = 0.0
                    for a in range(6):
                        s += Sw[i, a, k] * U[i, a, m]
                    D[k, m] = s
            if nv > 0:
                _invert_small(D, nv, Dinv[i], G)
                for a in range(6):                            # W_i = U_i D_i⁻¹
                    for k in range(nv):
                        s = 0.0
                        for m in range(nv):
                            s += U[i, a, m] * Dinv[i, m, k]
                        W[i, a, k] = s
        if lam < 0:
            continue
        P = IA[lam]
        for a in range(6):                                    # I^a = I^A − W Uᵀ;  I^A_λ += I^a
            for b in range(a, 6):
                s = Ii[a, b]
                for k in range(nv):
                    s -= W[i, a, k] * U[i, b, k]
                Ii[a, b] = s
                Ii[b, a] = s
        for a in range(6):                                    # p^a = p^A + I^a c + W u;  p^A_λ += p^a
            s = pA[i, a]
            for b in range(6):
                s += Ii[a, b] * c[i, b]
            for k in range(nv):
                s += W[i, a, k] * u[i, k]
            pA[lam, a] += s
            for b in range(6):
                P[a, b] += Ii[a, b]


@njit
def aba_accelerations(parent, Sw, v_start, nv_j, a0, c, W, Dinv, u, qdd, acc):
    """Pass 3, root to leaves: a'_i = a_λ + c_i, q̈_i = D_i⁻¹u_i − W_iᵀ a'_i, a_i = a'_i + s_i q̈_i (``a0``: the base
    acceleration, [0; −g] for gravity)."""
    for i in range(parent.shape[0]):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        ai = acc[i]
        for a in range(6):
            ai[a] = (a0[a] if lam < 0 else acc[lam, a]) + c[i, a]
        for k in range(nv):
            s = 0.0
            for m in range(nv):
                s += Dinv[i, k, m] * u[i, m]
            for a in range(6):
                s -= W[i, a, k] * ai[a]
            qdd[vs + k] = s
        for k in range(nv):
            for a in range(6):
                ai[a] += Sw[i, a, k] * qdd[vs + k]


@njit
def aba_solve(parent, Sw, v_start, nv_j, W, Dinv, tau, x, pA, u, acc, zero6):
    """x ← M(q)⁻¹ τ in O(N) from pass 2's factorization at the same q: the articulated-body algorithm with no
    velocity, gravity or external force, so only u and p^A change (p^a_i = p^A_i + W_i u_i; RBDA §7.3), then pass
    3 with c = 0 and a_0 = 0. ``pA``, ``u``, ``acc`` (N x 6) are scratch; ``zero6`` (6) is set to zero."""
    N = parent.shape[0]
    for i in range(N):
        for a in range(6):
            pA[i, a] = 0.0
    for i in range(N - 1, -1, -1):
        vs, nv, lam = v_start[i], nv_j[i], parent[i]
        for k in range(nv):
            s = tau[vs + k]
            for a in range(6):
                s -= Sw[i, a, k] * pA[i, a]
            u[i, k] = s
        if lam < 0:
            continue
        for a in range(6):
            s = pA[i, a]
            for k in range(nv):
                s += W[i, a, k] * u[i, k]
            pA[lam, a] += s
    for a in range(6):
        zero6[a] = 0.0
    pA[:, :] = 0.0                                            # now the zero c_i of pass 3
    aba_accelerations(parent, Sw, v_start, nv_j, zero6, pA, W, Dinv, u, x, acc)


@njit
def aba_eval(tree, ws, q, qd, tau, f_ext, use_f_ext, qdd):
    """q̈ ← H⁻¹(τ − b) by the articulated-body algorithm, in the arrays of ``ws`` (:func:`aba_workspace`).
    ``f_ext``: world forces about the world origin (N x 6), used when ``use_f_ext``."""
    E, r, R_WL, p_WL, Sw, fx, v, c, pA, IA, U, W, Dinv, u, acc, G, D, s6 = ws
    fk_kernel(tree.parent, tree.joint_type, tree.axis, tree.R_tree, tree.p_tree, tree.q_start, q, E, r, R_WL, p_WL)
    world_frame(tree.S, tree.nv_j, tree.mass, tree.com, tree.inertia_com, R_WL, p_WL, Sw, IA)
    if use_f_ext:
        fx[:, :] = f_ext
    else:
        fx[:, :] = 0.0
    aba_velocities(tree.parent, Sw, tree.v_start, tree.nv_j, IA, qd, fx, v, c, pA, s6[0], s6[1])
    aba_inertias(tree.parent, Sw, tree.v_start, tree.nv_j, tau, c, pA, IA, U, W, Dinv, u, G, D, s6[0])
    a0 = s6[2]                                                # gravity as a base acceleration
    a0[0], a0[1], a0[2] = 0.0, 0.0, 0.0
    a0[3], a0[4], a0[5] = -tree.gravity[0], -tree.gravity[1], -tree.gravity[2]
    aba_accelerations(tree.parent, Sw, tree.v_start, tree.nv_j, a0, c, W, Dinv, u, qdd, acc)


@entry
def aba_entry(tree, q, qd, tau, qdd, buf):
    """The entry point from Python: q̈ ← H⁻¹(τ − b), in the scratch ``buf``."""
    aba_eval(tree, aba_workspace(buf, tree.parent.shape[0]), q, qd, tau, buf[:0].reshape((0, 6)), False, qdd)


@entry
def aba_forces_entry(tree, q, qd, tau, f_ext, qdd, buf):
    """The entry point from Python with external forces: q̈ ← H⁻¹(τ + Σ J_iᵀ f_i − b)."""
    aba_eval(tree, aba_workspace(buf, tree.parent.shape[0]), q, qd, tau, f_ext, True, qdd)


_scratch = threading.local()
_WORKSPACE_PER_LINK, _WORKSPACE_FIXED = 240, 156              # workspace_size(N), without a call into numba


def _buffer(n: int) -> np.ndarray:
    """This thread's scratch of at least n floats (kept: a call then allocates nothing but its result)."""
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.size < n:
        buf = _scratch.buf = np.empty(max(n, 2048))
    return buf


def forward_dynamics(model: Model, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                     f_ext: np.ndarray | None = None) -> np.ndarray:
    """Joint accelerations ``q̈ = H⁻¹ (τ - b)`` (nv,) by the articulated-body algorithm.

    ``f_ext`` (optional, N x 6) as in :func:`core.inverse_dynamics`: world coordinates about the world origin.
    """
    qdd = np.empty(model.nv)
    buf = _buffer(_WORKSPACE_PER_LINK * model.n_links + _WORKSPACE_FIXED)
    if f_ext is None:
        aba_entry(model.kernel_tree, as_f64(q), as_f64(qd), as_f64(tau), qdd, buf)
    else:
        aba_forces_entry(model.kernel_tree, as_f64(q), as_f64(qd), as_f64(tau), external_forces(model, f_ext)[0],
                         qdd, buf)
    return qdd
