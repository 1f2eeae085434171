"""Control programs (core.programs; Kearney, Hansen & Cremer §4–5): registration, validation with JSON paths,
the hooks, watches isolated as events, the log of added and removed constraints, control equations solved at
every integrator stage, momentum about the centre of mass, Kearney's particle (eq. 9–10) and Raibert's hopper
hopping on (§5)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import core
from core.programs import PROGRAMS, ControlProgram, Controls, Equation, ProgramError, momentum, register
from core.scene import SceneError, compile_scene, parse_spec

ROOT = Path(__file__).resolve().parents[1]


def _doc(name: str) -> dict:
    return json.loads((ROOT / "scenes" / f"{name}.json").read_text())


@register
class Toggler(ControlProgram):
    """A test program: removes its constraint at t_off, adds it back at t_on, records the events it sees."""
    kind = "test_toggler"
    parameters = {"constraint": "tip_nail", "t_off": 0.1, "t_on": 0.2}

    def start(self, ctl):
        self.seen = []
        self.started_at = ctl.t
        ctl.declare("t", "time")
        ctl.watch("off", "t", self.p["t_off"])

    def event(self, ctl, event):
        self.seen.append(event.kind)
        if event.what == "p.off":
            ctl.remove(self.p["constraint"])
            ctl.watch("on", "t", self.p["t_on"])
        elif event.what == "p.on":
            ctl.add(self.p["constraint"])


def _nailed_with(program: dict, enabled=True) -> dict:
    doc = _doc("arm_nail_singular")
    name = doc["constraints"][0]["name"]
    doc["constraints"][0]["enabled"] = enabled
    doc["programs"] = [{"name": "p", "program": "test_toggler", "parameters": {"constraint": name},
                        "constraints": [name], **program}]
    return doc


def test_a_program_adds_and_removes_its_own_constraints_and_the_log_says_when():
    model = compile_scene(parse_spec(_nailed_with({})))
    name = model.constraint_names[0]
    sim = core.Simulation(model)
    sim.run(0.3)
    log = [(e.kind, e.constraint, e.program) for e in sim.events if e.kind in ("added", "removed")]
    assert log == [("removed", name, "p"), ("added", name, "p")]
    times = [e.t for e in sim.events if e.kind in ("added", "removed")]   # watches on the time: isolated
    assert times[0] == pytest.approx(0.1, abs=2e-9) and times[1] == pytest.approx(0.2, abs=2e-9)
    assert sim.programs[0].seen.count("watch") == 2
    assert sim.state.active[0]
    assert sim.programs[0].started_at == 0.0


def test_a_program_may_not_remove_a_constraint_it_does_not_own():
    doc = _nailed_with({})
    doc["programs"][0]["constraints"] = []
    sim = core.Simulation(compile_scene(parse_spec(doc)))
    with pytest.raises(ProgramError, match="only add, remove or hold its own"):
        sim.run(0.2)


@pytest.mark.parametrize("change, path", [
    (lambda p: p.update(program="no_such_program"), "$.programs[0].program"),
    (lambda p: p["parameters"].update(gain=3.0), "$.programs[0].parameters.gain"),
    (lambda p: p["parameters"].update(t_off="soon"), "$.programs[0].parameters.t_off"),
    (lambda p: p.update(constraints=["ghost"]), "$.programs[0].constraints[0]"),
])
def test_bad_programs_are_named_validation_errors(change, path):
    doc = _nailed_with({})
    change(doc["programs"][0])
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    assert any(p.path == path for p in info.value.problems), [str(p) for p in info.value.problems]


def test_a_programs_own_check_names_the_parameter():
    doc = _doc("raibert_hopper")
    doc["programs"][0]["parameters"]["hip"] = "elbow"
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    assert [p.path for p in info.value.problems] == ["$.programs[0].parameters.hip"]


@pytest.mark.parametrize("changes, parameter, words", [
    ({"leg_stiffness": 0.0}, "leg_stiffness", "k_l of Kearney's eq. 13"),
    ({"momentum_gain": 0.0}, "momentum_gain", "k_h of Kearney's eq. 14"),
    ({"thrust_time": 0.0}, "thrust_time", "positive"),
    ({"max_loss": -1.0}, "max_loss", "must not be negative"),
    ({"liftoff_hold": -0.1}, "liftoff_hold", "seconds"),
    ({"hip_hold": "pitch_hold"}, "hip_hold", "joint-space constraint"),
    ({"leg_hold": "ghost"}, "leg_hold", "joint-space constraint"),
    ({"flight_control": "pd"}, "flight_control", "'servos' or 'equations'"),
    ({"flight_control": "equations", "angle_kp": 0.0}, "angle_kp", "1/s², the leg angle's acceleration"),
    ({"flight_control": "equations", "length_kd": -60.0}, "length_kd", "positive number"),
])
def test_the_hoppers_stance_and_hold_parameters_are_checked_by_name(changes, parameter, words):
    """Kearney's stance needs both gains of eq. 13–14 positive; the energy's parameters are in range; a hold after
    lift-off names the scene's joint-space constraints it holds; the flight is controlled by servos or equations,
    the equations' gains positive accelerations per unit error."""
    doc = _doc("raibert_hopper")
    doc["programs"][0]["parameters"].update(changes)
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    problems = [(p.path, str(p)) for p in info.value.problems]
    assert [path for path, _ in problems] == [f"$.programs[0].parameters.{parameter}"], problems
    assert words in problems[0][1], problems


def test_a_hold_the_program_does_not_own_is_refused_by_validation():
    """``hip_hold`` must be one of the program's own constraints (its ``constraints``), or ``ctl.hold`` could not
    hold it: validation says so with its JSON path (before, the run failed at its start with a ProgramError —
    found by fuzzing the programs section), and ``core validate`` exits 2."""
    doc = _doc("raibert_hopper")
    doc["programs"][0]["constraints"] = ["leg_hold"]
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    problems = [(p.path, str(p)) for p in info.value.problems]
    assert [path for path, _ in problems] == ["$.programs[0].parameters.hip_hold"], problems
    assert "not among the program's own constraints (leg_hold)" in problems[0][1]


def test_snapshot_and_restore_bring_back_the_programs_state():
    model = core.load_scene(ROOT / "scenes" / "raibert_hopper.json")
    sim = core.Simulation(model)
    sim.run(0.6)
    snap = sim.snapshot()
    sim.run(0.6)
    first, hops = sim.state.q.copy(), sim.programs[0].hops
    sim.restore(snap)
    sim.run(0.6)
    assert np.array_equal(first, sim.state.q) and sim.programs[0].hops == hops


# ---- momentum ---------------------------------------------------------------------------------------------------

def test_momentum_of_a_free_body_is_its_rotated_inertia_times_omega():
    model = core.load_scene(ROOT / "scenes" / "free_tumbling_box.json")
    rng = np.random.default_rng(3)
    state = model.initial_state()
    q, qd = state.q.copy(), rng.normal(size=model.nv)
    c, cd, H = momentum(model, q, qd)
    R = core.forward_kinematics(model, q)[0][0]
    I_c = model.inertia[0][:3, :3] - model.mass[0] * _skew(model.com[0]) @ _skew(model.com[0]).T
    omega_body = qd[:3]
    assert np.allclose(H, R @ I_c @ omega_body, rtol=1e-12, atol=1e-12)
    assert np.allclose(c, core.center_of_mass(model, q))


def test_momentum_is_conserved_by_a_free_floating_chain_without_gravity():
    doc = _doc("three_link_free_bodies")
    doc["gravity"] = [0, 0, 0]
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    H0 = momentum(model, sim.state.q, sim.state.qd)[2]
    sim.run(0.5)
    H1 = momentum(model, sim.state.q, sim.state.qd)[2]
    assert np.allclose(H1, H0, atol=1e-8 * max(1.0, np.abs(H0).max()))


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


# ---- Raibert's hopper ---------------------------------------------------------------------------------------

def _hopping(name: str, duration: float, **parameters):
    """The scene ``name`` run for ``duration`` (its program's ``parameters`` changed): the model, the simulation,
    the record (every 20th step), its hops and its apexes (the program's logs)."""
    doc = _doc(name)
    doc["programs"][0]["parameters"].update(parameters)
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    rec = sim.run(duration, record_every=20)
    return model, sim, rec, [e for e in sim.events if e.kind == "hop"], [e for e in sim.events if e.kind == "apex"]


def _holds_kearneys_targets(name: str, height: float, speed: float):
    """Kearney §5 on scene ``name`` over 40 s (the issue's targets): at least 60 hops without falling; from the
    fifth hop the apex of the centre of mass within 2 % of the commanded ``height`` and the forward speed at
    lift-off within 5 % of the commanded ``speed``; the angular momentum about the centre of mass at every lift-off
    within 0.01 kg·m²/s; Kearney's hold of the hip and the leg for 50 ms after each lift-off in use; one hop count
    for the program and ``core run``. Returns the hops and the apexes."""
    doc = _doc(name)
    assert doc["programs"][0]["parameters"]["stance_control"] == "contact_force"     # the one stance law
    assert doc["programs"][0]["parameters"]["flight_control"] == "equations"         # Kearney's foot placement
    model, sim, rec, hops, apexes = _hopping(name, 40.0)
    assert sim.state.t == pytest.approx(40.0)
    assert len(hops) >= 60
    assert [h.get("hop") for h in hops] == list(range(1, len(hops) + 1))
    z, pitch = rec["q"][:, model.q_slice("z").start], rec["q"][:, model.q_slice("pitch").start]
    assert z.min() > 0.25 and np.abs(pitch).max() < 0.05                 # it never fell (the hip's lowest, crouched:
    #                                                                      0.37 and 0.31 m)
    # Kearney's transitions in use: after every lift-off the hip and the leg held, released 50 ms later
    held = [(e.t, e.kind, e.constraint) for e in sim.events if e.constraint in ("hip_hold", "leg_hold")]
    assert len(held) >= 4 * (len(hops) - 1)
    for h in hops[:-1]:
        mine = [(kind, c) for t, kind, c in held if h.t - 1e-12 <= t <= h.t + 0.05 + 1e-6]
        assert sorted(mine) == [("added", "hip_hold"), ("added", "leg_hold"), ("removed", "hip_hold"),
                                ("removed", "leg_hold")], (h.t, mine)
    # the apex of each flight from the fifth hop's, as the program logs it (its watch: the centre of mass's
    # vertical speed crossing zero) and as the record has it between lift-offs
    settled = [a for a in apexes if a.get("hop") >= 5]
    assert len(settled) >= len(hops) - 5
    heights = np.array([a.get("height") for a in settled])
    assert np.abs(heights - height).max() < 0.02 * height, heights
    com = np.array([momentum(model, q, qd)[0][2] for q, qd in zip(rec["q"], rec["qd"])])
    lifts = [h.t for h in hops]
    for a in settled[:-1]:
        start, end = lifts[a.get("hop") - 1], lifts[a.get("hop")]
        recorded = com[(rec["t"] > start) & (rec["t"] < end)].max()
        assert a.get("height") - 0.005 < recorded <= a.get("height") + 1e-9
    speeds = np.array([h.get("speed") for h in hops[4:]])
    assert np.abs(speeds - speed).max() < 0.05 * speed, speeds
    H = np.array([h.get("angular_momentum") for h in hops])
    assert np.abs(H).max() <= 0.01, H
    # the loss estimate is regulated, not wound up against a thrust clipped to nothing (the old anthropomorphic
    # hopper's: 0 N on every hop, the loss at −34 J)
    assert all(h.get("thrust") > 0 for h in hops[4:])
    assert all(abs(h.get("loss")) < 5.0 for h in hops)
    assert _reported_hops(model, sim.events) == len(hops)
    # the foot placed by the flight's control equations, added as each hold is released, removed at touchdown
    swings = [(e.t, e.kind) for e in sim.events if e.get("constraint") == "raibert.flight_angle"]
    for h in hops[:-1]:
        assert (pytest.approx(h.t + 0.05, abs=1e-9), "added") in swings, h.t
    assert sum(kind == "removed" for _, kind in swings) >= len(hops)
    return hops, apexes


def test_raibert_hopper_hops_on_at_the_commanded_speed_with_no_angular_momentum_at_lift_off():
    """The CMU-style hopper (telescoping leg, air spring) under Kearney's stance, eq. 13–14 on the ground's force
    (the same law as the anthropomorphic hopper's), and his flight's foot positioning equations, over 40 s:
    measured 70 hops; from the fifth hop the apex 0.6495–0.6501 m for 0.65 (0.08 %), the lift-off speed
    0.4965–0.5008 m/s for 0.5 (0.70 %); |H_G| at lift-off at most 0.0035 kg·m²/s; stances of 0.199–0.207 s; the
    body's pitch within ±0.015 rad. (With the flight's servos: 70 hops, 0.15 %, 0.31 %, 0.0033 kg·m²/s.)"""
    assert "raibert_hopper" in PROGRAMS
    hops, _ = _holds_kearneys_targets("raibert_hopper", 0.65, 0.5)
    assert all(0.18 < h.get("stance_time") < 0.22 for h in hops[4:])


def test_the_raibert_hoppers_virtual_leg_stance_is_an_alternative_that_hops_too():
    """``stance_control: virtual_leg`` (Raibert's constant thrust while the leg extends, the hip servoing the
    body's pitch, mapped by the virtual leg's Jacobian) on the same scene, with the foot placement's gains it was
    tuned with (k_ẋ 0.08 s, no integral; the scene's 0.04 and 0.04 give 0.47–0.59 m/s over hops 5–10 with it):
    12 s, measured 24 hops, from the fifth the apex within 0.15 % of 0.65 m, the lift-off speed 0.488–0.490 m/s
    (2.3 % short), |H_G| at most 0.0005 kg·m²/s (0.016 at the second lift-off); with the flight's servos too
    (``flight_control: servos``) no control equations; its touchdowns and lift-offs alternate."""
    model, sim, rec, hops, apexes = _hopping("raibert_hopper", 12.0, stance_control="virtual_leg", speed_gain=0.08,
                                             speed_integral=0.0, flight_control="servos")
    assert len(hops) >= 20
    pitch = rec["q"][:, model.q_slice("pitch").start]
    assert np.abs(pitch).max() < 0.05
    heights = np.array([a.get("height") for a in apexes if a.get("hop") >= 5])
    assert np.abs(heights - 0.65).max() < 0.02 * 0.65, heights
    speeds = np.array([h.get("speed") for h in hops[4:]])
    assert np.abs(speeds - 0.5).max() < 0.05 * 0.5, speeds
    assert np.abs([h.get("angular_momentum") for h in hops[4:]]).max() < 0.01
    assert not any(e.kind in ("added", "removed") and e.get("control") == "equation" for e in sim.events)
    lift = [e for e in sim.events if e.kind == "lift-off"]
    touch = [e for e in sim.events if e.kind == "touchdown"]
    assert len(touch) - len(lift) in (0, 1) and all(a.t < b.t for a, b in zip(touch, lift))
    assert _reported_hops(model, sim.events) == len(hops)


def test_the_hoppers_loss_estimate_does_not_wind_up_while_the_thrust_is_at_its_largest():
    """Eq. 13's rest length grows by at most ``max_thrust`` / k_l: commanded to 0.75 m with 3 N of thrust, the
    CMU-style hopper cannot reach it (apexes near 0.57 m) and its loss estimate is not integrated (it stays at
    its last unsaturated value, 0 J, against the 20 J bound it would wind up to); given its thrust back and 0.65
    m, its second apex after is within 2 % (measured 0.640, then 0.658, 0.650, ...) — a wound-up estimate of
    20 J would have overshot by about 0.2 m."""
    doc = _doc("raibert_hopper")
    doc["programs"][0]["parameters"].update(height=0.75, max_thrust=3.0)
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    sim.run(10.0, record_every=100)
    hops = [e for e in sim.events if e.kind == "hop"]
    assert len(hops) >= 15
    assert all(h.get("thrust") == pytest.approx(3.0) for h in hops[1:])        # at its largest on every hop
    assert all(abs(h.get("loss")) < 0.5 for h in hops)                         # not wound up
    assert max(a.get("height") for a in sim.events if a.kind == "apex") < 0.7
    sim.state.programs[0].p.update(height=0.65, max_thrust=400.0)             # the thrust back, a reachable height
    seen = len(sim.events)
    sim.run(5.0, record_every=100)
    apexes = [a.get("height") for a in sim.events[seen:] if a.kind == "apex"]
    assert np.abs(np.array(apexes[1:]) - 0.65).max() < 0.02 * 0.65, apexes


def _reported_hops(model, events) -> int:
    """The hops ``python -m core run`` prints for the scene's one contact (one hop count everywhere: Kearney's
    program and the command line both count a lift-off after a stance)."""
    from core.__main__ import contact_report
    (line,) = contact_report(model, events)
    return int(re.search(r"; (\d+) hops?;", line).group(1))


def test_a_view_that_follows_an_unknown_body_is_refused():
    doc = _doc("raibert_hopper")
    doc["view"] = {"follow": "nobody"}
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    assert [p.path for p in info.value.problems] == ["$.view.follow"]


def test_the_anthropomorphic_hopper_hops_on_a_kneed_leg():
    """Kearney §5's three-link hopper (a 7 kg torso, a 1.2 kg thigh and a 0.45 kg shank, the knee bending forward;
    hip and knee actuators, no spring) under the same program and stance law as the CMU-style hopper (eq. 13–14 on
    the ground's force) and flight equations, over 40 s: measured 68 hops; from the fifth hop the apex
    0.8499–0.8522 m for 0.85 (0.26 %), the lift-off speed 0.3928–0.4012 m/s for 0.4 (1.8 %); |H_G| at lift-off at
    most 0.0076 kg·m²/s; stances of 0.200–0.212 s; the torso's pitch within ±0.042 rad (with the flight's servos:
    67 hops, 0.25 %, 1.8 %, 0.0071 kg·m²/s, ±0.040 rad). Without the hold after lift-off: 1.9 % and 0.0079
    kg·m²/s with the flight's equations, 10.5 % and 0.016 kg·m²/s with its servos. (Before this law, on the old
    light legs: the thrust clipped to 0 N on every hop and the apex was not regulated.)"""
    hops, _ = _holds_kearneys_targets("anthropomorphic_hopper", 0.85, 0.4)
    assert all(0.18 < h.get("stance_time") < 0.22 for h in hops[4:])


@register
class Holder(ControlProgram):
    """A test program: holds its joint-space constraint at the joint's angle of t_hold, releases it at t_free."""
    kind = "test_holder"
    parameters = {"joint": "swing", "t_hold": 0.1, "t_free": 0.3}

    def start(self, ctl):
        self.angle = None
        ctl.declare("t", "time")
        ctl.watch("hold", "t", self.p["t_hold"])
        ctl.watch("free", "t", self.p["t_free"])

    def event(self, ctl, event):
        if event.what == "holder.hold":
            self.angle = ctl.joint(self.p["joint"])[0]
            ctl.hold(self.owned[0], self.angle)
        elif event.what == "holder.free":
            ctl.remove(self.owned[0])


def test_a_program_holds_a_joint_where_it_is_with_a_torque_solved_as_a_constraint_force():
    """Tightly coupled control (Kearney §4.2): a program holds a swinging pendulum's hinge at the angle it has at
    0.1 s by its own joint-space constraint ``swing = value`` (value set at run time). Held, the pendulum stops —
    the hold is an impulse-free constraint stabilized from that instant — and the constraint's multiplier is the
    hinge torque m g l sin q that gravity needs; released at 0.3 s it swings on from rest."""
    doc = _doc("pendulum_joint_limit")
    del doc["bodies"][0]["joint"]["limits"]
    doc["constraints"] = [{"type": "joint_space", "name": "hold", "expression": "swing", "value": 0.0,
                           "enabled": False, "stabilization": 40.0}]
    doc["programs"] = [{"name": "holder", "program": "test_holder", "constraints": ["hold"]}]
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    sim.run(0.1)
    sim.run(0.18)                                                     # held from 0.1 s: settled by 0.28 s
    angle = sim.programs[0].angle
    q = sim.state.q[0]
    assert abs(q - angle) < 0.05 and abs(sim.state.qd[0]) < 0.01
    lam = sim.data.constraint_force[model.constraint_names.index("hold")][0]
    # the hinge torque: I q̈ = −m g l sin q + λ, with q̈ = −2κ q̇ − κ²(q − angle) (the critically damped hold)
    I, kappa, qd = 1.0 + 1e-4, 40.0, sim.state.qd[0]
    assert lam == pytest.approx(I * (-2 * kappa * qd - kappa ** 2 * (q - angle)) + 9.81 * np.sin(q), rel=1e-9)
    assert lam == pytest.approx(9.81 * np.sin(q), rel=0.03)            # nearly all of it holds against gravity
    log = [(e.kind, e.constraint) for e in sim.events if e.kind in ("added", "removed")]
    assert log == [("added", "hold")]
    sim.run(0.2)
    assert [(e.kind, e.constraint) for e in sim.events if e.kind in ("added", "removed")] == \
        [("added", "hold"), ("removed", "hold")]
    assert abs(sim.state.qd[0]) > 0.1                                 # swinging again


@register
class Presser(ControlProgram):
    """A test program: while the foot touches, two control equations on the ground's force — its vertical part
    is ``push`` and its moment about the centre of mass is zero — solved for the hip and knee torques, until the
    centre of mass has risen ``rise`` above where it touched down (a watch)."""
    kind = "test_presser"
    parameters = {"push": 300.0, "rise": 0.01}

    def start(self, ctl):
        ctl.declare("height", "centre_of_mass", axis=[0.0, 0.0, 1.0])

    def event(self, ctl, event):
        if event.what == "p.up":
            ctl.retract()
        elif event.contact == "foot" and event.kind == "touchdown" and not ctl.declarations.equations:
            ctl.impose({"push": Equation(self.p["push"], forces={"foot": [0.0, 0.0, 1.0]}),
                        "moment": Equation(0.0, moments={"foot": [0.0, 1.0, 0.0]})}, ("hip_motor", "knee_motor"))
            ctl.watch("up", "height", ctl.value("height") + self.p["rise"], +1)


def _pressing(dt: float):
    doc = _doc("anthropomorphic_hopper")
    doc["programs"] = [{"name": "p", "program": "test_presser"}]
    doc["simulation"]["dt"] = dt
    for f in doc["forces"]:
        f["limit"] = 1e4
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    seen = []
    while sim.state.t < 0.3:
        sim.step()
        if sim.state.controls.equations:
            seen.append((sim.state, float(momentum(model, sim.state.q, sim.state.qd)[2][1])))
    return model, sim, seen


def test_control_equations_on_the_ground_force_hold_at_every_state_and_are_logged():
    """Kearney §4.2 / §5.2: equations on the contact force (not on positions) solved with the dynamics for the
    actuator torques. Evaluated afresh at the states the steps reach (the equations travel with the state), the
    ground's force has the imposed vertical part and no moment about the centre of mass to round-off; the two
    equations are added at touchdown and removed at the program's watch, in the log's order."""
    model, sim, seen = _pressing(1e-3)
    assert len(seen) > 50
    foot = model.contacts[0].points[0]
    for state, _ in seen[::7]:
        d = core.evaluate(model, state)
        F = d.constraint_force[[foot.normal, foot.stick]].sum(axis=0)
        r = d.point_a[foot.normal] - momentum(model, state.q, state.qd)[0]
        assert abs(F[2] - 300.0) < 1e-8
        assert abs(np.cross(r, F)[1]) < 1e-8
    log = [(e.kind, e.get("constraint")) for e in sim.events if e.kind in ("touchdown", "lift-off", "added",
                                                                                "removed")]
    assert log[:5] == [("touchdown", None), ("added", "p.moment"), ("added", "p.push"), ("removed", "p.moment"),
                       ("removed", "p.push")]
    up = next(e for e in sim.events if e.kind == "watch")
    assert up.what == "p.up" and up.t == sim.events[[e.kind for e in sim.events].index("removed")].t


def test_a_zero_moment_about_the_centre_of_mass_keeps_its_angular_momentum_to_the_integrators_order():
    """Eq. 12, Ḣ_G = r × f_c: with the moment imposed zero at every integrator stage (not held over a step), H_G
    changes in stance only by what the planar base's two 1 g slider links take from the world (their orientation
    is held, measured 2.3e-4 kg·m²/s over 0.1 s on the anthropomorphic hopper with its legs of 14 % and 5 % of
    the mass and its knee forward, the same to 0.3 % at both steps; 4.4e-5 on its earlier light legs) — no
    integration error of first order remains (it was 9.7e-4 and 5.0e-4 at dt = 1 and 0.5 ms on the light legs
    when the equations were solved once per step)."""
    drift = []
    for dt in (2e-3, 1e-3):
        _, _, seen = _pressing(dt)
        t = np.array([s.t for s, _ in seen])
        H = np.array([h for _, h in seen])
        k = int(np.searchsorted(t, t[0] + 0.1))
        drift.append(abs(H[k] - H[0]))
    assert drift[1] < 4e-4, drift
    assert abs(drift[0] - drift[1]) < 0.01 * drift[1], drift


def test_impose_names_what_it_cannot_constrain():
    model, sim, _ = _pressing(1e-3)
    ctl = Controls(model, sim.state, sim.programs[0], sim.state.controls, [])
    with pytest.raises(ProgramError, match="no constraint or contact 'hand'"):
        ctl.impose({"x": Equation(1.0, forces={"hand": [0, 0, 1.0]})}, ("hip_motor",))
    with pytest.raises(ProgramError, match="no actuator 'elbow'"):
        ctl.impose({"x": Equation(1.0, forces={"foot": [0, 0, 1.0]})}, ("elbow",))
    with pytest.raises(ProgramError, match="no quantity 'ghost'"):
        ctl.watch("w", "ghost", 1.0)
    ctl.declare("tilt", "body_angle", body="torso", point=(0, 0, 1.0), axis=(1.0, 0, 0), axis_b=(0, 0, 1.0),
                gradient=True)                      # a body angle's acceleration has no bias: refused by name
    with pytest.raises(ProgramError, match="quantity 'tilt' has no acceleration an equation can constrain"):
        ctl.impose({"x": Equation(0.0, quantity_accelerations={"tilt": 1.0})}, ("hip_motor",))
    ctl.declare("reach", "distance", body="torso", body_b=None)
    with pytest.raises(ProgramError, match="quantity 'reach' needs gradient=True"):
        ctl.impose({"x": Equation(0.0, quantity_accelerations={"reach": 1.0})}, ("hip_motor",))


# ---- Kearney's particle (eq. 9–10) ----------------------------------------------------------------------------

def _particle(coupling: str, dt: float):
    doc = _doc("kearney_particle")
    doc["programs"][0]["parameters"]["coupling"] = coupling
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model, dt=dt)
    rec = sim.run(1.0)
    return rec["t"], rec["q"][:, 0]


def test_kearneys_particle_under_the_tightly_coupled_equation_follows_it_to_the_integrators_order():
    """Eq. 10 imposed on the acceleration and solved with eq. 9 at every RK4 stage: x follows the critically
    damped x_d − x_d (1 + ω t) e^(−ω t) (ω = 10/s) with an error that falls 16× per halving of dt (at least 8×;
    measured 1.9e-5, 1.1e-6, 6.3e-8 m at dt = 20, 10, 5 ms). Solved once per step and held, it fell 2×."""
    errors = []
    for dt in (0.02, 0.01, 0.005):
        t, x = _particle("tight", dt)
        errors.append(np.abs(x - (1 - (1 + 10 * t) * np.exp(-10 * t))).max())
    assert errors[-1] < 1e-6, errors
    assert errors[0] / errors[1] > 8 and errors[1] / errors[2] > 8, errors


def test_kearneys_particle_under_the_loose_pd_force_settles_short_by_its_weight():
    """Eq. 10 as the actuator's force, eq. 9 the motion: m ẍ + K_v ẋ + K_p x = K_p x_d − m g, critically damped
    (m = 1 kg, K_p = 100, K_v = 20), so it settles m g / K_p = 9.81 cm short of x_d — the loose coupling's
    steady-state error that Kearney's tight coupling removes."""
    t, x = _particle("loose", 0.005)
    x_ss = 1.0 - 9.81 / 100.0
    assert np.abs(x - x_ss * (1 - (1 + 10 * t) * np.exp(-10 * t))).max() < 1e-7


@register
class Recorder(ControlProgram):
    """A test program whose event hook needs what its start hook made."""
    kind = "test_recorder"

    def start(self, ctl):
        self.seen = [("start", ctl.t)]

    def event(self, ctl, event):
        self.seen.append((event.kind, event.t))


def test_a_program_starts_before_it_hears_of_the_contacts_closed_at_t0():
    """A block put on the ground touches down at t = 0 (core.step.touching_at_start); the program's start hook
    runs before those events reach its event hook."""
    doc = _doc("block_lifted")
    doc["programs"] = [{"name": "r", "program": "test_recorder"}]
    sim = core.Simulation(compile_scene(parse_spec(doc)))
    sim.run(0.01)
    seen = sim.programs[0].seen
    assert seen[0] == ("start", 0.0)
    assert [kind for kind, _ in seen[1:5]] == ["touchdown"] * 4


def test_a_step_that_fails_in_a_scene_with_programs_did_not_happen():
    """``Simulation.step`` on a scene with control programs (the general path, Python answering the programs'
    events) keeps what a scene without them keeps when a step fails: the state before it, and no events or step
    counted from it. The Raibert hopper at a 50 ms step diverges in its third stance (measured at 1.3 s; 0.4 s,
    just after its first lift-off, with the flight's servos of ``flight_control: servos``)."""
    sim = core.Simulation(core.load_scene(ROOT / "scenes" / "raibert_hopper.json"), dt=0.05)
    with pytest.raises(core.DivergenceError, match="the state is diverging"):
        for _ in range(400):
            good, logged, taken = sim.state, list(sim.events), sim.steps_taken
            sim.step()
    assert sim.state is good and sim.events == logged and sim.steps_taken == taken
    assert any(e.kind == "touchdown" for e in logged) and sim.state.t < 2.0   # (it got as far as a stance)


# ---- Kearney's pendulum (fig. 1, eq. 1–8) ---------------------------------------------------------------------

def _rigid_motion(model, q, qd, qdd, body):
    """World rotation, centre, angular velocity and acceleration of ``body``, read from three points on its axes
    (rigid-body kinematics, independent of the model's joint coordinates): v_p = v_c + ω × r,
    a_p = a_c + ω̇ × r + ω × (ω × r)."""
    def at(point):
        return (core.point_position(model, q, body, point), core.point_velocity(model, q, qd, body, point),
                core.point_acceleration(model, q, qd, qdd, body, point))
    c, vc, ac = at("center")
    rows = [at(tuple(e)) for e in np.eye(3)]
    R = np.column_stack([p - c for p, _, _ in rows])
    cross = np.vstack([-_skew(p - c) for p, _, _ in rows])
    omega = np.linalg.lstsq(cross, np.concatenate([v - vc for _, v, _ in rows]), rcond=None)[0]
    spin = np.concatenate([a - ac - np.cross(omega, np.cross(omega, p - c)) for p, _, a in rows])
    omega_dot = np.linalg.lstsq(cross, spin, rcond=None)[0]
    return R, c, vc, ac, omega, omega_dot


def test_kearneys_pendulum_holds_its_hinge_with_the_force_of_eq_5_to_8():
    """Fig. 1 as listed: a 1 × 4 × 1 rod and an 8 × 1 × 1 base (density 1: 4 and 8 kg), free bodies joined by a
    ball-and-socket at their hinge points. Along 10 s of the run the hinge points stay together (eq. 3, to 1e-9 m),
    the linear and angular momentum of the pair and its kinetic energy are constant (the hinge force is internal
    and does no work), and at states of the run the reported constraint force is the f_hinge of eq. 5–8: the
    base's m r̈ and its Euler equation, the rod's with the opposite force, all to round-off."""
    model = core.load_scene(ROOT / "scenes" / "kearney_pendulum.json")
    size = {"rod1": np.array([1.0, 4.0, 1.0]), "base": np.array([8.0, 1.0, 1.0])}
    mass = {b: float(np.prod(s)) for b, s in size.items()}                  # density 1
    inertia = {b: mass[b] / 12 * np.diag([s[1]**2 + s[2]**2, s[0]**2 + s[2]**2, s[0]**2 + s[1]**2])
               for b, s in size.items()}
    hinge = {"rod1": "bottom_hingepoint", "base": "top_hingepoint"}

    def books(q, qd, qdd):
        P, L, T, out = np.zeros(3), np.zeros(3), 0.0, {}
        for b in size:
            R, c, vc, ac, w, wd = out[b] = _rigid_motion(model, q, qd, qdd, b)
            J = R @ inertia[b] @ R.T
            P += mass[b] * vc
            L += np.cross(c, mass[b] * vc) + J @ w
            T += 0.5 * mass[b] * vc @ vc + 0.5 * w @ J @ w
        return P, L, T, out

    sim = core.Simulation(model)
    P0, L0, T0, _ = books(sim.state.q, sim.state.qd, np.zeros(model.nv))
    assert np.allclose(P0, [-8.0, 0, 0]) and T0 > 10
    for _ in range(5):
        sim.run(2.0)
        q, qd = sim.state.q, sim.state.qd
        gap = core.point_position(model, q, "rod1", hinge["rod1"]) - core.point_position(model, q, "base",
                                                                                          hinge["base"])
        assert np.linalg.norm(gap) < 1e-9
        data = core.evaluate(model, sim.state)
        P, L, T, motion = books(q, qd, data.qdd)
        assert np.allclose(P, P0, atol=1e-9) and np.allclose(L, L0, atol=1e-8) and abs(T - T0) < 1e-8
        f_hinge = -data.constraint_force[0]                        # reported on point a (the rod): eq. 7's −f
        assert np.linalg.norm(f_hinge) > 0.5                       # the hinge works: not a trivially zero force
        for body, f in (("base", f_hinge), ("rod1", -f_hinge)):
            R, c, vc, ac, w, wd = motion[body]
            J = R @ inertia[body] @ R.T
            arm = core.point_position(model, q, body, hinge[body]) - c
            assert np.allclose(mass[body] * ac, f, atol=1e-9 * max(1, np.abs(f).max()))          # eq. 5, 7
            assert np.allclose(J @ wd + np.cross(w, J @ w), np.cross(arm, f), atol=1e-8)          # eq. 6, 8


# ---- the flight's control equations (Kearney §5.3) --------------------------------------------------------------

def _leg_rates(model, state, qdd, h=1e-6):
    """θ̇ and L̇ of the program's virtual leg at ``state`` moved by ±h along (q̇, q̈), from the declared quantities
    (the compiled functions the step evaluates): their central difference is θ̈ and L̈ to O(h²), independent of the
    quantities' gradients and biases the equations are solved with."""
    from core.programs.kernels import evaluate_quantities
    tables = state.controls.tables(model)
    names = tables["quantity_names"]
    i, k = names.index("raibert.theta"), names.index("raibert.L")
    out = []
    for s in (1.0, -1.0):
        values, rates = np.zeros(len(names)), np.zeros(len(names))
        evaluate_quantities.fast(model.kernel_tree, tables["quantities"], state.t, state.q + s * h * state.qd,
                                 state.qd + s * h * qdd, values, rates)
        out.append((rates[i], rates[k]))
    return (out[0][0] - out[1][0]) / (2 * h), (out[0][1] - out[1][1]) / (2 * h)


def _flight_residuals(name: str, flight_control: str, duration: float):
    """The scene ``name`` under ``flight_control`` stepped for ``duration``: at every 5th state in flight after
    the hold is released, the virtual leg's θ̈ and L̈ (:func:`_leg_rates`) less the flight equations' law at that
    state (the program's target, clearance and retraction, the quantities of ``core.evaluate``). Returns the
    model, the simulation and the residuals [(θ̈ − law, L̈ − law)]."""
    doc = _doc(name)
    doc["programs"][0]["parameters"]["flight_control"] = flight_control
    model = compile_scene(parse_spec(doc))
    sim = core.Simulation(model)
    residuals, n = [], 0
    while sim.state.t < duration:
        sim.step()
        program = sim.state.programs[0]
        if program.stance or program.held:
            continue
        n += 1
        if n % 5:
            continue
        p, d = program.p, core.evaluate(model, sim.state)
        x = d.quantities
        law_theta = -p["angle_kd"] * x["raibert.theta_rate"]
        if program.clear:
            law_theta += p["angle_kp"] * (program.target - x["raibert.theta"])
        length = p["leg_length"] - (p["retract"] if program.rising else 0.0)
        law_L = p["length_kp"] * (length - x["raibert.L"]) - p["length_kd"] * x["raibert.L_rate"]
        theta_dd, L_dd = _leg_rates(model, sim.state, d.qdd)
        residuals.append((theta_dd - law_theta, L_dd - law_L))
    return model, sim, np.array(residuals)


@pytest.mark.parametrize("name", ["raibert_hopper", "anthropomorphic_hopper"])
def test_in_flight_the_foot_is_placed_by_control_equations_on_the_virtual_legs_accelerations(name):
    """Kearney §5.3 (tightly coupled, §4.2): with ``flight_control: equations`` the virtual leg's world angle and
    length follow θ̈ = k_θ (θ_d − θ) − c_θ θ̇ and L̈ = k_L (L_d − L) − c_L L̇ at the states of a run — θ̈ and L̈ by
    finite differences of the compiled quantities, not by the gradients the equations are solved with (this
    tests the virtual leg's acceleration biases too): measured within 9e-10 rad/s² and m/s² at 220 and 228 states
    in flight over 2 s (three hops); under ``flight_control: servos`` the same law misses θ̈ by up to 355 and 562
    rad/s² (the PD servos' step at the hold's release). The log:
    at each touchdown the two flight equations removed and the stance's added, at each lift-off the stance's
    removed and, when the hold is released 50 ms later, the flight's added."""
    model, sim, res = _flight_residuals(name, "equations", 2.0)
    assert len(res) > 50
    assert np.abs(res).max() < 1e-6, np.abs(res).max(axis=0)
    _, _, loose = _flight_residuals(name, "servos", 1.0)
    assert np.abs(loose[:, 0]).max() > 1.0
    log = [(e.kind, e.get("constraint")) for e in sim.events
           if e.kind in ("touchdown", "lift-off") or e.get("control") == "equation" or e.kind == "hop"]
    flight = [("added", "raibert.flight_angle"), ("added", "raibert.flight_length")]
    stance = [("added", "raibert.leg_spring"), ("added", "raibert.moment")]
    assert log[:2] == flight                                      # it starts in the air
    kinds = [k for k, _ in log]
    touchdowns = [i for i, k in enumerate(kinds) if k == "touchdown"]
    assert len(touchdowns) >= 3
    for i in touchdowns:
        assert log[i + 1:i + 5] == stance + [("removed", "raibert.flight_angle"), ("removed", "raibert.flight_length")]
    for j in [i for i, k in enumerate(kinds) if k == "hop"][:-1]:
        assert log[j - 3:j + 3] == [("lift-off", None), ("removed", "raibert.leg_spring"),
                                    ("removed", "raibert.moment"), ("hop", None)] + flight
    added = [e for e in sim.events if e.kind == "added" and e.get("constraint") == "raibert.flight_angle"]
    hops = [e for e in sim.events if e.kind == "hop"]
    assert len(hops) >= 3 and all(a.t == pytest.approx(h.t + 0.05, abs=1e-9) for a, h in zip(added[1:], hops))
