"""Contacts against a plane fixed in another body (core.contacts, ``plane.body``; Kearney §3, McClamroch §6): the
plane moves and turns with its body, the rows measure the point relative to the body's material point it touches,
the contact force acts on both bodies, and a slipping point's friction has its reaction on the plane's body.
Checked against analytic cases: a block riding a sprung table leaves it when the spring passes its natural length
(the pair's free oscillation), with N = m (g + a) until then; a block on a turntable turning at a constant rate
sticks with the centripetal friction m ω² r, or slips with μ m g; and stacked blocks rest on each other."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import core
from core.scene import SceneError, compile_scene, parse_spec

G = 9.81


def _box(name, parent, size, mass, joint, points=None):
    body = {"name": name, "parent": parent, "joint": joint,
            "shapes": [{"type": "box", "size": list(size), "mass": mass}]}
    if points:
        body["points"] = points
    return body


def _corners(size):
    hx, hy, hz = (0.5 * s for s in size)
    return [[sx * hx, sy * hy, -hz] for sx in (-1, 1) for sy in (-1, 1)]


def _table_scene(k=500.0, q0=-0.3, m=1.0, M=4.0) -> dict:
    """A table (mass M, a 1 x 1 x 0.1 box) on a vertical slider with a spring k about q = 0, and a block (m) on
    its top face, both at rest."""
    block_size = (0.2, 0.2, 0.2)
    return {
        "format_version": 1, "name": "table", "gravity": [0, 0, -G],
        "simulation": {"dt": 0.0005, "integrator": "rk4"},
        "bodies": [
            _box("table", "world", (1.0, 1.0, 0.1), M, {"type": "slider", "name": "lift", "axis": [0, 0, 1],
                                                        "q0": q0}),
            _box("block", "world", block_size, m, {"type": "free", "q0": [0, 0, q0 + 0.05 + 0.1, 1, 0, 0, 0]}),
        ],
        "forces": [{"type": "joint_spring", "name": "spring", "joint": "lift", "stiffness": k}],
        "contacts": [{"name": "top", "body": "block", "points": _corners(block_size),
                      "plane": {"body": "table", "face": "+z"}, "friction": 0.5}],
    }


def _events(sim, kind):
    return [e for e in sim.events if e.kind == kind]


def test_a_block_on_a_sprung_table_is_pressed_by_m_g_plus_a_and_leaves_it_when_the_spring_is_at_rest():
    """Together the two masses oscillate about q_eq = −(m+M)g/k with ω = √(k/(m+M)); the table's face presses the
    block with N = m (g + z̈) and lets go when N reaches zero: when z̈ = −g, i.e. when the spring passes its
    natural length, at t* = arccos(q_eq/(q_eq − q0))/ω (0.207817 s here)."""
    m, M, k, q0 = 1.0, 4.0, 500.0, -0.3
    model = compile_scene(parse_spec(_table_scene(k, q0, m, M)))
    sim = core.Simulation(model)
    lift = model.q_slice("lift").start
    while sim.state.t < 0.09:
        sim.step()
        d = sim.data
        N = sum(d.constraint_force[p.normal][2] for p in model.contacts[0].points)
        assert N == pytest.approx(m * (G + d.qdd[lift]), rel=1e-6, abs=1e-6)
    sim.run(0.15)
    q_eq, w = -(m + M) * G / k, np.sqrt(k / (m + M))
    t_star = np.arccos(q_eq / (q_eq - q0)) / w
    offs = _events(sim, "lift-off")
    assert len(offs) == 4
    for e in offs:
        assert e.t == pytest.approx(t_star, abs=2e-6)
    touch = _events(sim, "touchdown")
    assert len(touch) == 4 and all(e.t == 0.0 for e in touch)      # resting on it from the start


def test_the_block_and_table_keep_the_pairs_energy_and_momentum_books():
    """No dissipation while they move together: the energy audit's error stays at integration round-off."""
    model = compile_scene(parse_spec(_table_scene()))
    sim = core.Simulation(model)
    sim.run(0.09)
    assert abs(sim.energy_error()) < 1e-8


def _turntable_scene(omega=2.0, r=0.5, mu=0.5) -> dict:
    """A turntable (a 2 x 2 x 0.1 box on a vertical hinge, with a huge inertia so the block hardly slows it)
    turning at ``omega`` with a block (1 kg) at radius ``r`` moving with it."""
    size = (0.1, 0.1, 0.1)
    return {
        "format_version": 1, "name": "turntable", "gravity": [0, 0, -G],
        "simulation": {"dt": 0.0005, "integrator": "rk4"},
        "bodies": [
            {"name": "table", "parent": "world", "joint": {"type": "hinge", "name": "spin", "axis": [0, 0, 1],
                                                            "qd0": omega},
             "shapes": [{"type": "box", "size": [2.0, 2.0, 0.1], "mass": 1e6}]},
            _box("block", "world", size, 1.0, {"type": "free", "q0": [r, 0, 0.05 + 0.05, 1, 0, 0, 0],
                                               "qd0": [0, 0, omega, 0, omega * r, 0]}),
        ],
        "contacts": [{"name": "on_table", "body": "block", "points": _corners(size),
                      "plane": {"body": "table", "face": "+z"}, "friction": mu}],
    }


def test_a_block_on_a_turntable_sticks_with_the_centripetal_friction():
    """μ g = 4.9 > ω² r = 2: the block sticks, turning with the table at radius r; the friction on it is
    m ω² r towards the axis and the normal force m g."""
    omega, r = 2.0, 0.5
    model = compile_scene(parse_spec(_turntable_scene(omega, r, 0.5)))
    sim = core.Simulation(model)
    sim.run(1.0)
    assert not _events(sim, "slip")
    x = sim.state.q[model.q_slice("block")][:3]
    assert np.hypot(x[0], x[1]) == pytest.approx(r, abs=1e-6)
    angle = sim.state.q[model.q_slice("spin").start]
    assert np.arctan2(x[1], x[0]) == pytest.approx(angle, abs=1e-6)
    d = sim.data
    pts = model.contacts[0].points
    F = sum(d.constraint_force[p.stick] for p in pts)
    N = sum(d.constraint_force[p.normal] for p in pts)
    inward = -x[:2] / np.hypot(x[0], x[1])
    assert F[:2] @ inward == pytest.approx(omega ** 2 * r, rel=1e-4)
    assert N[2] == pytest.approx(G, rel=1e-4)


def test_a_block_on_a_turntable_too_fast_for_its_friction_slips_with_mu_m_g():
    """ω² r = 8 > μ g = 1.96: the block slips at once; while it slips the table's face drags it with the Coulomb
    force μ m g, opposite to its velocity relative to the table, and it drifts outwards."""
    omega, r, mu = 4.0, 0.5, 0.2
    model = compile_scene(parse_spec(_turntable_scene(omega, r, mu)))
    sim = core.Simulation(model)
    sim.run(0.2)
    assert _events(sim, "slip")
    slip = sim.state.slip
    total = slip.sum(axis=0)
    assert np.linalg.norm(total) == pytest.approx(mu * G, rel=1e-3)
    x = sim.state.q[model.q_slice("block")][:3]
    assert np.hypot(x[0], x[1]) > r + 0.01


def test_stacked_blocks_rest_with_the_weights_above_them():
    """A 2 kg block on a 3 kg block on the ground: the ground carries 5 g, the lower block's top face 2 g (the
    upper block's corners press on the lower one, which feels their reaction)."""
    size = (0.4, 0.4, 0.2)
    doc = {
        "format_version": 1, "name": "stack", "gravity": [0, 0, -G], "simulation": {"dt": 0.001},
        "bodies": [_box("lower", "world", size, 3.0, {"type": "free", "q0": [0, 0, 0.1, 1, 0, 0, 0]}),
                   _box("upper", "world", size, 2.0, {"type": "free", "q0": [0.05, 0, 0.3, 1, 0, 0, 0]})],
        "contacts": [{"name": "ground", "body": "lower", "points": _corners(size), "friction": 0.5},
                     {"name": "stack", "body": "upper", "points": _corners(size),
                      "plane": {"body": "lower", "face": "+z"}, "friction": 0.5}],
    }
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    sim.run(0.5)
    d = sim.data
    ground, stack = model.contacts
    assert sum(d.constraint_force[p.normal][2] for p in ground.points) == pytest.approx(5 * G, rel=1e-6)
    assert sum(d.constraint_force[p.normal][2] for p in stack.points) == pytest.approx(2 * G, rel=1e-6)
    assert np.abs(sim.state.qd).max() < 1e-6
    assert not _events(sim, "lift-off")


@pytest.mark.parametrize("plane, path", [
    ({"body": "nobody", "face": "+z"}, "$.contacts[0].plane.body"),
    ({"body": "block", "face": "+z"}, "$.contacts[0].plane.body"),
    ({"body": "table", "face": "+z", "shape": 3}, "$.contacts[0].plane.shape"),
    ({"face": "+z"}, "$.contacts[0].plane"),
    ({"body": "table", "face": "+z", "normal": [0, 0, 1]}, "$.contacts[0].plane"),
    ({"body": "table", "face": "top"}, "$.contacts[0].plane.face"),
])
def test_bad_body_planes_are_named_validation_errors(plane, path):
    doc = copy.deepcopy(_table_scene())
    doc["contacts"][0]["plane"] = plane
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    assert any(p.path.startswith(path) for p in info.value.problems), info.value.problems


@pytest.mark.parametrize("formulation", ["projection", "multipliers"])
def test_every_formulation_lets_go_of_the_block_at_the_same_instant(formulation):
    """The body-fixed rows are rows like any other: Aghili's projection and McClamroch's multipliers give the same
    lift-off (within the event tolerance) and keep the block on the turntable at its radius."""
    doc = _table_scene()
    doc["simulation"]["formulation"] = formulation
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    sim.run(0.25)
    offs = _events(sim, "lift-off")
    assert len(offs) == 4 and offs[0].t == pytest.approx(0.2078170741, abs=2e-6)
    doc = _turntable_scene()
    doc["simulation"]["formulation"] = formulation
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    sim.run(0.5)
    x = sim.state.q[model.q_slice("block")][:3]
    assert np.hypot(x[0], x[1]) == pytest.approx(0.5, abs=1e-6) and not _events(sim, "slip")
