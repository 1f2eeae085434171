"""Bodies welded to other bodies by fixed joints are merged into their links (core.scene.compile; Model.frames,
Model.body_frame): a scene with such bodies moves exactly as the same scene written with their mass folded by hand
into the parent, their points, shapes and planes expressed in the parent; imported robots have as many links as
Pinocchio has bodies; the studio still picks and outlines a merged body by its own name.

The folded scenes are built here with plain NumPy and SciPy's rotations (mass, centre of mass and inertia about it
by the parallel-axis theorem), not with the compiler's spatial helpers, so an error in the merge shows up as a
difference of trajectories."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import core
from core.scene import SceneError, compile_scene, parse_spec


# ---- rotations and mass properties, by hand ---------------------------------------------------------------------
def quat(axis, angle) -> list[float]:
    """(w, x, y, z) of a rotation by ``angle`` about ``axis``."""
    x, y, z, w = Rotation.from_rotvec(angle * np.asarray(axis, float) / np.linalg.norm(axis)).as_quat()
    return [w, x, y, z]


def rot(q) -> np.ndarray:
    w, x, y, z = q
    return Rotation.from_quat([x, y, z, w]).as_matrix()


def quat_of(R) -> list[float]:
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return [w, x, y, z]


def placement(joint) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of a fixed joint's child in its parent."""
    return rot(joint.get("orientation", [1, 0, 0, 0])), np.array(joint.get("position", [0, 0, 0]), float)


def compose(outer, inner):
    (R1, p1), (R2, p2) = outer, inner
    return R1 @ R2, p1 + R1 @ p2


def inertia_matrix(six) -> np.ndarray:
    Ixx, Iyy, Izz, Ixy, Ixz, Iyz = six
    return np.array([[Ixx, Ixy, Ixz], [Ixy, Iyy, Iyz], [Ixz, Iyz, Izz]])


def box_part(shape) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """(mass, com, inertia about the com, shape rotation) of a solid box shape, in its body frame."""
    a, b, c = shape["size"]
    m = shape["density"] * a * b * c
    R = rot(shape.get("orientation", [1, 0, 0, 0]))
    I = m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    return m, np.array(shape.get("position", [0, 0, 0]), float), R @ I @ R.T


def sphere_part(shape):
    m, r = shape["mass"], shape["radius"]
    return m, np.array(shape.get("position", [0, 0, 0]), float), 0.4 * m * r * r * np.eye(3)


def body_parts(body) -> list:
    """(mass, com, inertia about the com) of a body's inertial or of each of its shapes, in the body frame."""
    if "inertial" in body:
        i = body["inertial"]
        return [(i["mass"], np.array(i.get("com", [0, 0, 0]), float), inertia_matrix(i.get("inertia", [0] * 6)))]
    return [box_part(s) if s["type"] == "box" else sphere_part(s) for s in body["shapes"]]


def fold(parts) -> dict:
    """The inertial of rigidly joined parts ``(mass, com, I_com, R, p)`` (each part's properties in its own frame,
    placed at (R, p)): total mass, its centre and the inertia about it (parallel axes)."""
    M = sum(m for m, *_ in parts)
    coms = [p + R @ c for m, c, _, R, p in parts]
    com = sum(m * x for (m, *_), x in zip(parts, coms)) / M
    I = np.zeros((3, 3))
    for (m, _, Ic, R, _), x in zip(parts, coms):
        d = x - com
        I += R @ Ic @ R.T + m * (d @ d * np.eye(3) - np.outer(d, d))
    return {"mass": M, "com": com.tolist(), "inertia": [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]}


def trajectory(model, duration: float) -> tuple[np.ndarray, core.Simulation]:
    sim = core.Simulation(model)
    qs = [sim.state.q.copy()]
    while sim.state.t < duration - 1e-12:
        sim.step()
        qs.append(sim.state.q.copy())
    return np.array(qs), sim


# ---- a chain with welded bodies against the same chain folded by hand ---------------------------------------------
def _chain() -> dict:
    """A world-welded stand with a lamp welded to it; a torso on a ball joint under the lamp, with a plate (box
    shape) and on it a knob welded to it; an arm on a hinge under the knob, with a hand (sphere) welded to it.
    Offsets and rotations everywhere, and an initial velocity."""
    return {"format_version": 1, "name": "welded", "gravity": [0, 0, -9.81],
            "simulation": {"dt": 0.001, "integrator": "rk4"}, "bodies": [
        {"name": "stand", "joint": {"type": "fixed", "position": [0, 0, 1.5], "orientation": quat([0, 0, 1], 0.4)},
         "inertial": {"mass": 1.0}},
        {"name": "lamp", "parent": "stand",
         "joint": {"type": "fixed", "position": [0.1, -0.05, 0.2], "orientation": quat([1, 1, 0], 0.7)},
         "inertial": {"mass": 0.3, "com": [0.01, 0.02, 0.03], "inertia": [0.01, 0.02, 0.015, 0.001, 0.0, 0.002]},
         "points": {"bulb": [0, 0, 0.1]}},
        {"name": "torso", "parent": "lamp",
         "joint": {"type": "ball", "position": [0, 0, -0.1], "orientation": quat([0, 1, 1], 0.3),
                   "q0": quat([1, 2, 3], 0.5), "qd0": [0.3, -0.8, 1.1]},
         "inertial": {"mass": 2.0, "com": [0, 0, -0.2], "inertia": [0.05, 0.06, 0.02, 0.001, 0.002, 0.003]}},
        {"name": "plate", "parent": "torso",
         "joint": {"type": "fixed", "position": [0.15, 0.02, -0.3], "orientation": quat([1, 0, 1], 1.1)},
         "shapes": [{"type": "box", "size": [0.2, 0.1, 0.04], "density": 800, "position": [0.02, 0, 0.01],
                     "orientation": quat([0, 1, 0], 0.3)}],
         "points": {"tip": [0.1, 0.05, 0]}},
        {"name": "knob", "parent": "plate",
         "joint": {"type": "fixed", "position": [0, 0.05, 0.02], "orientation": quat([1, -1, 2], -0.6)},
         "inertial": {"mass": 0.4, "com": [0.01, 0, 0.02], "inertia": [0.002, 0.003, 0.004, 1e-4, -2e-4, 3e-4]},
         "points": {"end": [0.03, -0.01, 0.05]}},
        {"name": "arm", "parent": "knob",
         "joint": {"type": "hinge", "axis": [0.3, 1, 0.2], "position": [0.05, 0, 0.1],
                   "orientation": quat([0, 0, 1], 0.8), "q0": 0.4, "qd0": -1.0},
         "inertial": {"mass": 1.2, "com": [0, 0, -0.25], "inertia": [0.02, 0.02, 0.004, 0, 0, 0]}},
        {"name": "hand", "parent": "arm",
         "joint": {"type": "fixed", "position": [0, 0.02, -0.5], "orientation": quat([1, 0, 0], 0.9)},
         "shapes": [{"type": "sphere", "radius": 0.05, "mass": 0.5, "position": [0, 0, -0.03]}],
         "points": {"finger": [0.02, 0, -0.08]}}]}


def _folded_chain(doc) -> tuple[dict, dict]:
    """The same chain written by hand without welded bodies, and where each welded body's frame sits in its new
    body: name → (body, R, p)."""
    b = {x["name"]: x for x in doc["bodies"]}
    ident = (np.eye(3), np.zeros(3))
    frames = {"stand": ("stand", *ident), "torso": ("torso", *ident), "arm": ("arm", *ident)}
    frames["lamp"] = ("stand", *placement(b["lamp"]["joint"]))
    frames["plate"] = ("torso", *placement(b["plate"]["joint"]))
    frames["knob"] = ("torso", *compose(frames["plate"][1:], placement(b["knob"]["joint"])))
    frames["hand"] = ("arm", *placement(b["hand"]["joint"]))

    def folded(name):
        parts = [(m, c, I, frames[n][1], frames[n][2]) for n in frames if frames[n][0] == name
                 for m, c, I in body_parts(b[n])]
        return fold(parts)

    def points(name):
        return {f"{n}_{k}": (frames[n][2] + frames[n][1] @ np.array(v)).tolist()
                for n in frames if frames[n][0] == name for k, v in b[n].get("points", {}).items()}

    def joint_in(parent_of, joint):
        """A joint placed in a welded body, placed in that body's new body instead."""
        _, R, p = frames[parent_of]
        out = dict(joint)
        out["orientation"] = quat_of(R @ rot(joint["orientation"]))
        out["position"] = (p + R @ np.array(joint["position"])).tolist()
        return out

    torso_joint = joint_in("lamp", b["torso"]["joint"])
    torso_joint["qd0"] = (frames["lamp"][1] @ np.array(b["torso"]["joint"]["qd0"])).tolist()   # parent-frame ω
    out = copy.deepcopy(doc)
    out["bodies"] = [
        {"name": "stand", "joint": b["stand"]["joint"], "inertial": folded("stand"), "points": points("stand")},
        {"name": "torso", "parent": "stand", "joint": torso_joint, "inertial": folded("torso"),
         "points": points("torso")},
        {"name": "arm", "parent": "torso", "joint": joint_in("knob", b["arm"]["joint"]), "inertial": folded("arm"),
         "points": points("arm")}]
    return out, frames


def test_welded_bodies_are_merged_into_their_links():
    doc = _chain()
    model = compile_scene(parse_spec(doc))
    assert model.link_names == ("stand", "torso", "arm")               # the world-welded stand stays a link
    assert model.body_names == ("stand", "torso", "arm", "lamp", "plate", "knob", "hand")
    assert [model.link_index(n) for n in ("lamp", "plate", "knob", "hand")] == [0, 1, 1, 2]
    assert model.joint_names == ["torso", "arm"] and model.nv == 4
    _, frames = _folded_chain(doc)
    for name in ("lamp", "plate", "knob", "hand"):
        k, R, p = model.body_frame(name)
        assert model.link_names[k] == frames[name][0]
        np.testing.assert_allclose(R, frames[name][1], atol=1e-15)
        np.testing.assert_allclose(p, frames[name][2], atol=1e-15)
    k, R, p = model.body_frame("torso")
    assert k == 1 and np.array_equal(R, np.eye(3)) and not p.any()
    # every shape is still its document body's, and sits where that body puts it
    by_body = {s.body: s for s in model.shapes}
    assert set(by_body) == {"plate", "hand"} and by_body["plate"].link == 1 and by_body["hand"].link == 2
    R_TP, p_TP = frames["plate"][1:]
    shape = doc["bodies"][3]["shapes"][0]
    np.testing.assert_allclose(by_body["plate"].R_LS, R_TP @ rot(shape["orientation"]), atol=1e-15)
    np.testing.assert_allclose(by_body["plate"].p_LS, p_TP + R_TP @ np.array(shape["position"]), atol=1e-15)


def test_merged_chain_moves_as_the_chain_folded_by_hand():
    """Same q, and the same world positions of the welded bodies' named points and of points given by
    coordinates in their frames, along 0.4 s of a chaotic swing; mass, centre of mass and inertia per link agree."""
    doc = _chain()
    folded, frames = _folded_chain(doc)
    merged, plain = compile_scene(parse_spec(doc)), compile_scene(parse_spec(folded))
    assert merged.link_names == plain.link_names and plain.frames == {}
    np.testing.assert_allclose(merged.mass, plain.mass, rtol=1e-15)
    np.testing.assert_allclose(merged.com, plain.com, atol=1e-15)
    np.testing.assert_allclose(merged.tree.inertia_com, plain.tree.inertia_com, atol=1e-15)
    np.testing.assert_allclose(merged.q0, plain.q0, atol=1e-15)
    np.testing.assert_allclose(merged.qd0, plain.qd0, atol=1e-15)
    qa, _ = trajectory(merged, 0.4)
    qb, _ = trajectory(plain, 0.4)
    assert np.ptp(qa[:, 4]) > 0.3                                      # the arm swings
    np.testing.assert_allclose(qa, qb, rtol=0, atol=1e-12)
    r = np.array([0.03, -0.02, 0.05])
    for q in qa[::50]:
        for body, point in (("lamp", "bulb"), ("plate", "tip"), ("knob", "end"), ("hand", "finger")):
            link, R, p = frames[body]
            np.testing.assert_allclose(core.point_position(merged, q, body, point),
                                       core.point_position(plain, q, link, f"{body}_{point}"), atol=1e-14)
            np.testing.assert_allclose(core.point_position(merged, q, body, r),
                                       core.point_position(plain, q, link, p + R @ r), atol=1e-14)
            np.testing.assert_allclose(core.point_jacobian(merged, q, body, r),
                                       core.point_jacobian(plain, q, link, p + R @ r), atol=1e-13)


def test_merged_bodies_are_named_like_links_and_errors_list_them():
    """Look-ups by name take merged bodies (their orientation is the link's turned by R_LB), and the messages
    about unknown names list them with the links; a merged body's inertial parameters are its link's."""
    from core.control.parameters import ParameterizationError, parse_linear
    from core.programs import Controls

    doc = _chain()
    model = compile_scene(parse_spec(doc))
    with pytest.raises(KeyError, match=r"no body 'paw'; bodies: stand, torso, arm, lamp, plate, knob, hand"):
        model.link_index("paw")
    with pytest.raises(KeyError, match=r"body 'plate' has no point 'toe'; its points: \['tip'\]"):
        model.resolve_point("plate", "toe")
    sim = core.Simulation(model)
    sim.step()
    controls = Controls(model, sim.state, None, None, [])
    R_WT = controls.orientation("torso")
    _, frames = _folded_chain(doc)
    np.testing.assert_allclose(controls.orientation("knob"), R_WT @ frames["knob"][1], atol=1e-15)
    o = controls.point("knob", np.zeros(3))[0]                     # the knob's axes, from three of its points
    np.testing.assert_allclose(np.array([controls.point("knob", e)[0] - o for e in np.eye(3)]).T,
                               controls.orientation("knob"), atol=1e-14)
    with pytest.raises(ParameterizationError, match="'knob' in 'knob.m' is fixed to 'torso' and merged into its "
                                                    "parameters: write torso.m"):
        parse_linear("knob.m + arm.m", model)
    doc["view"] = {"follow": "hand"}
    assert compile_scene(parse_spec(doc)).spec.view.follow == "hand"
    doc["view"] = {"follow": "paw"}
    with pytest.raises(SceneError, match="unknown body; expected one of: stand, torso, arm, lamp, plate, knob, hand"):
        compile_scene(parse_spec(doc))


def test_a_joint_that_moves_no_mass_is_reported_at_its_own_body_after_a_merge():
    """The singular-inertia check names the document body of the link (the welded body before it is no link)."""
    doc = {"format_version": 1, "name": "spindle", "bodies": [
        {"name": "base", "joint": {"type": "hinge", "axis": [1, 0, 0]}, "inertial": {"mass": 1, "com": [0, 0, 0.1]}},
        {"name": "weld", "parent": "base", "joint": {"type": "fixed", "position": [0, 0, 0.2]},
         "inertial": {"mass": 1}},
        {"name": "spin", "parent": "weld", "joint": {"type": "hinge", "name": "twirl"},      # a point on its axis
         "inertial": {"mass": 1, "com": [0, 0, 0.1]}}]}
    with pytest.raises(SceneError) as exc:
        compile_scene(parse_spec(doc))
    problem, = exc.value.problems
    assert problem.path == "$.bodies[2].joint (body 'spin')" and "joint 'twirl' moves no mass" in problem.message


# ---- constraints, forces and contacts at points of welded bodies --------------------------------------------------
def _box(size, density, **pose) -> dict:
    return {"type": "box", "size": list(size), "density": density, **pose}


GLIDE = [0, 0.05, -0.1]                      # the rod point held on a plane
ROD_JOINT = {"type": "fixed", "position": [0.1, 0, 0.2], "orientation": quat([1, 0, 0], 0.5)}


def _glide_origin() -> list[float]:
    """The world position of the rod's glide point at q0 (the bob at (1, 0, 1), unrotated): the plane's origin."""
    R, p = placement(ROD_JOINT)
    return (np.array([1.0, 0, 1.0]) + p + R @ np.array(GLIDE, float)).tolist()


def _rigs() -> dict:
    """An arm on a hinge with a foot welded to its end and a pad welded on the foot; a puck dropped on the pad's
    top face; a bob on a free joint with a rod welded to it, held by a nail at the rod's pin and on a plane by a
    rod point. A spring pulls the foot's toe, a force pushes the pad, drag slows the foot, and the foot's corners
    strike the ground."""
    return {"format_version": 1, "name": "rigs", "gravity": [0, 0, -9.81],
            "simulation": {"dt": 0.0005, "integrator": "rk4"}, "bodies": [
        {"name": "arm", "joint": {"type": "hinge", "axis": [0, 1, 0], "position": [0, 0, 1.0], "q0": 0.5},
         "shapes": [_box((0.08, 0.08, 0.6), 1000, position=[0, 0, -0.3])]},
        {"name": "foot", "parent": "arm",
         "joint": {"type": "fixed", "position": [0, 0, -0.6], "orientation": quat([0, 1, 0.1], -0.5)},
         "shapes": [_box((0.3, 0.12, 0.05), 1000, position=[0.02, 0, 0], orientation=quat([0, 0, 1], 0.2))],
         "points": {"toe": [0.15, 0, -0.025]}},
        {"name": "pad", "parent": "foot",
         "joint": {"type": "fixed", "position": [0, 0, 0.06], "orientation": quat([0, 0, 1], 0.4)},
         "shapes": [_box((0.2, 0.2, 0.02), 300, position=[0.01, 0, 0.01])]},
        {"name": "puck", "joint": {"type": "free", "q0": [0.28, 0.0, 0.55, 1, 0, 0, 0]},
         "shapes": [{"type": "sphere", "radius": 0.03, "mass": 0.05}]},
        {"name": "bob", "joint": {"type": "free", "q0": [1.0, 0, 1.0, 1, 0, 0, 0], "qd0": [0.5, -0.3, 0.2, 0, 0, 0]},
         "shapes": [_box((0.1, 0.1, 0.1), 500)]},
        {"name": "rod", "parent": "bob", "joint": ROD_JOINT,
         "shapes": [_box((0.02, 0.02, 0.3), 2000)], "points": {"pin": [0, 0, 0.15]}}],
        "constraints": [
            {"type": "nail", "name": "pin", "body": "rod", "point": "pin"},
            {"type": "point_on_plane", "name": "glide", "body": "rod", "point": GLIDE,
             "origin": _glide_origin(), "normal": [0.2, 0.1, 1.0]}],
        "forces": [
            {"type": "spring", "name": "pull", "body_a": "foot", "point_a": "toe", "body_b": "world",
             "point_b": [0.6, 0, 0.3], "stiffness": 40.0, "damping": 0.5},
            {"type": "point_force", "name": "push", "body": "pad", "point": [0.05, 0.05, 0.01],
             "force": [0.0, 3.0, -2.0], "stop": 0.2},
            {"type": "drag", "name": "air", "body": "foot", "point": [-0.1, 0.03, 0], "linear": 0.8}],
        "contacts": [
            {"name": "ground", "body": "foot", "plane": {"origin": [0, 0, 0.42]}, "friction": 0.6},
            {"name": "landing", "body": "puck", "plane": {"body": "pad", "face": "+z"}, "friction": 0.3}]}


def _folded_rigs(doc) -> dict:
    """The rigs written by hand without welded bodies: the foot's and pad's shapes on the arm, the rod's on the
    bob, every point and the pad's face in the arm's or bob's frame."""
    b = {x["name"]: x for x in doc["bodies"]}
    T_foot = placement(b["foot"]["joint"])
    T_pad = compose(T_foot, placement(b["pad"]["joint"]))
    T_rod = placement(b["rod"]["joint"])

    def at(T, r):
        return (T[1] + T[0] @ np.array(r, float)).tolist()

    def moved(T, shape):
        out = dict(shape)
        out["orientation"] = quat_of(T[0] @ rot(shape.get("orientation", [1, 0, 0, 0])))
        out["position"] = at(T, shape.get("position", [0, 0, 0]))
        return out

    out = copy.deepcopy(doc)
    arm, puck, bob = copy.deepcopy(b["arm"]), b["puck"], copy.deepcopy(b["bob"])
    arm["shapes"] += [moved(T_foot, b["foot"]["shapes"][0]), moved(T_pad, b["pad"]["shapes"][0])]
    arm["points"] = {"toe": at(T_foot, b["foot"]["points"]["toe"])}
    bob["shapes"] += [moved(T_rod, b["rod"]["shapes"][0])]
    bob["points"] = {"pin": at(T_rod, b["rod"]["points"]["pin"])}
    out["bodies"] = [arm, puck, bob]
    nail, glide = out["constraints"]
    nail["body"], glide["body"], glide["point"] = "bob", "bob", at(T_rod, glide["point"])
    pull, push, air = out["forces"]
    pull["body_a"] = "arm"
    push["body"], push["point"] = "arm", at(T_pad, push["point"])
    air["body"], air["point"] = "arm", at(T_foot, air["point"])
    ground, landing = out["contacts"]
    foot = b["foot"]["shapes"][0]                       # the foot box's corners, in the arm's frame
    h = 0.5 * np.array(foot["size"])
    T_box = compose(T_foot, (rot(foot["orientation"]), np.array(foot["position"])))
    ground["body"], ground["points"] = "arm", [at(T_box, h * (sx, sy, sz)) for sx in (-1, 1) for sy in (-1, 1)
                                               for sz in (-1, 1)]
    pad = b["pad"]["shapes"][0]                         # the pad box's top face: its centre and normal, arm frame
    landing["plane"] = {"body": "arm", "origin": at(T_pad, np.array(pad["position"]) + [0, 0, 0.5 * pad["size"][2]]),
                        "normal": (T_pad[0] @ [0, 0, 1.0]).tolist()}
    return out


def _lasting(events: list) -> list:
    """The events without a stick at once undone by a slip of the same contact at the same instant (a sliding
    impact resolved as a stick whose force is at once outside the cone: which of the two the impact's cone test
    reports at its edge is round-off, and the motion is the same)."""
    out = []
    for e in events:
        if (out and e.kind == "slip" and out[-1].kind == "stick" and e.get("contact") == out[-1].get("contact")
                and abs(e.t - out[-1].t) < 1e-9):
            out.pop()
            continue
        out.append(e)
    return out


def test_constraints_forces_and_contacts_at_welded_bodies_act_as_at_their_links():
    doc = _rigs()
    folded = _folded_rigs(doc)
    merged, plain = compile_scene(parse_spec(doc)), compile_scene(parse_spec(folded))
    assert merged.link_names == ("arm", "puck", "bob") == plain.link_names
    assert merged.constraint_names == plain.constraint_names
    for a, b in zip(merged.constraints, plain.constraints):          # every row at the same link point
        assert (a.link_a, a.link_b) == (b.link_a, b.link_b), a.name
        np.testing.assert_allclose(a.r_a, b.r_a, atol=1e-15)
        np.testing.assert_allclose(a.r_b, b.r_b, atol=1e-15)
        np.testing.assert_allclose(a.basis, b.basis, atol=1e-15)
    qa, sa = trajectory(merged, 0.6)
    qb, sb = trajectory(plain, 0.6)
    ea, eb = _lasting(sa.events), _lasting(sb.events)
    kinds = [(e.kind, e.get("contact")) for e in ea]
    assert ("touchdown", "ground") in kinds and ("touchdown", "landing") in kinds   # both contacts came into play
    assert kinds == [(e.kind, e.get("contact")) for e in eb]
    np.testing.assert_allclose([e.t for e in ea], [e.t for e in eb], atol=1e-12)
    np.testing.assert_allclose(qa, qb, rtol=0, atol=1e-12)
    pin = core.point_position(merged, qa[-1], "rod", "pin")
    np.testing.assert_allclose(pin, core.point_position(merged, merged.q0, "rod", "pin"), atol=1e-3)   # held (it falls 1.7 m unheld)


# ---- imported robots: as many links as Pinocchio has bodies ---------------------------------------------------------
# (also the robots of tests/benchmarks/bench_robots.py)
ROBOT_FILES = {"talos": "talos_data/robots/talos_reduced.urdf", "panda": "panda_description/urdf/panda.urdf",
               "go2": "go2_description/urdf/go2.urdf", "solo12": "solo_description/robots/solo12.urdf"}


@pytest.mark.parametrize("robot", sorted(ROBOT_FILES))
@pytest.mark.parametrize("floating", [False, True])
def test_imported_robots_have_pinocchios_bodies_as_links(robot, floating):
    """Pinocchio merges fixed links too: its moving bodies (``nbodies`` − the universe) are our links, plus the
    root link that a fixed base welds to the world. Every URDF link is still a body of the model by name, and the
    links' mass is Pinocchio's (which leaves out what a fixed base welds to the world: our root link)."""
    pinocchio = pytest.importorskip("pinocchio")
    from test_robots import ROBOTS
    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    path = ROBOTS / ROBOT_FILES[robot]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # meshes drawn approximately, notes
        model = core.load_urdf(path, floating_base=floating)
    pm = (pinocchio.buildModelFromUrdf(str(path), pinocchio.JointModelFreeFlyer()) if floating
          else pinocchio.buildModelFromUrdf(str(path)))
    assert model.n_links == pm.nbodies - 1 + (0 if floating else 1)
    assert model.nv == pm.nv
    assert len(model.body_names) == len(model.spec.bodies) and len(model.frames) > 0
    moving = model.mass if floating else model.mass[1:]
    if not floating:
        assert model.parent[0] == -1 and model.joint_type[0] == core.model.FIXED
    assert moving.sum() == pytest.approx(pinocchio.computeTotalMass(pm, pm.createData()), rel=1e-12)


# ---- the studio: a merged body is picked and outlined by its own name ------------------------------------------------
@pytest.mark.gui
def test_the_studio_picks_and_outlines_a_merged_body(qtbot, gl_renderer, tmp_path):
    """Clicking the foot (merged into the arm) selects the foot in the document, and selecting it outlines the
    foot's shape alone, not the arm's; a spring end dropped on the foot is attached to the foot, at the point under
    the mouse in the foot's own frame."""
    from PySide6.QtCore import QPoint, QSettings, Qt
    from PySide6.QtTest import QTest
    from studio.qt.window.main_window import MainWindow
    from test_studio import FIRST_USE_MS, show

    doc = _rigs()
    path = tmp_path / "rigs.json"
    path.write_text(__import__("json").dumps(doc))
    model = core.load_scene(path)
    win = MainWindow(model, None, path=path, settings=QSettings(str(tmp_path / "studio.ini"),
                                                                QSettings.Format.IniFormat))
    win.file_actions.ask_to_save = lambda: "discard"
    show(qtbot, win, 1280, 800)
    qtbot.waitUntil(lambda: win.sim_thread.latest is not None, timeout=FIRST_USE_MS)
    view = win.viewport
    arm, foot = (next(k for k, s in enumerate(view.model.shapes) if s.body == name) for name in ("arm", "foot"))
    assert view.hit(*view.screen_position(view._poses[arm][:3, 3]), handles=False)[3] == "arm"
    X = view._poses[foot]                               # the foot box's side that faces the camera
    x, y = view.screen_position(X[:3, 3] + X[:3, :3] @ [0.0, -0.055, 0.0])
    found = view.hit(x, y, handles=False)
    assert found is not None and found[0] == "body" and found[3] == "foot"
    assert found[1] == view.model.link_index("arm")                   # it moves with the arm
    QTest.mouseClick(view, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(round(x), round(y)))
    assert win.selection.path == ("bodies", 1)                       # the foot, not the arm
    assert view._selected_body == "foot" and view._selected_link == view.model.link_index("arm")
    outlined = [s.body for s in view.model.shapes if s.body == view._selected_body]
    assert outlined == ["foot"] and view.overlays.selection.visible()
    win.selection.set(("bodies", 0))
    assert view._selected_body == "arm" and view._selected_link == view.model.link_index("arm")
    # the spring's end dropped on the foot: attached to the foot, at the point under the mouse in the foot's frame
    attached = []
    view.spring_end_attached.connect(lambda *args: attached.append(args))
    k = view.overlays.last.spring_names.index("pull")
    view._moved = True
    view._finish_spring(("spring", k, "a", found[2], np.array([0.0, 1.0, 0.0])), x, y)
    (name, end, body, r), = attached
    q = view._q
    o = core.point_position(view.model, q, "foot", np.zeros(3))
    R = np.array([core.point_position(view.model, q, "foot", e) - o for e in np.eye(3)]).T
    assert (name, end, body) == ("pull", "a", "foot")
    np.testing.assert_allclose(r, R.T @ (view.hit(x, y, handles=False)[2] - o), atol=1e-9)
    assert win.document.spec.forces[0].body_a == "foot"
    np.testing.assert_allclose(win.document.spec.forces[0].point_a, r, atol=1e-6)     # written to µm
