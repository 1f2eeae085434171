"""The compiler for the hot loops, and the small spatial operations the kernels share.

Kernels are ``numba.njit(cache=True)`` functions over plain arrays (no Python objects inside), compiled on
first use and cached on disk, so only the first run on a machine pays the compile time. The spatial operations
work on a parent→child transform stored as ``(E, r)``: ``E = R_PCᵀ`` (3x3) and ``r = p_PC`` (the child origin in
parent coordinates); in Featherstone's notation ``X = rot(E) xlt(r)``::

    X v       = [E ω;  E (v − r × ω)]                  motion, parent → child
    Xᵀ f      = [Eᵀn + r × Eᵀf;  Eᵀf]                  force, child → parent  (X* = X⁻ᵀ)

Set ``LIMBSTUDIO_NO_JIT=1`` to run the same kernels as plain Python (for debugging; very slow).
"""
from __future__ import annotations

import os

import numpy as np

if os.environ.get("LIMBSTUDIO_NO_JIT"):
    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f
else:
    from numba import njit as _njit

    def njit(*args, **kwargs):
        kwargs.setdefault("cache", True)
        kwargs.setdefault("nogil", True)
        if args and callable(args[0]):
            return _njit(**kwargs)(args[0])
        return _njit(*args, **kwargs)

__all__ = ["njit", "motion_x", "force_xt", "inertia_xt", "cross_motion", "cross_force", "matvec6", "quat_rot"]


@njit
def quat_rot(w, x, y, z, R):
    """R ← rotation matrix of the unit quaternion (w, x, y, z)."""
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@njit
def motion_x(E, r, v, out):
    """out ← X v = [E ω; E (v_O − r × ω)] (parent → child)."""
    w0, w1, w2 = v[0], v[1], v[2]
    l0 = v[3] - (r[1] * w2 - r[2] * w1)
    l1 = v[4] - (r[2] * w0 - r[0] * w2)
    l2 = v[5] - (r[0] * w1 - r[1] * w0)
    for k in range(3):
        out[k] = E[k, 0] * w0 + E[k, 1] * w1 + E[k, 2] * w2
        out[3 + k] = E[k, 0] * l0 + E[k, 1] * l1 + E[k, 2] * l2


@njit
def force_xt(E, r, f, out):
    """out ← Xᵀ f = [Eᵀn + r × (Eᵀf); Eᵀf] (a child force expressed in the parent)."""
    n0 = E[0, 0] * f[0] + E[1, 0] * f[1] + E[2, 0] * f[2]
    n1 = E[0, 1] * f[0] + E[1, 1] * f[1] + E[2, 1] * f[2]
    n2 = E[0, 2] * f[0] + E[1, 2] * f[1] + E[2, 2] * f[2]
    g0 = E[0, 0] * f[3] + E[1, 0] * f[4] + E[2, 0] * f[5]
    g1 = E[0, 1] * f[3] + E[1, 1] * f[4] + E[2, 1] * f[5]
    g2 = E[0, 2] * f[3] + E[1, 2] * f[4] + E[2, 2] * f[5]
    out[0] = n0 + r[1] * g2 - r[2] * g1
    out[1] = n1 + r[2] * g0 - r[0] * g2
    out[2] = n2 + r[0] * g1 - r[1] * g0
    out[3] = g0
    out[4] = g1
    out[5] = g2


@njit
def _similar(E, M, r0, c0, out, o0, p0):
    """out[o0:o0+3, p0:p0+3] ← Eᵀ M[r0:r0+3, c0:c0+3] E."""
    for a in range(3):
        for b in range(3):
            s = 0.0
            for k in range(3):
                t = E[0, b] * M[r0 + k, c0] + E[1, b] * M[r0 + k, c0 + 1] + E[2, b] * M[r0 + k, c0 + 2]
                s += E[k, a] * t
            out[o0 + a, p0 + b] = s


@njit
def inertia_xt(E, r, I, out, tmp, X):
    """out ← Xᵀ I X (a child spatial or articulated inertia expressed in the parent; thesis eq. 2.77).

    With I = [[A, B], [Bᵀ, C]], P = EᵀAE, Q = EᵀBE, R = EᵀCE and r^ the cross-product matrix of r::

        Xᵀ I X = [[P − Q r^ + r^ Qᵀ − r^ R r^,  Q + r^ R],
                  [(Q + r^ R)ᵀ,                  R       ]]

    (``tmp`` and ``X`` are 6x6 scratch arrays.)"""
    _similar(E, I, 0, 0, tmp, 0, 0)                          # P
    _similar(E, I, 0, 3, tmp, 0, 3)                          # Q
    _similar(E, I, 3, 3, tmp, 3, 3)                          # R
    rx = X                                                   # r^ in X[0:3, 0:3]; r^R in X[3:6, 0:3]
    rx[0, 0], rx[0, 1], rx[0, 2] = 0.0, -r[2], r[1]
    rx[1, 0], rx[1, 1], rx[1, 2] = r[2], 0.0, -r[0]
    rx[2, 0], rx[2, 1], rx[2, 2] = -r[1], r[0], 0.0
    for a in range(3):
        for b in range(3):
            X[3 + a, b] = rx[a, 0] * tmp[3, 3 + b] + rx[a, 1] * tmp[4, 3 + b] + rx[a, 2] * tmp[5, 3 + b]
    for a in range(3):
        for b in range(3):
            out[3 + a, 3 + b] = tmp[3 + a, 3 + b]
            trb = tmp[a, 3 + b] + X[3 + a, b]                # Q + r^R
            out[a, 3 + b] = trb
            out[3 + b, a] = trb
    for a in range(3):
        for b in range(3):
            # −Q r^ + r^ Qᵀ − (r^ R) r^
            s = tmp[a, b]
            for k in range(3):
                s += -tmp[a, 3 + k] * rx[k, b] + rx[a, k] * tmp[b, 3 + k] - X[3 + a, k] * rx[k, b]
            out[a, b] = s


@njit
def cross_motion(v, m, out):
    """out ← v × m (motion cross product, crm(v) m)."""
    out[0] = v[1] * m[2] - v[2] * m[1]
    out[1] = v[2] * m[0] - v[0] * m[2]
    out[2] = v[0] * m[1] - v[1] * m[0]
    out[3] = v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1]
    out[4] = v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2]
    out[5] = v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0]


@njit
def cross_force(v, f, out):
    """out ← v ×* f (force cross product, crf(v) f = −crm(v)ᵀ f)."""
    out[0] = v[1] * f[2] - v[2] * f[1] + v[4] * f[5] - v[5] * f[4]
    out[1] = v[2] * f[0] - v[0] * f[2] + v[5] * f[3] - v[3] * f[5]
    out[2] = v[0] * f[1] - v[1] * f[0] + v[3] * f[4] - v[4] * f[3]
    out[3] = v[1] * f[5] - v[2] * f[4]
    out[4] = v[2] * f[3] - v[0] * f[5]
    out[5] = v[0] * f[4] - v[1] * f[3]


@njit
def matvec6(M, v, out):
    """out ← M v for a 6x6 M."""
    for a in range(6):
        s = 0.0
        for k in range(6):
            s += M[a, k] * v[k]
        out[a] = s


def empty(shape) -> np.ndarray:
    return np.empty(shape)
