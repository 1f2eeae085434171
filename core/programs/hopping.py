"""Raibert's three-part hopping control as a control program (Kearney, Hansen & Cremer §5; Raibert, "Legged
Robots That Balance", ch. 2), on a *virtual leg* from the hip to the foot — its length L and angle θ, driven by
the two actuated joints of the leg through τ = J_Lᵀ F + J_θᵀ M (virtual work), so a telescoping leg on a hip
hinge (CMU's hopper) and a kneed leg (Kearney's anthropomorphic hopper) take the same program:

1. hopping height: during stance the leg thrusts with a constant force while it extends (decompression); the
   force is set at touchdown to give the energy of a hop to the commanded apex height of the centre of mass,
   plus an estimate of the energy a hop loses, adapted on each apex's error. A leg with no spring of its own
   gets a preloaded virtual spring along it (``leg_stiffness``, ``leg_preload``: Kearney's eq. 11);
2. forward speed: in flight the hip places the foot, relative to the hip, at the neutral point plus a speed
   correction, x_f = ẋ T_s / 2 + k_ẋ (ẋ − ẋ_d) (+ the integral of the lift-off speed errors, ``speed_integral``),
   T_s the last stance's duration; the leg shortens by ``retract`` while rising and swings only once the foot
   is ``clearance`` above the ground;
3. attitude and angular momentum: in stance the hip moment servos the body's pitch and its rate to zero and
   damps the angular momentum about the centre of mass (``momentum_gain``: Kearney's eq. 12), so the hopper
   leaves the ground with little of it.

Stance control (``stance_control``): ``"virtual_leg"`` maps the leg's force and the hip moment to the joints by
the virtual leg's Jacobian (τ = J_Lᵀ F + J_θᵀ M, a static map: the legs' own inertia makes the ground's force
differ from F); ``"contact_force"`` is Kearney's own formulation (§5.2): two control equations on the ground's
force f_c on the foot, solved with the dynamics for the two actuator commands at every step
(:meth:`core.programs.Controls.impose`) —

- eq. 13, ``leg_spring``: f_c · r̂ = F, the force along the virtual leg r from the foot to the centre of mass
  behaving as the leg's spring (the same law: preload, stiffness from the length at touchdown, damping, and the
  thrust while it extends);
- eq. 14, ``moment``: (r_G × f_c)·ŷ = k_h (H̃_G − H_G), the moment about the centre of mass (r_G from it to
  the foot) driving the angular momentum about it to H̃_G = −(``pitch_kp`` θ + ``pitch_kd`` θ̇)/k_h, which also
  rights the body (k_h: ``momentum_gain``);

added at touchdown and removed at lift-off, both logged.

Lift-off and touchdown come from the contact's events, which the program answers at the event (inside the
step); it counts hops (a lift-off after a stance) and logs each with the forward speed, the angular momentum
about the centre of mass and the stance time. Plane of motion: x forward, z up, rotations about y.
"""
from __future__ import annotations

import numpy as np

from . import ControlProgram, Equation, register


@register
class RaibertHopper(ControlProgram):
    kind = "raibert_hopper"
    description = "Raibert's three-part control of a one-legged planar hopper with a telescoping leg"
    parameters = {
        "body": "body",                  # the body whose pitch is servoed
        "hip": "hip",                    # the hip hinge joint (leg angle relative to the body)
        "hip_actuator": "hip_motor",
        "hip_point": [0.0, 0.0, 0.0],    # the hip on the body (body frame): the virtual leg's upper end
        "leg": "leg",                    # the leg's second actuated joint: a telescoping slider, or a knee
        "leg_actuator": "leg_motor",
        "leg_stiffness": 0.0,            # N/m, a virtual spring along the leg in stance (0: the leg has its own)
        "leg_damping": 0.0,              # N·s/m
        "leg_preload": 0.0,              # N, the virtual spring's force at the flight length (a precharged spring)
        "retract": 0.0,                  # m, the leg shortened by this while rising in flight (foot clearance)
        "clearance": 0.0,                # m, the foot's height above the ground before the leg swings forward
        "foot": "foot",                  # the foot's contact
        "leg_length": 0.5,               # m, the virtual leg's length in flight (hip to foot)
        "speed": 0.5,                    # m/s, the commanded forward speed
        "height": 0.65,                  # m, the apex height of the centre of mass the thrust regulates
        "height_gain": 0.5,              # the fraction of the last apex's energy error added to the loss estimate
        "max_thrust": 400.0,             # N
        "speed_gain": 0.08,              # s, k_ẋ of the foot placement
        "speed_integral": 0.0,           # s, the placement's correction added per hop per m/s of speed error
        "stance_time": 0.18,             # s, T_s before the first stance has been measured
        "hip_kp": 150.0, "hip_kd": 8.0,  # flight: leg angle servo (N·m/rad, N·m·s/rad)
        "pitch_kp": 400.0, "pitch_kd": 35.0,   # stance: body attitude servo
        "momentum_gain": 0.0,            # 1/s, stance: hip moment per unit of angular momentum about the CoM
        "leg_kp": 800.0, "leg_kd": 20.0,       # flight: leg extension hold (N/m, N·s/m)
        "max_placement": 0.3,            # m, the largest foot placement ahead or behind
        "stance_control": "virtual_leg",  # or "contact_force": Kearney's eq. 13–14 on the ground's force
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
        if p["body"] not in model.body_names:
            problems.append(("body", f"no body {p['body']!r}; bodies: {', '.join(model.body_names)}"))
        if p["foot"] not in {c.name for c in model.contacts}:
            problems.append(("foot", f"no contact {p['foot']!r}"))
        for key in ("leg_length", "stance_time", "max_placement", "height", "max_thrust"):
            if not (isinstance(p[key], (int, float)) and 0 < p[key] < 1e3):
                problems.append((key, "must be a positive number below 1000"))
        if p["stance_control"] not in ("virtual_leg", "contact_force"):
            problems.append(("stance_control", f"must be 'virtual_leg' or 'contact_force', not "
                                               f"{p['stance_control']!r}"))
        elif p["stance_control"] == "contact_force" and not p["momentum_gain"] > 0:
            problems.append(("momentum_gain", "must be positive with stance_control 'contact_force' (k_h of "
                                              "Kearney's eq. 14)"))
        if not (isinstance(p["hip_point"], (list, tuple)) and len(p["hip_point"]) == 3):
            problems.append(("hip_point", "must be body coordinates [x, y, z]"))
        for key in ("leg_stiffness", "leg_damping", "leg_preload", "retract", "clearance", "speed_integral",
                    "momentum_gain", "speed", "height_gain", "speed_gain", "hip_kp", "hip_kd", "pitch_kp", "pitch_kd", "leg_kp", "leg_kd"):
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
        self.hip_point = np.array(self.p["hip_point"], dtype=float)
        self.placement_bias = 0.0        # m, the integral correction of the foot placement
        self.touchdown_length = None     # m, the virtual leg from the foot to the centre of mass at touchdown

    def _pitch(self, ctl) -> tuple[float, float]:
        """The body's pitch (rotation about y) and its rate."""
        k = ctl.model.link_index(self.p["body"])
        kin = ctl.kinematics()
        R = ctl.orientation(self.p["body"])
        omega = kin.R_WL[k] @ kin.v[k, :3]                       # angular velocity, world axes
        return float(np.arctan2(R[0, 2], R[2, 2])), float(omega[1])

    def _virtual_leg(self, ctl) -> dict:
        """The virtual leg from the hip point to the foot (Kearney §5, Raibert): its length L and world angle θ
        about y (0: the foot straight below the hip, positive: behind it), their rates, and their derivatives with
        respect to the two actuated joints (for τ = J_Lᵀ F + J_θᵀ M, by virtual work)."""
        m, qd = ctl.model, ctl.qd
        foot = next(c for c in m.contacts if c.name == self.p["foot"]).points[0]
        hip = self.hip_point
        r = ctl.point(foot.link, foot.r)[0] - ctl.point(self.p["body"], hip)[0]
        Jr = ctl.jacobian(foot.link, foot.r) - ctl.jacobian(self.p["body"], hip)
        L = float(np.linalg.norm(r))
        dL = (r / L) @ Jr
        rho2 = r[0] ** 2 + r[2] ** 2
        dth = (r[2] * Jr[0] - r[0] * Jr[2]) / rho2
        cols = [m.qd_slice(self.p["hip"]).start, m.qd_slice(self.p["leg"]).start]
        return {"L": L, "theta": float(np.arctan2(-r[0], -r[2])), "L_rate": float(dL @ qd),
                "theta_rate": float(dth @ qd), "JL": dL[cols], "Jtheta": dth[cols]}

    def _foot_height(self, ctl) -> float:
        """The foot's height above its contact's plane (m)."""
        c = next(c for c in ctl.model.contacts if c.name == self.p["foot"])
        x = ctl.point(c.points[0].link, c.points[0].r)[0]
        n, o = c.plane(ctl.kinematics())
        return float(n @ (x - o))

    def _drive(self, ctl, leg: dict, force: float, moment: float) -> None:
        """Command the two actuators for a force ``force`` along the virtual leg (extending it) and a moment
        ``moment`` on it about the hip (the body takes the opposite)."""
        tau = leg["JL"] * force + leg["Jtheta"] * moment
        ctl.actuate(self.p["hip_actuator"], float(tau[0]))
        ctl.actuate(self.p["leg_actuator"], float(tau[1]))

    def event(self, ctl, event: dict) -> None:
        if event.contact != self.p["foot"]:
            return
        touching = ctl.in_contact(self.p["foot"])
        if touching and not self.stance:
            self.stance, self.stance_start = True, event.t
            # 1. hopping height: thrust for the energy of a hop to the commanded apex height, plus the loss
            g = float(np.linalg.norm(ctl.model.gravity))
            if self.apex is not None:
                self.loss += self.p["height_gain"] * self.mass * g * (self.p["height"] - self.apex)
            target = self.mass * g * self.p["height"] + 0.5 * self.mass * self.p["speed"] ** 2
            c, cd = ctl.centre_of_mass()
            now = self.mass * g * c[2] + 0.5 * self.mass * float(cd @ cd)
            self.push = float(np.clip((target - now + self.loss) / self.stroke, 0.0, self.p["max_thrust"]))
            self.apex, self.leg_low = None, None
            self.touchdown_length = None
        elif not touching and self.stance:
            self.stance = False
            if self.p["stance_control"] == "contact_force":
                ctl.retract()
            if self.stance_start is not None:
                self.stance_time = min(max(event.t - self.stance_start, 0.02), 1.0)
            self.hops += 1
            _, cd = ctl.centre_of_mass()
            H = ctl.angular_momentum()
            self.placement_bias += self.p["speed_integral"] * (float(cd[0]) - self.p["speed"])
            self.last_liftoff = {"speed": float(cd[0]), "angular_momentum": float(H[1])}
            ctl.log("hop", hop=self.hops, speed=float(cd[0]), angular_momentum=float(H[1]),
                    stance_time=self.stance_time)

    def step(self, ctl) -> None:
        p = self.p
        leg = self._virtual_leg(ctl)
        pitch, pitch_rate = self._pitch(ctl)
        L0 = p["leg_length"]
        if self.stance and p["stance_control"] == "contact_force":
            self._stance_on_contact_force(ctl, pitch, pitch_rate)
            self.leg_low = leg["L"] if self.leg_low is None else min(self.leg_low, leg["L"])
            self.stroke = max(L0 - self.leg_low, 0.02)
        elif self.stance:
            # 1. thrust while the leg extends, on the virtual spring; 3. attitude: the hip moment acts on the
            # leg (+) and the body (−): servo the body's pitch and its rate to zero
            force = p["leg_preload"] + p["leg_stiffness"] * (L0 - leg["L"])
            if p["leg_stiffness"] > 0:             # a virtual spring pushes, never pulls
                force = max(force, 0.0)
            force -= p["leg_damping"] * leg["L_rate"]
            if leg["L_rate"] > 0 and leg["L"] < L0:
                force += self.push
            moment = p["pitch_kp"] * pitch + p["pitch_kd"] * pitch_rate
            if p["momentum_gain"]:
                moment += p["momentum_gain"] * float(ctl.angular_momentum()[1])
            self._drive(ctl, leg, force, moment)
            self.leg_low = leg["L"] if self.leg_low is None else min(self.leg_low, leg["L"])
            self.stroke = max(L0 - self.leg_low, 0.02)
        else:
            c, cd = ctl.centre_of_mass()
            self.apex = c[2] if self.apex is None else max(self.apex, c[2])
            # 2. forward speed: the foot at x_f ahead of the hip, x_f = ẋ T_s / 2 + k_ẋ (ẋ − ẋ_d)
            xf = cd[0] * self.stance_time / 2 + p["speed_gain"] * (cd[0] - p["speed"]) + self.placement_bias
            xf = float(np.clip(xf, -p["max_placement"], p["max_placement"]))
            target = -np.arcsin(np.clip(xf / L0, -0.9, 0.9))     # the leg's world angle that puts it there
            moment = -p["hip_kp"] * (leg["theta"] - target) - p["hip_kd"] * (leg["theta_rate"] - pitch_rate)
            if p["clearance"] > 0 and cd[2] > 0 and self._foot_height(ctl) < p["clearance"]:
                moment = -p["hip_kd"] * (leg["theta_rate"] - pitch_rate)   # lift the foot clear before swinging
            length = L0 - p["retract"] if cd[2] > 0 else L0       # clear the ground while rising
            force = -p["leg_kp"] * (leg["L"] - length) - p["leg_kd"] * leg["L_rate"]
            self._drive(ctl, leg, force, moment)

    def _stance_on_contact_force(self, ctl, pitch: float, pitch_rate: float) -> None:
        """Kearney's stance (§5.2): impose eq. 13 and 14 on the ground's force on the foot."""
        p = self.p
        c, cd = ctl.centre_of_mass()
        contact = next(k for k in ctl.model.contacts if k.name == p["foot"])
        x, v = ctl.point(contact.points[0].link, contact.points[0].r)
        r = c - x                                                # the virtual leg, foot to centre of mass
        length = float(np.linalg.norm(r))
        along = r / length
        rate = float(along @ (cd - v))
        if self.touchdown_length is None:
            self.touchdown_length = length
        force = p["leg_preload"] + p["leg_stiffness"] * (self.touchdown_length - length)
        if p["leg_stiffness"] > 0:
            force = max(force, 0.0)
        force -= p["leg_damping"] * rate
        if rate > 0 and length < self.touchdown_length:
            force += self.push
        y = np.array([0.0, 1.0, 0.0])
        H = float(ctl.angular_momentum()[1])
        k_h = p["momentum_gain"]
        H_wanted = -(p["pitch_kp"] * pitch + p["pitch_kd"] * pitch_rate) / k_h
        equations = {
            "leg_spring": Equation(force, forces={p["foot"]: along}),                      # eq. 13
            "moment": Equation(k_h * (H_wanted - H), forces={p["foot"]: np.cross(y, -r)}),  # eq. 14: (r_G × f)·ŷ
        }
        ctl.impose(equations, (p["hip_actuator"], p["leg_actuator"]))

    def status(self) -> dict:
        return {"hops": self.hops, "stance": self.stance, "last_liftoff": self.last_liftoff}
