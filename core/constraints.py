"""Point constraints and their deviation functions (thesis §2.2.2–2.2.4, §2.4.3; Barzel & Barr).

Every constraint acts between a point on link ``a`` and a point on link ``b`` or a (possibly moving) world point,
and has ``m`` rows (3 for nail, point-to-point and velocity; 2 for point-on-line; 1 for point-on-plane) picked by
a constant world basis ``E`` (3 x m)::

    D = Eᵀ (x_a − x_b)          Ḋ = Eᵀ (ẋ_a − ẋ_b) = J q̇ − Eᵀ ẋ_b(world)          (position constraints)
    D̈ = J q̈ + γ,  J = Eᵀ (J_a − J_b),  γ = Eᵀ (J̇_a q̇ − J̇_b q̇ − ẍ_b(world))       (eq. 2.37–2.39, 2.59)

A velocity constraint has ``D = ẋ_a − v`` and ``Ḋ = J q̈ + γ``. The constraint force on point a is ``E F`` (and
its opposite on point b); its generalized force is ``Jᵀ F`` ("apply point force", §2.4.3).

A hinge entity of a scene compiles to two point-to-point constraints on its axis (fig. 2.8), named
``<hinge>.p1`` and ``<hinge>.p2``.

Joint-space constraints ``Φ(q) = value`` (:mod:`core.joint_constraints`) get their one row here too, so every
formulation handles both kinds alike; they need q and q̇ (``constraint_rows(..., q=q, qd=qd)``).

Every constraint carries a ``jacobian_scale``: the Frobenius norm of its rows at the initial configuration (1 if
they vanish there). :class:`ConstraintRows` reports the largest over the active constraints as ``scale``, the
floor of the rank test of :mod:`core.formulations` (a lone row whose Jacobian passes through zero must be seen
as rank-deficient, which a tolerance relative to the largest singular value alone can never do).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .joint_constraints import JOINT_SPACE, JointSpaceConstraint, joint_space_rows
from .points import LinkKinematics

NAIL, POINT_TO_POINT, POINT_ON_LINE, POINT_ON_PLANE, POINT_VELOCITY = range(5)
KIND_NAMES = {NAIL: "nail", POINT_TO_POINT: "point_to_point", POINT_ON_LINE: "point_on_line",
              POINT_ON_PLANE: "point_on_plane", POINT_VELOCITY: "point_velocity", JOINT_SPACE: "joint_space"}

__all__ = ["PointConstraint", "JointSpaceConstraint", "ConstraintRows", "constraint_rows", "nail_target",
           "perpendicular_basis", "constraint_links", "NAIL", "POINT_TO_POINT", "POINT_ON_LINE", "POINT_ON_PLANE",
           "POINT_VELOCITY", "JOINT_SPACE"]


@dataclass(frozen=True, eq=False)
class PointConstraint:
    """A compiled point constraint. ``link_b = -1`` means the world, with ``r_b`` in world coordinates (the nail,
    the line or plane origin). ``path`` = (velocity, amplitude, frequency, phase) of a moving nail."""
    name: str
    entity: str
    kind: int
    link_a: int
    r_a: np.ndarray
    link_b: int
    r_b: np.ndarray
    basis: np.ndarray
    stabilization: float
    max_force: float
    max_deviation: float
    enabled: bool = True
    path: tuple | None = None
    target_velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    jacobian_scale: float = 1.0

    @property
    def rows(self) -> int:
        return self.basis.shape[1]

    @property
    def first_order(self) -> bool:
        return self.kind == POINT_VELOCITY


def constraint_links(c) -> tuple:
    """The links whose motion a constraint's rows depend on (the world excluded): its two ends for a point
    constraint, the links of the joints it reads for a joint-space one."""
    if c.kind == JOINT_SPACE:
        return tuple(c.links)
    return (c.link_a,) + ((c.link_b,) if c.link_b >= 0 else ())


def perpendicular_basis(direction: np.ndarray) -> np.ndarray:
    """Two unit vectors (3 x 2) orthogonal to ``direction`` and to each other."""
    d = direction / np.linalg.norm(direction)
    helper = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(d, helper)
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(d, e1)])


def nail_target(c: PointConstraint, t: float, override: tuple | None = None):
    """World position, velocity and acceleration of the world end of a constraint at time t.

    A prescribed nail path is ``n(t) = n0 + v t + a ∘ sin(2π f t + φ)``. ``override = (t0, position, velocity)``
    (a nail the user moves) gives ``n = position + velocity (t − t0)`` with zero acceleration.
    """
    if override is not None:
        t0, p, v = override
        return p + v * (t - t0), v, np.zeros(3)
    if c.path is None:
        return c.r_b, np.zeros(3), np.zeros(3)
    vel, amp, freq, phase = c.path
    w = 2.0 * np.pi * freq
    s, co = np.sin(w * t + phase), np.cos(w * t + phase)
    return c.r_b + vel * t + amp * s, vel + amp * w * co, -amp * w * w * s


@dataclass
class ConstraintRows:
    """The stacked rows of the active constraints at one state (m = Σ rows of the active constraints):
    ``J`` (m x nv), ``gamma`` (m,) with D̈ = J q̈ + γ, deviations ``D``, ``D_rate`` (m,), the stabilization term
    ``stab`` (m,) = 2λḊ + λ²D (or λD for velocity constraints), and ``slices[c]`` the rows of constraint c
    (None if inactive). ``deviation`` and ``deviation_rate`` (K,) are ‖D‖ and ‖Ḋ‖ of *every* constraint.
    ``scale`` is the largest ``jacobian_scale`` of the active constraints (0 if none)."""
    J: np.ndarray
    gamma: np.ndarray
    D: np.ndarray
    D_rate: np.ndarray
    stab: np.ndarray
    slices: list
    deviation: np.ndarray
    deviation_rate: np.ndarray
    scale: float = 0.0


_TABLES: dict = {}


def _point_table(constraints):
    """``(indices, ci, cf)`` of the point constraints among ``constraints`` (:func:`core.stepper.constraint_table`),
    cached per constraint tuple."""
    key = id(constraints)
    hit = _TABLES.get(key)
    if hit is None or hit[0] is not constraints:
        from .stepper import constraint_table
        idx = np.array([i for i, c in enumerate(constraints) if c.kind != JOINT_SPACE], dtype=np.int64)
        ci, cf = constraint_table([constraints[i] for i in idx])
        hit = _TABLES[key] = (constraints, idx, ci, cf)
        if len(_TABLES) > 64:
            _TABLES.pop(next(iter(_TABLES)))
    return hit[1:]


def constraint_rows(model, kin: LinkKinematics, constraints, active, t: float, overrides=None,
                    q: np.ndarray | None = None, qd: np.ndarray | None = None) -> ConstraintRows:
    """Deviation functions, Jacobians and bias terms of all constraints (only the active ones get rows): the
    point constraints' by the compiled :func:`core.stepper.point_rows_kernel` (the one implementation the
    compiled step uses too), the joint-space ones by :func:`core.joint_constraints.joint_space_rows`, which read
    ``q`` and ``qd`` (required when the model has any)."""
    from .stepper import point_rows_kernel
    overrides = overrides or {}
    K = len(constraints)
    active = np.asarray(active, dtype=bool)
    m = sum(c.rows for c, on in zip(constraints, active) if on)
    J = np.zeros((m, model.nv))
    gamma, D, D_rate, stab = np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m)
    slices = [None] * K
    deviation, deviation_rate = np.zeros(K), np.zeros(K)
    row_of = np.full(K, -1, np.int64)
    scale, row = 0.0, 0
    for i, c in enumerate(constraints):
        if active[i]:
            row_of[i] = row
            slices[i] = slice(row, row + c.rows)
            row += c.rows
            scale = max(scale, c.jacobian_scale)
    idx, ci, cf = _point_table(constraints)
    if idx.size:
        ci = ci.copy()
        ci[:, 4] = row_of[idx]
        if any(constraints[i].name in overrides for i in idx):
            from .stepper import constraint_table
            cf = constraint_table([constraints[i] for i in idx], overrides)[1]
        dev, dev_rate = np.zeros(idx.size), np.zeros(idx.size)
        ka = model.kernel_args
        point_rows_kernel(ka.parent, ka.S, ka.v_start, ka.nv_j, kin.R_WL, kin.p_WL, kin.v, kin.a_vp, ci, cf,
                          float(t), J, gamma, D, D_rate, stab, dev, dev_rate, np.empty((3, 3)), np.empty((8, 3)))
        deviation[idx], deviation_rate[idx] = dev, dev_rate
    for i, c in enumerate(constraints):
        if c.kind != JOINT_SPACE:
            continue
        if q is None or qd is None:
            raise ValueError(f"constraint {c.name!r} is a joint-space constraint: constraint_rows needs q and qd")
        d_i, d_rate_i, J_i, gamma_i = joint_space_rows(c, q, qd, model.nv)
        deviation[i], deviation_rate[i] = abs(d_i), abs(d_rate_i)
        if not active[i]:
            continue
        r = row_of[i]
        J[r], gamma[r], D[r], D_rate[r] = J_i, gamma_i, d_i, d_rate_i
        lam = c.stabilization
        stab[r] = 2.0 * lam * d_rate_i + lam * lam * d_i                  # D̈ + 2λḊ + λ²D = 0   (eq. 2.21)
    return ConstraintRows(J, gamma, D, D_rate, stab, slices, deviation, deviation_rate, scale)
