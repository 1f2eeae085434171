"""MJCF import: a MuJoCo model (XML) compiled by MuJoCo's own compiler, read into a validated scene spec.

Needs the optional extra ``mjcf`` (``pip install 'limbstudio[mjcf]'``, which installs ``mujoco``); without it the
import is refused with that instruction. :func:`mjcf_to_spec` asks ``mujoco.MjModel.from_xml_path`` to compile the
file (includes, defaults, ``<compiler>`` settings, mesh inertias and all) and reads the compiled model, so what
MuJoCo computes is what is simulated:

**Bodies and joints.** Every body but the world becomes a body of the same name (unnamed ones ``body<id>``;
characters a scene name cannot hold become ``_``), under its parent. A body without joints is welded to its
parent (``fixed``); a ``free`` joint is a ``free`` joint whose initial pose is the body's; ``hinge``, ``slide``
and ``ball`` joints are hinges, sliders and balls. MuJoCo rotates a body about each joint's anchor (``pos``) in
turn; here each joint's frame is at its anchor, so a body with joints has its frame at its last joint's anchor
(the body frame moved by that offset, axes unchanged), and a body with several joints gets a massless body per
extra joint (``<body>__<joint>``). Coordinates: a hinge or slide is MuJoCo's ``qpos − qpos0`` (they differ only
where the MJCF sets ``ref``); a ball's quaternion and a free joint's position and quaternion are MuJoCo's; a free
joint's velocity is ``[ω; v]`` in body coordinates (MuJoCo: v in world coordinates first, then ω in body
coordinates), a ball's ω in the child frame as in MuJoCo.

**Mass properties** are the compiled ones: ``body_mass``, ``body_ipos`` and the principal inertia
``body_inertia`` turned by ``body_iquat``. A hinge's or slide's ``armature`` is the joint's ``armature`` (added to
the joint-space inertia's diagonal, as MuJoCo does); its ``damping`` and ``stiffness`` become a ``joint_spring``
force named ``<joint>_passive`` with ``rest`` = ``springref`` − ``ref`` (τ = −k (q − rest) − c q̇, MuJoCo's passive
force). ``frictionloss``, and the armature, damping and stiffness of ball and free joints, are not imported (a
:class:`MJCFWarning` names the joints that have them), nor are tendons, actuators, sensors and contacts.

**Geoms** are drawn (they carry no mass here: the compiled inertia does): ``sphere``, ``capsule``,
``cylinder`` and ``box`` become those shapes in the geom's ``rgba``; a ``mesh`` geom becomes a ``mesh`` shape drawn from
its file, placed where MuJoCo's compiler put the mesh (it moves a mesh to its centre of mass and principal axes;
the file is used only if its vertices, moved the same way, span MuJoCo's), else its bounding box; an
``ellipsoid`` its bounding box; planes and height fields on a body are skipped,
with a warning; the world body's geoms (floors) are not drawn.

**Equalities.** ``connect`` becomes a ``point_to_point`` constraint between the two bodies' anchors (to the world
if one of them is the world; ``active`` gives ``enabled``); other equality types are skipped with a warning.

Errors — the file cannot be read, MuJoCo's compiler refuses it (its message is passed on), a file over 16 MiB,
a model over 10 000 bodies — raise :class:`core.scene.SceneError` naming the file. Before MuJoCo sees the file
its XML is read for what would make the compile unbounded: bodies counted with every ``<replicate>`` expanded,
``<flexcomp>`` sizes, and included and asset files that are pipes, devices or too large (a pipe would block).
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..spatial import quat_to_rotation, rotation_to_quat
from .io import Problem, SceneError, parse_spec
from .limits import MAX_DOCUMENT_BYTES
from .schema import Scene

__all__ = ["mjcf_to_spec", "MJCFWarning", "MAX_BODIES"]

MAX_BODIES = 10_000


class MJCFWarning(UserWarning):
    """Something in an MJCF model was imported approximately (a geom drawn as a box) or not at all."""


def _mujoco(source: str):
    try:
        import mujoco
    except ImportError:
        raise SceneError([Problem("mujoco", "reading MJCF files needs MuJoCo: pip install 'limbstudio[mjcf]' "
                                  "(or pip install mujoco)")], source) from None
    return mujoco


def _compile(path: Path, source: str):
    mujoco = _mujoco(source)
    try:
        size = path.stat().st_size
    except (OSError, ValueError) as exc:
        raise SceneError([Problem("mujoco", f"cannot read the file: {getattr(exc, 'strerror', None) or exc}")],
                         source) from None
    if not path.is_file():                               # a folder, a device or a pipe (reading one could block)
        raise SceneError([Problem("mujoco", "not a regular file")], source)
    if size > MAX_DOCUMENT_BYTES:
        raise SceneError([Problem("mujoco", f"the file has {size} bytes, more than the {MAX_DOCUMENT_BYTES} an MJCF "
                                  "file may have")], source)
    problems = _bounds_problems(path)
    if problems:
        raise SceneError(problems, source)
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except Exception as exc:                             # noqa: BLE001 — MuJoCo's compiler says what is wrong
        text = " ".join(str(exc).split())
        raise SceneError([Problem("mujoco", f"MuJoCo's compiler refused the file: {text[:600]}")], source) from None
    if m.nbody - 1 > MAX_BODIES:
        raise SceneError([Problem("mujoco", f"{m.nbody - 1} bodies, more than the {MAX_BODIES} a scene may have")],
                         source)
    return mujoco, m


#: Files an MJCF model may name (its includes and assets), and at most so many includes deep.
_FILE_TAGS = {"include": "file", "mesh": "file", "hfield": "file", "texture": "file", "skin": "file"}
_MAX_INCLUDE_DEPTH = 8


def _bounds_problems(path: Path) -> list[Problem]:
    """What makes an MJCF model too large for MuJoCo's compiler to be handed it, read before it sees the file:
    more bodies than :data:`MAX_BODIES` once every ``<replicate>`` is expanded, a ``<flexcomp>`` of more
    points than that, and included or asset files that are not regular files (a pipe would block the compiler)
    or are larger than a document or a mesh may be. Includes are followed to :data:`_MAX_INCLUDE_DEPTH`."""
    import xml.etree.ElementTree as ET

    from ..fileio import not_a_file, read_regular_file
    from ..meshfile import MAX_MESH_BYTES
    problems: list[Problem] = []
    bodies = 0

    def parse(file: Path, where: str):
        try:
            data = read_regular_file(file, MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None                                  # (MuJoCo's compiler names what it cannot find)
        except (OSError, ValueError) as exc:
            problems.append(Problem(where, f"cannot read {file.name}: {getattr(exc, 'strerror', None) or exc}"))
            return None
        if len(data) > MAX_DOCUMENT_BYTES:
            problems.append(Problem(where, f"{file.name} is larger than the {MAX_DOCUMENT_BYTES} bytes a file may have"))
            return None
        try:
            return ET.fromstring(data)
        except (ET.ParseError, ValueError, RecursionError):
            return None                                  # (not XML: MuJoCo's compiler says why, better)

    def asset_dir(root, kind: str) -> Path:
        compiler = root.find("compiler") if root is not None else None
        if compiler is None:
            return Path()
        return Path(compiler.get(kind) or compiler.get("assetdir") or "")

    def walk(node, folder: Path, mesh_folder: Path, factor: int, depth: int, where: str) -> None:
        nonlocal bodies
        for child in node:
            tag = child.tag if isinstance(child.tag, str) else ""
            here = f"{where}/{tag}"
            k = factor
            if tag == "replicate":
                try:
                    k = factor * max(0, int(child.get("count", "1")))
                except ValueError:
                    k = factor
            elif tag == "body":
                bodies += factor
            elif tag == "flexcomp":
                try:
                    n = 1
                    for c in (child.get("count") or "1").split():
                        n *= max(0, int(c))
                except ValueError:
                    n = 0
                if n * factor > MAX_BODIES:
                    problems.append(Problem(here, f"a flexcomp of {n * factor} points, more than the {MAX_BODIES} "
                                            "bodies a scene may have"))
            attribute = _FILE_TAGS.get(tag)
            name = child.get(attribute) if attribute else None
            if name:
                base = folder if tag == "include" else folder / mesh_folder
                file = (base / name)
                if tag == "include":
                    if depth >= _MAX_INCLUDE_DEPTH:
                        problems.append(Problem(here, f"includes nested more than {_MAX_INCLUDE_DEPTH} deep"))
                        continue
                    sub = parse(file, here)
                    if sub is not None:
                        walk(sub, file.parent, mesh_folder, k, depth + 1, here)
                    continue
                try:
                    st = file.stat()
                except (OSError, ValueError):
                    pass                                 # (missing: MuJoCo's compiler says so)
                else:
                    if not_a_file(st.st_mode):
                        problems.append(Problem(here, f"{name} is not a regular file ({not_a_file(st.st_mode)})"))
                    elif st.st_size > MAX_MESH_BYTES:
                        problems.append(Problem(here, f"{name} has {st.st_size} bytes, more than the "
                                                f"{MAX_MESH_BYTES} an asset may have"))
            if bodies > MAX_BODIES or len(problems) > 20:
                return
            walk(child, folder, mesh_folder, k, depth, here)

    root = parse(path, "mujoco")
    if root is not None:
        walk(root, path.parent, asset_dir(root, "meshdir"), 1, 0, "mujoco")
    if bodies > MAX_BODIES:
        problems.append(Problem("mujoco", f"more than {MAX_BODIES} bodies once its <replicate> elements are "
                                "expanded, more than a scene may have"))
    return problems


class _Names:
    """Scene names for MuJoCo's (possibly empty or unusual) names, unique."""

    def __init__(self):
        self.used: set[str] = {"world"}

    def __call__(self, name: str, fallback: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_\-./:]", "_", name or "") or fallback
        if not re.match(r"[A-Za-z_]", name):
            name = "_" + name
        name = name[:120]
        out, k = name, 1
        while out in self.used:
            k += 1
            out = f"{name}_{k}"
        self.used.add(out)
        return out


def _six(I: np.ndarray) -> list[float]:
    return [float(I[0, 0]), float(I[1, 1]), float(I[2, 2]), float(I[0, 1]), float(I[0, 2]), float(I[1, 2])]


def mjcf_to_spec(path: str | Path) -> Scene:
    """Read the MJCF file ``path`` through MuJoCo's compiler into a validated :class:`~core.scene.Scene` (see the
    module docstring for the contract); raises :class:`~core.scene.SceneError`."""
    path = Path(path)
    source = str(path)
    mujoco, m = _compile(path, source)
    obj = mujoco.mjtObj
    names = _Names()
    body_name = {0: "world"}
    shift = {0: np.zeros(3)}                             # MuJoCo body frame → our link frame: minus this offset
    bodies: list[dict] = []
    forces: list[dict] = []                              # the joints' springs and dampers
    passive = []                                         # joints with passive terms not imported
    FREE, BALL, HINGE = (int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL),
                         int(mujoco.mjtJoint.mjJNT_HINGE))            # (any other: slide)
    for b in range(1, m.nbody):
        name = names(mujoco.mj_id2name(m, obj.mjOBJ_BODY, b) or "", f"body{b}")
        body_name[b] = name
        parent = int(m.body_parentid[b])
        # the MuJoCo body frame in our parent link's frame
        p = np.array(m.body_pos[b], dtype=float) - shift[parent]
        quat = [float(x) for x in m.body_quat[b]]
        joints = list(range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])))
        chain = []                                       # (joint dict) of each link of this body
        anchor = np.zeros(3)
        for k, j in enumerate(joints):
            jt = int(m.jnt_type[j])
            jname = names(mujoco.mj_id2name(m, obj.mjOBJ_JOINT, j) or "", f"{name}_joint{k}")
            d, nd = int(m.jnt_dofadr[j]), {FREE: 6, BALL: 3}.get(jt, 1)
            if m.dof_frictionloss[d:d + nd].any() or (nd > 1 and (m.dof_armature[d:d + nd].any()
                                                                  or m.dof_damping[d:d + nd].any()
                                                                  or m.jnt_stiffness[j])):
                passive.append(jname)
            if jt == FREE:
                q0 = [*map(float, m.body_pos[b]), *quat] if parent == 0 else None
                if q0 is None:
                    raise SceneError([Problem(f"mujoco/body[@name='{name}']", "a free joint on a body that is not a "
                                              "child of the world")], source)
                chain.append({"type": "free", "name": jname, "q0": q0})
                continue
            a = np.array(m.jnt_pos[j], dtype=float)
            if k == 0:
                position = (p + quat_to_rotation(np.array(quat)) @ a).tolist()
                orientation = quat
            else:
                position, orientation = (a - anchor).tolist(), [1.0, 0.0, 0.0, 0.0]
            anchor = a
            joint = {"name": jname, "position": position, "orientation": orientation}
            if jt == BALL:
                joint.update(type="ball")
            else:
                joint.update(type="hinge" if jt == HINGE else "slider", axis=[float(x) for x in m.jnt_axis[j]],
                             armature=float(m.dof_armature[d]))
                if m.dof_damping[d] or m.jnt_stiffness[j]:      # τ = −k (qpos − qpos_spring) − c q̇, q = qpos − qpos0
                    qa = int(m.jnt_qposadr[j])
                    forces.append({"type": "joint_spring", "name": f"{jname}_passive", "joint": jname,
                                   "stiffness": float(m.jnt_stiffness[j]), "damping": float(m.dof_damping[d]),
                                   "rest": float(m.qpos_spring[qa] - m.qpos0[qa])})
            chain.append(joint)
        if not chain:
            chain = [{"type": "fixed", "name": name, "position": p.tolist(), "orientation": quat}]
        shift[b] = anchor
        R_i = quat_to_rotation(np.array(m.body_iquat[b], dtype=float))
        inertia = R_i @ np.diag(np.array(m.body_inertia[b], dtype=float)) @ R_i.T
        inertial = {"mass": float(m.body_mass[b]), "com": (np.array(m.body_ipos[b]) - anchor).tolist(),
                    "inertia": _six(0.5 * (inertia + inertia.T))}
        parent_name = body_name[parent]
        for k, joint in enumerate(chain[:-1]):           # massless links carrying the extra joints
            link = names(f"{name}__{joint['name']}", f"{name}__joint{k}")
            bodies.append({"name": link, "parent": parent_name, "joint": joint, "inertial": {"mass": 0.0}})
            parent_name = link
        bodies.append({"name": name, "parent": parent_name, "joint": chain[-1], "inertial": inertial,
                       "shapes": _shapes(mujoco, m, b, anchor, name, source)})
    if passive:
        warnings.warn(f"{source}: joint friction loss, and armature, damping and springs of ball and free joints, "
                      "are not imported "
                      f"(joints: {', '.join(passive[:20])}{' …' if len(passive) > 20 else ''})", MJCFWarning,
                      stacklevel=2)
    constraints = _equalities(mujoco, m, body_name, shift, names, source)
    if len(bodies) > MAX_BODIES:
        raise SceneError([Problem("mujoco", f"{len(bodies)} bodies (with one per extra joint), more than the "
                                  f"{MAX_BODIES} a scene may have")], source)
    model_name = re.sub(r"[^A-Za-z0-9_\-]", "_", path.stem) or "mjcf"
    raw = {"format_version": 1, "name": model_name if re.match(r"[A-Za-z_]", model_name) else "_" + model_name,
           "description": f"Imported from the MJCF file {path.name} through MuJoCo {mujoco.__version__}",
           "gravity": [float(g) for g in m.opt.gravity], "simulation": {"dt": float(m.opt.timestep)},
           "bodies": bodies, "constraints": constraints, "forces": forces}
    return parse_spec(_zero(raw), source)


def _zero(x):
    if isinstance(x, float):
        return 0.0 if abs(x) < 1e-30 else x
    if isinstance(x, dict):
        return {k: _zero(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_zero(v) for v in x]
    return x


def _shapes(mujoco, m, b: int, anchor: np.ndarray, body: str, source: str) -> list[dict]:
    G = mujoco.mjtGeom
    out = []
    for g in range(int(m.body_geomadr[b]), int(m.body_geomadr[b]) + int(m.body_geomnum[b])):
        kind, size = int(m.geom_type[g]), np.array(m.geom_size[g], dtype=float)
        pos = np.array(m.geom_pos[g], dtype=float) - anchor
        quat = [float(x) for x in m.geom_quat[g]]
        rgba = [min(1.0, max(0.0, float(c))) for c in m.geom_rgba[g]]
        if kind == G.mjGEOM_SPHERE:
            shape = {"type": "sphere", "radius": size[0]}
        elif kind == G.mjGEOM_CAPSULE:
            shape = {"type": "capsule", "radius": size[0], "length": 2 * size[1]}
        elif kind == G.mjGEOM_CYLINDER:
            shape = {"type": "cylinder", "radius": size[0], "length": 2 * size[1]}
        elif kind == G.mjGEOM_BOX:
            shape = {"type": "box", "size": (2 * size).tolist()}
        elif kind == G.mjGEOM_ELLIPSOID:
            shape = {"type": "box", "size": (2 * size).tolist()}
            warnings.warn(f"{source}: an ellipsoid geom of body {body!r} is drawn as its bounding box", MJCFWarning,
                          stacklevel=3)
        elif kind == G.mjGEOM_MESH:
            mid = int(m.geom_dataid[g])
            v = np.array(m.mesh_vert[m.mesh_vertadr[mid]:m.mesh_vertadr[mid] + m.mesh_vertnum[mid]], dtype=float)
            R = quat_to_rotation(np.array(quat))
            shape, placed = _mesh_shape(m, mid, v, R, pos, source)
            if shape is not None:
                pos, quat = placed
            else:
                lo, hi = v.min(axis=0), v.max(axis=0)
                pos = pos + R @ (0.5 * (lo + hi))
                shape = {"type": "box", "size": np.maximum(hi - lo, 1e-3).tolist()}
                warnings.warn(f"{source}: a mesh geom of body {body!r} is drawn as its bounding box (its file could "
                              "not be matched to MuJoCo's vertices)", MJCFWarning, stacklevel=3)
        else:
            warnings.warn(f"{source}: a {G(kind).name.removeprefix('mjGEOM_').lower()} geom of body {body!r} is "
                          "not drawn", MJCFWarning, stacklevel=3)
            continue
        if any(isinstance(v, float) and not v > 0 for v in shape.values()) or \
                ("size" in shape and min(shape["size"]) <= 0):
            continue
        shape.update(position=pos.tolist(), orientation=quat, color=rgba)
        out.append(shape)
    return out


def _mesh_shape(m, mid: int, compiled: np.ndarray, R_geom: np.ndarray, p_geom: np.ndarray, source: str):
    """``(mesh shape, (position, orientation))`` of a mesh geom drawn from its file, or ``(None, None)``.

    MuJoCo's compiler moves a mesh's vertices to its centre of mass and principal axes,
    ``v = R(mesh_quat)ᵀ (scale ∘ v_file − mesh_pos)``, and composes the geom's pose with that move; the file's own
    frame is therefore at ``p_geom − R_geom Rᵀ mesh_pos`` turned by ``R_geom Rᵀ``. The file is used only if its
    vertices, moved so, span the box MuJoCo's do (within 1e-5 of its size)."""
    from ..meshfile import MeshError, read_mesh
    path = bytes(m.paths[int(m.mesh_pathadr[mid]):]).split(b"\0")[0].decode("utf-8", "replace") \
        if int(m.mesh_pathadr[mid]) >= 0 else ""
    if not path:
        return None, None
    file = Path(path) if Path(path).is_absolute() else Path(source).parent / path
    try:
        mesh = read_mesh(file)
    except MeshError:
        return None, None
    scale = np.array(m.mesh_scale[mid], dtype=float)
    R_m = quat_to_rotation(np.array(m.mesh_quat[mid], dtype=float))
    p_m = np.array(m.mesh_pos[mid], dtype=float)
    moved = (mesh.vertices * scale - p_m) @ R_m
    extent = max(float(np.ptp(compiled, axis=0).max()), 1e-9)
    if np.abs(moved.min(axis=0) - compiled.min(axis=0)).max() > 1e-5 * extent or \
            np.abs(moved.max(axis=0) - compiled.max(axis=0)).max() > 1e-5 * extent:
        return None, None
    R_file = R_geom @ R_m.T
    p_file = p_geom - R_file @ p_m
    lo, hi = mesh.bounds(scale)
    centre = 0.5 * (lo + hi)
    shape = {"type": "mesh", "file": str(file.absolute()), "size": np.maximum(hi - lo, 1e-3).tolist(),
             "scale": scale.tolist(), "offset": (-centre).tolist()}
    return shape, (p_file + R_file @ centre, [float(x) for x in rotation_to_quat(R_file)])


def _equalities(mujoco, m, body_name: dict, shift: dict, names: _Names, source: str) -> list[dict]:
    out = []
    for e in range(m.neq):
        ename = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e) or ""
        if int(m.eq_type[e]) != int(mujoco.mjtEq.mjEQ_CONNECT) or int(m.eq_objtype[e]) != int(
                mujoco.mjtObj.mjOBJ_BODY):
            warnings.warn(f"{source}: equality {ename or e!r} ({mujoco.mjtEq(int(m.eq_type[e])).name}) is not "
                          "imported; only connect equalities between bodies are", MJCFWarning, stacklevel=3)
            continue
        b1, b2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        data = np.array(m.eq_data[e], dtype=float)
        a1, a2 = data[0:3] - shift[b1], data[3:6] - shift[b2]
        if b1 == 0:                                      # keep the world second
            b1, b2, a1, a2 = b2, b1, a2, a1
        out.append({"type": "point_to_point", "name": names(ename, f"connect{e}"), "body_a": body_name[b1],
                    "point_a": a1.tolist(), "body_b": body_name[b2], "point_b": a2.tolist(),
                    "enabled": bool(m.eq_active0[e])})
    return out
