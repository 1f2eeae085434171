"""``python -m core compare SCENE --duration T --out DIR``: one scene under every formulation, written as
DIR/comparison.md, DIR/comparison.csv and DIR/differences.png."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from core.__main__ import main
from core.compare import COLUMNS

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def test_compare_writes_the_table_and_the_figure(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(SCENES / "four_bar.json"), "--duration", "0.2", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert [r["formulation"] for r in rows] == ["dynamic_constraints", "projection", "multipliers"]
    assert list(rows[0]) == list(COLUMNS)
    for r in rows:
        assert r["status"] == "ok" and float(r["t_end_s"]) == 0.2 and int(r["steps"]) == 200
        assert float(r["max_phi"]) < 1e-9 and float(r["energy_error_J"]) < 1e-6
        assert (r["rows"], r["rank_min"], r["rank_max"], r["indeterminate"]) == ("3", "2", "2", "1")
        assert r["rank_events"] == "1" and float(r["max_dq"]) < 1e-7 and float(r["cost_per_step_ms"]) > 0
    assert float(rows[1]["max_dq"]) == 0.0                                  # the reference
    assert int(rows[1]["max_projection_iterations"]) >= 1
    md = (out / "comparison.md").read_text()
    assert "four_bar" in md and "| dynamic_constraints | ok |" in md and "against **projection**" in md
    png = (out / "differences.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert "wrote" in capsys.readouterr().out


def test_compare_reports_a_formulation_that_diverges(tmp_path, capsys):
    """The multipliers diverge on the arm nailed far across its singular start; the others still compare."""
    out = tmp_path / "cmp"
    code = main(["compare", str(SCENES / "arm_nail_singular.json"), "--duration", "0.05", "--out", str(out),
                 "--formulations", "dynamic_constraints,multipliers", "--reference", "dynamic_constraints",
                 "--quiet"])
    assert code == 0
    rows = {r["formulation"]: r for r in csv.DictReader((out / "comparison.csv").open())}
    assert rows["multipliers"]["status"] == "diverged" and float(rows["multipliers"]["t_end_s"]) < 0.05
    assert rows["dynamic_constraints"]["status"] == "ok"
    assert np.isfinite(float(rows["multipliers"]["max_dq"]))
    assert "**multipliers diverged**" in (out / "comparison.md").read_text()
    assert "multipliers diverged" in capsys.readouterr().err
    assert main(["compare", str(SCENES / "arm_nail_singular.json"), "--duration", "0.05", "--out", str(out),
                 "--formulations", "multipliers", "--quiet"]) == 3                # nothing ran to the end


def test_compare_refuses_bad_arguments(tmp_path, capsys):
    scene = str(SCENES / "four_bar.json")
    out = str(tmp_path / "x")
    assert main(["compare", scene, "--duration", "0.1", "--out", out, "--formulations", "lagrange"]) == 2
    assert "unknown lagrange" in capsys.readouterr().err
    assert main(["compare", scene, "--duration", "-1", "--out", out]) == 2
    assert main(["compare", scene, "--duration", "0.1", "--out", out, "--reference", "nope"]) == 2
    assert main(["compare", str(tmp_path / "missing.json"), "--duration", "0.1", "--out", out]) == 2
    assert not Path(out).exists()
