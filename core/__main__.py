"""Headless command line of the core.

    python -m core validate FILE...            check scene documents; prints every problem; exit 2 if any
    python -m core run SCENE --duration T [--dt DT] [--integrator NAME] --out DIR
                                               run a scene; write DIR/timeseries.npz, DIR/timeseries.csv and
                                               DIR/summary.json

Exit codes: 0 success, 2 invalid input (a bad scene or argument), 3 the simulation diverged.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .output import write_run
from .scene import SceneError, compile_scene, read_spec
from .simulation import INTEGRATOR_NAMES, DivergenceError, Simulation


def _validate(args) -> int:
    bad = 0
    for name in args.files:
        try:
            spec = read_spec(name)
            compile_scene(spec, name)
        except SceneError as exc:
            bad += 1
            print(f"{name}: INVALID, {len(exc.problems)} problem(s)")
            for p in exc.problems:
                print(f"  {p}")
            continue
        print(f"{name}: ok ({len(spec.bodies)} bodies)")
    return 2 if bad else 0


def _run(args) -> int:
    try:
        model = compile_scene(read_spec(args.scene), args.scene)
    except SceneError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        sim = Simulation(model, dt=args.dt, integrator=args.integrator)
    except ValueError as exc:
        print(f"{args.scene}: {exc}", file=sys.stderr)
        return 2
    duration = args.duration if args.duration is not None else model.settings.get("duration", 10.0)
    if not duration > 0:
        print(f"--duration must be positive, got {duration}", file=sys.stderr)
        return 2
    progress = sys.stderr.isatty() and not args.quiet
    diverged = None
    try:
        data = sim.run(duration, record_every=args.record_every, progress=progress)
    except DivergenceError as exc:
        diverged = str(exc)
        data = None
    out = Path(args.out)
    if data is None:
        print(f"{args.scene}: simulation diverged: {diverged}", file=sys.stderr)
        return 3
    for event in sim.events:
        if event["type"] == "break":
            print(f"t = {event['t']:.4f} s: constraint {event['constraint']!r} broke "
                  f"(deviation {event['deviation']:.3g} > {event['max_deviation']:.3g})", file=sys.stderr)
        elif event["type"] == "rank_deficient":
            print(f"t = {event['t']:.4f} s: the constraint Jacobian has rank {event['jacobian_rank']} for "
                  f"{event['rows']} constraint rows (redundant or singular constraints)", file=sys.stderr)
    summary = write_run(out, model, sim, data, scene_path=args.scene)
    if not args.quiet:
        print(f"{model.name}: {summary['steps']} steps of {sim.dt:g} s ({sim.integrator}) in "
              f"{summary['wall_time_s']:.2f} s; energy audit error {summary['energy_error_relative']:.3e} (relative); "
              f"wrote {out}/timeseries.npz, timeseries.csv, summary.json")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check scene documents and print every problem")
    v.add_argument("files", nargs="+", metavar="FILE")
    r = sub.add_parser("run", help="run a scene headless and write its time series")
    r.add_argument("scene", metavar="SCENE")
    r.add_argument("--duration", type=float, default=None, help="simulated seconds (default: the scene's)")
    r.add_argument("--dt", type=float, default=None, help="time step in s (default: the scene's)")
    r.add_argument("--integrator", choices=INTEGRATOR_NAMES, default=None)
    r.add_argument("--out", required=True, metavar="DIR")
    r.add_argument("--record-every", type=int, default=1, metavar="N", help="record every N-th step")
    r.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    np.seterr(all="ignore")           # divergence is detected and reported by the simulation itself
    return {"validate": _validate, "run": _run}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
