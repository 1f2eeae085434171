"""Controllers and desired trajectories in NumPy, built from the scene spec (``model.spec.controllers``).

Trajectories (thesis §3.6.2), each with a time scale k: ``q_d(t) = base(k t)``, q̇_d scaled by k, q̈_d by k²:

- set point: constant q (eq. 3.3);
- sinusoid (eq. 3.38–3.39): ``α_i + β_i (1 − cos ω_i t)`` where ``one_minus_cos[i]`` (default: the first joint
  only), else ``α_i + β_i cos ω_i t``;
- point to point (eq. 3.40–3.43): ``q_d = q_0 + Σ_j σ_j(t)(q_{j+1} − q_j)``, ``σ_j = 1/(1 + exp(−λ_j(t − t_j)))``
  centred in the middle t_j of slot j, ``σ̇ = λσ(1 − σ)``, ``σ̈ = λ²σ(1 − σ)(1 − 2σ)`` (argument clipped to ±700).

Tracking quantities (eq. 3.4–3.8) over the controlled coordinates: ``e = q − q_d``, ``ė``, ``λ = kp/kd``,
``q̇_r = q̇_d − λe``, ``q̈_r = q̈_d − λė``, ``s = ė + λe``. Laws (torques clipped to ±torque_limit; a disabled
controller applies nothing and holds its state):

- PD (eq. 3.3–3.4): ``τ = −kp e − kd ė``;
- computed torque: ``τ = M (q̈_d − kd ė − kp e) + b`` (b without gravity when ``model_gravity`` is false);
- Slotine–Li (eq. 3.17, 3.21): ``τ = −kd s + Y(q, q̇, q̇_r, q̈_r) â``, ``â̇ = −η Yᵀ s`` with the regressor of
  ``core.control.regressor.regressor_reference`` (gravity in Y only with ``model_gravity``);
- mixture of experts (eq. 3.11–3.15, 3.20–3.28): ``τ = −kd s + W Φ``, ``Φ = g(q) ⊗ [q̈_r; q̇_r]`` with normalized
  Gaussian gates (eq. 3.13–3.14); gradient rule ``Ẇ = −η s Φᵀ`` (eq. 3.26) or recursive ``Ẇ = −s (PΦ)ᵀ``,
  ``Ṗ = −PΦ (PΦ)ᵀ``, P(0) = η1 (eq. 3.27–3.28); gate centres by default on the grid of :func:`grid_centres`
  over the trajectory's region;
- projected inverse dynamics (Aghili §7): motion ``f∥ = P(b + M u_p)`` with ``[J; S_θ] u_p = [−γ; θ̈_d − kd ė −
  kp e]`` (eq. 45–48); constraint-force control ``f = f∥ + Q b + μ(f∥ − P b + M C q̇) + u_𝓕`` (eq. 51–52, the
  loop 𝓕 = u_𝓕 + d solved for e_f, state ∫e_f); passive joints ``f = (I + H) f∥``, ``H = −(I − P) Q⁺(I − B)``,
  ``Q = (I − B)(I − P)`` (eq. 55–62). Here P, J⁺ use the relative tolerance 1e-9 (no scale floor).

Each controller owns a slice of the integrated state z, in spec order.
"""
from __future__ import annotations

import numpy as np

import core

from .rows import constraint_rows

__all__ = ["build_controllers", "ControlInput", "control_stage", "grid_centres", "gates", "Trajectory",
           "inertial_parameters"]


# ---- trajectories -----------------------------------------------------------------------------------------------

class Trajectory:
    """``evaluate(t) -> (q_d, q̇_d, q̈_d)`` of a trajectory spec (set point, sinusoid, point to point)."""

    def __init__(self, spec):
        self.type = spec.type
        self.k = float(spec.time_scale)
        if self.type == "set_point":
            self.q = np.asarray(spec.q, dtype=float).reshape(-1)
            self.n = self.q.size
        elif self.type == "sinusoid":
            self.alpha = np.asarray(spec.alpha, dtype=float).reshape(-1)
            n = self.n = self.alpha.size
            self.beta = np.broadcast_to(np.asarray(spec.beta, dtype=float), (n,)).copy()
            self.omega = np.broadcast_to(np.asarray(spec.omega, dtype=float), (n,)).copy()
            omc = np.arange(n) == 0 if spec.one_minus_cos is None else np.asarray(spec.one_minus_cos, dtype=bool)
            self.one_minus_cos = np.broadcast_to(omc, (n,)).copy()
            self.centre = self.alpha + np.where(self.one_minus_cos, self.beta, 0.0)
            self.amp = np.where(self.one_minus_cos, -1.0, 1.0) * self.beta     # 1 − cos: −β cos; cos: +β cos
        elif self.type == "point_to_point":
            self.points = np.atleast_2d(np.asarray(spec.points, dtype=float))
            m = self.points.shape[0] - 1
            self.n = self.points.shape[1]
            self.durations = np.broadcast_to(np.asarray(spec.durations, dtype=float), (m,)).copy()
            self.rate = np.broadcast_to(np.asarray(spec.rate, dtype=float), (m,)).copy()
            self.centres = np.cumsum(self.durations) - 0.5 * self.durations
        else:
            raise ValueError(f"unknown trajectory type {self.type!r}")

    def _base(self, t):
        if self.type == "set_point":
            z = np.zeros_like(self.q)
            return self.q.copy(), z, z.copy()
        if self.type == "sinusoid":
            wt = self.omega * t
            c, s = np.cos(wt), np.sin(wt)
            return self.centre + self.amp * c, -self.amp * self.omega * s, -self.amp * self.omega * self.omega * c
        steps = np.diff(self.points, axis=0)
        x = np.clip(self.rate * (t - self.centres), -700.0, 700.0)
        sig = 1.0 / (1.0 + np.exp(-x))
        d1 = self.rate * sig * (1.0 - sig)                                     # eq. 3.42
        d2 = self.rate ** 2 * sig * (1.0 - sig) * (1.0 - 2.0 * sig)            # eq. 3.43
        return self.points[0] + sig @ steps, d1 @ steps, d2 @ steps           # eq. 3.41

    def evaluate(self, t):
        k = self.k
        q, qd, qdd = self._base(k * t)
        return q, k * qd, (k * k) * qdd

    def region(self):
        """The joint-space box the trajectory covers (for the default gate centres)."""
        if self.type == "sinusoid":
            half = np.where(self.omega != 0, np.abs(self.beta), 0.0)
            return self.centre - half, self.centre + half
        if self.type == "point_to_point":
            return self.points.min(axis=0), self.points.max(axis=0)
        q = self.evaluate(0.0)[0]
        return q.copy(), q.copy()


def grid_centres(low, high, n_experts: int) -> np.ndarray:
    """Gate centres in the middle of the cells of the factorization n_1 x … x n_n = N closest to square cells."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    n = low.size
    width = np.maximum(high - low, 1e-9)

    def factorizations(N, k):
        if k == 1:
            yield (N,)
            return
        for d in range(1, N + 1):
            if N % d == 0:
                for rest in factorizations(N // d, k - 1):
                    yield (d,) + rest
    best, best_cost = None, np.inf
    for counts in factorizations(int(n_experts), n):
        cells = width / np.array(counts)
        cost = np.log(cells.max() / cells.min())
        if cost < best_cost - 1e-12:
            best, best_cost = counts, cost
    axes = [low[k] + (np.arange(c) + 0.5) * (high[k] - low[k]) / c for k, c in enumerate(best)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.column_stack([m.reshape(-1) for m in mesh])


def gates(q, centres, sigma: float) -> np.ndarray:
    """Normalized Gaussian gates ``exp(−‖q − c_i‖²/2σ²) / Z`` (eq. 3.13–3.14), shifted so Z never underflows."""
    d2 = np.sum((centres - q) ** 2, axis=1) / (2.0 * sigma * sigma)
    w = np.exp(-(d2 - d2.min()))
    return w / w.sum()


def inertial_parameters(model) -> np.ndarray:
    """θ (10N,): (m, hx, hy, hz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz) of every link from its spatial inertia about the
    link origin (h = m c from the coupling block m c^)."""
    out = np.zeros((model.n_links, 10))
    for i, I in enumerate(model.inertia):
        out[i] = (I[3, 3], I[2, 4], I[0, 5], I[1, 3], I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])
    return out.reshape(-1)


# ---- what a controller sees -------------------------------------------------------------------------------------

class ControlInput:
    """The plant at (t, q, q̇) for one evaluation: M, b, g(q) and the force elements' generalized force (a force
    sensor), computed on first use."""

    def __init__(self, model, t, q, qd, active, nails, external):
        self.model, self.t, self.q, self.qd = model, t, q, qd
        self.active, self.nails, self._external = active, nails, external
        self._cache = {}

    def _get(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    @property
    def M(self):
        return self._get("M", lambda: core.mass_matrix(self.model, self.q))

    @property
    def b(self):
        return self._get("b", lambda: core.nonlinear_effects(self.model, self.q, self.qd))

    @property
    def gravity_torque(self):
        return self._get("g", lambda: core.nonlinear_effects(self.model, self.q, np.zeros(self.model.nv)))

    @property
    def tau_external(self):
        return self._get("ext", lambda: np.zeros(self.model.nv) if self._external is None else self._external())


def _gain(value, n: int) -> np.ndarray:
    g = np.asarray(value, dtype=float).reshape(-1)
    return np.full(n, g[0]) if g.size == 1 else g


class Controller:
    """Common part: controlled dofs (q̇ indices) and qidx (q indices), trajectory, gains, limits, state size."""
    n_state = 0

    def __init__(self, spec, model, dofs, qidx):
        self.name, self.type, self.model = spec.name, spec.type, model
        self.nv = model.nv
        self.dofs, self.qidx = np.asarray(dofs, dtype=np.int64), np.asarray(qidx, dtype=np.int64)
        self.n = self.dofs.size
        self.trajectory = Trajectory(spec.trajectory)
        self.kp, self.kd = _gain(spec.kp, self.n), _gain(spec.kd, self.n)
        self.torque_limit = None if spec.torque_limit is None else _gain(spec.torque_limit, self.n)
        self.enabled = bool(spec.enabled)

    def initial_state(self):
        return np.zeros(self.n_state)

    def parameter_estimates(self, z):
        return z[:0]

    @property
    def output_dofs(self):
        return self.dofs

    def tracking(self, inp):
        q_d, qd_d, qdd_d = self.trajectory.evaluate(inp.t)
        e = inp.q[self.qidx] - q_d
        e_dot = inp.qd[self.dofs] - qd_d
        lam = self.kp / self.kd                                              # λ = K_d⁻¹K_p      (eq. 3.7)
        return dict(q_d=q_d, qd_d=qd_d, qdd_d=qdd_d, e=e, e_dot=e_dot, qd_r=qd_d - lam * e,
                    qdd_r=qdd_d - lam * e_dot, s=e_dot + lam * e)

    def limit(self, u):
        return u if self.torque_limit is None else np.clip(u, -self.torque_limit, self.torque_limit)

    def output(self, inp, z):
        """``(τ (nv,), ż)``."""
        tau = np.zeros(self.nv)
        if not self.enabled:
            return tau, np.zeros(self.n_state)
        u, rate = self.law(inp, z, self.tracking(inp))
        tau[self.output_dofs] = self.limit(u)
        return tau, rate

    def diagnostics(self, inp, z) -> dict:
        tr = self.tracking(inp)
        tau, _ = self.output(inp, z)
        M = inp.M[np.ix_(self.dofs, self.dofs)]
        return {"tracking_error": tr["e"], "desired": tr["q_d"], "sliding_variable": tr["s"],
                "s_energy": np.float64(0.5 * tr["s"] @ M @ tr["s"]), "torque": tau,
                "parameters": self.parameter_estimates(z)}


class PD(Controller):
    def law(self, inp, z, tr):
        return -self.kp * tr["e"] - self.kd * tr["e_dot"], z[:0]                   # eq. 3.3–3.4


class ComputedTorque(Controller):
    def __init__(self, spec, model, dofs, qidx):
        super().__init__(spec, model, dofs, qidx)
        self.model_gravity = bool(spec.model_gravity)

    def law(self, inp, z, tr):
        b = inp.b if self.model_gravity else inp.b - inp.gravity_torque
        v = tr["qdd_d"] - self.kd * tr["e_dot"] - self.kp * tr["e"]
        return inp.M[np.ix_(self.dofs, self.dofs)] @ v + b[self.dofs], z[:0]


class SlotineLi(Controller):
    """With the parameterization's maps K, K_g from the core (core.control.parameterization_of: a compile-time
    quantity, tested on its own in test_control_parameters.py), Y_p = Y_in K + Y_g K_g from the NumPy regressor,
    and Γ formed here from the spec."""

    def __init__(self, spec, model, dofs, qidx):
        from core.control import parameterization_of
        super().__init__(spec, model, dofs, qidx)
        self.eta = float(spec.eta)
        self.model_gravity = bool(spec.model_gravity)
        self.p = parameterization_of(model, spec)
        self.n_state = self.p.size
        G = np.eye(self.n_state) if spec.gamma is None else np.asarray(spec.gamma, dtype=float)
        self.gamma = G * np.eye(self.n_state) if G.ndim == 0 else np.diag(G) if G.ndim == 1 else G
        init = spec.initial_parameters
        self._a0 = (np.zeros(self.n_state) if init == "zero" else self.p.C @ inertial_parameters(model)
                    if init == "model" else np.asarray(init, dtype=float))
        self._g = np.asarray(model.gravity, dtype=float) if self.model_gravity else np.zeros(3)

    def initial_state(self):
        return self._a0.copy()

    def parameter_estimates(self, z):
        return z

    def law(self, inp, z, tr):
        from core.control.regressor import regressor_reference    # the NumPy regressor (stable public piece)
        qd_r, qdd_r = np.zeros(self.nv), np.zeros(self.nv)
        qd_r[self.dofs], qdd_r[self.dofs] = tr["qd_r"], tr["qdd_r"]
        zero = np.zeros(self.nv)
        Y_in = regressor_reference(self.model, inp.q, inp.qd, qd_r, qdd_r, np.zeros(3))[self.dofs]
        Y_g = regressor_reference(self.model, inp.q, zero, zero, zero, self._g)[self.dofs]
        Y = Y_in @ self.p.K + Y_g @ self.p.K_gravity
        return (-self.kd * tr["s"] + Y @ z,
                -self.eta * self.gamma @ (Y.T @ tr["s"]))                  # eq. 3.17, 3.21 with Γ


class Mixture(Controller):
    def __init__(self, spec, model, dofs, qidx):
        super().__init__(spec, model, dofs, qidx)
        if spec.centres is not None:
            self.centres = np.atleast_2d(np.asarray(spec.centres, dtype=float))
        else:
            low, high = self.trajectory.region()
            self.centres = grid_centres(low, high, spec.experts)
        self.sigma, self.eta, self.rule = float(spec.sigma), float(spec.eta), spec.rule
        self.covariance = spec.covariance
        self.n_features = 2 * self.n * self.centres.shape[0]                      # 2nN
        self.n_state = self.n * self.n_features + (self.n_features ** 2 if self.rule == "recursive" else 0)

    def initial_state(self):
        z = np.zeros(self.n_state)
        if self.rule == "recursive":
            z[self.n * self.n_features:] = (self.eta * np.eye(self.n_features)).reshape(-1)   # P(0) = η1
        return z

    def parameter_estimates(self, z):
        return z[:self.n * self.n_features]

    def law(self, inp, z, tr):
        m = self.n * self.n_features
        W = z[:m].reshape(self.n, self.n_features)
        phi = np.concatenate([tr["qdd_r"], tr["qd_r"]])
        Phi = np.outer(gates(inp.q[self.qidx], self.centres, self.sigma), phi).reshape(-1)   # eq. 3.22–3.25
        tau = -self.kd * tr["s"] + W @ Phi
        if self.rule == "gradient":
            return tau, (-self.eta * np.outer(tr["s"], Phi)).reshape(-1)          # eq. 3.26
        P = z[m:].reshape(self.n_features, self.n_features)
        PPhi = P @ Phi
        cov = self.covariance
        if cov is not None and cov.rule == "floor":                                # Q = P − p_min 1, Q̇ = −QΦΦᵀQ
            QPhi = PPhi - cov.floor * Phi
            Pdot = -np.outer(QPhi, QPhi)
        else:
            rho = (cov.forgetting_factor * (1.0 - np.trace(P) / (self.eta * self.n_features))
                   if cov is not None and cov.rule == "forgetting" else 0.0)
            Pdot = -np.outer(PPhi, PPhi) + rho * P                                # eq. 3.28 (+ forgetting)
        return tau, np.concatenate([(-np.outer(tr["s"], PPhi)).reshape(-1),       # eq. 3.27
                                    Pdot.reshape(-1)])


def _projector(J, tolerance=1e-9):
    """``(P, J⁺)`` with singular values ≤ tolerance · σ_max treated as zero (Aghili eq. 15)."""
    n = J.shape[1]
    if J.shape[0] == 0:
        return np.eye(n), np.zeros((n, 0))
    U, s, Vt = np.linalg.svd(J, full_matrices=False)
    r = int(np.sum(s > tolerance * s[0])) if s.size and s[0] > 0 else 0
    V = Vt[:r].T
    return np.eye(n) - V @ V.T, V @ (U[:, :r] / s[:r]).T


class ProjectedInverseDynamics(Controller):
    def __init__(self, spec, model, dofs, qidx, actuated=None, desired_force=None):
        super().__init__(spec, model, dofs, qidx)
        self.actuated = np.ones(self.nv, bool) if actuated is None else np.asarray(actuated, bool)
        self.desired_force = desired_force
        self.gf, self.gi = float(spec.force_gain), float(spec.force_integral_gain)
        self.n_state = self.nv if self.desired_force else 0                      # ∫e_f dt

    @property
    def output_dofs(self):
        return np.arange(self.nv)

    def limit(self, u):
        if self.torque_limit is None:
            return u
        lim = np.full(self.nv, np.inf)
        lim[self.dofs] = self.torque_limit
        return np.clip(u, -lim, lim)

    def solve(self, inp, z, tr):
        M, h, n = inp.M, inp.b, self.nv
        active = inp.active if inp.active is not None else np.array([c.enabled for c in self.model.constraints])
        rows = constraint_rows(self.model, inp.t, inp.q, inp.qd, active, inp.nails)
        J, gamma = rows.J, rows.gamma
        P, J_pinv = _projector(J)
        S = np.zeros((self.n, n))
        S[np.arange(self.n), self.dofs] = 1.0                                    # θ = S_θ q
        v = tr["qdd_d"] - self.kd * tr["e_dot"] - self.kp * tr["e"]
        u_p = np.linalg.lstsq(np.vstack([J, S]), np.concatenate([-gamma, v]), rcond=None)[0]   # eq. 46
        f_par = P @ (h + M @ u_p)                                                # eq. 45
        out = {"f_par": f_par}
        if self.desired_force:
            I = np.eye(n)
            Q = I - P
            Mc = M + P @ M - M @ P                                               # eq. 23
            mu = Q @ M @ np.linalg.inv(Mc)                                       # eq. 32
            Cqd = -J_pinv @ gamma                                                # eq. 16
            lam_d = np.zeros(J.shape[0])
            for i, force in self.desired_force.items():
                s = rows.slices[i]
                if s is not None:
                    lam_d[s] = np.asarray(self.model.constraints[i].basis).T @ force
            F_d = -J.T @ lam_d                                                   # 𝓕_d = −Jᵀλ_d (our sign)
            ext = inp.tau_external
            d = Q @ ext - mu @ (P @ ext)
            zf = Q @ z
            e_f = -(self.gi * zf + d) / (1.0 + self.gf)
            u_F = F_d + self.gf * e_f + self.gi * zf                             # eq. 52
            f_perp = Q @ h + mu @ (f_par - P @ h + M @ Cqd) + u_F                # eq. 51
            out.update(f=f_par + f_perp, e_f=e_f)
        elif not self.actuated.all():
            B = np.diag(self.actuated.astype(float))
            I = np.eye(n)
            Q = (I - B) @ (I - P)                                                # eq. 57
            H = -(I - P) @ np.linalg.pinv(Q) @ (I - B)                           # eq. 61
            f = (I + H) @ f_par                                                  # eq. 62
            out.update(f=np.where(self.actuated, f, 0.0))
        else:
            out.update(f=f_par)                                                  # eq. 48
        return out

    def law(self, inp, z, tr):
        sol = self.solve(inp, z, tr)
        return sol["f"], (sol["e_f"] if self.desired_force else z[:0])

    def diagnostics(self, inp, z):
        d = super().diagnostics(inp, z)
        if self.desired_force:
            d["constraint_force_error"] = self.solve(inp, z, self.tracking(inp))["e_f"]
        return d


# ---- from the spec ----------------------------------------------------------------------------------------------

_CACHE: dict = {}


def build_controllers(model) -> tuple:
    """The oracle's controllers of ``model.spec.controllers`` (cached per model), joints resolved through the
    model: default joints are all joints with coordinates, in coordinate order."""
    hit = _CACHE.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    specs = list(getattr(model.spec, "controllers", None) or []) if model.spec is not None else []
    out = []
    for spec in specs:
        names = spec.joints if spec.joints is not None else list(model.joint_names)
        dofs = [model.qd_slice(n).start for n in names]
        qidx = [model.q_slice(n).start for n in names]
        if spec.type == "pd":
            out.append(PD(spec, model, dofs, qidx))
        elif spec.type == "computed_torque":
            out.append(ComputedTorque(spec, model, dofs, qidx))
        elif spec.type == "slotine_li":
            out.append(SlotineLi(spec, model, dofs, qidx))
        elif spec.type == "mixture":
            out.append(Mixture(spec, model, dofs, qidx))
        elif spec.type == "projected_inverse_dynamics":
            actuated = desired = None
            if spec.actuated is not None:
                actuated = np.zeros(model.nv, bool)
                actuated[[model.qd_slice(n).start for n in spec.actuated]] = True
            if spec.desired_force:
                names_c = [c.name for c in model.constraints]
                desired = {names_c.index(k): np.asarray(f, dtype=float) for k, f in spec.desired_force.items()}
            out.append(ProjectedInverseDynamics(spec, model, dofs, qidx, actuated, desired))
        else:
            raise ValueError(f"unknown controller type {spec.type!r}")
    out = tuple(out)
    _CACHE[id(model)] = (model, out)
    return out


def state_slices(controllers) -> list[slice]:
    out, start = [], 0
    for c in controllers:
        out.append(slice(start, start + c.n_state))
        start += c.n_state
    return out


def control_stage(controllers, inp, z):
    """Summed torques (nv,) of every controller and the rate ż of the whole controller state."""
    tau = np.zeros(inp.model.nv)
    z_rate = np.zeros(z.size)
    for c, s in zip(controllers, state_slices(controllers)):
        u, rate = c.output(inp, z[s])
        tau += u
        z_rate[s] = rate
    return tau, z_rate
