"""Headless command line of the core.

    python -m core validate FILE... [--inertia refuse|repair]
                                               check scene documents and robot files (.urdf, .xml); prints
                                               every problem; exit 2 if any; warns of joints too stiff or too
                                               damped for the integrator at the scene's dt, naming the dt
                                               they need (core.scene.stiffness; run warns likewise)
    python -m core run SCENE --duration T [--dt DT] [--integrator NAME] --out DIR [--force] [--max-steps N]
                                               run a scene; write DIR/timeseries.npz, DIR/timeseries.csv and
                                               DIR/summary.json, streamed while it runs into a hidden folder
                                               beside DIR that is renamed to DIR when complete (an existing
                                               DIR is refused unless --force; --force replaces only an
                                               earlier output of run holding only its own files, exchanged
                                               atomically)
    python -m core sweep SPEC --out DIR [--force] [--workers N | --dask tcp://HOST:PORT]
                                               run the adaptive-control bench grid of SPEC (JSON or TOML; see
                                               core.bench.sweep) in parallel; write DIR/results.csv, DIR/table.md,
                                               the figures (PNG), traces and summary.json; a SPEC with
                                               bench = "cylinder" runs the nailed cylinder of thesis §2.3.2-2.3.3
                                               (nail against penalty spring; core.bench.cylinder) on local cores
    python -m core compare SCENE --duration T --out DIR [--dt DT] [--integrator NAME] [--formulations A,B]
                                               run a scene under every formulation (dynamic_constraints,
                                               projection, multipliers); write DIR/comparison.md,
                                               DIR/comparison.csv and DIR/differences.png (core.compare)

    python -m core parameters SCENE            print what each Slotine–Li controller of SCENE adapts: its
                                               parameters as sums and products of named link constants
                                               (standard, base or custom; core.control.parameters), their
                                               values on this arm, Γ, and the arm's base parameters
    python -m core warm                        compile (or load) every kernel now, so later runs start at once

SCENE may also be a robot file (.urdf, or MJCF .xml with the mjcf extra), run as the scene that includes it (--inertia refuse|repair: the policy
for unphysical link inertias, default refuse); a scene document includes one with its "robot" section.

Exit codes: 0 success, 2 invalid input (a bad scene or argument, an existing output without --force, a run
longer than --max-steps), 3 the simulation diverged (run: the records up to the last good state are written and
summary.json says so; compare: every formulation diverged, one that diverges is a result, reported in the table),
130 interrupted (Ctrl-C: the output is left as it was, nothing half written).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

from .fileio import NotReplaced
from .output import RunWriter
from .scene import SceneError, compile_scene, parse_spec, read_spec
from .scene.io import robot_document
from .scene.robots import ROBOT_SUFFIXES
from .simulation import INTEGRATOR_NAMES, DivergenceError, Simulation
from .step import record_layout


def _read(name: str, args):
    """The spec of a scene document, or of a robot file (``.urdf``) on its own with ``--inertia``."""
    if Path(name).suffix.lower() in ROBOT_SUFFIXES:
        return parse_spec(robot_document(name, getattr(args, "inertia", None)), name)
    return read_spec(name)


def _validate(args) -> int:
    bad = 0
    for name in args.files:
        try:
            spec = _read(name, args)
            model = compile_scene(spec, name)
        except SceneError as exc:
            bad += 1
            print(f"{name}: INVALID, {len(exc.problems) + exc.omitted} problem(s)")
            for p in exc.problems:
                print(f"  {p}")
            if exc.omitted:
                print(f"  and {exc.omitted} more problem(s)")
            continue
        print(f"{name}: ok ({model.n_links} bodies)")
        for line in _stiffness_advice(model):
            print(f"  warning: {line}")
    return 2 if bad else 0


def _stiffness_advice(model, dt=None, integrator=None) -> list[str]:
    """What :mod:`core.scene.stiffness` says of the model's joints at its (or the given) time step."""
    from .scene.stiffness import advice, stiff_joints
    integrator = integrator or model.settings.get("integrator", "rk4")
    return advice(stiff_joints(model, dt, integrator), integrator)


MAX_STEPS = 10_000_000
"""Steps a run may take unless ``--max-steps`` allows more (duration / dt; 10⁷ steps of chain20_nailed take about
7 minutes and write about 10 GB of CSV)."""
MAX_EVENT_LINES = 10


def _run(args) -> int:
    try:
        model = compile_scene(_read(args.scene, args), args.scene)
    except SceneError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        sim = Simulation(model, dt=args.dt, integrator=args.integrator)
    except ValueError as exc:
        print(f"{args.scene}: {exc}", file=sys.stderr)
        return 2
    for line in _stiffness_advice(model, sim.dt, sim.integrator):
        print(f"{args.scene}: warning: {line}", file=sys.stderr)
    duration = args.duration if args.duration is not None else model.settings.get("duration", 10.0)
    if not (np.isfinite(duration) and duration > 0):
        print(f"--duration must be a positive number of seconds, got {duration}", file=sys.stderr)
        return 2
    if args.record_every < 1:
        print(f"--record-every must be at least 1, got {args.record_every}", file=sys.stderr)
        return 2
    steps = duration / sim.dt
    if steps > args.max_steps:
        print(f"{args.scene}: {duration:g} s at dt = {sim.dt:g} s is {steps:.3g} steps, more than the "
              f"{args.max_steps} a run may take; shorten --duration or raise --dt"
              + (f", or allow it with --max-steps {math.ceil(steps)}" if steps < 1e15 else ""), file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        writer = RunWriter(out, model, record_layout(model, sim.inputs), replace=args.force)
    except OSError as exc:
        print(_output_error(exc, out, "run"), file=sys.stderr)
        return 2
    diverged = None
    try:
        sim.run(duration, record_every=args.record_every, progress=sys.stderr.isatty() and not args.quiet,
                sink=writer, max_steps=args.max_steps)
    except DivergenceError as exc:
        diverged = str(exc)
    except BaseException:
        writer.abort()
        raise
    try:
        summary = writer.finish(sim, scene_path=args.scene, diverged=diverged)
    except OSError as exc:
        writer.abort() if not isinstance(exc, (FileExistsError, NotReplaced)) else None
        print(f"cannot write the output {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        _print_events(sim.events)
        for line in contact_report(model, sim.events) + program_report(sim.programs):
            print(line)
    if diverged:
        print(f"{args.scene}: simulation diverged: {diverged}; wrote the {summary['records']} record(s) up to "
              f"t = {summary['duration_s']:.6g} s to {out}", file=sys.stderr)
        return 3
    if not args.quiet:
        relative = summary["energy_error_relative"]
        print(f"{model.name}: {summary['steps']} steps of {sim.dt:g} s ({sim.integrator}) in "
              f"{summary['wall_time_s']:.2f} s; energy audit error "
              + (f"{relative:.3e} (relative)" if math.isfinite(relative) else "not finite")
              + f"; wrote {out}/timeseries.npz, timeseries.csv, summary.json")
    return 0


def _print_events(events: list) -> None:
    """Broken constraints and rank losses, at most MAX_EVENT_LINES of them, then how many more."""
    events = [e for e in events if e.kind in ("break", "rank_deficient")]
    for event in events[:MAX_EVENT_LINES]:
        if event.kind == "break":
            print(f"t = {event.t:.4f} s: constraint {event.constraint!r} broke "
                  f"(deviation {event.deviation:.3g} > {event.max_deviation:.3g})", file=sys.stderr)
        elif event.kind == "rank_deficient":
            print(f"t = {event.t:.4f} s: the constraint Jacobian has rank {event.rank} for "
                  f"{event.rows} constraint rows (redundant or singular constraints)", file=sys.stderr)
    if len(events) > MAX_EVENT_LINES:
        print(f"and {len(events) - MAX_EVENT_LINES} more event(s); summary.json lists them all", file=sys.stderr)


def contact_report(model, events) -> list[str]:
    """One line per contact of ``model``: its touchdowns, bounces, lift-offs, slips and sticks in ``events``
    (:mod:`core.contacts`), the first and last times, and its hops: the lift-offs after which none of its points
    touches — a hop is counted when it leaves the ground, as the hopping programs count theirs
    (:mod:`core.programs.hopping`), so a run that ends in flight counts its last hop too. The pairs of a scene's
    ``collisions`` are listed only when they have events, with one line counting them all."""
    lines = []
    by_contact: dict[str, list] = {}
    for e in events:
        by_contact.setdefault(e.contact, []).append(e)
    pairs = [c for c in model.contacts if c.shape]
    for c in model.contacts:
        mine = by_contact.get(c.name, [])
        if not mine:
            if not c.shape:
                lines.append(f"contact {c.name!r}: no events")
            continue
        counts: dict[str, int] = {}
        for e in mine:
            counts[e.kind] = counts.get(e.kind, 0) + 1
        touching, hops = set(), 0
        for e in mine:
            if e.kind == "touchdown":
                touching.add(e.what)
            elif e.kind == "lift-off" and e.what in touching:
                touching.discard(e.what)
                hops += not touching
        kinds = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items())
        lines.append(f"contact {c.name!r}: {kinds}; {hops} hop{'s' if hops != 1 else ''}; "
                     f"first at t = {mine[0].t:.6g} s, last at t = {mine[-1].t:.6g} s")
    if pairs:
        met = sum(1 for c in pairs if c.name in by_contact)
        lines.append(f"collisions: {len(pairs)} pairs of shapes, {met} of them touched (listed above), "
                     f"{len(pairs) - met} never")
    return lines


def program_report(programs) -> list[str]:
    """One line per control program: what it reports of itself at the run's end
    (:meth:`core.programs.ControlProgram.status`), numbers to four digits."""
    def text(value) -> str:
        if isinstance(value, dict):
            return "(" + ", ".join(f"{k} {text(v)}" for k, v in value.items()) + ")"
        if isinstance(value, float):
            return f"{value:.4g}"
        return "none" if value is None else str(value)

    return [f"program {p.name!r} ({p.kind}): " + "; ".join(f"{k} {text(v)}" for k, v in p.status().items())
            for p in programs if p.status()]


def _output_error(exc: OSError, out, command: str) -> str:
    """What to say when ``command``'s output ``out`` cannot be written (:func:`core.fileio.check_replaceable`)."""
    if isinstance(exc, FileExistsError):
        return f"{out} exists; choose another --out or replace an earlier {command}'s output with --force"
    if isinstance(exc, NotReplaced):
        return f"--force replaces only an earlier output of '{command}': {exc.strerror}; choose another --out"
    return f"cannot write the output {out}: {exc.strerror or exc}"


def _out_folder_problem(out: str) -> str | None:
    """Why ``out`` cannot be the folder a command writes its files into (checked before it runs)."""
    path = Path(out)
    if os.path.lexists(path) and not path.is_dir():
        return f"--out {out} exists and is not a folder; choose another --out"
    for parent in path.absolute().parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                return f"--out {out}: {parent} is not a folder"
            if not os.access(parent, os.W_OK | os.X_OK) and not path.is_dir():
                return f"--out {out}: cannot write in {parent}"
            return None
    return None


def _sweep(args) -> int:
    from .bench.sweep import ClusterError, SweepSpecError, check_dask_address, read_sweep_spec, run_sweep
    if problem := _out_folder_problem(args.out):
        print(problem, file=sys.stderr)
        return 2
    if args.dask is not None and check_dask_address(args.dask):
        print(check_dask_address(args.dask), file=sys.stderr)
        return 2
    try:
        res = read_sweep_spec(args.spec)
    except SweepSpecError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        print(f"--workers must be at least 1, got {args.workers}", file=sys.stderr)
        return 2
    if args.dask:
        try:
            import dask.distributed  # noqa: F401  (imported only when a cluster is asked for)
        except ImportError:
            print("--dask needs dask.distributed, which is not installed; install it with "
                  "pip install 'limbstudio[cluster]' (or pip install 'dask[distributed]'), or run without --dask "
                  "to use the local cores", file=sys.stderr)
            return 2
    try:
        summary = run_sweep(res, args.out, workers=args.workers, dask=args.dask,
                            progress=not args.quiet and sys.stderr.isatty(), replace=args.force)
    except ClusterError as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print(_output_error(exc, args.out, "sweep"), file=sys.stderr)
        return 2
    if not args.quiet:
        where = f"the Dask cluster at {args.dask}" if args.dask else f"{summary['workers']} local worker(s)"
        failed = f", {summary['failed']} failed" if summary["failed"] else ""
        print(f"{summary['trials']} trials ({summary['unstable']} unstable{failed}) on {where} in "
              f"{summary['wall_time_s']:.1f} s; wrote {args.out}/results.csv"
              + (f" and {len(summary['figures'])} figure(s)" if summary["figures"] else ""))
    if summary.get("figures_error"):
        print(f"the figures could not be drawn: {summary['figures_error']}", file=sys.stderr)
    return 0


def _compare(args) -> int:
    from .compare import run_formulations, write_comparison
    from .formulations import FORMULATIONS
    if problem := _out_folder_problem(args.out):
        print(problem, file=sys.stderr)
        return 2
    try:
        model = compile_scene(_read(args.scene, args), args.scene)
    except SceneError as exc:
        print(exc, file=sys.stderr)
        return 2
    names = [f.strip() for f in args.formulations.split(",") if f.strip()] if args.formulations else list(FORMULATIONS)
    unknown = [f for f in names if f not in FORMULATIONS]
    if unknown or not names:
        print(f"--formulations: unknown {', '.join(unknown) or '(none given)'}; choose from "
              f"{', '.join(FORMULATIONS)}", file=sys.stderr)
        return 2
    if args.reference not in FORMULATIONS:
        print(f"--reference must be one of {', '.join(FORMULATIONS)}, got {args.reference!r}", file=sys.stderr)
        return 2
    for line in _stiffness_advice(model, args.dt if args.dt and args.dt > 0 else None, args.integrator):
        print(f"{args.scene}: warning: {line}", file=sys.stderr)
    duration = args.duration if args.duration is not None else model.settings.get("duration", 10.0)
    if not duration > 0 or (args.dt is not None and not args.dt > 0) or args.record_every < 1:
        print("--duration and --dt must be positive and --record-every at least 1", file=sys.stderr)
        return 2
    try:
        runs = run_formulations(model, duration, names, dt=args.dt, integrator=args.integrator,
                                record_every=args.record_every)
    except ValueError as exc:
        print(f"{args.scene}: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        rows = write_comparison(out, model, runs, args.reference, duration, args.scene)
    except OSError as exc:
        print(f"cannot write the comparison {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for r in runs:
        if r.diverged:
            print(f"{args.scene}: {r.formulation} diverged: {r.diverged}", file=sys.stderr)
    if not args.quiet:
        for row in rows:
            print(f"{row['formulation']:>20}: {row['status']:>8}  max|Φ| {row['max_phi']:.3g}  energy error "
                  f"{row['energy_error_J']:.3g} J  {row['cost_per_step_ms']:.3g} ms/step  rank "
                  f"{row['rank_min']}-{row['rank_max']}/{row['rows']}  rank events {row['rank_events']}  "
                  f"max|Δq| {row['max_dq']:.3g}")
        print(f"wrote {out}/comparison.md, comparison.csv, differences.png")
    return 3 if all(r.diverged for r in runs) else 0


def _warm(args) -> int:
    from .warmup import warm
    seconds = warm()
    if not args.quiet:
        print(f"the physics kernels are compiled and cached ({seconds:.1f} s)")
    return 0


def _parameters(args) -> int:
    from .control.parameters import PARAMETER_NAMES, base_parameterization, describe
    try:
        model = compile_scene(read_spec(args.scene), args.scene)
    except SceneError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{args.scene}: standard parameters <body>.<p>, p in {' '.join(PARAMETER_NAMES)} (mass, first moment "
          "h = m c, rotational inertia about the body's joint origin: Izz = I_c,zz + m (c_x² + c_y²))")
    ctrls = [c for c in model.controllers if c.kind == "slotine_li"]
    for c in ctrls:
        gravity = "modelled" if c.model_gravity else "unmodelled (the thesis's default)"
        print(f"\ncontroller {c.name!r} (slotine_li), gravity {gravity}, eta = {c.eta:g}:")
        print(describe(c.parameterization, model, c.eta, c.gamma))
    if not ctrls:
        print("\n(no slotine_li controller in this scene)")
    print("\nthe arm's base parameters, gravity unmodelled:")
    print(describe(base_parameterization(model, np.zeros(3)), model))
    if np.any(model.gravity != 0.0):
        print(f"\nthe arm's base parameters, gravity {tuple(float(x) for x in model.gravity)} modelled:")
        print(describe(base_parameterization(model, model.gravity), model))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("validate", help="check scene documents and print every problem")
    v.add_argument("files", nargs="+", metavar="FILE")
    inertia_help = ("for a robot file (.urdf) given directly: refuse an unphysical link inertia (default) or repair "
                    "it to the nearest physical one")
    v.add_argument("--inertia", choices=("refuse", "repair"), default=None, help=inertia_help)
    r = sub.add_parser("run", help="run a scene headless and write its time series")
    r.add_argument("scene", metavar="SCENE", help="scene document (JSON) or robot file (.urdf)")
    r.add_argument("--inertia", choices=("refuse", "repair"), default=None, help=inertia_help)
    r.add_argument("--duration", type=float, default=None, help="simulated seconds (default: the scene's)")
    r.add_argument("--dt", type=float, default=None, help="time step in s (default: the scene's)")
    r.add_argument("--integrator", choices=INTEGRATOR_NAMES, default=None)
    r.add_argument("--out", required=True, metavar="DIR")
    r.add_argument("--record-every", type=int, default=1, metavar="N", help="record every N-th step")
    r.add_argument("--force", action="store_true", help="replace an earlier output of run (atomically); any other folder or file is refused")
    r.add_argument("--max-steps", type=int, default=MAX_STEPS, metavar="N",
                   help=f"refuse runs of more than N steps, duration / dt (default {MAX_STEPS})")
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    w = sub.add_parser("sweep", help="run the adaptive-control bench grid (or the thesis cylinder grid) of a SPEC "
                                     "file in parallel")
    w.add_argument("spec", metavar="SPEC", help="sweep spec, JSON or TOML (fields: see core.bench.sweep)")
    w.add_argument("--out", required=True, metavar="DIR")
    w.add_argument("--force", action="store_true", help="replace an earlier sweep's output (atomically)")
    w.add_argument("--workers", type=int, default=None, metavar="N", help="local processes (default: all cores)")
    w.add_argument("--dask", default=None, metavar="ADDRESS",
                   help="run on a Dask cluster, e.g. tcp://scheduler:8786 (needs dask.distributed)")
    w.add_argument("--quiet", action="store_true")
    c = sub.add_parser("compare", help="run a scene under every formulation and compare them")
    c.add_argument("scene", metavar="SCENE", help="scene document (JSON) or robot file (.urdf)")
    c.add_argument("--inertia", choices=("refuse", "repair"), default=None, help=inertia_help)
    c.add_argument("--duration", type=float, default=None, help="simulated seconds (default: the scene's)")
    c.add_argument("--dt", type=float, default=None, help="time step in s (default: the scene's)")
    c.add_argument("--integrator", choices=INTEGRATOR_NAMES, default=None)
    c.add_argument("--out", required=True, metavar="DIR")
    c.add_argument("--formulations", default=None, metavar="A,B",
                   help="comma-separated subset (default: dynamic_constraints,projection,multipliers)")
    c.add_argument("--reference", default="projection", help="formulation the differences are taken against")
    c.add_argument("--record-every", type=int, default=1, metavar="N", help="record every N-th step")
    c.add_argument("--quiet", action="store_true")
    a = sub.add_parser("parameters", help="print the adapted parameters of the scene's Slotine–Li controllers")
    a.add_argument("scene", metavar="SCENE")
    k = sub.add_parser("warm", help="compile every kernel now (the first run of a version on a machine)")
    k.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    from .scene.robots import plain_import_warnings
    plain_import_warnings("python -m core")
    np.seterr(all="ignore")           # divergence is detected and reported by the simulation itself
    if args.command not in ("validate", "warm", "parameters") or (args.command == "warm" and not args.quiet):
        from .jit import kernels_cached
        if not kernels_cached():
            print("compiling the physics kernels (the first run of this version on this machine: about a minute; "
                  "later runs load them from the cache)", file=sys.stderr)
    try:
        return {"validate": _validate, "run": _run, "sweep": _sweep, "compare": _compare,
                "warm": _warm, "parameters": _parameters}[args.command](args)
    except KeyboardInterrupt:         # Ctrl-C: what was being written is removed (run, sweep), the output left as it was
        print(f"python -m core {args.command}: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
