"""Raibert's three-part hopping control as a control program (Kearney, Hansen & Cremer §5; Raibert, "Legged
Robots That Balance", ch. 2): for a planar hopper whose body carries a springy telescoping leg on a hip hinge,

1. hopping height: during stance the leg actuator thrusts with a constant force while the leg extends
   (decompression); the force is set at touchdown to give the energy of a hop to the commanded apex height of
   the centre of mass, plus an estimate of the energy a hop loses, adapted on each apex's error; in flight the
   actuator holds the leg at full length;
2. forward speed: in flight the hip servo places the foot, relative to the hip, at the neutral point plus a
   speed correction, x_f = ẋ T_s / 2 + k_ẋ (ẋ − ẋ_d), T_s the last stance's duration;
3. attitude and angular momentum: in stance the hip torque servos the body's pitch to zero and damps the
   angular momentum about the centre of mass, so the hopper leaves the ground with (nearly) none.

Lift-off is taken from the contact (its normal force turning tensile), touchdown likewise; the program counts
hops (lift-off after a stance) and logs each with the forward speed and the angular momentum at lift-off.
Plane of motion: x forward, z up, rotations about y.
"""
from __future__ import annotations

import numpy as np

from . import ControlProgram, register


@register
class RaibertHopper(ControlProgram):
    kind = "raibert_hopper"
    description = "Raibert's three-part control of a one-legged planar hopper with a telescoping leg"
    parameters = {
        "body": "body",                  # the body whose pitch is servoed
        "hip": "hip",                    # the hip hinge joint (leg angle relative to the body)
        "hip_actuator": "hip_motor",
        "leg": "leg",                    # the leg slider joint (extension, m)
        "leg_actuator": "leg_motor",
        "foot": "foot",                  # the foot's contact
        "leg_length": 0.5,               # m, hip to foot at full extension
        "speed": 0.5,                    # m/s, the commanded forward speed
        "height": 0.65,                  # m, the apex height of the centre of mass the thrust regulates
        "height_gain": 0.5,              # the fraction of the last apex's energy error added to the loss estimate
        "max_thrust": 400.0,             # N
        "speed_gain": 0.08,              # s, k_ẋ of the foot placement
        "stance_time": 0.18,             # s, T_s before the first stance has been measured
        "hip_kp": 150.0, "hip_kd": 8.0,  # flight: leg angle servo (N·m/rad, N·m·s/rad)
        "pitch_kp": 400.0, "pitch_kd": 35.0,   # stance: body attitude servo
        "leg_kp": 800.0, "leg_kd": 20.0,       # flight: leg extension hold (N/m, N·s/m)
        "max_placement": 0.3,            # m, the largest foot placement ahead or behind
    }

    @classmethod
    def check(cls, parameters: dict, model) -> list[tuple[str, str]]:
        p = {**cls.parameters, **parameters}
        problems = []
        joints = set(model.joint_names)
        for key in ("hip", "leg"):
            if p[key] not in joints:
                problems.append((key, f"no joint {p[key]!r}; joints: {', '.join(sorted(joints))}"))
        forces = {f.name for f in model.forces}
        for key in ("hip_actuator", "leg_actuator"):
            if p[key] not in forces:
                problems.append((key, f"no actuator {p[key]!r}"))
        if p["body"] not in model.link_names:
            problems.append(("body", f"no body {p['body']!r}"))
        if p["foot"] not in {c.name for c in model.contacts}:
            problems.append(("foot", f"no contact {p['foot']!r}"))
        for key in ("leg_length", "stance_time", "max_placement", "height", "max_thrust"):
            if not (isinstance(p[key], (int, float)) and 0 < p[key] < 1e3):
                problems.append((key, "must be a positive number below 1000"))
        for key in ("speed", "height_gain", "speed_gain", "hip_kp", "hip_kd", "pitch_kp", "pitch_kd", "leg_kp", "leg_kd"):
            if not (isinstance(p[key], (int, float)) and abs(p[key]) < 1e6):
                problems.append((key, "must be a number of magnitude below 1e6"))
        return problems

    def start(self, ctl) -> None:
        self.stance = ctl.in_contact(self.p["foot"])
        self.stance_start = ctl.t if self.stance else None
        self.stance_time = float(self.p["stance_time"])
        self.hops = 0
        self.last_liftoff = None
        self.apex = None                 # the highest centre-of-mass height of the current flight
        self.push = 0.0                  # N, the thrust of the current stance
        self.loss = 0.0                  # J, the estimated energy a hop loses (adapted on the apex errors)
        self.stroke = 0.1                # m, the leg's extension in the last stance's thrust phase
        self.mass = float(ctl.model.mass.sum())
        self.leg_low = None

    def _pitch(self, ctl) -> tuple[float, float]:
        R = ctl.orientation(self.p["body"])
        pitch = float(np.arctan2(R[0, 2], R[2, 2]))            # rotation about y
        m = ctl.model
        k = m.link_index(self.p["body"])
        # the body's angular velocity about y: its link velocity's angular part, in world axes
        from ..points import link_kinematics
        kin = link_kinematics(m, ctl.q, ctl.qd)
        omega = kin.R_WL[k] @ kin.v[k, :3]
        return pitch, float(omega[1])

    def event(self, ctl, event: dict) -> None:
        if event.get("contact") != self.p["foot"]:
            return
        touching = ctl.in_contact(self.p["foot"])
        if touching and not self.stance:
            self.stance, self.stance_start = True, event["t"]
            # 1. hopping height: thrust for the energy of a hop to the commanded apex height, plus the loss
            g = float(np.linalg.norm(ctl.model.gravity))
            if self.apex is not None:
                self.loss += self.p["height_gain"] * self.mass * g * (self.p["height"] - self.apex)
            target = self.mass * g * self.p["height"] + 0.5 * self.mass * self.p["speed"] ** 2
            c, cd = ctl.centre_of_mass()
            now = self.mass * g * c[2] + 0.5 * self.mass * float(cd @ cd)
            self.push = float(np.clip((target - now + self.loss) / self.stroke, 0.0, self.p["max_thrust"]))
            self.apex, self.leg_low = None, None
        elif not touching and self.stance:
            self.stance = False
            if self.stance_start is not None:
                self.stance_time = min(max(event["t"] - self.stance_start, 0.02), 1.0)
            self.hops += 1
            _, cd = ctl.centre_of_mass()
            H = ctl.angular_momentum()
            self.last_liftoff = {"speed": float(cd[0]), "angular_momentum": float(H[1])}
            ctl.log("hop", hop=self.hops, speed=float(cd[0]), angular_momentum=float(H[1]),
                    stance_time=self.stance_time)

    def step(self, ctl) -> None:
        p = self.p
        hip, hip_rate = ctl.joint(p["hip"])
        leg, leg_rate = ctl.joint(p["leg"])
        pitch, pitch_rate = self._pitch(ctl)
        if self.stance:
            # attitude: the hip torque acts on the leg (+) and the body (−): servo the body's pitch to zero
            ctl.actuate(p["hip_actuator"], p["pitch_kp"] * pitch + p["pitch_kd"] * pitch_rate)
            ctl.actuate(p["leg_actuator"], self.push if leg_rate > 0 else 0.0)
            self.leg_low = leg if self.leg_low is None else min(self.leg_low, leg)
            self.stroke = max(-self.leg_low, 0.02)
        else:
            c, cd = ctl.centre_of_mass()
            self.apex = c[2] if self.apex is None else max(self.apex, c[2])
            xf = cd[0] * self.stance_time / 2 + p["speed_gain"] * (cd[0] - p["speed"])
            xf = float(np.clip(xf, -p["max_placement"], p["max_placement"]))
            # the foot at x_f ahead of the hip: the leg's world angle about y is −asin(x_f / L)
            leg_world = -np.arcsin(np.clip(xf / p["leg_length"], -0.9, 0.9))
            target = leg_world - pitch
            ctl.actuate(p["hip_actuator"], -p["hip_kp"] * (hip - target) - p["hip_kd"] * hip_rate)
            ctl.actuate(p["leg_actuator"], -p["leg_kp"] * leg - p["leg_kd"] * leg_rate)

    def status(self) -> dict:
        return {"hops": self.hops, "stance": self.stance, "last_liftoff": self.last_liftoff}
