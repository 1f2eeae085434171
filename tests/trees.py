"""Random kinematic trees for identity tests (in the spirit of spatial_v2's autoTree): every joint type, random
placements, axes and mass properties, built as scene documents so the tests exercise the compiler too."""
from __future__ import annotations

import numpy as np

import core
from core.scene import compile_scene, parse_spec

JOINTS = ("hinge", "slider", "ball", "free", "fixed")


def _unit(rng, n):
    v = rng.normal(size=n)
    return v / np.linalg.norm(v)


def random_inertial(rng) -> dict:
    """Random physical mass properties: principal moments from random box-like dimensions, rotated."""
    m = rng.uniform(0.2, 3.0)
    a, b, c = rng.uniform(0.05, 0.6, size=3)
    I_p = m / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    I = Q @ np.diag(I_p) @ Q.T
    return {"mass": float(m), "com": rng.uniform(-0.3, 0.3, 3).tolist(),
            "inertia": [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]}


def random_tree_spec(rng, n_links: int, joints=JOINTS, gravity=(0.0, 0.0, -9.81), branching=0.5,
                     armature: float = 0.0) -> dict:
    """A random tree of ``n_links`` bodies; each picks a parent among earlier bodies (or the world for the
    first), so the tree has branches with probability ``branching``. With ``armature`` > 0 the hinges and
    sliders get armature ``armature``·(1, 2, 3)/3 in turn (drawing nothing from ``rng``: the same tree)."""
    bodies = []
    for i in range(n_links):
        if i == 0:
            parent = "world"
        elif rng.uniform() < branching:
            parent = f"b{rng.integers(0, i)}"
        else:
            parent = f"b{i - 1}"
        jt = str(rng.choice(joints))
        joint = {"type": jt, "position": rng.uniform(-0.5, 0.5, 3).tolist(), "orientation": _unit(rng, 4).tolist()}
        if jt in ("hinge", "slider"):
            joint["axis"] = _unit(rng, 3).tolist()
            joint["q0"] = float(rng.uniform(-1, 1))
            if armature > 0:
                joint["armature"] = armature * (1 + i % 3) / 3
        bodies.append({"name": f"b{i}", "parent": parent, "joint": joint, "inertial": random_inertial(rng),
                       "points": {"p": rng.uniform(-0.4, 0.4, 3).tolist()}})
    return {"format_version": 1, "name": "random_tree", "gravity": list(gravity), "bodies": bodies}


def random_tree(rng, n_links: int, **kw) -> core.Model:
    return compile_scene(parse_spec(random_tree_spec(rng, n_links, **kw)))


def random_state(rng, model: core.Model) -> tuple[np.ndarray, np.ndarray]:
    """A random configuration (unit quaternions) and velocity."""
    q = rng.uniform(-1.5, 1.5, model.nq)
    for s in model.quat_starts:
        q[s:s + 4] = _unit(rng, 4)
    return q, rng.normal(size=model.nv)
