"""A long fuzz campaign over the contact, limit, program and robot-include sections (issue 28's target: ten
thousand structure-aware mutations, no traceback, no crash, and no run longer than 10× its clean time or over
1 GB that is not refused or stopped with a named reason).

    .venv/bin/python tests/fuzz_campaign.py [N=10000] [--seed S] [--workers W] [--seconds T] [--max-steps M]
                                            [--memory-mb 1024] [--hang-s 120] [--out DIR]

The mutants are those of ``tests/test_fuzz_sections.py`` (:class:`Trials`: seeded, trial k is the same on
every machine), run for at most T simulated seconds and M steps each, in worker processes that the campaign
watches: a trial is timed by its worker, its peak resident memory is read from the kernel (``VmHWM``, reset
before each trial), a worker whose resident memory passes twice the memory bound is killed (the trial counts
as over the bound), and one that has not answered within ``--hang-s`` is killed as hung; a new worker takes the
next trial. Every eighth trial goes through the command line's own ``main(["run", …])``. Each scene is first
run clean the same way (best of three) for the time a mutant is measured against.

Reported: trials by section and outcome (invalid: refused with named problems; complete; stopped with a named
reason), tracebacks (must be 0; each mutant is written to DIR with its traceback), hangs, trials over the
memory bound, and trials longer than 10× their scene's clean run — all of them, and those among them that were
neither refused nor stopped with a named reason, with their steps (a mutant that asks for a 100× smaller dt
takes 100× the steps: the time per step is reported beside the ratio).
"""
from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _peak_reset() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _status(pid: int | str, key: str) -> int:
    """A memory figure of /proc/PID/status, in bytes (0 if unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def worker(seed: int, workdir: str, seconds: float, max_steps: int, every: int) -> None:
    """Answer trial numbers on stdin with one JSON line each on stdout."""
    import numpy as np
    from test_fuzz_sections import Trials, check_command_line, check_document
    np.seterr(all="ignore")
    trials = Trials(seed, Path(workdir))
    out = sys.stdout
    sys.stdout = sys.stderr                                   # (anything printed goes to the log, not the pipe)
    for line in sys.stdin:
        request = json.loads(line)
        k = request["k"]
        if k < 0:                                             # a clean scene, through the API or main
            section, name, doc = request["clean"]
            data, folder = json.dumps(doc).encode(), Path(workdir)
        else:
            section, name, data, folder = trials.make(k)
        via_main = request["main"] if k < 0 else k % every == 0
        _peak_reset()
        steps: list = []
        t0 = time.perf_counter()
        try:
            if via_main:
                outcome, reason = check_command_line(data, folder, Path(workdir) / f"out{os.getpid()}",
                                                     seconds, max_steps)
            else:
                outcome, reason = check_document(data, folder, f"{section}/{name} mutant {k}", seconds, max_steps,
                                                 steps)
        except BaseException as exc:                          # noqa: BLE001 — what the campaign counts
            outcome, reason = "traceback", "".join(traceback.format_exception(exc))
        wall = time.perf_counter() - t0
        result = {"k": k, "section": section, "name": name, "main": via_main, "outcome": outcome,
                  "reason": reason[:4000],
                  "wall": wall, "steps": steps[0] if steps else None, "t": steps[1] if steps else None,
                  "model": steps[2:] if steps else None,
                  "peak": _status("self", "VmHWM")}
        if outcome == "traceback":
            result["data"] = data.decode("utf-8", "replace")
        out.write(json.dumps(result) + "\n")
        out.flush()


class Worker:
    def __init__(self, args, workdir: str):
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "--seed", str(args.seed), "--seconds",
             str(args.seconds), "--max-steps", str(args.max_steps), "--workdir", workdir, "--every", str(args.every)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, cwd=workdir)   # (MuJoCo's log goes there)

    def ask(self, request: dict, hang_s: float, memory_kill: int) -> dict | None:
        """The worker's answer, or None if it hung or passed ``memory_kill`` bytes (it is then killed)."""
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        start = time.monotonic()
        self.killed = None
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.05)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    self.killed = "died"
                    return None
                return json.loads(line)
            if _status(self.proc.pid, "VmRSS") > memory_kill:
                self.killed = "memory"
            elif time.monotonic() - start > hang_s:
                self.killed = "hang"
            elif self.proc.poll() is not None:
                self.killed = "died"
            if self.killed:
                self.proc.kill()
                self.proc.wait()
                return None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def campaign(args) -> dict:
    from test_fuzz_sections import corpus
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="limbstudio-campaign-")
    memory_bound = args.memory_mb * 2 ** 20
    worker = Worker(args, workdir)
    start = time.perf_counter()
    clean: dict = {}
    docs = corpus(Path(workdir))
    for section, items in docs.items():                      # each scene's clean time: best of three, both ways
        for name, doc in items:
            for via_main in (False, True):
                best = None
                for _ in range(3):
                    r = worker.ask({"k": -1, "clean": [section, name, doc], "main": via_main}, args.hang_s,
                                   2 * memory_bound)
                    assert r is not None and r["outcome"] == "complete", (name, r)
                    best = r if best is None or r["wall"] < best["wall"] else best
                clean[name, via_main] = best
    counts: dict = {}
    tracebacks, hangs, over_memory, slow = [], [], [], []
    peak = 0
    for k in range(args.n):
        r = worker.ask({"k": k}, args.hang_s, 2 * memory_bound)
        if r is None:                                         # killed: a hang, a memory blow-up or a crash
            why = worker.killed
            worker = Worker(args, workdir)
            entry = {"k": k, "why": why}
            (hangs if why == "hang" else over_memory if why == "memory" else tracebacks).append(entry)
            counts[("?", why)] = counts.get(("?", why), 0) + 1
            continue
        key = (r["section"], r["outcome"])
        counts[key] = counts.get(key, 0) + 1
        if r["outcome"] == "traceback":
            tracebacks.append(r)
            (out / f"traceback_{k}.json").write_text(r["data"])
            (out / f"traceback_{k}.txt").write_text(r["reason"])
        peak = max(peak, r["peak"])
        if r["peak"] > memory_bound:
            over_memory.append(r)
        base = clean[r["name"], r["main"]]
        ratio = r["wall"] / max(base["wall"], 1e-9)
        if ratio > 10:
            per_step = None
            if r["steps"] and base["steps"]:
                per_step = (r["wall"] / r["steps"]) / (base["wall"] / base["steps"])
            slow.append({"k": k, "section": r["section"], "name": r["name"], "outcome": r["outcome"],
                         "reason": r["reason"][:300], "wall": r["wall"], "clean": base["wall"], "ratio": ratio,
                         "steps": r["steps"], "clean_steps": base["steps"], "per_step_ratio": per_step,
                         "model": r["model"], "clean_model": base["model"]})
        if args.progress and (k + 1) % args.progress == 0:
            print(f"{k + 1} trials, {time.perf_counter() - start:.0f} s: {len(tracebacks)} tracebacks, "
                  f"{len(hangs)} hangs, {len(over_memory)} over memory, {len(slow)} over 10x", flush=True)
    worker.close()
    shutil.rmtree(workdir, ignore_errors=True)
    unnamed_slow = [s for s in slow if s["outcome"] == "complete"]
    report = {
        "trials": args.n, "seed": args.seed, "seconds_per_trial": args.seconds, "max_steps": args.max_steps,
        "wall_s": time.perf_counter() - start,
        "counts": {f"{s}/{o}": v for (s, o), v in sorted(counts.items())},
        "tracebacks": len(tracebacks), "hangs": len(hangs), "over_memory": len(over_memory),
        "over_10x_clean": len(slow), "over_10x_clean_and_complete": len(unnamed_slow),
        "largest_ratio": max((s["ratio"] for s in slow), default=None),
        "largest_per_step_ratio": max((s["per_step_ratio"] or 0 for s in slow), default=None),
        "largest_peak_rss_mb": round(peak / 2 ** 20),
        "clean_s": {f"{name}{' (main)' if via else ''}": round(r["wall"], 4) for (name, via), r in clean.items()},
        "slow": sorted(slow, key=lambda s: -s["ratio"])[:40], "killed": hangs + over_memory,
        "traceback_trials": [t["k"] for t in tracebacks],
    }
    (out / "report.json").write_text(json.dumps(report, indent=1))
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("n", nargs="?", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=28)
    p.add_argument("--seconds", type=float, default=1.0, help="simulated seconds per trial at most")
    p.add_argument("--max-steps", type=int, default=10_000, help="steps per trial at most")
    p.add_argument("--memory-mb", type=int, default=1024)
    p.add_argument("--hang-s", type=float, default=120.0)
    p.add_argument("--every", type=int, default=8, help="every N-th trial through the command line's main")
    p.add_argument("--out", default="fuzz-campaign")
    p.add_argument("--progress", type=int, default=500)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.seed, args.workdir, args.seconds, args.max_steps, args.every)
        return
    report = campaign(args)
    brief = {k: v for k, v in report.items() if k not in ("slow", "killed", "clean_s")}
    print(json.dumps(brief, indent=1))
    for s in report["slow"][:10]:
        print(f"  over 10x: trial {s['k']} {s['section']}/{s['name']} {s['outcome']}: {s['wall']:.2f} s against "
              f"{s['clean']:.3f} s clean ({s['ratio']:.0f}x; {s['steps']} steps against {s['clean_steps']}; links, "
              f"velocities, formulation {s['model']} against {s['clean_model']}): {s['reason'][:160]}")


if __name__ == "__main__":
    main()
