"""Contacts, impacts and their events (core.contacts; Kearney, Hansen & Cremer §3; McClamroch §6 eq. 40–42):
analytic bounce times and restitution, resting contact without a hang, a block that holds and lifts off, Coulomb
sliding at μg and rolling at 5/7 of the launch speed, the event log, integrators and formulations, bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import core
from core.contacts import OPEN, PENETRATION, STICK, point_modes
from core.scene import SceneError, compile_scene, parse_spec

ROOT = Path(__file__).resolve().parents[1]
G = 9.81


def _scene(name: str) -> dict:
    return json.loads((ROOT / "scenes" / f"{name}.json").read_text())


def _model(doc: dict) -> core.Model:
    return compile_scene(parse_spec(doc))


def _ball(height=1.0, radius=0.1, e=0.8, **contact) -> dict:
    doc = _scene("bouncing_ball")
    doc["bodies"][0]["joint"]["q0"][2] = height
    doc["bodies"][0]["shapes"][0]["radius"] = radius
    doc["contacts"][0].update(restitution=e, **contact)
    return doc


def normal_forces(model, data):
    """The normal force n·F of every contact point against its (ground) plane."""
    return np.array([c.normal @ data.constraint_force[p.normal] for c in model.contacts for p in c.points])


def _events(sim, kind=None):
    return [e for e in sim.events if kind is None or e.kind == kind]


# ---- a bouncing ball ------------------------------------------------------------------------------------------

def test_ball_bounces_at_the_analytic_times_with_the_restitution_energy_ratio():
    """Free flight between impacts is exact under RK4 (a quadratic), so every impact time and speed is known:
    t1 = √(2h/g), v_{k+1} = e v_k, t_{k+1} = t_k + 2 e v_k / g; each is isolated within event_tolerance."""
    h, e = 0.9, 0.8
    model = _model(_ball(height=1.0, e=e))
    tol = model.settings["event_tolerance"]
    sim = core.Simulation(model)
    sim.run(3.0)
    impacts = _events(sim, "bounce")
    assert len(impacts) >= 6
    v = np.sqrt(2 * G * h)
    t = np.sqrt(2 * h / G)
    for k, ev in enumerate(impacts[:6]):
        # each impact isolated within the tolerance, and touching down at 1e-9 m of penetration: the error of
        # one impact time carries into the next flights (measured 2.1e-9 s at the second impact)
        assert ev.t == pytest.approx(t, abs=(k + 1) * (2 * tol + PENETRATION / v)), k
        assert -ev.velocity == pytest.approx(v, rel=1e-7), k
        assert ev.impulse == pytest.approx((1 + e) * v, rel=1e-7)          # m = 1 kg
        t += 2 * e * v / G
        v *= e
    # energy ratio between consecutive bounces: (v_{k+1}/v_k)² = e²
    speeds = np.array([-ev.velocity for ev in impacts[:6]])
    assert np.allclose((speeds[1:] / speeds[:-1]) ** 2, e * e, rtol=1e-6)


@pytest.mark.parametrize("tol", [1e-6, 1e-9, 1e-12, 1e-15])
def test_an_impact_is_isolated_within_the_tolerance_in_one_trial_step(tol):
    """The first touchdown of a dropped ball, t* = √(2(h + ε)/g) (free flight is exact under RK4, ε the
    penetration a touchdown waits for), within ``event_tolerance`` after t* (to the round-off of t): the gap of a
    free flight is quadratic in t, so the cubic Hermite interpolant of its values and rates at the step's ends is
    exact and the first trial lands on t*, where the gap's value and rate say it crossed less than the tolerance
    before — one trial step at every tolerance. A second trial closing the bracket on its early side took two;
    the regula falsi on the values alone 2, 4, 5 and 7 at 1e-6, 1e-9, 1e-12 and 1e-15 s, and bisecting the 1 ms
    step 10, 20, 30 and 40 (State.event_work: the trials, and 1 for the instant)."""
    most = 1
    doc = _ball(height=1.0, e=0.8)
    doc["simulation"]["event_tolerance"] = tol
    sim = core.Simulation(_model(doc))
    t_star = np.sqrt(2 * (0.9 + PENETRATION) / G)
    sim.run(t_star + 0.0015)
    impact = _events(sim, "bounce")[0]
    assert t_star - 4e-15 <= impact.t <= t_star + tol + 4e-15
    assert sim.state.event_work - 1.0 <= most


def test_ball_comes_to_rest_in_a_resting_contact_without_a_hang():
    model = _model(_ball(e=0.8))
    sim = core.Simulation(model)
    sim.run(6.0)
    assert sim.steps_taken == 6000
    last = sim.events[-1]
    assert last.kind == "touchdown" and last.added == ("ground.0",)
    assert -last.velocity * 0.8 < model.contacts[0].rest_speed
    assert sim.state.q[2] == pytest.approx(0.1, abs=1e-9)
    assert np.abs(sim.state.qd).max() < 1e-9
    N = normal_forces(model, sim.data)
    assert N[0] == pytest.approx(G, rel=1e-9)                                 # resting: N = mg
    # energy: e² per bounce, then rest at the contact height
    assert sim.data.energy_total == pytest.approx(1.0 * G * 0.1, rel=1e-9)


def test_zeno_chatter_ends_in_an_error_not_a_hang():
    """With a vanishing rest speed the bounces of a ball with e = 0.5 accumulate (Zeno): the step refuses after
    MAX_EVENTS_PER_STEP events inside one step instead of hanging, and keeps the last good state."""
    model = _model(_ball(e=0.5, rest_speed=1e-30))          # (the smallest non-zero number a scene may hold)
    sim = core.Simulation(model)
    with pytest.raises(core.DivergenceError, match="chatter"):
        sim.run(5.0)
    assert 0.5 < sim.state.t < 5.0
    assert np.all(np.isfinite(sim.state.q))
    stepped = core.Simulation(model)                        # one step at a time: the step that chatters is undone
    with pytest.raises(core.DivergenceError, match="chatter"):
        for _ in range(5000):
            good = stepped.state
            stepped.step()
    assert stepped.state is good and stepped.state.t == pytest.approx(sim.state.t, abs=1e-3)


@pytest.mark.parametrize("integrator", ["cash_karp", "semi_implicit_euler"])
def test_other_integrators_isolate_the_first_impact(integrator):
    model = _model(_ball())
    sim = core.Simulation(model, integrator=integrator)
    sim.run(0.6)
    first = _events(sim)[0]
    tol = 1e-8 if integrator == "cash_karp" else 2e-3                    # Euler: first order in dt
    assert first.kind == "bounce"
    assert first.t == pytest.approx(np.sqrt(2 * 0.9 / G), abs=tol)


@pytest.mark.parametrize("formulation", ["multipliers", "projection"])
def test_other_formulations_hold_a_resting_ball(formulation):
    model = _model(_ball(height=0.3, e=0.0))
    sim = core.Simulation(model)
    sim.set_formulation(formulation)
    sim.run(1.0)
    assert _events(sim, "touchdown")
    assert sim.state.q[2] == pytest.approx(0.1, abs=1e-6)
    assert abs(sim.state.qd[5]) < 1e-6


# ---- a block: resting, lifted, sliding ------------------------------------------------------------------------

def test_block_holds_with_non_negative_normal_forces_then_lifts_off_when_pulled():
    model = core.load_scene(ROOT / "scenes" / "block_lifted.json")
    sim = core.Simulation(model)
    sim.run(0.49)
    N = normal_forces(model, sim.data)
    assert np.all(N >= -1e-9)
    assert N.sum() == pytest.approx(2.0 * G, rel=1e-9)                       # the four corners carry mg
    assert np.all(point_modes(model, sim.state) == STICK)
    assert abs(sim.state.q[2] - 0.1) < 1e-9
    sim.run(1.0)
    liftoffs = _events(sim, "lift-off")
    assert len(liftoffs) == 4
    for ev in liftoffs:                                                        # the pull starts at 0.5 s
        assert ev.t == pytest.approx(0.5, abs=2e-9)
        assert ev.removed == (ev.what, ev.what + ".stick")
    a = 30.0 / 2.0 - G                                                         # then free flight up
    assert sim.state.q[2] == pytest.approx(0.1 + 0.5 * a * (sim.state.t - 0.5) ** 2, rel=1e-6)
    assert np.all(point_modes(model, sim.state) == OPEN)


def test_a_weaker_pull_only_unloads_the_block():
    doc = _scene("block_lifted")
    doc["forces"][0]["force"] = [0, 0, 12.0]
    model = _model(doc)
    sim = core.Simulation(model)
    sim.run(1.0)
    assert not _events(sim, "lift-off")
    assert normal_forces(model, sim.data).sum() == pytest.approx(2.0 * G - 12.0, rel=1e-9)


def test_sliding_block_decelerates_at_mu_g_and_sticks_when_it_stops():
    mu, v0 = 0.3, 2.0
    model = core.load_scene(ROOT / "scenes" / "sliding_block.json")
    sim = core.Simulation(model)
    rec = sim.run(1.5)
    t, x, vx = rec["t"], rec["q"][:, 0], rec["qd"][:, 3]
    t_stop = v0 / (mu * G)
    sliding = (t > 0.01) & (t < t_stop - 0.01)
    a = np.gradient(vx[sliding], t[sliding])
    assert np.allclose(a, -mu * G, rtol=1e-6)
    assert np.allclose(x[sliding], v0 * t[sliding] - 0.5 * mu * G * t[sliding] ** 2, atol=1e-6)
    sticks = _events(sim, "stick")
    assert len(sticks) == 4
    assert all(ev.t == pytest.approx(t_stop, abs=1e-6) for ev in sticks)
    assert sim.state.q[0] == pytest.approx(v0 * v0 / (2 * mu * G), abs=1e-6)
    assert abs(sim.state.qd[3]) < 1e-9
    assert np.all(point_modes(model, sim.state) == STICK)


def test_a_sliding_ball_starts_rolling_at_five_sevenths_of_its_speed():
    """A solid sphere launched without spin slips until v = 5/7 v0 (friction decelerates it and spins it up:
    v = v0 − μgt, ωr = 5/2 μgt), then rolls: the stick event at t = 2 v0 / (7 μ g)."""
    mu, v0, r = 0.2, 1.4, 0.1
    doc = _ball(height=r, radius=r, e=0.0, friction=mu)
    doc["bodies"][0]["joint"]["qd0"] = [0, 0, 0, v0, 0, 0]
    model = _model(doc)
    sim = core.Simulation(model)
    sim.run(0.8)
    sticks = _events(sim, "stick")
    assert len(sticks) == 1
    assert sticks[0].t == pytest.approx(2 * v0 / (7 * mu * G), rel=1e-5)
    v = core.point_velocity(model, sim.state.q, sim.state.qd, "ball", [0, 0, 0])     # world, of the centre
    assert v[0] == pytest.approx(5 / 7 * v0, rel=1e-5) and abs(v[1]) < 1e-9
    stick = model.constraint_names.index("ground.0.stick")
    # the touching point is at rest (rolling) up to the O(dt²) of holding, over a step, the body point that
    # touches at the step's middle: measured 1.25e-5 m/s at dt = 1 ms and ω = 10 rad/s
    assert np.abs(sim.data.velocity_a[stick]).max() < 5e-5
    assert point_modes(model, sim.state)[0] == STICK
    assert sim.state.q[2] == pytest.approx(r, abs=1e-6)


def test_the_event_log_lists_additions_and_removals_in_time_order():
    model = core.load_scene(ROOT / "scenes" / "block_lifted.json")
    sim = core.Simulation(model)
    sim.run(1.0)
    times = [e.t for e in sim.events]
    assert times == sorted(times)
    touch = _events(sim, "touchdown")
    assert [e.added for e in touch] == [(f"ground.{i}", f"ground.{i}.stick") for i in range(4)]
    assert all(e.t == 0.0 for e in touch)                             # resting from the start
    assert [e.removed[0] for e in _events(sim, "lift-off")] == [f"ground.{i}" for i in range(4)]


def test_pure_step_and_simulation_agree_through_an_impact():
    model = _model(_ball(height=0.2))
    sim = core.Simulation(model)
    state = model.initial_state()
    log = []
    for _ in range(300):
        state, data, events = core.step(model, state)
        log.extend(events)
        sim.step()
    assert [e.kind for e in log] == [e.kind for e in sim.events]
    assert np.array_equal(state.q, sim.state.q) and np.array_equal(state.qd, sim.state.qd)


def test_snapshot_and_restore_resume_a_contact_run_bit_identically():
    model = core.load_scene(ROOT / "scenes" / "sliding_block.json")
    sim = core.Simulation(model)
    sim.run(0.3)
    snap = sim.snapshot()
    sim.run(0.5)
    first = sim.state.q.copy()
    sim.restore(snap)
    sim.run(0.5)
    assert np.array_equal(first, sim.state.q)


def test_box_of_balls_ends_with_every_ball_at_rest():
    model = core.load_scene(ROOT / "scenes" / "box_of_balls.json")
    sim = core.Simulation(model)
    sim.run(8.0)
    z = sim.state.q[2::7]
    assert np.allclose(z, 0.08, atol=1e-9)
    assert np.abs(sim.state.qd).max() < 1e-8
    assert len(_events(sim, "touchdown")) == 20


# ---- the command line and bad input ---------------------------------------------------------------------------

def test_core_run_reports_the_contacts_and_writes_the_event_log(tmp_path):
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "core", "run", str(ROOT / "scenes" / "block_lifted.json"),
                          "--duration", "1.0", "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    # a hop is a lift-off after a stance (as the hopping programs count): the block, resting from t = 0, leaves once
    assert "contact 'ground': 4 touchdowns, 4 lift-offs; 1 hop;" in res.stdout
    summary = json.loads((out / "summary.json").read_text())
    kinds = [e["type"] for e in summary["events"]]
    assert kinds.count("touchdown") == 4 and kinds.count("lift-off") == 4


@pytest.mark.parametrize("change, path", [
    (lambda d: d["contacts"][0].update(body="nobody"), "$.contacts[0].body"),
    (lambda d: d["contacts"][0].update(body="world"), "$.contacts[0].body"),
    (lambda d: d["contacts"][0].update(points=["c1", "nowhere"]), "$.contacts[0].points[1]"),
    (lambda d: d["contacts"][0].update(restitution=1.5), "$.contacts[0].restitution"),
    (lambda d: d["contacts"][0].update(friction=-1), "$.contacts[0].friction"),
    (lambda d: d["contacts"][0]["plane"].update(normal=[0, 0, 0]), "$.contacts[0].plane.normal"),
])
def test_bad_contacts_are_named_validation_errors(change, path):
    doc = _scene("block_lifted")
    doc["contacts"][0]["plane"] = {"origin": [0, 0, 0]}
    change(doc)
    with pytest.raises(SceneError) as info:
        _model(doc)
    assert any(p.path == path for p in info.value.problems), [str(p) for p in info.value.problems]


def test_a_body_without_contact_points_is_refused():
    """A contact without points takes its body's touching shapes' points; a body whose shapes are all drawn only
    has none, and the contact is refused at its points."""
    doc = _scene("block_lifted")
    del doc["contacts"][0]["points"]
    doc["bodies"][0]["shapes"] = [{"type": "cylinder", "radius": 0.1, "length": 0.2, "purpose": "visual"}]
    doc["bodies"][0]["inertial"] = {"mass": 2.0, "com": [0, 0, 0], "inertia": [0.01, 0.01, 0.01, 0, 0, 0]}
    with pytest.raises(SceneError) as info:
        _model(doc)
    assert info.value.problems[0].path == "$.contacts[0].points"
    doc["bodies"][0]["shapes"][0]["purpose"] = "both"                   # a cylinder touches at its rims
    assert len(_model(doc).contacts[0].points) == 16


def test_impact_holds_keep_a_joints_velocity_through_an_impact():
    """A two-link leg (hip slider, knee hinge) dropped on its foot: a free knee jumps at the impact, a knee the
    contact holds (its actuator answers the impulse, Kearney §4.2) keeps its velocity and the impulse is larger."""
    doc = {"format_version": 1, "name": "leg", "gravity": [0, 0, -9.81],
           "bodies": [{"name": "hipbox", "parent": "world", "joint": {"type": "slider", "name": "z",
                                                                         "axis": [0, 0, 1], "q0": 0.5, "qd0": -1.0},
                       "shapes": [{"type": "box", "size": [0.2, 0.2, 0.2], "mass": 5.0}]},
                      {"name": "shank", "parent": "hipbox",
                       "joint": {"type": "hinge", "name": "knee", "axis": [0, 1, 0], "q0": 0.6},
                       "shapes": [{"type": "capsule", "radius": 0.02, "length": 0.3, "position": [0, 0, -0.2],
                                   "mass": 0.5}],
                       "points": {"foot": [0, 0, -0.4]}}],
           "contacts": [{"name": "foot", "body": "shank", "points": ["foot"], "friction": 0.0}]}
    results = {}
    for holds in ([], ["knee"]):
        doc["contacts"][0]["impact_holds"] = holds
        model = _model(doc)
        sim = core.Simulation(model)
        before = None
        while not _events(sim, "touchdown") and not _events(sim, "bounce"):
            before = sim.state.qd.copy()
            sim.step()
        impact_event = sim.events[0]
        assert impact_event.t < 0.2
        results[bool(holds)] = (impact_event, sim.state.qd.copy(), before)
    free, held = results[False], results[True]
    knee = 1
    assert abs(held[1][knee] - held[2][knee]) < 0.1                   # held: a step of smooth motion (0.03)
    assert abs(free[1][knee] - free[2][knee]) > 0.5                   # free: the knee jumps
    assert held[0].impulse > free[0].impulse


def test_impact_holds_name_hinges_or_sliders():
    doc = _scene("block_lifted")
    doc["contacts"][0]["impact_holds"] = ["nope"]
    with pytest.raises(SceneError) as info:
        _model(doc)
    assert any(p.path == "$.contacts[0].impact_holds[0]" for p in info.value.problems)


# ---- joint limits -----------------------------------------------------------------------------------------------

def test_a_pendulum_strikes_its_joint_limit_at_the_time_and_speed_energy_gives():
    """Released at rest from q0 = 1.2 rad, a 1 kg pendulum at 1 m (I = 1 + 1e-4 kg·m² about the hinge) reaches
    its lower limit 0.3 rad at t = ∫ dq / q̇(q), q̇² = 2 m g l (cos q − cos q0) / I (by quadrature), and leaves
    it at e times that speed; the following strikes keep the ratio e, then it rests on the limit, which holds it
    with gravity's torque m g l sin 0.3."""
    from scipy.integrate import quad
    model = core.load_scene(ROOT / "scenes" / "pendulum_joint_limit.json")
    I, q0, lower, e = 1.0 + 1e-4, 1.2, 0.3, 0.5
    speed = lambda q: np.sqrt(2 * G * (np.cos(q) - np.cos(q0)) / I)
    # t = ∫ dq / q̇ with the 1/√ singularity at q0 removed by q = q0 − u²
    t1 = quad(lambda u: 2 * u / speed(q0 - u * u), 0.0, np.sqrt(q0 - lower), epsabs=1e-13, epsrel=1e-13)[0]
    sim = core.Simulation(model)
    sim.run(6.0)
    strikes = [ev for ev in sim.events if ev.kind in ("limit", "limit-bounce")]
    assert strikes[0].t == pytest.approx(t1, abs=1e-8)
    assert -strikes[0].velocity == pytest.approx(speed(lower), rel=1e-8)
    assert strikes[0].impulse == pytest.approx(I * (1 + e) * speed(lower), rel=1e-8)
    v = np.array([-ev.velocity for ev in strikes])
    assert np.allclose(v[1:6] / v[:5], e, rtol=1e-6)
    assert strikes[-1].kind == "limit" and strikes[-1].added == ("swing.lower",)
    assert sim.state.q[0] == pytest.approx(lower, abs=1e-9) and abs(sim.state.qd[0]) < 1e-9
    lam = sim.data.constraint_force[model.constraint_names.index("swing.lower")][0]
    assert lam == pytest.approx(G * np.sin(lower), rel=1e-9)


def test_a_joint_limit_releases_when_the_joint_is_driven_away():
    doc = _scene("pendulum_joint_limit")
    doc["bodies"][0]["joint"]["q0"] = 0.3
    doc["forces"] = [{"type": "actuator", "name": "motor", "joint": "swing", "torque": 0.0}]
    model = _model(doc)
    sim = core.Simulation(model)
    sim.run(0.3)                                            # it falls onto the limit at once and rests there
    assert sim.state.active[model.constraint_names.index("swing.lower")]
    sim.set_actuator("motor", 5.0)                          # more than m g l sin 0.3 = 2.9 N·m: it lifts off
    sim.run(0.2)
    release = [ev for ev in sim.events if ev.kind == "limit-release"]
    assert len(release) == 1 and release[0].removed == ("swing.lower",)
    assert release[0].t == pytest.approx(0.3, abs=2e-3)
    assert sim.state.q[0] > 0.3


def test_a_bound_released_at_rest_with_no_load_is_not_taken_again_at_once():
    """The limp lsa7 arm (a URDF with joint limits, no actuation) falls onto its bounds; its wrist came to rest on
    its upper bound with no load, the bound's force crossed zero by round-off (−4e-9 N·m), the bound was released
    with the joint 7e-9 rad beyond it and taken again at once: 64 events inside one step at 1.37 s, reported as
    chatter. A released bound is taken again only when the joint moves into it faster than round-off or goes
    beyond it by more than 1e-6 (core.witnesses.LIMIT_CREEP, LIMIT_SLACK): the arm runs on, inside its bounds."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # (the URDF's joint friction is named, not imported)
        model = core.load_scene(ROOT / "assets" / "urdf" / "lsa7_arm.urdf")
    sim = core.Simulation(model)
    sim.run(3.0)                                            # (it stopped at 1.37 s)
    assert sim.state.t == pytest.approx(3.0)
    assert sum(e.kind in ("limit", "limit-release") for e in sim.events) > 20      # it did rest on its bounds
    q = sim.state.q
    assert all(lim.bounds[0] - 1e-5 <= q[lim.q] <= lim.bounds[1] + 1e-5 for lim in model.limits)


def test_a_bound_released_beyond_it_while_the_joint_leaves_is_not_taken_again():
    """A bound held while the joint is beyond it (the drift its stabilization removes, after violent impacts) and
    released there: the joint leaves the violation by itself. Taken again at once because it was beyond by more
    than LIMIT_SLACK, its impact found it moving out and bounced it with no impulse, again and again — more than
    64 events in one step (Menagerie's Go2 collapsing onto its thigh limits at 0.56 s). Now it is taken only when
    moving into the bound: the pendulum, 1 mrad beyond its lower bound and leaving at 0.5 rad/s, is inside in
    2 ms, swings up and strikes the bound again only on its way back, at the time energy gives."""
    from dataclasses import replace
    model = core.load_scene(ROOT / "scenes" / "pendulum_joint_limit.json")
    lower, v0 = 0.3, 0.5
    state = replace(model.initial_state(), q=np.array([lower - 1e-3]), qd=np.array([v0]))
    events = []
    for _ in range(400):
        state, _, logged = core.step(model, state)
        events += logged
    strikes = [e for e in events if e.kind in ("limit", "limit-bounce")]
    assert strikes and strikes[0].velocity < 0                 # it struck moving in, on its way back
    I = 1.0 + 1e-4                                          # ½ I q̇² + m g l (1 − cos q) is conserved
    assert strikes[0].t > 0.1 and -strikes[0].velocity == pytest.approx(
        np.sqrt(v0 ** 2 + 2 * G * (np.cos(lower) - np.cos(lower - 1e-3)) / I), rel=1e-6)


@pytest.mark.parametrize("joint, path", [
    ({"limits": [1.0, 0.5]}, "$.bodies[0].joint"),
    ({"limits": [0.5, 1.0], "q0": 2.0}, "$.bodies[0].joint"),
    ({"limit_restitution": 2.0}, "$.bodies[0].joint.limit_restitution"),
])
def test_bad_joint_limits_are_named(joint, path):
    doc = _scene("pendulum_joint_limit")
    doc["bodies"][0]["joint"].update(joint)
    with pytest.raises(SceneError) as info:
        _model(doc)
    assert any(p.path.startswith(path) for p in info.value.problems), [str(p) for p in info.value.problems]


def test_the_event_log_is_written_beside_the_time_series(tmp_path):
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "core", "run", str(ROOT / "scenes" / "bouncing_ball.json"),
                          "--duration", "1.5", "--out", str(out), "--quiet"], capture_output=True, text=True,
                         cwd=ROOT)
    assert res.returncode == 0, res.stderr
    data = np.load(out / "timeseries.npz")
    assert list(data["event_type"]) == ["bounce", "bounce"]                   # at 0.428 and 1.114 s
    assert list(data["event_what"]) == ["ground.0"] * 2
    assert data["event_t"][0] == pytest.approx(np.sqrt(2 * 0.9 / G), abs=2e-9)
    assert data["event_impulse"][0] == pytest.approx(1.8 * np.sqrt(2 * G * 0.9), rel=1e-7)
    summary = json.loads((out / "summary.json").read_text())
    assert [e["t"] for e in summary["events"]] == list(data["event_t"])


def test_a_lift_off_delay_holds_a_fresh_contact_until_it_has_passed():
    """Kearney §5: the lift-off event is armed only a while after touchdown. The block rests from t = 0; a 30 N
    pull from 0.05 s would lift it at once, but with a 0.2 s delay the contact holds (with tensile normal forces)
    and lets go at 0.2 s."""
    doc = _scene("block_lifted")
    doc["forces"][0]["start"] = 0.05
    doc["contacts"][0]["liftoff_delay"] = 0.2
    model = _model(doc)
    sim = core.Simulation(model)
    sim.run(0.15)
    assert normal_forces(model, sim.data).sum() == pytest.approx(2.0 * G - 30.0, rel=1e-9)    # pulling: held
    assert not _events(sim, "lift-off")
    sim.run(0.1)
    liftoffs = _events(sim, "lift-off")
    assert len(liftoffs) == 4 and all(ev.t == pytest.approx(0.2, abs=2e-9) for ev in liftoffs)
    assert np.all(np.isnan(sim.state.touched))


def _box_impacts(mu: float, count: int, seed: int, oracle: bool = False):
    """A box's eight corners in one inelastic impact against the ground with friction ``mu``, at random
    orientations and velocities, by the compiled impact (``oracle``: by the NumPy one of tests/oracle):
    ``(qd⁻, per corner (world velocity after, P_n, P_t), the impact's energy change)``."""
    from dataclasses import replace

    from core.contacts import contact_rows
    from core.points import jacobian_at, link_kinematics
    from oracle.impacts import impact
    from probe import impact_at
    doc = _scene("block_lifted")
    doc["forces"] = []
    doc["contacts"][0]["friction"] = mu
    model = _model(doc)
    c = model.contacts[0]
    assert np.allclose(c.normal, [0.0, 0.0, 1.0])                        # (the tests read v_n as the z velocity)
    rng = np.random.default_rng(seed)
    touching = [(c, p) for p in c.points]
    for _ in range(count):
        q = model.q0.copy()
        u = rng.standard_normal(4)
        q[3:7] = u / np.linalg.norm(u)
        qd = 2.0 * rng.standard_normal(6)
        kin = link_kinematics(model, q)
        state = replace(model.initial_state(), q=q, qd=qd)
        if oracle:
            after, info = impact(model, state, touching, contact_rows(model))
            per = [info[(c.name, p.label)][:2] for _, p in touching]
            de = info["energy_change"]
        else:
            res = impact_at(model, state, [("point", p.slot) for _, p in touching])
            after, per, de = res.qd, list(zip(res.pn, res.pt)), res.energy_change
        corners = [(jacobian_at(model, kin, p.link, p.r) @ after, *per[k]) for k, (_, p) in enumerate(touching)]
        yield qd, corners, de


def test_a_frictionless_impact_on_several_corners_leaves_none_moving_into_the_ground():
    """Complementarity of the impact's normal impulses (McClamroch eq. 40–42 at the velocity level): a box's eight
    corners taking part in one inelastic frictionless impact, at random orientations and velocities, each leave
    it with v_n⁺ ≥ 0 and P_n ≥ 0, and v_n⁺ = 0 where P_n > 0. (Dropping corners whose impulse would pull is not
    enough — in 28 of 2000 such states a dropped corner was left moving into the ground: the active set takes it
    back.)"""
    for qd, corners, _ in _box_impacts(0.0, 1000, 0):
        for w, pn, _ in corners:
            vn = w[2]                                                    # the ground's normal is +z
            assert vn >= -1e-9 * (1 + np.abs(qd).max()) and pn >= -1e-9
            assert pn <= 1e-9 or abs(vn) <= 1e-9 * (1 + np.abs(qd).max())


@pytest.mark.parametrize("mu", [0.3, 1.0])
def test_a_frictional_impact_on_several_corners_satisfies_coulombs_complementarity(mu):
    """With friction, dropping and taking back corners (the active set) left about one eight-corner impact in six
    with a corner moving into the ground (at −0.8 of the speeds involved); such impacts are solved again as the
    complementarity problem with Coulomb's cone. At random orientations and velocities every corner then leaves
    with v_n⁺ ≥ 0, P_n ≥ 0, v_n⁺ = 0 where P_n > 0, ‖P_t‖ ≤ μ P_n, no tangential velocity where the impulse is
    inside the cone, and the impact never adds energy. (On the cone's edge the impulse opposes the pre-impact
    slip when the active set solved it, the post-impact slip when the cone problem did.)"""
    for qd, corners, info in _box_impacts(mu, 300, 1):
        tol = 1e-6 * (1 + np.abs(qd).max())
        assert info <= tol
        for w, pn, pt in corners:
            vn, vt = w[2], np.array([w[0], w[1], 0.0])                   # the ground's normal is +z
            assert vn >= -tol and pn >= -tol and (pn <= tol or abs(vn) <= tol)
            assert np.linalg.norm(pt) <= mu * max(pn, 0.0) * (1 + 1e-6) + tol
            if np.linalg.norm(pt) < mu * pn * (1 - 1e-6):
                assert np.linalg.norm(vt) <= tol                       # inside the cone: it sticks


def _a_solution(qd, corners, de, mu) -> bool:
    """Whether an impact's outcome satisfies Coulomb's impact conditions (the checks of the test above)."""
    tol = 1e-6 * (1 + np.abs(qd).max())
    if de > tol:
        return False
    for w, pn, pt in corners:
        vn, vt = w[2], np.array([w[0], w[1], 0.0])
        if vn < -tol or pn < -tol or (pn > tol and abs(vn) > tol):
            return False
        if np.linalg.norm(pt) > mu * max(pn, 0.0) * (1 + 1e-6) + tol:
            return False
        if np.linalg.norm(pt) < mu * pn * (1 - 1e-6) and np.linalg.norm(vt) > tol:
            return False
    return True


@pytest.mark.parametrize("mu", [0.0, 0.3, 1.0])
def test_the_compiled_impact_equals_the_numpy_oracle(mu):
    """The compiled impact (articulated-body solves for M⁻¹Rᵀ, a compiled SVD for the active set's least squares)
    gives the impulses and post-impact velocities of the NumPy oracle (M inverted, numpy's lstsq) on random
    eight-corner impacts — except where Coulomb's impact problem has more than one solution and round-off sends
    the two down different branches (1 of these 60 at μ = 1): there both outcomes must be solutions."""
    mine = _box_impacts(mu, 60, 2)
    theirs = _box_impacts(mu, 60, 2, oracle=True)
    branches = 0
    for (qd, a, de_a), (_, b, de_b) in zip(mine, theirs):
        scale = 1 + np.abs(qd).max()
        same = abs(de_a - de_b) <= 1e-7 * scale ** 2 and all(
            np.allclose(wa, wb, atol=1e-7 * scale) and abs(pna - pnb) <= 1e-7 * scale
            and np.allclose(pta, ptb, atol=1e-7 * scale) for (wa, pna, pta), (wb, pnb, ptb) in zip(a, b))
        if not same:
            assert mu > 0 and _a_solution(qd, a, de_a, mu) and _a_solution(qd, b, de_b, mu)
            branches += 1
    assert branches <= (2 if mu > 0 else 0), branches


@pytest.mark.parametrize("mu", [0.3, 1.0])
def test_gauss_seidels_local_problem_solves_one_points_coulomb_impact(mu):
    """The complementarity fallback's local problem (core.impacts._contact_block: one point's normal and
    tangential impulses together, against the others' row velocities r): on random 3 x 3 blocks W = R M⁻¹ Rᵀ its
    impulse P leaves v = r + W P with v_n ≥ 0, P_n ≥ 0, P_n v_n = 0, ‖P_t‖ ≤ μ P_n, no slip inside the cone and
    on its edge an impulse opposing the slip; the oracle's (tests/oracle) agrees. Updated one after the other the
    normal and tangential impulses made the sweeps cycle on Menagerie's Go2, leaving a calf's point moving into
    the ground with no impulse."""
    from core.impacts import _contact_block
    from oracle.impacts import _block
    rng = np.random.default_rng(4)
    slid = 0
    for _ in range(400):
        R = rng.standard_normal((3, 3))
        W = R @ R.T + 0.05 * np.eye(3)
        r = rng.standard_normal(3)
        P = np.zeros(3)
        _contact_block(W, r.copy(), np.zeros(3), 0, 2, mu, 0.0, P)
        v = r + W @ P
        tol = 1e-9 * (1 + np.abs(r).max()) * (1 + np.abs(W).max())
        pt, vt = np.linalg.norm(P[1:]), np.linalg.norm(v[1:])
        assert v[0] >= -tol and P[0] >= -tol and min(P[0], abs(v[0])) <= tol
        assert pt <= mu * P[0] * (1 + 1e-9) + tol
        if pt < mu * P[0] * (1 - 1e-6):
            assert vt <= tol
        elif vt > tol:
            slid += 1
            assert P[1:] @ v[1:] == pytest.approx(-pt * vt, rel=1e-6)
        assert np.allclose(P, _block(W, r, 0.0, mu), atol=1e-8 * (1 + np.abs(P).max()))
    assert slid > 40                                       # (the sliding branch was exercised)
