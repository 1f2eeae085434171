"""Mass properties of solid shape primitives and of composite links (thesis §2.8.3, eq. 2.77–2.78).

Each shape has its own frame at its centre of mass; cylinders and capsules lie along that frame's z axis.
Sizes are full dimensions (a box's edge lengths, a cylinder's length), not half-sizes.
"""
from __future__ import annotations

import numpy as np

from .spatial import spatial_inertia, transform_inertia

__all__ = ["shape_volume", "unit_density_inertia", "shape_spatial_inertia", "composite_inertia", "inertia_problem",
           "nearest_physical_inertia"]


def shape_volume(kind: str, size: dict) -> float:
    """Volume in m³ of a solid ``box`` (size), ``cylinder``/``capsule`` (radius, length), ``sphere`` (radius)."""
    if kind == "box":
        x, y, z = size["size"]
        return x * y * z
    if kind == "sphere":
        return 4.0 / 3.0 * np.pi * size["radius"] ** 3
    r, L = size["radius"], size["length"]
    if kind == "cylinder":
        return np.pi * r * r * L
    if kind == "capsule":
        return np.pi * r * r * L + 4.0 / 3.0 * np.pi * r ** 3
    raise ValueError(f"unknown shape kind {kind!r}")


def unit_density_inertia(kind: str, size: dict) -> np.ndarray:
    """Rotational inertia (3x3, about the centre of mass, shape axes) of the solid at density 1 kg/m³."""
    V = shape_volume(kind, size)
    if kind == "box":
        x, y, z = size["size"]
        return V / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    if kind == "sphere":
        return np.eye(3) * 0.4 * V * size["radius"] ** 2
    r, L = size["radius"], size["length"]
    if kind == "cylinder":
        # I_xx = I_yy = m (3 r² + L²) / 12, I_zz = m r² / 2
        return V * np.diag([(3 * r * r + L * L) / 12.0, (3 * r * r + L * L) / 12.0, 0.5 * r * r])
    if kind == "capsule":
        # cylinder of length L plus two hemispheres, each with its centre of mass 3r/8 from its flat face
        m_c = np.pi * r * r * L
        m_h = 2.0 / 3.0 * np.pi * r ** 3                    # one hemisphere
        d = L / 2.0 + 3.0 * r / 8.0                         # hemisphere com from the capsule centre
        I_h_own = 83.0 / 320.0 * m_h * r * r                # hemisphere transverse inertia about its own com
        I_xx = m_c * (3 * r * r + L * L) / 12.0 + 2.0 * (I_h_own + m_h * d * d)
        I_zz = 0.5 * m_c * r * r + 2.0 * (0.4 * m_h * r * r)
        return np.diag([I_xx, I_xx, I_zz])
    raise ValueError(f"unknown shape kind {kind!r}")


def shape_spatial_inertia(kind: str, size: dict, mass: float) -> np.ndarray:
    """6x6 spatial inertia of a solid shape of total ``mass`` about its own centre-of-mass frame (eq. 2.71)."""
    V = shape_volume(kind, size)
    return spatial_inertia(mass, np.zeros(3), unit_density_inertia(kind, size) * (mass / V))


def composite_inertia(parts) -> np.ndarray:
    """Sum of segment inertias moved into the link frame (thesis §2.8.3: eq. 2.77 then additivity).

    ``parts`` yields ``(M_S, R_LS, p_LS)``: a spatial inertia in segment frame S and the segment's pose in the
    link frame L.
    """
    M_L = np.zeros((6, 6))
    for M_S, R_LS, p_LS in parts:
        M_L += transform_inertia(M_S, R_LS, p_LS)
    return M_L


def inertia_problem(I: np.ndarray) -> str | None:
    """Why the symmetric 3×3 rotational inertia ``I`` (about the centre of mass) belongs to no physical body, or
    None if it does: its principal moments must be non-negative and satisfy the triangle inequality
    a + b ≥ c (tolerances relative to the largest moment)."""
    eig = np.linalg.eigvalsh(0.5 * (I + I.T))
    scale = max(1.0, float(abs(eig).max()))
    if eig.min() < -1e-12 * scale:
        return f"inertia must be positive semi-definite; its principal moments are {eig.round(12).tolist()}"
    a, b, c = eig
    if a + b < c - 1e-9 * scale:
        return (f"principal moments {eig.round(12).tolist()} violate the triangle inequality "
                "(no physical body has them)")
    return None


def nearest_physical_inertia(I: np.ndarray) -> np.ndarray:
    """The physical rotational inertia nearest to the symmetric ``I`` in the principal axes of ``I``: negative
    principal moments are raised to zero, then, if the triangle inequality a + b ≥ c fails, the moments are moved
    the least distance (Euclidean, in moment space) onto the plane a + b = c: a and b up and c down by
    (c − a − b)/3. The principal axes are kept."""
    S = 0.5 * (I + I.T)
    eig, V = np.linalg.eigh(S)
    m = np.maximum(eig, 0.0)
    a, b, c = m
    gap = c - a - b
    if gap > 0.0:
        m = np.array([a + gap / 3.0, b + gap / 3.0, c - gap / 3.0])
    out = V @ np.diag(m) @ V.T
    return 0.5 * (out + out.T)
