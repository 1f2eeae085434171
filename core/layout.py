"""The model's arrays packed into two for the compiled entry points: ``ints`` (5 x N: parent, joint type,
q_start, v_start, nv_j) and ``floats`` (gravity, then axis, R_tree, p_tree, S and inertia, flattened). Every
argument of a call from Python into numba costs ~60 ns of dispatch, so an entry point that takes the two packed
arrays instead of the eleven of :attr:`core.model.Model.kernel_args` saves most of a microsecond per call; inside,
:func:`unpack_model` rebuilds the eleven as views (no copies).

:func:`carve` does the same for scratch memory: one allocation per call, cut into the arrays a kernel needs.
"""
from __future__ import annotations

import numpy as np

from .jit import inline

__all__ = ["pack_model", "unpack_model", "carve"]


def pack_model(kernel_args) -> tuple[np.ndarray, np.ndarray]:
    """``(ints, floats)`` from :attr:`core.model.Model.kernel_args`."""
    parent, jtype, axis, R_tree, p_tree, S, q_start, v_start, nv_j, inertia, gravity = kernel_args
    ints = np.ascontiguousarray(np.stack([parent, jtype, q_start, v_start, nv_j]).astype(np.int64).reshape(5, -1))
    floats = np.concatenate([np.asarray(gravity, float).ravel(), axis.ravel(), R_tree.ravel(), p_tree.ravel(),
                             S.ravel(), inertia.ravel()])
    return ints, floats


@inline
def unpack_model(ints, floats):
    """The eleven kernel arrays (views) from :func:`pack_model`'s two, in ``kernel_args`` order."""
    N = ints.shape[1]
    o = 3
    axis = floats[o:o + 3 * N].reshape((N, 3))
    o += 3 * N
    R_tree = floats[o:o + 9 * N].reshape((N, 3, 3))
    o += 9 * N
    p_tree = floats[o:o + 3 * N].reshape((N, 3))
    o += 3 * N
    S = floats[o:o + 36 * N].reshape((N, 6, 6))
    o += 36 * N
    inertia = floats[o:o + 36 * N].reshape((N, 6, 6))
    return ints[0], ints[1], axis, R_tree, p_tree, S, ints[2], ints[3], ints[4], inertia, floats[0:3]


@inline
def carve(buf, offset, n, shape):
    """``(buf[offset:offset + n].reshape(shape), offset + n)``: the next array cut from a scratch buffer."""
    return buf[offset:offset + n].reshape(shape), offset + n
