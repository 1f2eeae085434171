"""Kinetic and gravitational potential energy of the forest (thesis §2.3.2; Todorov, "Dynamics in generalized
coordinates": K = ½ q̇ᵀ M q̇, P = Σ m g h), and its centre of mass.

:func:`energies_kernel` is the one implementation: the compiled step calls it for the energy audit, and the
public functions below call it on the kinematics of one state.
"""
from __future__ import annotations

import numpy as np

from .jit import njit
from .model import Model
from .points import link_kinematics

__all__ = ["kinetic_energy", "potential_energy", "center_of_mass", "energies_kernel"]


@njit
def energies_kernel(inertia, armature, gravity, R_WL, p_WL, v, qd):
    """``(KE, PE)``: ``KE = Σ ½ v_iᵀ I_i v_i`` over links plus ``Σ ½ a_k q̇_k²`` over the joints' armature (= ½ q̇ᵀ H
    q̇, eq. 2.34; v in link coordinates) and ``PE = −Σ m_i g · c_i`` with c_i the world centre of mass of link i
    (zero at the world origin)."""
    ke = 0.0
    pe = 0.0
    for k in range(armature.shape[0]):
        ke += 0.5 * armature[k] * qd[k] * qd[k]
    for i in range(inertia.shape[0]):                         # (indexed whole: see core.kinematics.fk_kernel)
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += inertia[i, a, b] * v[i, b]
            ke += 0.5 * v[i, a] * s
        mass = inertia[i, 3, 3]
        if mass > 0:
            # the centre of mass from the inertia's coupling block m c^ (upper right, [0:3, 3:6])
            cx, cy, cz = inertia[i, 2, 4] / mass, inertia[i, 0, 5] / mass, inertia[i, 1, 3] / mass
            for a in range(3):
                wa = p_WL[i, a] + R_WL[i, a, 0] * cx + R_WL[i, a, 1] * cy + R_WL[i, a, 2] * cz
                pe -= mass * gravity[a] * wa
    return ke, pe


def kinetic_energy(model: Model, q: np.ndarray, qd: np.ndarray) -> float:
    """``KE = Σ ½ v_iᵀ I_i v_i`` over links and ``Σ ½ a_k q̇_k²`` over the joints' armature (equal to ½ q̇ᵀ H q̇,
    eq. 2.34), in joules."""
    kin = link_kinematics(model, q, qd)
    t = model.tree
    return float(energies_kernel(t.inertia, t.armature, t.gravity, kin.R_WL, kin.p_WL, kin.v,
                                 np.ascontiguousarray(qd, dtype=float))[0])


def potential_energy(model: Model, q: np.ndarray) -> float:
    """Gravitational potential ``PE = -Σ m_i g · c_i`` with c_i the world centre of mass of link i (zero at the
    world origin), in joules."""
    kin = link_kinematics(model, q)
    t = model.tree
    return float(energies_kernel(t.inertia, t.armature, t.gravity, kin.R_WL, kin.p_WL, np.zeros((model.n_links, 6)),
                                 np.zeros(model.nv))[1])


def center_of_mass(model: Model, q: np.ndarray) -> np.ndarray:
    """World centre of mass of the whole forest (3,)."""
    kin = link_kinematics(model, q)
    c = kin.p_WL + np.einsum("nij,nj->ni", kin.R_WL, model.com)
    total = model.mass.sum()
    return (model.mass @ c) / total if total > 0 else np.zeros(3)
