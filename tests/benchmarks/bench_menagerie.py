"""MuJoCo Menagerie's scenes, ours beside MuJoCo's own, in one process and one run: does each robot run 2 s at its
own time step without diverging, stay above its floor, and come to rest — and what does a step cost against
``mj_step``?

    .venv/bin/pip install -e ".[mjcf]"
    .venv/bin/python tests/benchmarks/bench_menagerie.py MENAGERIE_DIR [--seconds 2] [--only go2,a1] [--markdown]

Every ``<folder>/scene.xml`` under MENAGERIE_DIR (a checkout of github.com/google-deepmind/mujoco_menagerie) is
opened as a user opens it (``core.load_scene``, as ``python -m studio scene.xml`` does): its floor the scene's
ground, its own time step, integrator, actuators and contact filters (``core/scene/mjcf.py``); what the importer
drops is counted from its warnings. Both engines start from the model's first keyframe if it has one
(its ``qpos`` and ``ctrl``: the pose a legged robot stands in, the commands that hold it), else from the model's
reference pose with zero commands, and run ``--seconds`` of simulated time:

- ours: :class:`core.Simulation` from that state, its contacts touching at the start closed
  (:func:`core.step.touching_at_start`), recording one row in a thousand; MuJoCo: ``mj_step`` in a loop (its
  default soft contacts, its own integrator).
- reported per scene: degrees of freedom, dt and integrator; ours — "ok", or how the run stopped (diverged,
  chatter, an error) and when; the lowest origin of a moving body over the run (sampled; a robot falling through
  its floor ends far below it; ours at the joints' anchors, MuJoCo's at the bodies' frames, which may differ by
  an offset); the largest joint speed at the end (at rest: small); the same figures for MuJoCo; µs per step of
  each (the wall time of the whole run, ours with its chunks' Python) and their ratio.

Not a test: nothing is asserted; a scene that fails to load or to run is reported with the reason and the next
one goes on. Models whose meshes are absent (a copy stripped of its mesh files) load with their primitive geoms.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import core
from core.model import State
from core.step import DivergenceError, touching_at_start


def _keyframe(mujoco, m):
    """``(qpos, ctrl)`` of the model's first keyframe, or its reference pose and zero commands."""
    if m.nkey > 0:
        return np.array(m.key_qpos[0], dtype=float), np.array(m.key_ctrl[0], dtype=float)
    return np.array(m.qpos0, dtype=float), np.zeros(m.nu)


def _our_state(mujoco, m, model, qpos) -> State:
    """Our configuration for MuJoCo's ``qpos``: per joint by name, a hinge or slide as qpos − qpos0 (the importer's
    coordinates), a free or ball joint's position and quaternion as they are."""
    q = np.array(model.q0, dtype=float)
    for j in range(m.njnt):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        if not name or name not in model.joint_names:
            continue
        a, kind = int(m.jnt_qposadr[j]), int(m.jnt_type[j])
        size = {int(mujoco.mjtJoint.mjJNT_FREE): 7, int(mujoco.mjtJoint.mjJNT_BALL): 4}.get(kind, 1)
        s = model.q_slice(name)
        q[s] = qpos[a:a + size] - (m.qpos0[a:a + size] if size == 1 else 0.0)
    return State(0.0, q, np.zeros(model.nv))


def _root_height(model, q) -> float:
    """The lowest origin of the links that can move (a robot through its floor: far below it)."""
    kin = core.points.link_kinematics(model, q)
    moving = [k for k in range(model.n_links) if k not in model.fixed_links]
    return float(kin.p_WL[moving, 2].min()) if moving else math.nan


def ours(path: Path, seconds: float, mujoco, m, qpos, ctrl) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = core.load_scene(path)
    dropped = sum(1 for w in caught if type(w.message).__name__ in ("MJCFWarning", "URDFWarning"))
    sim = core.Simulation(model)
    for k in range(m.nu):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, k)
        if name and k < len(ctrl) and ctrl[k] != 0.0:
            try:
                sim.set_actuator(name, float(ctrl[k]))
            except (KeyError, ValueError):
                pass
    sim.state, _ = touching_at_start(model, _our_state(mujoco, m, model, qpos), sim.inputs)
    out = {"dofs": model.nv, "dt": sim.dt, "integrator": sim.integrator, "warnings": dropped,
           "contacts": len(model.contacts), "status": "ok", "lowest": math.nan, "speed": math.nan, "us": math.nan}
    lowest = _root_height(model, sim.state.q)
    start = time.perf_counter()
    steps0 = sim.steps_taken
    chunk = max(0.05, min(0.25, seconds / 8))
    try:
        while sim.state.t < seconds - 1e-9:
            rec = sim.run(min(chunk, seconds - sim.state.t), record_every=1000)
            for q in rec["q"]:
                lowest = min(lowest, _root_height(model, q))
    except DivergenceError as exc:
        out["status"] = f"stopped at {sim.state.t:.3f} s: {str(exc).split(';')[0][:90]}"
    wall = time.perf_counter() - start
    taken = sim.steps_taken - steps0
    out.update(lowest=min(lowest, _root_height(model, sim.state.q)), speed=float(np.abs(sim.state.qd).max()),
               us=1e6 * wall / max(taken, 1), t=float(sim.state.t))
    return out


def theirs(seconds: float, mujoco, m, qpos, ctrl) -> dict:
    d = mujoco.MjData(m)
    if m.nkey > 0:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.ctrl[:] = ctrl
    mujoco.mj_forward(m, d)
    steps = int(round(seconds / m.opt.timestep))
    moving = [b for b in range(1, m.nbody) if m.body_weldid[b] != 0]     # (not welded to the world)
    lowest = float(d.xpos[moving, 2].min()) if moving else math.nan
    start = time.perf_counter()
    for k in range(steps):
        mujoco.mj_step(m, d)
        if k % 100 == 0 and moving:
            lowest = min(lowest, float(d.xpos[moving, 2].min()))
    wall = time.perf_counter() - start
    ok = bool(np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel)))
    return {"status": "ok" if ok else "diverged", "lowest": lowest, "speed": float(np.abs(d.qvel).max()),
            "us": 1e6 * wall / max(steps, 1)}


def scenes(root: Path, only: list[str] | None) -> list[Path]:
    found = sorted(p for p in root.glob("*/scene.xml"))
    if only:
        found = [p for p in found if any(o in p.parent.name for o in only)]
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("menagerie", help="a folder of Menagerie models (each <folder>/scene.xml)")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--only", help="comma-separated parts of folder names")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    try:
        import mujoco
    except ImportError:
        print("MuJoCo is not installed: pip install -e '.[mjcf]'", file=sys.stderr)
        return 2
    root = Path(args.menagerie)
    paths = scenes(root, args.only.split(",") if args.only else None)
    if not paths:
        print(f"{root}: no <folder>/scene.xml found", file=sys.stderr)
        return 2
    rows = []
    for path in paths:
        row = {"scene": path.parent.name}
        try:
            m = mujoco.MjModel.from_xml_path(str(path))
            qpos, ctrl = _keyframe(mujoco, m)
            row["mujoco"] = theirs(args.seconds, mujoco, m, qpos, ctrl)
            row["ours"] = ours(path, args.seconds, mujoco, m, qpos, ctrl)
        except Exception as exc:                      # reported, and the next scene goes on
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
        rows.append(row)
        _print(row, args.markdown, header=len(rows) == 1)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float))
    return 0


def _print(row: dict, markdown: bool, header: bool) -> None:
    cols = ["scene", "dofs", "dt, integrator", "ours", "lowest ours / MuJoCo (m)", "speed at the end ours / MuJoCo",
            "µs per step ours / MuJoCo", "ratio"]
    if header:
        print("| " + " | ".join(cols) + " |" if markdown else "  ".join(cols))
        if markdown:
            print("|" + "---|" * len(cols))
    if "error" in row:
        cells = [row["scene"], "", "", row["error"], "", "", "", ""]
    else:
        o, t = row["ours"], row["mujoco"]
        cells = [row["scene"], str(o["dofs"]), f"{o['dt'] * 1e3:g} ms, {o['integrator']}",
                 o["status"] + (f" ({o['warnings']} import warnings)" if o["warnings"] else ""),
                 f"{o['lowest']:.3f} / {t['lowest']:.3f}", f"{o['speed']:.2g} / {t['speed']:.2g}",
                 f"{o['us']:.0f} / {t['us']:.0f}", f"{o['us'] / t['us']:.1f}"]
    print("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells), flush=True)


if __name__ == "__main__":
    sys.exit(main())
