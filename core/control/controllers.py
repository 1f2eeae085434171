"""Joint-space tracking controllers of thesis ch. 3 and Todorov's slides (their parameters; the laws are compiled
in :mod:`core.control.kernels`). All share the PD part
``τ_pd = −K_p e − K_d ė = −K_d s`` (eq. 3.7–3.8, λ = K_d⁻¹K_p) and differ in the compensation torque τ_c:

=====================  ==================================================  =====================================
controller             torque                                              adaptation (integrated state)
=====================  ==================================================  =====================================
:class:`PD`            ``−K_p e − K_d ė``  (eq. 3.3 set point, 3.4)        none
:class:`ComputedTorque` ``M (q̈_d − K_d ė − K_p e) + b``                    none (feedback linearization)
:class:`SlotineLi`     ``−K_d s + Y(q, q̇, q̇_r, q̈_r) â``  (eq. 3.17)       ``â̇ = −η Yᵀ s``  (eq. 3.21)
:class:`Mixture`       ``−K_d s + Σ_i g_i(q) (A_i q̈_r + B_i q̇_r)``        gradient ``Ẇ = −η s Φᵀ`` (3.20/3.26) or
                       (eq. 3.11–3.15, = −K_d s + W Φ, eq. 3.22–3.25)      recursive ``Ẇ = −s Φᵀ P``,
                                                                          ``Ṗ = −P Φ Φᵀ P`` (3.27–3.28)
=====================  ==================================================  =====================================

With all adaptive parameters zero, SlotineLi and Mixture apply exactly the PD torque. The Lyapunov function of
SlotineLi, ``V = ½ sᵀ M s + ãᵀ ã / (2η)`` with ã = â − θ, has ``V̇ = −sᵀ K_d s`` when Y models every force
acting (gravity included if present), because Y uses a C with Ṁ − 2C skew (:mod:`core.control.regressor`).
"""
from __future__ import annotations

import numpy as np

from .base import Controller
from .regressor import inertial_parameters
from .trajectories import Trajectory, region

__all__ = ["PD", "ComputedTorque", "SlotineLi", "Mixture", "grid_centres", "default_centres"]


class PD(Controller):
    """Proportional-derivative control for set points (eq. 3.3) and tracking (eq. 3.4): ``τ = −K_p e − K_d ė``."""
    kind = "pd"



class ComputedTorque(Controller):
    """Computed torque / feedback linearization (Todorov: "cancel the non-linear parts and make the system behave
    as a spring-damper"): ``τ = M(q) (q̈_d − K_d ė − K_p e) + b(q, q̇)`` so that ``ë + K_d ė + K_p e = 0``; here
    K_p (1/s²) and K_d (1/s) are acceleration gains. It needs every degree of freedom actuated. With
    ``model_gravity`` false, gravity is left out of b (an unmodelled external force)."""
    kind = "computed_torque"
    EDITABLE = Controller.EDITABLE + ("model_gravity",)

    def __init__(self, *args, model_gravity: bool = True, **kw):
        super().__init__(*args, **kw)
        self.model_gravity = bool(model_gravity)

    def set_parameter(self, key, value):
        if key == "model_gravity":
            self.model_gravity = bool(value)
        else:
            super().set_parameter(key, value)



class SlotineLi(Controller):
    """Slotine–Li adaptive control ("IDSL", eq. 3.17, 3.21): ``τ = −K_d s + Y â``, ``â̇ = −η Yᵀ s``, with the
    regressor of :func:`core.control.regressor.regressor` (ten parameters per link, any tree). Every degree of
    freedom must be controlled. ``model_gravity`` puts gravity in Y (the thesis leaves it out: gravity is then
    an external force the compensator cannot represent, fig. 3.8)."""
    kind = "slotine_li"
    EDITABLE = Controller.EDITABLE + ("eta",)

    def __init__(self, *args, eta: float = 0.01, model_gravity: bool = False, initial_parameters=None, **kw):
        super().__init__(*args, **kw)
        self.eta = float(eta)
        self.model_gravity = bool(model_gravity)
        n_par = 10 * self.model.n_links
        a0 = np.zeros(n_par) if initial_parameters is None else np.asarray(initial_parameters, dtype=float)
        if a0.shape != (n_par,):
            raise ValueError(f"initial_parameters needs {n_par} values (10 per link), got {a0.size}")
        self._a0 = a0
        self._g = self.model.gravity if self.model_gravity else np.zeros(3)

    @property
    def n_state(self) -> int:
        return 10 * self.model.n_links

    def initial_state(self) -> np.ndarray:
        return self._a0.copy()

    @property
    def n_parameters(self) -> int:
        return self.n_state

    def true_parameters(self) -> np.ndarray:
        """θ of the plant (what â would be with perfect knowledge)."""
        return inertial_parameters(self.model)



def grid_centres(low, high, n_experts: int) -> np.ndarray:
    """Gate centres on a grid over the box [low, high] (n coordinates): the factorization n_1 x n_2 x … = N whose
    cells are closest to square (the most experts along the widest coordinate), centres in the middle of the
    cells. For the Sanner–Slotine region (q1 ∈ [0, 2.66], q2 ∈ [−0.75, 0.75]): N = 1 at (1.33, 0); N = 2 at
    q1 = 0.665, 1.995; N = 4 a 2 x 2 grid at q1 = 0.665, 1.995 and q2 = ±0.375; N = 8 a 4 x 2 grid."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    n = low.size
    width = np.maximum(high - low, 1e-9)
    best, best_cost = None, np.inf

    def factorizations(N, k):
        if k == 1:
            yield (N,)
            return
        for d in range(1, N + 1):
            if N % d == 0:
                for rest in factorizations(N // d, k - 1):
                    yield (d,) + rest

    for counts in factorizations(int(n_experts), n):
        cells = width / np.array(counts)
        cost = np.log(cells.max() / cells.min())                     # aspect ratio of a cell
        if cost < best_cost - 1e-12:
            best, best_cost = counts, cost
    axes = [low[k] + (np.arange(c) + 0.5) * (high[k] - low[k]) / c for k, c in enumerate(best)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.column_stack([m.reshape(-1) for m in mesh])


class Mixture(Controller):
    """Mixture-of-experts compensator M_N (eq. 3.11–3.15): ``τ = −K_d s + W Φ`` with ``W = [A_1 B_1 … A_N B_N]``
    (n x 2nN) and ``Φ = [g_1 φ; …; g_N φ]``, ``φ = [q̈_r; q̇_r]`` (eq. 3.22–3.25). ``rule`` "gradient":
    ``Ẇ = −η s Φᵀ`` (eq. 3.20, 3.26); "recursive": ``Ẇ = −s Φᵀ P``, ``Ṗ = −P Φ Φᵀ P``, ``P(0) = η 1``
    (eq. 3.27–3.28; written with P on the right so the shapes agree, n x 2nN times 2nN x 2nN). The gates
    ``g_i`` are normalized Gaussians of the controlled coordinates with ``centres`` (N x n) and width σ (rad)."""
    kind = "mixture"
    EDITABLE = Controller.EDITABLE + ("eta", "sigma")

    def __init__(self, *args, centres, sigma: float = 0.5, eta: float = 0.01, rule: str = "gradient",
                 forgetting: float = 0.0, **kw):
        super().__init__(*args, **kw)
        self.centres = np.atleast_2d(np.asarray(centres, dtype=float))
        if self.centres.shape[1] != self.n:
            raise ValueError(f"gate centres need {self.n} coordinates each, got {self.centres.shape[1]}")
        if rule not in ("gradient", "recursive"):
            raise ValueError(f"rule must be 'gradient' or 'recursive', got {rule!r}")
        self.sigma = float(sigma)
        self.eta = float(eta)
        self.rule = rule
        self.forgetting = float(forgetting)

    @property
    def experts(self) -> int:
        return self.centres.shape[0]

    @property
    def n_features(self) -> int:
        return 2 * self.n * self.experts                             # 2nN

    @property
    def n_state(self) -> int:
        m = self.n * self.n_features
        return m + (self.n_features ** 2 if self.rule == "recursive" else 0)

    def initial_state(self) -> np.ndarray:
        z = np.zeros(self.n_state)                                   # all adaptive parameters start at zero
        if self.rule == "recursive":
            z[self.n * self.n_features:] = (self.eta * np.eye(self.n_features)).reshape(-1)   # P(0) = η 1
        return z

    @property
    def n_parameters(self) -> int:
        return self.n * self.n_features




def default_centres(trajectory: Trajectory, n_experts: int) -> np.ndarray:
    """Gate centres on a grid over the trajectory's joint-space region (:func:`grid_centres`)."""
    low, high = region(trajectory)
    return grid_centres(low, high, n_experts)
