"""ABA, RNEA and CRBA on real robots against Pinocchio, in one process and one run (ratios, not absolute times).

    .venv/bin/pip install -e ".[test]"            # pin (Pinocchio) and example-robot-data
    .venv/bin/python tests/benchmarks/bench_robots.py [--repeats 7] [--calls 300]

For Talos (talos_reduced), Panda, Go2 and Solo12 of ``example-robot-data``, fixed and floating base: the same URDF
loaded by ``core.load_urdf`` and by ``pinocchio.buildModelFromUrdf``, one random state (q, q̇, τ), and the time of
``core.forward_dynamics`` against ``pinocchio.aba`` (their results are compared too); with ``--all`` also
``core.inverse_dynamics`` against ``pinocchio.rnea`` and ``core.mass_matrix`` against ``pinocchio.crba``. Also
printed: our links
against Pinocchio's bodies (both merge fixed links into their parents; with a fixed base our root link, welded to
the world, is one more).

Timings are the minimum over repeats of a timed loop, interleaved between the engines, so a busy machine affects
both alike. Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import core

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_fixed_links import ROBOT_FILES  # noqa: E402  (the four robots, in example-robot-data)
from test_robots import ROBOTS  # noqa: E402  (the installed example-robot-data)
from test_urdf import PinocchioMap, random_state  # noqa: E402


def best_of(fn, calls: int, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def bench(name: str, floating: bool, calls: int, repeats: int, algorithms: str = "aba") -> dict:
    import pinocchio
    path = str(ROBOTS / ROBOT_FILES[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = core.load_urdf(path, floating_base=floating)
    pm = pinocchio.buildModelFromUrdf(path, pinocchio.JointModelFreeFlyer()) if floating else \
        pinocchio.buildModelFromUrdf(path)
    pm.gravity.linear = np.array(model.gravity)
    pd = pm.createData()
    mp = PinocchioMap(model, pm, floating)
    q, qd, qdd, tau = random_state(model, np.random.default_rng(0))
    pq, pv, pa, pt = mp.q(q), mp.v(qd), mp.v(qdd), mp.v(tau)
    pairs = {"aba": (lambda: core.forward_dynamics(model, q, qd, tau), lambda: pinocchio.aba(pm, pd, pq, pv, pt))}
    if algorithms == "all":
        pairs["rnea"] = (lambda: core.inverse_dynamics(model, q, qd, qdd), lambda: pinocchio.rnea(pm, pd, pq, pv, pa))
        pairs["crba"] = (lambda: core.mass_matrix(model, q), lambda: pinocchio.crba(pm, pd, pq))
    ours = core.forward_dynamics(model, q, qd, tau)
    ref = mp.back(pinocchio.aba(pm, pd, pq, pv, pt))
    out = {"robot": name, "base": "floating" if floating else "fixed", "links": model.n_links,
           "pinocchio_bodies": pm.nbodies - 1, "nv": model.nv,
           "max_rel_diff": float(np.abs(ours - ref).max() / np.abs(ref).max())}
    for algorithm, (mine, theirs) in pairs.items():
        times = {"ours": np.inf, "pinocchio": np.inf}
        for _ in range(repeats):                           # interleaved
            times["ours"] = min(times["ours"], best_of(mine, calls, 1))
            times["pinocchio"] = min(times["pinocchio"], best_of(theirs, calls, 1))
        out[algorithm] = (1e6 * times["ours"], 1e6 * times["pinocchio"], times["ours"] / times["pinocchio"])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--all", action="store_true", help="also RNEA and CRBA")
    args = parser.parse_args(argv)
    algorithms = ("aba", "rnea", "crba") if args.all else ("aba",)
    if ROBOTS is None:
        print("example-robot-data is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    print("times in µs, ours / pinocchio = ratio; 'aba diff': max relative difference of the accelerations")
    print(f"{'robot':>7} {'base':>8} {'links':>5} {'pin bodies':>10} {'nv':>3} "
          + " ".join(f"{a + ' ours / pin = ratio':>25}" for a in algorithms) + f" {'aba diff':>9}")
    for name in ROBOT_FILES:
        for floating in (False, True):
            r = bench(name, floating, args.calls, args.repeats, "all" if args.all else "aba")
            cells = " ".join(f"{r[a][0]:>11.1f} /{r[a][1]:>5.1f} = {r[a][2]:>4.2f}" for a in algorithms)
            print(f"{r['robot']:>7} {r['base']:>8} {r['links']:>5} {r['pinocchio_bodies']:>10} {r['nv']:>3} {cells} "
                  f"{r['max_rel_diff']:>9.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
