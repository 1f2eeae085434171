"""Spatial algebra: 3-vectors, rotations, unit quaternions, Plücker transforms and spatial inertia.

Notation (Featherstone, *Rigid Body Dynamics Algorithms*; thesis §1.3, §2.8.3):

- Spatial vectors are ``[angular; linear]``: a motion vector ``v = [w; v_O]`` (angular velocity and the
  velocity of the point at the frame origin O), a force vector ``f = [n_O; f]`` (moment about O and force).
- ``R_AB`` (3x3) maps B-coordinates of a free vector to A-coordinates; ``p_AB`` is the position of B's origin
  in A-coordinates. ``X_BA`` (6x6) maps *motion* vectors from A- to B-coordinates, so adjacent letters cancel:
  ``v_B = X_BA @ v_A``. Forces transform with the dual ``X_BA^* = X_AB^T`` (i.e. ``f_A = X_BA.T @ f_B``).
- Quaternions are ``(w, x, y, z)``, unit, and act as ``R(q) x = q ⊗ (0, x) ⊗ q*``.

Every function takes and returns plain ``numpy`` arrays so that the same code can later run under
``numba.njit`` (no Python objects are created in the inner loops of the algorithms that call these).
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "skew", "rotation_about_axis", "quat_multiply", "quat_conjugate", "quat_to_rotation", "rotation_to_quat",
    "quat_exp", "quat_normalize", "motion_transform", "crm", "crf", "spatial_inertia", "transform_inertia",
    "inertia_from_spatial",
]


def skew(v: np.ndarray) -> np.ndarray:
    """The antisymmetric dual ``v^`` of a 3-vector: ``skew(a) @ b == cross(a, b)`` (thesis appendix)."""
    return np.array([[0.0, -v[2], v[1]],
                     [v[2], 0.0, -v[0]],
                     [-v[1], v[0], 0.0]])


def rotation_about_axis(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` radians about the unit 3-vector ``axis`` (Rodrigues' formula)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` of two quaternions ``(w, x, y, z)``."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw])


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    """``q*``, the inverse of a unit quaternion."""
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """``q / |q|``; the integrators call this after every stage (DESIGN.md, conventions)."""
    return q / np.sqrt(q @ q)


def quat_to_rotation(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of the unit quaternion ``q = (w, x, y, z)`` (thesis fig. 1.4)."""
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rotation_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(w, x, y, z)`` with ``w >= 0`` of a rotation matrix (Shepperd's method)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0.0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q = np.array([(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s])
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q = np.array([(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q = np.array([(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s])
    if q[0] < 0.0:
        q = -q
    return q / np.sqrt(q @ q)


def quat_exp(rotation_vector: np.ndarray) -> np.ndarray:
    """Unit quaternion of the rotation ``exp(rotation_vector^)``: angle ``|r|`` about ``r/|r|``."""
    angle = np.sqrt(rotation_vector @ rotation_vector)
    if angle < 1e-12:
        # second-order series keeps the result unit to machine precision near zero
        h = 0.5 * rotation_vector
        return quat_normalize(np.array([1.0 - 0.5 * (h @ h), h[0], h[1], h[2]]))
    s = np.sin(0.5 * angle) / angle
    return np.array([np.cos(0.5 * angle), s * rotation_vector[0], s * rotation_vector[1], s * rotation_vector[2]])


def motion_transform(R_AB: np.ndarray, p_AB: np.ndarray) -> np.ndarray:
    """``X_BA``: the 6x6 transform of motion vectors from A- to B-coordinates.

    B's origin is at ``p_AB`` (A-coordinates) and its axes are ``R_AB``. With ``E = R_AB^T``::

        X_BA = [[ E,        0 ],
                [-E p^,     E ]]          (Featherstone's rot·xlt; the inverse of the thesis's Ad, eq. 2.74)
    """
    E = R_AB.T
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(p_AB)
    return X


def crm(v: np.ndarray) -> np.ndarray:
    """Motion cross-product operator ``v×`` so that ``crm(v) @ m == v × m`` for a motion vector m."""
    X = np.zeros((6, 6))
    w = skew(v[:3])
    X[:3, :3] = w
    X[3:, 3:] = w
    X[3:, :3] = skew(v[3:])
    return X


def crf(v: np.ndarray) -> np.ndarray:
    """Force cross-product operator ``v×*`` = ``-crm(v)^T``."""
    return -crm(v).T


def spatial_inertia(mass: float, com: np.ndarray, I_com: np.ndarray) -> np.ndarray:
    """6x6 spatial inertia about a frame's origin of a body with centre of mass ``com`` in that frame.

    ``I_com`` is the 3x3 rotational inertia about the centre of mass in the same axes. Angular-first form of
    thesis eq. 2.32 / 2.78 (Todorov, "spatial inertia tensor")::

        M = [[ I_com + m c^ c^T,  m c^ ],
             [ m c^T,             m 1  ]]
    """
    C = skew(com)
    M = np.zeros((6, 6))
    M[:3, :3] = I_com + mass * (C @ C.T)
    M[:3, 3:] = mass * C
    M[3:, :3] = mass * C.T
    M[3:, 3:] = mass * np.eye(3)
    return M


def transform_inertia(M_B: np.ndarray, R_AB: np.ndarray, p_AB: np.ndarray) -> np.ndarray:
    """Express a spatial inertia given in frame B in frame A (thesis eq. 2.77: ``M_A = X_BA^T M_B X_BA``)."""
    X_BA = motion_transform(R_AB, p_AB)
    return X_BA.T @ M_B @ X_BA


def inertia_from_spatial(M: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Inverse of :func:`spatial_inertia`: ``(mass, com, I_com)``; com is zero for a massless body."""
    mass = float(M[3, 3])
    if mass <= 0.0:
        return 0.0, np.zeros(3), M[:3, :3].copy()
    C = M[:3, 3:] / mass
    com = np.array([C[2, 1], C[0, 2], C[1, 0]])
    I_com = M[:3, :3] - mass * (C @ C.T)
    return mass, com, I_com
