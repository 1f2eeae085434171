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
    """Slotine–Li adaptive control ("IDSL", eq. 3.17, 3.21): ``τ = −K_d s + Y_p â``, ``â̇ = −η Γ Y_pᵀ s``, with
    the regressor of :func:`core.control.regressor.regressor` mapped to the adapted parameters of
    ``parameterization`` (:mod:`core.control.parameters`: standard, base or custom; Y_p = Y_in K + Y_g K_g).
    ``gamma`` is the shape of the gain, Γ (n_p x n_p, symmetric positive definite; None: the identity, the
    thesis's Γ = η·1). Every degree of freedom must be controlled. ``model_gravity`` puts gravity in Y (the
    thesis leaves it out: gravity is then an external force the compensator cannot represent, fig. 3.8).
    ``initial_parameters``: â(0) (n_p values; None: zero)."""
    kind = "slotine_li"
    EDITABLE = Controller.EDITABLE + ("eta",)

    def __init__(self, *args, eta: float = 0.01, model_gravity: bool = False, parameterization=None,
                 gamma=None, initial_parameters=None, **kw):
        from .parameters import standard_parameterization
        super().__init__(*args, **kw)
        self.eta = float(eta)
        self.model_gravity = bool(model_gravity)
        self._g = self.model.gravity if self.model_gravity else np.zeros(3)
        self.parameterization = (standard_parameterization(self.model, self._g) if parameterization is None
                                 else parameterization)
        n_par = self.parameterization.size
        G = np.eye(n_par) if gamma is None else np.asarray(gamma, dtype=float)
        if G.ndim == 0 or G.size == 1:
            G = float(G.reshape(-1)[0]) * np.eye(n_par)
        elif G.ndim == 1:
            G = np.diag(G)
        if G.shape != (n_par, n_par):
            raise ValueError(f"gamma needs 1, {n_par} or {n_par} x {n_par} values (one per adapted parameter), "
                             f"got shape {G.shape}")
        if not np.allclose(G, G.T, rtol=0, atol=1e-12 * max(1.0, np.abs(G).max())):
            raise ValueError("gamma must be symmetric")
        lowest = float(np.linalg.eigvalsh(G).min())
        if not lowest > 0:
            raise ValueError(f"gamma must be positive definite; its smallest eigenvalue is {lowest:.6g}")
        self.gamma = G
        a0 = np.zeros(n_par) if initial_parameters is None else np.asarray(initial_parameters, dtype=float)
        if a0.shape != (n_par,):
            raise ValueError(f"initial_parameters needs {n_par} values (one per adapted parameter), got {a0.size}")
        self._a0 = a0

    @property
    def n_state(self) -> int:
        return self.parameterization.size

    def initial_state(self) -> np.ndarray:
        return self._a0.copy()

    @property
    def n_parameters(self) -> int:
        return self.n_state

    def true_parameters(self) -> np.ndarray:
        """a = C θ of the plant (what â would be with perfect knowledge)."""
        return self.parameterization.of(inertial_parameters(self.model))

    @property
    def gain(self) -> np.ndarray:
        """Γ_eff = η Γ, the matrix of â̇ = −Γ_eff Y_pᵀ s."""
        return self.eta * self.gamma


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
    ``g_i`` are normalized Gaussians of the controlled coordinates with ``centres`` (N x n) and width σ (rad).

    Eq. 3.28 as written only shrinks P, so adaptation slows and stops; ``covariance`` names the remedy:
    "as_written" (none), "forgetting" (bounded-gain forgetting: ``Ṗ = ρ P − PΦΦᵀP``,
    ``ρ = forgetting (1 − tr P / tr P(0))``, so P is replenished along unexcited directions and tr P ≤ tr P(0)) or
    "floor" (``P = p_min 1 + Q``, ``Q̇ = −QΦΦᵀQ``, Q(0) = (η − p_min) 1: P ≥ p_min 1 for ever)."""
    kind = "mixture"
    EDITABLE = Controller.EDITABLE + ("eta", "sigma")

    COVARIANCE = ("as_written", "forgetting", "floor")

    def __init__(self, *args, centres, sigma: float = 0.5, eta: float = 0.01, rule: str = "gradient",
                 covariance: str = "as_written", forgetting: float = 0.0, floor: float = 0.0, **kw):
        super().__init__(*args, **kw)
        self.centres = np.atleast_2d(np.asarray(centres, dtype=float))
        if self.centres.shape[1] != self.n:
            raise ValueError(f"gate centres need {self.n} coordinates each, got {self.centres.shape[1]}")
        if rule not in ("gradient", "recursive"):
            raise ValueError(f"rule must be 'gradient' or 'recursive', got {rule!r}")
        self.sigma = float(sigma)
        self.eta = float(eta)
        self.rule = rule
        if covariance not in self.COVARIANCE:
            raise ValueError(f"covariance must be one of {', '.join(self.COVARIANCE)}, got {covariance!r}")
        self.covariance = covariance
        self.forgetting = float(forgetting)
        self.floor = float(floor)
        if covariance == "forgetting" and not self.forgetting > 0:
            raise ValueError("the forgetting rule needs a forgetting factor > 0")
        if covariance == "floor" and not 0 < self.floor < self.eta:
            raise ValueError(f"the floor of P must be between 0 and eta = P(0) = {self.eta:g}, got {self.floor:g}")

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
