"""The two arms of the bench (thesis §3.4) against their published equations of motion.

- Slotine & Li, Applied Nonlinear Control, Example 9.1: H11 = a1 + 2 a3 cos q2 + 2 a4 sin q2,
  H12 = a2 + a3 cos q2 + a4 sin q2, H22 = a2, a1 = I1 + m1 lc1² + Ie + me lce² + me l1², a2 = Ie + me lce²,
  a3 = me l1 lce cos δe, a4 = me l1 lce sin δe.
- Uno, Kawato & Suzuki (1989), inertias about the joint axes: M11 = I1 + I2 + m2 l1² + 2 m2 l1 lc2 cos q2,
  M12 = I2 + m2 l1 lc2 cos q2, M22 = I2; gravity g1 = g((m1 lc1 + m2 l1) cos q1 + m2 lc2 cos(q1 + q2)),
  g2 = g m2 lc2 cos(q1 + q2). The scene realizes these exactly with a physical rigid body (see its description).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import core
from core.scene import compile_scene, read_spec

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def model(name: str, gravity=None) -> core.Model:
    spec = read_spec(SCENES / f"{name}.json")
    if gravity is not None:
        spec.gravity = gravity
    return compile_scene(spec)


def test_slotine_li_arm_matches_example_9_1():
    m1, l1, me, de, I1, lc1, Ie, lce = 1.0, 1.0, 2.0, math.radians(30), 0.12, 0.5, 0.25, 0.6
    a1 = I1 + m1 * lc1 ** 2 + Ie + me * lce ** 2 + me * l1 ** 2
    a2 = Ie + me * lce ** 2
    a3, a4 = me * l1 * lce * math.cos(de), me * l1 * lce * math.sin(de)
    arm = model("slotine_li_arm")
    assert np.allclose(arm.gravity, 0.0)
    for q in np.random.default_rng(0).uniform(-math.pi, math.pi, (10, 2)):
        c, s = math.cos(q[1]), math.sin(q[1])
        H = [[a1 + 2 * a3 * c + 2 * a4 * s, a2 + a3 * c + a4 * s], [a2 + a3 * c + a4 * s, a2]]
        assert np.allclose(core.mass_matrix(arm, q), H, atol=1e-14)


@pytest.mark.parametrize("name", ["uno_kawato_arm", "uno_kawato_arm_viscous"])
def test_uno_kawato_arm_has_the_kawato_equations(name):
    m1, m2, l1, lc1, lc2, I1, I2, g = 1.59, 1.44, 0.30, 0.18, 0.21, 0.0477, 0.0588, 9.81
    arm = model(name, gravity=(0.0, -g, 0.0))
    for q in np.random.default_rng(1).uniform(-math.pi, math.pi, (10, 2)):
        c2 = math.cos(q[1])
        M = [[I1 + I2 + m2 * l1 ** 2 + 2 * m2 * l1 * lc2 * c2, I2 + m2 * l1 * lc2 * c2], [I2 + m2 * l1 * lc2 * c2, I2]]
        grav = [g * ((m1 * lc1 + m2 * l1) * math.cos(q[0]) + m2 * lc2 * math.cos(q[0] + q[1])),
                g * m2 * lc2 * math.cos(q[0] + q[1])]
        assert np.allclose(core.mass_matrix(arm, q), M, atol=1e-14)
        assert np.allclose(core.inverse_dynamics(arm, q, np.zeros(2), np.zeros(2)), grav, atol=1e-12)


def test_arms_start_on_the_sanner_slotine_trajectory():
    for name in ("slotine_li_arm", "uno_kawato_arm"):
        arm = model(name)
        assert np.allclose(arm.q0, [0.0, 0.75]) and np.allclose(arm.qd0, 0.0)
        assert np.allclose(arm.controllers[0].trajectory.evaluate(0.0)[0], arm.q0)
