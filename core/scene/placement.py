"""Where a shape sits in its body: the rotation that takes z to a direction, and a shape's pose (rotation and
position in the body frame) from its ``orientation`` or ``axis``. Used by the compiler (inertias, drawn shapes)
and by the contacts (a shape's corners and caps)."""
from __future__ import annotations

import numpy as np

from ..spatial import quat_normalize, quat_to_rotation

__all__ = ["rotation_z_to", "shape_pose"]


def rotation_z_to(axis) -> np.ndarray:
    """The shortest rotation taking the z axis to the direction ``axis``."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ a)
    if c > 1.0 - 1e-12:
        return np.eye(3)
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    k = np.cross(z, a)
    s = np.linalg.norm(k)
    k /= s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def shape_pose(shape) -> tuple[np.ndarray, np.ndarray]:
    """(R, p): a shape's rotation and centre in its body's frame."""
    if shape.orientation is not None:
        R = quat_to_rotation(quat_normalize(np.array(shape.orientation)))
    elif shape.axis is not None:
        R = rotation_z_to(shape.axis)
    else:
        R = np.eye(3)
    return R, np.array(shape.position, dtype=float)
