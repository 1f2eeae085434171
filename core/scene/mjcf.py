"""MJCF import: a MuJoCo model (XML) compiled by MuJoCo's own compiler, read into a validated scene spec.

Needs the optional extra ``mjcf`` (``pip install 'limbstudio[mjcf]'``, which installs ``mujoco``); without it the
import is refused with that instruction. :func:`mjcf_to_spec` asks ``mujoco.MjModel.from_xml_path`` to compile the
file (includes, defaults, ``<compiler>`` settings, mesh inertias and all) and reads the compiled model, so what
MuJoCo computes is what is simulated:

**Bodies and joints.** Every body but the world becomes a body of the same name (unnamed ones ``body<id>``;
characters a scene name cannot hold become ``_``), under its parent; every joint keeps its own name (unnamed
ones ``<body>_joint<k>``): bodies and joints are separate namespaces, as in MuJoCo, so a joint named like a body
(flybody's ``abdomen``) is not renamed, and a joint renamed anyway (a name a scene cannot hold, or two MuJoCo
names that became one) is named in a :class:`MJCFWarning`. A body without joints is welded to its
parent (``fixed``, its joint named after the body unless a joint has that name); a ``free`` joint is a ``free``
joint whose initial pose is the body's; ``hinge``, ``slide``
and ``ball`` joints are hinges, sliders and balls. MuJoCo rotates a body about each joint's anchor (``pos``) in
turn; here each joint's frame is at its anchor, so a body with joints has its frame at its last joint's anchor
(the body frame moved by that offset, axes unchanged), and a body with several joints gets a massless body per
extra joint (``<body>__<joint>``). Coordinates: a hinge or slide is MuJoCo's ``qpos − qpos0`` (they differ only
where the MJCF sets ``ref``); a ball's quaternion and a free joint's position and quaternion are MuJoCo's; a free
joint's velocity is ``[ω; v]`` in body coordinates (MuJoCo: v in world coordinates first, then ω in body
coordinates), a ball's ω in the child frame as in MuJoCo. A limited hinge's or slide's ``range`` is the
joint's ``limits``, in those coordinates (``range − ref``; a ref outside the range starts the joint at the
nearest bound, with a warning); a ball joint's cone limit is not imported (warned).

**Mass properties** are the compiled ones: ``body_mass``, ``body_ipos`` and the principal inertia
``body_inertia`` turned by ``body_iquat``. A hinge's or slide's ``armature`` is the joint's ``armature`` (added to
the joint-space inertia's diagonal, as MuJoCo does); its ``damping`` and ``stiffness`` become a ``joint_spring``
force named ``<joint>_passive`` with ``rest`` = ``springref`` − ``ref`` (τ = −k (q − rest) − c q̇, MuJoCo's passive
force). A body's ``gravcomp`` becomes the ``point_force`` ``<body>_gravcomp``, −gravcomp·m·g at its centre of
mass (MuJoCo's ``qfrc_gravcomp``). ``frictionloss``, the armature, damping and stiffness of ball and free
joints, and MuJoCo 4's polynomial stiffness and damping are not imported (a :class:`MJCFWarning` names the
joints that have them), nor are sensors and contacts; the medium's fluid forces (``density``, ``viscosity``)
are named in a warning.

**Actuators** with a joint transmission on a hinge or slide become ``actuator`` forces of the actuator's name
(unnamed ones ``<joint>_actuator``) that give MuJoCo's force for the same ctrl in the same state: the affine
actuator ``τ = clip(gain · clip(u, command_range) + b0 + b1 q + b2 q̇, force range)`` of
:class:`core.scene.schema.Actuator`, with MuJoCo's gear, ctrlrange, forcerange, the joint's actuatorfrcrange
and the ref offset folded in (:func:`_actuators`): ``motor`` (gain gear), ``position`` (kp, kv:
τ = gear kp (ctrl − gear qpos) − gear² kv q̇), ``velocity`` (kv) and ``general`` with a fixed gain and an
affine bias; commands start at 0, as ``ctrl``. MuJoCo 4's actuator armature and damping join the joint's.
Actuators with activation dynamics (``dyntype``, a position actuator's ``timeconst``), a state-dependent
(``damper``) or muscle gain or bias, a delay, or another transmission (tendon, site, body, slider-crank), or on
a ball or free joint, are not imported, each named in a warning.

**Tendons.** A fixed tendon over one joint with stiffness or damping is that joint's spring
(``<tendon>_spring``); the springs, dampers, limits and friction of other tendons, and every spatial tendon's,
are named in a warning.

**Geoms** are drawn (they carry no mass here: the compiled inertia does): ``sphere``, ``capsule``,
``cylinder`` and ``box`` become those shapes in the geom's ``rgba``; a ``mesh`` geom becomes a ``mesh`` shape drawn from
its file, placed where MuJoCo's compiler put the mesh (it moves a mesh to its centre of mass and principal axes;
the file is used only if its vertices, moved the same way, span MuJoCo's), else its bounding box; an
``ellipsoid`` its bounding box; planes and height fields on a body are skipped,
with a warning. A geom that collides with nothing (``contype`` = ``conaffinity`` = 0) is a ``visual`` shape, one in
a group the viewer hides (3 and up) a ``collision`` shape, others both; each keeps its ``contype`` and
``conaffinity``. The world body's first colliding plane (the floor) becomes the scene's ``ground`` (its friction
and filter kept; :mod:`core.scene.collision`); other world geoms are not drawn and, if they collide, named in a
warning. Geoms collide with each other when the document asks (``"collisions": {}``, :mod:`core.scene.collision`:
not a parent and its child, their ``contype``/``conaffinity`` kept); the file's ``<exclude>`` rules are kept
(:func:`_excludes`), and its ``<pair>`` rules become filter bits (:func:`_pair_filters`): a pair's geoms collide
with each other when the document asks, and a pair with the floor makes its geom touch the ground; the rules'
own friction and softness are not imported (named in a warning).

**Equalities.** ``connect`` becomes a ``point_to_point`` constraint between the two bodies' anchors (to the world
if one of them is the world; ``active`` gives ``enabled``); a ``joint`` equality between hinges or slides, and
a ``tendon`` equality between fixed tendons, becomes a ``joint_space`` constraint of MuJoCo's polynomial
relation in the scene's coordinates (``y − (c0 + c1 x + … + c4 x⁴)``, a tendon being Σ coef·q; the joints'
names must be identifiers); other equalities (weld, distance, flex, spatial tendons) are skipped with a
warning. Equalities are rigid here (MuJoCo's solref and solimp softness is not imported).

Errors — the file cannot be read, MuJoCo's compiler refuses it (its message is passed on), a file over 16 MiB,
a model over 10 000 bodies — raise :class:`core.scene.SceneError` naming the file. Before MuJoCo sees the file
its XML is read for what would make the compile unbounded: bodies counted with every ``<replicate>`` expanded,
``<flexcomp>`` sizes, and included and asset files that are pipes, devices or too large (a pipe would block).
A model that names files outside its folder (links followed, ``..``, ``meshdir`` and absolute paths resolved) is
compiled with them if MuJoCo can; if one of them is refused by these checks or the compile fails, the one problem
says so without MuJoCo's message, the same whether the files exist or not (what is wrong with a file outside the
model's folder is not said).
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
    problems, outside, trouble = _bounds_problems(path)
    if problems:
        raise SceneError(problems, source)
    if trouble:
        raise SceneError([_outside_problem(path.parent, outside)], source)
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except Exception as exc:                             # noqa: BLE001 — MuJoCo's compiler says what is wrong
        if outside:                                      # (unless a file outside the model's folder is named)
            raise SceneError([_outside_problem(path.parent, outside)], source) from None
        text = " ".join(str(exc).split())
        raise SceneError([Problem("mujoco", f"MuJoCo's compiler refused the file: {text[:600]}")], source) from None
    if m.nbody - 1 > MAX_BODIES:
        raise SceneError([Problem("mujoco", f"{m.nbody - 1} bodies, more than the {MAX_BODIES} a scene may have")],
                         source)
    return mujoco, m


#: Files an MJCF model may name (its includes and assets: the attributes naming them), and at most so many
#: includes deep.
_FILE_TAGS = {"include": ("file",), "mesh": ("file",), "hfield": ("file",), "skin": ("file",), "model": ("file",),
              "texture": ("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")}
_MAX_INCLUDE_DEPTH = 8


def _outside_problem(folder: Path, names: list[str]) -> Problem:
    """The one problem of a model that names files outside its folder and could not be compiled with them: it
    says the same whether those files exist or not (what is wrong with one is not said)."""
    shown = ", ".join(repr(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return Problem("mujoco", f"it names files outside the model's folder {folder} ({shown}), and MuJoCo's compiler "
                   "could not use the model with them; for a file outside the model's folder, whether it is missing, "
                   "not a file or not what MuJoCo reads is not said (copy it into the folder to see why)")


def _bounds_problems(path: Path) -> tuple[list[Problem], list[str], bool]:
    """What makes an MJCF model too large for MuJoCo's compiler to be handed it, read before it sees the file:
    more bodies than :data:`MAX_BODIES` once every ``<replicate>`` is expanded, a ``<flexcomp>`` of more
    points than that, and included or asset files that are not regular files (a pipe would block the compiler)
    or are larger than a document or a mesh may be. Includes are followed to :data:`_MAX_INCLUDE_DEPTH`.

    Returns ``(problems, outside, trouble)``: the problems of the model's own files; the names of the files it
    names outside its folder (links followed, ``..`` resolved; against the model's folder and the including
    file's); and whether one of those, or what an outside include holds, is refused by these checks — which is
    then said by :func:`_outside_problem` alone, so that no message tells whether a file outside exists."""
    import os
    import xml.etree.ElementTree as ET

    from ..fileio import not_a_file, read_regular_file
    from ..meshfile import MAX_MESH_BYTES
    problems: list[Problem] = []
    outside: list[str] = []
    trouble = False
    bodies = [0, 0]                                      # counted in the model's own files, and in outside ones
    own = Path(os.path.realpath(path.parent))

    def is_outside(file: Path) -> bool:
        try:
            real = Path(os.path.realpath(file))
        except (OSError, ValueError):
            return True
        return not (real == own or own in real.parents)

    def problem(out: bool, where: str, message: str) -> None:
        nonlocal trouble
        if out:
            trouble = True
        else:
            problems.append(Problem(where, message))

    def parse(file: Path, where: str, out: bool):
        try:
            data = read_regular_file(file, MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None                                  # (MuJoCo's compiler names what it cannot find)
        except (OSError, ValueError) as exc:
            problem(out, where, f"cannot read {file.name}: {getattr(exc, 'strerror', None) or exc}")
            return None
        if len(data) > MAX_DOCUMENT_BYTES:
            problem(out, where, f"{file.name} is larger than the {MAX_DOCUMENT_BYTES} bytes a file may have")
            return None
        try:
            return ET.fromstring(data)
        except (ET.ParseError, ValueError, RecursionError):
            return None                                  # (not XML: MuJoCo's compiler says why, better)

    def asset_dirs(root) -> list[Path]:
        compiler = root.find("compiler") if root is not None else None
        if compiler is None:
            return [Path()]
        return [Path(compiler.get(kind) or compiler.get("assetdir") or "") for kind in ("meshdir", "texturedir")]

    def walk(node, folder: Path, dirs: list[Path], factor: int, depth: int, where: str, out: bool) -> None:
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
                bodies[out] += factor
            elif tag == "flexcomp":
                try:
                    n = 1
                    for c in (child.get("count") or "1").split():
                        n *= max(0, int(c))
                except ValueError:
                    n = 0
                if n * factor > MAX_BODIES:
                    problem(out, here, f"a flexcomp of {n * factor} points, more than the {MAX_BODIES} bodies a "
                            "scene may have")
            for attribute in _FILE_TAGS.get(tag, ()):
                name = child.get(attribute)
                if not name:
                    continue
                bases = [folder, path.parent] if tag == "include" else [b / d for b in (folder, path.parent)
                                                                           for d in dirs]
                file = bases[0] / name
                away = out or any(is_outside(b / name) for b in bases)
                shown = name if tag == "include" else str(dirs[0] / name)
                if away and shown not in outside:
                    outside.append(shown)
                if tag == "include":
                    if depth >= _MAX_INCLUDE_DEPTH:
                        problem(out, here, f"includes nested more than {_MAX_INCLUDE_DEPTH} deep")
                        continue
                    sub = parse(file, here, away)
                    if sub is not None:
                        walk(sub, file.parent, dirs, k, depth + 1, here, away)
                    continue
                for candidate in {b / name for b in bases}:
                    try:
                        st = candidate.stat()
                    except (OSError, ValueError):
                        continue                         # (missing: MuJoCo's compiler says so)
                    if not_a_file(st.st_mode):
                        problem(away, here, f"{name} is not a regular file ({not_a_file(st.st_mode)})")
                    elif st.st_size > MAX_MESH_BYTES:
                        problem(away, here, f"{name} has {st.st_size} bytes, more than the {MAX_MESH_BYTES} an "
                                "asset may have")
            if bodies[0] > MAX_BODIES or len(problems) > 20 or (trouble and out):
                return
            walk(child, folder, dirs, k, depth, here, out)

    root = parse(path, "mujoco", False)
    if root is not None:
        walk(root, path.parent, asset_dirs(root), 1, 0, "mujoco", False)
    if bodies[0] > MAX_BODIES:
        problems.append(Problem("mujoco", f"more than {MAX_BODIES} bodies once its <replicate> elements are "
                                "expanded, more than a scene may have"))
    elif sum(bodies) > MAX_BODIES:
        trouble = True
    return problems, outside, trouble


class _Names:
    """Scene names for MuJoCo's (possibly empty or unusual) names, unique within one namespace (bodies, joints,
    forces and constraints each have their own)."""

    def __init__(self, reserved=()):
        self.used: set[str] = set(reserved)

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
    notes = _Notes()
    bnames, fnames = _Names(reserved={"world"}), _Names()
    jname = _joint_names(mujoco, m, notes)
    body_name = {0: "world"}
    shift = {0: np.zeros(3)}                             # MuJoCo body frame → our link frame: minus this offset
    bodies: list[dict] = []
    forces: list[dict] = []                              # springs and dampers, gravity compensation
    actuators = _actuators(mujoco, m, jname, fnames, notes)   # (names first: they are what a user drives)
    FREE, BALL, HINGE = (int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL),
                         int(mujoco.mjtJoint.mjJNT_HINGE))            # (any other: slide)
    gravity = np.array(m.opt.gravity, dtype=float)
    floor = _floor(mujoco, m)
    for b in range(1, m.nbody):
        body_name[b] = bnames(mujoco.mj_id2name(m, obj.mjOBJ_BODY, b) or "", f"body{b}")
    pair_bits, floor_bit, related, unpaired = _pair_filters(m, floor, body_name)
    for b in range(1, m.nbody):
        name = body_name[b]
        parent = int(m.body_parentid[b])
        # the MuJoCo body frame in our parent link's frame
        p = np.array(m.body_pos[b], dtype=float) - shift[parent]
        quat = [float(x) for x in m.body_quat[b]]
        joints = list(range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])))
        chain = []                                       # (joint dict) of each link of this body
        anchor = np.zeros(3)
        for k, j in enumerate(joints):
            jt = int(m.jnt_type[j])
            d, nd = int(m.jnt_dofadr[j]), {FREE: 6, BALL: 3}.get(jt, 1)
            if m.dof_frictionloss[d:d + nd].any() or (nd > 1 and (m.dof_armature[d:d + nd].any()
                                                                  or m.dof_damping[d:d + nd].any()
                                                                  or m.jnt_stiffness[j])):
                notes.passive.append(jname[j])
            if _nonlinear_passive(m, j, d, nd):
                notes.nonlinear.append(jname[j])
            if jt == FREE:
                q0 = [*map(float, m.body_pos[b]), *quat] if parent == 0 else None
                if q0 is None:
                    raise SceneError([Problem(f"mujoco/body[@name='{name}']", "a free joint on a body that is not a "
                                              "child of the world")], source)
                chain.append({"type": "free", "name": jname[j], "q0": q0})
                continue
            a = np.array(m.jnt_pos[j], dtype=float)
            if k == 0:
                position = (p + quat_to_rotation(np.array(quat)) @ a).tolist()
                orientation = quat
            else:
                position, orientation = (a - anchor).tolist(), [1.0, 0.0, 0.0, 0.0]
            anchor = a
            joint = {"name": jname[j], "position": position, "orientation": orientation}
            if jt == BALL:
                joint.update(type="ball")
                if m.jnt_limited[j]:
                    notes.ball_limits.append(jname[j])
            else:
                qa = int(m.jnt_qposadr[j])
                joint.update(type="hinge" if jt == HINGE else "slider", axis=[float(x) for x in m.jnt_axis[j]],
                             armature=float(m.dof_armature[d]) + actuators.armature.get(j, 0.0))
                if m.jnt_limited[j]:                     # q = qpos − qpos0: the range moves by qpos0 (ref)
                    lo, hi = (float(x - m.qpos0[qa]) for x in m.jnt_range[j])
                    if lo < hi:
                        joint["limits"] = [lo, hi]
                        if not lo <= 0.0 <= hi:          # (ref outside the range: start at its nearest bound)
                            joint["q0"] = min(max(0.0, lo), hi)
                            notes.clamped.append(jname[j])
                damping = float(m.dof_damping[d]) + actuators.damping.get(j, 0.0)
                if damping or m.jnt_stiffness[j]:        # τ = −k (qpos − qpos_spring) − c q̇, q = qpos − qpos0
                    forces.append({"type": "joint_spring", "name": fnames(f"{jname[j]}_passive", "passive"),
                                   "joint": jname[j], "stiffness": float(m.jnt_stiffness[j]), "damping": damping,
                                   "rest": float(m.qpos_spring[qa] - m.qpos0[qa])})
            chain.append(joint)
        if not chain:
            chain = [{"type": "fixed", "name": jname.fixed(name), "position": p.tolist(), "orientation": quat}]
        shift[b] = anchor
        R_i = quat_to_rotation(np.array(m.body_iquat[b], dtype=float))
        inertia = R_i @ np.diag(np.array(m.body_inertia[b], dtype=float)) @ R_i.T
        com = np.array(m.body_ipos[b]) - anchor
        inertial = {"mass": float(m.body_mass[b]), "com": com.tolist(), "inertia": _six(0.5 * (inertia + inertia.T))}
        parent_name = body_name[parent]
        for k, joint in enumerate(chain[:-1]):           # massless links carrying the extra joints
            link = bnames(f"{name}__{joint['name']}", f"{name}__joint{k}")
            bodies.append({"name": link, "parent": parent_name, "joint": joint, "inertial": {"mass": 0.0}})
            parent_name = link
        bodies.append({"name": name, "parent": parent_name, "joint": chain[-1], "inertial": inertial,
                       "shapes": _shapes(mujoco, m, b, anchor, name, source, pair_bits)})
        gravcomp = float(m.body_gravcomp[b])
        if gravcomp and m.body_mass[b] > 0 and gravity.any():   # MuJoCo's qfrc_gravcomp: −gc m g at the com
            forces.append({"type": "point_force", "name": fnames(f"{name}_gravcomp", "gravcomp"), "body": name,
                           "point": com.tolist(), "force": (-gravcomp * float(m.body_mass[b]) * gravity).tolist()})
    constraints = _equalities(mujoco, m, body_name, shift, jname, source, notes)
    forces.extend(_tendon_springs(mujoco, m, jname, fnames, notes))
    if m.opt.density > 0 or m.opt.viscosity > 0:
        notes.fluid = (f"the medium's fluid forces (density {m.opt.density:g} kg/m³, viscosity "
                       f"{m.opt.viscosity:g} Pa·s"
                       + (", and the ellipsoid fluid model of geoms" if m.geom_fluid[:, 0].any() else "") + ")")
    integrator = _integrator(mujoco, m, notes)
    excluded, world_excluded = _excludes(m, body_name)
    if m.npair:
        notes.contact_rules = (f"the file's {m.npair} <pair> contact rule(s) are imported as filter bits (a pair's "
                               "geoms collide when the document asks, \"collisions\": {}; a pair with the floor "
                               "touches the ground) without their own friction, margin and softness (the "
                               "collisions' and the ground's friction apply)"
                               + (f"; {unpaired} of them are not imported (with a world geom other than the floor, "
                                  "or beyond the 31 filter bits)" if unpaired else ""))
    notes.warn(source)
    if len(bodies) > MAX_BODIES:
        raise SceneError([Problem("mujoco", f"{len(bodies)} bodies (with one per extra joint), more than the "
                                  f"{MAX_BODIES} a scene may have")], source)
    model_name = re.sub(r"[^A-Za-z0-9_\-]", "_", path.stem) or "mjcf"
    raw = {"format_version": 1, "name": model_name if re.match(r"[A-Za-z_]", model_name) else "_" + model_name,
           "description": f"Imported from the MJCF file {path.name} through MuJoCo {mujoco.__version__}",
           "gravity": [float(g) for g in m.opt.gravity], "simulation": {"dt": float(m.opt.timestep), "integrator": integrator},
           "bodies": bodies, "constraints": constraints, "forces": forces + actuators.forces}
    ground = _ground(mujoco, m, source, floor)
    if ground is not None:
        ground["contype"] |= floor_bit                  # the <pair> rules with the floor (_pair_filters)
        if world_excluded:                              # <exclude body1="world" body2="b">: b never touches the floor
            ground["exclude"] = world_excluded
        raw["ground"] = ground
    if excluded or related:    # carried for a document whose "collisions" collide the robot's geoms (robots.expand);
        raw["collisions"] = {"bodies": [], "exclude_pairs": excluded,      # on its own, nothing collides (bodies:
                             "include_pairs": related}                       # none)
    return parse_spec(_zero(raw), source)


def _excludes(m, body_name: dict) -> tuple[list[list[str]], list[str]]:
    """The file's ``<exclude>`` rules in scene names: ``(pairs of bodies, bodies excluded from the world)`` (MuJoCo's
    ``exclude_signature`` = body1 · 2¹⁶ + body2; a body against the world: against its floor, the scene's ground)."""
    pairs, world = [], []
    for sig in np.asarray(m.exclude_signature, dtype=np.int64):
        a, b = body_name.get(int(sig) >> 16), body_name.get(int(sig) & 0xFFFF)
        if a is None or b is None or a == b:
            continue
        if "world" in (a, b):
            other = b if a == "world" else a
            if other not in world:
                world.append(other)
        elif [a, b] not in pairs and [b, a] not in pairs:
            pairs.append([a, b])
    return pairs, world


def _integrator(mujoco, m, notes) -> str:
    """The scene's integrator for the model's: RK4 as RK4; MuJoCo's Euler, implicit and implicitfast, which all
    take joint damping implicitly (the time steps of MuJoCo's models are chosen for that), as ``implicitfast``
    (:mod:`core.integrators`), which is MuJoCo's implicitfast (the joint dampers' and the actuators' velocity
    gains implicit) — what differs from the file's is noted."""
    kind = int(m.opt.integrator)
    T = mujoco.mjtIntegrator
    if kind == int(T.mjINT_RK4):
        return "rk4"
    if kind == int(T.mjINT_EULER):
        if any(int(m.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_AFFINE) and m.actuator_biasprm[a, 2] != 0
               for a in range(m.nu)):
            notes.integrator = ("the Euler integrator becomes implicitfast, which also takes the actuators' velocity "
                                "gains (kv) implicitly where MuJoCo's Euler takes them explicitly")
        return "implicitfast"
    if kind == int(T.mjINT_IMPLICIT):
        notes.integrator = ("the implicit integrator becomes implicitfast, which leaves out the implicit "
                            "integrator's derivatives of the Coriolis and centrifugal forces")
    return "implicitfast"


class _Notes:
    """What an MJCF import left out or changed, collected while reading and warned at the end (one
    :class:`MJCFWarning` per kind, naming the elements)."""

    def __init__(self):
        self.renamed: list[str] = []          # "mujoco name → scene name" of joints
        self.passive: list[str] = []          # joints with friction loss, or passive terms of ball/free joints
        self.nonlinear: list[str] = []        # joints with polynomial stiffness or damping, or plasticity
        self.ball_limits: list[str] = []
        self.clamped: list[str] = []          # joints whose ref lies outside their range
        self.actuators: list[str] = []        # "name (why)" of actuators not imported
        self.approximate: list[str] = []      # "name (how)" of actuators imported approximately
        self.tendons: list[str] = []          # "name (what)" of tendons whose effect is not imported
        self.equalities: list[str] = []       # "name (type)" of equalities not imported
        self.fluid: str | None = None
        self.contact_rules: str | None = None
        self.integrator: str | None = None

    def warn(self, source: str) -> None:
        said = []
        if self.renamed:
            said.append("renamed (names a scene cannot hold, or two MuJoCo names that became one): "
                        + _listed(self.renamed))
        if self.passive:
            said.append("joint friction loss, and armature, damping and springs of ball and free joints, are not "
                        f"imported (joints: {_listed(self.passive)})")
        if self.nonlinear:
            said.append("polynomial joint stiffness and damping (stiffnesspoly, dampingpoly) and joint "
                        f"plasticity are not imported (joints: {_listed(self.nonlinear)})")
        if self.ball_limits:
            said.append(f"ball joint limits (a cone) are not imported (joints: {_listed(self.ball_limits)})")
        if self.clamped:
            said.append("joints whose ref lies outside their range start at the nearest bound instead of at "
                        f"qpos0 (joints: {_listed(self.clamped)})")
        if self.actuators:
            said.append(f"actuators not imported: {_listed(self.actuators)}")
        if self.approximate:
            said.append(f"actuators imported approximately: {_listed(self.approximate)}")
        if self.tendons:
            said.append(f"tendon forces not imported: {_listed(self.tendons)}")
        if self.equalities:
            said.append("equalities not imported (connect between bodies, and joint and fixed-tendon couplings, "
                        f"are): {_listed(self.equalities)}")
        if self.fluid:
            said.append(f"{self.fluid} are not imported")
        if self.contact_rules:
            said.append(self.contact_rules)
        if self.integrator:
            said.append(self.integrator)
        for text in said:
            warnings.warn(f"{source}: {text}", MJCFWarning, stacklevel=3)


def _listed(items: list[str]) -> str:
    return ", ".join(items[:20]) + (f" … ({len(items)} in all)" if len(items) > 20 else "")


class _JointNames(dict):
    """The scene name of each MuJoCo joint (id → name), in the joints' own namespace: a joint keeps its MuJoCo
    name whatever the bodies are called (bodies and joints are separate namespaces in a scene, as in MuJoCo).
    Named joints are named first, then unnamed ones (``<body>_joint<k>``), then the fixed joints of bodies
    without joints (:meth:`fixed`), so no joint takes another's name."""

    def __init__(self):
        super().__init__()
        self.names = _Names()

    def fixed(self, body: str) -> str:
        return self.names(body, body)


def _joint_names(mujoco, m, notes: _Notes) -> _JointNames:
    out = _JointNames()
    raw = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or "" for j in range(m.njnt)]
    for j in sorted(range(m.njnt), key=lambda j: not raw[j]):           # (stable: named ones first)
        if raw[j]:
            out[j] = out.names(raw[j], f"joint{j}")
            if out[j] != raw[j]:
                notes.renamed.append(f"{raw[j]} → {out[j]}")
        else:
            b = int(m.jnt_bodyid[j])
            body = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}"
            out[j] = out.names(f"{body}_joint{j - int(m.body_jntadr[b])}", f"joint{j}")
    return out


def _nonlinear_passive(m, j: int, d: int, nd: int) -> bool:
    """Whether joint j has passive terms this import cannot express (MuJoCo 4's polynomial stiffness and damping,
    plasticity)."""
    for field, rows in (("jnt_stiffnesspoly", j), ("dof_dampingpoly", slice(d, d + nd)),
                        ("jnt_springyield", j)):
        values = getattr(m, field, None)
        if values is not None and np.asarray(values[rows]).any():
            return True
    return False


class _Actuators:
    """The scene's reading of MuJoCo's actuators: ``forces`` (the ``actuator`` entries), and per joint id the
    actuators' transmission armature and damping (MuJoCo 4's actuator ``armature`` and ``damping``, which act on
    the joint through the gear: gear² times each)."""

    def __init__(self):
        self.forces: list[dict] = []
        self.armature: dict[int, float] = {}
        self.damping: dict[int, float] = {}


def _actuators(mujoco, m, jname: dict, fnames: _Names, notes: _Notes) -> _Actuators:
    """MuJoCo's actuators with a joint transmission on a hinge or slide, as ``actuator`` forces.

    MuJoCo's force (no activation dynamics) is ``f = clip(gain·clip(ctrl, ctrlrange) + b0 + b1 ℓ + b2 ℓ̇,
    forcerange)`` with ℓ = gear·qpos and ℓ̇ = gear·q̇, applied as τ = gear·f and then clipped to the joint's
    ``actuatorfrcrange``; with qpos = q + qpos0 that is the scene's affine actuator (:class:`~core.scene.schema.
    Actuator`) of gain gear·gain, bias [gear (b0 + b1 gear qpos0), gear² b1, gear² b2] and force range gear times
    forcerange (its bounds swapped for a negative gear), met with the joint's range. A motor is gain 1, bias 0;
    a position actuator gain kp, bias [0, −kp, −kv]; a velocity actuator gain kv, bias [0, 0, −kv]. Commands
    start at 0, as MuJoCo's ctrl."""
    out = _Actuators()
    T, D, G, B = mujoco.mjtTrn, mujoco.mjtDyn, mujoco.mjtGain, mujoco.mjtBias
    joint_kinds = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    clamp = not (m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL))
    per_joint: dict[int, int] = {}
    for a in range(m.nu):
        if int(m.actuator_trntype[a]) in (int(T.mjTRN_JOINT), int(T.mjTRN_JOINTINPARENT)):
            j = int(m.actuator_trnid[a, 0])
            per_joint[j] = per_joint.get(j, 0) + 1
    for a in range(m.nu):
        raw = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or ""
        label = raw or f"actuator {a}"
        trn = int(m.actuator_trntype[a])
        if trn not in (int(T.mjTRN_JOINT), int(T.mjTRN_JOINTINPARENT)):
            what = T(trn).name.removeprefix("mjTRN_").lower().replace("slidercrank", "slider-crank")
            notes.actuators.append(f"{label} ({what} transmission)")
            continue
        j = int(m.actuator_trnid[a, 0])
        if int(m.jnt_type[j]) not in joint_kinds:
            notes.actuators.append(f"{label} (on {mujoco.mjtJoint(int(m.jnt_type[j])).name.removeprefix('mjJNT_').lower()}"
                                   f" joint {jname[j]})")
            continue
        why = []
        if int(m.actuator_dyntype[a]) != int(D.mjDYN_NONE):
            why.append(f"{D(int(m.actuator_dyntype[a])).name.removeprefix('mjDYN_').lower()} activation dynamics")
        gaintype, biastype = int(m.actuator_gaintype[a]), int(m.actuator_biastype[a])
        gp, bp = np.array(m.actuator_gainprm[a], dtype=float), np.array(m.actuator_biasprm[a], dtype=float)
        if not (gaintype == int(G.mjGAIN_FIXED) or (gaintype == int(G.mjGAIN_AFFINE) and not gp[1:3].any())):
            why.append("a gain that depends on the state" if gaintype == int(G.mjGAIN_AFFINE)
                       else f"{G(gaintype).name.removeprefix('mjGAIN_').lower()} gain")
        if biastype not in (int(B.mjBIAS_NONE), int(B.mjBIAS_AFFINE)):
            why.append(f"{B(biastype).name.removeprefix('mjBIAS_').lower()} bias")
        delay = getattr(m, "actuator_delay", None)
        if delay is not None and float(np.asarray(delay[a]).max(initial=0.0)) > 0:
            why.append("a delay")
        if why:
            notes.actuators.append(f"{label} ({', '.join(why)})")
            continue
        g = float(m.actuator_gear[a, 0])
        qpos0 = float(m.qpos0[int(m.jnt_qposadr[j])])
        b0, b1, b2 = (bp[:3] if biastype == int(B.mjBIAS_AFFINE) else np.zeros(3))
        name = fnames(raw, f"{jname[j]}_actuator")
        if raw and name != raw:
            notes.renamed.append(f"actuator {raw} → {name}")
        act = {"type": "actuator", "name": name, "joint": jname[j], "torque": 0.0,
               "gain": g * gp[0], "bias": [g * (b0 + b1 * g * qpos0), g * g * b1, g * g * b2]}
        if clamp and m.actuator_ctrllimited[a]:
            act["command_range"] = [float(x) for x in m.actuator_ctrlrange[a]]
        lo, hi = -np.inf, np.inf
        if m.actuator_forcelimited[a]:
            lo, hi = sorted(g * float(x) for x in m.actuator_forcerange[a])
        if m.jnt_actfrclimited[j]:
            jlo, jhi = (float(x) for x in m.jnt_actfrcrange[j])
            lo, hi = max(lo, jlo), min(hi, jhi)
            if per_joint[j] > 1:
                notes.approximate.append(f"{label} (the actuator force range of joint {jname[j]} bounds the sum "
                                         "of its actuators' forces in MuJoCo, each one's here)")
        if np.isfinite(lo) or np.isfinite(hi):
            if lo == -hi and hi > 0:
                act["limit"] = hi
            else:
                act["force_range"] = [max(lo, -1e12), max(min(hi, 1e12), max(lo, -1e12))]
        if m.jnt_actgravcomp[j]:
            notes.approximate.append(f"{label} (joint {jname[j]}'s gravity compensation is applied as a force "
                                     "of its own, not through the actuator and its force range)")
        out.forces.append(act)
        for field, into in (("actuator_armature", out.armature), ("actuator_damping", out.damping)):
            values = getattr(m, field, None)
            if values is not None and float(values[a]):
                into[j] = into.get(j, 0.0) + g * g * float(values[a])
    return out


def _fixed_tendon(mujoco, m, t: int, jname: dict) -> list[tuple[int, float]] | None:
    """``[(joint id, coefficient), …]`` of a fixed tendon (its length Σ cᵢ qposᵢ) over hinges and slides, or
    None for a spatial tendon or one over another kind of joint."""
    out = []
    for w in range(int(m.tendon_adr[t]), int(m.tendon_adr[t]) + int(m.tendon_num[t])):
        if int(m.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT):
            return None
        j = int(m.wrap_objid[w])
        if int(m.jnt_type[j]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            return None
        out.append((j, float(m.wrap_prm[w])))
    return out


def _tendon_springs(mujoco, m, jname: dict, fnames: _Names, notes: _Notes) -> list[dict]:
    """A fixed tendon over one joint with stiffness or damping is a joint spring (gear c: stiffness c² k, damping
    c² d, rest where c·qpos is its spring length); the other tendons' springs, dampers, limits and friction are
    named in the warning."""
    out = []
    for t in range(m.ntendon):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_TENDON, t) or f"tendon {t}"
        k, d = float(m.tendon_stiffness[t]), float(m.tendon_damping[t])
        spring = np.array(m.tendon_lengthspring[t], dtype=float).reshape(-1)
        what = []
        fixed = _fixed_tendon(mujoco, m, t, jname)
        if k or d:
            if fixed is not None and len(fixed) == 1 and fixed[0][1] != 0 and np.ptp(spring) == 0:
                j, c = fixed[0]
                qa = int(m.jnt_qposadr[j])
                out.append({"type": "joint_spring", "name": fnames(f"{name}_spring", "tendon_spring"),
                            "joint": jname[j], "stiffness": c * c * k, "damping": c * c * d,
                            "rest": float(spring[0] / c - m.qpos0[qa])})
            else:
                what.append("stiffness" if k and not d else "damping" if d and not k else "stiffness and damping")
        if m.tendon_limited[t]:
            what.append("limits")
        if m.tendon_frictionloss[t]:
            what.append("friction loss")
        stiffnesspoly = getattr(m, "tendon_stiffnesspoly", None)
        if stiffnesspoly is not None and np.asarray(stiffnesspoly[t]).any():
            what.append("polynomial stiffness")
        if what:
            notes.tendons.append(f"{name} ({', '.join(what)}{', spatial' if fixed is None else ''})")
    return out


def _zero(x):
    if isinstance(x, float):
        return 0.0 if abs(x) < 1e-30 else x
    if isinstance(x, dict):
        return {k: _zero(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_zero(v) for v in x]
    return x


def _shapes(mujoco, m, b: int, anchor: np.ndarray, body: str, source: str, pair_bits: dict | None = None
            ) -> list[dict]:
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
        shape.update(position=pos.tolist(), orientation=quat, color=rgba, **_purpose(m, g, (pair_bits or {}).get(g)))
        out.append(shape)
    return out


def _purpose(m, g: int, pair_bits: list | None = None) -> dict:
    """A geom's ``purpose`` and filter: drawn only if it collides with nothing (contype = conaffinity = 0) and is in
    no ``<pair>``, a collision stand-in if it is in a group MuJoCo's viewer hides (3 and up), else both. A geom in
    a ``<pair>`` has its rules' bits (``pair_bits``: :func:`_pair_filters`) in its contype and conaffinity."""
    contype, conaffinity = int(m.geom_contype[g]), int(m.geom_conaffinity[g])
    if pair_bits:
        contype, conaffinity = contype | pair_bits[0], conaffinity | pair_bits[1]
    purpose = "visual" if contype == 0 and conaffinity == 0 else "collision" if int(m.geom_group[g]) >= 3 \
        else "both"
    return {"purpose": purpose, "contype": contype, "conaffinity": conaffinity}


def _pair_filters(m, floor: int, body_name: dict) -> tuple[dict, int, list, int]:
    """The file's ``<pair>`` rules as filter bits: ``({geom: [contype bits, conaffinity bits]}, the ground's contype
    bit (0: none), [[body, body]] of pairs between a parent and its child, how many rules are not imported)``.
    MuJoCo collides a pair's two geoms whatever their contype and conaffinity (and whatever their bodies are to
    each other). Here each rule takes a filter bit that no geom of the file uses — geom1's contype and geom2's
    conaffinity get it, so MuJoCo's filter ``(contype_a & conaffinity_b) or (contype_b & conaffinity_a)`` passes
    between those two and nowhere else — and a rule with the floor puts one bit in the paired geoms'
    conaffinity and the ground's contype. A pair between a parent and its child is kept by the collisions'
    ``include_pairs``. Not imported (counted): rules with a world geom other than the floor (those are not
    imported at all) and rules beyond the bits left (31 less those the file uses)."""
    if m.npair == 0:
        return {}, 0, [], 0
    used = 0
    for g in range(m.ngeom):
        used |= int(m.geom_contype[g]) | int(m.geom_conaffinity[g])
    free = [1 << k for k in range(31) if not used & (1 << k)]
    bits: dict = {}
    floor_bit, related, dropped = 0, [], 0
    for k in range(m.npair):
        a, b = int(m.pair_geom1[k]), int(m.pair_geom2[k])
        ba, bb = int(m.geom_bodyid[a]), int(m.geom_bodyid[b])
        if floor >= 0 and floor in (a, b):
            other = b if a == floor else a
            if int(m.geom_bodyid[other]) == 0 or not (floor_bit or free):
                dropped += 1
                continue
            floor_bit = floor_bit or free.pop()
            bits.setdefault(other, [0, 0])[1] |= floor_bit
            continue
        if ba == 0 or bb == 0 or not free:
            dropped += 1
            continue
        if ba == bb:                                     # (one body: nothing to collide)
            continue
        bit = free.pop()
        bits.setdefault(a, [0, 0])[0] |= bit
        bits.setdefault(b, [0, 0])[1] |= bit
        if int(m.body_parentid[ba]) == bb or int(m.body_parentid[bb]) == ba:
            pair = [body_name[ba], body_name[bb]]
            if pair not in related and pair[::-1] not in related:
                related.append(pair)
    return bits, floor_bit, related, dropped


def _floor(mujoco, m) -> int:
    """The world body's first plane geom that collides — by its filter or a ``<pair>`` rule (MuJoCo's floor) —
    −1 for none."""
    paired = {int(g) for g in m.pair_geom1} | {int(g) for g in m.pair_geom2}
    for g in range(int(m.body_geomadr[0]), int(m.body_geomadr[0]) + int(m.body_geomnum[0])):
        colliding = int(m.geom_contype[g]) != 0 or int(m.geom_conaffinity[g]) != 0 or g in paired
        if colliding and int(m.geom_type[g]) == mujoco.mjtGeom.mjGEOM_PLANE:
            return g
    return -1


def _ground(mujoco, m, source: str, floor: int) -> dict | None:
    """The scene's ``ground`` from the file's floor (``floor``, :func:`_floor`): its origin, its normal (the geom's
    z axis), its sliding friction and its filter; None without one. A height field or a second plane is named in
    a warning."""
    G = mujoco.mjtGeom
    ground, skipped = None, []
    for g in range(int(m.body_geomadr[0]), int(m.body_geomadr[0]) + int(m.body_geomnum[0])):
        kind = int(m.geom_type[g])
        if g != floor and int(m.geom_contype[g]) == 0 and int(m.geom_conaffinity[g]) == 0:
            continue
        if g == floor:
            R = quat_to_rotation(np.array(m.geom_quat[g], dtype=float))
            ground = {"origin": [float(x) for x in m.geom_pos[g]], "normal": R[:, 2].tolist(),
                      "friction": float(m.geom_friction[g][0]),
                      "contype": int(m.geom_contype[g]), "conaffinity": int(m.geom_conaffinity[g])}
        else:
            skipped.append(G(kind).name.removeprefix("mjGEOM_").lower())
    if skipped:
        warnings.warn(f"{source}: the world's {', '.join(skipped)} geoms do not collide here (only its first plane, "
                      "as the ground)", MJCFWarning, stacklevel=3)
    return ground


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


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _polynomial(x: str, coefficients) -> str:
    """``c0 + c1*x + c2*x**2 + …`` of a joint-space expression, zero terms left out."""
    terms = [repr(float(c0)) if k == 0 else f"{float(c0)!r} * ({x})" + (f" ** {k}" if k > 1 else "")
             for k, c0 in enumerate(coefficients) if c0 != 0.0]
    return " + ".join(terms) or "0.0"


def _equalities(mujoco, m, body_name: dict, shift: dict, jname: dict, source: str, notes: _Notes) -> list[dict]:
    """``connect`` equalities between bodies as point-to-point constraints; ``joint`` equalities and
    ``tendon`` equalities of fixed tendons as joint-space constraints, MuJoCo's relation
    ``y − y0 = c0 + c1 (x − x0) + … + c4 (x − x0)⁴`` written in the scene's coordinates q = qpos − qpos0 (a fixed
    tendon's length Σ cᵢ qposᵢ minus its length at qpos0 is Σ cᵢ qᵢ), so ``y − (c0 + c1 x + …) = 0``."""
    E, O = mujoco.mjtEq, mujoco.mjtObj
    names = _Names()
    out = []

    def term(kind: int, i: int) -> str | None:
        """The expression of joint or tendon i, q = qpos − qpos0 (None if it cannot be written)."""
        if kind == int(E.mjEQ_JOINT):
            if int(m.jnt_type[i]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                return None
            return jname[i] if _IDENTIFIER.match(jname[i]) else None
        wraps = _fixed_tendon(mujoco, m, i, jname)
        if not wraps or any(not _IDENTIFIER.match(jname[j]) for j, _ in wraps):
            return None
        return " + ".join(f"{c!r} * {jname[j]}" for j, c in wraps)

    for e in range(m.neq):
        ename = mujoco.mj_id2name(m, O.mjOBJ_EQUALITY, e) or ""
        kind = int(m.eq_type[e])
        data = np.array(m.eq_data[e], dtype=float)
        if kind == int(E.mjEQ_CONNECT) and int(m.eq_objtype[e]) == int(O.mjOBJ_BODY):
            b1, b2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            a1, a2 = data[0:3] - shift[b1], data[3:6] - shift[b2]
            if b1 == 0:                                  # keep the world second
                b1, b2, a1, a2 = b2, b1, a2, a1
            out.append({"type": "point_to_point", "name": names(ename, f"connect{e}"), "body_a": body_name[b1],
                        "point_a": a1.tolist(), "body_b": body_name[b2], "point_b": a2.tolist(),
                        "enabled": bool(m.eq_active0[e])})
            continue
        if kind in (int(E.mjEQ_JOINT), int(E.mjEQ_TENDON)):
            y = term(kind, int(m.eq_obj1id[e]))
            x = term(kind, int(m.eq_obj2id[e])) if int(m.eq_obj2id[e]) >= 0 else None
            if y is not None and (x is not None or int(m.eq_obj2id[e]) < 0):
                relation = _polynomial(x, data[:5]) if x is not None else repr(float(data[0]))
                what = "joint" if kind == int(E.mjEQ_JOINT) else "tendon"
                out.append({"type": "joint_space", "name": names(ename, f"{what}_coupling{e}"),
                            "expression": f"{y} - ({relation})", "enabled": bool(m.eq_active0[e])})
                continue
        why = E(kind).name.removeprefix("mjEQ_").lower()
        if kind in (int(E.mjEQ_JOINT), int(E.mjEQ_TENDON)):
            why += ", of a spatial tendon, a ball or free joint, or joints whose names are not identifiers"
        notes.equalities.append(f"{ename or e} ({why})")
    return out
