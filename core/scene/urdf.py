"""URDF import: read a robot description (URDF XML) into a validated scene spec.

:func:`urdf_to_spec` parses the file with :mod:`xml.etree.ElementTree`, builds a plain scene document and passes
it through :func:`core.scene.parse_spec`, so a URDF is checked by exactly the same rules as a scene file;
:func:`core.load_urdf` then compiles it with :func:`core.scene.compile_scene`. The contract:

**Tree and coordinates.** The root link (the one link that is never a joint's child) is welded to the world
with a ``fixed`` joint named after the link, or attached by a ``free`` joint (also named after it, starting at
the world origin) with ``floating_base=True``. A root link named ``world`` is the world itself: its child joints
attach directly to the world and its own inertial and visuals are ignored (``floating_base=True`` is then
refused, since the URDF already fixes the robot). Every other link becomes a body of the same name, attached by
its URDF joint (joint name kept). Bodies are emitted depth-first from the root, children in the document order of
their joints, so the compiled model's ``joint_names`` (joints with coordinates) follow exactly that order; use
``model.q_slice(name)`` / ``model.qd_slice(name)`` to find a joint's entries.

**Joints.** ``revolute`` and ``continuous`` → ``hinge``; ``prismatic`` → ``slider``; ``fixed`` → ``fixed``;
``floating`` → ``free``; ``planar`` is refused (that joint alone is reported; its child is not taken for a
second root). ``<origin xyz rpy>`` gives the joint frame in the parent link
frame (position, and orientation as a quaternion [w, x, y, z]); URDF rpy are fixed-axis angles: roll about x,
then pitch about y, then yaw about z, i.e. ``R = Rz(yaw) Ry(pitch) Rx(roll)``. ``<axis xyz>`` (in the joint
frame) defaults to (1, 0, 0) as in the URDF specification. A continuous joint is an ordinary hinge (one angle
coordinate). ``<mimic joint multiplier offset>`` on a revolute, continuous or prismatic joint becomes the
joint-space constraint ``mimic_<joint>``: ``joint − (multiplier·leader + offset) = 0`` (both joints must have
identifier names, and the leader must move and mimic no other joint), and the mimic joint starts on that
relation; a ``<mimic>`` on a fixed joint, or following one, is ignored with a :class:`URDFWarning`.

**Limits, motors and damping.** A revolute or prismatic joint's ``<limit lower upper>`` becomes the joint's
``limits`` [lower, upper] (unilateral limit rows, :class:`core.contacts.JointLimit`; a continuous joint has none;
a ``<limit>`` whose lower bound is not below its upper — URDF's default is 0 for both — gives no range, with a
:class:`URDFWarning`; bounds and efforts of 1e12 or more, such as the 1e16 some files write for "none", are
none). An initial coordinate outside the range — the default 0, or a mimic joint's start — is
moved to the nearest bound, with a warning; a ``q0`` given outside it is refused. ``effort`` > 0 becomes an
``actuator`` named ``<joint>_motor`` with ``limit`` = effort (N·m or N), commanded 0 at the start
(``Simulation.set_actuator`` and the control programs drive it). A controller on the joint is clipped at that strength: the
scene's controllers without a ``torque_limit`` take, for each of their joints, the ``limit`` of its actuator
(:func:`core.scene.control.compile_controllers`). ``<dynamics damping>`` becomes the damper
``<joint>_passive``, a ``joint_spring`` of stiffness 0 (τ = −c q̇, as the MJCF importer names its passive
forces); ``<dynamics friction>`` (Coulomb joint friction) is not imported, and a :class:`URDFWarning` names the
joints that have it. ``velocity`` limits, ``<safety_controller>`` and ``<calibration>`` are ignored, as are
``<transmission>`` and ``<gazebo>`` elements.

**Names** follow URDF's rules, as far as a scene name can (a letter or ``_``, then letters, digits and
``_ - . / :``). **Numbers** of magnitude below 1e-30 are read as 0 (round-off of zero in exported files).

**Overrides** (:func:`urdf_to_spec` arguments, and a scene's ``robot`` section): ``floating_base``,
``base_pose`` (the root link's ``[x, y, z, qw, qx, qy, qz]``), ``q0`` (initial coordinates by joint name) and the
inertia policy ``inertia``.

**Mass properties.** A link's ``<inertial>`` (``origin xyz rpy``, ``mass``, ``inertia ixx ixy ixz iyy iyz izz``)
gives the rotational inertia about the centre of mass in the inertial frame, whose axes are rotated by rpy from
the link frame; it is rotated into link axes, ``I_link = R I Rᵀ``, and the centre of mass is ``xyz``. A link
without ``<inertial>`` has zero mass; that is valid as long as the compiled model's joint-space inertia is not
singular (a joint that moves only massless links is reported by :func:`core.scene.compile_scene`, naming the
joint; ``q0`` can start the robot elsewhere). The root link of a fixed base never enters the dynamics: an
unphysical inertia there is ignored, with a note. Any other unphysical inertia (not positive semi-definite, or
violating the triangle inequality) is refused under the policy ``"refuse"`` (the default; the message names the
``"repair"`` policy) and replaced under ``"repair"`` by the nearest physical one
(:func:`core.inertia.nearest_physical_inertia`). Notes and repairs are warned (:class:`URDFWarning`) and stated
in the scene's description, with the policy.

**Visuals** (drawing only, they carry no mass: the body's mass comes from its inertial). ``box`` (full edge
lengths), ``cylinder`` (along the visual frame's z axis) and ``sphere`` become shapes at the visual origin, with
the colour of the visual's ``<material>``: its own ``<color rgba>``, or the colour of the material of that name
defined at the top level (or inline elsewhere). A ``mesh`` is resolved — ``package://pkg/rest`` by searching the
URDF's folder and its ancestors for a folder ``pkg`` (or a folder that is itself named ``pkg``), ``file://`` and
absolute paths as they are, other paths relative to the URDF's folder — and read (:func:`core.meshfile.read_mesh`:
STL, OBJ, DAE, glTF/GLB, PLY, OFF) into a ``mesh`` shape: the file, its ``scale``, and the box bounding its
scaled vertices, whose centre is the shape's frame; its colour is the visual's material or, without one, the
mesh's own. A mesh that is not found (the warning says where ``package://`` was searched), too large or
unreadable becomes a 0.05 m box at the visual origin, with a :class:`URDFWarning` naming the mesh and why — except
for a mesh outside the robot's folder (the URDF's folder, or for ``package://pkg/…`` the package ``pkg`` the URDF is
in; links followed and ``..`` resolved), which is used if it can be but otherwise gets one message whether it
exists or not, so that no warning tells whether a path outside the robot's folder exists. Visuals of unknown or
degenerate geometry are skipped with a warning. Visuals become ``visual`` shapes (drawn only); ``<collision>``
elements are read the same way into ``collision`` shapes, which a scene's ``ground`` touches
(:mod:`core.scene.collision`) and the viewport draws on request.

**Errors.** A file that cannot be read, is larger than 16 MiB or is not XML, a root element other than ``<robot>``, a missing or
duplicate link or joint name, a joint whose parent or child link does not exist, a link that is the child of two
joints, more than one root, a loop, an unknown joint type, a planar joint, or a malformed number raises
:class:`core.scene.SceneError` listing every such problem; each :class:`core.scene.Problem` has a path naming the
URDF element, such as ``robot/joint[@name='elbow']/parent``, and the bad value. Problems found by the shared scene
validation (e.g. an inertia that violates the triangle inequality, a name the scene format does not allow) are
reported at the URDF element they come from, with the scene field in the message.

The scene is named after the robot (characters a scene name cannot hold become ``_``) and has gravity
(0, 0, -9.81), as URDF models are z-up.
"""
from __future__ import annotations

import math
import os
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from ..fileio import read_regular_file
from ..inertia import inertia_problem, nearest_physical_inertia
from ..meshfile import MeshError, read_mesh
from .io import Problem, SceneError, parse_spec
from .limits import MAX_DOCUMENT_BYTES, MAX_MAGNITUDE
from .schema import Scene

__all__ = ["urdf_to_spec", "rpy_to_matrix", "rpy_to_quaternion", "stl_bounds", "resolve_mesh", "URDFWarning",
           "INERTIA_POLICIES"]

INERTIA_POLICIES = ("refuse", "repair")
_ROUND_OFF = 1e-30                 # |x| below this in a URDF number is round-off of a zero (written as 0)

_JOINT_TYPES = {"revolute": "hinge", "continuous": "hinge", "prismatic": "slider", "fixed": "fixed",
                "floating": "free"}
_FALLBACK_MESH_BOX = 0.05          # edge (m) of the box drawn for a mesh that cannot be measured
_MIN_BOX_EDGE = 1e-3               # a flat mesh's bounding box is drawn at least this thick (m)
_DEFAULT_COLOUR = (0.6, 0.6, 0.65, 1.0)


class URDFWarning(UserWarning):
    """Something in a URDF was imported approximately (a mesh drawn as a box) or skipped (a visual)."""


# ---------------------------------------------------------------------------------------------- rotations
def rpy_to_matrix(rpy) -> np.ndarray:
    """Rotation of URDF fixed-axis roll, pitch, yaw: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    Ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    Rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    return Rz @ Ry @ Rx


def rpy_to_quaternion(rpy) -> tuple[float, float, float, float]:
    """Unit quaternion ``[w, x, y, z]``, w ≥ 0, of :func:`rpy_to_matrix`: ``q_z(yaw) ⊗ q_y(pitch) ⊗ q_x(roll)``."""
    r, p, y = (0.5 * float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    q = (cy * cp * cr + sy * sp * sr,
         cy * cp * sr - sy * sp * cr,
         cy * sp * cr + sy * cp * sr,
         sy * cp * cr - cy * sp * sr)
    n = math.sqrt(sum(c * c for c in q))
    s = (1.0 if q[0] >= 0.0 else -1.0) / n
    return tuple(c * s for c in q)



def stl_bounds(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` corners of the axis-aligned box bounding the vertices of a binary or ASCII STL file.

    Raises ``ValueError`` (:class:`core.meshfile.MeshError`) if the file is neither or holds no finite vertex."""
    return read_mesh(path, file_type="stl").bounds()


# ---------------------------------------------------------------------------------------------- reading
def _element_path(kind: str, el: ET.Element, index: int) -> str:
    """``robot/joint[@name='elbow']``, or ``robot/joint[3]`` (1-based, among the joints) for a nameless one."""
    name = el.get("name")
    return f"robot/{kind}[@name='{name}']" if name else f"robot/{kind}[{index + 1}]"


class _Reader:
    """Collects problems while reading numbers and elements, so that every problem is reported at once."""

    def __init__(self, urdf_path: Path):
        self.path = urdf_path
        self.folder = urdf_path.resolve().parent
        self.problems: list[Problem] = []

    def problem(self, path: str, message: str, value: Any = None, has_value: bool = True) -> None:
        self.problems.append(Problem(path, message, value, has_value))

    def numbers(self, el: ET.Element | None, attr: str, n: int, default, path: str):
        """The ``n`` whitespace-separated finite numbers of attribute ``attr``, or ``default`` if absent."""
        if el is None or el.get(attr) is None:
            return default
        text = el.get(attr)
        try:
            values = tuple(float(t) for t in text.split())
        except ValueError:
            values = ()
        if len(values) != n or not all(math.isfinite(v) for v in values):
            self.problem(f"{path}/@{attr}", f"expected {n} finite number{'s' if n > 1 else ''}", text)
            return default
        values = tuple(0.0 if abs(v) < _ROUND_OFF else v for v in values)
        return values if n > 1 else values[0]

    def required_number(self, el: ET.Element | None, attr: str, path: str) -> float | None:
        if el is None or el.get(attr) is None:
            self.problem(f"{path}/@{attr}", "missing (a number is required)", None, False)
            return None
        return self.numbers(el, attr, 1, None, path)

    def origin(self, el: ET.Element, path: str) -> tuple[tuple, tuple]:
        """``(xyz, rpy)`` of the ``<origin>`` child of ``el`` (zeros if absent)."""
        o = el.find("origin")
        xyz = self.numbers(o, "xyz", 3, (0.0, 0.0, 0.0), f"{path}/origin")
        rpy = self.numbers(o, "rpy", 3, (0.0, 0.0, 0.0), f"{path}/origin")
        return xyz, rpy

    def mimic(self, je: ET.Element, jpath: str):
        """``(leader, multiplier, offset, path)`` of a joint's ``<mimic>``, or None."""
        m = je.find("mimic")
        if m is None:
            return None
        mpath = f"{jpath}/mimic"
        leader = m.get("joint")
        if not leader:
            self.problem(f"{mpath}/@joint", "missing (the name of the joint to follow)", None, False)
            return None
        multiplier = self.numbers(m, "multiplier", 1, 1.0, mpath)
        offset = self.numbers(m, "offset", 1, 0.0, mpath)
        return leader, multiplier, offset, mpath

    def limit(self, je: ET.Element, jpath: str):
        """``(lower, upper, effort)`` of a joint's ``<limit>`` (URDF's defaults: 0), or None without one."""
        el = je.find("limit")
        if el is None:
            return None
        lpath = f"{jpath}/limit"
        return tuple(self.numbers(el, k, 1, 0.0, lpath) for k in ("lower", "upper", "effort"))

    def dynamics(self, je: ET.Element, jpath: str):
        """``(damping, friction)`` of a joint's ``<dynamics>`` (defaults 0), or None without one."""
        el = je.find("dynamics")
        if el is None:
            return None
        dpath = f"{jpath}/dynamics"
        values = tuple(self.numbers(el, k, 1, 0.0, dpath) for k in ("damping", "friction"))
        for k, v in zip(("damping", "friction"), values):
            if v < 0:
                self.problem(f"{dpath}/@{k}", "must not be negative", v)
        return tuple(max(v, 0.0) for v in values)

    # ---- links --------------------------------------------------------------------------------------
    def inertial(self, link: ET.Element, path: str) -> dict:
        el = link.find("inertial")
        if el is None:
            return {"mass": 0.0}
        ipath = f"{path}/inertial"
        xyz, rpy = self.origin(el, ipath)
        mass = self.required_number(el.find("mass"), "value", f"{ipath}/mass")
        ie = el.find("inertia")
        comps = {k: self.numbers(ie, k, 1, 0.0, f"{ipath}/inertia") for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        # mass properties within a scene's number limits (larger ones overflow the rotation into the link frame)
        for where, attr, values in ((f"{ipath}/mass", "value", [mass]), (f"{ipath}/origin", "xyz", xyz),
                                    *((f"{ipath}/inertia", k, [v]) for k, v in comps.items())):
            if any(v is not None and abs(v) > MAX_MAGNITUDE for v in values):
                self.problem(f"{where}/@{attr}", f"numbers must have a magnitude of at most {MAX_MAGNITUDE:g}",
                             " ".join(f"{v:g}" for v in values))
                return {"mass": 0.0}
        I = np.array([[comps["ixx"], comps["ixy"], comps["ixz"]],
                      [comps["ixy"], comps["iyy"], comps["iyz"]],
                      [comps["ixz"], comps["iyz"], comps["izz"]]], dtype=float)
        R = rpy_to_matrix(rpy)
        I = R @ I @ R.T
        I = 0.5 * (I + I.T)
        return {"mass": 0.0 if mass is None else mass, "com": list(xyz), "inertia": _six(I)}

    def visuals(self, link: ET.Element, path: str, materials: dict) -> tuple[list[dict], list[str]]:
        """Shapes of the link's ``<visual>`` elements (drawn only) and ``<collision>`` elements (touching only: a
        ground's contacts), and the URDF path of each shape."""
        shapes, paths = [], []
        for tag, purpose in (("visual", "visual"), ("collision", "collision")):
            for n, vis in enumerate(link.findall(tag)):
                vpath = f"{path}/{tag}[{n + 1}]"
                shape = self.visual(vis, vpath, materials)
                if shape is not None:
                    shape["purpose"] = purpose
                    shapes.append(shape)
                    paths.append(vpath)
        return shapes, paths

    def visual(self, vis: ET.Element, vpath: str, materials: dict) -> dict | None:
        xyz, rpy = self.origin(vis, vpath)
        colour = self.colour(vis.find("material"), f"{vpath}/material", materials)
        geometry = vis.find("geometry")
        kinds = [g for g in (geometry if geometry is not None else []) if isinstance(g.tag, str)]
        if not kinds:
            warnings.warn(f"{self.path}: {vpath} has no geometry; skipped", URDFWarning, stacklevel=4)
            return None
        g = kinds[0]
        gpath = f"{vpath}/geometry/{g.tag}"
        R = rpy_to_matrix(rpy)
        position = np.array(xyz, dtype=float)
        if g.tag == "box":
            shape = {"type": "box", "size": list(self.numbers(g, "size", 3, (0.0, 0.0, 0.0), gpath))}
            dims = shape["size"]
        elif g.tag == "cylinder":
            shape = {"type": "cylinder", "radius": self.numbers(g, "radius", 1, 0.0, gpath),
                     "length": self.numbers(g, "length", 1, 0.0, gpath)}
            dims = [shape["radius"], shape["length"]]
        elif g.tag == "sphere":
            shape = {"type": "sphere", "radius": self.numbers(g, "radius", 1, 0.0, gpath)}
            dims = [shape["radius"]]
        elif g.tag == "mesh":
            shape, position = self.mesh(g, gpath, R, position)
            dims = shape["size"]
        else:
            warnings.warn(f"{self.path}: {gpath}: unsupported geometry <{g.tag}>; skipped", URDFWarning,
                          stacklevel=4)
            return None
        if any(d <= 0.0 for d in dims):
            warnings.warn(f"{self.path}: {gpath} has a zero or negative size {dims}; skipped", URDFWarning,
                          stacklevel=4)
            return None
        own = shape.pop("_mesh_rgba", None)
        if vis.find("material") is None and own is not None:
            colour = own                                 # no URDF material: the mesh's own colour
        shape.update(position=position.tolist(), orientation=list(rpy_to_quaternion(rpy)), color=list(colour))
        return shape

    def mesh(self, g: ET.Element, gpath: str, R: np.ndarray, position: np.ndarray) -> tuple[dict, np.ndarray]:
        filename = g.get("filename", "")
        scale = np.array(self.numbers(g, "scale", 3, (1.0, 1.0, 1.0), gpath), dtype=float)
        file = resolve_mesh(filename, self.folder) if filename else None
        own = _own_folders(filename, self.folder)
        searched = f" ({_searched(filename, self.folder)})" if filename.startswith("package://") else ""
        # what is wrong with a file outside the robot's folder is not said: one message, whether it exists or not
        outside = (f"could not be used: it is outside the robot's folder {self.folder}{searched}, and whether a file "
                   "there is missing, not a file or not a mesh is not said")
        reason = None
        if file is None:
            looked_outside = any(not _inside(c, own) for c in _candidates(filename, self.folder))
            reason = outside if looked_outside else "was not found" + searched
        else:
            try:
                mesh = read_mesh(file)
                lo, hi = mesh.bounds()
            except MeshError as exc:
                reason = (f"could not be read ({str(exc).removeprefix(f'{file}: ')})" if _inside(file, own)
                          else outside)
        if reason is not None:
            warnings.warn(f"{self.path}: {gpath}: mesh {filename!r} {reason}; drawn as a "
                          f"{_FALLBACK_MESH_BOX} m box at the visual origin", URDFWarning, stacklevel=5)
            return {"type": "box", "size": [_FALLBACK_MESH_BOX] * 3}, position
        a, b = lo * scale, hi * scale
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        size = np.maximum(hi - lo, _MIN_BOX_EDGE)
        centre = 0.5 * (lo + hi)
        shape = {"type": "mesh", "file": str(file), "size": size.tolist(), "scale": scale.tolist(),
                 "offset": (-centre).tolist()}
        if mesh.rgba is not None:
            shape["_mesh_rgba"] = mesh.rgba
        return shape, position + R @ centre

    def colour(self, mat: ET.Element | None, path: str, materials: dict) -> tuple:
        if mat is None:
            return _DEFAULT_COLOUR
        c = mat.find("color")
        if c is not None and c.get("rgba") is not None:
            rgba = self.numbers(c, "rgba", 4, None, f"{path}/color")
            return _DEFAULT_COLOUR if rgba is None else tuple(min(1.0, max(0.0, v)) for v in rgba)
        name = mat.get("name")
        if name in materials:
            return materials[name]
        return _DEFAULT_COLOUR

    def materials(self, robot: ET.Element) -> dict[str, tuple]:
        """Colours of named materials: top-level ones first, then those defined inline in visuals."""
        found: dict[str, tuple] = {}
        top = robot.findall("material")
        inline = [m for link in robot.findall("link") for v in link.findall("visual") for m in v.findall("material")]
        for n, m in enumerate(top + inline):
            name, c = m.get("name"), m.find("color")
            if name and name not in found and c is not None and c.get("rgba") is not None:
                if n < len(top):
                    rgba = self.numbers(c, "rgba", 4, None, f"robot/material[@name='{name}']/color")
                else:                        # inline ones are checked where they are used
                    rgba = _quiet_rgba(c.get("rgba"))
                if rgba is not None:
                    found[name] = tuple(min(1.0, max(0.0, v)) for v in rgba)
        return found


def _six(I: np.ndarray) -> list[float]:
    """``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz]`` of a symmetric 3×3 inertia, with round-off of zero written as 0."""
    v = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
    return [0.0 if abs(x) < _ROUND_OFF else float(x) for x in v]


def _matrix(six) -> np.ndarray:
    Ixx, Iyy, Izz, Ixy, Ixz, Iyz = six
    return np.array([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]], dtype=float)


def _quiet_rgba(text: str):
    try:
        v = tuple(float(t) for t in text.split())
    except ValueError:
        return None
    return v if len(v) == 4 and all(math.isfinite(x) for x in v) else None


def _searched(filename: str, folder: Path) -> str:
    """Where a ``package://`` mesh was looked for (for the warning that it was not found)."""
    package = filename[len("package://"):].partition("/")[0]
    return f"searched for a folder {package!r} in {folder} and its {len(folder.parents)} parent folders"


def _candidates(filename: str, folder: Path):
    """The files a URDF mesh ``filename`` may name, in the order they are looked for (see the module docstring)."""
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        for d in (folder, *folder.parents):
            if d.name == package:
                yield d / rest
            yield d / package / rest
        return
    if filename.startswith("file://"):
        filename = filename[len("file://"):]
    p = Path(filename)
    yield p if p.is_absolute() else folder / p


def _own_folders(filename: str, folder: Path) -> list[Path]:
    """The folders whose files are the robot's own for a mesh ``filename`` of the URDF in ``folder`` (its real
    path): that folder, and for ``package://pkg/…`` the package the URDF is in (the nearest of its folder and
    their parents named ``pkg``)."""
    own = [folder]
    if filename.startswith("package://"):
        package = filename[len("package://"):].partition("/")[0]
        own += [d for d in (folder, *folder.parents) if d.name == package][:1]
    return [Path(os.path.realpath(d)) for d in own]


def _inside(file: Path, own: list[Path]) -> bool:
    """Whether ``file`` (its real path: links followed, ``..`` resolved) is in one of the folders ``own``."""
    try:
        real = Path(os.path.realpath(file))
    except (OSError, ValueError):
        return False
    return any(real == d or d in real.parents for d in own)


def resolve_mesh(filename: str, folder: Path) -> Path | None:
    """The mesh file a URDF ``filename`` refers to, or None if it cannot be found (see the module docstring)."""
    for c in _candidates(filename, folder):
        try:
            if c.is_file():
                return c
        except (OSError, ValueError):
            continue
    return None


def _scene_name(name: str | None) -> str:
    name = re.sub(r"[^A-Za-z0-9_\-]", "_", name or "") or "robot"
    if not re.match(r"[A-Za-z_]", name):
        name = "_" + name
    return name[:128]


# ---------------------------------------------------------------------------------------------- import
def urdf_to_spec(path: str | Path, floating_base: bool = False, inertia: str = "refuse",
                 q0: dict | None = None, base_pose=None) -> Scene:
    """Read the URDF file ``path`` into a validated :class:`~core.scene.Scene` (see the module docstring for the
    contract); raises :class:`~core.scene.SceneError` naming the URDF element of every problem.

    ``inertia``: ``"refuse"`` (an unphysical link inertia is an error) or ``"repair"`` (it is replaced by the
    nearest physical one, :func:`core.inertia.nearest_physical_inertia`, and the scene's description says which).
    ``q0``: initial coordinates of hinge and slider joints, ``{joint name: value}`` (rad or m). ``base_pose``:
    ``[x, y, z, qw, qx, qy, qz]`` of the root link in the world (the initial pose of a floating base, the
    placement of a fixed one)."""
    if inertia not in INERTIA_POLICIES:
        raise SceneError([Problem("inertia", f"unknown inertia policy; expected one of: "
                                  f"{', '.join(INERTIA_POLICIES)}", inertia, True)], str(path))
    path = Path(path)
    source = str(path)
    try:
        text = read_regular_file(path, MAX_DOCUMENT_BYTES)   # (a folder, device or pipe: refused, never blocks)
    except OSError as exc:
        raise SceneError([Problem("robot", f"cannot read the file: {exc.strerror or exc}")], source) from None
    except ValueError as exc:                            # e.g. a NUL byte in the name
        raise SceneError([Problem("robot", f"cannot read the file: {exc}")], source) from None
    if len(text) > MAX_DOCUMENT_BYTES:
        raise SceneError([Problem("robot", f"the file is larger than the {MAX_DOCUMENT_BYTES} bytes a URDF file may "
                                  "have")], source)
    try:
        robot = ET.fromstring(text)
    except ET.ParseError as exc:
        raise SceneError([Problem("robot", f"not a valid XML file: {exc}")], source) from None
    if robot.tag != "robot":
        hint = " (a xacro file? expand it with xacro first)" if "xacro" in robot.tag else ""
        raise SceneError([Problem("robot", f"the root element must be <robot>{hint}", f"<{robot.tag}>", True)],
                         source)
    reader = _Reader(path)

    # ---- links
    links: dict[str, tuple[ET.Element, str]] = {}
    link_order: list[str] = []
    for n, link in enumerate(robot.findall("link")):
        lpath = _element_path("link", link, n)
        name = link.get("name")
        if not name:
            reader.problem(lpath, "a link needs a name", None, False)
        elif name in links:
            reader.problem(lpath, "duplicate link name", name)
        else:
            links[name] = (link, lpath)
            link_order.append(name)
    if not robot.findall("link"):
        reader.problem("robot", "the robot has no <link>", None, False)

    # ---- joints
    joints: list[dict] = []
    parent_joint: dict[str, int] = {}          # child link -> index in joints
    refused_children: set[str] = set()         # children of refused joints (not second roots)
    joint_names: set[str] = set()
    for n, je in enumerate(robot.findall("joint")):
        jpath = _element_path("joint", je, n)
        name, jtype = je.get("name"), je.get("type")
        ok = True
        if not name:
            reader.problem(jpath, "a joint needs a name", None, False)
            ok = False
        elif name in joint_names:
            reader.problem(jpath, "duplicate joint name", name)
            ok = False
        else:
            joint_names.add(name)
        if jtype == "planar":
            reader.problem(f"{jpath}/@type", f"planar joints are not supported (joint {name!r}); model it as two "
                           "prismatic joints and a revolute joint through massless links", jtype)
            ok = False
        elif jtype not in _JOINT_TYPES:
            reader.problem(f"{jpath}/@type", "unknown joint type; expected one of: "
                           + ", ".join([*_JOINT_TYPES, "planar (refused)"]), jtype, jtype is not None)
            ok = False
        ends = {}
        for end in ("parent", "child"):
            e = je.find(end)
            lname = e.get("link") if e is not None else None
            if not lname:
                reader.problem(f"{jpath}/{end}", f"missing <{end} link='…'/>", None, False)
                ok = False
            elif lname not in links:
                known = ", ".join(link_order) or "none"
                reader.problem(f"{jpath}/{end}", f"no link of that name in this robot (links: {known})", lname)
                ok = False
            ends[end] = lname
        if not ok:
            if ends.get("child"):
                refused_children.add(ends["child"])
            continue
        parent, child = ends["parent"], ends["child"]
        if child in parent_joint:
            reader.problem(f"{jpath}/child", f"link {child!r} is already the child of joint "
                           f"{joints[parent_joint[child]]['name']!r}; a URDF robot must be a tree", child)
            continue
        xyz, rpy = reader.origin(je, jpath)
        axis = reader.numbers(je.find("axis"), "xyz", 3, (1.0, 0.0, 0.0), f"{jpath}/axis")
        parent_joint[child] = len(joints)
        joints.append({"name": name, "type": jtype, "parent": parent, "child": child, "xyz": xyz, "rpy": rpy,
                       "axis": axis, "path": jpath, "mimic": reader.mimic(je, jpath),
                       "limit": reader.limit(je, jpath), "dynamics": reader.dynamics(je, jpath)})

    # ---- tree: one root, no loops
    children: dict[str, list[int]] = {}
    for k, j in enumerate(joints):
        children.setdefault(j["parent"], []).append(k)
    roots = [name for name in link_order if name not in parent_joint and name not in refused_children]
    order: list[str] = []
    if roots:
        for extra in roots[1:]:
            reader.problem(links[extra][1], f"a second root link: no joint has it as its child, so the robot is not "
                           f"one tree (roots: {', '.join(roots)})", extra)
        stack = [roots[0]]
        while stack:
            name = stack.pop()
            order.append(name)
            stack.extend(joints[k]["child"] for k in reversed(children.get(name, [])))
    reached = set(order) | set(roots) | refused_children
    reported: set[str] = set()
    for name in link_order:
        if name in reached or name in reported:
            continue
        chain, cur = [], name                  # follow parents until a link repeats: that is the loop
        while cur in parent_joint and cur not in chain:
            chain.append(cur)
            cur = joints[parent_joint[cur]]["parent"]
        if cur in chain and cur not in reported:
            loop = chain[chain.index(cur):]
            reported.update(loop)
            closing = joints[parent_joint[cur]]
            cycle = " → ".join(reversed(loop + [cur]))
            reader.problem(f"{closing['path']}/child", f"the joints form a loop ({cycle}); a URDF robot must be a "
                           "tree", closing["child"])
    if not roots and link_order and not reader.problems:
        reader.problem("robot", "no root link: every link is a joint's child", None, False)
    world_root = bool(order) and order[0] == "world"
    if world_root and floating_base:
        reader.problem(links["world"][1], "floating_base=True, but this URDF fixes the robot to its link "
                       "'world'; remove that link (and its joint) for a floating base", "world")
    if reader.problems:
        raise SceneError(reader.problems, source)

    # ---- scene document
    materials = reader.materials(robot)
    notes: list[str] = []
    by_name = {j["name"]: j for j in joints}
    mimics, starts, mimic_paths = _mimics(joints, by_name, q0 or {}, reader)
    for jname in (q0 or {}):
        if jname not in by_name or _JOINT_TYPES[by_name[jname]["type"]] not in ("hinge", "slider"):
            known = ", ".join(j["name"] for j in joints if _JOINT_TYPES[j["type"]] in ("hinge", "slider"))
            reader.problem(f"q0[{jname!r}]", f"not a revolute, continuous or prismatic joint of this robot "
                           f"(joints: {known or 'none'})", jname)
    pose = _pose(base_pose, reader)
    forces: list[dict] = []                    # the joints' motors (<limit effort>) and dampers (<dynamics>)
    force_paths: list[str] = []                # the URDF joint of each force
    drive = _Drive()
    bodies: list[dict] = []
    origins: list[dict] = []                   # URDF paths of each body's parts, to report validation problems
    for name in order:
        link, lpath = links[name]
        if name == "world" and world_root:
            continue
        inertial = reader.inertial(link, lpath)
        if name == order[0]:
            joint = {"type": "free" if floating_base else "fixed", "name": name}
            if floating_base and pose is not None:
                joint["q0"] = pose
            elif pose is not None:
                joint.update(position=pose[:3], orientation=pose[3:])
            parent, jpath = "world", lpath
            if not floating_base and inertia_problem(_matrix(inertial.get("inertia", [0.0] * 6))) is not None:
                notes.append(f"the inertia of the root link {name!r} is ignored: it is welded to the world, so it "
                             "never enters the dynamics (it is not physical: "
                             f"{inertia_problem(_matrix(inertial['inertia']))})")
                inertial = {"mass": 0.0}
        else:
            j = joints[parent_joint[name]]
            joint = {"type": _JOINT_TYPES[j["type"]], "name": j["name"], "position": list(j["xyz"]),
                     "orientation": list(rpy_to_quaternion(j["rpy"]))}
            if joint["type"] in ("hinge", "slider"):
                joint["axis"] = list(j["axis"])
                if j["name"] in starts:
                    joint["q0"] = starts[j["name"]]
                forces.extend(_joint_forces(j, joint, (q0 or {}), drive, reader))
                force_paths.extend([j["path"]] * (len(forces) - len(force_paths)))
            parent, jpath = j["parent"], j["path"]      # a root link named 'world' is the world itself
        if "inertia" in inertial and inertia == "repair":
            why = inertia_problem(_matrix(inertial["inertia"]))
            if why is not None:
                inertial["inertia"] = _six(nearest_physical_inertia(_matrix(inertial["inertia"])))
                notes.append(f"the inertia of link {name!r} was repaired to the nearest physical one "
                             f"{inertial['inertia']} ({why})")
        shapes, shape_paths = reader.visuals(link, lpath, materials)
        bodies.append({"name": name, "parent": parent, "joint": joint, "inertial": inertial, "shapes": shapes})
        origins.append({"link": lpath, "joint": jpath, "shapes": shape_paths})
    if reader.problems:
        raise SceneError(reader.problems, source)
    notes.extend(drive.notes())
    for note in notes:
        warnings.warn(f"{path}: {note}", URDFWarning, stacklevel=2)
    description = f"Imported from the URDF file {path.name}" + (" (floating base)" if floating_base else "") + \
        f"; inertia policy: {inertia}" + "".join(f"; {n}" for n in notes)
    raw = {"format_version": 1, "name": _scene_name(robot.get("name")), "description": description[:20000],
           "gravity": [0.0, 0.0, -9.81], "bodies": bodies, "constraints": mimics, "forces": forces}
    try:
        return parse_spec(_zero_round_off(raw), source)
    except SceneError as exc:
        raise SceneError([_urdf_problem(p, origins, mimic_paths, force_paths) for p in exc.problems],
                         source) from None


def _zero_round_off(x):
    """``x`` with every float of magnitude below 1e-30 written as 0 (round-off of rotations and inertias)."""
    if isinstance(x, float):
        return 0.0 if abs(x) < _ROUND_OFF else x
    if isinstance(x, dict):
        return {k: _zero_round_off(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_zero_round_off(v) for v in x]
    return x


def _pose(base_pose, reader: "_Reader"):
    if base_pose is None:
        return None
    try:
        pose = [float(v) for v in base_pose]
    except (TypeError, ValueError):
        pose = []
    if len(pose) != 7 or not all(math.isfinite(v) for v in pose) or \
            not abs(math.sqrt(sum(c * c for c in pose[3:])) - 1.0) < 1e-3:
        reader.problem("base_pose", "expected [x, y, z, qw, qx, qy, qz] with a unit quaternion", base_pose)
        return None
    return pose


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _mimics(joints: list[dict], by_name: dict, q0: dict, reader: "_Reader") -> tuple[list[dict], dict, list[str]]:
    """Joint-space constraints ``mimic − (multiplier·leader + offset) = 0`` of the mimic joints, the initial
    coordinates of the hinge and slider joints (``q0`` given, then mimic joints placed on their relation), and the
    URDF path of each constraint's ``<mimic>``."""
    starts = {k: float(v) for k, v in q0.items() if isinstance(v, (int, float)) and math.isfinite(v)}
    for k, v in q0.items():
        if k not in starts:
            reader.problem(f"q0[{k!r}]", "must be a finite number (rad or m)", v)
    constraints, paths = [], []
    for j in joints:
        if j["mimic"] is None:
            continue
        leader, multiplier, offset, mpath = j["mimic"]
        kinds = ("hinge", "slider")
        if _JOINT_TYPES[j["type"]] not in kinds:
            warnings.warn(f"{reader.path}: {mpath}: ignored, joint {j['name']!r} is {j['type']} and cannot move",
                          URDFWarning, stacklevel=4)
            continue
        if leader not in by_name:
            reader.problem(f"{mpath}/@joint", "no joint of that name in this robot", leader)
            continue
        if _JOINT_TYPES[by_name[leader]["type"]] not in kinds:
            warnings.warn(f"{reader.path}: {mpath}: ignored, joint {j['name']!r} follows {leader!r}, which is "
                          f"{by_name[leader]['type']} and cannot move", URDFWarning, stacklevel=4)
            continue
        if by_name[leader]["mimic"] is not None:
            reader.problem(f"{mpath}/@joint", "the joint it follows is itself a mimic joint (chains of mimic joints "
                           "are not supported)", leader)
            continue
        if not (_IDENTIFIER.match(j["name"]) and _IDENTIFIER.match(leader)):
            reader.problem(f"{mpath}", f"a mimic relation is a joint-space expression, which can name only joints "
                           f"whose names are identifiers (letters, digits, '_'): {j['name']!r} follows {leader!r}",
                           j["name"])
            continue
        if j["name"] in q0:
            reader.problem(f"q0[{j['name']!r}]", f"a mimic joint's initial coordinate follows {leader!r}; set that "
                           "joint's instead", q0[j["name"]])
        starts[j["name"]] = multiplier * starts.get(leader, 0.0) + offset
        constraints.append({"type": "joint_space", "name": f"mimic_{j['name']}"[:128],
                            "expression": f"{j['name']} - ({multiplier!r} * {leader} + {offset!r})"})
        paths.append(mpath)
    return constraints, starts, paths


#: A bound or an effort at least this large (a scene's largest number; URDFs write 1e16 for "none") is none.
_UNBOUNDED = 1e12


class _Drive:
    """What the joints' ``<limit>`` and ``<dynamics>`` left out or changed, said once per robot."""

    def __init__(self):
        self.clamped: list[str] = []           # joints whose initial coordinate was moved into their limits
        self.no_range: list[str] = []          # revolute or prismatic joints whose <limit> gives no range
        self.friction: list[str] = []          # joints with Coulomb friction (<dynamics friction>)

    def notes(self) -> list[str]:
        out = []
        if self.clamped:
            out.append("the initial coordinate of joint(s) " + ", ".join(self.clamped) + " lay outside the "
                       "joint's <limit> range and was moved to the nearest bound")
        if self.no_range:
            out.append("joint(s) " + _listed(self.no_range) + " have a <limit> whose lower bound is not below "
                       "its upper (URDF's default is 0 for both); their range is not imported")
        if self.friction:
            out.append("Coulomb joint friction (<dynamics friction>) is not imported (joints: "
                       + _listed(self.friction) + ")")
        return out


def _listed(names: list[str]) -> str:
    return ", ".join(names[:20]) + (f" … ({len(names)} in all)" if len(names) > 20 else "")


def _joint_forces(j: dict, joint: dict, given: dict, drive: _Drive, reader: "_Reader") -> list[dict]:
    """The scene's reading of a hinge's or slider's ``<limit>`` and ``<dynamics>``: ``joint`` (its scene dict)
    gets ``limits`` [lower, upper] (revolute and prismatic joints whose lower is below their upper), its initial
    coordinate moved into them unless the caller gave it (a given q0 outside them is refused by the scene's
    check); returned are the actuator ``<joint>_motor`` of a positive ``effort`` (its ``limit``) and the damper
    ``<joint>_passive`` (a ``joint_spring`` of stiffness 0) of a positive ``damping``."""
    out = []
    name = j["name"]
    if j["limit"] is not None:
        lower, upper, effort = j["limit"]
        if j["type"] in ("revolute", "prismatic"):
            lower, upper = max(lower, -_UNBOUNDED), min(upper, _UNBOUNDED)
            if lower <= -_UNBOUNDED and upper >= _UNBOUNDED:
                pass                               # (±1e16 and the like: no range at all)
            elif lower < upper:
                joint["limits"] = [lower, upper]
                start = joint.get("q0", 0.0)
                if name not in given and not lower <= start <= upper:
                    joint["q0"] = min(max(start, lower), upper)
                    drive.clamped.append(f"{name} ({start:g} → {joint['q0']:g})")
            else:
                drive.no_range.append(name)
        if effort > 0:
            out.append({"type": "actuator", "name": _suffixed(name, "_motor"), "joint": name,
                        **({"limit": effort} if effort < _UNBOUNDED else {})})
        elif effort < 0:
            reader.problem(f"{j['path']}/limit/@effort", "must not be negative", effort)
    if j["dynamics"] is not None:
        damping, friction = j["dynamics"]
        if damping > 0:
            out.append({"type": "joint_spring", "name": _suffixed(name, "_passive"), "joint": name,
                        "stiffness": 0.0, "damping": damping})
        if friction > 0:
            drive.friction.append(name)
    return out


def _suffixed(name: str, suffix: str) -> str:
    """``name + suffix`` within a scene name's 128 characters (a long name loses its end, not the suffix)."""
    return name[:128 - len(suffix)] + suffix


_BODY_PATH = re.compile(r"^\$\.bodies\[(\d+)\](?:\.(\w+))?(?:\[(\d+)\])?")


def _urdf_problem(p: Problem, origins: list[dict], mimic_paths: list[str] = (),
                  force_paths: list[str] = ()) -> Problem:
    """Re-address a scene-validation problem to the URDF element the offending value came from."""
    c = re.match(r"^\$\.constraints\[(\d+)\]", p.path)
    if c and int(c.group(1)) < len(mimic_paths):
        return Problem(mimic_paths[int(c.group(1))], f"{p.message} [scene field {p.path}]", p.value, p.has_value)
    f = re.match(r"^\$\.forces\[(\d+)\]", p.path)
    if f and int(f.group(1)) < len(force_paths):
        return Problem(force_paths[int(f.group(1))], f"{p.message} [scene field {p.path}]", p.value, p.has_value)
    m = _BODY_PATH.match(p.path)
    if not m or int(m.group(1)) >= len(origins):
        return p
    o = origins[int(m.group(1))]
    field, k = m.group(2), m.group(3)
    if field == "joint":
        where = o["joint"]
    elif field == "parent":
        where = f"{o['joint']}/parent"
    elif field == "inertial":
        where = f"{o['link']}/inertial"
    elif field == "shapes" and k is not None and int(k) < len(o["shapes"]):
        where = o["shapes"][int(k)]
    else:
        where = o["link"]
    hint = ""
    if field == "inertial" and ("inertia must be" in p.message or "triangle inequality" in p.message):
        hint = ("; to use the nearest physical inertia instead, import with the inertia policy 'repair' "
                "(\"robot\": {\"inertia\": \"repair\"} in a scene, --inertia repair on the command lines of "
                "python -m core and python -m studio)")
    return Problem(where, f"{p.message}{hint} [scene field {p.path}]", p.value, p.has_value)
