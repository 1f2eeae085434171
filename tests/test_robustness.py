"""Issue 12, "nothing lost, nothing crashes": each measured reproducer as a test — hostile scene files refused with
named problems (never a traceback), the limits of :mod:`core.scene.limits`, validation linear in the bodies, runs
that stream their records and keep them on divergence, outputs that are complete or absent, sweeps that fail
well, and files that keep their modes and symbolic links."""
from __future__ import annotations

import copy
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import core
from core.fileio import OUTPUT_MARKER
from core.output import event_arrays
from core.__main__ import main as core_main
from core.scene import SceneError, compile_scene, parse_spec, read_spec
from core.scene import limits
from core.scene.io import read_document

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "scenes"


def _doc(name: str) -> dict:
    return json.loads((SCENES / f"{name}.json").read_text(encoding="utf-8"))


def _problems(raw, source="<test>") -> list:
    """The problems of a decoded document through parse and compile (an accepted scene: [])."""
    try:
        compile_scene(parse_spec(raw, source), source)
    except SceneError as exc:
        assert exc.problems
        return exc.problems
    return []


def _only_named(problems) -> None:
    for p in problems:
        assert p.path.startswith("$") and "please report it" not in p.message, str(p)


def _file_problems(tmp_path, data: bytes) -> list:
    path = tmp_path / "scene.json"
    path.write_bytes(data)
    with pytest.raises(SceneError) as info:
        read_spec(path)
    _only_named(info.value.problems)
    return info.value.problems


# ---- bytes -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data, expected", [
    (b"", "empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "NUL byte"),
    ((SCENES / "four_bar.json").read_text().encode("utf-16"), "UTF-16"),
    ((SCENES / "four_bar.json").read_text().encode("utf-32"), "UTF-32"),
    ('{"format_version": 1, "name": "caf\u00e9"}'.encode("latin-1"), "byte 0xE9 at offset 34 (line 1, column 35)"),
    (b'{"format_version": 1, "name": "x", "description": "\xed\xa0\x80"}', "not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "nested"),
    (b'{"format_version": 1, "name": "x", "gravity": [0, 0, ' + b"9" * 5000 + b"]}", "5000 digits"),
    (b'{"format_version": 1, "name": "x", "gravity": [0, 0, NaN]}', "NaN is not a JSON number"),
    (b'{"format_version": 1, "name": "x", "gravity": [0, 0, 1e400]}', "must be finite"),
    (b'{"format_version": 1, "name": ', "not valid JSON"),
])
def test_any_bytes_are_named_problems(tmp_path, data, expected):
    problems = _file_problems(tmp_path, data)
    assert any(expected in p.message for p in problems), [str(p) for p in problems]


def test_a_bom_is_skipped(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + (SCENES / "four_bar.json").read_bytes())
    assert read_spec(path) == read_spec(SCENES / "four_bar.json")


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setattr("core.scene.io.MAX_DOCUMENT_BYTES", 1000)
    monkeypatch.setattr("core.scene.limits.MAX_DOCUMENT_BYTES", 1000)
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 5000 + b"{}")
    with pytest.raises(SceneError, match="at most 1000 bytes"):
        read_spec(path)
    with pytest.raises(SceneError, match="cannot read the file"):
        read_spec(tmp_path)                                       # a folder


def test_deep_nesting_inside_a_document_is_cut_at_the_limit():
    doc = _doc("four_bar")
    deep = 0.0
    for _ in range(limits.MAX_DEPTH + 5):
        deep = [deep]
    doc["gravity"] = deep
    problems = _problems(doc)
    assert [p.path for p in problems if "nested deeper" in p.message][0].startswith("$.gravity")


# ---- the crashers of the issue ------------------------------------------------------------------------------
def _with(name, change):
    doc = _doc(name)
    change(doc)
    return doc


def _shape(doc, shape):
    doc["bodies"][0].pop("inertial", None)
    doc["bodies"][0]["shapes"] = [shape]


CRASHERS = {
    "parent is a list": (lambda d: d["bodies"][1].__setitem__("parent", ["a"]), "$.bodies[1].parent"),
    "constraint type is a list": (lambda d: d["constraints"][0].__setitem__("type", []), "$.constraints[0]"),
    "force type is a list": (lambda d: d.__setitem__("forces", [{"type": [], "name": "f", "body": "world"}]),
                             "$.forces[0]"),
    "no bodies, constraints name them": (lambda d: d.pop("bodies"), "$.constraints[0].body"),
    "cylinder length 5e-324": (lambda d: _shape(d, {"type": "cylinder", "radius": 0.1, "length": 5e-324,
                                                    "density": 1000}), "$.bodies[0].shapes[0].length"),
    "capsule radius 1e300": (lambda d: _shape(d, {"type": "capsule", "radius": 1e300, "length": 1, "density": 1}),
                             "$.bodies[0].shapes[0].radius"),
    "axis [1e200, 1e200, 0]": (lambda d: d["bodies"][0]["joint"].__setitem__("axis", [1e200, 1e200, 0]),
                               "$.bodies[0].joint.axis[0]"),
    "direction [1e308]*3": (lambda d: d["constraints"][0].__setitem__("direction", [1e308] * 3),
                            "$.constraints[0].direction[0]"),
    "gravity -1e300": (lambda d: d.__setitem__("gravity", [0, 0, -1e300]), "$.gravity[2]"),
    "dt 1e-300": (lambda d: d["simulation"].__setitem__("dt", 1e-300), "$.simulation.dt"),
}


@pytest.mark.parametrize("case", list(CRASHERS))
def test_crashers_of_the_arm_on_a_line_are_named(case):
    change, where = CRASHERS[case]
    problems = _problems(_with("arm_on_line_pidc", change))
    _only_named(problems)
    assert any(p.path.startswith(where) for p in problems), [str(p) for p in problems]


def test_mixture_amplitude_minus_1e308_is_named():
    doc = _doc("slotine_li_arm")
    doc["controllers"] = [{"type": "mixture", "name": "m", "experts": 4, "trajectory": {
        "type": "sinusoid", "alpha": [0, 0], "beta": [-1e308, 0.75], "omega": [1, 2]}}]
    problems = _problems(doc)
    assert [p.path for p in problems] == ["$.controllers[0].trajectory.beta[0]"]


@pytest.mark.parametrize("expression, message", [
    ("crank + " + "9" * 310, "finite"),
    ("-" * 1000 + "crank", "nested more than 64 levels"),
    ("(crank + " * 70 + "crank" + ")" * 70, "nested more than 64 levels"),
    ("sin(" * 70 + "crank" + ")" * 70, "nested more than 64 levels"),
])
def test_joint_space_expressions_within_limits(expression, message):
    doc = _doc("slider_crank_joint_space")
    doc["constraints"][0]["expression"] = expression
    problems = _problems(doc)
    _only_named(problems)
    assert any(p.path == "$.constraints[0].expression" and message in p.message for p in problems)
    doc["constraints"][0]["expression"] = "(" * 30 + "sin(crank) + sin(crank + rod)" + ")" * 30
    assert _problems(doc) == []


def test_no_bodies_and_a_joint_space_constraint():
    doc = _doc("slider_crank_joint_space")
    del doc["bodies"]
    problems = _problems(doc)
    assert any(p.path == "$.constraints[0].expression" and "unknown name 'crank'" in p.message for p in problems)


def test_projected_inverse_dynamics_with_a_joint_space_constraint_runs():
    """The combination the issue measured as a ValueError in ``core run`` compiles and steps (it works)."""
    doc = _doc("slider_crank_joint_space")
    doc["controllers"] = [{"type": "projected_inverse_dynamics", "name": "p", "joints": ["crank"],
                           "trajectory": {"type": "set_point", "q": [0.3]}}]
    sim = core.Simulation(compile_scene(parse_spec(doc)))
    rec = sim.run(0.05)
    assert np.isfinite(rec["q"]).all() and rec["t"][-1] == pytest.approx(0.05)


def test_references_are_checked_when_other_sections_are_broken():
    doc = _doc("arm_on_line_pidc")
    doc["bodies"][0]["joint"] = "not a joint"
    doc["constraints"][0]["body"] = "nobody"
    problems = _problems(doc)
    paths = [p.path for p in problems]
    assert "$.constraints[0].body" in paths and any(p.startswith("$.bodies[0].joint") for p in paths)


def test_parent_loops_are_named_once_per_body():
    doc = _doc("three_link_arm")
    doc["bodies"][0]["parent"] = doc["bodies"][2]["name"]
    problems = [p for p in _problems(doc) if "loops back" in p.message]
    assert len(problems) == 3 and all("→" in p.message for p in problems)


def test_problems_are_capped_and_counted():
    doc = {"format_version": 1, "name": "many", "bodies": [
        {"name": f"b{i}", "joint": {"type": "hinge"}, "shapes": [1] * 50} for i in range(2000)]}
    start = time.perf_counter()
    with pytest.raises(SceneError) as info:
        parse_spec(doc)
    assert time.perf_counter() - start < 20
    exc = info.value
    assert len(exc.problems) == limits.MAX_PROBLEMS and exc.omitted == 100_000 - limits.MAX_PROBLEMS
    assert f"and {exc.omitted} more problem(s)" in str(exc)
    assert len(str(exc)) < 100 * 400


def test_too_many_bodies_and_items():
    with pytest.raises(SceneError, match="has 10001 bodies; at most 10000"):
        parse_spec({"format_version": 1, "name": "x", "bodies": [1] * 10_001})
    with pytest.raises(SceneError, match="at most 100000"):
        parse_spec({"format_version": 1, "name": "x", "description": "", "gravity": [0] * 100_001})


def test_a_huge_value_is_shown_short():
    with pytest.raises(SceneError) as info:
        parse_spec(["x" * 10_000_000])
    assert len(str(info.value)) < 500


# ---- scale ---------------------------------------------------------------------------------------------------
def _chain(n: int, siblings: bool = False) -> dict:
    bodies = [{"name": f"b{i}", "parent": "world" if i == 0 or siblings else f"b{i - 1}",
               "joint": {"type": "hinge", "position": [0, 0, 0] if i == 0 or siblings else [1, 0, 0]},
               "shapes": [{"type": "cylinder", "radius": 0.05, "length": 1.0, "axis": [1, 0, 0],
                           "position": [0.5, 0, 0], "mass": 1.0}]} for i in range(n)]
    return {"format_version": 1, "name": "big", "bodies": bodies}


@pytest.mark.slow
def test_validation_is_linear_in_the_bodies(tmp_path):
    """A 3000-body chain and 10 000 sibling bodies validate and compile through ``core validate`` in seconds
    (the issue measured 215 s and 170 s); the time grows about linearly."""
    times = {}
    for n, siblings in ((1000, False), (3000, False), (10_000, True)):
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(_chain(n, siblings)))
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "core", "validate", str(path)], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
        times[n] = time.perf_counter() - start
        assert proc.returncode == 0 and f"ok ({n} bodies)" in proc.stdout, proc.stdout + proc.stderr
    assert times[3000] < 30 and times[10_000] < 30, times


def test_singular_inertia_is_found_in_linear_time():
    """The O(N) pivot test names the joint that moves no mass, as the dense eigen-test did."""
    doc = _chain(4)
    doc["bodies"][3]["shapes"] = []
    doc["bodies"][3]["inertial"] = {"mass": 0.0}
    problems = _problems(doc)
    assert [p.path for p in problems] == ["$.bodies[3].joint (body 'b3')"]
    doc["bodies"][3]["inertial"] = {"mass": 1.0, "com": [1, 0, 0]}                 # a point mass off the axis
    assert _problems(doc) == []


# ---- runs ----------------------------------------------------------------------------------------------------
def _run(tmp_path, *args) -> int:
    return core_main(["run", *map(str, args)])


def test_a_diverging_run_keeps_its_records(tmp_path, capsys):
    """A 20 g link on a damper whose time constant (0.1 ms) RK4 at 2 ms cannot follow: its first step is good,
    the second makes energy from nothing and is refused; the records up to it are written."""
    spec = {"format_version": 1, "name": "damped", "gravity": [0, 0, -9.81], "simulation": {"dt": 0.002},
            "bodies": [{"name": "link", "parent": "world", "joint": {"type": "hinge", "axis": [0, 1, 0],
                                                                        "position": [0, 0, 1]},
                        "inertial": {"mass": 0.02, "com": [0.025, 0, 0], "inertia": [1e-6, 5e-6, 5e-6, 0, 0, 0]}}],
            "forces": [{"type": "joint_spring", "name": "damper", "joint": "link", "stiffness": 0.0,
                        "damping": 0.05}]}
    scene = tmp_path / "damped.json"
    scene.write_text(json.dumps(spec))
    out = tmp_path / "diverged"
    code = _run(tmp_path, scene, "--duration", 1, "--out", out)
    assert code == 3
    summary = json.loads((out / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert summary["status"] == "diverged" and summary["diverged"]["records_kept"] == summary["records"] > 1
    data = np.load(out / "timeseries.npz")
    assert len(data["t"]) == summary["records"] and np.isfinite(data["q"]).all()
    assert data["t"][-1] == summary["diverged"]["last_good_t_s"]
    rows = (out / "timeseries.csv").read_text().splitlines()
    assert len(rows) == summary["records"] + 1
    assert "diverged" in capsys.readouterr().err


def test_existing_output_is_refused_before_running_and_replaced_with_force(tmp_path, capsys):
    out = tmp_path / "run"
    out.write_text("precious")
    assert _run(tmp_path, SCENES / "four_bar.json", "--duration", 0.05, "--out", out) == 2
    assert out.read_text() == "precious" and "--force" in capsys.readouterr().err
    assert _run(tmp_path, SCENES / "four_bar.json", "--duration", 0.05, "--out", out, "--force", "--quiet") == 2
    assert out.read_text() == "precious" and "not an output folder of 'run'" in capsys.readouterr().err
    out.unlink()
    assert _run(tmp_path, SCENES / "four_bar.json", "--duration", 0.05, "--out", out, "--quiet") == 0
    assert capsys.readouterr() == ("", "")
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "summary.json", "timeseries.csv",
                                                      "timeseries.npz"]
    first = json.loads((out / "summary.json").read_text())
    assert _run(tmp_path, SCENES / "four_bar.json", "--duration", 0.1, "--out", out, "--force", "--quiet") == 0
    assert json.loads((out / "summary.json").read_text())["steps"] == 2 * first["steps"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]                     # no staging folder left


def test_force_replaces_only_an_earlier_output_of_run(tmp_path, capsys, monkeypatch):
    """Issue 28's first reproducer: ``--out precious --force`` removed thesis.tex and sub/. Now --force replaces
    only a folder that run wrote, holding nothing else, and never the folder the command runs in."""
    precious = tmp_path / "precious"
    (precious / "sub").mkdir(parents=True)
    (precious / "thesis.tex").write_text("x")
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", precious, "--force") == 2
    err = capsys.readouterr().err
    assert "thesis.tex" in err and "sub/" in err and "Traceback" not in err
    assert (precious / "thesis.tex").read_text() == "x" and (precious / "sub").is_dir()

    out = tmp_path / "out"
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", out, "--quiet") == 0
    (out / "notes.txt").write_text("mine")                                   # the user's file in a run's folder
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", out, "--force") == 2
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    monkeypatch.chdir(out)                                                   # --out ../out from inside out
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", "../out", "--force") == 2
    assert "runs in" in capsys.readouterr().err and (out / "summary.json").exists()
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()                                                            # nothing to lose: replaced
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", empty, "--force",
                "--quiet") == 0
    assert (empty / "summary.json").exists()


def test_endless_runs_are_refused_before_starting(tmp_path, capsys):
    for args in (("--duration", 1e300), ("--duration", 1, "--dt", 1e-8), ("--duration", 20, "--max-steps", 100)):
        assert _run(tmp_path, SCENES / "four_bar.json", *args, "--out", tmp_path / "x") == 2
        assert "steps" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert _run(tmp_path, SCENES / "four_bar.json", "--duration", 0.2, "--max-steps", 200, "--out",
                tmp_path / "x", "--quiet") == 0


def test_run_outputs_keep_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        assert _run(tmp_path, SCENES / "four_bar.json", "--duration", 0.02, "--out", tmp_path / "o", "--quiet") == 0
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "o").st_mode & 0o777 == 0o750
    for f in (tmp_path / "o").iterdir():
        assert os.stat(f).st_mode & 0o777 == 0o640, f


def test_quiet_prints_nothing_and_events_are_bounded(tmp_path, capsys):
    scene = SCENES / "slider_crank.json"
    assert _run(tmp_path, scene, "--duration", 20, "--out", tmp_path / "q", "--quiet") == 0
    assert capsys.readouterr() == ("", "")
    assert _run(tmp_path, scene, "--duration", 20, "--out", tmp_path / "v") == 0
    err = capsys.readouterr().err.splitlines()
    events = json.loads((tmp_path / "v" / "summary.json").read_text())["events"]
    if sum(e["type"] == "rank_deficient" for e in events) > 10:
        assert len(err) == 11 and "more event(s)" in err[-1]


def test_streamed_output_equals_the_records_in_memory(tmp_path):
    """The NPZ and CSV written chunk by chunk hold exactly the arrays of ``Simulation.run`` in memory."""
    model = core.load_scene(SCENES / "arm_on_line_pidc.json")
    whole = core.Simulation(model).run(10.0)                       # > 2 chunks of 4096 rows
    assert _run(tmp_path, SCENES / "arm_on_line_pidc.json", "--duration", 10, "--out", tmp_path / "s",
                "--quiet") == 0
    data = np.load(tmp_path / "s" / "timeseries.npz")
    assert set(data) == set(whole) | set(event_arrays([]))          # the records, and the event log's arrays
    for key in whole:
        np.testing.assert_array_equal(data[key], whole[key])
    table = np.loadtxt(tmp_path / "s" / "timeseries.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(table[:, 0], whole["t"])


def test_kill_minus_9_leaves_old_or_new_output(tmp_path):
    """``kill -9`` at several moments of ``core run --force``: the output folder is always one complete run
    (the old one, or the new one), never a mixture."""
    out = tmp_path / "out"
    scene = SCENES / "chain20_nailed.json"
    cmd = [sys.executable, "-m", "core", "run", str(scene), "--out", str(out), "--force", "--quiet"]
    subprocess.run(cmd + ["--duration", "0.5"], check=True, cwd=ROOT, timeout=120)
    old = (out / "summary.json").read_text()
    seen = set()
    for delay in (0.5, 1.5, 2.5, 3.5, 5.0):
        proc = subprocess.Popen(cmd + ["--duration", "4"], cwd=ROOT)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        names = sorted(p.name for p in out.iterdir())
        assert names == [OUTPUT_MARKER, "summary.json", "timeseries.csv", "timeseries.npz"], names
        summary = json.loads((out / "summary.json").read_text())
        data = np.load(out / "timeseries.npz")
        assert len(data["t"]) == summary["records"]
        assert len((out / "timeseries.csv").read_text().splitlines()) == summary["records"] + 1
        seen.add("old" if (out / "summary.json").read_text() == old else "new")
    assert "old" in seen


def test_summary_is_strict_json():
    from core.output import strict_json
    nulls = {}
    clean = strict_json({"a": float("nan"), "b": [1.0, np.float64("inf")], "c": np.int64(3)}, nulls)
    assert json.dumps(clean, allow_nan=False) == '{"a": null, "b": [1.0, null], "c": 3}'
    assert set(nulls) == {"a", "b[1]"}


# ---- sweeps --------------------------------------------------------------------------------------------------
def test_a_label_the_scene_refuses_stops_the_sweep_before_any_trial(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"arms": ["uno_kawato"], "controllers": ["pd", "m100"], "adapt": 0.1,
                                "measure": 0.1, "figures": False}))
    assert core_main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "$.controllers[1]" in err and "less than or equal to 64" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_a_trial_that_raises_is_a_failed_row(tmp_path):
    from core.bench.sweep import make_trials, parse_sweep_spec, run_sweep
    res = parse_sweep_spec({"arms": ["uno_kawato"], "controllers": ["pd", "m2"], "adapt": 0.1, "measure": 0.1,
                            "figures": False, "traces": False}, base=ROOT)
    broken = copy.deepcopy(res.arms["uno_kawato"])
    broken["bodies"][0]["joint"]["type"] = "ball"              # valid scene, but the bench drives hinges only
    res.arms["uno_kawato"] = broken
    assert make_trials(res)
    summary = run_sweep(res, tmp_path / "o", workers=1, progress=False)
    import csv
    rows = list(csv.DictReader(open(tmp_path / "o" / "results.csv")))
    assert rows and all(r["status"] == "failed" and r["reason"].startswith("failed: ") for r in rows)
    assert summary["failed"] == len(rows) == summary["trials"]


@pytest.mark.parametrize("address", ["notanaddress", "tcp://host", "tcp://host:99999", "http://h:1", ""])
def test_dask_addresses_are_checked(tmp_path, capsys, address):
    assert core_main(["sweep", str(SCENES / "sweeps" / "small.json"), "--out", str(tmp_path / "o"),
                      "--dask", address]) == 2
    err = capsys.readouterr().err
    assert "scheduler address" in err or "port" in err


def test_a_refused_dask_connection_is_reported_at_once():
    from core.bench.sweep import ClusterError, connect_dask
    import socket
    with socket.socket() as s:                                  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    with pytest.raises(ClusterError, match="refused"):
        connect_dask(f"tcp://127.0.0.1:{port}")
    assert time.perf_counter() - start < 2


def test_a_dask_scheduler_without_workers_is_reported_after_the_timeout(monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    import core.bench.sweep as sweep
    monkeypatch.setattr(sweep, "DASK_WORKER_TIMEOUT", 2.0)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp",
                                  host="127.0.0.1") as cluster:
        start = time.perf_counter()
        with pytest.raises(sweep.ClusterError, match="no workers after 2 s"):
            sweep.connect_dask(cluster.scheduler_address)
        assert time.perf_counter() - start < 10


# ---- files ---------------------------------------------------------------------------------------------------
def test_saving_through_a_symlink_writes_its_target_and_keeps_modes(tmp_path):
    spec = read_spec(SCENES / "four_bar.json")
    target = tmp_path / "real.json"
    target.write_text("{}")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    core.save_scene(spec, link)
    assert link.is_symlink() and read_spec(target) == spec and os.stat(target).st_mode & 0o777 == 0o640
    old = os.umask(0o077)
    try:
        core.save_scene(spec, tmp_path / "new.json")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "new.json").st_mode & 0o777 == 0o600
    core.save_scene(spec, tmp_path / "new2.json")
    assert os.stat(tmp_path / "new2.json").st_mode & 0o777 == 0o666 & ~old


def test_studio_save_document_follows_symlinks(tmp_path):
    from studio.document.jsontext import save_document
    text = (SCENES / "four_bar.json").read_text()
    target = tmp_path / "real.json"
    target.write_text(text)
    os.chmod(target, 0o604)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    spec = read_spec(target)
    spec.simulation.dt = 0.002
    save_document(spec, link, base=text)
    assert link.is_symlink() and read_spec(target).simulation.dt == 0.002
    assert os.stat(target).st_mode & 0o777 == 0o604


def test_studio_file_open_shows_problems_and_keeps_the_document(qapp, tmp_path):
    from PySide6.QtCore import QSettings
    from studio.qt.document.document import SceneDocument
    from studio.qt.window.files import FileActions
    document = SceneDocument(read_spec(SCENES / "four_bar.json"), SCENES / "four_bar.json")
    actions = FileActions(document, QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), None)
    errors = []
    actions.error.connect(errors.append)
    bad = {"utf16.json": (SCENES / "four_bar.json").read_text().encode("utf-16"),
           "deep.json": b"[" * 50_000 + b"]" * 50_000,
           "parent.json": json.dumps(_with("arm_on_line_pidc",
                                           lambda d: d["bodies"][1].__setitem__("parent", ["a"]))).encode(),
           "cylinder.json": json.dumps(_with("arm_on_line_pidc", CRASHERS["cylinder length 5e-324"][0])).encode()}
    for name, data in bad.items():
        (tmp_path / name).write_bytes(data)
        assert not actions.open_path(tmp_path / name, ask=False)
        assert name in errors[-1] and "$" in errors[-1] and "Traceback" not in errors[-1], errors[-1]
        assert document.spec.name == "four_bar"
    assert actions.open_path(SCENES / "three_link_arm.json", ask=False)
    assert document.spec.name == "three_link_arm"


def test_studio_start_up_with_an_unreadable_file_says_why(tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes('{"format_version": 1, "name": "caf\u00e9"}'.encode("latin-1"))
    proc = subprocess.run([sys.executable, "-m", "studio", str(bad)], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert proc.returncode == 2 and "not UTF-8" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_read_document_never_raises_other_errors(tmp_path):
    for path in (tmp_path / "missing.json", tmp_path, "bad\x00name.json"):
        with pytest.raises(SceneError):
            read_document(path)


def test_the_kernel_cache_counts_as_complete_only_with_warms_stamp_for_these_sources(tmp_path, monkeypatch):
    """A cache that a cut-off compile left half full, or one whose sources were touched since, is not complete:
    setup and the studio then compile (in the background) instead of compiling inside the first step."""
    import core.jit
    from core.warmup import _stamp
    monkeypatch.delenv("LIMBSTUDIO_NO_JIT", raising=False)
    monkeypatch.setattr(core.jit, "cache_dir", lambda: tmp_path)
    (tmp_path / "integrators.advance-1.py311.nbi").write_bytes(b"half")     # a kernel's index, no stamp
    assert not core.jit.kernels_cached()
    _stamp()
    assert core.jit.kernels_cached()
    touched = core.jit.source_stamps()
    name = sorted(touched)[0]
    touched[name][0] += 1.0
    monkeypatch.setattr(core.jit, "source_stamps", lambda: touched)
    assert not core.jit.kernels_cached()
    (tmp_path / core.jit.WARM_STAMP).write_text("not json")
    assert not core.jit.kernels_cached()


_DAMPED_MJCF = """<mujoco model="damped">
  <option timestep="0.002" integrator="RK4"/>
  <worldbody>
    <body name="link" pos="0 0 1">
      <joint name="j" type="hinge" axis="0 1 0" damping="5"/>
      <geom type="capsule" fromto="0 0 0 0.05 0 0" size="0.01" mass="0.02"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_a_run_whose_energy_books_blow_up_is_diverged_not_complete(tmp_path, capsys):
    """Issue 28, reproducer 2: a 20 g link 5 cm long with MuJoCo-style joint damping (time constant I/d ≈ 3 µs)
    under RK4 at 2 ms pumps energy in without bound while every number stays finite (q reached 1e24). Judged by
    the energy audit, the run stops at the last good step, exit 3, keeping what came before."""
    scene = tmp_path / "damped.xml"
    scene.write_text(_DAMPED_MJCF)
    out = tmp_path / "out"
    assert _run(tmp_path, scene, "--duration", 1, "--out", out, "--quiet") == 3
    assert "energy audit" in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "diverged" and "energy audit" in summary["diverged"]["message"]
    data = np.load(out / "timeseries.npz")
    E = np.abs(data["energy_kinetic"]) + np.abs(data["energy_gravity"])
    scale = max(abs(data["energy_total"][0]), E.max())
    assert np.all(np.abs(data["energy_error"]) <= 0.5 * scale)               # every kept record's books hold
    sim = core.Simulation(compile_scene(read_spec(scene), str(scene)))
    with pytest.raises(core.DivergenceError, match="energy audit"):
        for _ in range(10):
            sim.step()
    assert sim.state.t < 0.01 and abs(sim.state.q[0]) < 10 and abs(sim.energy_error()) <= 0.5 * abs(sim._energy0)
    # the same link with a step the damper allows runs to the end, its books balanced
    stable = Path(str(scene).replace("damped", "stable"))
    stable.write_text(_DAMPED_MJCF.replace('timestep="0.002"', 'timestep="0.000002"'))
    sim = core.Simulation(compile_scene(read_spec(stable), str(stable)))
    sim.run(0.01)
    assert abs(sim.energy_error()) < 1e-6


def test_adaptive_runs_are_bounded_by_the_steps_they_take(tmp_path, capsys):
    """Issue 28, reproducer 3: cash_karp with a tolerance no double can meet accepted only 1e-12 s steps and wrote
    430 MB a minute, because the guard counted duration / dt. Such a tolerance is refused by the validator, and a
    run whose adaptive steps come out shorter than dt stops at --max-steps steps taken, keeping its records."""
    spec = json.loads((SCENES / "four_bar.json").read_text())
    spec.setdefault("simulation", {}).update(integrator="cash_karp", tolerance=1e-30)
    scene = tmp_path / "tight.json"
    scene.write_text(json.dumps(spec))
    assert _run(tmp_path, scene, "--duration", 1, "--out", tmp_path / "a") == 2
    assert "$.simulation.tolerance" in capsys.readouterr().err and not (tmp_path / "a").exists()
    spec["simulation"]["tolerance"] = 1e-14                                 # met, with steps below dt = 1 ms
    scene.write_text(json.dumps(spec))
    out = tmp_path / "b"
    assert _run(tmp_path, scene, "--duration", 1, "--max-steps", 1000, "--out", out, "--quiet") == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "diverged" and "1000 steps" in summary["diverged"]["message"]
    assert summary["records"] == 1001 and summary["diverged"]["last_good_t_s"] < 0.9


def test_event_isolation_ends_below_the_spacing_of_doubles(tmp_path):
    """Issue 28, reproducer 4: the ball dropped from 10 m with event_tolerance 1e-15 (below the spacing of doubles
    at t = 8 s) spun for ever at its bounce. The bisection runs on the step's own offsets: it ends, and every
    bounce is isolated."""
    spec = json.loads((SCENES / "bouncing_ball.json").read_text())
    spec["bodies"][0]["joint"]["q0"][2] = 10.0
    spec["simulation"]["event_tolerance"] = 1e-15
    sim = core.Simulation(compile_scene(parse_spec(spec), "ball"))
    sim.run(9.0)
    bounces = [e for e in sim.events if e.kind == "bounce"]
    assert len(bounces) >= 5 and bounces[4].t > 8.0
    assert sim.state.q[2] > 0.1 - 1e-9
    # and isolated where the analytic bounces are: the fall of 9.9 m, then flights of 2 v_k / g with v_k = e^k v_1
    g, e = 9.81, 0.8
    v = math.sqrt(2 * g * 9.9)
    expected = [v / g]
    for _ in range(4):
        v *= e
        expected.append(expected[-1] + 2 * v / g)
    np.testing.assert_allclose([b.t for b in bounces[:5]], expected, rtol=0, atol=1e-9)


def test_a_program_naming_a_spring_as_its_actuator_is_refused_by_the_validator(tmp_path, capsys):
    """Issue 28, reproducer 9: the hopper's program given ``"leg_actuator": "air_spring"`` (a joint spring, not
    an actuator) passed validation and then raised KeyError at run time, losing the records."""
    spec = json.loads((SCENES / "raibert_hopper.json").read_text())
    spec["programs"][0]["parameters"]["leg_actuator"] = "air_spring"
    scene = tmp_path / "hopper.json"
    scene.write_text(json.dumps(spec))
    assert _run(tmp_path, scene, "--duration", 0.1, "--out", tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert "$.programs[0].parameters.leg_actuator" in err and "hip_motor, leg_motor" in err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["ground", "ground.0", "ground.corner"])
def test_a_constraint_named_like_a_contacts_points_is_refused(name):
    """Issue 28, reproducer 10: a constraint ``ground.0`` beside a contact ``ground`` (whose first point is
    ``ground.0``) gave two CSV columns one name and lost a summary key."""
    spec = json.loads((SCENES / "bouncing_ball.json").read_text())
    spec["constraints"] = [{"type": "nail", "name": name, "body": "ball", "point": [0, 0, 0]}]
    with pytest.raises(SceneError) as err:
        parse_spec(spec, "clash")
    assert "$.constraints[0].name" in str(err.value) and "contacts[0] 'ground'" in str(err.value)
    spec["constraints"][0]["name"] = "grounded"                              # a name that only starts alike
    parse_spec(spec, "fine")


def test_a_pipe_or_device_named_as_a_scene_spec_or_mesh_is_refused_without_blocking(tmp_path, capsys):
    """Issue 28, reproducer 11: a scene or sweep spec that is a FIFO blocked the command for ever."""
    fifo = tmp_path / "scene.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    assert core_main(["validate", str(fifo)]) == 2
    assert "not a regular file (a pipe (FIFO))" in capsys.readouterr().out
    assert _run(tmp_path, fifo, "--duration", 0.1, "--out", tmp_path / "o") == 2
    assert core_main(["sweep", str(fifo), "--out", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err.count("not a regular file") == 2
    assert core_main(["validate", "/dev/zero"]) == 2 and "(a device)" in capsys.readouterr().out
    from core.meshfile import MeshError, read_mesh
    mesh = tmp_path / "part.stl"
    os.mkfifo(mesh)
    with pytest.raises(MeshError, match="not a (regular )?file"):
        read_mesh(mesh)
    assert time.monotonic() - start < 10 and not (tmp_path / "o").exists()


def test_contact_points_are_bounded_by_the_validator():
    """Issue 28, reproducer 5: default contact points come from every box corner, so a small file (400 boxes on
    one body: 3200 points) took gigabytes; the validator now refuses more than MAX_CONTACT_POINTS, naming the
    contact, and a scene at the limit runs: a column of boxes on one body, landing on its lowest box's corners
    (a flat grid of them, every bottom corner resting together, took 70 s for 0.3 s at 512 points — hundreds of
    dependent rows on one body: a test of the solve, not of the limit)."""
    def boxes(n):
        shapes = [{"type": "box", "size": [0.1, 0.1, 0.1], "position": [0, 0, 0.12 * i], "mass": 0.1}
                  for i in range(n)]
        return {"format_version": 1, "name": "boxes", "gravity": [0, 0, -9.81],
                "bodies": [{"name": "b", "parent": "world", "joint": {"type": "free", "q0": [0, 0, 0.2, 1, 0, 0, 0]},
                            "shapes": shapes}],
                "contacts": [{"name": "ground", "body": "b", "friction": 0.5}]}
    with pytest.raises(SceneError) as err:
        compile_scene(parse_spec(boxes(400), "boxes"), "boxes")
    assert "$.contacts[0]" in str(err.value) and f"the {limits.MAX_CONTACT_POINTS} a scene may have" in str(err.value)
    with pytest.raises(SceneError):
        compile_scene(parse_spec(boxes(limits.MAX_CONTACT_POINTS // 8 + 1), "boxes"), "boxes")
    model = compile_scene(parse_spec(boxes(limits.MAX_CONTACT_POINTS // 8), "boxes"), "boxes")
    assert sum(len(c.points) for c in model.contacts) == limits.MAX_CONTACT_POINTS
    sim = core.Simulation(model)
    sim.run(0.3)                                          # it lands on its lowest box's four corners and rests
    assert abs(sim.state.q[2] - 0.05) < 1e-6 and np.abs(sim.state.qd).max() < 1e-6
    touching = [e for e in sim.events if e.kind == "touchdown"]
    assert len({e.what for e in touching}) == 4 and abs(touching[0].t - np.sqrt(2 * 0.15 / 9.81)) < 1e-6


def test_sweep_and_compare_refuse_an_out_that_is_a_file(tmp_path, capsys):
    """Issue 28, reproducer 8 (its last part): ``sweep``/``compare --out EXISTING_FILE`` gave tracebacks."""
    existing = tmp_path / "notes.txt"
    existing.write_text("mine")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"arms": ["uno_kawato"], "controllers": ["pd"], "adapt": 0.1, "measure": 0.1,
                                "figures": False}))
    for out in (existing, existing / "sub"):
        assert core_main(["sweep", str(spec), "--out", str(out), "--workers", "1"]) == 2
        assert core_main(["compare", str(SCENES / "four_bar.json"), "--duration", "0.05", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("is not a folder") == 2 and "Traceback" not in err
    assert existing.read_text() == "mine"


def test_the_event_log_of_a_long_run_is_bounded(monkeypatch):
    """Issue 28, reproducer 11: ``Simulation.events`` grew without bound (433 MB at 77 639 events). The log keeps
    the newest MAX_EVENTS, counts the rest, and a snapshot restores both."""
    import core.simulation
    monkeypatch.setattr(core.simulation, "MAX_EVENTS", 5)
    sim = core.Simulation(core.load_scene(SCENES / "raibert_hopper.json"))
    for _ in range(10):
        before = len(sim.events) + sim.events_dropped
        sim.run(0.2)
        new = len(sim.events) + sim.events_dropped - before                # (the hopper logs 5-20 a call)
        assert len(sim.events) <= 5 + new                                  # (trimmed at each call's start)
    assert sim.events_dropped > 0
    total = len(sim.events) + sim.events_dropped
    snap = sim.snapshot()
    sim.run(0.5)
    assert len(sim.events) + sim.events_dropped > total
    sim.restore(snap)
    assert len(sim.events) + sim.events_dropped == total
    times = [e.t for e in sim.events]
    assert times == sorted(times) and times[-1] <= sim.state.t             # the newest kept, in order


def test_a_meshs_side_files_are_bounded_and_never_block(tmp_path):
    """Issue 28, reproducer 7: an OBJ's ``mtllib`` or a glTF's buffer that is a FIFO blocked the importer (and the
    studio's GUI thread), and side files bypassed the 64 MiB limit. They are read through the same bounded,
    non-blocking reader as the mesh: the FIFO material is skipped, the mesh still read."""
    from core.meshfile import read_mesh
    os.mkfifo(tmp_path / "mat.mtl")
    (tmp_path / "part.obj").write_text("mtllib mat.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    done = []
    worker = __import__("threading").Thread(target=lambda: done.append(read_mesh(tmp_path / "part.obj")),
                                            daemon=True)
    worker.start()
    worker.join(20)
    assert done and done[0].faces.shape == (1, 3)


def _dies_on_m1(trial):
    """A trial runner whose worker process dies on the m1 trials (as if killed, or out of memory)."""
    from core.bench.trial import run_trial
    if trial["controller"] == "m1":
        os._exit(1)
    return run_trial(trial)


def test_a_sweep_is_staged_and_a_dead_worker_fails_only_its_trials(tmp_path, capsys, monkeypatch):
    """Issue 28, reproducer 8: a sweep wrote into its folder as it went (kill -9 left it incomplete or mixing two
    sweeps), and one dead worker marked every trial failed. Now its output is staged and renamed when whole, an
    existing folder needs --force (and must be an earlier sweep's), and only the trial that kills its worker
    fails."""
    import core.bench.sweep as sweep
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"arms": ["uno_kawato"], "controllers": ["pd", "m1", "m2"], "adapt": 0.1,
                                "measure": 0.1, "figures": False}))
    out = tmp_path / "out"
    monkeypatch.setattr(sweep, "run_trial", _dies_on_m1)
    assert core_main(["sweep", str(spec), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    rows = list(__import__("csv").DictReader((out / "results.csv").open()))
    status = {r["controller"]: r["status"] for r in rows}
    assert status["m1"] == "failed" and status["pd"] != "failed" and status["m2"] != "failed", status
    assert "worker process died" in json.loads((out / "summary.json").read_text())["failed_trials"][0]["reason"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "spec.json"]          # nothing left beside it
    assert (out / OUTPUT_MARKER).exists()
    assert core_main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 2
    assert "--force" in capsys.readouterr().err
    monkeypatch.undo()
    assert core_main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--force"]) == 0
    assert all(r["status"] != "failed" for r in __import__("csv").DictReader((out / "results.csv").open()))
    (out / "mine.txt").write_text("x")
    assert core_main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--force"]) == 2
    assert "mine.txt" in capsys.readouterr().err


def test_ctrl_c_stops_a_run_within_a_second_and_leaves_nothing_half_written(tmp_path):
    """Issue 28: Ctrl-C gave a traceback. A run stops within a second of SIGINT, says so, exits 130, and leaves the
    earlier output as it was with no partial folder beside it."""
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "core", "run", str(SCENES / "chain20_nailed.json"), "--out", str(out), "--quiet"]
    subprocess.run(cmd + ["--duration", "0.1"], check=True, cwd=ROOT, timeout=120)
    before = (out / "summary.json").read_text()
    proc = subprocess.Popen(cmd + ["--duration", "100", "--force"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120.0                  # stepping: its records reach its staging folder (not
    while time.monotonic() < deadline:                   # still starting or compiling, which a signal may not cut)
        if any(f.stat().st_size > 0 for f in tmp_path.glob(".out.partial-*/*.csv")):
            break
        time.sleep(0.1)
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 1.5 and proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert (out / "summary.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_staging_folders_of_killed_runs_are_cleaned_by_the_next_run(tmp_path):
    """Issue 28, item 12: a killed run left its hidden ``.out.partial-…`` folder behind for ever. The folder names
    its process; the next run into the same output removes those whose process is gone, never a live one's."""
    dead = tmp_path / ".out.partial-999999999-abcd"
    live = tmp_path / f".out.partial-{os.getpid()}-efgh"
    other = tmp_path / ".other.partial-999999999-ijkl"
    for folder in (dead, live, other):
        folder.mkdir()
        (folder / "timeseries.csv").write_text("half")
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", tmp_path / "out",
                "--quiet") == 0
    assert not dead.exists() and live.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "out"])


def test_a_run_that_another_run_overtook_does_not_overwrite_it_silently(tmp_path):
    """Issue 28, item 12: two ``run --force`` into one folder at once: the one that finished last replaced the other
    without a word. Now a run whose output another run replaced while it ran keeps its own output aside and says
    so."""
    from core.output import RunWriter
    from core.step import record_layout
    out = tmp_path / "out"
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.05, "--out", out, "--quiet") == 0
    sim = core.Simulation(core.load_scene(SCENES / "bouncing_ball.json"))
    slow = RunWriter(out, sim.model, record_layout(sim.model, sim.inputs), replace=True)  # a first run starts …
    sim.run(0.05, sink=slow)
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--duration", 0.1, "--out", out, "--force",
                "--quiet") == 0                                                   # … a second one finishes
    theirs = (out / "summary.json").read_text()
    with pytest.raises(FileExistsError, match="written by another run while this one ran"):
        slow.finish(sim)
    assert (out / "summary.json").read_text() == theirs and (slow.staged / "summary.json").exists()


def test_sweep_grids_and_trial_lengths_are_bounded_by_the_spec_check(tmp_path, capsys):
    """Issue 28, reproducer 11: sweep grids and ``adapt`` had no bounds. The grid's trials (η counted for the
    adaptive controllers only) and a trial's simulated seconds are checked with the spec, before any trial."""
    spec = tmp_path / "spec.json"
    etas = [0.01 * (i + 1) for i in range(256)]
    k = [0.1 * (i + 1) for i in range(20)]
    spec.write_text(json.dumps({"arms": ["uno_kawato", "slotine_li"], "controllers": ["pd", "m1"], "k": k,
                                "eta": etas}))
    assert core_main(["sweep", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "the grid has 10280 trials" in capsys.readouterr().err               # 2 × 20 × (1 + 256)
    spec.write_text(json.dumps({"adapt": 1e9}))
    assert core_main(["sweep", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "$.adapt" in capsys.readouterr().err and not (tmp_path / "o").exists()
    from core.bench.sweep import parse_sweep_spec
    parse_sweep_spec({"arms": ["uno_kawato"], "controllers": ["pd", "m1"], "k": k, "eta": etas}, "fine")  # 5140


# ---- issue 28, round two: the chatter guard on cost, fuzzer findings, robot files' paths -------------------------
def test_chatter_is_bounded_by_its_cost(tmp_path, capsys):
    """Issue 28, reproducer 5: chattering contacts ran 28–68 s before the 64-events-per-step guard ended them, since
    fewer events than that in every step can cost many times the steps. The events' work (the bisections that
    isolate them, and the control programs' answers) is now bounded per step over the last steps: the hopper with
    restitution 1 (its foot chatters on the ground, about three events a step, each answered by its program) took
    3.2 s for 1.3 s of hopping before "more than 64 events" ended it; it now stops within 0.5 s by its events'
    cost. So does a ball bouncing with restitution 0.99 on a stiff spring (no program: the isolating trials alone),
    where either guard may come first: with bisection (about 20 trials an event) it was the cost, with regula falsi
    (3–6) the 64 events inside one step at 0.2 s."""
    hopper = json.loads((SCENES / "raibert_hopper.json").read_text())
    hopper["contacts"][0]["restitution"] = 1.0
    ball = json.loads((SCENES / "bouncing_ball.json").read_text())
    ball["contacts"][0].update(restitution=0.99, rest_speed=1e-30)
    ball["forces"] = [{"type": "spring", "name": "pull", "body_a": "ball", "point_a": [0, 0, 0],
                       "point_b": [0, 0, -0.5], "stiffness": 1e6}]
    for spec, message in ((hopper, "contact events cost more than 8 steps' work per step"),
                          (ball, "contact events cost more than 8 steps' work per step|more than 64 contact events "
                                 "inside one step")):
        sim = core.Simulation(compile_scene(parse_spec(spec), spec["name"]))
        with pytest.raises(core.DivergenceError, match=message):
            sim.run(12.0)
        assert 0.05 < sim.state.t < 0.5 and np.isfinite(sim.state.q).all()
        assert sim.state.event_work > 0
    scene = tmp_path / "hopper.json"                          # the command line: exit 3, the records kept
    scene.write_text(json.dumps(hopper))
    assert _run(tmp_path, scene, "--duration", 12, "--out", tmp_path / "o", "--quiet") == 3
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["status"] == "diverged" and "chatter" in summary["diverged"]["message"]
    assert "Traceback" not in capsys.readouterr().err
    # a clean hopper's events stay far below the bound, and a bouncier one that completes stays below it (its foot
    # bounces about 36 times a landing before it rests; measured at 3 s: 466 and 3779 of the 8000 the bound allows,
    # 0.07 and 0.49 of it at their peaks over 12 s, the hopper under Kearney's stance law)
    for restitution, share in ((0.0, 0.1), (0.9, 0.6)):
        hopper["contacts"][0]["restitution"] = restitution
        sim = core.Simulation(compile_scene(parse_spec(hopper), "hopper"))
        sim.run(3.0)
        assert sim.state.event_work < share * 8 * 1000


@pytest.mark.parametrize("parameter, value, message", [
    ("momentum_gain", [1.0], "must be a number"),
    ("hip_point", 1.0, "must be a list of 3 numbers"),
    ("hip_point", [0.0, 0.0], "must be a list of 3 numbers"),
    ("foot", 1.0, "must be a name"),
])
def test_a_program_parameter_of_another_kind_is_named(parameter, value, message):
    """Found by tests/test_fuzz_sections.py: the hopper's ``momentum_gain`` given as a list passed the kind check
    (only names against numbers were told apart) and raised TypeError in the program's own check ("please
    report it")."""
    spec = json.loads((SCENES / "anthropomorphic_hopper.json").read_text())
    spec["programs"][0]["parameters"][parameter] = value
    with pytest.raises(SceneError) as exc:
        compile_scene(parse_spec(spec), "hopper")
    (p,) = exc.value.problems
    assert p.path == f"$.programs[0].parameters.{parameter}" and message in p.message
    assert "please report it" not in p.message


def test_a_time_step_too_short_to_move_the_clock_is_refused(tmp_path, capsys):
    """Found by tests/test_fuzz_sections.py: ``dt: 1e-30`` was accepted, and its steps (shorter than the 1e-12 s
    below which a step is not taken) counted without moving t: ``Simulation.run`` never ended, and the command
    line was saved only by its step budget. The validator, the Simulation and ``--dt`` refuse a dt below 1 ns."""
    spec = json.loads((SCENES / "bouncing_ball.json").read_text())
    spec["simulation"]["dt"] = 1e-30
    problems = _problems(spec)
    assert [p.path for p in problems] == ["$.simulation.dt"], problems
    model = compile_scene(read_spec(SCENES / "bouncing_ball.json"))
    with pytest.raises(ValueError, match="at least 1e-09 s"):
        core.Simulation(model, dt=1e-12)
    with pytest.raises(ValueError, match="at least 1e-09 s"):
        core.Simulation(model).set_integrator("rk4", dt=1e-13)
    assert _run(tmp_path, SCENES / "bouncing_ball.json", "--dt", 1e-12, "--duration", 1e-9, "--out",
                tmp_path / "o") == 2
    err = capsys.readouterr().err
    assert "time step must be at least 1e-09 s" in err and "Traceback" not in err


def test_urdf_mass_properties_past_the_number_limits_are_named(tmp_path):
    """Found by tests/test_fuzz_sections.py: a URDF root link with ``iyy="1e308"`` and a rotated inertial
    overflowed the rotation into the link frame, and the inertia check raised LinAlgError ("please report it").
    Mass properties are held to a scene's number limits, at their URDF attribute."""
    urdf = tmp_path / "big.urdf"
    urdf.write_text('<robot name="big"><link name="base"><inertial><origin rpy="0 0 0.3"/><mass value="1"/>'
                    '<inertia ixx="0.3" ixy="0.01" ixz="0" iyy="1e308" iyz="0" izz="0.5"/></inertial></link>'
                    '<link name="arm"><inertial><mass value="1e13"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                    'izz="1"/></inertial></link><joint name="j" type="continuous"><parent link="base"/>'
                    '<child link="arm"/></joint></robot>')
    with pytest.raises(SceneError) as exc:
        core.load_urdf(urdf)
    paths = {p.path: p.message for p in exc.value.problems}
    assert "magnitude of at most 1e+12" in paths["robot/link[@name='base']/inertial/inertia/@iyy"]
    assert "magnitude of at most 1e+12" in paths["robot/link[@name='arm']/inertial/mass/@value"]
    assert not any("please report it" in m for m in paths.values())


def _robot_messages(folder: Path, text: str, read) -> list[str]:
    """The problems and warnings of reading the robot file ``text`` written into ``folder``."""
    import warnings
    file = folder / ("robot.urdf" if text.startswith("<robot") else "robot.xml")
    file.write_text(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            read(file)
        except SceneError as exc:
            return [str(p) for p in exc.problems]
    return [str(w.message) for w in caught]


def test_messages_about_robot_files_outside_their_folder_do_not_tell_whether_they_exist(tmp_path):
    """Issue 28, item 12: a robot file's mesh or include outside its folder was "not found" when missing and "could
    not be read (not a mesh format…)" or MuJoCo's "no decoder" when present — the messages told whether any path
    on the machine exists. A path outside the robot's folder (links followed, ``..`` resolved; ``package://`` a
    parent folder that is not the robot's own package) now gets one message whatever is there; inside the folder
    the messages say why, and a usable file outside is still used."""
    from core.scene.mjcf import mjcf_to_spec
    robot, elsewhere = tmp_path / "robot", tmp_path / "elsewhere"
    robot.mkdir()
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "secret.stl").write_text("not a mesh")
    (elsewhere / "secret").write_text("no suffix")
    (elsewhere / "secret.xml").write_text("<secret><password>x</password></secret>")
    (elsewhere / "good.xml").write_text("<mujoco><worldbody/></mujoco>")
    (elsewhere / "notes.xml").write_text("not xml")
    os.mkfifo(elsewhere / "pipe.stl")
    (robot / "link.stl").symlink_to(elsewhere / "secret.stl")             # a link out of the folder, and one
    (robot / "dangling.stl").symlink_to(elsewhere / "nothing.stl")         # whose target is missing
    (robot / "broken.stl").write_text("not a mesh either")
    link = ('<link name="a"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" '
            'izz="0.01"/></inertial><visual><geometry><mesh filename="{}"/></geometry></visual></link>')
    urdf = '<robot name="r">' + link + '</robot>'
    mjcf_mesh = ('<mujoco><asset><mesh name="m" file="{}"/></asset><worldbody><body><joint type="hinge"/>'
                 '<geom type="sphere" size="0.1" mass="1"/><geom type="mesh" mesh="m"/></body></worldbody></mujoco>')
    mjcf_include = ('<mujoco><include file="{}"/><worldbody><body><joint type="hinge"/>'
                    '<geom type="sphere" size="0.1" mass="1"/></body></worldbody></mujoco>')
    there = {"urdf": ["../elsewhere/secret.stl", "../elsewhere/pipe.stl", "../elsewhere/deep", "../elsewhere/secret",
                      f"{elsewhere}/secret.stl", "file://" + f"{elsewhere}/secret.stl", "package://elsewhere/secret.stl",
                      "link.stl"],
             "mjcf": ["../elsewhere/secret.stl", "../elsewhere/pipe.stl", "../elsewhere/deep", "../elsewhere/secret",
                      f"{elsewhere}/secret.stl", "link.stl"],
             "include": ["../elsewhere/notes.xml", "../elsewhere/pipe.stl", "../elsewhere/deep",
                         "../elsewhere/secret.xml", f"{elsewhere}/notes.xml"]}
    cases = [("urdf", urdf, core.load_urdf), ("mjcf", mjcf_mesh, mjcf_to_spec), ("include", mjcf_include, mjcf_to_spec)]
    for kind, text, read in cases:
        for path in there[kind]:
            missing = path.replace("secret", "nothing").replace("notes", "nothing").replace("pipe", "nothing") \
                .replace("deep", "nothing").replace("link", "dangling")
            said, unsaid = (_robot_messages(robot, text.format(p), read) for p in (path, missing))
            assert said and [m.replace(missing, path) for m in unsaid] == said, (kind, path, said, unsaid)
            assert "outside" in said[0] and "not said" in said[0], said
    # inside the folder the reasons are given; a usable mesh outside is used
    said = _robot_messages(robot, urdf.format("broken.stl"), core.load_urdf)
    assert "could not be read (the mesh has no triangles)" in said[0]
    assert "was not found" in _robot_messages(robot, urdf.format("nothing.stl"), core.load_urdf)[0]
    (elsewhere / "good.stl").write_text("solid t\nfacet normal 0 0 1\n outer loop\n  vertex 0 0 0\n  vertex 1 0 0\n"
                                        "  vertex 0 1 0\n endloop\nendfacet\nendsolid t\n")
    (robot / "robot.urdf").write_text(urdf.format("../elsewhere/good.stl"))
    assert [s.kind for s in core.load_urdf(robot / "robot.urdf").shapes] == ["mesh"]
    assert "MuJoCo's compiler refused the file" in _robot_messages(robot, mjcf_mesh.format("broken.stl"),
                                                                   mjcf_to_spec)[0]
    (robot / "robot.xml").write_text(mjcf_include.format("../elsewhere/good.xml"))
    assert len(mjcf_to_spec(robot / "robot.xml").bodies) == 1
