"""Desired joint trajectories ``q_d(t)`` with analytic ``q̇_d(t)`` and ``q̈_d(t)`` (thesis §3.6.2).

- :class:`SetPoint` — a constant configuration (the stabilization problem, eq. 3.3).
- :class:`Sinusoid` — eq. 3.38–3.39, ``q_d,i = α_i + β_i (1 − cos ω_i t)`` or ``α_i + β_i cos ω_i t`` per joint.
  :func:`sanner_slotine` gives α = 0, β = (1.33, 0.75), ω = (0.75π, 2π) [Sanner & Slotine 1995];
  :func:`bandwidth` the family ``q_d = (1.33 (1 − cos 2πkt), 0.75 cos 2πkt)`` of fig. 3.3.
- :class:`PointToPoint` — straight joint-space movements with bell-shaped speed profiles from the sigmoid
  ``σ̇ = λσ(1 − σ)`` (eq. 3.40–3.43), concatenated: ``q_d = q_0 + Σ_j σ_j(t) (q_j − q_{j−1})``, where segment j's
  sigmoid ``σ_j = 1 / (1 + exp(−λ_j (t − t_j)))`` is centred at the middle ``t_j`` of its time slot. Each term is
  eq. 3.41–3.43 exactly; summing them (rather than switching at the slot boundaries) keeps the concatenation
  smooth, and a segment differs from its own eq. 3.41 by at most ``exp(−λ T / 2)`` of the step.

Every trajectory has a ``time_scale`` k: ``q_d(t) = base(k t)`` (so velocities scale by k and accelerations by
k²); k is the "movement bandwidth" of the thesis's bench. ``evaluate(t)`` returns ``(q_d, q̇_d, q̈_d)``, each
(n,).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from ..jit import njit

SET_POINT, SINUSOID, POINT_TO_POINT = range(3)

__all__ = ["trajectory_kernel", "SET_POINT", "SINUSOID", "POINT_TO_POINT", "Trajectory", "SetPoint", "Sinusoid", "PointToPoint", "sanner_slotine", "bandwidth",
           "from_spec", "region"]


@njit
def trajectory_kernel(kind, n, segments, time_scale, f, o, t, q_d, qd_d, qdd_d):
    """``q_d``, ``q̇_d``, ``q̈_d`` (n) at time t of a trajectory whose parameters start at ``f[o]``, with its time
    scale k (``q_d(t) = base(k t)``; the thesis's movement bandwidth; :mod:`core.control.trajectories`):

    - set point: q (n);
    - sinusoid (eq. 3.38–3.39) as centre c, amplitude a, ω (n each): ``q_d = c + a cos ωt``;
    - point-to-point (eq. 3.40–3.43): points ((S+1) x n), the S sigmoid centres t_j and rates λ_j:
      ``q_d = q_0 + Σ_j σ_j(t)(q_{j+1} − q_j)``, ``σ_j = 1/(1 + exp(−λ_j (t − t_j)))``,
      ``σ̇ = λσ(1 − σ)``, ``σ̈ = λ²σ(1 − σ)(1 − 2σ)``."""
    k = time_scale
    tt = k * t
    if kind == SET_POINT:
        for i in range(n):
            q_d[i] = f[o + i]
            qd_d[i] = 0.0
            qdd_d[i] = 0.0
    elif kind == SINUSOID:
        for i in range(n):
            c, a, w = f[o + i], f[o + n + i], f[o + 2 * n + i]
            cs, sn = np.cos(w * tt), np.sin(w * tt)
            q_d[i] = c + a * cs
            qd_d[i] = -a * w * sn * k
            qdd_d[i] = -a * w * w * cs * k * k
    else:
        S = segments
        oc = o + (S + 1) * n
        orate = oc + S
        for i in range(n):
            q_d[i] = f[o + i]
            qd_d[i] = 0.0
            qdd_d[i] = 0.0
        for j in range(S):
            lam = f[orate + j]
            x = min(max(lam * (tt - f[oc + j]), -700.0), 700.0)
            sig = 1.0 / (1.0 + np.exp(-x))
            d1 = lam * sig * (1.0 - sig)
            d2 = lam * lam * sig * (1.0 - sig) * (1.0 - 2.0 * sig)
            for i in range(n):
                step = f[o + (j + 1) * n + i] - f[o + j * n + i]
                q_d[i] += sig * step
                qd_d[i] += d1 * step * k
                qdd_d[i] += d2 * step * k * k



class Trajectory(ABC):
    """Base of the desired trajectories: ``evaluate(t) -> (q_d, q̇_d, q̈_d)``; ``n`` coordinates. Every kind is
    evaluated by :func:`trajectory_kernel` (the compiled step's, too) on its :meth:`packed` parameters."""
    time_scale: float = 1.0

    @property
    @abstractmethod
    def n(self) -> int:
        """Number of coordinates."""

    @abstractmethod
    def packed(self) -> tuple[int, np.ndarray, int]:
        """``(kind, parameters, segments)`` as :func:`trajectory_kernel` reads them."""

    def evaluate(self, t: float):
        """``(q_d, q̇_d, q̈_d)`` at time t (s), with the time scale applied: q_d(t) = base(k t)."""
        kind, params, segments = self.packed()
        out = np.empty((3, self.n))
        trajectory_kernel(kind, self.n, segments, float(self.time_scale), np.ascontiguousarray(params, float), 0,
                          float(t), out[0], out[1], out[2])
        return out[0], out[1], out[2]

    def sample(self, times) -> np.ndarray:
        """``q_d`` at many times, (len(times), n)."""
        return np.array([self.evaluate(t)[0] for t in np.asarray(times, dtype=float)])


@dataclass
class SetPoint(Trajectory):
    """A constant desired configuration (q̇_d = q̈_d = 0)."""
    q: np.ndarray
    time_scale: float = 1.0

    def __post_init__(self):
        self.q = np.asarray(self.q, dtype=float).reshape(-1)

    @property
    def n(self) -> int:
        return self.q.size

    def packed(self):
        return SET_POINT, self.q, 0


@dataclass
class Sinusoid(Trajectory):
    """Eq. 3.38–3.39: joint i follows ``α_i + β_i (1 − cos ω_i t)`` when ``one_minus_cos[i]`` (the shoulder in
    the thesis), else ``α_i + β_i cos ω_i t`` (the elbow). ω in rad/s."""
    alpha: np.ndarray
    beta: np.ndarray
    omega: np.ndarray
    one_minus_cos: np.ndarray = None
    time_scale: float = 1.0

    def __post_init__(self):
        self.alpha = np.asarray(self.alpha, dtype=float).reshape(-1)
        n = self.alpha.size
        self.beta = np.broadcast_to(np.asarray(self.beta, dtype=float), (n,)).copy()
        self.omega = np.broadcast_to(np.asarray(self.omega, dtype=float), (n,)).copy()
        if self.one_minus_cos is None:                       # the thesis's form: first joint 1 − cos, others cos
            self.one_minus_cos = np.arange(n) == 0
        self.one_minus_cos = np.broadcast_to(np.asarray(self.one_minus_cos, dtype=bool), (n,)).copy()
        sign = np.where(self.one_minus_cos, -1.0, 1.0)           # 1 − cos: −β cos;  cos: +β cos
        self._centre = self.alpha + np.where(self.one_minus_cos, self.beta, 0.0)
        self._amp = sign * self.beta

    @property
    def n(self) -> int:
        return self.alpha.size

    def packed(self):
        return SINUSOID, np.concatenate([self._centre, self._amp, self.omega]), 0


@dataclass
class PointToPoint(Trajectory):
    """Concatenated sigmoid segments (eq. 3.40–3.43) through ``points`` (m+1, n): segment j moves from
    ``points[j]`` to ``points[j+1]`` during its slot of ``durations[j]`` s, with sigmoid rate ``rate`` λ (1/s;
    the peak speed is λ/4 times the step). Before the first slot and after the last the arm is at rest."""
    points: np.ndarray
    durations: np.ndarray
    rate: np.ndarray
    time_scale: float = 1.0
    centres: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self.points = np.atleast_2d(np.asarray(self.points, dtype=float))
        m = self.points.shape[0] - 1
        self.durations = np.broadcast_to(np.asarray(self.durations, dtype=float), (m,)).copy()
        self.rate = np.broadcast_to(np.asarray(self.rate, dtype=float), (m,)).copy()
        ends = np.cumsum(self.durations)
        self.centres = ends - 0.5 * self.durations

    @property
    def n(self) -> int:
        return self.points.shape[1]

    @property
    def duration(self) -> float:
        return float(self.durations.sum())

    def packed(self):
        return POINT_TO_POINT, np.concatenate([self.points.ravel(), self.centres, self.rate]), len(self.durations)


def sanner_slotine(k: float = 1.0) -> Sinusoid:
    """The Sanner–Slotine task (§3.6.2): α = 0, β = (1.33, 0.75), ω = (0.75π, 2π); q_d(0) = (0, 0.75)."""
    return Sinusoid(alpha=[0.0, 0.0], beta=[1.33, 0.75], omega=[0.75 * np.pi, 2.0 * np.pi], time_scale=k)


def bandwidth(k: float = 1.0) -> Sinusoid:
    """Fig. 3.3's family ``q_d = (1.33 (1 − cos 2πkt), 0.75 cos 2πkt)``; k = 0 is the set point (0, 0.75)."""
    return Sinusoid(alpha=[0.0, 0.0], beta=[1.33, 0.75], omega=[2.0 * np.pi, 2.0 * np.pi], time_scale=k)


def region(trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """The joint-space box ``(low, high)`` the trajectory covers (analytic for sinusoids and point-to-point
    movements; for a set point, the point itself)."""
    if isinstance(trajectory, Sinusoid):
        centre = trajectory.alpha + np.where(trajectory.one_minus_cos, trajectory.beta, 0.0)
        half = np.where(trajectory.omega != 0, np.abs(trajectory.beta), 0.0)
        return centre - half, centre + half
    if isinstance(trajectory, PointToPoint):
        return trajectory.points.min(axis=0), trajectory.points.max(axis=0)
    q = trajectory.evaluate(0.0)[0]
    return q.copy(), q.copy()


def from_spec(spec) -> Trajectory:
    """Build a trajectory from its scene-document spec (:mod:`core.scene.schema`, ``controllers[].trajectory``)."""
    kind = spec.type
    if kind == "set_point":
        return SetPoint(q=spec.q, time_scale=spec.time_scale)
    if kind == "sinusoid":
        return Sinusoid(alpha=spec.alpha, beta=spec.beta, omega=spec.omega,
                        one_minus_cos=None if spec.one_minus_cos is None else spec.one_minus_cos,
                        time_scale=spec.time_scale)
    if kind == "point_to_point":
        return PointToPoint(points=spec.points, durations=spec.durations, rate=spec.rate,
                            time_scale=spec.time_scale)
    raise ValueError(f"unknown trajectory type {kind!r}")
