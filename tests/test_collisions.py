"""Shapes that collide with shapes (a scene's ``"collisions"``; :mod:`core.geometry`, :mod:`core.scene.collision`).

Physics checked: the narrow phase's distance and normal against brute force, and its curvature term against the
normal's finite differences; two balls' oblique impact against the impulse law (momentum, Newton's restitution
along the line of centres); twenty balls in free space keep their momentum at every impact and their energy with
e = 1 (and lose it, never gain, with e < 1); a ball sliding over a table's edge stays on the edge with no
stabilization and leaves it at the angle and time the energy integral gives; a ball rolling off the table leaves
at Kearney's §3 example's analytic time; balls thrown into a box never pass through each other or its walls;
five stacked boxes rest 10 s.
"""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad, solve_ivp

import core
import core.plan
from core.geometry import (BOX, EDGE, FACE, POINT, SEGMENT, VERTEX, crossing, crossing_rates, curvature, distance,
                           nearest, normal_rate)
from core.scene import SceneError, compile_scene, parse_spec

ROOT = Path(__file__).resolve().parents[1]
G = 9.81


def _model(doc: dict) -> core.Model:
    return compile_scene(parse_spec(doc))


def _scene(name: str) -> dict:
    return json.loads((ROOT / "scenes" / f"{name}.json").read_text())


def _rotate(quat, v):
    w, u = quat[..., :1], quat[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _ball(name, x, v=(0.0, 0.0, 0.0), w=(0.0, 0.0, 0.0), radius=0.1, mass=1.0) -> dict:
    return {"name": name, "parent": "world",
            "joint": {"type": "free", "q0": [*x, 1, 0, 0, 0], "qd0": [*w, *v]},
            "shapes": [{"type": "sphere", "radius": radius, "mass": mass}]}


# ---- the narrow phase ----------------------------------------------------------------------------------------

def _core_samples(kind, half, n=60):
    """Points filling the core (a box's surface and inside, a segment, a point)."""
    if kind == POINT:
        return np.zeros((1, 3))
    if kind == SEGMENT:
        return np.column_stack([np.zeros(n), np.zeros(n), np.linspace(-half[2], half[2], n)])
    g = [np.linspace(-h, h, 25) for h in half]
    return np.array(np.meshgrid(*g)).reshape(3, -1).T


@pytest.mark.parametrize("kind, half", [(POINT, (0, 0, 0)), (SEGMENT, (0, 0, 0.4)), (BOX, (0.3, 0.2, 0.5))])
def test_the_distance_to_a_core_is_the_nearest_of_its_points_and_its_normal_points_away(kind, half):
    rng = np.random.default_rng(3)
    half = np.array(half, float)
    samples = _core_samples(kind, half)
    for _ in range(200):
        z = rng.uniform(-1.0, 1.0, 3)
        phi, s, n = distance(kind, half, z)
        assert abs(np.linalg.norm(n) - 1.0) < 1e-12
        if phi >= 0:                                         # outside: the nearest point, along the normal
            brute = np.linalg.norm(samples - z, axis=1).min()
            assert phi <= brute + 1e-12 and phi >= brute - 0.05
            assert np.allclose(z - s, phi * n, atol=1e-12)
        else:                                                # inside a box: minus the depth to the nearest face
            assert kind == BOX
            assert phi == pytest.approx(-np.min(half - np.abs(z)), abs=1e-15)
            assert np.all(np.abs(z) <= half)


def test_the_curvature_term_is_how_fast_the_normal_turns_along_the_motion():
    """ṅ·ż and ṅ by central differences of the normal, on each region of a box, a segment and a point."""
    rng = np.random.default_rng(5)
    half = np.array([0.3, 0.2, 0.5])
    cases = [(BOX, half, np.array([0.6, 0.1, -0.2]), FACE), (BOX, half, np.array([0.6, 0.5, 0.1]), EDGE),
             (BOX, half, np.array([0.6, -0.5, 0.9]), VERTEX), (SEGMENT, np.array([0, 0, 0.4]),
                                                                 np.array([0.3, 0.2, 0.1]), EDGE),
             (SEGMENT, np.array([0, 0, 0.4]), np.array([0.3, 0.2, 0.7]), VERTEX),
             (POINT, np.zeros(3), np.array([0.3, -0.4, 0.2]), VERTEX)]
    for kind, h, z, region in cases:
        for _ in range(5):
            zd = rng.standard_normal(3)
            s, n = np.zeros(3), np.zeros(3)
            phi, got, axis = nearest(kind, h, z, s, n)
            assert got == region
            eps = 1e-6
            n_plus, n_minus = distance(kind, h, z + eps * zd)[2], distance(kind, h, z - eps * zd)[2]
            expected = (n_plus - n_minus) / (2 * eps) @ zd
            assert curvature(phi, region, axis, n, zd) == pytest.approx(expected, rel=1e-6, abs=1e-9)
            rate = np.zeros(3)
            normal_rate(phi, region, axis, n, zd, rate)
            assert np.allclose(rate, (n_plus - n_minus) / (2 * eps), rtol=1e-6, atol=1e-9)


# ---- impacts between shapes ----------------------------------------------------------------------------------

def test_two_balls_meet_at_the_contact_time_and_bounce_by_the_impulse_law():
    doc = {"format_version": 1, "name": "two_balls", "gravity": [0, 0, 0],
           "simulation": {"dt": 0.001, "duration": 1.0},
           "bodies": [_ball("a", (-0.5, 0, 0), v=(1.0, 0, 0), radius=0.1, mass=1.0),
                      _ball("b", (0.5, 0.05, 0), v=(-0.5, 0, 0), radius=0.15, mass=2.0)],
           "collisions": {"restitution": 0.8, "friction": 0.0}}
    sim = core.Simulation(_model(doc))
    sim.run(1.0)
    bounces = [e for e in sim.events if e.kind == "bounce"]
    assert len(bounces) == 1 and bounces[0].contact == "a.b"
    gap = math.sqrt(0.25 ** 2 - 0.05 ** 2)
    assert bounces[0].t == pytest.approx((1.0 - gap) / 1.5, abs=3e-9)     # (isolation 1e-9 s, 1e-9 m deep)
    n = np.array([gap, 0.05, 0.0]) / 0.25                    # from a to b at the impact
    P = (1 + 0.8) * (2.0 / 3.0) * (1.5 * n[0])               # (1 + e) μ v_n, μ the reduced mass
    q, qd = sim.state.q, sim.state.qd
    va, vb = _rotate(q[3:7], qd[3:6]), _rotate(q[10:14], qd[9:12])
    assert np.allclose(va, np.array([1.0, 0, 0]) - P * n, atol=1e-12)
    assert np.allclose(vb, np.array([-0.5, 0, 0]) + P / 2.0 * n, atol=1e-12)


def _free_balls(restitution: float) -> dict:
    rng = np.random.default_rng(11)
    bodies = []
    for k in range(20):
        x = np.array([k % 5, (k // 5) % 2, k // 10], float) * 0.22
        bodies.append(_ball(f"ball{k}", x.round(3).tolist(), v=rng.uniform(-2, 2, 3).round(3).tolist(),
                            radius=0.08, mass=0.5 + 0.05 * k))
    return {"format_version": 1, "name": "free_balls", "gravity": [0, 0, 0],
            "simulation": {"dt": 0.001, "duration": 2.0}, "bodies": bodies,
            "collisions": {"restitution": restitution, "friction": 0.0}}


def _books(sim, doc):
    """Total linear momentum and kinetic energy of the balls at the state."""
    masses = np.array([b["shapes"][0]["mass"] for b in doc["bodies"]])
    q, qd = sim.state.q.reshape(-1, 7), sim.state.qd.reshape(-1, 6)
    v = _rotate(q[:, 3:7], qd[:, 3:6])
    return (masses[:, None] * v).sum(axis=0), 0.5 * float((masses * (v * v).sum(axis=1)).sum())


@pytest.mark.parametrize("restitution", [1.0, 0.5])
def test_twenty_balls_keep_their_momentum_at_every_impact_and_never_gain_energy(restitution):
    doc = _free_balls(restitution)
    sim = core.Simulation(_model(doc))
    p0, e0 = _books(sim, doc)
    impacts, energy = 0, [e0]
    while sim.state.t < 2.0 - 1e-9:
        n = len(sim.events)
        sim.step()
        p, e = _books(sim, doc)
        assert np.allclose(p, p0, atol=1e-12), sim.state.t
        if len(sim.events) > n:
            impacts += sum(1 for ev in sim.events[n:] if ev.kind == "bounce")
            energy.append(e)
    assert impacts >= 5
    if restitution == 1.0:
        assert np.allclose(energy, e0, rtol=1e-10)
    else:
        assert np.all(np.diff(energy) <= 1e-12 * e0) and energy[-1] < 0.95 * e0


# ---- over a table's edge -------------------------------------------------------------------------------------

def _table(ball: dict, friction: float, stabilization: float = 20.0, dt: float = 0.001) -> dict:
    return {"format_version": 1, "name": "edge", "gravity": [0, 0, -G],
            "simulation": {"dt": dt, "duration": 1.0},
            "bodies": [{"name": "table", "parent": "world", "joint": {"type": "fixed", "position": [0, 0, 0.45]},
                        "shapes": [{"type": "box", "size": [2.0, 1.0, 0.1], "mass": 20.0}]}, ball],
            "collisions": {"friction": friction, "stabilization": stabilization}}


def test_far_from_a_shape_the_separation_is_a_lower_bound_and_exact_near_it():
    """The broad phase (core.constraints._apart): a ball dropped from 1.5 m above a table's top face is outside the
    table's bounding ball (its half-diagonal, 1.12 m) until its last 0.9 m, and its open contact reports
    |x − c| − 1.12 m − r there, below the true separation and positive; inside it the exact separation. The
    touchdown comes at the free fall's time, √(2 (h + ε)/g), within the event tolerance."""
    r, h = 0.1, 1.5
    sim = core.Simulation(_model(_table(_ball("ball", [0.0, 0.0, 0.5 + r + h], radius=r), 0.5)))
    model = sim.model
    c = model.contacts[0]
    p = c.points[0]
    far = near = 0
    while not [e for e in sim.events if e.kind in ("touchdown", "bounce")]:
        kin = core.points.link_kinematics(model, sim.state.q)
        exact = c.touching(kin, p)[2]
        reported = sim.data.deviation[p.normal]
        centre = sim.state.q[2] - 0.45
        if centre - 1.0 * math.sqrt(1.0 + 0.25 + 0.0025) - r > 0:
            assert 0 < reported <= exact and reported == pytest.approx(centre - math.sqrt(1.2525) - r, abs=1e-12)
            far += 1
        else:
            assert reported == pytest.approx(exact, abs=1e-12)
            near += 1
        sim.step()
    assert far > 100 and near > 100
    touchdown = next(e for e in sim.events if e.kind in ("touchdown", "bounce"))
    t_star = math.sqrt(2 * (h + core.contacts.PENETRATION) / G)
    assert t_star - 1e-12 <= touchdown.t <= t_star + model.settings["event_tolerance"] + 1e-12


def test_drawn_contact_points_of_touching_shapes_sit_on_their_surfaces_and_apart_ones_use_the_steps_bound():
    """core.contacts.point_states (what the viewport draws) on twenty balls in a box after 1.5 s: a touching
    shape pair's point is measured exactly (on the ball's surface, at the radius from its centre along the
    normal: what Contact.touching gives) and touches (within 1e-8 m: before impacts opened the points they lift,
    a ball struck where it rested kept its floor contact closed 0.05 mm above the floor); a pair apart is not
    measured again (position NaN: not drawn) and reports the step's own separation, a lower bound of the exact
    one and exact near the shape."""
    sim = core.Simulation(_model(_scene("balls_in_a_box")))
    sim.run(1.5)
    model = sim.model
    states = core.contacts.point_states(model, sim.state, sim.data)
    kin = core.points.link_kinematics(model, sim.state.q)
    k = closed = apart = 0
    for c in model.contacts:
        for p in c.points:
            n, x, exact = c.touching(kin, p)
            if c.shape and states["mode"][k] == core.contacts.OPEN:
                assert np.all(np.isnan(states["position"][k]))
                assert states["separation"][k] == sim.data.deviation[p.normal]
                assert 0 < states["separation"][k] <= exact + 1e-12
                apart += 1
            elif c.shape:
                np.testing.assert_allclose(states["position"][k], x, atol=1e-15)
                assert states["separation"][k] == exact and abs(exact) < 1e-8
                closed += 1
            k += 1
    assert closed >= 5 and apart >= 100


def test_a_resting_ball_struck_from_below_leaves_the_floor_at_the_impulse_laws_speed():
    """A small ball (r = 0.05 m) slides frictionless at u = 6 cm/s into a big one (r = 0.1 m) resting on the
    floor: the line of centres n = (√8, 0, 1)/3 tilts up, so the elastic impulse P (the small ball's floor holds
    its vertical velocity; P (1 + n_x²) = 2 u n_x) lifts the big ball at P n_z = 2 u n_x n_z / (1 + n_x²) = 2 cm/s.
    Its floor point takes no impulse and opens at the impact (core.impacts.LIFT_SPEED), though that speed is far
    below the ground's rest speed (1 m/s), and the ball hops to v²/2g above the floor. Before, such a point stayed
    closed, holding a velocity its contact cannot have (its stabilization, 2 λ v = 0.8 m/s² < g, needs no pull to
    hold it, so no lift-off followed). The small ball stays on the floor."""
    u = 0.06

    def ball(name, x, v, r):
        return {"name": name, "parent": "world", "joint": {"type": "free", "q0": [*x, 1, 0, 0, 0],
                                                           "qd0": [0, 0, 0, *v]},
                "shapes": [{"type": "sphere", "radius": r, "mass": 1.0}]}
    doc = {"format_version": 1, "name": "struck", "gravity": [0, 0, -G], "simulation": {"dt": 0.001},
           "bodies": [ball("big", [0, 0, 0.1], [0, 0, 0], 0.1), ball("small", [-0.15, 0, 0.05], [u, 0, 0], 0.05)],
           "ground": {"friction": 0.0, "restitution": 0.0, "rest_speed": 1.0},
           "collisions": {"friction": 0.0, "restitution": 1.0}}
    sim = core.Simulation(_model(doc))
    while not any(e.what.startswith("big.small") for e in sim.events):
        sim.step()
    hit = next(e for e in sim.events if e.what.startswith("big.small"))
    lift = [e for e in sim.events if e.kind == "lift-off" and e.what.startswith("big.ground")]
    assert hit.kind == "bounce" and len(lift) == 1 and lift[0].t == hit.t
    nx, nz = math.sqrt(8) / 3, 1 / 3
    up = 2 * u * nx * nz / (1 + nx * nx)
    v = np.asarray(sim.state.qd)
    assert v[5] == pytest.approx(up - G * (sim.state.t - hit.t), abs=1e-8)   # (gravity over the rest of the step)
    assert v[3] == pytest.approx(2 * u * nx * nx / (1 + nx * nx), abs=1e-8)
    assert abs(v[11]) < 1e-12                                                # the small ball's floor holds it
    z = sim.run(2 * up / G)["q"][:, 2]
    assert z.max() - 0.1 == pytest.approx(up * up / (2 * G), rel=0.05)       # the hop, to 20 µm


def test_a_ball_sliding_over_an_edge_stays_on_it_and_leaves_at_the_energy_integrals_angle():
    """Frictionless, started on the edge at θ0 = 0.3 rad with speed v0 about it, no stabilization: the centre
    moves on the circle of radius r about the edge (the curvature term holds it there), and leaves where
    g cos θ = v²/r with v² = v0² + 2 g r (cos θ0 − cos θ): cos θ* = (v0²/(g r) + 2 cos θ0)/3."""
    r, th0, v0 = 0.1, 0.3, 0.4
    x = [1.0 + r * math.sin(th0), 0.0, 0.5 + r * math.cos(th0)]
    v = [v0 * math.cos(th0), 0.0, -v0 * math.sin(th0)]
    sim = core.Simulation(_model(_table(_ball("ball", x, v=v, radius=r), 0.0, stabilization=0.0)))
    model = sim.model
    lift = None
    worst = 0.0
    while sim.state.t < 0.5 and lift is None:
        sim.step()
        lift = next((e for e in sim.events if e.kind == "lift-off"), None)
        if lift is None:
            kin = core.points.link_kinematics(model, sim.state.q)
            c = model.contacts[0]
            worst = max(worst, abs(c.touching(kin, c.points[0])[2]))
    assert worst < 1e-10
    cos_star = (v0 ** 2 / (G * r) + 2 * math.cos(th0)) / 3
    th_star = math.acos(cos_star)
    t_star = quad(lambda th: r / math.sqrt(v0 ** 2 + 2 * G * r * (math.cos(th0) - math.cos(th))), th0, th_star,
                  epsabs=1e-13)[0]
    assert lift is not None and lift.t == pytest.approx(t_star, abs=1e-8)


@pytest.mark.parametrize("dt", [0.001, 0.0007])
def test_a_ball_sliding_off_a_face_over_the_edge_keeps_the_integrators_accuracy(dt):
    """Frictionless from the face at v0: it crosses onto the edge inside a step (dt = 0.7 ms) or at a step's end
    (1 ms). The contact keeps the face's plane over a step and the crossing is isolated like an event, so no step
    straddles the jump in ḧ: it stays on the edge to 1e-9 m and leaves where cos θ* = (v0²/(g r) + 2)/3 at the
    energy integral's time to 1e-8 s (a straddling step left it 3.8e-6 m off and 6.6e-6 s early)."""
    r, v0 = 0.1, 0.5
    sim = core.Simulation(_model(_table(_ball("ball", [-0.5, 0.0, 0.6], v=[v0, 0.0, 0.0], radius=r), 0.0, dt=dt)))
    model = sim.model
    c = model.contacts[0]
    worst, lift = 0.0, None
    while lift is None and sim.state.t < 3.3:
        sim.step()
        lift = next((e for e in sim.events if e.kind == "lift-off"), None)
        if lift is None:
            worst = max(worst, abs(c.touching(core.points.link_kinematics(model, sim.state.q), c.points[0])[2]))
    th_star = math.acos((v0 ** 2 / (G * r) + 2) / 3)
    t_star = 3.0 + quad(lambda th: r / math.sqrt(v0 ** 2 + 2 * G * r * (1 - math.cos(th))), 0, th_star,
                        epsabs=1e-13)[0]
    assert worst < 1e-9
    assert lift is not None and lift.t == pytest.approx(t_star, abs=1e-8)


def test_a_ball_rolling_off_the_table_leaves_its_edge_at_the_analytic_time():
    """Kearney's §3 example (an object rolling off a table's edge): a solid ball rolling at v0 reaches the edge,
    turns about it rolling, and leaves where cos θ* = (10 + 7 v0²/(g r))/17 (the energy integral of a ball
    rolling about the edge: I = 7/5 m r²); the time from the quadrature of θ̇(θ). The ball slips in its last
    0.1 ms (μ = 100 cannot hold the ratio F/N, which grows without bound as N → 0), and friction is explicit over
    a step: that slip leaves it 3.8e-6 s early at dt = 1 ms (1.2e-5 s late at 0.5 ms)."""
    doc = _scene("ball_off_table")
    sim = core.Simulation(_model(doc))
    sim.run(3.5)
    r = doc["bodies"][1]["shapes"][0]["radius"]
    x0, v0 = doc["bodies"][1]["joint"]["q0"][0], doc["bodies"][1]["joint"]["qd0"][3]
    edge = 1.0
    t_edge = (edge - x0) / v0
    w0 = v0 / r
    th_star = math.acos((10 + 7 * v0 ** 2 / (G * r)) / 17)
    t_star = t_edge + quad(lambda th: 1 / math.sqrt(w0 ** 2 + 10 / 7 * G / r * (1 - math.cos(th))), 0, th_star)[0]
    table = [e for e in sim.events if e.contact == "table.ball"]
    kinds = [e.kind for e in table]
    assert kinds[:1] == ["touchdown"] and "lift-off" in kinds
    lift = next(e for e in table if e.kind == "lift-off")
    assert all(e.t > t_star - 2e-4 for e in table[1:])       # rolling (stuck) until just before it leaves
    assert lift.t == pytest.approx(t_star, abs=5e-5)
    assert any(e.kind == "bounce" and e.contact == "ball.ground" for e in sim.events)


# ---- a segment's point sliding on another core's edge (core.geometry.crossing) --------------------------------

#: crossing()'s last arguments for a capsule's segment: no faces of its own, no sibling's edge left out, rank 0.
_CAPSULE = (np.zeros((2, 3)), False, -1, 0)


def _segment_core_distance(kind, half, c, e, length, n=4001):
    """Brute force: the least distance from the segment's points (n samples) to the core (core.geometry.nearest,
    checked against the core's own samples above), the parameter where it is least, and the core's part there."""
    best, best_u, region = np.inf, 0.0, -1
    for u in np.linspace(-length, length, n):
        s, nn = np.zeros(3), np.zeros(3)
        phi, got, _ = nearest(kind, half, c + u * e, s, nn)
        if phi < best:
            best, best_u, region = phi, u, got
    return best, best_u, region


@pytest.mark.parametrize("kind, half", [(SEGMENT, (0, 0, 0.4)), (BOX, (0.3, 0.2, 0.25))])
def test_a_sliding_pair_is_the_segments_nearest_and_is_found_wherever_the_nearest_is_an_edge_crossing(kind, half):
    """Random segments around a capsule's axis or a box: where crossing() finds a pair apart from the core, its h
    and u are the brute-force least distance and its place; and wherever the brute-force nearest point lies inside
    the segment on an edge of the core (the crossing no cap or corner stands for), crossing() finds it."""
    rng = np.random.default_rng(17)
    half = np.array(half, float)
    found = missed = 0
    for _ in range(300):
        c = rng.uniform(-0.7, 0.7, 3)
        e = rng.standard_normal(3)
        e /= np.linalg.norm(e)
        length = rng.uniform(0.1, 0.6)
        n, s = np.zeros(3), np.zeros(3)
        h, u, code, margin = crossing(c, e, length, kind, half, -1, n, s, *_CAPSULE)
        brute, brute_u, region = _segment_core_distance(kind, half, c, e, length)
        if brute <= 0:
            continue
        if code >= 0:
            found += 1
            assert margin >= 0 and h == pytest.approx(brute, abs=1e-6)
            assert u == pytest.approx(brute_u, abs=2 * length / 4000 + 1e-6) and abs(np.linalg.norm(n) - 1) < 1e-12
            assert np.allclose(c + u * e - s, h * n, atol=1e-12)          # the pair: along the normal
        elif abs(brute_u) < length * (1 - 1e-3) and region == EDGE:
            missed += 1
    assert found > 20 and missed == 0


@pytest.mark.parametrize("kind, half", [(SEGMENT, (0, 0, 0.4)), (BOX, (0.3, 0.2, 0.25))])
def test_the_sliding_points_rates_are_its_separations_derivatives(kind, half):
    """ḣ = n·ż and ḧ = n·z̈ + ṅ·ż + u̇ (n·ė) (core.geometry notes) against central differences of h along a
    random motion of the segment (its centre moving, its axis turning), and u̇ and ṅ against those of u and n."""
    rng = np.random.default_rng(23)
    half = np.array(half, float)
    checked = 0
    while checked < 60:
        e0 = rng.standard_normal(3)
        e0 /= np.linalg.norm(e0)
        c0, cd, w = rng.uniform(-0.6, 0.6, 3), rng.standard_normal(3), rng.standard_normal(3)
        n, s = np.zeros(3), np.zeros(3)
        h, u, code, _ = crossing(c0, e0, 1.0, kind, half, -1, n, s, *_CAPSULE)
        if code < 0:
            continue
        axis = w / np.linalg.norm(w)

        def at(t):
            a = np.linalg.norm(w) * t                        # e turned about w (Rodrigues), c moving at ċ
            e = e0 * math.cos(a) + np.cross(axis, e0) * math.sin(a) + axis * (axis @ e0) * (1 - math.cos(a))
            normal = np.zeros(3)
            return (*crossing(c0 + cd * t, e, 1.0, kind, half, code, normal, np.zeros(3), *_CAPSULE)[:2], normal)

        d = 1e-4
        (hm, um, nm), (hp, up, np_) = at(-d), at(d)
        ed = np.cross(w, e0)
        zd, zdd = cd + u * ed, u * np.cross(w, ed)
        nd = np.zeros(3)
        extra, ud = crossing_rates(c0, e0, kind, half, code, zd, ed, nd)
        assert (hp - hm) / (2 * d) == pytest.approx(n @ zd, rel=1e-6, abs=1e-8)
        assert (hp - 2 * h + hm) / d ** 2 == pytest.approx(n @ zdd + extra, rel=1e-5, abs=1e-5)
        assert (up - um) / (2 * d) == pytest.approx(ud, rel=1e-4, abs=1e-6)
        assert np.allclose((np_ - nm) / (2 * d), nd, rtol=1e-5, atol=1e-7)
        checked += 1


def _rod_on_edge(beyond: float) -> dict:
    """A capsule rod (r = 3 cm, 0.8 m, 1 kg) lying across a table's edge, perpendicular to it, its centre of mass
    ``beyond`` the edge; frictionless, no stabilization."""
    r = 0.03
    return {"format_version": 1, "name": "rod", "gravity": [0, 0, -G], "simulation": {"dt": 0.001},
            "bodies": [{"name": "table", "parent": "world", "joint": {"type": "fixed"},
                        "shapes": [{"type": "box", "size": [1.0, 1.0, 0.5], "position": [0.5, 0, 0.25],
                                    "mass": 1.0}]},
                       {"name": "rod", "parent": "world",
                        "joint": {"type": "free", "q0": [1.0 + beyond, 0, 0.5 + r, 1, 0, 0, 0]},
                        "shapes": [{"type": "capsule", "radius": r, "length": 0.8, "axis": [1, 0, 0],
                                    "mass": 1.0}]}],
            "collisions": {"restitution": 0.0, "friction": 0.0, "stabilization": 0.0}}


def test_a_rod_tipping_over_a_tables_edge_slides_on_it_and_leaves_at_the_lagrangian_time():
    """The rod's inner cap lifts off the table top at once, and the rod turns about the edge while sliding along
    it: its axis stays r from the edge with no stabilization (the sliding point's γ holds it there, to 1e-11 m), the
    energy books close, and it leaves the edge where the normal force of the two-degree-of-freedom Lagrangian
    (tilt θ, the centre's distance s from the contact along the axis; T = ½m((r² + s²)θ̇² + ṡ² + 2rθ̇ṡ) + ½Iθ̇²,
    V = mg(r cos θ − s sin θ)), integrated by scipy, vanishes. Before the sliding point, the caps alone let the
    rod fall through the edge."""
    r, m_rod, s0 = 0.03, 1.0, 0.1
    model = _model(_rod_on_edge(s0))
    inertia = model.tree.inertia_com[model.body_frame("rod")[0]][1, 1]

    def rhs(t, y):
        th, s, w, sd = y
        M = np.array([[m_rod * (r * r + s * s) + inertia, m_rod * r], [m_rod * r, m_rod]])
        f = [-2 * m_rod * s * sd * w + m_rod * G * (r * math.sin(th) + s * math.cos(th)),
             m_rod * s * w * w + m_rod * G * math.sin(th)]
        return [w, sd, *np.linalg.solve(M, f)]

    def normal(t, y):                                       # N = m (a·n + g cos θ), n = (sin θ, 0, cos θ)
        th, s, w, sd = y
        thdd, sdd = rhs(t, y)[2:]
        c, sn = math.cos(th), math.sin(th)
        ax = (-r * sn * w - sd * sn - s * c * w) * w + (r * c - s * sn) * thdd + sdd * c - sd * sn * w
        az = (-r * c * w - sd * c + s * sn * w) * w + (-r * sn - s * c) * thdd - sdd * sn - sd * c * w
        return m_rod * (ax * sn + az * c) + m_rod * G * c

    normal.terminal, normal.direction = True, -1
    t_star = solve_ivp(rhs, (0, 1), [0, s0, 0, 0], events=normal, rtol=1e-12, atol=1e-14).t_events[0][0]
    sim = core.Simulation(model)
    contact, slider = next((c, p) for c in model.contacts for p in c.points if p.half_length > 0)
    worst, lift = 0.0, None
    while lift is None and sim.state.t < 0.5:
        sim.step()
        lift = next((e for e in sim.events if e.kind == "lift-off" and e.what == slider.label), None)
        if lift is None:
            kin = core.points.link_kinematics(model, sim.state.q)
            worst = max(worst, abs(contact.touching(kin, slider)[2]))
    assert [e.kind for e in sim.events[:3]] == ["touchdown", "touchdown", "lift-off"]    # the inner cap leaves
    assert worst < 1e-11 and abs(sim.energy_error()) < 1e-9
    assert lift is not None and lift.t == pytest.approx(t_star, abs=1e-8)


def test_a_rod_lying_across_a_tables_edge_rests_on_its_inner_cap_and_the_edge():
    """Its centre of mass 5 cm inside the edge: it rests on the inner cap (on the top face) and the edge crossing
    (its normal on the boundary of the edge's cone, the face's: round-off flickered it in and out), with the
    lever rule's forces, N_edge = m g a/ℓ and N_cap = m g (ℓ − a)/ℓ (a the cap–centre distance, ℓ the cap–edge
    one), and stays put."""
    doc = _rod_on_edge(-0.05)
    doc["collisions"].update(friction=0.5, stabilization=20.0)
    model = _model(doc)
    sim = core.Simulation(model)
    q0 = sim.state.q.copy()
    sim.run(2.0)
    assert len(sim.events) <= 4 and np.abs(sim.state.q - q0).max() < 1e-6
    contact = next(c for c in model.contacts if any(p.half_length > 0 for p in c.points))
    cap = contact.points[0]
    slider = next(p for p in _closed(model, sim) if p.half_length > 0)      # (one of the two: one edge crossed)
    a, ell = 0.4, 0.45                                       # the cap at x = 0.55, the centre 0.95, the edge 1.0
    force = sim.data.constraint_force                        # (on the rod)
    assert force[slider.normal][2] == pytest.approx(G * a / ell, rel=1e-6)
    assert force[cap.normal][2] == pytest.approx(G * (ell - a) / ell, rel=1e-6)


def test_a_crossing_that_slides_in_from_a_capsules_end_takes_over_from_its_cap():
    """A log across two parallel bars, crossing the first at its cap's end, sliding along its axis (frictionless)
    so that the crossing slides into its segment: the cap and the crossing's sliding point both touch at the start,
    and the sliding point takes over from the cap (the two, a hair apart on one body, made nearly equal rows: in a
    scene their stick forces grew to 1e5 N against each other and the run diverged); the log slides on the two
    crossings at r₁ + r₂ (to 1e-8 m), their normal forces summing to m g."""
    doc = _bar_and_log(v=(0, 0.1, 0), friction=0.0)
    doc["bodies"][1]["joint"]["q0"][1] = -0.3
    bar2 = copy.deepcopy(doc["bodies"][0])
    bar2["name"] = "bar2"
    bar2["shapes"][0]["position"] = [0, -0.5, 0.5]
    doc["bodies"].insert(1, bar2)
    model = _model(doc)
    sim = core.Simulation(model)
    heights = sim.run(0.8)["q"][:, 2]
    assert np.abs(heights - 0.59).max() < 1e-8
    assert len(sim.events) < 12
    closed = [p for c in model.contacts for p in c.points
              if core.contacts.point_modes(model, sim.state)[p.slot] != core.contacts.OPEN]
    assert {p.half_length > 0 for p in closed} == {True}    # the crossings hold it, no cap
    assert sum(sim.data.constraint_force[p.normal][2] for p in closed) == pytest.approx(2.0 * G, rel=1e-6)


def _bar_and_log(v=(0.0, 0.0, 0.0), w=(0.0, 0.0, 0.0), friction=0.5, stabilization=20.0, x0=0.0, axis=(0, 1, 0),
                 lift=0.0) -> dict:
    """A capsule bar (r = 5 cm, 1 m) fixed along x at z = 0.5 and a free capsule log (r = 4 cm, 0.6 m, 2 kg) lying
    across it along ``axis``, centred ``x0`` along the bar, ``lift`` above touching."""
    z = 0.5 + 0.09 + lift
    return {"format_version": 1, "name": "bar_and_log", "gravity": [0, 0, -G], "simulation": {"dt": 0.001},
            "bodies": [{"name": "bar", "parent": "world", "joint": {"type": "fixed"},
                        "shapes": [{"type": "capsule", "radius": 0.05, "length": 1.0, "position": [0, 0, 0.5],
                                    "axis": [1, 0, 0], "mass": 1.0}]},
                       {"name": "log", "parent": "world", "joint": {"type": "free", "q0": [x0, 0, z, 1, 0, 0, 0],
                                                                    "qd0": [*w, *v]},
                        "shapes": [{"type": "capsule", "radius": 0.04, "length": 0.6, "axis": list(axis),
                                    "mass": 2.0}]}],
            "collisions": {"restitution": 0.0, "friction": friction, "rest_speed": 0.05,
                           "stabilization": stabilization}}


def test_a_log_thrown_along_a_bar_rolls_at_the_rolling_speed_and_hands_over_to_the_bars_cap():
    """Two capsules crossing: the log rests on the crossing of the axes (its centre r₁ + r₂ above the bar's axis,
    to 1e-9 m, the normal force m g), slides at v0 until friction makes it roll, at t_s = v0/(μg(1 + m r²/I)) and
    v0/(1 + I/(m r²)) (I about its own axis), rolls to the bar's end — where its crossing leaves the bar's segment
    and the bar's cap takes over, touching down at the crossing's time (after 1 nm of fall) — and over it."""
    v0, mu, x0 = 0.3, 0.5, 0.0
    model = _model(_bar_and_log(v=(v0, 0, 0), friction=mu, x0=x0))
    sim = core.Simulation(model)
    log = model.body_frame("log")[0]
    m_log, r = 2.0, 0.04
    inertia = model.tree.inertia_com[log][1, 1]
    t_s = v0 / (mu * G * (1 + m_log * r * r / inertia))
    v_roll = v0 / (1 + inertia / (m_log * r * r))
    x_s = x0 + v0 * t_s - 0.5 * mu * G * t_s ** 2
    t_end = t_s + (0.5 - x_s) / v_roll
    heights = []
    while sim.state.t < t_end - 0.01:
        sim.step()
        heights.append(sim.state.q[2])
    contact, slider = next((c, p) for c in model.contacts for p in c.points if p.half_length > 0)
    assert contact.body == "log"                             # (the point slides on the capsule that moves)
    assert np.abs(np.array(heights) - 0.59).max() < 1e-9
    assert sim.data.constraint_force[slider.normal][2] == pytest.approx(m_log * G, rel=1e-9)    # (on the log)
    stick = next(e for e in sim.events if e.kind == "stick")
    assert stick.what == slider.label and stick.t == pytest.approx(t_s, abs=1e-6)
    assert _rotate(sim.state.q[3:7], sim.state.qd[3:6])[0] == pytest.approx(v_roll, rel=1e-5)   # (world)
    sim.run(0.05)
    cap = next(e for e in sim.events if e.kind == "touchdown" and e.what != slider.label)
    assert cap.what == "bar.log.0.1" and cap.t == pytest.approx(t_end, abs=5e-5)     # the bar's cap at +x
    assert cap.velocity > -2e-4                              # (a handover, not a fall: 1 nm of it)


def test_a_tilted_spinning_log_slides_across_the_bar_on_their_crossing_with_no_stabilization():
    """Frictionless, the log tilted 0.3 rad, spinning at 2 rad/s and sliding along the bar: the crossing slides on
    both axes and the normal turns; its separation stays where it touched down (to 1e-11 m, no stabilization) and
    the energy books close, until it tips off."""
    th = 0.3
    doc = _bar_and_log(v=(0.2, 0, 0), w=(0, 0, 2.0), friction=0.0, stabilization=0.0,
                       axis=(0, math.cos(th), math.sin(th)), lift=0.09 / math.cos(th) - 0.09 + 1e-3)
    model = _model(doc)
    sim = core.Simulation(model)
    contact, slider = next((c, p) for c in model.contacts for p in c.points if p.half_length > 0)
    seps = []
    while sim.state.t < 0.4:
        sim.step()
        if core.contacts.point_modes(model, sim.state)[slider.slot] != core.contacts.OPEN:
            seps.append(contact.touching(core.points.link_kinematics(model, sim.state.q), slider)[2])
    assert len(seps) > 200 and np.ptp(seps) < 1e-11 and abs(seps[0]) <= 1.1e-9
    assert abs(sim.energy_error()) < 1e-9


# ---- the shipped scenes --------------------------------------------------------------------------------------

# ---- box edges crossing box edges ------------------------------------------------------------------------------

def _box_edges(half):
    """A box's twelve edges as (centre, unit axis, half-length, its two faces' outward normals), box frame."""
    out = []
    for a in range(3):
        i1, i2 = (a + 1) % 3, (a + 2) % 3
        for s1 in (-1.0, 1.0):
            for s2 in (-1.0, 1.0):
                c, f1, f2 = np.zeros(3), np.zeros(3), np.zeros(3)
                c[i1], c[i2] = s1 * half[i1], s2 * half[i2]
                f1[i1], f2[i2] = s1, s2
                out.append((c, np.eye(3)[a], half[a], np.array([f1, f2])))
    return out


def _random_rotation(rng):
    q = rng.standard_normal(4)
    q /= np.linalg.norm(q)
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_a_box_edges_pair_is_the_edges_nearest_and_lies_between_both_boxes_faces():
    """Random boxes around a box: where crossing() finds a pair for one of its edges (faces given) apart from the
    other box, its h is the brute-force least distance from the edge to the box, −n lies between the edge's own
    faces' normals and n between the other edge's; the pair found is the brute-force nearest wherever that lies
    inside the edge, on an edge of the other box, with −n in the first edge's cone."""
    rng = np.random.default_rng(29)
    half_b = np.array([0.3, 0.2, 0.25])
    found = missed = 0
    for _ in range(120):
        R = _random_rotation(rng)
        centre = rng.uniform(-0.8, 0.8, 3)
        half_a = rng.uniform(0.05, 0.3, 3)
        for c0, e0, length, faces0 in _box_edges(half_a):
            c, e, faces = centre + R @ c0, R @ e0, faces0 @ R.T
            n, s = np.zeros(3), np.zeros(3)
            h, u, code, margin = crossing(c, e, length, BOX, half_b, -1, n, s, faces, True, -1, 0)
            brute, brute_u, region = _segment_core_distance(BOX, half_b, c, e, length, n=801)
            if brute <= 1e-3:
                continue
            if code >= 0:
                found += 1
                assert margin >= 0 and h == pytest.approx(brute, abs=1e-5)
                assert np.all(faces @ -n >= -1e-9)
                assert np.allclose(c + u * e - s, h * n, atol=1e-12)
            elif abs(brute_u) < length * 0.99 and region == EDGE:
                x = c + brute_u * e
                y, m = np.zeros(3), np.zeros(3)
                nearest(BOX, half_b, x, y, m)
                if np.all(faces @ -m > 1e-3):
                    missed += 1
    assert found > 20 and missed == 0


def test_two_siblings_take_the_two_edges_a_segment_crosses_and_leave_each_other_s():
    """A segment lying just above a box's top face across it (a plank's edge over a beam): rank 0 and rank 1
    take the two top edges it crosses, at the same h; with one of them skipped (its sibling holds it), rank 0 takes
    the other; a segment whose faces face away from the box (the plank's top edge) has no pair."""
    half = np.array([0.1, 0.5, 0.1])
    c, e = np.array([0.02, 0.0, 0.13]), np.array([1.0, 0.0, 0.0])
    down = np.array([[0.0, 0.0, -1.0], [0.0, -1.0, 0.0]])          # a bottom edge's faces: −z and −y
    pairs = []
    for rank in (0, 1):
        n, s = np.zeros(3), np.zeros(3)
        h, u, code, margin = crossing(c, e, 0.5, BOX, half, -1, n, s, down, True, -1, rank)
        assert h == pytest.approx(0.03, abs=1e-12) and np.allclose(n, [0, 0, 1]) and margin >= -1e-12
        pairs.append((code, u))
    (code0, u0), (code1, u1) = pairs
    assert code0 // 2 != code1 // 2 and sorted([u0, u1]) == pytest.approx([-0.12, 0.08])
    n, s = np.zeros(3), np.zeros(3)
    assert crossing(c, e, 0.5, BOX, half, -1, n, s, down, True, code0 // 2, 0)[2] == code1
    up = -down                                                      # the top edge: its faces face up, away
    assert crossing(c, e, 0.5, BOX, half, -1, n, s, up, True, -1, 0)[2] == -1


def _plank_on_beam(lift=0.01, yaw=0.0, v=(0.0, 0.0, 0.0), friction=0.5, plank=None) -> dict:
    """A box beam (0.2 x 1 x 0.2 m) fixed along y with its top at z = 0.6, and a free plank (1 x 0.2 x 0.05 m,
    2 kg) across it along x turned ``yaw`` about z, ``lift`` above touching."""
    q = [0.0, 0.0, 0.625 + lift, math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]
    return {"format_version": 1, "name": "plank_on_beam", "gravity": [0, 0, -G], "simulation": {"dt": 0.001},
            "bodies": [{"name": "beam", "parent": "world", "joint": {"type": "fixed"},
                        "shapes": [{"type": "box", "size": [0.2, 1.0, 0.2], "position": [0, 0, 0.5], "mass": 1.0}]},
                       {"name": "plank", "parent": "world", "joint": {"type": "free", "q0": q, "qd0": [0, 0, 0, *v]},
                        "shapes": [plank or {"type": "box", "size": [1.0, 0.2, 0.05], "mass": 2.0}]}],
            "collisions": {"restitution": 0.0, "friction": friction, "rest_speed": 0.05, "stabilization": 20.0}}


def _closed(model, sim):
    modes = core.contacts.point_modes(model, sim.state)
    return [p for c in model.contacts for p in c.points if modes[p.slot] != core.contacts.OPEN]


@pytest.mark.parametrize("yaw", [0.0, 0.5])
def test_a_plank_dropped_across_a_beam_rests_on_the_four_crossings_of_their_edges(yaw):
    """Neither box has a corner over the other's face: before box edges slid, the plank fell through the beam.
    It lands at t = √(2 lift/g) on the four crossings of its two long bottom edges with the beam's two top edges
    (two per plank edge: the siblings), and rests at the beam's top to 1e-9 m, its weight shared among them."""
    model = _model(_plank_on_beam(yaw=yaw))
    sim = core.Simulation(model)
    rec = sim.run(1.0)
    assert rec["q"][:, 2].min() > 0.625 - 2e-9 and sim.state.q[2] == pytest.approx(0.625, abs=1e-9)
    touch = [e for e in sim.events if e.kind == "touchdown"]
    assert len(touch) == 4 and touch[0].t == pytest.approx(math.sqrt(2 * 0.01 / G), abs=1e-6)
    closed = _closed(model, sim)
    assert len(closed) == 4 and all(p.half_length > 0 and p.faces is not None for p in closed)
    assert len({(tuple(np.round(p.r, 9)), tuple(np.round(p.axis, 9))) for p in closed}) == 2     # two plank edges
    table = core.plan.plan_of(model, sim.inputs).constraints
    assert len({int(table[p.normal]["part"]) // 2 for p in closed}) == 2                      # two beam edges
    assert sum(sim.data.constraint_force[p.normal][2] for p in closed) == pytest.approx(2.0 * G, rel=1e-9)
    assert abs(sim.energy_error()) < 1e-9


def test_a_plank_pushed_along_a_beam_slides_on_the_crossings_to_the_coulomb_distance():
    """Pushed at 0.5 m/s along its length across the beam, the plank slides on the four crossings (each sliding
    along its plank edge) and sticks at t = v/(μg) after v²/(2μg), to 1e-8."""
    v, mu = 0.5, 0.5
    model = _model(_plank_on_beam(lift=0.0, v=(v, 0.0, 0.0), friction=mu))
    sim = core.Simulation(model)
    rec = sim.run(0.3)
    assert np.abs(rec["q"][:, 2] - 0.625).max() < 1e-9
    assert sim.state.q[0] == pytest.approx(v * v / (2 * mu * G), abs=1e-8)
    sticks = [e.t for e in sim.events if e.kind == "stick"]
    assert sticks and sticks[0] == pytest.approx(v / (mu * G), abs=1e-6)


def test_a_capsule_across_a_beam_rests_on_both_crossings():
    """A capsule longer than the beam is wide, lying across it, crosses both its top edges: its two sliding points
    (siblings) hold it there; one point alone let it tip about one edge through the other."""
    model = _model(_plank_on_beam(plank={"type": "capsule", "radius": 0.025, "length": 0.8, "axis": [1, 0, 0],
                                         "mass": 2.0}))
    sim = core.Simulation(model)
    rec = sim.run(1.0)
    assert rec["q"][:, 2].min() > 0.625 - 2e-9 and sim.state.q[2] == pytest.approx(0.625, abs=1e-9)
    closed = _closed(model, sim)
    assert len(closed) == 2 and all(p.half_length > 0 for p in closed)
    assert [sim.data.constraint_force[p.normal][2] for p in closed] == pytest.approx([G, G], rel=1e-9)


def test_a_cube_dropped_edge_on_edge_lands_on_the_crossing_and_tips_off_it_without_entering():
    """A cube turned 45° about y (a bottom edge along y) dropped onto a cube turned 45° about x (a top edge along
    x): they meet at the crossing of the two edges — no corner of either touches — at t = √(2 lift/g); started
    2 cm along its edge from the balance point it tips sideways off the lower edge, and no point sampled on its
    edges ever enters the lower cube by more than 1e-8 m (nor the lower's edges the upper)."""
    c, s = math.cos(math.pi / 8), math.sin(math.pi / 8)
    doc = _plank_on_beam(lift=0.0, friction=0.5)
    doc["bodies"][0]["shapes"][0].update(size=[0.2, 0.2, 0.2], orientation=[c, s, 0, 0])
    doc["bodies"][1]["shapes"][0].update(size=[0.2, 0.2, 0.2], mass=1.0, orientation=[c, 0, s, 0])
    lift = 0.01
    doc["bodies"][1]["joint"]["q0"][:3] = [0.0, 0.02, 0.5 + 0.2 * math.sqrt(2) + lift]
    model = _model(doc)
    sim = core.Simulation(model)
    R_lo = np.array([[1, 0, 0], [0, c * c - s * s, -2 * c * s], [0, 2 * c * s, c * c - s * s]])
    R_up0 = np.array([[c * c - s * s, 0, 2 * c * s], [0, 1, 0], [-2 * c * s, 0, c * c - s * s]])
    half = np.full(3, 0.1)
    samples = np.array([ce + t * ax * h for ce, ax, h, _ in _box_edges(half) for t in np.linspace(-1, 1, 41)])
    deepest = 0.0
    y, m = np.zeros(3), np.zeros(3)
    for _ in range(600):
        sim.step()
        q = sim.state.q
        R_up = core.points.link_kinematics(model, q).R_WL[model.body_frame("plank")[0]] @ R_up0
        for x in samples:                                   # the upper's edge points in the lower's frame
            z = R_lo.T @ (q[:3] + R_up @ x - np.array([0, 0, 0.5]))
            deepest = max(deepest, -nearest(BOX, half, z, y, m)[0])
        for x in samples:                                   # and the lower's in the upper's
            z = R_up.T @ (np.array([0, 0, 0.5]) + R_lo @ x - q[:3])
            deepest = max(deepest, -nearest(BOX, half, z, y, m)[0])
    first = next(e for e in sim.events if e.kind == "touchdown")
    assert first.t == pytest.approx(math.sqrt(2 * lift / G), abs=1e-6)
    slider = next(p for c_ in model.contacts for p in c_.points if p.label == first.what)
    assert slider.half_length > 0 and slider.faces is not None       # an edge's sliding point, not a corner
    assert deepest < 1e-8
    assert sim.state.q[2] < 0.5 + 0.2 * math.sqrt(2) - 0.05         # it fell off the crossing
    assert abs(sim.energy_error()) < 1e-6


def test_balls_thrown_into_a_box_never_pass_through_each_other_or_its_walls():
    doc = _scene("balls_in_a_box")
    model = _model(doc)
    sim = core.Simulation(model)
    rec = sim.run(2.5)
    q = rec["q"].reshape(len(rec["t"]), -1, 7)[:, :, :3]
    d = np.linalg.norm(q[:, :, None, :] - q[:, None, :, :], axis=-1)
    d[:, np.arange(20), np.arange(20)] = np.inf
    assert d.min() > 0.16 - 1e-6
    assert np.abs(q[:, :, :2]).max() < 0.7 - 0.08 + 1e-6 and q[:, :, 2].min() > 0.08 - 1e-6
    pairs = {e.contact for e in sim.events if e.kind == "bounce" and e.contact.count("ball") == 2}
    walls = {e.contact for e in sim.events if e.kind in ("bounce", "touchdown") and e.contact.startswith("box.")}
    assert len(pairs) >= 10 and len(walls) >= 20
    assert abs(sim.energy_error()) < 1e-6               # J, of about 40 J


def test_five_stacked_boxes_rest_ten_seconds():
    model = _model(_scene("box_stack"))
    sim = core.Simulation(model)
    q0 = sim.state.q.copy()
    sim.run(10.0)
    assert np.abs(sim.state.q - q0).max() < 1e-6
    assert np.abs(sim.state.qd).max() < 1e-8


# ---- what a user writes wrong --------------------------------------------------------------------------------

def test_collisions_name_an_unknown_body_by_its_path():
    doc = _free_balls(1.0)
    doc["collisions"]["exclude_pairs"] = [["ball0", "nobody"]]
    with pytest.raises(SceneError) as err:
        _model(doc)
    assert err.value.problems[0].path == "$.collisions.exclude_pairs[0][1]"


def test_a_pair_that_cannot_collide_is_named_in_a_warning():
    doc = _free_balls(1.0)
    doc["bodies"] = doc["bodies"][:2]
    for b in doc["bodies"]:
        b["shapes"] = [{"type": "cylinder", "radius": 0.1, "length": 0.2, "mass": 1.0}]
    with pytest.warns(UserWarning, match=r"ball0\[0\] \(cylinder\) and ball1\[0\] \(cylinder\) do not collide"):
        _model(doc)


def test_adding_collisions_in_the_document_makes_the_balls_collide():
    """The studio's Add ▸ Collisions Between Shapes (``studio.document.edits.add_collisions``: one undoable edit)."""
    from studio.document import edits
    doc = _free_balls(1.0)
    doc.pop("collisions")
    spec = parse_spec(doc)
    assert not compile_scene(spec).contacts
    with_collisions = edits.add_collisions(spec)
    model = compile_scene(with_collisions)
    assert len(model.contacts) == 190 and model.contacts[0].name == "ball0.ball1"
    with pytest.raises(SceneError, match="already"):
        edits.add_collisions(with_collisions)


def test_shapes_that_overlap_at_the_start_do_not_collide_and_are_named():
    """An exact contact cannot start inside a shape: a ball put inside another is left out of the collisions, with
    a warning naming both shapes and the depth; the others still collide."""
    doc = _free_balls(1.0)
    doc["bodies"] = doc["bodies"][:3]
    doc["bodies"][1]["joint"]["q0"][:3] = [0.05, 0.0, 0.0]     # 0.05 m from ball0's centre: 0.11 m deep
    with pytest.warns(UserWarning, match=r"ball0\[0\] \(sphere\) and ball1\[0\] \(sphere\) overlap by 0.11 m"):
        model = _model(doc)
    assert [c.name for c in model.contacts] == ["ball0.ball2", "ball1.ball2"]


def test_core_run_lists_the_pairs_that_touched_and_counts_the_rest(tmp_path, capsys):
    from core.__main__ import main
    doc = _free_balls(1.0)
    doc["simulation"]["duration"] = 0.3
    path = tmp_path / "balls.json"
    path.write_text(json.dumps(doc))
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    touched = [line for line in out.splitlines() if line.startswith("contact ")]
    assert touched and all("no events" not in line for line in touched)
    assert f"collisions: 190 pairs of shapes, {len(touched)} of them touched (listed above), " \
           f"{190 - len(touched)} never" in out


def test_the_boxes_crossing_scene_rests_its_plank_on_the_crossings_and_its_cube_on_the_floor():
    """The shipped scene: the plank lands across the beam and rests on the four crossings at the beam's top (to
    1e-8 m, never below by more than the isolation's tolerance); the cube lands edge on edge on the ridge, tips off
    it and comes to rest on the floor on a face (its centre at half its side, still), with balanced books."""
    model = _model(_scene("boxes_crossing"))
    sim = core.Simulation(model)
    rec = sim.run(3.0)
    plank, cube = slice(0, 7), slice(7, 14)
    assert rec["q"][:, 2].min() > 0.425 - 2e-9 and abs(sim.state.q[plank][2] - 0.425) < 1e-8
    assert sim.state.q[cube][2] == pytest.approx(0.1, abs=1e-6) and np.abs(sim.state.qd[6:12]).max() < 1e-6
    assert {e.contact for e in sim.events if e.kind == "touchdown"} >= {"beam.plank.1", "ridge.cube.1", "cube.ground"}
    assert abs(sim.energy_error()) < 1e-6


def test_a_body_welded_to_the_world_gets_no_ground_contact():
    """A table welded to the world standing on the floor: the ground gives it no contact (it cannot fall; its rows
    would have no velocity to act on), and a box dropped on the table lands on it."""
    doc = _scene("boxes_crossing")
    doc["bodies"] = doc["bodies"][:2]                    # the beam stands on the floor, welded
    model = _model(doc)
    assert [c.name for c in model.contacts if c.name.endswith(".ground")] == ["plank.ground"]
    sim = core.Simulation(model)
    sim.run(0.5)
    assert sim.state.q[2] == pytest.approx(0.425, abs=1e-8)


def test_a_box_settling_with_a_corner_on_a_tables_edge_does_not_chatter():
    """A random drop of three boxes onto a table (tests/data/three_boxes_dropped.json): the tall one settles with a
    corner on the table's edge, touched at the end of each of that corner's three edges. Their crossings handed
    the contact to one another at every nanometre of drift (every 0.1 ms) until the run stopped as chatter at
    0.70 s; a crossing in touch now keeps its pair up to CORNER_SLACK beyond its region. The run goes its 2 s, no
    contact point deeper than 1e-8 m, the books balanced."""
    doc = json.loads((ROOT / "tests" / "data" / "three_boxes_dropped.json").read_text())
    model = _model(doc)
    sim = core.Simulation(model)
    sim.run(2.0)
    kin = core.points.link_kinematics(model, sim.state.q)
    assert min(c.touching(kin, p)[2] for c in model.contacts for p in c.points) > -1e-8
    assert abs(sim.energy_error()) < 1e-6
