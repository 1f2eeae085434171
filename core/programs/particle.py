"""Kearney's particle (Kearney, Hansen & Cremer §4, eq. 9–10): a one-dimensional particle of mass m under
gravity, moved to a desired position x_d by a control force f, under either coupling of control and mechanics:

- ``loose`` (§4.1): the program sets the actuator's force by the PD law of eq. 10,
  f = K_p (x_d − x) + K_v (ẋ_d − ẋ), and the motion equation (9), f + m g = m ẍ, gives ẍ — a servo
  (:meth:`core.programs.Controls.servo`); gravity leaves the particle m g / K_p short of x_d;
- ``tight`` (§4.2): the program adds a control equation that constrains the particle's acceleration,
  ẍ = K_p (x_d − x) + K_v (ẋ_d − ẋ), and the simulator solves it with eq. 9 for the force
  (:meth:`core.programs.Controls.impose`) — at every integrator stage, so the trajectory is the exact solution of
  that linear equation to the integrator's order (fourth with RK4).

Both laws are evaluated inside the compiled step; the program only declares them at the start.
"""
from __future__ import annotations

from ..forces import ACTUATOR
from . import ControlProgram, Equation, register


@register
class KearneyParticle(ControlProgram):
    kind = "kearney_particle"
    description = "Kearney's particle: PD control of a 1-D particle, loosely (a force) or tightly (an equation)"
    parameters = {
        "joint": "x",               # the particle's slider
        "actuator": "force",        # the control force's actuator
        "coupling": "tight",        # "loose" (eq. 10 sets the force) or "tight" (eq. 10 constrains ẍ)
        "kp": 100.0,                # K_p (loose: N/m; tight: 1/s²)
        "kv": 20.0,                 # K_v (loose: N·s/m; tight: 1/s)
        "target": 1.0,              # x_d (m)
    }

    @classmethod
    def check(cls, parameters: dict, model) -> list[tuple[str, str]]:
        p = {**cls.parameters, **parameters}
        problems = []
        if p["joint"] not in model.joint_names:
            problems.append(("joint", f"no joint {p['joint']!r}; joints: {', '.join(model.joint_names)}"))
        actuators = {f.name for f in model.forces if f.kind == ACTUATOR}
        if p["actuator"] not in actuators:
            problems.append(("actuator", f"no actuator {p['actuator']!r} (actuators: "
                                         f"{', '.join(sorted(actuators)) or 'none'})"))
        if p["coupling"] not in ("loose", "tight"):
            problems.append(("coupling", f"must be 'loose' or 'tight', not {p['coupling']!r}"))
        for key in ("kp", "kv", "target"):
            if not (isinstance(p[key], (int, float)) and abs(p[key]) < 1e6):
                problems.append((key, "must be a number of magnitude below 1e6"))
        return problems

    def start(self, ctl) -> None:
        p = self.p
        ctl.declare("x", "joint", joint=p["joint"])
        ctl.declare("x_rate", "rate", of="x")
        law = {"x": -p["kp"], "x_rate": -p["kv"]}               # K_p (x_d − x) + K_v (0 − ẋ)
        if p["coupling"] == "loose":                            # eq. 10 → the force; eq. 9 → ẍ
            ctl.servo("pd", (p["actuator"],), p["kp"] * p["target"], law)
        else:                                                   # eq. 10 on ẍ, solved with eq. 9 for the force
            ctl.impose({"pd": Equation(p["kp"] * p["target"], accelerations={p["joint"]: 1.0}, terms=law)},
                       (p["actuator"],))
