"""URDF import (core/urdf.py): joint order, conventions, visuals, errors, and an independent check of the
imported dynamics against Pinocchio's own URDF parser and algorithms (CRBA, RNEA, ABA, frame Jacobians)."""
from __future__ import annotations

import math
import os
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import core
from core.scene import SceneError
from core.urdf import URDFWarning, urdf_to_spec

if os.environ.get("CI") is None:
    pinocchio = pytest.importorskip("pinocchio")
else:                                   # on CI a missing Pinocchio is a failure, not a skip
    import pinocchio

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "assets" / "urdf" / "lsa7_arm.urdf"
TORSO = ROOT / "assets" / "urdf" / "twin_arm_torso.urdf"
BOOM = ROOT / "tests" / "data" / "boom_payload.urdf"

ARM_JOINTS = [f"joint{i}" for i in range(1, 8)]
TORSO_JOINTS = ["lift", "r_shoulder", "r_elbow", "l_shoulder_pitch", "l_shoulder_roll", "l_elbow"]
RTOL = 1e-9


def load(path, floating_base=False):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the shipped robots import without any warning…
        warnings.filterwarnings("ignore", ".*Coulomb joint friction", URDFWarning)   # …but lsa7's friction
        return core.load_urdf(path, floating_base=floating_base)


def write(tmp_path: Path, body: str, name: str = "robot.urdf") -> Path:
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0"?>\n<robot name="t">\n{body}\n</robot>\n')
    return p


def link(name, mass=1.0, extra=""):
    inertial = (f'<inertial><mass value="{mass}"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" '
                f'izz="0.01"/></inertial>') if mass is not None else ""
    return f'<link name="{name}">{inertial}{extra}</link>'


def joint(name, parent, child, jtype="revolute", extra=""):
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>{extra}'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def problems_of(exc_info):
    return [(p.path, p.value) for p in exc_info.value.problems]


# ---------------------------------------------------------------------------------------------- structure
def test_arm_joint_order_and_slices():
    m = load(ARM)
    assert m.joint_names == ARM_JOINTS
    assert m.link_names == ("base_link", "link1", "link2", "link3", "link4", "link5", "link6", "link7")
    assert tuple(m.frames) == ("gripper", "tcp")        # welded to link7: merged into it
    assert (m.nq, m.nv) == (7, 7)
    for k, name in enumerate(ARM_JOINTS):
        assert m.q_slice(name) == slice(k, k + 1)
        assert m.qd_slice(name) == slice(k, k + 1)
    assert m.q_slice("base_link") == m.qd_slice("base_link") == slice(0, 0)    # welded to the world: a link
    assert m.joint_type[0] == core.model.FIXED and "gripper_mount" not in m.joint_link_names
    assert m.link_index("gripper") == m.link_index("tcp") == m.link_index("link7")


def test_branched_tree_depth_first_in_document_order():
    m = load(TORSO)
    assert m.joint_names == TORSO_JOINTS
    assert m.link_names == ("base", "torso", "r_upper", "r_forearm", "l_shoulder_link", "l_upper", "l_forearm")
    assert [m.link_names[p] if p >= 0 else "world" for p in m.parent] == [
        "world", "base", "torso", "r_upper", "torso", "l_shoulder_link", "l_upper"]
    assert m.link_index("head") == m.link_index("torso")          # welded to the torso: merged into it
    types = {n: int(m.joint_type[i]) for i, n in enumerate(m.joint_link_names)}
    assert types["lift"] == core.model.SLIDER
    assert types["l_elbow"] == core.model.HINGE         # continuous: an ordinary hinge
    assert types["base"] == core.model.FIXED and "neck" not in types
    for k, name in enumerate(TORSO_JOINTS):
        assert m.q_slice(name) == slice(k, k + 1) and m.qd_slice(name) == slice(k, k + 1)


def test_floating_base_root_joint_first():
    m = load(TORSO, floating_base=True)
    assert m.joint_names == ["base"] + TORSO_JOINTS
    assert m.q_slice("base") == slice(0, 7) and m.qd_slice("base") == slice(0, 6)
    for k, name in enumerate(TORSO_JOINTS):
        assert m.q_slice(name) == slice(7 + k, 8 + k)
        assert m.qd_slice(name) == slice(6 + k, 7 + k)
    np.testing.assert_array_equal(m.q0[:7], [0, 0, 0, 1, 0, 0, 0])


def test_free_joint_in_the_middle_of_the_tree():
    m = load(BOOM)
    assert m.joint_names == ["slew", "payload_float", "spin", "counter_slide"]
    assert m.q_slice("payload_float") == slice(1, 8) and m.qd_slice("payload_float") == slice(1, 7)
    assert m.q_slice("spin") == slice(8, 9) and m.qd_slice("counter_slide") == slice(8, 9)


def test_axis_defaults_to_x(tmp_path):
    p = write(tmp_path, link("a") + link("b") + joint("j", "a", "b"))
    m = core.load_urdf(p)
    np.testing.assert_array_equal(m.axis[1], [1, 0, 0])


# ---------------------------------------------------------------------------------------------- conventions
def test_rpy_convention(tmp_path):
    r, p_, y = 0.3, -0.5, 1.1
    body = (link("a") + link("b") + link("c") +
            f'<joint name="tilt" type="fixed"><parent link="a"/><child link="b"/>'
            f'<origin xyz="0.1 0.2 0.3" rpy="{r} {p_} {y}"/></joint>' +
            '<joint name="quarter" type="fixed"><parent link="a"/><child link="c"/>'
            '<origin rpy="1.5707963267948966 0 0"/></joint>')
    m = core.load_urdf(write(tmp_path, body))
    expected = rot_z(y) @ rot_y(p_) @ rot_x(r)              # roll about x, then pitch about y, then yaw about z
    _, R_ab, _ = m.body_frame("b")                           # welded to a: merged, its frame kept
    np.testing.assert_allclose(R_ab, expected, atol=1e-14)
    q = m.neutral_configuration()
    for k in range(3):                                       # the child's axes, seen from the parent (world)
        e = np.eye(3)[k]
        np.testing.assert_allclose(core.point_position(m, q, "b", e), [0.1, 0.2, 0.3] + expected[:, k], atol=1e-14)
    # a pure roll of +90° takes the child's y axis onto the parent's z axis
    np.testing.assert_allclose(core.point_position(m, q, "c", [0, 1, 0]), [0, 0, 1], atol=1e-15)
    # and Pinocchio's rpy convention is the same
    np.testing.assert_allclose(pinocchio.rpy.rpyToMatrix(r, p_, y), expected, atol=1e-14)
    w, *_ = m.spec.bodies[1].joint.orientation
    assert w >= 0


def test_inertial_rotated_into_link_frame():
    m = load(ARM)
    i = m.link_index("link1")
    R = rot_z(0.31) @ rot_y(-0.07) @ rot_x(0.12)
    I = np.array([[0.0227, -0.0011, 0.0007], [-0.0011, 0.0203, 0.0024], [0.0007, 0.0024, 0.0071]])
    mass, com, I_com = core.spatial.inertia_from_spatial(m.inertia[i])
    assert mass == pytest.approx(3.62)
    np.testing.assert_allclose(com, [0.0021, -0.0315, -0.0712], atol=1e-15)
    np.testing.assert_allclose(I_com, R @ I @ R.T, atol=1e-15)


# ---------------------------------------------------------------------------------------------- visuals
def _shapes(m, body, purpose="visual"):
    """The shapes of ``body`` made from its ``<visual>`` elements (``purpose="collision"``: its ``<collision>``)."""
    return [s for s in m.shapes if s.body == body and s.purpose == purpose]


def test_primitive_visuals_and_colours():
    m = load(TORSO)
    base, = _shapes(m, "base")
    assert base.kind == "box" and base.size == {"size": (0.5, 0.4, 0.18)}
    np.testing.assert_allclose(base.p_LS, [0, 0, 0.09])
    assert base.rgba == (0.2, 0.3, 0.55, 1.0)                        # inline colour
    box, cyl = _shapes(m, "torso")
    assert box.rgba == (0.85, 0.87, 0.9, 1.0)                        # top-level material by name
    assert cyl.kind == "cylinder" and cyl.size == {"radius": 0.07, "length": 0.1}
    assert cyl.rgba == (0.2, 0.3, 0.55, 1.0)                         # a named material defined inline elsewhere
    _, ball = _shapes(m, "r_forearm")
    assert ball.kind == "sphere" and ball.size == {"radius": 0.04}
    assert _shapes(m, "l_shoulder_link") == []                       # collision only: nothing drawn
    assert _shapes(m, "l_shoulder_link", "collision")                # but a collision shape, for a ground
    spec = urdf_to_spec(TORSO)
    assert all(s.mass is None and s.density is None for b in spec.bodies for s in b.shapes)
    arm = load(ARM)
    vis, = _shapes(arm, "link2")                                      # visual origin rpy → shape orientation
    np.testing.assert_allclose(vis.R_LS, rot_x(math.pi / 2), atol=1e-15)
    np.testing.assert_allclose(vis.p_LS, [0, -0.12, 0])


def test_stl_mesh_visual_through_package_path():
    m = load(TORSO)
    head, = _shapes(m, "head")
    # the STL's vertices span x [-60, 70], y [-55, 65], z [0, 160] mm; scale 0.001; visual yawed by 90° at z 0.02
    assert head.kind == "mesh" and head.size["file"] == str(ROOT / "assets" / "urdf" / "meshes" / "head.stl")
    np.testing.assert_allclose(head.size["size"], [0.13, 0.12, 0.16], rtol=1e-6)   # its bounding box
    np.testing.assert_allclose(head.size["scale"], [0.001] * 3)
    np.testing.assert_allclose(head.size["offset"], [-0.005, -0.005, -0.08], rtol=1e-6)   # the file's origin
    _, R_LB, p_LB = m.body_frame("head")                     # the head is merged into the torso (neck: fixed)
    np.testing.assert_allclose(R_LB, rot_y(0.1), atol=1e-15)
    np.testing.assert_allclose(p_LB, [0, 0, 0.56], atol=1e-15)
    np.testing.assert_allclose(head.R_LS, R_LB @ rot_z(math.pi / 2), atol=1e-15)
    np.testing.assert_allclose(head.p_LS, p_LB + R_LB @ ([0, 0, 0.02] + rot_z(math.pi / 2) @ [0.005, 0.005, 0.08]),
                               atol=1e-9)
    assert head.rgba == (0.95, 0.8, 0.65, 1.0)
    assert (ROOT / "assets" / "urdf" / "meshes" / "head.stl").stat().st_size < 1024


def _ascii_stl(path: Path):
    path.write_text("solid wedge\n"
                    "facet normal 0 0 1\n outer loop\n  vertex 0 0 0\n  vertex 2 0 0\n  vertex 0 1 0.5\n"
                    " endloop\nendfacet\n"
                    "facet normal 0 0 1\n outer loop\n  vertex -1 0 0\n  vertex 2 1 0\n  vertex 0 1 3\n"
                    " endloop\nendfacet\nendsolid wedge\n")


def _binary_stl(path: Path, triangles):
    # many CAD exporters start binary STL headers with "solid" too; the reader must not take them for ASCII
    out = bytearray(b"solid part exported as binary".ljust(80, b" ")) + struct.pack("<I", len(triangles))
    for t in triangles:
        out += struct.pack("<3f", 0, 0, 0) + b"".join(struct.pack("<3f", *v) for v in t) + struct.pack("<H", 0)
    path.write_bytes(bytes(out))


def _mesh_link(filename, scale="", origin='<origin xyz="1 2 3" rpy="0 0 0"/>'):
    scale = f' scale="{scale}"' if scale else ""
    return link("a", extra=f'<visual>{origin}<geometry><mesh filename="{filename}"{scale}/></geometry></visual>')


def test_mesh_ascii_stl_relative_path_and_scale(tmp_path):
    (tmp_path / "meshes").mkdir()
    _ascii_stl(tmp_path / "meshes" / "wedge.stl")
    m = core.load_urdf(write(tmp_path, _mesh_link("meshes/wedge.stl", scale="2 -1 0.5")))
    s, = m.shapes
    # vertices span x [-1, 2], y [0, 1], z [0, 3]; scaled by (2, -1, 0.5): x [-2, 4], y [-1, 0], z [0, 1.5]
    np.testing.assert_allclose(s.size["size"], [6, 1, 1.5])
    np.testing.assert_allclose(s.p_LS, [1 + 1, 2 - 0.5, 3 + 0.75])


def test_mesh_package_path_searched_upward(tmp_path):
    pkg = tmp_path / "my_robot_description"
    (pkg / "urdf" / "nested").mkdir(parents=True)
    (pkg / "meshes").mkdir()
    _binary_stl(pkg / "meshes" / "part.STL", [[(0, 0, 0), (0.1, 0, 0), (0, 0.2, -0.3)]])
    urdf = write(pkg / "urdf" / "nested", _mesh_link("package://my_robot_description/meshes/part.STL",
                                                     origin='<origin rpy="0 0 3.141592653589793"/>'))
    s, = core.load_urdf(urdf).shapes
    np.testing.assert_allclose(s.size["size"], [0.1, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(s.p_LS, [-0.05, -0.1, -0.15], rtol=1e-6, atol=1e-15)


@pytest.mark.parametrize("filename, reason", [("meshes/missing.stl", "not found"),
                                              ("package://nowhere/meshes/a.stl", "searched for a folder 'nowhere'"),
                                              ("part.dae", "could not be read")])
def test_mesh_fallback_small_box_with_warning(tmp_path, filename, reason):
    (tmp_path / "part.dae").write_text("<COLLADA/>")
    with pytest.warns(URDFWarning, match=reason) as record:
        m = core.load_urdf(write(tmp_path, _mesh_link(filename)))
    assert any(filename in str(w.message) for w in record)
    s, = m.shapes
    assert s.kind == "box" and s.size == {"size": (0.05, 0.05, 0.05)}
    np.testing.assert_allclose(s.p_LS, [1, 2, 3])


def test_degenerate_or_unknown_visual_geometry_is_skipped(tmp_path):
    visuals = ('<visual><geometry><box size="0 1 1"/></geometry></visual>'
               '<visual><geometry><capsule radius="0.1" length="0.3"/></geometry></visual>'
               '<visual><geometry><sphere radius="0.1"/></geometry></visual>')
    with pytest.warns(URDFWarning) as record:
        m = core.load_urdf(write(tmp_path, link("a", extra=visuals)))
    assert len(record) == 2 and "visual[1]" in str(record[0].message) and "capsule" in str(record[1].message)
    assert [s.kind for s in m.shapes] == ["sphere"]


def test_root_link_named_world_is_the_world(tmp_path):
    p = write(tmp_path, link("world", mass=None) + link("a") + link("b") + joint("weld", "world", "a", "fixed")
              + joint("j", "a", "b", extra='<axis xyz="0 0 1"/>'))
    m = core.load_urdf(p)
    assert m.link_names == ("a", "b") and m.joint_names == ["j"]
    assert m.parent[0] == -1 and m.joint_link_names[0] == "weld"
    with pytest.raises(SceneError) as exc:
        core.load_urdf(p, floating_base=True)
    assert problems_of(exc)[0][0] == "robot/link[@name='world']"


# ---------------------------------------------------------------------------------------------- bad input
def test_not_xml(tmp_path):
    p = tmp_path / "bad.urdf"
    p.write_text("<robot name='x'><link name='a'></robot")
    with pytest.raises(SceneError, match="not a valid XML") as exc:
        core.load_urdf(p)
    assert problems_of(exc)[0][0] == "robot"


def test_missing_file(tmp_path):
    with pytest.raises(SceneError, match="cannot read"):
        core.load_urdf(tmp_path / "nope.urdf")


def test_not_a_robot(tmp_path):
    p = tmp_path / "x.urdf"
    p.write_text("<model/>")
    with pytest.raises(SceneError, match="<robot>"):
        core.load_urdf(p)


def test_unknown_parent_and_child_links(tmp_path):
    p = write(tmp_path, link("a") + link("b") + joint("elbow", "upper", "b") + joint("wrist", "a", "hand"))
    with pytest.raises(SceneError) as exc:
        core.load_urdf(p)
    found = problems_of(exc)
    assert ("robot/joint[@name='elbow']/parent", "upper") in found
    assert ("robot/joint[@name='wrist']/child", "hand") in found
    assert "elbow" in str(exc.value) and "upper" in str(exc.value)


def test_two_roots(tmp_path):
    p = write(tmp_path, link("a") + link("b") + link("c") + joint("j", "a", "b"))
    with pytest.raises(SceneError, match="root") as exc:
        core.load_urdf(p)
    assert problems_of(exc) == [("robot/link[@name='c']", "c")]


def test_loop(tmp_path):
    p = write(tmp_path, link("root") + link("a") + link("b") + link("c") + joint("j0", "root", "a")
              + joint("j1", "b", "c") + joint("j2", "c", "b"))
    with pytest.raises(SceneError, match="loop") as exc:
        core.load_urdf(p)
    (path, value), = problems_of(exc)
    assert path in ("robot/joint[@name='j1']/child", "robot/joint[@name='j2']/child") and value in ("b", "c")


def test_link_with_two_parents(tmp_path):
    p = write(tmp_path, link("a") + link("b") + link("c") + joint("j1", "a", "b") + joint("j2", "a", "c")
              + joint("j3", "c", "b"))
    with pytest.raises(SceneError, match="already the child") as exc:
        core.load_urdf(p)
    assert problems_of(exc) == [("robot/joint[@name='j3']/child", "b")]


def test_unknown_and_planar_joint_types(tmp_path):
    p = write(tmp_path, link("a") + link("b") + link("c") + joint("hip", "a", "b", "spherical")
              + joint("slide", "a", "c", "planar"))
    with pytest.raises(SceneError) as exc:
        core.load_urdf(p)
    found = problems_of(exc)
    assert ("robot/joint[@name='hip']/@type", "spherical") in found
    assert ("robot/joint[@name='slide']/@type", "planar") in found
    assert "planar joints are not supported (joint 'slide')" in str(exc.value)


def test_malformed_numbers(tmp_path):
    p = write(tmp_path, link("a") + link("b") + joint("j", "a", "b", extra='<origin xyz="0 0" rpy="0 x 0"/>'))
    with pytest.raises(SceneError) as exc:
        core.load_urdf(p)
    assert problems_of(exc) == [("robot/joint[@name='j']/origin/@xyz", "0 0"),
                                ("robot/joint[@name='j']/origin/@rpy", "0 x 0")]


def test_shared_validation_reported_at_urdf_element(tmp_path):
    bad = ('<link name="b"><inertial><mass value="1"/>'
           '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="5"/></inertial></link>')
    p = write(tmp_path, link("a") + bad + joint("j", "a", "b", extra='<axis xyz="0 0 0"/>'))
    with pytest.raises(SceneError) as exc:
        core.load_urdf(p)
    paths = [path for path, _ in problems_of(exc)]
    assert sorted(paths) == ["robot/joint[@name='j']", "robot/link[@name='b']/inertial"]
    assert "triangle inequality" in str(exc.value) and "non-zero direction" in str(exc.value)


def test_joint_moving_no_mass_is_refused_at_compile(tmp_path):
    p = write(tmp_path, link("a") + link("b", mass=None) + joint("j", "a", "b"))
    spec = urdf_to_spec(p)                           # a massless link is valid in itself…
    assert spec.bodies[1].inertial.mass == 0
    with pytest.raises(SceneError, match="moves no mass"):
        core.load_urdf(p)                            # …but not a joint that moves only massless links


# ---------------------------------------------------------------------------------------------- vs Pinocchio
class PinocchioMap:
    """Maps our coordinates to Pinocchio's by joint name (its ``idx_q`` / ``idx_v``), converting free joints:
    ours q = [x y z qw qx qy qz], qd = [ω_C; v_C]; Pinocchio's q = [x y z qx qy qz qw], v = [v_C; ω_C]."""

    def __init__(self, model: core.Model, pmodel, root_free: bool):
        self.model, self.pmodel = model, pmodel
        self.perm = np.full(model.nv, -1)                # ours v index -> Pinocchio v index
        self.joints = []
        for name in model.joint_names:
            pname = "root_joint" if root_free and name == model.joint_link_names[0] else name
            assert pmodel.existJointName(pname), f"Pinocchio has no joint {pname!r}"
            pj = pmodel.joints[pmodel.getJointId(pname)]
            qs, vs = model.q_slice(name), model.qd_slice(name)
            assert vs.stop - vs.start == pj.nv
            if pj.nv == 6:
                self.perm[vs.start:vs.start + 3] = np.arange(pj.idx_v + 3, pj.idx_v + 6)
                self.perm[vs.start + 3:vs.stop] = np.arange(pj.idx_v, pj.idx_v + 3)
            else:
                self.perm[vs] = np.arange(pj.idx_v, pj.idx_v + pj.nv)
            self.joints.append((qs, pj.idx_q, pj.nq))
        assert sorted(self.perm) == list(range(pmodel.nv)) and model.nv == pmodel.nv

    def q(self, q: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pmodel.nq)
        for qs, iq, nq in self.joints:
            x = q[qs]
            if nq == 1:
                out[iq] = x[0]
            elif nq == 2:                                # continuous joint: (cos θ, sin θ)
                out[iq:iq + 2] = math.cos(x[0]), math.sin(x[0])
            elif nq == 7:
                out[iq:iq + 7] = np.concatenate([x[:3], x[4:7], x[3:4]])
            else:
                raise AssertionError(f"unexpected Pinocchio joint with nq={nq}")
        return out

    def v(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.pmodel.nv)
        out[self.perm] = v
        return out

    def back(self, v_pin: np.ndarray) -> np.ndarray:
        """A Pinocchio velocity-space vector (v, a, τ) or the columns of a matrix, in our order."""
        return v_pin[..., self.perm]


def random_state(model: core.Model, rng):
    q = np.zeros(model.nq)
    for i in range(model.n_links):
        qs, nq, jt = model.q_start[i], model.nq_j[i], model.joint_type[i]
        if jt == core.model.HINGE:
            q[qs] = rng.uniform(-math.pi, math.pi)
        elif jt == core.model.SLIDER:
            q[qs] = rng.uniform(-0.3, 0.3)
        elif jt == core.model.FREE:
            quat = rng.normal(size=4)
            q[qs:qs + 7] = np.concatenate([rng.uniform(-1, 1, 3), quat / np.linalg.norm(quat)])
        else:
            assert nq == 0
    return q, rng.normal(size=model.nv) * 2.0, rng.normal(size=model.nv) * 3.0, rng.normal(size=model.nv) * 20.0


def assert_close_rel(ours, ref, what):
    err = np.abs(np.asarray(ours) - np.asarray(ref)).max() / max(np.abs(ref).max(), 1e-300)
    assert err <= RTOL, f"{what}: relative discrepancy {err:.3g} > {RTOL}"
    return err


CASES = [(ARM, False), (ARM, True), (TORSO, False), (TORSO, True), (BOOM, False), (BOOM, True)]
POINTS = {ARM: [("link3", (0.1, -0.2, 0.05)), ("gripper", (0.03, 0.0, 0.12)), ("tcp", (0.0, 0.0, 0.0)),
                ("link7", (-0.02, 0.04, 0.1))],
          TORSO: [("head", (0.05, 0.02, 0.1)), ("l_forearm", (0.0, 0.01, -0.22)), ("r_forearm", (0.02, 0.0, -0.2)),
                  ("torso", (0.1, 0.1, 0.3)), ("base", (0.2, -0.1, 0.0))],
          BOOM: [("rotor", (0.05, -0.02, 0.01)), ("payload", (0.1, 0.08, -0.06)), ("counterweight", (-0.1, 0, 0))]}


def pinocchio_model(path: Path, floating_base: bool):
    if floating_base:
        return pinocchio.buildModelFromUrdf(str(path), pinocchio.JointModelFreeFlyer())
    return pinocchio.buildModelFromUrdf(str(path))


@pytest.mark.parametrize("path, floating_base", CASES, ids=[f"{p.stem}-{'floating' if f else 'fixed'}"
                                                            for p, f in CASES])
def test_dynamics_match_pinocchio(path, floating_base):
    model = load(path, floating_base)
    pm = pinocchio_model(path, floating_base)
    pm.gravity.linear = np.array(model.gravity)
    pd = pm.createData()
    mp = PinocchioMap(model, pm, floating_base)
    rng = np.random.default_rng(20240611)
    for _ in range(6):
        q, qd, qdd, tau = random_state(model, rng)
        pq, pv = mp.q(q), mp.v(qd)
        M = pinocchio.crba(pm, pd, pq)
        M = np.triu(M) + np.triu(M, 1).T
        assert_close_rel(core.mass_matrix(model, q), mp.back(mp.back(M).T).T, "mass matrix")
        assert_close_rel(core.inverse_dynamics(model, q, qd, qdd),
                         mp.back(pinocchio.rnea(pm, pd, pq, pv, mp.v(qdd))), "inverse dynamics")
        assert_close_rel(core.forward_dynamics(model, q, qd, tau),
                         mp.back(pinocchio.aba(pm, pd, pq, pv, mp.v(tau))), "forward dynamics")
        assert_close_rel(core.kinetic_energy(model, q, qd), pinocchio.computeKineticEnergy(pm, pd, pq, pv),
                         "kinetic energy")
        if floating_base:           # with a fixed base, Pinocchio leaves the welded root link out of these
            assert_close_rel(core.potential_energy(model, q), pinocchio.computePotentialEnergy(pm, pd, pq),
                             "potential energy")
            assert_close_rel(core.center_of_mass(model, q), pinocchio.centerOfMass(pm, pd, pq), "centre of mass")


@pytest.mark.parametrize("path, floating_base", CASES, ids=[f"{p.stem}-{'floating' if f else 'fixed'}"
                                                            for p, f in CASES])
def test_point_jacobians_match_pinocchio(path, floating_base):
    model = load(path, floating_base)
    pm = pinocchio_model(path, floating_base)
    frames = []
    for body, point in POINTS[path]:                 # a frame at the point, on the body's frame
        fid = pm.getFrameId(body, pinocchio.FrameType.BODY)
        assert fid < len(pm.frames), f"Pinocchio has no body frame {body!r}"
        parent = pm.frames[fid]
        placement = parent.placement * pinocchio.SE3(np.eye(3), np.array(point))
        frames.append(pm.addFrame(pinocchio.Frame(f"{body}_test_point", parent.parentJoint, fid, placement,
                                                  pinocchio.FrameType.OP_FRAME)))
    pd = pm.createData()
    mp = PinocchioMap(model, pm, floating_base)
    rng = np.random.default_rng(7)
    world_aligned = pinocchio.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for _ in range(4):
        q, qd, qdd, _ = random_state(model, rng)
        pq, pv = mp.q(q), mp.v(qd)
        pinocchio.forwardKinematics(pm, pd, pq, pv, mp.v(qdd))
        pinocchio.updateFramePlacements(pm, pd)
        for (body, point), fid in zip(POINTS[path], frames):
            assert_close_rel(core.point_position(model, q, body, point), pd.oMf[fid].translation, "point position")
            assert_close_rel(core.point_acceleration(model, q, qd, qdd, body, point),
                             pinocchio.getFrameClassicalAcceleration(pm, pd, fid, world_aligned).linear,
                             f"point acceleration of {body}")
            J = pinocchio.computeFrameJacobian(pm, pd, pq, fid, world_aligned)[:3]
            assert_close_rel(core.point_jacobian(model, q, body, point), mp.back(J), f"point Jacobian of {body}")
            assert_close_rel(core.point_velocity(model, q, qd, body, point), J @ pv, f"point velocity of {body}")


# ---------------------------------------------------------------------------------------------- mesh files
def test_obj_mesh_with_its_own_colour_and_bounds(tmp_path):
    (tmp_path / "part.obj").write_text("mtllib part.mtl\nv 0 0 0\nv 1 0 0\nv 0 2 0\nv 0 0 3\nusemtl red\n"
                                       "f 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n")
    (tmp_path / "part.mtl").write_text("newmtl red\nKd 0.8 0.1 0.1\n")
    m = core.load_urdf(write(tmp_path, _mesh_link("part.obj", origin='<origin xyz="1 0 0"/>')))
    s, = m.shapes
    assert s.kind == "mesh"
    np.testing.assert_allclose(s.size["size"], [1, 2, 3])
    np.testing.assert_allclose(s.p_LS, [1.5, 1, 1.5])
    assert s.rgba[0] > 0.7 and s.rgba[1] < 0.2              # the material's red, as no URDF material is given


@pytest.mark.parametrize("name, data", [
    ("noise.stl", bytes(range(256)) * 7),
    ("lying_count.stl", b"x" * 80 + struct.pack("<I", 10 ** 9) + b"\0" * 100),
    ("bad.obj", b"v 1 2\nf 1 2 9\nv nan nan nan\n"),
    ("empty.dae", b""),
    ("xml_bomb.dae", b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;'
                     b'&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><COLLADA>&c;</COLLADA>'),
    ("binary.glb", b"glTF\x02\0\0\0\xff\xff\xff\x7f" + b"\0" * 64),
])
def test_hostile_mesh_files_are_boxes_with_a_warning(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    with pytest.warns(URDFWarning, match="could not be read") as record:
        m = core.load_urdf(write(tmp_path, _mesh_link(name)))
    assert any(name in str(w.message) for w in record)
    s, = m.shapes
    assert s.kind == "box" and s.size == {"size": (0.05, 0.05, 0.05)}


def _panda_like(tmp_path, extra_joint="", q_limits=(-3.07, -0.07)):
    """Two links on revolute joints, the second with a Panda-like range that excludes 0 (joint4's)."""
    lower, upper = q_limits
    arm = ('<link name="{0}"><inertial><origin xyz="0.15 0 0"/><mass value="{1}"/><inertia ixx="0.01" ixy="0" '
           'ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')
    return write(tmp_path, link("base") + arm.format("l1", 2.0) + arm.format("l2", 1.5) +
                 '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/>'
                 '<limit lower="-2.9" upper="2.9" effort="87" velocity="2.2"/>'
                 '<dynamics damping="0.5" friction="0.1"/></joint>'
                 '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>'
                 f'<origin xyz="0.3 0 0"/><limit lower="{lower}" upper="{upper}" effort="12" velocity="2.6"/>'
                 f'{extra_joint}</joint>')


def test_limits_efforts_and_damping_are_imported(tmp_path):
    """Issue 24: <limit lower upper> is the joint's range (a start outside it, here the default 0, is moved to
    the nearest bound with a warning), effort a <joint>_motor actuator with that limit, <dynamics damping> a
    <joint>_passive damper; friction is named as not imported. A continuous joint has no range."""
    path = _panda_like(tmp_path)
    with pytest.warns(URDFWarning) as said:
        spec = urdf_to_spec(path)
    text = " ".join(str(w.message) for w in said)
    assert "joint(s) j2 (0 → -0.07)" in text and "friction" in text and "(joints: j1)" in text
    joints = {b.joint.name: b.joint for b in spec.bodies}
    assert joints["j1"].limits == (-2.9, 2.9) and joints["j2"].limits == (-3.07, -0.07)
    assert joints["j2"].q0 == -0.07
    forces = {f.name: f for f in spec.forces}
    assert set(forces) == {"j1_motor", "j1_passive", "j2_motor"}
    assert forces["j1_motor"].limit == 87 and forces["j2_motor"].limit == 12 and forces["j2_motor"].joint == "j2"
    assert forces["j1_passive"].damping == 0.5 and forces["j1_passive"].stiffness == 0
    # a given q0 outside the range is the user's: refused at the joint's element
    with pytest.raises(SceneError, match="outside the limits") as info:
        urdf_to_spec(path, q0={"j2": 0.5})
    assert info.value.problems[0].path.startswith("robot/joint[@name='j2']")
    cont = write(tmp_path, link("a") + link("b") + joint("spin", "a", "b", "continuous"), "cont.urdf")
    spin = urdf_to_spec(cont).bodies[1]
    assert spin.joint.limits is None
    assert [f.name for f in urdf_to_spec(cont).forces] == ["spin_motor"]


def test_a_limp_joint_stops_at_its_limit(tmp_path):
    """Before issue 24 a limp Panda joint fell through its range to about 1500 rad in a run; now the limit rows
    hold it: 3 s under gravity with the motors commanded 0, every joint within its range, and a limit reached."""
    path = _panda_like(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        model = core.load_urdf(path)
    sim = core.Simulation(model, dt=1e-3)
    sim.run(3.0)
    q = sim.state.q
    assert -2.9 - 1e-6 <= q[model.q_slice("j1")][0] <= 2.9 + 1e-6
    assert -3.07 - 1e-6 <= q[model.q_slice("j2")][0] <= -0.07 + 1e-6
    assert any(e.kind in ("limit", "limit-bounce") for e in sim.events)


def test_a_controller_is_clipped_at_the_joint_effort(tmp_path):
    """A PD controller without torque_limit on a URDF robot drives each joint no harder than its <limit effort>
    (the motor's strength); a torque_limit given in the scene is the scene's."""
    path = _panda_like(tmp_path)
    doc = tmp_path / "scene.json"
    pd = ('{"type": "pd", "name": "hold", "kp": 1e4, "kd": 10, "trajectory": {"type": "set_point", '
          '"q": [1.0, -1.0]}%s}')
    for extra, limits in (("", [87.0, 12.0]), (', "torque_limit": 500', [500.0, 500.0])):
        doc.write_text('{"format_version": 1, "name": "s", "robot": {"file": "robot.urdf"}, '
                       '"controllers": [%s]}' % (pd % extra))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", URDFWarning)
            model = core.load_scene(doc)
        np.testing.assert_allclose(model.controllers[0].torque_limit, limits)
        data = core.evaluate(model, model.initial_state())
        np.testing.assert_allclose(np.abs(data.tau_control), limits)
