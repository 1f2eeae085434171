"""The worker's run as data, without a display: batches that never change the run (the same numbers as
``python -m core run``), the timeline (going back, resuming bit for bit, branches), recording frames on simulated
time, typed edits applied without compiling, the records kept for exports, and saving a document in its own form.

The worker is driven on the test's thread (its loop's steps called directly): these are checks of what it
computes, not of threads (tests/test_studio.py does those)."""
from __future__ import annotations

import difflib
import json
import os
import queue
import time

import numpy as np
import pytest

import core
from core.scene import parse_spec
from studio.document.jsontext import document_text as spec_to_json
from studio.document.jsontext import rewrite, save_document
from studio import SCENES_DIR
from studio.document import edits
from studio.run.messages import Command, CommandKind, Edit
from studio.run.runrecords import RunRecords
from studio.run.stepping import grid_time, run_steps, steps_to
from studio.run.timeline import Timeline
from studio.qt.run.worker import SimulationWorker

ARM = SCENES_DIR / "arm_nail_singular.json"
SHIPPED = sorted(SCENES_DIR.glob("*.json"))


def _drive(model, speed=float("inf"), **options):
    """A worker on the test's thread, its signals collected."""
    from PySide6.QtWidgets import QApplication          # (a bare QCoreApplication made here would be the one the
    QApplication.instance() or QApplication([])          # later GUI tests get: their GL context then segfaults)
    w = SimulationWorker(core.Simulation(model), queue.Queue(), speed=speed, **options)
    w.sent, w.snaps = [], []
    w.samples.connect(w.sent.append)
    w.snapshot.connect(w.snaps.append)
    w._set_simulation(w._sim)
    w._emit()
    return w


def _play_until(w, t_end: float, record: bool = False) -> None:
    w._playing = True
    while w._sim.state.t < t_end or (record and w._recording is not None):
        w._advance(deadline=time.perf_counter() + 0.005)
        w._emit()
    w._playing = False
    w._emit()


def _records(batches) -> dict:
    out: dict = {}
    for b in batches:
        for k, v in b.records:
            out.setdefault(k, []).append(np.asarray(v))
    return {k: np.concatenate(v) for k, v in out.items()}


# ---- batches ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scene", ["arm_nail_singular", "chain20_nailed", "slider_crank", "slotine_li_arm"])
def test_batches_of_any_size_make_the_run_of_one_call(scene):
    """Cut into batches that end on the integrator's own time grid, a run is bit for bit ``Simulation.run`` of the
    whole duration in one call (but for the last step, which ``run`` shortens to land on its end time)."""
    model = core.load_scene(SCENES_DIR / f"{scene}.json")
    ref = core.Simulation(model).run(0.4)
    sim = core.Simulation(model)
    rng = np.random.default_rng(0)
    parts = [sim.run(0.0)]
    while len(np.concatenate([p["t"] for p in parts])) < len(ref["t"]) - 1:
        n = int(rng.integers(1, 60))
        t_before = sim.state.t
        parts.append({k: v[1:] for k, v in run_steps(sim, n).items()})
        assert sim.state.t == grid_time(t_before, sim.dt, n)
    got = {k: np.concatenate([p[k] for p in parts]) for k in ref}
    n = len(ref["t"]) - 1
    for key in ref:
        assert np.array_equal(got[key][:n], ref[key][:n], equal_nan=True), key


def test_steps_to_finds_the_first_step_at_or_after_a_time():
    sim = core.Simulation(core.load_scene(ARM))
    assert steps_to(sim, 0.0) == 0
    n = steps_to(sim, 1 / 30)
    assert grid_time(0.0, sim.dt, n) >= 1 / 30 > grid_time(0.0, sim.dt, n - 1)


# ---- the worker's run, timeline and records -----------------------------------------------------------------------
def test_the_worker_records_every_step_as_core_run_does():
    model = core.load_scene(ARM)
    w = _drive(model)
    _play_until(w, 0.3)
    got = _records(w.sent)
    ref = core.Simulation(model).run(float(got["t"][-1]))
    n = len(ref["t"]) - 1
    assert got["t"][0] == 0.0 and len(got["t"]) >= n
    for key in ref:
        assert np.array_equal(got[key][:n], ref[key][:n], equal_nan=True), key


def test_a_playing_worker_sends_a_snapshot_only_once_the_gui_took_the_last():
    """A window that draws 17 frames a second while the worker emits 45 dropped most snapshots unseen, each ~2 ms
    of the worker's Python: while ``snapshot_taken`` is clear, a playing frame sends its samples but no snapshot;
    once it is set, the next frame sends the newest state; an emit after commands (a pause) always sends one."""
    import threading
    taken = threading.Event()
    w = _drive(core.load_scene(ARM), snapshot_taken=taken)
    assert len(w.snaps) == 1 and not taken.is_set()                       # (_drive's first: not taken yet)
    taken.set()                                                           # the GUI took it
    w._playing = True
    w._advance(deadline=time.perf_counter() + 0.005)
    w._emit(frame=True)
    assert len(w.snaps) == 2 and not taken.is_set()
    sent = len(w.sent)
    for _ in range(3):                                                    # the GUI has not taken it
        w._advance(deadline=time.perf_counter() + 0.005)
        w._emit(frame=True)
    assert len(w.snaps) == 2 and len(w.sent) == sent + 3                  # samples every frame, no snapshot
    taken.set()
    w._advance(deadline=time.perf_counter() + 0.005)
    w._emit(frame=True)
    assert len(w.snaps) == 3 and w.snaps[-1].t == w._sim.state.t > w.snaps[1].t
    w._advance(deadline=time.perf_counter() + 0.005)
    w._playing = False                                  # a frame that stopped the play (diverged): sent regardless
    w._emit(frame=True)
    assert len(w.snaps) == 4 and w.snaps[-1].t == w._sim.state.t and not w.snaps[-1].playing
    w._emit()                                                             # after a command: sent regardless
    assert len(w.snaps) == 5


def test_going_back_and_resuming_continues_bit_for_bit():
    model = core.load_scene(ARM)
    w = _drive(model)
    _play_until(w, 0.5)
    first = _records(w.sent)
    w.sent.clear()
    w._apply(Command(CommandKind.SEEK, 0.2))
    w._emit()
    snap = w.snaps[-1]
    k = int(np.flatnonzero(first["t"] == snap.t)[0])        # the seek lands exactly on a recorded step
    assert abs(snap.t - 0.2) <= model.settings["dt"] and np.array_equal(snap.q, first["q"][k])
    assert snap.timeline == (0.0, pytest.approx(first["t"][-1])) and not snap.playing
    _play_until(w, 0.5)
    again = _records(w.sent)
    assert [b.branch for b in w.sent if b.branch is not None] == [snap.t]
    m = min(len(again["t"]), len(first["t"]) - k - 1)
    assert m > 200
    for key in first:
        assert np.array_equal(again[key][:m], first[key][k + 1:k + 1 + m], equal_nan=True), key


def test_a_gain_changed_while_looking_back_runs_on_from_there():
    model = core.load_scene(SCENES_DIR / "slotine_li_arm.json")
    w = _drive(model)
    _play_until(w, 0.3)
    first = _records(w.sent)
    w._apply(Command(CommandKind.SEEK, 0.1))
    t_back = w._sim.state.t
    spec = edits.set_value(model.spec, ("controllers", 0, "kd"), 2 * float(np.ravel(model.spec.controllers[0].kd)[0]))
    w._apply(Command(CommandKind.EDIT, Edit(spec, edits.compiled(spec), ((("controllers", 0, "kd"), None),),
                                            "Set kd")))
    assert w._sim.model is edits.compiled(spec) and w._sim.state.t == t_back     # nothing compiled, same state
    w.sent.clear()
    _play_until(w, 0.3)
    again = _records(w.sent)
    k = int(np.flatnonzero(first["t"] == t_back)[0])
    assert not np.array_equal(again["q"][50], first["q"][k + 51])                  # the new gain acts
    assert np.array_equal(again["t"][:50], first["t"][k + 1:k + 51])


def test_a_recording_gets_one_frame_per_period_of_simulated_time():
    w = _drive(core.load_scene(ARM))
    _play_until(w, 0.1)
    w._apply(Command(CommandKind.RECORD, (1 / 30, 60)))
    t0 = w._sim.state.t
    _play_until(w, 0.0, record=True)
    frames = [f for b in w.sent for f in b.frames]
    times = np.array([f.t for f in frames])
    assert len(frames) == 60 and times[0] == t0
    dt = w._sim.dt
    assert np.all(times >= t0 + np.arange(60) / 30 - 1e-9) and np.all(times < t0 + np.arange(60) / 30 + dt)
    assert len({f.shape_poses.tobytes() for f in frames}) == 60        # the scene moves between frames


def test_the_timeline_is_bounded_and_keeps_the_recent_past_dense():
    tl = Timeline(capacity=40)
    for k in range(200):
        tl.add(k * 0.01, k, object())
    assert len(tl) <= 40 and tl.first_t == 0.0 and tl.head_t == pytest.approx(1.99)
    times = [f.t for f in tl._frames]
    assert np.all(np.diff(times[-10:]) == pytest.approx(0.01))
    assert tl.at_or_before(0.555).t <= 0.555
    tl.truncate_after(1.0)
    assert tl.head_t == 1.0 and max(f.t for f in tl._frames) <= 1.0


# ---- exports ----------------------------------------------------------------------------------------------------
def test_the_csv_export_has_core_runs_columns_numbers_and_units(tmp_path):
    from core.output import csv_columns
    model = core.load_scene(ARM)
    w = _drive(model)
    _play_until(w, 0.2)
    records = RunRecords()
    for b in w.sent:
        records.add(b)
    (path,) = records.write_csv(tmp_path / "run.csv")
    lines = path.read_text().splitlines()
    data = _records(w.sent)
    names, table = csv_columns(model, data)
    header = lines[0].split(",")
    assert [h.split(" [")[0] for h in header] == names
    assert header[0] == "t [s]" and "q_base [rad]" in header and "energy_error [J]" in header
    assert "constraint_force_tip_nail_x [N]" in header and "rank" in header
    assert lines[1:] == [",".join("%.17g" % x for x in row) for row in table]


def test_the_records_follow_branches_and_stay_bounded():
    model = core.load_scene(ARM)
    w = _drive(model)
    _play_until(w, 0.3)
    whole = RunRecords()
    for b in w.sent:
        whole.add(b)
    records = RunRecords(limit_bytes=whole._bytes // 2)
    for b in w.sent:
        records.add(b)
    assert records.dropped_until is not None and records.segments[0].t_first > 0
    kept = records.segments[-1].chunks
    assert (records._bytes <= whole._bytes // 2 or len(kept) == 1) and records.t_last == whole.t_last
    w.sent.clear()
    w._apply(Command(CommandKind.SEEK, 0.1))
    _play_until(w, 0.2)
    for b in w.sent:
        whole.add(b)
    t = whole.segments[0].arrays()["t"]
    assert np.all(np.diff(t) > 0) and t[-1] == pytest.approx(w._sim.state.t)


# ---- saving a document in its own form ------------------------------------------------------------------------
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_document_saved_unchanged_is_byte_for_byte_the_same(path):
    text = path.read_text(encoding="utf-8")
    # written back to its own folder: an included robot file's path stays relative to it
    assert spec_to_json(core.read_spec(path), text, path.parent) == text


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_one_edit_changes_one_line(path, tmp_path):
    text = path.read_text(encoding="utf-8")
    target = tmp_path / "scenes" / path.name        # beside the robot files it may include, as in the repository
    target.parent.mkdir()
    (tmp_path / "assets").symlink_to(SCENES_DIR.parent / "assets")
    target.write_text(text, encoding="utf-8")
    spec = core.read_spec(target)
    os.chmod(target, 0o640)
    new = edits.set_value(spec, ("simulation", "dt"), spec.simulation.dt / 2)
    save_document(new, target, base=text)
    out = target.read_text(encoding="utf-8")
    changed = [line for line in difflib.ndiff(text.splitlines(), out.splitlines()) if line[:2] in ("- ", "+ ")]
    assert len(changed) == 2, changed                            # one line out, one line in
    assert core.read_spec(target) == new and os.stat(target).st_mode & 0o777 == 0o640


def test_additions_and_deletions_keep_the_rest_of_the_text():
    text = ARM.read_text(encoding="utf-8")
    spec = core.read_spec(ARM)
    added, _ = edits.add(spec, "forces", "drag", "link2")
    out = spec_to_json(added, text)
    assert parse_spec(json.loads(out)) == added and out.startswith(text[:text.rindex("    }\n  ]\n}")])
    deleted, _ = edits.delete(spec, ("forces", 0))
    out = spec_to_json(deleted, text)
    assert parse_spec(json.loads(out)) == deleted and '"forces"' in out and "disturbance" not in out
    assert rewrite('{"a": [1, 2], "b": "–"}', {"a": [1, 2, 3], "b": "–", "c": 1.0}) == \
        '{"a": [1, 2, 3], "b": "–", "c": 1.0}'
    assert rewrite('{\n  "x": 0,\n  "y": 1e-3\n}\n', {"x": 2.0, "y": 0.001}) == '{\n  "x": 2,\n  "y": 1e-3\n}\n'


def test_explicit_defaults_stay_and_new_fields_go_last():
    text = '{\n  "name": "x",\n  "simulation": {\n    "dt": 0.001,\n    "duration": 1.0\n  }\n}\n'
    old = {"name": "x", "simulation": {"dt": 0.001, "duration": 1.0, "integrator": "rk4"}}
    full = {"name": "x", "simulation": {"dt": 0.001, "duration": 1.0, "integrator": "euler"}}
    minimal = {"name": "x", "simulation": {"dt": 0.001, "integrator": "euler"}}     # duration at its default
    assert rewrite(text, minimal, full, old) == ('{\n  "name": "x",\n  "simulation": {\n    "dt": 0.001,\n'
                                                 '    "duration": 1.0,\n    "integrator": "euler"\n  }\n}\n')
    unchanged = {"name": "x", "simulation": {"dt": 0.001, "duration": 1.0, "integrator": "rk4"}}
    assert rewrite(text, {"name": "x", "simulation": {"dt": 0.001}}, unchanged, old) == text


def test_a_new_document_is_written_in_utf8():
    spec = core.read_spec(ARM)
    text = spec_to_json(spec)
    assert "–" in text and "\\u2013" not in text and parse_spec(json.loads(text)) == spec


def test_a_recording_goes_on_from_where_the_user_went_back_to():
    w = _drive(core.load_scene(ARM))
    w._apply(Command(CommandKind.RECORD, (1 / 30, 10)))
    _play_until(w, 0.1)                                       # frames at 0, 1/30, 2/30, 3/30 (and more)
    before = sum(len(b.frames) for b in w.sent)
    assert 4 <= before < 10
    w._apply(Command(CommandKind.SEEK, 0.02))
    t_back = w._sim.state.t
    _play_until(w, 0.0, record=True)
    times = np.array([f.t for b in w.sent for f in b.frames])
    assert len(times) == 10
    assert np.all(np.diff(times[:before]) > 0) and times[before] == t_back    # the next frame: where it went back
    assert np.all(np.abs(np.diff(times[before:]) - 1 / 30) < 2 * w._sim.dt)  # then one period apart again


def test_a_rename_changes_the_line_that_holds_the_name():
    text = ARM.read_text(encoding="utf-8")
    spec = core.read_spec(ARM)
    out = spec_to_json(edits.rename(spec, ("forces", 0), "pull"), text)
    changed = [line for line in difflib.ndiff(text.splitlines(), out.splitlines()) if line[:2] in ("- ", "+ ")]
    assert changed == ['-       "name": "disturbance",', '+       "name": "pull",']
