"""A seeded mutation fuzzer over every shipped scene (issue 12): whatever the bytes, the validator answers with
named problems (exit 2 from ``python -m core validate``) or accepts the scene, which then compiles and steps —
never a traceback, an error the checks did not name, or a hang.

Mutations act on the decoded document (a field deleted, renamed or given a value of another type, a number
scaled to the edges of the double range or past the stated limits, names swapped, items duplicated, nesting
deepened, the ``type`` of a joint, shape, constraint, force or controller changed) and on its bytes (bytes
flipped or cut, Latin-1, UTF-16, invalid UTF-8, a BOM, huge integer literals, NaN). The in-process check runs
the same functions as the command line; a handful of inputs also go through ``python -m core validate`` in a
subprocess.

Run longer by hand: ``python tests/test_fuzz_scenes.py 20000 [seed]``.
"""
from __future__ import annotations

import copy
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from core import Simulation
from core.scene import SceneError, compile_scene, parse_spec
from core.scene.limits import decode_document
from core.simulation import DivergenceError

ROOT = Path(__file__).resolve().parents[1]
SCENES = sorted((ROOT / "scenes").glob("*.json"))
INPUTS = int(os.environ.get("LIMBSTUDIO_FUZZ_INPUTS", "6000"))

_ODD_VALUES = [None, True, False, 0, -1, 1, 0.5, -0.0, 5e-324, 1e-31, 1e-30, 1e-12, 1e12, -1e12, 1e12 * 1.0000001,
               1e300, -1e308, 2 ** 70, "", "x", "world", "hinge", "a b", "é", [], {}, [1], ["a"], [[]], [None],
               {"type": []}, {"a": 1}, [0, 0, 0], [1e200, 1e200, 0], [1e308] * 3, [1, 0, 0, 0], [0, 0, 0, 0],
               list(range(7)), "pi", "-" * 300 + "x"]
_TYPES = ["fixed", "hinge", "slider", "ball", "free", "box", "sphere", "cylinder", "capsule", "nail",
          "point_to_point", "hinge", "point_on_line", "point_on_plane", "point_velocity", "joint_space", "spring",
          "joint_spring", "drag", "actuator", "point_force", "pd", "computed_torque", "slotine_li", "mixture",
          "projected_inverse_dynamics", "set_point", "sinusoid", "point_to_point", []]


def _paths(doc) -> list[tuple]:
    """Every key path of ``doc`` (iteratively)."""
    out, stack = [], [((), doc)]
    while stack:
        keys, node = stack.pop()
        out.append(keys)
        if isinstance(node, dict):
            stack.extend((keys + (k,), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((keys + (i,), v) for i, v in enumerate(node))
    return out


def _get(doc, keys):
    for k in keys:
        doc = doc[k]
    return doc


def _names(doc) -> list[str]:
    names = []
    for keys in _paths(doc):
        if keys and keys[-1] in ("name", "parent", "body", "body_a", "body_b", "joint"):
            value = _get(doc, keys)
            if isinstance(value, str):
                names.append(value)
    return names or ["x"]


def mutate_document(doc, rng: random.Random):
    """One to three random structural mutations of a decoded document (a copy)."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.choice((1, 1, 2, 3))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return doc
        keys = rng.choice(paths)
        parent, last = _get(doc, keys[:-1]), keys[-1]
        value = parent[last]
        op = rng.randrange(11)
        if op == 0:                                           # delete
            del parent[last]
        elif op == 1:                                         # an odd value
            parent[last] = copy.deepcopy(rng.choice(_ODD_VALUES))
        elif op == 2 and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[last] = value * rng.choice((0.0, -1.0, 1e-320, 1e-40, 1e13, 1e200, 1e308, 10.0))
        elif op == 3 and isinstance(parent, dict):            # a misspelt or a new field
            parent[last + "_"] = parent.pop(last)
        elif op == 4:                                         # a name from elsewhere in the document
            parent[last] = rng.choice(_names(doc))
        elif op == 5 and isinstance(parent, list):            # duplicate an item
            parent.insert(last, copy.deepcopy(value))
        elif op == 6:                                         # another type
            if isinstance(value, dict) and "type" in value:
                value["type"] = rng.choice(_TYPES)
            else:
                parent[last] = rng.choice(_TYPES)
        elif op == 7:                                         # deeper nesting
            wrapped = value
            for _ in range(rng.choice((1, 5, 40))):
                wrapped = [wrapped]
            parent[last] = wrapped
        elif op == 8:                                         # swap with another node of the document
            other = rng.choice(paths)
            try:
                parent[last] = copy.deepcopy(_get(doc, other))
            except (KeyError, IndexError, TypeError):
                pass
        elif op == 9 and isinstance(value, str):              # an expression or a name made strange
            parent[last] = rng.choice((value + " + 1e308 * 1e308", "(" * 70 + value + ")" * 70, value * 3,
                                       value + "(", "sqrt(" + value + ")", "-" * 100 + value, value + "é"))
        elif op == 10 and isinstance(value, list):            # a list emptied or lengthened
            parent[last] = [] if rng.random() < 0.5 else value + value
    return doc


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """A byte-level mutation of a document's text."""
    op = rng.randrange(10)
    if op == 0:
        b = bytearray(data)
        for _ in range(rng.choice((1, 3, 20))):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op == 1:
        return data[:rng.randrange(len(data))]
    if op == 2:
        return data.decode("utf-8").replace('"description": "', '"description": "caf\u00e9 ').encode("latin-1",
                                                                                                    "replace")
    if op == 3:
        return data.decode("utf-8").encode(rng.choice(("utf-16", "utf-16-le", "utf-32")))
    if op == 4:
        return b"\xef\xbb\xbf" + data
    if op == 5:
        i = rng.randrange(len(data))
        return data[:i] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00")) + data[i:]
    if op == 6:
        return data.replace(b"0.", b"9" * rng.choice((25, 400, 5000)) + b".", 1)
    if op == 7:
        return data.replace(b"1", b"NaN", 1) if rng.random() < 0.5 else data.replace(b"0", b"-Infinity", 1)
    if op == 8:
        depth = rng.choice((40, 1000, 100_000))
        return data.replace(b"[", b"[" * depth, 1).replace(b"]", b"]" * depth, 1)
    return rng.choice((b"", b"   ", b"null", b"[]", b"\"scene\"", b"{", b"\x89PNG\r\n\x1a\n\x00\x00", os.urandom(64)))


def check_input(data: bytes, source: str = "<fuzz>") -> str:
    """Validate ``data`` as ``core validate`` does and, if accepted, compile and take a few steps. Returns
    "invalid" or "valid"; raises AssertionError for anything the validator should have named."""
    raw, problems = decode_document(data)
    if problems:
        assert all(path.startswith("$") and message for path, message in problems)
        return "invalid"
    try:
        spec = parse_spec(raw, source)
        model = compile_scene(spec, source)
    except SceneError as exc:
        assert exc.problems, "a SceneError without problems"
        for p in exc.problems:
            assert p.path.startswith("$") and p.message, p
            assert "please report it" not in p.message, f"the checks did not name this problem: {p}"
        return "invalid"
    sim = Simulation(model)
    try:
        sim.run(min(20 * sim.dt, 0.02))
    except DivergenceError:
        pass
    return "valid"


def _corpus():
    return [(p.name, p.read_bytes()) for p in SCENES]


def fuzz(n: int, seed: int, budget_s: float = math.inf) -> dict:
    rng = random.Random(seed)
    corpus = _corpus()
    docs = [(name, json.loads(data)) for name, data in corpus]
    counts = {"valid": 0, "invalid": 0}
    slowest = (0.0, None)
    start = time.perf_counter()
    for k in range(n):
        if time.perf_counter() - start > budget_s:
            break
        name, doc = docs[rng.randrange(len(docs))]
        if rng.random() < 0.75:
            data = json.dumps(mutate_document(doc, rng), indent=rng.choice((None, 2))).encode()
        else:
            data = mutate_bytes(corpus[rng.randrange(len(corpus))][1], rng)
        t0 = time.perf_counter()
        try:
            outcome = check_input(data, f"{name} mutant {k} (seed {seed})")
        except AssertionError:
            raise
        except Exception as exc:                              # noqa: BLE001 — the failure the fuzzer looks for
            raise AssertionError(f"{name} mutant {k} (seed {seed}): {type(exc).__name__}: {exc}\n"
                                 f"{data[:2000]!r}") from exc
        counts[outcome] += 1
        slowest = max(slowest, (time.perf_counter() - t0, f"{name} mutant {k}"))
    counts["slowest_s"], counts["slowest"] = slowest
    counts["seconds"] = time.perf_counter() - start
    return counts


def test_fuzz_every_shipped_scene_in_process():
    np.seterr(all="ignore")
    result = fuzz(INPUTS, seed=12, budget_s=50.0)
    assert result["invalid"] > 0.3 * (result["valid"] + result["invalid"])      # the mutations do bite
    assert result["slowest_s"] < 5.0, result


def test_fuzz_through_the_command_line(tmp_path):
    """A handful of mutants through ``python -m core validate`` in one subprocess: exit 2 with every file's
    problems, no traceback."""
    rng = random.Random(7)
    corpus = _corpus()
    files = []
    for k in range(12):
        name, data = corpus[rng.randrange(len(corpus))]
        bad = mutate_bytes(data, rng) if k % 2 else json.dumps(mutate_document(json.loads(data), rng)).encode()
        path = tmp_path / f"mutant_{k}.json"
        path.write_bytes(bad)
        files.append(str(path))
    files.append(str(tmp_path / "missing.json"))
    (tmp_path / "utf16.json").write_bytes(SCENES[0].read_text().encode("utf-16"))
    files.append(str(tmp_path / "utf16.json"))
    proc = subprocess.run([sys.executable, "-m", "core", "validate", *files], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    for f in files:
        assert f"{f}: " in proc.stdout
    assert "utf16.json: INVALID" in proc.stdout and "UTF-16" in proc.stdout
    assert "missing.json: INVALID" in proc.stdout


if __name__ == "__main__":
    np.seterr(all="ignore")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print(fuzz(n, seed))
