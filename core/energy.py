"""Kinetic and gravitational potential energy of the forest (thesis §2.3.2; Todorov, "Dynamics in generalized
coordinates": K = ½ q̇ᵀ M q̇, P = Σ m g h)."""
from __future__ import annotations

import numpy as np

from .model import Model
from .points import link_kinematics

__all__ = ["kinetic_energy", "potential_energy", "center_of_mass"]


def kinetic_energy(model: Model, q: np.ndarray, qd: np.ndarray) -> float:
    """``KE = Σ ½ v_iᵀ I_i v_i`` over links (equal to ½ q̇ᵀ H q̇, eq. 2.34), in joules."""
    v = link_kinematics(model, q, qd).v
    return 0.5 * float(np.einsum("ni,nij,nj->", v, model.inertia, v))


def potential_energy(model: Model, q: np.ndarray) -> float:
    """Gravitational potential ``PE = -Σ m_i g · c_i`` with c_i the world centre of mass of link i (zero at the
    world origin), in joules."""
    kin = link_kinematics(model, q)
    c = kin.p_WL + np.einsum("nij,nj->ni", kin.R_WL, model.com)
    return -float(model.mass @ (c @ model.gravity))


def center_of_mass(model: Model, q: np.ndarray) -> np.ndarray:
    """World centre of mass of the whole forest (3,)."""
    kin = link_kinematics(model, q)
    c = kin.p_WL + np.einsum("nij,nj->ni", kin.R_WL, model.com)
    total = model.mass.sum()
    return (model.mass @ c) / total if total > 0 else np.zeros(3)
