"""Applied forces in NumPy: springs, joint springs and dampers, drag, actuators, external point forces and the
studio's mouse pull, with the power each delivers and the elastic potential energy (Mitchell thesis §2.3.1–2.3.2:
"keep track of all possible energy sources"). A world force f at a body point x becomes the generalized force
``J(x)ᵀ f`` ("apply point force", §2.4.3).

Element kinds (``model.forces``): SPRING, JOINT_SPRING, DRAG, ACTUATOR, POINT_FORCE, PULL = 0..5.

- spring between x_a and x_b (or a world point): zero rest length ``f = −k d − c ḋ`` (d = x_a − x_b),
  PE = ½k‖d‖², power −c‖ḋ‖²; otherwise ``f = −(k(ℓ − ℓ0) + c ℓ̇) u`` (u = d/ℓ, 0 when ℓ = 0), PE = ½k(ℓ − ℓ0)²,
  power −c ℓ̇². f acts on point a, −f on point b.
- joint spring on a hinge or slider: τ_j = −k(q_j − rest) − c q̇_j, PE = ½k(q_j − rest)², power −c q̇_j².
- drag at a body point: ``f = −(c₁ + c₂‖ẋ‖) ẋ``, power f·ẋ.
- actuator: τ_j = clip(u, −limit, limit) with u the run-time command (default: the element's torque); power τ_j q̇_j.
- point force: constant world f on [start, stop); power f·ẋ.
- pull: ``f = k (target − x) − c ẋ`` (no potential energy: its whole work is external); power f·ẋ.

Powers are booked under the four sources ``dampers`` (springs' and joint springs' dampers), ``drag``,
``actuators`` and ``external`` (point forces and the pull); springs' elastic forces are conservative and are in
the elastic potential instead. Each source's generalized force is returned too (4 x nv; a spring's damper part
alone): a first-order step books its work at the step's end velocity with it.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .rows import point_kinematics

SPRING, JOINT_SPRING, DRAG, ACTUATOR, POINT_FORCE, PULL = range(6)
POWER_SOURCES = ("dampers", "drag", "actuators", "external")

__all__ = ["applied_forces", "pull_element", "POWER_SOURCES"]


def pull_element(model, pull):
    """The mouse spring ``pull = (link, r, target, stiffness, damping)`` as a force element (link by index or
    name; r a 3-vector in the link frame or a named point)."""
    link, r, target, stiffness, damping = pull
    if isinstance(r, str) or not isinstance(link, (int, np.integer)):
        link, r = model.resolve_point(link, r)
    return SimpleNamespace(name="pull", kind=PULL, link_a=int(link), r_a=np.asarray(r, dtype=float), link_b=-1,
                           r_b=np.asarray(target, dtype=float), dof=-1, qdof=-1, stiffness=float(stiffness),
                           damping=float(damping), rest=0.0, linear=0.0, quadratic=0.0, torque=0.0,
                           limit=np.inf, force=None, start=0.0, stop=np.inf)


def applied_forces(model, t: float, q, qd, elements, actuators=None):
    """``(τ (nv,), power (4,), elastic potential energy, τ by source (4, nv))`` of the force ``elements`` at
    (t, q, q̇)."""
    actuators = actuators or {}
    tau = np.zeros(model.nv)
    power = np.zeros(len(POWER_SOURCES))
    by_source = np.zeros((len(POWER_SOURCES), model.nv))
    potential = 0.0
    for e in elements:
        k, c = float(e.stiffness), float(e.damping)
        if e.kind == SPRING:
            xa, va, Ja, _ = point_kinematics(model, q, qd, e.link_a, e.r_a, bias=False)
            if e.link_b >= 0:
                xb, vb, Jb, _ = point_kinematics(model, q, qd, e.link_b, e.r_b, bias=False)
            else:
                xb, vb, Jb = np.asarray(e.r_b, dtype=float), np.zeros(3), None
            d, dd = xa - xb, va - vb
            if e.rest == 0.0:
                f = -k * d - c * dd
                fd = -c * dd
                potential += 0.5 * k * float(d @ d)
                pd = -c * float(dd @ dd)
            else:
                length = float(np.linalg.norm(d))
                u = d / length if length > 0 else np.zeros(3)
                ld = float(dd @ u)
                f = (-k * (length - e.rest) - c * ld) * u
                fd = -c * ld * u
                potential += 0.5 * k * (length - e.rest) ** 2
                pd = -c * ld * ld
            tau += Ja.T @ f
            by_source[0] += Ja.T @ fd
            if Jb is not None:
                tau += Jb.T @ (-f)
                by_source[0] += Jb.T @ (-fd)
            power[0] += pd
        elif e.kind == JOINT_SPRING:
            x, w = float(q[e.qdof]), float(qd[e.dof])
            tau[e.dof] += -k * (x - e.rest) - c * w
            by_source[0, e.dof] += -c * w
            potential += 0.5 * k * (x - e.rest) ** 2
            power[0] += -c * w * w
        elif e.kind == DRAG:
            xa, va, Ja, _ = point_kinematics(model, q, qd, e.link_a, e.r_a, bias=False)
            speed = float(np.linalg.norm(va))
            s = -(e.linear + e.quadratic * speed)
            tau += Ja.T @ (s * va)
            by_source[1] += Ja.T @ (s * va)
            power[1] += s * speed * speed
        elif e.kind == ACTUATOR:
            value = float(actuators.get(e.name, e.torque))
            u = min(max(value, -e.limit), e.limit)
            tau[e.dof] += u
            by_source[2, e.dof] += u
            power[2] += u * float(qd[e.dof])
        elif e.kind == POINT_FORCE:
            if e.start <= t < e.stop:
                xa, va, Ja, _ = point_kinematics(model, q, qd, e.link_a, e.r_a, bias=False)
                f = np.asarray(e.force, dtype=float)
                tau += Ja.T @ f
                by_source[3] += Ja.T @ f
                power[3] += float(f @ va)
        elif e.kind == PULL:
            xa, va, Ja, _ = point_kinematics(model, q, qd, e.link_a, e.r_a, bias=False)
            f = k * (np.asarray(e.r_b, dtype=float) - xa) - c * va
            tau += Ja.T @ f
            by_source[3] += Ja.T @ f
            power[3] += float(f @ va)
        else:
            raise ValueError(f"unknown force element kind {e.kind}")
    return tau, power, float(potential), by_source
