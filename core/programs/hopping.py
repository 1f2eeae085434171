"""Raibert's three-part hopping control as a control program (Kearney, Hansen & Cremer §5; Raibert, "Legged
Robots That Balance", ch. 2), one program for a telescoping leg on a hip hinge (CMU's hopper) and a kneed leg
(Kearney's anthropomorphic hopper) — the two scenes differ only in their dimensions and gains:

1. hopping height: each hop's thrust is set for the energy of a hop to the commanded apex height of the centre
   of mass, plus an estimate of the energy a hop loses, adapted on each apex's error (``height_gain``), bounded
   (``max_loss``) and not integrated further while the thrust is at its largest or at none (anti-windup);
2. forward speed: in flight the hip places the foot, relative to the hip, at the neutral point plus a speed
   correction, x_f = ẋ T_s / 2 + k_ẋ (ẋ − ẋ_d) (+ the integral of the lift-off speed errors from the second hop,
   ``speed_integral``), T_s the last stance's duration; the leg shortens by ``retract`` while rising and swings
   only once the foot is ``clearance`` above the ground;
3. attitude and angular momentum: the body leaves the ground with (nearly) no angular momentum about the centre
   of mass, and its attitude is held over a run.

Stance control (``stance_control``):

- ``"contact_force"`` (both shipped scenes) is Kearney's own formulation (§5.2–5.3): two control equations on
  the ground's force f_c on the foot, solved with the dynamics for the two actuator commands at every integrator
  stage (:meth:`core.programs.Controls.impose`), added at touchdown and removed at lift-off, both logged —

  - eq. 13, ``leg_spring``: f_c · r̂ = k_l (r_s − |r|), r the virtual leg from the foot to the centre of mass,
    k_l ``leg_stiffness`` (Kearney writes r from the centre of mass to the foot: k_l (|r| − r_s)), the rest
    length r_s = |r| at touchdown (at the landing's first contact if the foot bounced before it rested); "energy
    is injected by gradually increasing the resting length": from the leg's bottom (|r| stops shortening, a
    watch) r_s grows at a constant rate over ``thrust_time`` by Δr_s, set at the bottom from the energy the hop
    needs (k_l Δr_s ≤ ``max_thrust``; Δr_s < 0, r_s shortened, when the hop has too much);
  - eq. 14, ``moment``: (r_G × f_c)·ŷ = k_h (H̃_G − H_G), the moment about the centre of mass (r_G from it to the
    foot) driving the angular momentum about it (eq. 15) to H̃_G = −``attitude_gain`` · pitch (k_h:
    ``momentum_gain``): with a small attitude gain the body lifts off with |H_G| ≈ attitude_gain · |pitch|, and
    that remainder turns it back towards level over the following hops;

- ``"virtual_leg"`` (Raibert's, an alternative for the CMU-style hopper): the leg thrusts with a constant force
  while it extends, sized at touchdown for the energy of the hop over the last stroke; a virtual spring
  (``leg_stiffness``, ``leg_preload``, ``leg_damping``) if the leg has none of its own; the hip servos the body's
  pitch (``pitch_kp``, ``pitch_kd``) and damps H_G (``momentum_gain``) — all mapped to the joints by the virtual
  leg (hip to foot) Jacobian, τ = J_Lᵀ F + J_θᵀ M (a static map: the legs' own inertia makes the ground's force
  differ from F).

Flight control (``flight_control``):

- ``"servos"``: PD servos on the virtual leg (loosely coupled control, §4.1): the hip's torque
  ``hip_kp`` (θ_d − θ) − ``hip_kd`` (θ̇ − pitch rate) through the leg angle's gradient, the leg's force
  ``leg_kp`` (L_d − L) − ``leg_kd`` L̇ along the leg;
- ``"equations"``: Kearney's "control constraint equations used to position the foot" (§5.3), two control
  equations on the accelerations of the virtual leg's world angle θ and length L solved with the dynamics for the
  two commands at every integrator stage (tightly coupled control, §4.2): θ̈ = ``angle_kp`` (θ_d − θ) −
  ``angle_kd`` θ̇ and L̈ = ``length_kp`` (L_d − L) − ``length_kd`` L̇ (gains in 1/s² and 1/s; critically damped
  when kd = 2√kp), θ̈ = −``angle_kd`` θ̇ until the foot is clear. "Deleting the control constraint equations used
  to position the foot and adding constraint equations for stance" at touchdown, and the reverse at lift-off
  ("adding the foot positioning constraint equations"), are logged as removed and added; with Kearney's hold
  after lift-off (below) the foot's equations are added when the hold is released, not while the joints are held.

Kearney's transitions (§5.3): a lift-off armed only after a short wait, so the leg loads first, is the contact's
``liftoff_delay`` in the scene; "the knee and hip joints were held in place for a short period as the hopper
gained height": for ``liftoff_hold`` seconds after each lift-off the program holds the hip and the leg's joint at
their lift-off values with its own joint-space constraints ``hip_hold`` and ``leg_hold``
(:meth:`core.programs.Controls.hold`: their multipliers are the holding torques), released by a watch on time.

Lift-off and touchdown come from the contact's events, which the program answers at the event (inside the
step); it counts hops (a lift-off after a stance) and logs each (``hop``) with the forward speed, the angular
momentum about the centre of mass, the stance time, the thrust (N; k_l Δr_s with ``contact_force``) and the loss
estimate (J), and each flight's apex (``apex``: the centre of mass's ``height`` where its vertical speed crosses
zero, a watch). Plane of motion: x forward, z up, rotations about y.
"""
from __future__ import annotations

import numpy as np

from ..forces import ACTUATOR
from . import ControlProgram, Equation, register


@register
class RaibertHopper(ControlProgram):
    kind = "raibert_hopper"
    description = ("Raibert's three-part control of a one-legged planar hopper (a telescoping or a kneed leg), "
                   "its stance as Kearney's eq. 13–14 on the ground's force")
    parameters = {
        "body": "body",                  # the body whose pitch is servoed
        "hip": "hip",                    # the hip hinge joint (leg angle relative to the body)
        "hip_actuator": "hip_motor",
        "hip_point": [0.0, 0.0, 0.0],    # the hip on the body (body frame): the virtual leg's upper end
        "leg": "leg",                    # the leg's second actuated joint: a telescoping slider, or a knee
        "leg_actuator": "leg_motor",
        "leg_stiffness": 0.0,            # N/m, a virtual spring along the leg in stance (0: the leg has its own);
                                         #   with "contact_force" k_l of eq. 13 (positive)
        "leg_damping": 0.0,              # N·s/m (0 in eq. 13 as Kearney writes it)
        "leg_preload": 0.0,              # N, the virtual spring's force at the flight length ("virtual_leg" only)
        "retract": 0.0,                  # m, the leg shortened by this while rising in flight (foot clearance)
        "clearance": 0.0,                # m, the foot's height above the ground before the leg swings forward
        "foot": "foot",                  # the foot's contact
        "leg_length": 0.5,               # m, the virtual leg's length in flight (hip to foot)
        "speed": 0.5,                    # m/s, the commanded forward speed
        "height": 0.65,                  # m, the apex height of the centre of mass the thrust regulates
        "height_gain": 0.5,              # the fraction of the last apex's energy error added to the loss estimate
        "max_loss": 20.0,                # J, the loss estimate's bound (anti-windup: |loss| ≤ max_loss)
        "max_thrust": 400.0,             # N, the thrust's largest force ("contact_force": k_l Δr_s ≤ max_thrust)
        "thrust_time": 0.05,             # s, "contact_force": the time over which r_s grows by Δr_s in stance
        "speed_gain": 0.08,              # s, k_ẋ of the foot placement
        "speed_integral": 0.0,           # s, the placement's correction added per hop per m/s of speed error
        "stance_time": 0.18,             # s, T_s before the first stance has been measured
        "hip_kp": 150.0, "hip_kd": 8.0,  # flight ("servos"): leg angle servo (N·m/rad, N·m·s/rad)
        "pitch_kp": 400.0, "pitch_kd": 35.0,   # stance ("virtual_leg"): body attitude servo
        "momentum_gain": 0.0,            # 1/s, stance: hip moment per unit of angular momentum about the CoM
                                         #   ("virtual_leg"); k_h of eq. 14 ("contact_force", positive)
        "attitude_gain": 0.0,            # kg·m²/s/rad, "contact_force": H̃_G = −attitude_gain · pitch (eq. 14)
        "leg_kp": 800.0, "leg_kd": 20.0,       # flight ("servos"): leg extension hold (N/m, N·s/m)
        "flight_control": "servos",      # or "equations": the flight's foot placement and leg length as control
                                         #   equations on the virtual leg's accelerations (Kearney §5.3, §4.2)
        "angle_kp": 400.0,               # 1/s², "equations": θ̈ per rad of the leg angle's error (ω², ω = 20/s)
        "angle_kd": 40.0,                # 1/s, "equations": θ̈ per rad/s of the leg angle's rate (2ω: critical)
        "length_kp": 900.0,              # 1/s², "equations": L̈ per m of the leg length's error (ω_L², ω_L = 30/s)
        "length_kd": 60.0,               # 1/s, "equations": L̈ per m/s of the leg length's rate (2ω_L: critical)
        "max_placement": 0.3,            # m, the largest foot placement ahead or behind
        "stance_control": "virtual_leg",  # or "contact_force": Kearney's eq. 13–14 on the ground's force
        "liftoff_hold": 0.0,             # s, the hip and the leg held where they are for this long after lift-off
        "hip_hold": "",                  # the program's own joint-space constraint on the hip joint that holds it
        "leg_hold": "",                  #   (and on the leg's joint): both needed when liftoff_hold > 0
    }

    @classmethod
    def check(cls, parameters: dict, model) -> list[tuple[str, str]]:
        p = {**cls.parameters, **parameters}
        problems = []
        joints = set(model.joint_names)
        for key in ("hip", "leg"):
            if p[key] not in joints:
                problems.append((key, f"no joint {p[key]!r}; joints: {', '.join(sorted(joints))}"))
        actuators = {f.name for f in model.forces if f.kind == ACTUATOR}
        for key in ("hip_actuator", "leg_actuator"):
            if p[key] not in actuators:
                problems.append((key, f"no actuator {p[key]!r} (actuators: {', '.join(sorted(actuators)) or 'none'})"))
        if p["body"] not in model.body_names:
            problems.append(("body", f"no body {p['body']!r}; bodies: {', '.join(model.body_names)}"))
        if p["foot"] not in {c.name for c in model.contacts}:
            problems.append(("foot", f"no contact {p['foot']!r}"))
        for key in ("leg_length", "stance_time", "max_placement", "height", "max_thrust", "thrust_time"):
            if not (isinstance(p[key], (int, float)) and 0 < p[key] < 1e3):
                problems.append((key, "must be a positive number below 1000"))
        if p["stance_control"] not in ("virtual_leg", "contact_force"):
            problems.append(("stance_control", f"must be 'virtual_leg' or 'contact_force', not "
                                               f"{p['stance_control']!r}"))
        elif p["stance_control"] == "contact_force":
            if not (isinstance(p["momentum_gain"], (int, float)) and p["momentum_gain"] > 0):
                problems.append(("momentum_gain", "must be positive with stance_control 'contact_force' (k_h of "
                                                  "Kearney's eq. 14)"))
            if not (isinstance(p["leg_stiffness"], (int, float)) and p["leg_stiffness"] > 0):
                problems.append(("leg_stiffness", "must be positive with stance_control 'contact_force' (k_l of "
                                                  "Kearney's eq. 13)"))
        if p["flight_control"] not in ("servos", "equations"):
            problems.append(("flight_control", f"must be 'servos' or 'equations', not {p['flight_control']!r}"))
        elif p["flight_control"] == "equations":
            for key, unit in (("angle_kp", "1/s², the leg angle's acceleration per rad of error"),
                              ("angle_kd", "1/s, the leg angle's acceleration per rad/s"),
                              ("length_kp", "1/s², the leg length's acceleration per m of error"),
                              ("length_kd", "1/s, the leg length's acceleration per m/s")):
                if not (isinstance(p[key], (int, float)) and 0 < p[key] < 1e6):
                    problems.append((key, f"must be a positive number below 1e6 with flight_control 'equations' "
                                          f"({unit})"))
        if not (isinstance(p["liftoff_hold"], (int, float)) and 0 <= p["liftoff_hold"] < 10):
            problems.append(("liftoff_hold", "must be a number of seconds from 0 to 10"))
        elif p["liftoff_hold"] > 0:
            from ..joint_constraints import JOINT_SPACE
            kinds = {c.name: c.kind for c in model.constraints}
            for key in ("hip_hold", "leg_hold"):
                if kinds.get(p[key]) != JOINT_SPACE:
                    problems.append((key, f"must name a joint-space constraint of the scene (the program's own, "
                                          f"holding the {'hip' if key == 'hip_hold' else 'leg'}) when liftoff_hold "
                                          f"is positive, not {p[key]!r}"))
        if isinstance(p["max_loss"], (int, float)) and p["max_loss"] < 0:
            problems.append(("max_loss", "must not be negative (the bound of the loss estimate, J)"))
        if not (isinstance(p["hip_point"], (list, tuple)) and len(p["hip_point"]) == 3):
            problems.append(("hip_point", "must be body coordinates [x, y, z]"))
        for key in ("leg_stiffness", "leg_damping", "leg_preload", "retract", "clearance", "speed_integral",
                    "max_loss", "attitude_gain", "momentum_gain", "speed", "height_gain", "speed_gain", "hip_kp",
                    "hip_kd", "pitch_kp", "pitch_kd", "leg_kp", "leg_kd"):
            if not (isinstance(p[key], (int, float)) and abs(p[key]) < 1e6):
                problems.append((key, "must be a number of magnitude below 1e6"))
        return problems


    @classmethod
    def check_owned(cls, parameters: dict, owned: tuple) -> list[tuple[str, str]]:
        p = {**cls.parameters, **parameters}
        if not (isinstance(p["liftoff_hold"], (int, float)) and p["liftoff_hold"] > 0):
            return []
        return [(key, f"{p[key]!r} is not among the program's own constraints ({', '.join(owned) or 'none'}): "
                      "list it in the program's 'constraints'")
                for key in ("hip_hold", "leg_hold") if p[key] not in owned]

    # ---- declarations -----------------------------------------------------------------------------------------
    def start(self, ctl) -> None:
        p = self.p
        m = ctl.model
        contact = next(c for c in m.contacts if c.name == p["foot"])
        foot = contact.points[0]
        n, o = contact.plane(ctl.kinematics())
        x, z = (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)
        ctl.declare("pitch", "body_angle", body=p["body"], point=z, axis=x, axis_b=z)
        ctl.declare("pitch_rate", "rate", of="pitch")
        ctl.declare("L", "distance", body=p["body"], point=p["hip_point"], body_b=foot.link, point_b=foot.r,
                    gradient=True)                               # the virtual leg, hip to foot
        ctl.declare("L_rate", "rate", of="L")
        ctl.declare("theta", "angle", body=p["body"], point=p["hip_point"], body_b=foot.link, point_b=foot.r,
                    axis=(-1.0, 0.0, 0.0), axis_b=(0.0, 0.0, -1.0), gradient=True)   # 0: foot below the hip
        ctl.declare("theta_rate", "rate", of="theta")
        ctl.declare("H", "momentum", axis=(0.0, 1.0, 0.0))
        ctl.declare("com_z", "centre_of_mass", axis=z)
        ctl.declare("com_vz", "rate", of="com_z")
        ctl.declare("foot_height", "point", body=foot.link, point=foot.r, axis=n)
        ctl.declare("time", "time")
        self.ground = float(np.dot(n, o))
        if p["stance_control"] == "contact_force":
            ctl.declare("leg_r", "distance", body=foot.link, point=foot.r, body_b=None)   # foot to centre of mass
            ctl.declare("leg_r_rate", "rate", of="leg_r")
        self.stance = ctl.in_contact(p["foot"])
        self.stance_start = ctl.t if self.stance else None
        self.stance_time = float(p["stance_time"])
        self.hops = 0
        self.last_liftoff = None
        self.apex = None                 # the highest centre-of-mass height of the current flight
        self.push = 0.0                  # N, the thrust of the current stance (contact_force: k_l Δr_s)
        self.loss = 0.0                  # J, the estimated energy a hop loses (adapted on the apex errors)
        self.stroke = 0.1                # m, the leg's extension in the last stance's thrust phase
        self.mass = float(m.mass.sum())
        self.placement_bias = 0.0        # m, the integral correction of the foot placement
        self.target = 0.0                # rad, the leg's world angle that places the foot
        self.touchdown_length = None     # m, the virtual leg from the foot to the centre of mass at touchdown
        self.rest = None                 # m, eq. 13's rest length r_s now (contact_force); grows by self.growth
        self.growth = 0.0                # m, Δr_s of the current stance (contact_force)
        self.saturated = 0               # +1: the last Δr_s at its largest, −1: at its most negative (anti-windup)
        self.grow_start = 0.0            # s, when r_s started to grow (contact_force)
        self.landing = None              # m, |r| at the landing's first contact (a bounce before the touchdown)
        self.held = False                # the hip and the leg held after lift-off
        self.rising = False              # flight: the leg shortened by ``retract`` (until the apex)
        self.clear = True                # flight: the foot clear of the ground, the leg swung to its placement
        if self.stance and p["stance_control"] == "contact_force":
            self.touchdown_length = self.rest = ctl.value("leg_r")
        if self.stance:
            self._stance(ctl, thrust=False)
        else:
            self._flight(ctl, rising=False, clear=True)

    def _actuators(self) -> tuple:
        return self.p["hip_actuator"], self.p["leg_actuator"]

    def _stance(self, ctl, thrust: bool) -> None:
        """The stance's control: 1. the leg's force (its spring, and the thrust while it extends), 3. the
        attitude — on the virtual leg (servos, τ = J_Lᵀ F + J_θᵀ M) or as eq. 13–14 on the ground's force
        (:meth:`_equations`)."""
        p = self.p
        if p["stance_control"] == "contact_force":
            self._equations(ctl, growing=thrust)          # (replaces the flight's equations, if any)
            return
        ctl.retract()                                     # the flight's equations, if any
        push = self.push if thrust else 0.0
        ctl.release("hip")
        ctl.release("leg")
        ctl.servo("leg", self._actuators(), p["leg_preload"] + p["leg_stiffness"] * p["leg_length"] + push,
                  {"L": -p["leg_stiffness"], "L_rate": -p["leg_damping"]}, along="L")
        attitude = {"pitch": p["pitch_kp"], "pitch_rate": p["pitch_kd"]}
        if p["momentum_gain"]:
            attitude["H"] = p["momentum_gain"]
        ctl.servo("hip", self._actuators(), 0.0, attitude, along="theta")

    def _equations(self, ctl, growing: bool) -> None:
        """Kearney's stance (§5.2), two control equations on the ground's force f_c on the foot, solved with the
        dynamics for the hip's and the leg's commands at every integrator stage:

        - eq. 13: f_c · r̂ = k_l (r_s − |r|), r from the foot to the centre of mass (Kearney writes r from the
          centre of mass to the foot, hence his sign), r_s the rest length: |r| at touchdown, grown while
          ``growing`` at the constant rate Δr_s / ``thrust_time`` from the time ``self.grow_start`` (the law is
          affine in the declared quantity ``time``: k_l (r_s0 + (t − t₀) Δr_s/T − |r|)), then held at r_s0 + Δr_s;
          ``leg_damping`` (0 as Kearney writes it) adds −c ṙ;
        - eq. 14: (r_G × f_c)·ŷ = k_h (H̃_G − H_G), r_G from the centre of mass to the foot, k_h ``momentum_gain``,
          H̃_G = −``attitude_gain`` · pitch: the angular momentum leaves the ground near zero (|H_G| ≤
          attitude_gain·|pitch| once H_G has followed H̃_G, time constant 1/k_h), and its small remainder turns the
          body back towards level over many hops (a first-order decay of rate attitude_gain / I, I the body's
          moment of inertia about the centre of mass) — the attitude is held over a run, not servoed in a stance."""
        p = self.p
        k = p["leg_stiffness"]
        terms = {"leg_r": -k}
        if p["leg_damping"]:
            terms["leg_r_rate"] = -p["leg_damping"]
        value = k * self.rest
        if growing:
            rate = self.growth / p["thrust_time"]
            value -= k * rate * self.grow_start
            terms["time"] = k * rate
        ctl.release("hip")
        ctl.release("leg")
        ctl.impose({
            "leg_spring": Equation(value, forces={p["foot"]: "leg_r"}, terms=terms),                  # eq. 13
            "moment": Equation(0.0, moments={p["foot"]: (0.0, 1.0, 0.0)},                            # eq. 14
                               terms={"pitch": -p["momentum_gain"] * p["attitude_gain"], "H": -p["momentum_gain"]}),
        }, self._actuators())

    def _thrust(self, ctl) -> None:
        """At the bottom of the stance (the virtual leg stops shortening): Δr_s for the energy of a hop to the
        commanded apex. The centre of mass's energy now, with the virtual spring's, is E_b = m g z + ½ m |ċ|² +
        ½ k_l c², c = r_s − |r| its compression; lengthening r_s by Δ adds k_l (c Δ + Δ²/2) (at once; grown over
        ``thrust_time`` it adds less — the loss estimate takes that up). Wanted at lift-off: E = m g h + ½ m ẋ_d²
        plus the estimated loss, so Δ = −c + √(c² + 2 W / k_l), W = E − E_b + loss, clipped to −c/2 ≤ Δ ≤
        ``max_thrust`` / k_l: a hop with too much energy shortens r_s (still pushing: the spring keeps at least a
        quarter of its energy), taking energy out."""
        p = self.p
        k = p["leg_stiffness"]
        g = float(np.linalg.norm(ctl.model.gravity))
        c, cd = ctl.centre_of_mass()
        squeeze = self.rest - ctl.value("leg_r")
        now = self.mass * g * c[2] + 0.5 * self.mass * float(cd @ cd) + 0.5 * k * squeeze ** 2
        wanted = self.mass * g * p["height"] + 0.5 * self.mass * p["speed"] ** 2 + self.loss - now
        top, bottom = p["max_thrust"] / k, -0.5 * max(squeeze, 0.0)
        growth = -squeeze + float(np.sqrt(max(squeeze ** 2 + 2 * wanted / k, 0.0)))
        self.saturated = 1 if growth >= top else (-1 if growth <= bottom else 0)
        self.growth = float(np.clip(growth, bottom, top))
        self.grow_start = ctl.t
        self.push = k * self.growth

    def _flight(self, ctl, rising: bool, clear: bool) -> None:
        """The flight's control: 2. the hip places the foot at the leg angle ``self.target`` (only once the foot
        is clear of the ground), the leg held at its length (shortened while ``rising``) — by PD servos
        (``flight_control`` "servos", loosely coupled, §4.1) or by two control equations on the virtual leg's
        accelerations (``"equations"``, :meth:`_flight_equations`)."""
        p = self.p
        self.rising, self.clear = rising, clear
        if p["flight_control"] == "equations":
            self._flight_equations(ctl)
            return
        damp = {"theta_rate": -p["hip_kd"], "pitch_rate": p["hip_kd"]}
        if clear:
            ctl.servo("hip", self._actuators(), p["hip_kp"] * self.target, {"theta": -p["hip_kp"], **damp},
                      along="theta")
        else:
            ctl.servo("hip", self._actuators(), 0.0, damp, along="theta")
        length = p["leg_length"] - (p["retract"] if rising else 0.0)
        ctl.servo("leg", self._actuators(), p["leg_kp"] * length, {"L": -p["leg_kp"], "L_rate": -p["leg_kd"]},
                  along="L")

    def _flight_equations(self, ctl) -> None:
        """Kearney's foot positioning in flight (§5.3: "the control constraint equations used to position the
        foot", added at lift-off, deleted at touchdown), tightly coupled control (§4.2): two equations on the
        accelerations of the virtual leg (hip to foot), solved with the dynamics for the hip's and the leg's
        commands at every integrator stage —

        - ``flight_angle``: θ̈ = k_θ (θ_d − θ) − c_θ θ̇, θ the leg's world angle, θ_d = ``self.target`` (set at
          lift-off); before the foot is clear of the ground, θ̈ = −c_θ θ̇ (no swing);
        - ``flight_length``: L̈ = k_L (L_d − L) − c_L L̇, L_d = ``leg_length`` (less ``retract`` while rising);

        k, c: ``angle_kp``, ``angle_kd``, ``length_kp``, ``length_kd`` (critically damped when c = 2√k). While
        Kearney's hold after lift-off is on, its joint-space constraints fix the hip and the leg (the actuators
        could not move them: the equations would be unsolvable), so the equations are imposed when it is released
        (:meth:`event`, ``released``) and replaced by the stance's at touchdown (``impose``), both logged."""
        p = self.p
        if self.held:
            return
        ctl.release("hip")
        ctl.release("leg")
        angle = {"theta_rate": -p["angle_kd"]}
        value = 0.0
        if self.clear:
            angle["theta"] = -p["angle_kp"]
            value = p["angle_kp"] * self.target
        length = p["leg_length"] - (p["retract"] if self.rising else 0.0)
        ctl.impose({
            "flight_angle": Equation(value, quantity_accelerations={"theta": 1.0}, terms=angle),
            "flight_length": Equation(p["length_kp"] * length, quantity_accelerations={"L": 1.0},
                                      terms={"L": -p["length_kp"], "L_rate": -p["length_kd"]}),
        }, self._actuators())

    # ---- events -----------------------------------------------------------------------------------------------
    def event(self, ctl, event) -> None:
        p = self.p
        if event.kind == "watch":
            name = event.what.split(".", 1)[1]
            if name == "bottom":                                  # the leg starts to extend: thrust
                if p["stance_control"] == "contact_force":        # eq. 13's rest length grows
                    self._thrust(ctl)
                    self._stance(ctl, thrust=True)
                    ctl.watch("grown", "time", ctl.t + p["thrust_time"], +1)
                else:
                    self.stroke = max(p["leg_length"] - ctl.value("L"), 0.02)
                    self._stance(ctl, thrust=True)
                    ctl.watch("extended", "L", p["leg_length"], +1)
            elif name == "grown":                                 # r_s has grown by Δr_s: held there
                self.rest += self.growth
                self._stance(ctl, thrust=False)
            elif name == "extended":                              # the thrust's stroke is over
                self._stance(ctl, thrust=False)
            elif name == "released":                              # the hold after lift-off is over
                self._release(ctl)
                if p["flight_control"] == "equations":            # the flight's equations take over
                    self._flight(ctl, rising=self.rising, clear=self.clear)
            elif name == "clear":                                 # the foot is clear: swing it
                self._flight(ctl, rising=True, clear=True)
            elif name == "apex":
                self.apex = ctl.value("com_z")
                ctl.log("apex", hop=self.hops, height=self.apex)
                if p["stance_control"] == "contact_force":
                    # 1. the loss estimate adapted on the apex's error, bounded, and not pushed further by an
                    # error the thrust could not answer (Δr_s at its largest, or at its most negative): anti-windup
                    g = float(np.linalg.norm(ctl.model.gravity))
                    error = self.mass * g * (p["height"] - self.apex)
                    if not (self.saturated > 0 and error > 0 or self.saturated < 0 and error < 0):
                        self.loss = float(np.clip(self.loss + p["height_gain"] * error, -p["max_loss"],
                                                  p["max_loss"]))
                ctl.unwatch("clear")
                self._flight(ctl, rising=False, clear=True)
            return
        if event.contact != p["foot"]:
            return
        if event.kind == "bounce" and not self.stance and self.landing is None \
                and p["stance_control"] == "contact_force":
            self.landing = ctl.value("leg_r")                     # the landing began here: r_s is this length
            return
        touching = ctl.in_contact(p["foot"])
        if touching and not self.stance:
            self.stance, self.stance_start = True, event.t
            # 1. hopping height: thrust for the energy of a hop to the commanded apex height, plus the loss
            if p["stance_control"] != "contact_force":
                g = float(np.linalg.norm(ctl.model.gravity))
                if self.apex is not None:
                    self.loss = float(np.clip(self.loss + p["height_gain"] * self.mass * g * (p["height"] - self.apex),
                                              -p["max_loss"], p["max_loss"]))
                target = self.mass * g * p["height"] + 0.5 * self.mass * p["speed"] ** 2
                c, cd = ctl.centre_of_mass()
                now = self.mass * g * c[2] + 0.5 * self.mass * float(cd @ cd)
                self.push = float(np.clip((target - now + self.loss) / self.stroke, 0.0, p["max_thrust"]))
            self.apex = None
            ctl.unwatch("apex")
            ctl.unwatch("clear")
            self._release(ctl)
            if p["stance_control"] == "contact_force":
                self.touchdown_length = self.rest = self.landing if self.landing is not None else ctl.value("leg_r")
                self.growth = 0.0
                ctl.watch("bottom", "leg_r_rate", 0.0, +1)
            else:
                ctl.watch("bottom", "L_rate", 0.0, +1)
            self._stance(ctl, thrust=False)
        elif not touching and self.stance:
            self.stance = False
            if p["stance_control"] == "contact_force":
                ctl.retract()
            ctl.unwatch("bottom")
            ctl.unwatch("extended")
            ctl.unwatch("grown")
            if self.stance_start is not None:
                self.stance_time = min(max(event.t - self.stance_start, 0.02), 1.0)
            self.hops += 1
            _, cd = ctl.centre_of_mass()
            H = float(ctl.angular_momentum()[1])
            if self.hops > 1:            # the first lift-off ends a drop from rest, not a placed stance
                self.placement_bias += p["speed_integral"] * (float(cd[0]) - p["speed"])
            self.last_liftoff = {"speed": float(cd[0]), "angular_momentum": H}
            ctl.log("hop", hop=self.hops, speed=float(cd[0]), angular_momentum=H, stance_time=self.stance_time,
                    thrust=self.push, loss=self.loss)
            # 2. forward speed: the foot at x_f ahead of the hip, x_f = ẋ T_s / 2 + k_ẋ (ẋ − ẋ_d); the horizontal
            # speed holds over the flight, so the placement is made once, here
            xf = cd[0] * self.stance_time / 2 + p["speed_gain"] * (cd[0] - p["speed"]) + self.placement_bias
            xf = float(np.clip(xf, -p["max_placement"], p["max_placement"]))
            self.target = float(-np.arcsin(np.clip(xf / p["leg_length"], -0.9, 0.9)))
            rising = float(cd[2]) > 0
            clear = not (p["clearance"] > 0 and rising)
            self.landing = None
            if p["liftoff_hold"] > 0:
                # Kearney §5.3: "the knee and hip joints were held in place for a short period as the hopper gained
                # height" — the program's own joint-space constraints at the joints' lift-off values (their
                # multipliers the holding torques, solved with the dynamics), released by a watch on time
                ctl.hold(p["hip_hold"], ctl.joint(p["hip"])[0])
                ctl.hold(p["leg_hold"], ctl.joint(p["leg"])[0])
                self.held = True
                ctl.watch("released", "time", ctl.t + p["liftoff_hold"], +1)
            self._flight(ctl, rising=rising, clear=clear)     # ("equations": imposed once the hold is released)
            if not clear:
                ctl.watch("clear", "foot_height", self.ground + p["clearance"], +1)
            if rising:
                ctl.watch("apex", "com_vz", 0.0, -1)

    def _release(self, ctl) -> None:
        """End the hold after lift-off (if any): its watch and its constraints removed (logged)."""
        if self.held:
            ctl.unwatch("released")
            ctl.remove(self.p["hip_hold"])
            ctl.remove(self.p["leg_hold"])
            self.held = False

    def status(self) -> dict:
        return {"hops": self.hops, "stance": self.stance, "last_liftoff": self.last_liftoff}
