"""URDF import (the reader lives in :mod:`core.scene.urdf`, where scene documents that include a robot file use
it; this module keeps its public names where they have always been)."""
from .scene.urdf import (INERTIA_POLICIES, URDFWarning, resolve_mesh, rpy_to_matrix, rpy_to_quaternion, stl_bounds,
                         urdf_to_spec)

__all__ = ["urdf_to_spec", "rpy_to_matrix", "rpy_to_quaternion", "stl_bounds", "resolve_mesh", "URDFWarning",
           "INERTIA_POLICIES"]
