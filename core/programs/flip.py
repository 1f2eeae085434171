"""Kearney, Hansen & Cremer §6 and fig. 6: a flip from a planar foot. A point foot lets the ground apply one force,
so the force on the body and its moment about the centre of mass are coupled (the moment is r × f_c of eq. 14); a
foot that touches at heel and toe shares a plane of contact with the ground, and the ground's force and its moment
are then independent: the figure can jump *straight up* with the angular momentum of a flip and no horizontal
velocity.

The program controls the stance by three control equations on the ground's whole force f_c on the foot (over
heel and toe) — Kearney's contact constraints (§5.2, eq. 11–14) with the moment freed from the force — solved
with the dynamics at every integrator stage for the hip, knee and ankle torques (:meth:`core.programs.Controls.
impose`):

- ``horizontal``: f_x = m (−k_x (x_G − x_f) − d_x ẋ_G), the centre of mass held over the foot's middle x_f with no
  horizontal velocity (eq. 11's horizontal row, m ẍ_G = f_x);
- ``vertical``: f_z = m g + m a — while standing and after the landing a critically damped spring holding the
  centre of mass at its standing height, a = k_z (z_s − z_G) − d_z ż_G; in the push a constant upward
  acceleration a = ``push`` until the centre of mass rises at ``takeoff_speed`` (eq. 11's vertical row);
- ``moment``: M_G = (r × f_c)·ŷ = k_h (H̃_G − H_G) (eq. 12 and 14): in the push H̃_G = ``spin``, the angular
  momentum of the flip; standing and after the landing H̃_G = −(k_θ (θ − θ_u) + d_θ θ̇)/k_h, the torso righted at
  θ_u (0, and −2π after a backward flip).

Sequence (every transition an isolated event): stand for ``wait`` s → push → at ``takeoff_speed`` (a watch on the
centre of mass's vertical velocity) the equations are removed and the figure tucks (joint servos, loosely
coupled control) — the foot leaves the ground by the contact's own lift-off event → when the torso has turned to
``open_angle`` short of the full turn (a watch on the pitch) it opens for the landing, the foot servoed flat in
the world → at touchdown (the contact's event, an inelastic impact at heel or toe) the standing equations catch it.
The program logs ``takeoff`` (the centre of mass's velocity and H_G), ``open`` and ``landed`` (the turn since the
push began, the landing speed) and reports them in :meth:`status`. Plane of motion: x forward, z up, rotations about
y (a backward flip turns the pitch negative).
"""
from __future__ import annotations

import math

import numpy as np

from ..forces import ACTUATOR
from . import ControlProgram, Equation, register

_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


@register
class KearneyFlip(ControlProgram):
    kind = "kearney_flip"
    description = "Kearney's flip (fig. 6): force and moment of a planar foot's contact controlled apart"
    parameters = {
        "body": "torso",                 # the torso: its joint to the world's planar base is ``pitch``
        "pitch": "pitch",                # the torso's hinge about y (its angle in the plane, unwrapped)
        "hip": "hip", "knee": "knee", "ankle": "ankle",
        "hip_actuator": "hip_motor", "knee_actuator": "knee_motor", "ankle_actuator": "ankle_motor",
        "foot": "foot",                  # the foot's contact (heel and toe)
        "foot_centre": None,            # x_f on the foot (its body coordinates); None: the middle of the contact's points
        "wait": 0.3,                     # s standing before the push
        "push": 12.0,                    # m/s², the centre of mass's upward acceleration in the push
        "takeoff_speed": 3.0,            # m/s, the vertical speed that ends the push
        "extension": 0.25,               # rad, or the knee straightened to this (the leg's stroke is used up)
        "spin": -40.0,                   # kg·m²/s, H̃_G in the push (negative: a backward flip)
        "momentum_gain": 15.0,           # 1/s, k_h of eq. 14
        "balance_kp": 60.0, "balance_kd": 16.0,     # 1/s², 1/s: k_x, d_x (horizontal) and k_z, d_z (vertical)
        "max_horizontal": 0.4,           # the horizontal force's law clipped to ±this × m g (inside the friction cone)
        "pitch_kp": 400.0, "pitch_kd": 60.0,        # N·m/rad, N·m·s/rad: k_θ, d_θ of the standing H̃_G
        "max_moment": 130.0,             # N·m, the push's moment law clipped to ±this (the sole's reach: the centre
                                         # of pressure stays between heel and toe)
        "stand_moment": 400.0,           # N·m, the same standing and landing (the load is larger there)
        "tuck": [-2.2, 2.3, 0.0],        # rad, hip, knee, ankle in the tuck
        "landing": [-1.0, 1.4],          # rad, hip, knee when opened for the landing (the ankle keeps the foot flat)
        "open_angle": 1.2,               # rad short of the full turn at which the figure opens
        "joint_kp": 1500.0, "joint_kd": 80.0,       # N·m/rad, N·m·s/rad: the flight's hip and knee servos
        "foot_kp": 300.0, "foot_kd": 12.0,          # N·m/rad, N·m·s/rad: the ankle in flight (the foot flat)
    }

    @classmethod
    def check(cls, parameters: dict, model) -> list[tuple[str, str]]:
        p = {**cls.parameters, **parameters}
        problems = []
        joints = set(model.joint_names)
        for key in ("pitch", "hip", "knee", "ankle"):
            if p[key] not in joints:
                problems.append((key, f"no joint {p[key]!r}; joints: {', '.join(sorted(joints))}"))
        actuators = {f.name for f in model.forces if f.kind == ACTUATOR}
        for key in ("hip_actuator", "knee_actuator", "ankle_actuator"):
            if p[key] not in actuators:
                problems.append((key, f"no actuator {p[key]!r} (actuators: {', '.join(sorted(actuators)) or 'none'})"))
        if p["body"] not in model.body_names:
            problems.append(("body", f"no body {p['body']!r}; bodies: {', '.join(model.body_names)}"))
        contact = next((c for c in model.contacts if c.name == p["foot"]), None)
        if contact is None:
            problems.append(("foot", f"no contact {p['foot']!r}"))
        elif len(contact.points) < 2:
            problems.append(("foot", f"contact {p['foot']!r} has {len(contact.points)} point: a planar foot "
                                     "touches at two or more (heel and toe)"))
        for key in ("wait", "push", "takeoff_speed", "extension", "momentum_gain", "balance_kp", "balance_kd", "pitch_kp",
                    "pitch_kd", "max_moment", "stand_moment", "max_horizontal", "open_angle", "joint_kp", "joint_kd", "foot_kp", "foot_kd"):
            if not (isinstance(p[key], (int, float)) and not isinstance(p[key], bool) and 0 <= p[key] < 1e6):
                problems.append((key, "must be a number from 0 to 1e6"))
        if not (isinstance(p["spin"], (int, float)) and abs(p["spin"]) < 1e6):
            problems.append(("spin", "must be a number of magnitude below 1e6"))
        for key, n in (("foot_centre", 3), ("tuck", 3), ("landing", 2)):
            v = p[key]
            if key == "foot_centre" and v is None:
                continue
            if not (isinstance(v, (list, tuple)) and len(v) == n
                    and all(isinstance(x, (int, float)) and abs(x) < 1e3 for x in v)):
                problems.append((key, f"must be a list of {n} numbers"))
        return problems

    # ---- declarations -----------------------------------------------------------------------------------------
    def start(self, ctl) -> None:
        p = self.p
        m = ctl.model
        contact = next(c for c in m.contacts if c.name == p["foot"])
        foot = contact.points[0].link                       # (the contact's points are in this link's frame)
        ctl.declare("pitch", "joint", joint=p["pitch"])
        ctl.declare("pitch_rate", "rate", of="pitch")
        ctl.declare("H", "momentum", axis=_Y)
        for axis, name in ((_X, "x"), (_Z, "z")):
            ctl.declare(f"com_{name}", "centre_of_mass", axis=axis)
            ctl.declare(f"com_v{name}", "rate", of=f"com_{name}")
        if p["foot_centre"] is None:                        # the middle of the sole: of its contact points
            ctl.declare("foot_x", "point", body=foot, point=np.mean([pt.r for pt in contact.points], axis=0), axis=_X)
        else:
            ctl.declare("foot_x", "point", body=contact.body, point=p["foot_centre"], axis=_X)
        # the sole's angle in the world (0: flat), atan2(−ẑ·u, x̂·u) of the foot's x axis u: positive about +y
        ctl.declare("foot_angle", "body_angle", body=contact.body, point=_X, axis=(0.0, 0.0, -1.0), axis_b=_X)
        ctl.declare("foot_rate", "rate", of="foot_angle")
        for key in ("hip", "knee", "ankle"):
            ctl.declare(key, "joint", joint=p[key])
            ctl.declare(f"{key}_rate", "rate", of=key)
        ctl.declare("t", "time")
        self.mass = float(m.mass.sum())
        self.gravity = float(np.linalg.norm(m.gravity))
        c = ctl.centre_of_mass()[0]
        self.stand_height = float(c[2])
        self.balance = float(c[0]) - ctl.value("foot_x")   # m, the centre of mass's place over the foot
        self.upright = ctl.value("pitch")                   # rad, the torso's pitch the standing equations hold
        self.airborne = False
        self.points = len(contact.points)
        self.phase = "stand"
        self.push_start = None           # (t, pitch) when the push began
        self.takeoff = None
        self.landing = None
        ctl.watch("go", "t", ctl.t + p["wait"], +1)
        self._support(ctl, whole=True)        # (the scene stands it on its sole: the contacts close next)

    def _actuators(self) -> tuple:
        return self.p["hip_actuator"], self.p["knee_actuator"], self.p["ankle_actuator"]

    def _equations(self, ctl, vertical: Equation, moment: Equation) -> None:
        """The stance's three control equations for the hip, knee and ankle: the horizontal force (the centre of
        mass held over the foot, no horizontal velocity), ``vertical`` and ``moment``."""
        p = self.p
        k, d, m = p["balance_kp"], p["balance_kd"], self.mass
        most = p["max_horizontal"] * m * self.gravity
        horizontal = Equation(m * k * self.balance, forces={p["foot"]: _X},
                              terms={"com_x": -m * k, "foot_x": m * k, "com_vx": -m * d}, lo=-most, hi=most)
        self._release(ctl)
        ctl.impose({"horizontal": horizontal, "vertical": vertical, "moment": moment}, self._actuators())

    def _support(self, ctl, whole: bool | None = None) -> None:
        """Standing (and caught after the landing): with the whole sole down the three equations hold the centre of
        mass over the foot at its standing height and right the torso (H̃_G from its attitude, eq. 14); on heel or
        toe alone (a point gives no moment) the equations are removed and the joints hold the landing pose, the
        ankle laying the foot flat."""
        p = self.p
        if whole is None:
            whole = ctl.points_touching(p["foot"]) == self.points
        if not whole:
            ctl.retract()
            self._joints(ctl, {"hip": p["landing"][0], "knee": p["landing"][1], "foot": None})
            return
        k, d, m = p["balance_kp"], p["balance_kd"], self.mass
        vertical = Equation(m * self.gravity + m * k * self.stand_height, forces={p["foot"]: _Z},
                            terms={"com_z": -m * k, "com_vz": -m * d})
        moment = Equation(p["pitch_kp"] * self.upright, moments={p["foot"]: _Y},
                          terms={"pitch": -p["pitch_kp"], "pitch_rate": -p["pitch_kd"]},
                          lo=-p["stand_moment"], hi=p["stand_moment"])
        self._equations(ctl, vertical, moment)

    def _push(self, ctl) -> None:
        """The push: straight up at ``push`` m/s² with the flip's angular momentum H̃_G = ``spin`` (eq. 14)."""
        p = self.p
        m, k_h = self.mass, p["momentum_gain"]
        vertical = Equation(m * (self.gravity + p["push"]), forces={p["foot"]: _Z})
        moment = Equation(k_h * p["spin"], moments={p["foot"]: _Y}, terms={"H": -k_h},
                          lo=-p["max_moment"], hi=p["max_moment"])
        self._equations(ctl, vertical, moment)

    def _joints(self, ctl, targets: dict) -> None:
        """Flight: PD servos on the joints to ``targets`` (a joint's name → angle; "foot": the sole flat)."""
        p = self.p
        for key, target in targets.items():
            if key == "foot":
                ctl.servo("ankle", (p["ankle_actuator"],), 0.0,
                          {"foot_angle": -p["foot_kp"], "foot_rate": -p["foot_kd"]})
                continue
            kp, kd = (p["foot_kp"], p["foot_kd"]) if key == "ankle" else (p["joint_kp"], p["joint_kd"])
            ctl.servo(key, (p[f"{key}_actuator"],), kp * target, {key: -kp, f"{key}_rate": -kd})

    def _release(self, ctl) -> None:
        for key in ("hip", "knee", "ankle"):
            ctl.release(key)

    # ---- events -----------------------------------------------------------------------------------------------
    def event(self, ctl, event) -> None:
        p = self.p
        if event.kind == "watch":
            name = event.what.split(".", 1)[1]
            if name == "go" and self.phase == "stand":
                self.phase = "push"
                self.push_start = (ctl.t, ctl.value("pitch"))
                self._push(ctl)
                ctl.watch("takeoff", "com_vz", p["takeoff_speed"], +1)
                ctl.watch("extended", "knee", p["extension"], -1)
            elif name in ("takeoff", "extended") and self.phase == "push":
                ctl.unwatch("extended" if name == "takeoff" else "takeoff")
                self.phase = "tuck"
                ctl.retract()
                c, cd = ctl.centre_of_mass()
                H = float(ctl.angular_momentum()[1])
                self.takeoff = {"t": ctl.t, "vx": float(cd[0]), "vz": float(cd[2]), "angular_momentum": H}
                ctl.log("takeoff", vx=float(cd[0]), vz=float(cd[2]), angular_momentum=H)
                tuck = dict(zip(("hip", "knee", "ankle"), p["tuck"]))
                self._joints(ctl, tuck)
                turn = -2.0 * math.pi if p["spin"] < 0 else 2.0 * math.pi
                start = self.push_start[1]
                self.upright = start + turn
                ctl.watch("open", "pitch", self.upright - math.copysign(p["open_angle"], turn),
                          -1 if turn < 0 else +1)
            elif name == "open" and self.phase == "tuck":
                self.phase = "open"
                ctl.log("open", pitch=ctl.value("pitch"))
                self._joints(ctl, {"hip": p["landing"][0], "knee": p["landing"][1], "foot": None})
            return
        if event.contact != p["foot"]:
            return
        touching = ctl.in_contact(p["foot"])
        if self.phase in ("tuck", "open"):
            if not touching:
                self.airborne = True
            elif self.airborne:
                self.airborne = False
                self.phase = "landed"
                _, cd = ctl.centre_of_mass()
                turn = ctl.value("pitch") - self.push_start[1]
                self.landing = {"t": ctl.t, "turn": turn, "vx": float(cd[0]), "vz": float(cd[2])}
                ctl.log("landed", turn=turn, vx=float(cd[0]), vz=float(cd[2]))
                ctl.unwatch("open")
                self._support(ctl)
        elif self.phase in ("stand", "landed"):
            self._support(ctl)                            # the sole down whole, or on heel or toe alone (or off)
        elif self.phase == "push" and not touching:
            ctl.log("lifted", note="the foot left the ground before the take-off speed")

    def status(self) -> dict:
        return {"phase": self.phase, "takeoff": self.takeoff, "landing": self.landing}
