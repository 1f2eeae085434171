"""Spatial algebra: quaternions and rotations agree, transforms compose and invert, inertia transforms preserve
kinetic energy (eq. 2.75–2.77)."""
from __future__ import annotations

import numpy as np
import pytest

from core.spatial import (crf, crm, inertia_from_spatial, motion_transform, quat_exp, quat_multiply,
                          quat_to_rotation, rotation_about_axis, rotation_to_quat, skew, spatial_inertia,
                          transform_inertia)


def random_rotation(rng):
    q = rng.normal(size=4)
    return quat_to_rotation(q / np.linalg.norm(q))


@pytest.mark.parametrize("seed", range(20))
def test_quaternion_rotation_round_trip_and_product(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=4), rng.normal(size=4)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    Ra = quat_to_rotation(a)
    np.testing.assert_allclose(Ra @ Ra.T, np.eye(3), atol=1e-14)
    assert np.linalg.det(Ra) == pytest.approx(1.0)
    np.testing.assert_allclose(quat_to_rotation(rotation_to_quat(Ra)), Ra, atol=1e-14)
    np.testing.assert_allclose(quat_to_rotation(quat_multiply(a, b)), Ra @ quat_to_rotation(b), atol=1e-14)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(-3, 3)
    np.testing.assert_allclose(quat_to_rotation(quat_exp(axis * angle)), rotation_about_axis(axis, angle), atol=1e-14)


def test_rotation_to_quat_handles_half_turns():
    for R in (np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])):
        np.testing.assert_allclose(quat_to_rotation(rotation_to_quat(R)), R, atol=1e-15)


@pytest.mark.parametrize("seed", range(10))
def test_motion_transforms_compose_invert_and_move_points(seed):
    rng = np.random.default_rng(seed)
    R_AB, p_AB = random_rotation(rng), rng.normal(size=3)
    R_BC, p_BC = random_rotation(rng), rng.normal(size=3)
    X_BA, X_CB = motion_transform(R_AB, p_AB), motion_transform(R_BC, p_BC)
    X_CA = motion_transform(R_AB @ R_BC, p_AB + R_AB @ p_BC)
    np.testing.assert_allclose(X_CB @ X_BA, X_CA, atol=1e-13)
    X_AB = motion_transform(R_AB.T, -R_AB.T @ p_AB)
    np.testing.assert_allclose(X_AB @ X_BA, np.eye(6), atol=1e-13)
    # a motion [w; v_A] in A moves B's origin at v_A + w × p_AB; in B-coordinates that is the linear part
    v = rng.normal(size=6)
    vB = X_BA @ v
    np.testing.assert_allclose(R_AB @ vB[3:], v[3:] + np.cross(v[:3], p_AB), atol=1e-13)
    # cross products: crm(v) m = v × m, and crf is its dual (power conserved)
    m, f = rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(crm(v) @ m, -crm(m) @ v, atol=1e-13)
    assert f @ (crm(v) @ m) == pytest.approx(-(crf(v) @ f) @ m)
    np.testing.assert_allclose(skew(v[:3]) @ m[:3], np.cross(v[:3], m[:3]))


@pytest.mark.parametrize("seed", range(10))
def test_inertia_transform_preserves_kinetic_energy(seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3, 3))
    M_B = spatial_inertia(rng.uniform(0.5, 2), rng.normal(size=3), A @ A.T + np.eye(3))
    R_AB, p_AB = random_rotation(rng), rng.normal(size=3)
    M_A = transform_inertia(M_B, R_AB, p_AB)
    v_A = rng.normal(size=6)
    v_B = motion_transform(R_AB, p_AB) @ v_A
    assert v_A @ M_A @ v_A == pytest.approx(v_B @ M_B @ v_B)               # eq. 2.75–2.76
    m, c, I_c = inertia_from_spatial(M_A)
    np.testing.assert_allclose(spatial_inertia(m, c, I_c), M_A, atol=1e-12)
    np.testing.assert_allclose(c, p_AB + R_AB @ inertia_from_spatial(M_B)[1], atol=1e-12)
