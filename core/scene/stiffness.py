"""Joints too stiff or too damped for a model's fixed-step integrator at its time step (issue 24).

A joint's damping c (joint dampers, an actuator's velocity bias −b₂, a PD controller's kd) over its effective
inertia I (the joint's own mode, the other joints free: ``I = 1 / (H⁻¹)ᵢᵢ`` at the initial state, armature
included in H) is a decay rate λ = c / I; RK4 is stable for a real rate only while λ·dt ≤ 2.785 (its stability
polynomial |1 + z + z²/2 + z³/6 + z⁴/24| ≤ 1 on the negative real axis), and a stiffness k (joint springs, an
actuator's position bias −b₁, a PD's kp) adds the frequency √(k/I), for which the bound is ω·dt ≤ 2.83. MuJoCo's
models are tuned for its implicit treatment of joint damping (λ·dt up to 231 in Menagerie), which an explicit
step takes as a divergence within a few steps. :func:`stiff_joints` measures each hinge and slider joint's
linear mode ``I s² + c s + k = 0`` with the integrator's own one-step map (RK4, the semi-implicit Euler step, or
``implicitfast``, which takes the dampers' and actuators' share of c implicitly and a PD controller's kd and every
stiffness explicitly) and returns those it would amplify, each with the largest time step at which it would not;
:func:`advice` says
it in a sentence (``python -m core validate`` and ``run`` print it). The adaptive ``cash_karp`` integrator
shortens its own step instead; it is not checked. The measure is local (the joint's own mode, at the initial
state, clipping ignored): a warning, not a proof either way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StiffJoint", "stiff_joints", "advice", "RK4_REAL_BOUND"]

#: RK4's stability bound on the negative real axis: |R(−x)| = 1 at x = 2.7853.
RK4_REAL_BOUND = 2.7853


@dataclass(frozen=True)
class StiffJoint:
    """A joint whose own mode the fixed step would amplify: its damping c, stiffness k, effective inertia,
    the mode's largest rate |s| (1/s), |s|·dt, and the largest time step at which the step is stable."""
    joint: str
    damping: float
    stiffness: float
    inertia: float
    rate: float
    dt: float
    needed_dt: float

    @property
    def rate_dt(self) -> float:
        return self.rate * self.dt


def _step_matrix(integrator: str, k: float, c: float, dt: float, c_implicit: float = 0.0) -> np.ndarray:
    """The one-step map of (x, v) for ẍ = −k x − c v (per unit inertia; ``c_implicit`` of c taken implicitly by
    implicitfast)."""
    A = np.array([[0.0, 1.0], [-k, -c]])
    if integrator in ("semi_implicit_euler", "implicitfast"):   # v₁ = v + dt a, x₁ = x + dt v₁, with
        s = 1.0 + dt * c_implicit if integrator == "implicitfast" else 1.0   # (1 + dt c_i) a = −k x − c v
        alpha, beta = -k / s, -c / s
        return np.array([[1.0 + dt * dt * alpha, dt * (1.0 + dt * beta)], [dt * alpha, 1.0 + dt * beta]])
    Z = dt * A                                            # RK4: R(Z) = I + Z + Z²/2 + Z³/6 + Z⁴/24
    out, term = np.eye(2), np.eye(2)
    for n in range(1, 5):
        term = term @ Z / n
        out = out + term
    return out


def _stable(integrator: str, k: float, c: float, dt: float, c_implicit: float = 0.0) -> bool:
    return float(np.abs(np.linalg.eigvals(_step_matrix(integrator, k, c, dt, c_implicit))).max()) <= 1.0 + 1e-12


def _largest_stable_dt(integrator: str, k: float, c: float, dt: float, c_implicit: float = 0.0) -> float:
    lo, hi = 0.0, dt
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _stable(integrator, k, c, mid, c_implicit):
            lo = mid
        else:
            hi = mid
    return lo


def stiff_joints(model, dt: float | None = None, integrator: str | None = None) -> list[StiffJoint]:
    """The hinge and slider joints of ``model`` whose own linear mode the fixed-step ``integrator`` (default the
    model's) would amplify at ``dt`` (default the model's), worst first; [] for the adaptive integrator."""
    from ..crba import mass_matrix
    from ..forces import ACTUATOR, JOINT_SPRING
    from ..model import HINGE, SLIDER
    dt = float(dt if dt is not None else model.settings.get("dt", 1e-3))
    integrator = integrator or model.settings.get("integrator", "rk4")
    if integrator not in ("rk4", "semi_implicit_euler", "implicitfast") or model.nv == 0:
        return []
    c, k = np.zeros(model.nv), np.zeros(model.nv)
    for f in model.forces:
        if f.kind == JOINT_SPRING:
            c[f.dof] += f.damping
            k[f.dof] += f.stiffness
        elif f.kind == ACTUATOR:
            c[f.dof] -= f.bias[2]
            k[f.dof] -= f.bias[1]
    implicit = np.maximum(c, 0.0) if integrator == "implicitfast" else np.zeros(model.nv)   # (core.forward)
    for ctl in model.controllers:
        if getattr(ctl, "kind", "") == "pd" and ctl.enabled:
            c[np.asarray(ctl.dofs)] += ctl.kd
            k[np.asarray(ctl.dofs)] += ctl.kp
    if not (c.any() or k.any()):
        return []
    try:
        inverse = np.diag(np.linalg.inv(mass_matrix(model, np.asarray(model.q0, dtype=float))))
    except np.linalg.LinAlgError:
        return []
    out = []
    for i in range(model.n_links):
        if model.joint_type[i] not in (HINGE, SLIDER):
            continue
        d = int(model.v_start[i])
        if not (c[d] > 0 or k[d] > 0) or not inverse[d] > 0:
            continue
        inertia = 1.0 / inverse[d]
        cc, kk, ci = c[d] / inertia, k[d] / inertia, implicit[d] / inertia
        if _stable(integrator, kk, cc, dt, ci):
            continue
        roots = np.roots([1.0, cc, kk])
        out.append(StiffJoint(model.joint_link_names[i], float(c[d]), float(k[d]), float(inertia),
                              float(np.abs(roots).max()), dt, _largest_stable_dt(integrator, kk, cc, dt, ci)))
    return sorted(out, key=lambda s: -s.rate_dt)


def advice(stiff: list[StiffJoint], integrator: str = "rk4", most: int = 5) -> list[str]:
    """One sentence per stiff joint (at most ``most``, then how many more), and the time step they all need."""
    if not stiff:
        return []
    name = {"rk4": "RK4", "semi_implicit_euler": "the semi-implicit Euler step",
            "implicitfast": "the implicitfast step"}.get(integrator, integrator)
    lines = []
    for s in stiff[:most]:
        what = " and ".join(x for x in (f"damping {s.damping:.4g}" if s.damping else "",
                                        f"stiffness {s.stiffness:.4g}" if s.stiffness else "") if x)
        lines.append(f"joint {s.joint!r} is too stiff for {name} at dt = {s.dt:g} s: its {what} over its effective "
                     f"inertia {s.inertia:.4g} (armature included) give a rate λ = {s.rate:.4g} 1/s, λ·dt = "
                     f"{s.rate_dt:.3g} (stable up to about {RK4_REAL_BOUND if integrator == 'rk4' else 2:.3g}); "
                     f"it needs dt ≤ {s.needed_dt:.3g} s")
    if len(stiff) > most:
        lines.append(f"and {len(stiff) - most} more joint(s)")
    needed = min(s.needed_dt for s in stiff)
    cure = ("or the adaptive cash_karp integrator" if integrator == "implicitfast" else
            "the implicitfast integrator (--integrator implicitfast: joint dampers and actuators' velocity gains "
            "taken implicitly, as MuJoCo's models expect), or the adaptive cash_karp integrator")
    lines.append(f"the step would diverge: use dt ≤ {needed:.3g} s (--dt), {cure}")
    return lines
