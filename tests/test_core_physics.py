"""Analytic oracles and conservation laws: the compound pendulum's exact period, the torque-free symmetric
top, energy of a spinning free body and of a swinging chain, RK4's order, and the solid shapes' inertias."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import ellipk

import core
from core.inertia import shape_volume, unit_density_inertia
from core.scene import compile_scene, parse_spec
from core.spatial import quat_to_rotation

SCENES = Path(__file__).resolve().parent.parent / "scenes"
L, R, M, G = 1.0, 0.1, 1.0, 9.81


def pendulum(theta0: float) -> core.Model:
    """One 1 m, 1 kg solid cylinder on a hinge about z at its end, gravity −9.81 y, released from rest at θ0
    measured from the hanging position."""
    return compile_scene(parse_spec({
        "format_version": 1, "name": "pendulum", "gravity": [0, -G, 0],
        "bodies": [{"name": "rod", "joint": {"type": "hinge", "axis": [0, 0, 1], "q0": -np.pi / 2 + theta0},
                    "shapes": [{"type": "cylinder", "radius": R, "length": L, "axis": [1, 0, 0],
                                "position": [L / 2, 0, 0], "mass": M}]}]}))


def zero_crossings(t, x):
    """Times where x changes sign from + to −, linearly interpolated."""
    i = np.nonzero((x[:-1] > 0) & (x[1:] <= 0))[0]
    return t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])


@pytest.mark.parametrize("theta0", [0.01, 1.0])
def test_compound_pendulum_period_is_exact(theta0):
    """T = 4 K(sin²(θ0/2)) √(I_O / (m g d)) for any amplitude (small-oscillation limit 2π√(I_O/mgd))."""
    I_O = M * (3 * R * R + L * L) / 12 + M * (L / 2) ** 2
    T_exact = 4 * ellipk(np.sin(theta0 / 2) ** 2) * np.sqrt(I_O / (M * G * L / 2))
    sim = core.Simulation(pendulum(theta0), dt=1e-3)
    data = sim.run(3.2 * T_exact)
    crossings = zero_crossings(data["t"], data["qd"][:, 0] * -1)   # qd goes − → + at the lower turning point
    periods = np.diff(crossings)
    assert len(periods) >= 2
    np.testing.assert_allclose(periods, T_exact, rtol=1e-7)


def test_rk4_is_fourth_order_and_beats_semi_implicit_euler():
    model = pendulum(1.0)
    ref = core.Simulation(model, dt=1e-4).run(1.0)["q"][-1]
    err = {dt: abs(core.Simulation(model, dt=dt).run(1.0)["q"][-1] - ref)[0] for dt in (0.02, 0.01)}
    assert 12 < err[0.02] / err[0.01] < 20                    # 2⁴ = 16
    euler = abs(core.Simulation(model, dt=0.01, integrator="semi_implicit_euler").run(1.0)["q"][-1] - ref)[0]
    assert euler > 100 * err[0.01]


def test_torque_free_symmetric_top():
    """Body rates of an axisymmetric body (I1 = I2): ω3 constant, (ω1, ω2) turning at Ω = (I3 − I1) ω3 / I1;
    world angular momentum and centre-of-mass velocity constant."""
    r, h, m = 0.3, 0.2, 2.0                                    # a squat cylinder: I3 > I1
    w0 = np.array([0.7, 0.0, 5.0])
    model = compile_scene(parse_spec({
        "format_version": 1, "name": "top", "gravity": [0, 0, 0],
        "bodies": [{"name": "top", "joint": {"type": "free", "qd0": [*w0, 0.1, -0.2, 0.3]},
                    "shapes": [{"type": "cylinder", "radius": r, "length": h, "mass": m}]}]}))
    I1 = m * (3 * r * r + h * h) / 12
    I3 = m * r * r / 2
    Omega = (I3 - I1) * w0[2] / I1
    sim = core.Simulation(model, dt=1e-3)
    data = sim.run(3.0)
    t = data["t"]
    w = data["qd"][:, :3]
    np.testing.assert_allclose(w[:, 0], w0[0] * np.cos(Omega * t), atol=1e-9)
    np.testing.assert_allclose(w[:, 1], w0[0] * np.sin(Omega * t), atol=1e-9)
    np.testing.assert_allclose(w[:, 2], w0[2], atol=1e-9)
    I_body = np.diag([I1, I1, I3])
    L_world = np.array([quat_to_rotation(q[3:7]) @ I_body @ wb for q, wb in zip(data["q"], w)])
    np.testing.assert_allclose(L_world - L_world[0], 0.0, atol=1e-9)
    v_world = np.array([quat_to_rotation(q[3:7]) @ v[3:] for q, v in zip(data["q"], data["qd"])])
    np.testing.assert_allclose(v_world - [0.1, -0.2, 0.3], 0.0, atol=1e-10)


@pytest.mark.parametrize("scene", ["free_tumbling_box.json", "three_link_arm.json"])
def test_energy_conserved_10s_rk4_1ms(scene):
    """Free spinning body and swinging 3-link chain: total energy to 1e-6 relative over 10 s (RK4, 1 ms)."""
    model = core.load_scene(SCENES / scene)
    data = core.Simulation(model, dt=1e-3, integrator="rk4").run(10.0, record_every=100)
    E = data["energy_total"]
    scale = max(np.abs(data["energy_kinetic"]).max(), np.abs(data["energy_potential"]).max())
    assert np.abs(E - E[0]).max() < 1e-6 * scale
    assert np.ptp(data["energy_kinetic"]) > 0.1 * scale or scene == "free_tumbling_box.json"  # it really moves


def test_tumbling_box_flips_about_its_intermediate_axis():
    """The tennis-racket effect: spun about the intermediate axis, the box's body rate about that axis reverses."""
    model = core.load_scene(SCENES / "free_tumbling_box.json")
    data = core.Simulation(model, dt=2e-3).run(10.0, record_every=10)
    wy = data["qd"][:, 1]
    assert wy[0] > 3.9 and wy.min() < -3.0


def test_spatial_chain_energy_short_run():
    model = core.load_scene(SCENES / "spatial_chain_7.json")
    data = core.Simulation(model, dt=1e-3).run(1.0, record_every=50)
    E = data["energy_total"]
    assert np.abs(E - E[0]).max() < 1e-7 * np.abs(data["energy_potential"]).max()
    assert data["energy_kinetic"][-1] > 0.1


def _voxel_inertia(kind, size, n=120):
    """Rotational inertia about the centroid at unit density by summing voxels inside the solid."""
    ext = {"box": np.array(size.get("size", (0, 0, 0))) / 2}.get(kind)
    if ext is None:
        r = size["radius"]
        half = size.get("length", 0) / 2 + (r if kind in ("sphere", "capsule") else 0)
        ext = np.array([r, r, half if kind != "sphere" else r])
    axes = [np.linspace(-e, e, n, endpoint=False) + e / n for e in ext]
    X, Y, Z = np.meshgrid(*axes, indexing="ij")
    if kind == "box":
        inside = np.ones_like(X, bool)
    elif kind == "sphere":
        inside = X**2 + Y**2 + Z**2 <= size["radius"] ** 2
    elif kind == "cylinder":
        inside = X**2 + Y**2 <= size["radius"] ** 2
    else:
        zc = np.clip(Z, -size["length"] / 2, size["length"] / 2)
        inside = X**2 + Y**2 + (Z - zc) ** 2 <= size["radius"] ** 2
    dV = np.prod(2 * ext / n)
    P = np.stack([X[inside], Y[inside], Z[inside]], axis=1)
    I = (np.eye(3) * (P**2).sum() - P.T @ P) * dV
    return I, inside.sum() * dV


@pytest.mark.parametrize("kind,size", [("box", {"size": (0.4, 0.2, 0.1)}), ("sphere", {"radius": 0.3}),
                                       ("cylinder", {"radius": 0.1, "length": 1.0}),
                                       ("capsule", {"radius": 0.2, "length": 0.5})])
def test_shape_inertia_matches_voxel_integration(kind, size):
    I_vox, V_vox = _voxel_inertia(kind, size)
    assert shape_volume(kind, size) == pytest.approx(V_vox, rel=2e-2)
    np.testing.assert_allclose(unit_density_inertia(kind, size), I_vox, rtol=3e-2, atol=1e-9)


def test_composite_inertia_two_halves_make_one_box():
    """Two 0.5 m boxes placed end to end (eq. 2.77 + additivity) have the inertia of one 1 m box."""
    def body(shapes):
        return compile_scene(parse_spec({"format_version": 1, "name": "b", "gravity": [0, 0, 0],
                                         "bodies": [{"name": "b", "joint": {"type": "free"}, "shapes": shapes}]}))
    halves = body([{"type": "box", "size": [0.5, 0.2, 0.1], "position": [x, 0, 0], "mass": 1.0} for x in (-0.25, 0.25)])
    whole = body([{"type": "box", "size": [1.0, 0.2, 0.1], "mass": 2.0}])
    np.testing.assert_allclose(halves.inertia, whole.inertia, atol=1e-14)
