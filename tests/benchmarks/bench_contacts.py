"""Contact scenes against MuJoCo, in one process and one run: the cost of whole runs and what each engine's
contacts do to the motion.

    .venv/bin/python tests/benchmarks/bench_contacts.py --markdown
    .venv/bin/python tests/benchmarks/bench_contacts.py [--cases bouncing_ball,sliding_block] [--repeats 5] [--quick]
    .venv/bin/python tests/benchmarks/bench_contacts.py --check      # the two sides' models and states at t = 0

Cases (1 ms steps and RK4 on both sides; the same bodies, masses, inertias, initial states and gravity):

- ``bouncing_ball``: scenes/bouncing_ball.json, a 1 kg ball (r = 0.1 m) dropped from 1 m, e = 0.8, 6 s;
- ``sliding_block``: scenes/sliding_block.json, a 1 kg 0.2 x 0.2 x 0.1 m box launched at 2 m/s, μ = 0.3, 1.5 s;
- ``resting_block``: the same block at rest on the ground, 2 s;
- ``twenty_balls``: scenes/box_of_balls.json, twenty free balls dropped onto the floor, its own duration (8 s);
- ``raibert_hopper``: scenes/raibert_hopper.json, ours only (its control program has no MuJoCo twin), 12 s;
  the target is 40 µs per step or less.

Ours: ``core.Simulation(model, dt=1e-3, integrator="rk4").run(T, record_every=<all steps>)``, a fresh
simulation each repeat. MuJoCo: each model written here as MJCF with ``<option integrator="RK4"
timestep="0.001"/>`` and MuJoCo's default soft contacts, run by ``mujoco.rollout.rollout`` over all steps in one
call (the state of every step recorded), or by a Python loop over ``mujoco.mj_step`` when that module is missing
(the output says which). The friction of the floor is the body's (MuJoCo takes the larger of two geoms'), and a
frictionless contact of ours has ``condim="1"`` there. Both sides run once before any timing (compilation and
warm-up excluded); the times are the minimum of interleaved repeats, µs per 1 ms step of simulated time; the
ratio is ours / MuJoCo (the contacts issue's target: 2 or less).

The physics beside the times, from a run that records every step (ours, at the ends of the steps) and from
MuJoCo's states: the largest penetration (a ball: radius − the lowest height of its centre; the block: minus
the height of its lowest corner; negative: never below the plane). Our contacts are exact — event-switched hard
constraints, impacts with Newton's restitution, Coulomb friction that sticks — and penetrate by round-off;
MuJoCo's are soft (a spring-damper-like constraint with ``solref = 0.02 1``): its bodies sink into the ground
and its impacts are inelastic whatever the scene's restitution. For the ball: the first impact's time and the
first rebound's apex (its centre; analytic √(2(h − r)/g) = 0.4284 s and r + e²(h − r) = 0.676 m); for the
sliding block: the time its speed falls below 0.1 mm/s and the distance it slid (analytic v₀/(μg) = 0.680 s
and v₀²/(2μg) = 0.680 m). Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import core
from core.scene import compile_scene, parse_spec

SCENES = Path(__file__).resolve().parents[2] / "scenes"
DT, G = 1e-3, 9.81
STOPPED = 1e-4                        # m/s: the sliding block has stopped below this speed


@dataclass
class Case:
    name: str
    doc: dict                         # the scene document ours is compiled from (and the MuJoCo twin written from)
    duration: float                   # s
    quick: float                      # s, with --quick
    twin: bool = True                 # a MuJoCo twin exists


def scene_doc(name: str) -> dict:
    return json.loads((SCENES / f"{name}.json").read_text())


def make_cases() -> dict[str, Case]:
    resting = scene_doc("sliding_block")
    resting["name"] = "resting_block"
    resting["bodies"][0]["joint"]["qd0"] = [0.0] * 6
    balls = scene_doc("box_of_balls")
    cases = [Case("bouncing_ball", scene_doc("bouncing_ball"), 6.0, 1.0),
             Case("sliding_block", scene_doc("sliding_block"), 1.5, 1.0),
             Case("resting_block", resting, 2.0, 0.5),
             Case("twenty_balls", balls, balls.get("simulation", {}).get("duration", 4.0), 1.0),
             Case("raibert_hopper", scene_doc("raibert_hopper"), 12.0, 2.0, twin=False)]
    return {c.name: c for c in cases}


# ---- geometry of free bodies: q = [x, y, z, qw, qx, qy, qz]; our q̇ = [ω, v] in the body frame ----------------
def rotate(quat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rows of ``v`` turned by the unit quaternions in the rows of ``quat`` (w, x, y, z)."""
    w, u = quat[..., :1], quat[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def free_bodies(doc: dict) -> list[dict]:
    """Per body: its name, contact (friction) and shape (sphere radius or box half-sizes), checked as this
    benchmark needs them (free bodies on the ground plane)."""
    out = []
    for body in doc["bodies"]:
        assert body["parent"] == "world" and body["joint"]["type"] == "free", body["name"]
        (shape,) = body["shapes"]
        assert not any(shape.get("position", [0, 0, 0])), "shapes at the body origin only"
        (contact,) = [c for c in doc["contacts"] if c["body"] == body["name"]]
        out.append({"name": body["name"], "shape": shape, "mu": contact.get("friction", 0.0),
                    "corners": np.array(list(body.get("points", {}).values()) or np.zeros((0, 3)))})
    return out


def penetration(doc: dict, q: np.ndarray) -> float:
    """The largest penetration over the rows of ``q`` (n x nq) and the bodies (negative: always above)."""
    worst = -np.inf
    for i, body in enumerate(free_bodies(doc)):
        p, quat = q[:, 7 * i:7 * i + 3], q[:, 7 * i + 3:7 * i + 7]
        if body["shape"]["type"] == "sphere":
            worst = max(worst, float(np.max(body["shape"]["radius"] - p[:, 2])))
        else:
            z = [p[:, 2] + rotate(quat, np.broadcast_to(c, p.shape))[:, 2] for c in body["corners"]]
            worst = max(worst, float(np.max(-np.min(z, axis=0))))
    return worst


# ---- the MuJoCo twin ------------------------------------------------------------------------------------------
def mujoco_twin(model: core.Model, doc: dict, energy: bool = False):
    """MuJoCo model and data of ``doc``'s free bodies, with our masses and inertias, at our initial state."""
    import mujoco
    bodies, xml = free_bodies(doc), []
    for k, b in enumerate(bodies):
        m, c = model.mass[k], model.com[k]
        i_c = model.inertia[k][:3, :3] - m * (c @ c * np.eye(3) - np.outer(c, c))    # about the centre of mass
        s = b["shape"]
        size = f'{s["radius"]}' if s["type"] == "sphere" else " ".join(str(x / 2) for x in s["size"])
        contact = f'condim="3" friction="{b["mu"]} 0.005 0.0001"' if b["mu"] > 0 else 'condim="1"'
        fullinertia = " ".join(repr(float(x)) for x in (*np.diag(i_c), i_c[0, 1], i_c[0, 2], i_c[1, 2]))
        xml.append(f'<body name="{b["name"]}"><freejoint/>'
                   f'<inertial pos="{c[0]} {c[1]} {c[2]}" mass="{m}" fullinertia="{fullinertia}"/>'
                   f'<geom type="{s["type"]}" size="{size}" {contact} contype="1" conaffinity="0"/></body>')
    mu = min(b["mu"] for b in bodies)
    floor = f'condim="3" friction="{mu} 0.005 0.0001"' if mu > 0 else 'condim="1"'
    flag = '<flag energy="enable"/>' if energy else ""
    gravity = " ".join(str(x) for x in doc["gravity"])
    mm = mujoco.MjModel.from_xml_string(
        f'<mujoco><option timestep="{DT}" integrator="RK4" gravity="{gravity}">{flag}</option><worldbody>'
        f'<geom name="floor" type="plane" size="0 0 1" {floor} contype="0" conaffinity="1"/>'
        f'{"".join(xml)}</worldbody></mujoco>')
    md = mujoco.MjData(mm)
    for k in range(len(bodies)):
        q, qd = model.q0[7 * k:7 * k + 7], model.qd0[6 * k:6 * k + 6]
        md.qpos[7 * k:7 * k + 7] = q
        md.qvel[6 * k:6 * k + 6] = np.concatenate([rotate(q[3:], qd[3:]), qd[:3]])  # [v world, ω body]
    mujoco.mj_forward(mm, md)
    return mm, md


def has_rollout() -> bool:
    try:
        import mujoco.rollout  # noqa: F401
        return True
    except ImportError:
        return False


class MujocoRun:
    """Whole runs of a twin from its initial state: ``go()`` fills ``states`` (steps x nstate: t, qpos, qvel …)."""

    def __init__(self, mm, md, steps: int):
        import mujoco
        self.mj, self.mm, self.md, self.steps = mujoco, mm, md, steps
        self.kind = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.state0 = np.empty(mujoco.mj_stateSize(mm, self.kind))
        mujoco.mj_getState(mm, md, self.state0, self.kind)
        self.states = np.empty((1, steps, self.state0.size))
        self.rollout = has_rollout()

    def go(self) -> None:
        if self.rollout:
            from mujoco import rollout
            rollout.rollout(self.mm, self.md, self.state0[None], nstep=self.steps, state=self.states)
            return
        mj, mm, md = self.mj, self.mm, self.md
        mj.mj_setState(mm, md, self.state0, self.kind)
        for i in range(self.steps):
            mj.mj_step(mm, md)
            mj.mj_getState(mm, md, self.states[0, i], self.kind)

    def trajectory(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """t, qpos, qvel of the initial state and every step."""
        nq, nv = self.mm.nq, self.mm.nv
        s = np.concatenate([self.state0[None], self.states[0]])
        return s[:, 0], s[:, 1:1 + nq], s[:, 1 + nq:1 + nq + nv]


# ---- physics beside the times ---------------------------------------------------------------------------------
def first_bounce(t, z, vz, r) -> tuple[float, float]:
    """The first impact's time (ballistic from the last free state to the touch z = r) and the first rebound's
    apex (the centre's highest z while it rises after it; nan if it never rises)."""
    free = np.abs(np.diff(vz) + G * np.diff(t)) < 1e-7                    # vz fell by g dt: no contact force
    if free.all():
        return np.nan, np.nan
    k = int(np.argmin(free))                                              # the last free state
    tau = (vz[k] + np.sqrt(vz[k] ** 2 + 2 * G * (z[k] - r))) / G
    up = np.flatnonzero(vz[k:] > 0)
    if up.size == 0:
        return t[k] + tau, np.nan
    j = k + up[0]
    down = np.flatnonzero(vz[j:] <= 0)
    i = j + (down[0] if down.size else len(vz) - j - 1)
    return t[k] + tau, float(np.max(z[j:i + 1]))


def stop(t, q, v_world) -> tuple[float, float]:
    """The time the block's horizontal speed first falls below STOPPED (from the last record above it, at the
    deceleration of the step before: records are at the ends of steps), and the distance it slid."""
    speed = np.hypot(v_world[:, 0], v_world[:, 1])
    below = np.flatnonzero((speed[1:] < STOPPED) & (speed[:-1] >= STOPPED))
    if below.size == 0 or below[0] == 0:
        return np.nan, float(np.hypot(*(q[-1, :2] - q[0, :2])))
    k = below[0]
    decel = (speed[k - 1] - speed[k]) / (t[k] - t[k - 1])
    return t[k] + (speed[k] - STOPPED) / decel, float(np.hypot(*(q[-1, :2] - q[0, :2])))


def physics(case: Case, ours: tuple, theirs: tuple | None) -> dict[str, str]:
    """The columns of physics: penetrations, and per case its bounce or its stop, ours / MuJoCo."""
    def fmt(values, form):
        return " / ".join("—" if v is None or np.isnan(v) else format(v, form) for v in values)

    sides = [ours] + ([theirs] if theirs is not None else [])
    out = {"penetration": fmt([penetration(case.doc, q) for _, q, _ in sides], ".1e") + " m", "motion": ""}
    if case.name == "bouncing_ball":
        r = case.doc["bodies"][0]["shapes"][0]["radius"]
        b = [first_bounce(t, q[:, 2], v[:, 2], r) for t, q, v in sides]
        out["motion"] = (f"impact {fmt([x[0] for x in b], '.5f')} s, apex {fmt([x[1] for x in b], '.4f')} m "
                         f"(0.42835 s, 0.6760 m; r = {r:g} m)")
    elif case.name == "sliding_block":
        s = [stop(t, q, v) for t, q, v in sides]
        out["motion"] = (f"stops {fmt([x[0] for x in s], '.3f')} s, slid {fmt([x[1] for x in s], '.4f')} m "
                         f"(0.680 s, 0.6796 m)")
    elif case.name == "resting_block":
        drift = [np.hypot(*(q[:, :2] - q[0, :2]).T).max() for _, q, _ in sides]
        out["motion"] = f"slides {fmt(drift, '.1e')} m (0)"
    else:
        speed = [np.abs(v[-1]).max() for _, _, v in sides]
        out["motion"] = f"largest speed at the end {fmt(speed, '.1e')} m/s"
    return out


def as_qvel(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Rows of our free bodies' q̇ ([ω, v body] each) as MuJoCo's qvel ([v world, ω body] each)."""
    return np.concatenate([part for k in range(q.shape[1] // 7) for part in
                           (rotate(q[:, 7 * k + 3:7 * k + 7], qd[:, 6 * k + 3:6 * k + 6]), qd[:, 6 * k:6 * k + 3])],
                          axis=1)


# ---- timing ---------------------------------------------------------------------------------------------------
def measure(case: Case, duration: float, repeats: int) -> dict:
    model = compile_scene(parse_spec(case.doc))
    steps = int(round(duration / DT))
    sim = core.Simulation(model, dt=DT, integrator="rk4")
    rec = sim.run(duration, record_every=1)                                # warm-up, and every step's state
    out = {"steps": steps, "events": len(sim.events), "ours": np.inf, "mujoco": np.nan}
    ours = (rec["t"], rec["q"], as_qvel(rec["q"], rec["qd"]) if case.twin else None)
    theirs = None
    if case.twin:
        run = MujocoRun(*mujoco_twin(model, case.doc), steps)
        run.go()                                                           # warm-up, and every step's state
        theirs = run.trajectory()
        out["mujoco"] = np.inf
    for _ in range(repeats):                                               # interleaved
        sim = core.Simulation(model, dt=DT, integrator="rk4")
        t0 = time.perf_counter()
        sim.run(duration, record_every=steps)
        out["ours"] = min(out["ours"], (time.perf_counter() - t0) / steps)
        if case.twin:
            t0 = time.perf_counter()
            run.go()
            out["mujoco"] = min(out["mujoco"], (time.perf_counter() - t0) / steps)
    if case.twin:
        out.update(physics(case, ours, theirs))
    else:
        out.update(penetration="", motion=f"target ≤ 40 µs per step: {'met' if out['ours'] <= 40e-6 else 'not met'}")
    return out


# ---- check: the two sides at t = 0 ----------------------------------------------------------------------------
def check(case: Case) -> None:
    model = compile_scene(parse_spec(case.doc))
    mm, md = mujoco_twin(model, case.doc, energy=True)
    rec = core.Simulation(model, dt=DT, integrator="rk4").run(0.0, record_every=1)
    q, v = rec["q"][0], as_qvel(rec["q"], rec["qd"])[0]
    moments = [np.sort(np.linalg.eigvalsh(i[:3, :3])) for i in model.inertia]      # (the com is the origin here)
    diffs = {"mass": np.abs(model.mass - mm.body_mass[1:]).max(),
             "inertia": max(np.abs(m - np.sort(mm.body_inertia[k + 1])).max() for k, m in enumerate(moments)),
             "qpos": np.abs(q - md.qpos).max(), "qvel": np.abs(v - md.qvel).max(),
             "kinetic": abs(rec["energy_kinetic"][0] - md.energy[1]),
             "potential": abs(rec["energy_potential"][0] - md.energy[0])}
    print(f"{case.name}: {len(model.mass)} bodies, nq {model.nq} / {mm.nq}, nv {model.nv} / {mm.nv}, "
          f"geoms {mm.ngeom} (contype/conaffinity: bodies 1/0, floor 0/1 — bodies touch the floor only)")
    print(f"  mass {model.mass[0]:.6g} / {mm.body_mass[1]:.6g} kg; principal moments "
          f"{moments[0]} / {np.sort(mm.body_inertia[1])} kg m²")
    print(f"  q0   {np.array2string(q[:7], precision=4)} / {np.array2string(md.qpos[:7], precision=4)}")
    print(f"  q̇0   {np.array2string(v[:6], precision=4)} / {np.array2string(md.qvel[:6], precision=4)} "
          "([v world, ω body])")
    print(f"  kinetic {rec['energy_kinetic'][0]:.6f} / {md.energy[1]:.6f} J; potential "
          f"{rec['energy_potential'][0]:.6f} / {md.energy[0]:.6f} J")
    bad = {k: v for k, v in diffs.items() if not v < 1e-9}
    print(f"  largest differences: {', '.join(f'{k} {v:.1e}' for k, v in diffs.items())} — "
          f"{'MISMATCH in ' + ', '.join(bad) if bad else 'the same'}")


# ---- main -----------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    cases = make_cases()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(cases), help="comma-separated: " + ", ".join(cases))
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timed runs per case (at least 3)")
    parser.add_argument("--quick", action="store_true", help="short durations, for a smoke run")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--check", action="store_true", help="compare the two sides' models at t = 0 and exit")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.cases.split(",") if name.strip()]
    if unknown := [name for name in names if name not in cases]:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(cases)}")
    chosen = [cases[name] for name in names]
    import mujoco
    if args.check:
        for case in chosen:
            if case.twin:
                check(case)
        return 0
    repeats = max(3, args.repeats)
    how = "mujoco.rollout.rollout (one call per run)" if has_rollout() else "a Python loop over mujoco.mj_step"
    print(f"limbstudio vs MuJoCo {mujoco.__version__}, one process; 1 ms RK4 steps; MuJoCo by {how}; "
          f"minimum of {repeats} interleaved runs; µs per step; ratio = ours / MuJoCo (target ≤ 2)")
    print("ours: exact contacts (hard constraints switched by events); MuJoCo: default soft contacts "
          "(penetrate, inelastic); physics columns ours / MuJoCo, penetrations at the ends of steps (negative: never "
          "below the plane)")
    if "twenty_balls" in [c.name for c in chosen]:
        print("twenty_balls: the balls do not collide with each other on either side (ours: contacts with the "
              "ground plane only; MuJoCo: contype 1 / conaffinity 0 on the balls, 0 / 1 on the floor)")
    head = ["case", "s", "ours µs", "MuJoCo µs", "ratio", "events", "largest penetration", "motion"]
    widths = (15, 4, 9, 10, 6, 6, 24, 0)
    if not args.markdown:
        print("  ".join(f"{c:<{w}}" for c, w in zip(head, widths)))
    rows = []
    for case in chosen:
        duration = case.quick if args.quick else case.duration
        r = measure(case, duration, repeats)
        ratio = r["ours"] / r["mujoco"] if case.twin else np.nan
        rows.append([case.name, f"{duration:g}", f"{r['ours'] * 1e6:.1f}",
                     f"{r['mujoco'] * 1e6:.1f}" if case.twin else "—",
                     f"{ratio:.2f}" if case.twin else "—", str(r["events"]), r["penetration"], r["motion"]])
        if not args.markdown:
            print("  ".join(f"{c:<{w}}" for c, w in zip(rows[-1], widths)), flush=True)
    if args.markdown:
        print("\n| " + " | ".join(head) + " |\n|---|---:|---:|---:|---:|---:|---|---|")
        for row in rows:
            print("| `" + row[0] + "` | " + " | ".join(row[1:]) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
