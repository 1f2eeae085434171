"""The adaptive-control bench (thesis §3.4) and its sweep: the L2 metric (eq. 3.44), the thesis's headline
results on the Sanner–Slotine task, unstable trials detected and marked, and ``python -m core sweep`` end to
end (CSV columns, figures, spec errors, the Dask option)."""
from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from core.bench.trial import TRAJECTORIES, Trial, controller_spec, run_trial
from core.bench.sweep import COLUMNS, SweepSpecError, parse_sweep_spec

ROOT = Path(__file__).resolve().parent.parent
SCENES = ROOT / "scenes"


def trial(arm: str, controller: str, **kw) -> Trial:
    scene = json.loads((SCENES / f"{arm}_arm.json").read_text())
    base = dict(arm=arm, scene=scene, trajectory_name="sanner_slotine", trajectory=TRAJECTORIES["sanner_slotine"],
                k=1.0, controller=controller, eta=None if controller == "pd" else 0.01, gravity=False)
    return Trial(**{**base, **kw})


def test_l2_error_is_eq_3_44_over_the_measured_window():
    """PD on a set point reached exactly has zero error; a PD run's L2 equals the RMS of its traced errors over
    [adapt, adapt + measure] (eq. 3.29 by the rectangle rule of eq. 3.44)."""
    still = run_trial(trial("uno_kawato", "pd", k=0.0, adapt=0.5, measure=0.5))
    assert still.l2_error == 0.0 and not still.unstable
    r = run_trial(trial("uno_kawato", "pd", adapt=1.0, measure=1.0, integrator="rk4", dt=0.01, trace_every=0.01))
    t, e = r.traces["t"], r.traces["error"]
    window = (t >= 1.0 - 1e-9) & (t < 2.0 - 1e-9)
    assert r.l2_error == pytest.approx(math.sqrt(np.mean(np.sum(e[window] ** 2, axis=1))), rel=1e-5)


def test_unstable_trials_are_detected_not_fatal():
    """An adaptation gain far too high (η = 50) makes the loop diverge: the trial reports it instead of raising."""
    r = run_trial(trial("uno_kawato", "idsl", eta=50.0, adapt=2.0, measure=1.0, integrator="rk4", dt=0.01))
    assert r.unstable and math.isnan(r.l2_error) and r.reason


@pytest.mark.slow
def test_sanner_slotine_task_thesis_results():
    """Thesis §3.4 on the Sanner–Slotine task (K_p = 9, K_d = 1, η = 0.01, parameters from zero, 30 s adaptation,
    L2 over the next 10 s): on both arms every adaptive controller beats PD (normalized error < 1), and the
    model-based IDSL beats every mixture when there are no external forces. The L2 errors do not change
    materially with the integrator (Cash–Karp with 10 ms steps at most vs RK4 at 2 ms)."""
    controllers = ["pd", "idsl", "m1", "m2", "m4", "m8"]
    trials = [trial(arm, c) for arm in ("slotine_li", "uno_kawato") for c in controllers]
    trials += [trial("uno_kawato", c, integrator="rk4", dt=0.002) for c in ("idsl", "m4")]
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        results = list(ex.map(run_trial, trials))
    l2 = {(r.trial["arm"], r.trial["controller"], r.trial["integrator"]): r.l2_error for r in results}
    for arm in ("slotine_li", "uno_kawato"):
        pd = l2[(arm, "pd", "cash_karp")]
        normalized = {c: l2[(arm, c, "cash_karp")] / pd for c in controllers[1:]}
        assert all(v < 1.0 for v in normalized.values()), (arm, normalized)
        assert normalized["idsl"] < min(v for c, v in normalized.items() if c != "idsl"), (arm, normalized)
    for c in ("idsl", "m4"):
        assert l2[("uno_kawato", c, "rk4")] == pytest.approx(l2[("uno_kawato", c, "cash_karp")], rel=0.02)


TINY = {"arms": ["uno_kawato"], "trajectories": ["sanner_slotine", "bandwidth"], "k": [0.5, 1.0],
        "controllers": ["idsl", "m2"], "eta": [0.01, 200.0], "gravity": [False], "pd_gains": [[36, 2]],
        "adapt": 1.0, "measure": 0.5, "integrator": "rk4", "dt": 0.005}


def run_cli(*args, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **env})


def test_sweep_command_end_to_end(tmp_path):
    """A tiny grid through the command line on two workers: results.csv with the public columns, PD rows for the
    normalization (η empty), unstable trials marked (η = 200 with a fixed 5 ms RK4 step: the discretization
    instability of thesis fig. 3.7), figures written, summary.json."""
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps(TINY))
    out = tmp_path / "out"
    proc = run_cli("sweep", str(spec), "--out", str(out), "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    with open(out / "results.csv") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [dict(zip(header, r)) for r in reader]
    assert tuple(header) == COLUMNS
    # 4 tasks x (pd + pd at the second gain level + 2 controllers x 2 gains η)
    assert len(rows) == 4 * (2 + 2 * 2)
    pd = [r for r in rows if r["controller"] == "pd"]
    assert len(pd) == 4 and all(r["eta"] == "" and r["normalized_error"] == "1" for r in pd)
    assert {r["controller"] for r in rows} == {"pd", "pd_kp36_kd2", "idsl", "m2"}
    stable = [r for r in rows if r["eta"] == "0.01"]
    assert all(r["unstable"] == "false" and 0 < float(r["normalized_error"]) for r in stable)
    wild = [r for r in rows if r["eta"] == "200"]
    assert any(r["unstable"] == "true" and r["l2_error"] == "nan" for r in wild)
    for r in rows:
        if r["unstable"] == "false" and r["controller"] in ("idsl", "m2"):
            ref = next(p for p in pd if (p["trajectory"], p["k"]) == (r["trajectory"], r["k"]))
            assert float(r["normalized_error"]) == pytest.approx(float(r["l2_error"]) / float(ref["l2_error"]),
                                                                 rel=1e-8)
    for name in ("fig3_2_trajectories.png", "fig3_3_pd_l2_vs_k.png", "fig3_4_pd_fast_sinusoid.png",
                 "fig3_5_normalized_errors.png",
                 "fig3_6_mixture_fast_sinusoid.png", "fig3_7_adaptation_gain.png", "fig3_10_parameters.png"):
        assert (out / name).stat().st_size > 10_000, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == len(rows) and summary["unstable"] >= 1 and summary["workers"] == 2
    assert len(list((out / "traces").glob("*.npz"))) == len(rows)


def test_sweep_spec_errors_name_path_value_and_expectation(tmp_path):
    bad = {"arms": ["uno_kawato", "no_such_arm"], "trajectories": ["sanner_slotine", "zigzag"],
           "controllers": ["pd", "m0", "lqr"], "eta": [-1.0], "k": [1.0], "gravity": "yes", "colour": 1}
    with pytest.raises(SweepSpecError) as info:
        parse_sweep_spec(bad, "bad.json", ROOT)
    text = str(info.value)
    assert "$.colour: unknown field" in text and "$.eta[0]" in text and "$.gravity" in text
    bad.pop("colour"), bad.pop("gravity"), bad.pop("eta")
    with pytest.raises(SweepSpecError) as info:
        parse_sweep_spec(bad, "bad.json", ROOT)
    problems = [str(p) for p in info.value.problems]
    assert any(p.startswith("$.arms[1]") and "not a usable scene" in p for p in problems)
    assert any(p.startswith("$.trajectories[1]") and "unknown trajectory" in p and '"zigzag"' in p for p in problems)
    assert any(p.startswith("$.controllers[1]") for p in problems) and any(p.startswith("$.controllers[2]")
                                                                           for p in problems)
    custom = {"arms": ["uno_kawato"], "trajectories": [{"name": "wide", "type": "sinusoid", "alpha": [0, 0, 0],
                                                         "beta": [1, 1, 1], "omega": [1, 1, 1]}]}
    with pytest.raises(SweepSpecError) as info:
        parse_sweep_spec(custom, "bad.json", ROOT)
    assert "gives 3 coordinates but arm 'uno_kawato' has 2 joints" in str(info.value)
    spec = tmp_path / "bad.toml"
    spec.write_text('arms = ["uno_kawato"]\ncontrollers = ["pd", "m0"]\n')
    proc = run_cli("sweep", str(spec), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "$.controllers[1]" in proc.stderr and "m0" in proc.stderr


def test_dask_option(tmp_path):
    """--dask runs the grid on a Dask cluster; without dask.distributed installed it says so and exits 2."""
    spec = tmp_path / "tiny.json"
    spec.write_text(json.dumps({**TINY, "trajectories": ["sanner_slotine"], "k": [1.0], "eta": [0.01],
                                "controllers": ["m1"], "pd_gains": [], "figures": False}))
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        proc = run_cli("sweep", str(spec), "--out", str(tmp_path / "o"), "--dask", "tcp://127.0.0.1:8786")
        assert proc.returncode == 2 and "dask.distributed" in proc.stderr and "not installed" in proc.stderr
        return
    from dask.distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        proc = run_cli("sweep", str(spec), "--out", str(tmp_path / "o"), "--dask", cluster.scheduler_address)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(open(tmp_path / "o" / "results.csv")))
    assert {r["controller"] for r in rows} == {"pd", "m1"} and all(r["unstable"] == "false" for r in rows)


def test_trials_record_the_parameterization_and_gain_idsl_adapted():
    """``idsl`` adapts the arm's own parameterization (the slotine_li scene's Slotine & Li a1…a4; an arm entry's
    ``idsl_parameters``/``idsl_gamma``), ``idsl_base``/``idsl_standard`` the other choices; each result says which,
    with its Γ, and other controllers record nothing."""
    short = dict(adapt=0.2, measure=0.2, integrator="rk4", dt=0.01)
    book = run_trial(trial("slotine_li", "idsl", **short))
    assert (book.parameterization, book.gamma) == ("custom(a1,a2,a3,a4)", "eta*I") and not book.failed
    base = run_trial(trial("slotine_li", "idsl_base", **short))
    assert (base.parameterization, base.gamma) == ("base(4)", "eta*I")
    std = run_trial(trial("uno_kawato", "idsl_standard", **short))
    assert std.parameterization == "standard(20)"
    shaped = run_trial(trial("uno_kawato", "idsl", idsl_parameters="base", idsl_gamma=[1.0, 2.0, 3.0, 4.0], **short))
    assert shaped.parameterization == "base(4)" and shaped.gamma.startswith("eta*[[1,0,0,0],[0,2,0,0]")
    pd = run_trial(trial("uno_kawato", "pd", **short))
    assert (pd.parameterization, pd.gamma) == ("", "")


def test_sweep_arm_entries_give_idsl_its_parameters(tmp_path):
    """An arm entry's idsl_parameters reach the trials; a bad one is refused before any trial runs, by the scene's
    own message with its path."""
    from core.bench.sweep import make_trials
    book = json.loads((SCENES / "slotine_li_arm.json").read_text())["controllers"][0]["parameters"]
    uno = json.loads(json.dumps(book).replace("upper", "upper_arm").replace("effector", "forearm")
                     .replace("1.0", "0.3"))
    raw = {"arms": [{"name": "uno", "scene": str(SCENES / "uno_kawato_arm.json"), "idsl_parameters": uno},
                    "slotine_li"], "controllers": ["idsl"], "adapt": 0.1, "measure": 0.1}
    res = parse_sweep_spec(raw)
    trials = {t.arm: t for t in make_trials(res) if t.controller == "idsl"}
    assert controller_spec(trials["uno"], {})["parameters"] == uno
    assert controller_spec(trials["slotine_li"], {})["parameters"] == book           # the scene's own
    uno["inertial"]["a1"] = "upper_arm.Izz * forearm.m"
    with pytest.raises(SweepSpecError) as info:
        parse_sweep_spec(raw)
    assert "parameters.inertial.a1" in str(info.value) and "not linear" in str(info.value)


def test_areas_translate_every_trajectory_into_each_joint_space_area():
    """Fig. 3.2a / eq. 3.38–3.39: ``areas`` runs every trajectory in every joint-space area, translated by the
    area's offset (the sinusoid's α, the point-to-point points), named <trajectory>@<area>; an offset of the
    wrong length is refused with its path."""
    from core.bench.sweep import make_trials
    from core.bench.trial import trajectory_spec
    from core.control.trajectories import from_spec
    from core.scene.schema import TrajectorySpec
    from pydantic import TypeAdapter
    raw = {"arms": ["uno_kawato"], "trajectories": ["sanner_slotine", "point_to_point"], "controllers": ["pd"],
           "areas": {"a": [0.0, 0.0], "c": [-2.9, 0.75]}}
    res = parse_sweep_spec(raw)
    assert set(res.trajectories) == {"sanner_slotine@a", "sanner_slotine@c", "point_to_point@a", "point_to_point@c"}
    adapter = TypeAdapter(TrajectorySpec)
    times = np.linspace(0.0, 7.0, 29)
    for name in ("sanner_slotine", "point_to_point"):
        a = from_spec(adapter.validate_python(trajectory_spec(res.trajectories[f"{name}@a"], 1.0)))
        c = from_spec(adapter.validate_python(trajectory_spec(res.trajectories[f"{name}@c"], 1.0)))
        np.testing.assert_allclose(c.sample(times) - a.sample(times), np.tile([-2.9, 0.75], (times.size, 1)),
                                   atol=1e-12)
    trials = make_trials(res)
    assert len(trials) == 4 and {t.trajectory_name for t in trials} == set(res.trajectories)
    assert trials[0].scene is not None and all(t.variant == "" for t in trials)
    with pytest.raises(SweepSpecError) as info:
        parse_sweep_spec({**raw, "areas": {"b": [1.0]}})
    assert "$.areas.b" in str(info.value) and "2 joints" in str(info.value)


def test_variants_rerun_the_grid_with_their_settings(tmp_path):
    """``variants`` runs the whole grid once per variant with its settings replaced; each variant's errors are
    normalized by its own PD; results.csv names the variant, table.md summarizes and fig_variants.png is drawn.
    The two integrators give the same L2 to a few per cent (the error-controlled one is the reference)."""
    from core.bench.sweep import make_trials
    raw = {"arms": ["uno_kawato"], "trajectories": ["sanner_slotine"], "k": [1.0], "controllers": ["pd", "m2"],
           "eta": [0.05], "adapt": 2.0, "measure": 1.0, "integrator": "cash_karp", "traces": False,
           "variants": [{"name": "ck"}, {"name": "rk4_5", "integrator": "rk4", "dt": 0.005},
                        {"name": "wide", "sigma": 2.0, "initial": "model"}]}
    res = parse_sweep_spec(raw)
    trials = make_trials(res)
    assert len(trials) == 6
    by = {(t.variant, t.controller): t for t in trials}
    assert (by["rk4_5", "m2"].integrator, by["rk4_5", "m2"].dt) == ("rk4", 0.005)
    assert by["ck", "m2"].integrator == "cash_karp" and by["wide", "m2"].sigma == 2.0
    assert by["wide", "m2"].initial == "model" and by["ck", "m2"].initial == "zero"
    spec = tmp_path / "v.json"
    spec.write_text(json.dumps(raw))
    out = tmp_path / "out"
    proc = run_cli("sweep", str(spec), "--out", str(out), "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert [r["variant"] for r in rows] == ["ck", "ck", "rk4_5", "rk4_5", "wide", "wide"]     # the spec's order
    for v in ("ck", "rk4_5", "wide"):
        pd, m2 = (next(r for r in rows if r["variant"] == v and r["controller"] == c) for c in ("pd", "m2"))
        assert float(m2["normalized_error"]) == pytest.approx(float(m2["l2_error"]) / float(pd["l2_error"]),
                                                              rel=1e-8)
    l2 = {(r["variant"], r["controller"]): float(r["l2_error"]) for r in rows}
    assert l2["rk4_5", "pd"] == pytest.approx(l2["ck", "pd"], rel=0.02)
    assert l2["wide", "pd"] == l2["ck", "pd"] and l2["wide", "m2"] != l2["ck", "m2"]   # σ reaches the mixture only (M1's one gate is 1 whatever σ)
    table = (out / "table.md").read_text()
    assert "| rk4_5 | uno_kawato | no | m2 | 0.05 | 1 |" in table
    assert (out / "fig_variants.png").stat().st_size > 10_000
    with pytest.raises(SweepSpecError) as info:
        parse_sweep_spec({**raw, "variants": [{"name": "x"}, {"name": "x"}]})
    assert "variant names must differ" in str(info.value)


def test_shipped_thesis_grids_are_valid_specs():
    """Every grid behind the README's thesis table parses, within the bounds of a sweep."""
    from core.bench.sweep import read_sweep_spec
    for path in sorted((SCENES / "sweeps").glob("thesis_*.toml")):
        read_sweep_spec(path)


def test_fig_3_3_pd_error_falls_with_gain_and_rises_with_bandwidth_on_the_human_arm():
    """Fig. 3.3 (the Uno arm, whose K_p = 9, K_d = 1 the thesis calls "in the range of ... a comparably sized
    human arm"): on q_d = (1.33 (1 − cos 2πkt), 0.75 cos 2πkt), "slower trajectories and/or higher gains lead to
    better performance": at every k the L2 error falls from K_p = 9 to 36 to 144 (same damping ratio), and at the
    two higher gains it rises with k over 0.1–1; the low gain's rises up to k = 0.6 (beyond it the arm barely
    follows, and the error tends to the trajectory's own size)."""
    ks = [0.1, 0.2, 0.4, 0.6, 0.8, 1.0]
    gains = [(9.0, 1.0), (36.0, 2.0), (144.0, 4.0)]
    trials = [trial("uno_kawato", "pd", trajectory_name="bandwidth", trajectory=TRAJECTORIES["bandwidth"], k=k,
                    kp=kp, kd=kd, adapt=10.0, measure=10.0)
              for k in ks for kp, kd in gains]
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        l2 = np.array([r.l2_error for r in ex.map(run_trial, trials)]).reshape(len(ks), len(gains))
    assert np.all(np.diff(l2, axis=1) < 0), l2                       # higher gains: smaller errors, at every k
    assert np.all(np.diff(l2[:, 1:], axis=0) > 0), l2                # faster: larger errors
    assert np.all(np.diff(l2[:4, 0]) > 0), l2


@pytest.mark.slow
def test_fig_3_8_3_9_unmodelled_forces_degrade_but_adaptation_still_beats_pd():
    """Fig. 3.8–3.9: "significant external forces that are not explicitly accounted for in the structure of the
    adaptive compensators degrade performance, but improvements over PD control are still typical": with gravity
    (never in IDSL's regressor, no static term in the mixtures) every adaptive controller stays below PD's L2
    error on the Sanner–Slotine task, on both arms, and on the human arm each one's error grows; with nonlinear
    viscosity (quadratic drag at the segments' centres of mass) they still beat PD."""
    controllers = ["pd", "idsl", "m1", "m4"]
    trials = [trial(arm, c, gravity=g) for arm in ("slotine_li", "uno_kawato") for c in controllers
              for g in (False, True)]
    viscous = json.loads((SCENES / "uno_kawato_arm_viscous.json").read_text())
    trials += [Trial(**{**trial("uno_kawato", c).__dict__, "arm": "uno_viscous", "scene": viscous})
               for c in controllers]
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        results = list(ex.map(run_trial, trials))
    l2 = {(r.trial["arm"], r.trial["controller"], r.trial["gravity"]): r.l2_error for r in results}
    for arm in ("slotine_li", "uno_kawato"):
        for c in controllers[1:]:
            assert l2[(arm, c, True)] < l2[(arm, "pd", True)], (arm, c)             # better than PD with gravity
    for c in controllers[1:]:                                                       # degraded on the human arm
        assert l2[("uno_kawato", c, True)] > 2 * l2[("uno_kawato", c, False)], c
    # on the heavy arm gravity detunes PD's resonance on this task: IDSL is degraded, the mixtures are not here
    # (they are in the mean over the bench's 36 tasks, README)
    assert l2[("slotine_li", "idsl", True)] > 2 * l2[("slotine_li", "idsl", False)]
    for c in controllers[1:]:
        assert l2[("uno_viscous", c, False)] < 0.5 * l2[("uno_viscous", "pd", False)], c


def test_fig_3_7_high_adaptation_gains_destabilize_the_discrete_loop_only():
    """Fig. 3.7: "high values [of η] can induce instability ... because we are actually simulating a discrete time
    approximation". With a fixed 5 ms RK4 step the Uno arm on the fast sinusoid is stable at η = 0.1 and unstable
    at η = 10 (IDSL and M4); the same trials under the error-controlled Cash–Karp stay stable at η = 10, as the
    continuous-time Lyapunov argument allows (so the thesis's threshold at η = 0.1 is not reproduced: README)."""
    fixed = dict(integrator="rk4", dt=0.005, adapt=10.0, measure=5.0)
    trials = [trial("uno_kawato", c, eta=eta, **fixed) for c in ("idsl", "m4") for eta in (0.1, 10.0)]
    trials += [trial("uno_kawato", c, eta=10.0, adapt=10.0, measure=5.0) for c in ("idsl", "m4")]
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        results = list(ex.map(run_trial, trials))
    unstable = {(r.trial["controller"], r.trial["eta"], r.trial["integrator"]): r.unstable for r in results}
    for c in ("idsl", "m4"):
        assert not unstable[(c, 0.1, "rk4")] and unstable[(c, 10.0, "rk4")], unstable
        assert not unstable[(c, 10.0, "cash_karp")], unstable


def test_fig_3_10_mixture_parameters_keep_moving():
    """Fig. 3.10: under the gradient rule (eq. 3.20) the mixture's parameters "do not converge to constant
    values, but rather fluctuate": over the measured window (30–40 s) M4's parameters on the fast sinusoid still
    change by a sizeable fraction of what they moved during adaptation."""
    r = run_trial(trial("uno_kawato", "m4"))
    t, P = r.traces["parameter_t"], r.traces["parameters"]
    late = t >= 30.0 - 1e-9
    moved = np.ptp(P, axis=0)
    active = moved > 0.05 * moved.max()
    late_moves = np.ptp(P[late], axis=0)[active] / moved[active]
    assert np.median(late_moves) > 0.05, late_moves
    assert np.abs(np.diff(P[late], axis=0)).sum(axis=0)[active].min() > 0          # none has stopped


AREAS = {"a": [0.0, 0.0], "b": [-1.33, 1.5], "c": [-2.9008, 0.75]}          # thesis_*.toml's joint-space areas


@pytest.mark.slow
def test_fig_3_9_viscosity_narrows_the_gap_between_idsl_and_the_mixtures_on_the_human_arm():
    """Fig. 3.9: with nonlinear viscosity "differences between the adaptive methods are reduced". On the Uno arm
    (Sanner–Slotine and point-to-point tasks at k = 1 in the three joint-space areas, η = 0.1) IDSL is far ahead
    of the mixtures without viscosity, while with quadratic drag at the segments' centres of mass all four
    adaptive controllers lie within a factor 1.5 of each other, every one still well below PD."""
    from core.bench.trial import in_area
    viscous = json.loads((SCENES / "uno_kawato_arm_viscous.json").read_text())
    import tomllib
    spec = tomllib.loads((SCENES / "sweeps" / "thesis_viscosity.toml").read_text())
    uno = next(a for a in spec["arms"] if a["name"].startswith("uno"))["idsl_parameters"]
    controllers = ["pd", "idsl", "m1", "m4", "m8"]
    trials = []
    for name in ("sanner_slotine", "point_to_point"):
        for area, offset in AREAS.items():
            traj = in_area(TRAJECTORIES[name], offset)
            for c in controllers:
                for arm, scene in (("plain", None), ("viscous", viscous)):
                    t = trial("uno_kawato", c, trajectory_name=f"{name}@{area}", trajectory=traj,
                              eta=None if c == "pd" else 0.1, idsl_parameters=uno)
                    trials.append(Trial(**{**t.__dict__, "arm": arm, "scene": scene or t.scene}))
    with ProcessPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as ex:
        results = list(ex.map(run_trial, trials))
    l2 = {(r.trial["arm"], r.trial["trajectory_name"], r.trial["controller"]): r.l2_error for r in results}
    tasks = sorted({k[1] for k in l2})
    norm = {(arm, c): np.mean([l2[(arm, task, c)] / l2[(arm, task, "pd")] for task in tasks])
            for arm in ("plain", "viscous") for c in controllers[1:]}
    plain = [norm[("plain", c)] for c in controllers[1:]]
    wet = [norm[("viscous", c)] for c in controllers[1:]]
    assert norm[("plain", "idsl")] < 0.2 * min(plain[1:]), norm                     # far ahead without viscosity
    assert max(wet) / min(wet) < 1.5 and max(wet) < 0.3, norm                       # all close with it, ≪ PD
