"""Benchmarks of the core against Pinocchio and MuJoCo, in one process and one run (ratios, not absolute times).

    .venv/bin/pip install -e ".[bench]"          # pin (Pinocchio), mujoco
    .venv/bin/python tests/benchmarks/bench_core.py [--sizes 2 7 20 50 100] [--drift-seconds 10] [--scaling]

For each N: a serial chain of N hinges with alternating axes (y, x), 1 m / 1 kg cylinders (radius 0.05 m) hanging
under gravity −9.81 z, started bent; the identical model is built for each engine.

- ``aba``: ``core.forward_dynamics`` vs ``pinocchio.aba`` at the same (q, q̇, τ) (results compared too);
- ``rk4 step``: ``core.Simulation.step`` (RK4, 1 ms; one Python call per step, with its full evaluation) vs
  ``mujoco.mj_step`` with ``integrator="RK4"``;
- ``rk4 step, nailed``: the same with the tip held by a point-to-nail constraint (ours: the compiled pipeline of
  core/forward.py — constraint rows, M⁻¹Jᵀ by O(N) ABA solves, the bounded eigen/SVD solve of A F = −B with
  critically damped stabilization, all four stages in one call) vs MuJoCo's default soft ``connect`` equality;
  and the tip drift of each over ``--drift-seconds`` of simulated time;
- ``batched``: the same two steps taken 1000 at a time in one call, every step recorded — ours
  ``Simulation.run`` (the records of core/records.py), MuJoCo's ``mujoco.rollout.rollout`` (the state of every
  step) — so that neither pays a Python call per step.

Ours is timed as a user calls it from Python: ``core.forward_dynamics``, ``Simulation.step`` and
``Simulation.run``, as MuJoCo's ``mj_step`` and ``rollout`` and Pinocchio's ``aba`` are.

Timings are the minimum over rounds of a timed loop, the engines alternating round by round, so a busy machine
affects both sides alike. ``--scaling`` also reports our cost per step against N up to 200 and against the
number of constraints. Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import core
from core.scene import compile_scene, parse_spec

R, L, M = 0.05, 1.0, 1.0
I_T = M * (3 * R * R + L * L) / 12          # cylinder inertia about its centre, transverse
I_A = M * R * R / 2                         # about its axis


def q_bent(n: int) -> np.ndarray:
    return 0.3 * np.sin(1.0 + 0.7 * np.arange(n))


def our_chain(n: int, nailed: bool = False) -> core.Model:
    bodies = []
    for i in range(n):
        bodies.append({"name": f"l{i}", "parent": "world" if i == 0 else f"l{i - 1}",
                       "joint": {"type": "hinge", "axis": [0, 1, 0] if i % 2 == 0 else [1, 0, 0],
                                 "position": [0, 0, 0] if i == 0 else [0, 0, -L], "q0": float(q_bent(n)[i])},
                       "inertial": {"mass": M, "com": [0, 0, -L / 2], "inertia": [I_T, I_T, I_A, 0, 0, 0]}})
    doc = {"format_version": 1, "name": f"chain{n}", "gravity": [0, 0, -9.81], "bodies": bodies}
    if nailed:
        doc["constraints"] = [{"type": "nail", "name": "tip", "body": f"l{n - 1}", "point": [0, 0, -L],
                               "stabilization": 20.0}]
    return compile_scene(parse_spec(doc))


def pinocchio_chain(n: int):
    import pinocchio as pin
    model = pin.Model()
    parent = 0
    for i in range(n):
        joint = pin.JointModelRY() if i % 2 == 0 else pin.JointModelRX()
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.0 if i == 0 else -L]))
        jid = model.addJoint(parent, joint, placement, f"j{i}")
        model.appendBodyToJoint(jid, pin.Inertia(M, np.array([0, 0, -L / 2]), np.diag([I_T, I_T, I_A])),
                                pin.SE3.Identity())
        parent = jid
    return model, model.createData()


def mujoco_chain(n: int, nailed: bool, tip_world=None):
    import mujoco
    body = ""
    for i in reversed(range(n)):
        axis = "0 1 0" if i % 2 == 0 else "1 0 0"
        pos = "0 0 0" if i == 0 else f"0 0 {-L}"
        site = '<site name="tip" pos="0 0 -1"/>' if i == n - 1 else ""
        body = (f'<body name="l{i}" pos="{pos}"><joint name="j{i}" type="hinge" axis="{axis}"/>'
                f'<inertial pos="0 0 {-L / 2}" mass="{M}" diaginertia="{I_T} {I_T} {I_A}"/>'
                f'<geom type="cylinder" fromto="0 0 0 0 0 {-L}" size="{R}" contype="0" conaffinity="0" mass="0"/>'
                f'{site}{body}</body>')
    nail_site = (f'<site name="nail" pos="{tip_world[0]} {tip_world[1]} {tip_world[2]}"/>' if nailed else "")
    equality = '<equality><connect site1="tip" site2="nail"/></equality>' if nailed else ""
    xml = (f'<mujoco><option timestep="0.001" integrator="RK4" gravity="0 0 -9.81"/>'
           f'<worldbody>{nail_site}{body}</worldbody>{equality}</mujoco>')
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:] = q_bent(n)
    mujoco.mj_forward(model, data)
    return model, data


def best_of(fn, reps: int, repeats: int = 5) -> float:
    """Minimum over ``repeats`` of the mean time (s) of ``reps`` calls."""
    fn()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def interleaved(ours, theirs, reps: int, rounds: int = 9) -> tuple[float, float]:
    """The minimum over ``rounds`` of the mean time (s) of ``reps`` calls of each, the two alternating round by
    round: a machine that slows down for a while slows both (a shared 2-core machine varies by tens of percent
    between seconds)."""
    ours()
    theirs()
    best_ours = best_theirs = np.inf
    for _ in range(rounds):
        for fn, which in ((ours, 0), (theirs, 1)):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            t = (time.perf_counter() - t0) / reps
            if which == 0:
                best_ours = min(best_ours, t)
            else:
                best_theirs = min(best_theirs, t)
    return best_ours, best_theirs


def bench_aba(n: int) -> dict:
    import pinocchio as pin
    ours = our_chain(n)
    pm, pd = pinocchio_chain(n)
    rng = np.random.default_rng(n)
    q, qd, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    err = np.abs(core.forward_dynamics(ours, q, qd, tau) - pin.aba(pm, pd, q, qd, tau)).max()
    reps = max(200, 20000 // n)
    t_ours = best_of(lambda: core.forward_dynamics(ours, q, qd, tau), reps)
    t_pin = best_of(lambda: pin.aba(pm, pd, q, qd, tau), reps)
    return {"ours_us": t_ours * 1e6, "ref_us": t_pin * 1e6, "ratio": t_ours / t_pin, "max_abs_diff": err}


def bench_step(n: int, nailed: bool, drift_seconds: float) -> dict:
    import mujoco
    from mujoco import rollout
    ours = our_chain(n, nailed)
    tip0 = core.point_position(ours, ours.q0, f"l{n - 1}", [0, 0, -L])
    mm, md = mujoco_chain(n, nailed, tip0)
    sim = core.Simulation(ours, dt=1e-3, integrator="rk4")
    reps = max(20, (2000 if not nailed else 200) // n)
    t_ours, t_mj = interleaved(sim.step, lambda: mujoco.mj_step(mm, md), reps)
    out = {"ours_us": t_ours * 1e6, "ref_us": t_mj * 1e6, "ratio": t_ours / t_mj}
    steps = 1000
    sim = core.Simulation(ours, dt=1e-3, integrator="rk4")
    sim.run(0.01)
    start = sim.snapshot()

    def ours_batch():
        sim.restore(start)
        sim.run(steps * 1e-3)

    kind = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state0 = np.zeros(mujoco.mj_stateSize(mm, kind))
    mujoco.mj_getState(mm, md, state0, kind)
    rollout.rollout(mm, md, state0[None], nstep=10)
    t_ob, t_mb = interleaved(ours_batch, lambda: rollout.rollout(mm, md, state0[None], nstep=steps), 1, 7)
    t_ob, t_mb = t_ob / steps, t_mb / steps
    out.update(batch_ours_us=t_ob * 1e6, batch_ref_us=t_mb * 1e6, batch_ratio=t_ob / t_mb)
    if nailed and drift_seconds > 0:
        sim = core.Simulation(ours, dt=1e-3, integrator="rk4")
        mm, md = mujoco_chain(n, nailed, tip0)
        steps = int(round(drift_seconds / 1e-3))
        drift_ours = drift_mj = 0.0
        site = mm.site("tip").id
        for _ in range(steps):
            sim.step()
            mujoco.mj_step(mm, md)
            drift_ours = max(drift_ours, float(np.linalg.norm(
                core.point_position(ours, sim.state.q, f"l{n - 1}", [0, 0, -L]) - tip0)))
            drift_mj = max(drift_mj, float(np.linalg.norm(md.site_xpos[site] - tip0)))
        out.update(drift_ours_m=drift_ours, drift_mujoco_m=drift_mj, drift_ratio=drift_mj / max(drift_ours, 1e-300))
    return out


def scaling(sizes, n_constraints=(0, 1, 2, 4, 8)) -> None:
    print("\nscaling: our cost per RK4 step against N (unconstrained)")
    for n in sizes:
        sim = core.Simulation(our_chain(n), dt=1e-3)
        print(f"  N = {n:4d}: {best_of(sim.step, max(5, 1000 // n), 3) * 1e6:10.1f} us/step")
    print("scaling: our cost per RK4 step of a 20-link chain against the number of point-on-plane constraints")
    for k in n_constraints:
        doc = our_chain(20).spec.model_dump(mode="json", exclude_defaults=True)
        doc["constraints"] = [{"type": "point_on_plane", "name": f"c{j}", "body": f"l{19 - 2 * j}", "point": [0, 0, -L],
                               "origin": [0, 0, 0], "normal": [0, 1, 0]} for j in range(k)]
        sim = core.Simulation(compile_scene(parse_spec(doc)), dt=1e-3)
        print(f"  K = {k:2d}: {best_of(sim.step, 20, 3) * 1e6:10.1f} us/step")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 7, 20, 50, 100])
    parser.add_argument("--drift-seconds", type=float, default=10.0)
    parser.add_argument("--scaling", action="store_true")
    args = parser.parse_args(argv)
    import mujoco
    import pinocchio
    print(f"limbstudio core vs pinocchio {pinocchio.__version__} and mujoco {mujoco.__version__} (one process); "
          "times in µs, ratio = ours / theirs")
    print(f"{'N':>4} | {'ABA':>6} {'pin':>6} {'ratio':>5} | {'RK4':>6} {'mj':>6} {'ratio':>5} | {'nailed':>6} "
          f"{'mj':>6} {'ratio':>5} | {'batch':>6} {'rollout':>7} {'ratio':>5} | {'nailed':>6} {'rollout':>7} "
          f"{'ratio':>5} | {'drift ours':>10} {'drift mj':>10}")
    for n in args.sizes:
        a = bench_aba(n)
        s = bench_step(n, False, 0)
        c = bench_step(n, True, args.drift_seconds if n == 20 else 0.0)
        drift = (f"{c['drift_ours_m']:10.2e} {c['drift_mujoco_m']:10.2e}" if "drift_ours_m" in c else f"{'':>10} {'':>10}")
        print(f"{n:4d} | {a['ours_us']:6.1f} {a['ref_us']:6.1f} {a['ratio']:5.2f} | {s['ours_us']:6.1f} "
              f"{s['ref_us']:6.1f} {s['ratio']:5.2f} | {c['ours_us']:6.1f} {c['ref_us']:6.1f} {c['ratio']:5.2f} | "
              f"{s['batch_ours_us']:6.1f} {s['batch_ref_us']:7.1f} {s['batch_ratio']:5.2f} | "
              f"{c['batch_ours_us']:6.1f} {c['batch_ref_us']:7.1f} {c['batch_ratio']:5.2f} | {drift}")
        assert a["max_abs_diff"] < 1e-8, a
    if args.scaling:
        scaling([2, 7, 20, 50, 100, 200])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
