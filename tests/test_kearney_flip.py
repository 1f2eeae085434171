"""Kearney, Hansen & Cremer §6 and fig. 6 (``scenes/kearney_flip.json``, program ``kearney_flip``): a foot that
shares a plane of contact with the ground lets the ground's force and its moment about the centre of mass be set
apart — the figure jumps straight up with the angular momentum of a flip, turns once and lands standing."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import core
from core.__main__ import program_report
from core.programs import PROGRAMS, momentum
from core.scene import SceneError, compile_scene, parse_spec

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "kearney_flip.json"


def _ground_force(model, data, q):
    """The ground's whole force on the foot and its moment about the centre of mass (y), from the contact rows'
    reported forces at heel and toe (normal and stick rows) and where the points are."""
    c = momentum(model, q, np.zeros(model.nv))[0]
    f, moment = np.zeros(3), 0.0
    for k, point in enumerate(("heel", "toe")):
        F = sum(data.constraint_force[model.constraint_names.index(name)] for name in (f"foot.{k}", f"foot.{k}.stick"))
        r = core.point_position(model, q, "foot", point) - c
        f += F
        moment += np.cross(r, F)[1]
    return f, moment


def test_the_flip_pushes_straight_up_with_force_and_moment_set_apart_turns_once_and_lands_standing():
    """The push: while heel and toe are both down, the ground's vertical force is m (g + a) (the ``vertical``
    equation), its moment about the centre of mass the clipped eq. 14 law (−130 N·m: H̃_G = −40 kg·m²/s is far),
    and the centre of mass gains no horizontal velocity — the force and the moment are controlled apart, which a
    point foot cannot do. Take-off at 3.0 m/s upward with |ẋ_G| < 0.05 m/s and H_G ≈ −35 kg·m²/s (measured −34.8);
    at touchdown the torso has turned 2π ± 0.2 (measured 2π − 0.088); 1.8 s later the figure stands at rest in the
    pose it started from, one turn back (pitch start − 2π to 1e-3 rad), the sole flat on the ground."""
    model = core.load_scene(SCENE)
    p = {**PROGRAMS["kearney_flip"].parameters}
    sim = core.Simulation(model)
    m, g = float(model.mass.sum()), 9.81
    q0 = sim.state.q.copy()
    pitch = model.q_slice("pitch").start
    sim.run(0.3)                                                     # standing: the push starts at 0.3 s
    for t in (0.35, 0.40, 0.45):
        sim.run(t - sim.state.t)
        active = dict(zip(model.constraint_names, sim.state.active))
        assert all(active[n] for n in ("foot.0", "foot.0.stick", "foot.1", "foot.1.stick"))   # the sole down
        data = core.evaluate(model, sim.state)
        f, moment = _ground_force(model, data, sim.state.q)
        _, cd, H = momentum(model, sim.state.q, sim.state.qd)
        assert f[2] == pytest.approx(m * (g + p["push"]), rel=1e-6)
        law = float(np.clip(p["momentum_gain"] * (p["spin"] - H[1]), -p["max_moment"], p["max_moment"]))
        assert moment == pytest.approx(law, abs=1e-6 * m * g) and law == -p["max_moment"]
        assert abs(cd[0]) < 1e-3 and cd[2] > 0.3
    sim.run(3.0 - sim.state.t)
    (takeoff,) = [e for e in sim.events if e.kind == "takeoff"]
    (landed,) = [e for e in sim.events if e.kind == "landed"]
    assert takeoff.get("vz") == pytest.approx(p["takeoff_speed"], rel=1e-6)
    assert abs(takeoff.get("vx")) < 0.05 and takeoff.get("angular_momentum") < -30
    assert abs(landed.get("turn") + 2 * math.pi) < 0.2
    # Coulomb at rest: the heel lands behind the sticking toe, whose rows hold it still — the impact leaves it
    # without slip velocity, so it sticks (it stayed "slipping" at rest, its friction fixed, and the landing failed)
    (heel,) = [e for e in sim.events if e.kind == "touchdown" and e.what == "foot.0" and e.t > landed.t]
    assert heel.mode == "stick" and heel.t - landed.t < 0.01
    q, qd = sim.state.q, sim.state.qd
    assert sim.programs[0].phase == "landed"
    assert np.abs(qd).max() < 1e-2                                  # at rest
    assert q[pitch] == pytest.approx(q0[pitch] - 2 * math.pi, abs=1e-3)
    for joint in ("hip", "knee", "ankle"):
        assert q[model.q_slice(joint).start] == pytest.approx(q0[model.q_slice(joint).start], abs=0.02)
    active = dict(zip(model.constraint_names, sim.state.active))
    assert active["foot.0"] and active["foot.1"]                    # standing on heel and toe
    c = momentum(model, q, qd)[0]
    heel, toe = (core.point_position(model, q, "foot", n)[0] for n in ("heel", "toe"))
    assert heel < c[0] < toe                                        # the centre of mass over the sole
    (line,) = program_report(sim.programs)                          # what `python -m core run` prints of it
    assert line.startswith("program 'flip' (kearney_flip): phase landed; takeoff (t 0.549")


def test_the_flip_program_refuses_a_foot_that_touches_at_one_point():
    """A point foot couples the ground's force and moment (§6): the program wants heel and toe."""
    doc = json.loads(SCENE.read_text())
    doc["contacts"][0]["points"] = ["toe"]
    with pytest.raises(SceneError) as info:
        compile_scene(parse_spec(doc))
    assert [p.path for p in info.value.problems] == ["$.programs[0].parameters.foot"]
    assert "heel and toe" in str(info.value)


@pytest.mark.parametrize("formulation, integrator, dt", [("projection", "rk4", 1e-3), ("multipliers", "rk4", 1e-3),
                                                         ("dynamic_constraints", "cash_karp", 1e-3),
                                                         ("dynamic_constraints", "rk4", 2e-3)])
def test_the_flip_lands_the_same_under_every_formulation_and_integrator(formulation, integrator, dt):
    """The control equations are solved with whichever formulation computes the constraint forces, so the flip
    is the same flip: the turn at touchdown agrees with RK4's at 1 ms under dynamic constraints to 0.03 rad
    (Cash–Karp's adaptive steps land 0.027 rad earlier; the others to 1e-3), and every run ends standing at rest
    one turn back."""
    model = core.load_scene(SCENE)
    sim = core.Simulation(model, dt=dt, integrator=integrator)
    sim.set_formulation(formulation)
    q0 = sim.state.q.copy()
    sim.run(3.0)
    (landed,) = [e for e in sim.events if e.kind == "landed"]
    assert landed.get("turn") == pytest.approx(-6.1957, abs=0.03)
    pitch = model.q_slice("pitch").start
    assert sim.state.q[pitch] == pytest.approx(q0[pitch] - 2 * math.pi, abs=1e-3)
    assert np.abs(sim.state.qd).max() < 1e-2
