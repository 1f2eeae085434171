"""Projected inverse-dynamics control of constrained arms (Aghili §7), against the properties the paper proves:
the independent coordinates follow ë_p + G_D ė_p + G_P e_p = 0 (eq. 47), the torque is the minimum-norm one in
the constraint's null space (eq. 48) and produces the acceleration u_p it was designed for (eq. 45–46), the
constraint force follows its command and rejects an unmodelled external force with (G_F + 1) ė_f + G_I e_f = 0
(eq. 51–52), and passive joints get no torque (eq. 55–62)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import core
from core.model import State
from core.scene import compile_scene, parse_spec
from probe import look

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def scene(name: str, edit=None) -> core.Model:
    doc = json.loads((SCENES / f"{name}.json").read_text())
    if edit:
        edit(doc)
    return compile_scene(parse_spec(doc))


def test_tracking_error_obeys_the_designed_linear_dynamics():
    """θ_d starts 0.1 rad away from θ(0): e(t) = e0 (1 + 10t) e^{−10t} for G_P = 100, G_D = 20, while the tip
    stays on its line (rank-deficient Jacobian: the line's z row is redundant with the hinges)."""
    def offset(doc):
        doc["controllers"][0]["trajectory"]["alpha"] = [1.0]
        doc["controllers"][0].pop("desired_force")
    model = scene("arm_on_line_pidc", offset)
    sim = core.Simulation(model, dt=0.002)
    d = sim.run(0.6, record_every=10)
    t, e = d["t"], d["tracking_error_pidc"][:, 0]
    assert np.abs(e - (-0.1) * (1 + 10 * t) * np.exp(-10 * t)).max() < 1e-6
    assert d["deviation"].max() < 1e-9
    assert d["jacobian_rank"].max() == 1 and d["rank_deficient"].min() == 1.0


def with_motors(doc):
    """Motion-only control, and an actuator on each joint (idle unless commanded): a way to add torque."""
    doc["controllers"][0].pop("desired_force")
    doc["forces"] = [{"type": "actuator", "name": "m_shoulder", "joint": "shoulder"},
                     {"type": "actuator", "name": "m_elbow", "joint": "elbow"}]


def test_motion_torque_is_the_minimum_norm_torque():
    """Without force control f = f∥ ∈ 𝒩 (P f = f, P = I − J⁺J of the active rows), and it produces exactly the
    designed acceleration: q̈ = u_p, consistent with the constraint (J q̈ = −γ) with θ̈ = θ̈_d − G_D ė − G_P e
    (eq. 45–47). Adding any f⊥ ∈ 𝒩⊥ (here through the actuators) leaves q̈ unchanged but raises ‖f‖."""
    model = scene("arm_on_line_pidc", with_motors)
    sim = core.Simulation(model)
    sim.run(0.3)
    s = sim.state
    c = sim.controller("pidc")
    probe = look(model, s.t, s.q, s.qd, s.z, s.active, core.Inputs(formulation="projection"))
    d = probe.data
    f = d.controllers["pidc"]["torque"]
    J = probe.J
    P = np.eye(model.nv) - np.linalg.pinv(J, rcond=1e-9) @ J
    assert np.linalg.norm(f) > 0.1
    np.testing.assert_allclose(P @ f, f, atol=1e-12)
    np.testing.assert_allclose(J @ d.qdd, -probe.gamma, atol=1e-12)       # q̈ is a consistent acceleration …
    _, qd_d, qdd_d = c.trajectory.evaluate(s.t)
    e = d.controllers["pidc"]["tracking_error"]
    e_dot = s.qd[c.dofs] - qd_d
    np.testing.assert_allclose(d.qdd[c.dofs], qdd_d - c.kd * e_dot - c.kp * e, atol=1e-11)   # … with θ̈ designed
    f_perp = (np.eye(model.nv) - P) @ np.array([3.0, -2.0])
    assert np.linalg.norm(f_perp) > 0.1
    pushed = core.evaluate(model, s, core.Inputs().with_(actuators={"m_shoulder": f_perp[0], "m_elbow": f_perp[1]}))
    np.testing.assert_allclose(pushed.tau_applied, f + f_perp, atol=1e-12)
    np.testing.assert_allclose(pushed.qdd, d.qdd, atol=1e-9)
    assert np.linalg.norm(f + f_perp) > np.linalg.norm(f)


def test_constraint_force_follows_its_command():
    """With the model exact the tip is pushed up on its line with the commanded 5 N at all times, while θ tracks."""
    model = scene("arm_on_line_pidc")
    d = core.Simulation(model, dt=0.002).run(1.0, record_every=25)
    assert np.allclose(d["constraint_force"][:, 0], [0.0, 5.0, 0.0], atol=1e-6)
    assert np.abs(d["tracking_error_pidc"]).max() < 1e-8


def test_constraint_force_control_rejects_an_unmodelled_force():
    """A constant 4 N push on the forearm that the controller's model lacks, the arm held at a set point (so the
    disturbance is constant): the force error decays as (G_F + 1) ė_f + G_I e_f = 0 (eq. 52's error dynamics,
    rate G_I/(1 + G_F) = 5/s), measured on the constraint force the simulation solves for."""
    def push(doc):
        doc["forces"] = [{"type": "point_force", "name": "push", "body": "link2", "point": [0.5, 0.0, 0.0],
                          "force": [0.0, -4.0, 0.0]}]
        doc["controllers"][0]["trajectory"] = {"type": "set_point", "q": [0.9]}
    model = scene("arm_on_line_pidc", push)
    d = core.Simulation(model, dt=0.002).run(1.0, record_every=5)
    t = d["t"]
    err = 5.0 - d["constraint_force"][:, 0, 1]                  # e_f on the line's normal, from the plant
    ratio = err[1:] / err[0]
    expected = np.exp(-10.0 / (1.0 + 1.0) * t[1:])
    assert abs(err[0]) > 0.5                                     # the push is felt at first …
    assert np.allclose(ratio, expected, atol=2e-3)               # … and removed at the designed rate
    assert abs(err[-1]) < 0.01 * abs(err[0])
    # the push's component in the null space is unmodelled for the motion loop too: θ settles to the constant
    # offset G_P e = disturbance (a few mrad), not to drift
    e = d["tracking_error_pidc"][:, 0]
    assert abs(e[-1]) < 0.02 and abs(e[-1] - e[-20]) < 1e-4


def test_passive_wrist_gets_no_torque_and_the_arm_still_tracks():
    """Aghili eq. 55–62: f = (I + H) f∥ has no component on the passive wrist, yet θ = (shoulder, elbow) tracks
    and the tip stays on its line."""
    model = scene("three_link_passive_pidc")
    d = core.Simulation(model, dt=0.002).run(1.0, record_every=20)
    assert np.abs(d["torque_pidc"][:, 2]).max() == 0.0
    assert np.abs(d["torque_pidc"][:, :2]).max() > 1.0
    assert np.abs(d["tracking_error_pidc"]).max() < 1e-8
    assert d["deviation"].max() < 1e-9
    # the minimum-norm torque f∥ of every joint actuated would use the wrist; f = (I + H) f∥ differs from it by a
    # component in 𝒩⊥, which moves nothing: the same acceleration
    def all_actuated(doc):
        doc["controllers"][0].pop("actuated")
    full = scene("three_link_passive_pidc", all_actuated)
    s = model.initial_state()
    d_passive = core.evaluate(model, s)
    d_full = core.evaluate(full, State(s.t, s.q, s.qd, s.z))
    f_par, f = d_full.controllers["pidc"]["torque"], d_passive.controllers["pidc"]["torque"]
    assert abs(f_par[2]) > 0.1 and f[2] == 0.0
    J = look(model, s.t, s.q, s.qd).J
    P = np.eye(model.nv) - np.linalg.pinv(J, rcond=1e-9) @ J
    np.testing.assert_allclose(P @ (f - f_par), 0.0, atol=1e-12)
    np.testing.assert_allclose(d_passive.qdd, d_full.qdd, atol=1e-10)


def test_force_control_with_passive_joints_is_refused():
    def both(doc):
        doc["controllers"][0]["actuated"] = ["shoulder"]
    with pytest.raises(core.SceneError) as info:
        scene("arm_on_line_pidc", both)
    assert any("$.controllers[0].actuated" in str(p) for p in info.value.problems)
