"""The compiled constrained step (:mod:`core.stepper`) against the Python assembly (``Simulation(compiled=False)``:
:func:`core.dynamics.evaluate` with :mod:`core.formulations` and :mod:`core.solver`).

- every shipped scene the compiled path takes: the Data at t = 0 and a 0.25 s run (states, constraint forces,
  deviations, residuals, singular values, ranks, work integrals, energy error, events) agree;
- whole batches of steps in one compiled call (``run``) equal single steps, also when an event (a constraint
  that breaks, a change of the Jacobian's rank) stops a batch in the middle;
- the Jacobi eigen-decomposition ``symmetric_eigen`` against ``numpy.linalg.eigh``; ``solve_groups`` against a
  NumPy re-implementation of the bounded group solve (Mitchell's dropping of singular values, damped least
  squares); force bounds and the damped-least-squares setting through whole scenes;
- run-time inputs (a dragged nail, the mouse pull, actuator commands, removing and restoring constraints) applied
  mid-run give the same trajectories on both paths;
- divergence is reported with the last good state kept, as on the Python path;
- free bodies (quaternion joints) keep unit quaternions and their energy books close.

The tolerances (1e-10) are relative to each recorded quantity's largest magnitude over the run, or to a floor in
its unit where it stays at round-off level (deviations of well-held constraints ~1e-16 m). Measured: ≲ 1.5e-12
of that scale on every scene (the deviations of the 20-link nailed chain), ≲ 8e-13 for the constraint forces,
including arm_nail_singular.json, which starts singular with forces up to 2e5 N (1.5e-7 N apart); whole
batches equal single steps bit for bit.

Two tests pin bugs these comparisons found in core/simulation.py (fixed): the energy reference E(0) when only
``step()`` is called, and ``data`` after a DivergenceError, on the compiled path.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import core
from core.scene import compile_scene, parse_spec
from core.stepper import solve_groups, symmetric_eigen

SCENES_DIR = Path(__file__).resolve().parents[1] / "scenes"
ALL_SCENES = sorted(SCENES_DIR.glob("*.json"))
COMPILED_SCENES = [p for p in ALL_SCENES if core.Simulation(core.load_scene(p)).compiled_scene() is not None]

RTOL = 1e-10                   # relative to a quantity's scale; measured ≲ 1.5e-12 (every scene)
INTEGER_FIELDS = ("rank", "dropped", "jacobian_rank", "rank_deficient", "active", "projection_iterations")
# Floors of the scale a difference is measured against, in each quantity's unit, for quantities that sit at
# round-off level in well-held scenes (deviations, residuals, the singular values of a rank-deficient A).
FLOORS = {"q": 1.0, "qd": 1.0, "qdd": 1.0, "tau_applied": 1.0, "constraint_force": 1.0,
          "constraint_force_magnitude": 1.0, "deviation": 1e-2, "deviation_rate": 1e-2, "residual": 1.0,
          "singular_values": 1.0, "singular_value_cutoff": 1.0}


def scene_doc(name: str) -> dict:
    return json.loads((SCENES_DIR / name).read_text())


def build(doc: dict) -> core.Model:
    return compile_scene(parse_spec(doc))


def with_constraint(name: str, index: int = 0, simulation: dict | None = None, **fields) -> core.Model:
    """Scene ``name`` with fields of its constraint ``index`` (and its simulation settings) replaced."""
    doc = scene_doc(name)
    doc["constraints"][index].update(fields)
    if simulation:
        doc.setdefault("simulation", {}).update(simulation)
    return build(doc)


def breaking_nail() -> core.Model:
    """three_link_arm_nailed with a weak nail (1 N: it cannot hold the arm) that breaks at 1 mm: the arm falls
    away and the nail breaks at t = 16 ms, in the middle of a batch of 10 steps."""
    return with_constraint("three_link_arm_nailed.json", max_force=1.0, max_deviation=1e-3)


def energy_scale(records: dict) -> float:
    return max(1.0, *(float(np.abs(records[k]).max()) for k in ("energy_kinetic", "energy_potential",
                                                                  "energy_total")))


def assert_close(name: str, a, b, rtol: float, floor: float) -> None:
    """|a − b| ≤ rtol · max(max|b|, floor), NaNs in the same places."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape, f"{name}: shapes {a.shape} != {b.shape}"
    nan = np.isnan(b)
    assert np.array_equal(np.isnan(a), nan), f"{name}: NaN in different places"
    if not a.size or nan.all():
        return
    scale = max(float(np.abs(b[~nan]).max()), floor)
    err = float(np.abs(a[~nan] - b[~nan]).max())
    assert err <= rtol * scale, f"{name}: max |compiled − python| = {err:.3g} > {rtol:g} × {scale:.3g}"


def assert_records_agree(a: dict, b: dict, rtol: float = RTOL) -> None:
    """Two runs' records agree: integer diagnostics exactly, times exactly, the rest to rtol of their scale."""
    assert a.keys() == b.keys()
    energy = energy_scale(b)
    for key in b:
        if key in INTEGER_FIELDS or key == "t":
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        elif key.startswith(("energy", "work")):
            assert_close(key, a[key], b[key], rtol, energy)
        else:
            assert_close(key, a[key], b[key], rtol, FLOORS.get(key, 1.0))


def assert_events_agree(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b), (a, b)
    for ea, eb in zip(a, b):
        assert ea.keys() == eb.keys()
        for key, value in eb.items():
            if isinstance(value, float) and key != "t":
                assert ea[key] == pytest.approx(value, rel=1e-9, abs=1e-15), (key, ea, eb)
            else:
                assert ea[key] == value, (key, ea, eb)


def assert_data_agree(a, b, rtol: float = RTOL, energy: float = 1.0) -> None:
    """Two :class:`core.dynamics.Data` at the same state agree, field by field."""
    for key in ("rank", "dropped", "jacobian_rank", "rank_deficient"):
        assert getattr(a, key) == getattr(b, key), (key, getattr(a, key), getattr(b, key))
    assert isinstance(a.rank_deficient, bool)
    for key in ("qdd", "tau_applied", "constraint_force", "constraint_force_magnitude", "deviation",
                "deviation_rate", "residual", "singular_values", "singular_value_cutoff"):
        assert_close(key, getattr(a, key), getattr(b, key), rtol, FLOORS[key])
    for key in ("power_constraints", "power_sources", "energy_kinetic", "energy_gravity", "energy_elastic"):
        assert_close(key, getattr(a, key), getattr(b, key), rtol, energy)


def pair(model: core.Model) -> tuple[core.Simulation, core.Simulation]:
    """(compiled, Python) simulations of one model, the first really on the compiled path."""
    fast, ref = core.Simulation(model), core.Simulation(model, compiled=False)
    assert fast.compiled_scene() is not None and ref.compiled_scene() is None
    return fast, ref


# ---- 1. every shipped scene the compiled path takes --------------------------------------------------------

def test_the_compiled_path_takes_most_shipped_scenes():
    names = {p.name for p in COMPILED_SCENES}
    assert len(COMPILED_SCENES) >= 15
    assert {"arm_nail_singular.json", "door_three_hinges.json", "three_link_free_bodies.json",
            "free_tumbling_box.json", "mcclamroch_two_arms.json"} <= names
    # controllers and joint-space constraints stay on the Python path
    assert "slotine_li_arm.json" not in names and "slider_crank_joint_space.json" not in names


@pytest.mark.parametrize("path", COMPILED_SCENES, ids=[p.stem for p in COMPILED_SCENES])
def test_data_at_the_start_agrees_with_the_python_assembly(path):
    fast, ref = pair(core.load_scene(path))
    a, b = fast.data, ref.data
    energy = max(1.0, abs(b.energy_kinetic) + abs(b.energy_gravity) + abs(b.energy_elastic))
    assert_data_agree(a, b, energy=energy)
    assert a.tau_control is None and a.controller_rate.size == 0
    if fast.model.constraints:
        assert a.singular_values.shape == (sum(c.rows for c in fast.model.constraints),)


@pytest.mark.parametrize("path", COMPILED_SCENES, ids=[p.stem for p in COMPILED_SCENES])
def test_run_agrees_with_the_python_assembly(path):
    fast, ref = pair(core.load_scene(path))
    a, b = fast.run(0.25, record_every=10), ref.run(0.25, record_every=10)
    assert a["t"][-1] == pytest.approx(0.25, abs=1e-12) and len(a["t"]) == 26
    assert_records_agree(a, b)
    assert_events_agree(fast.events, ref.events)
    assert fast.steps_taken == ref.steps_taken == 250
    np.testing.assert_array_equal(fast.active, ref.active)
    scale = energy_scale(b)
    assert abs(fast.energy_error() - ref.energy_error()) <= RTOL * scale
    assert_close("work", fast.work, ref.work, RTOL, scale)
    assert_data_agree(fast.data, ref.data, energy=scale)


def test_singular_start_agrees_through_the_dropped_directions():
    """arm_nail_singular.json: A starts with two zero singular values, the bound (2e5 N) drops directions and
    leaves a large residual; forces near the bound; the rank events — the same on both paths."""
    fast, ref = pair(core.load_scene(SCENES_DIR / "arm_nail_singular.json"))
    a, b = fast.run(0.05, record_every=1), ref.run(0.05, record_every=1)
    assert_records_agree(a, b)
    assert b["dropped"].max() >= 1 and b["residual"].max() > 100                   # the singular phase …
    assert b["constraint_force_magnitude"].max() > 1e5                              # … with forces ~2e5 N
    assert [e["type"] for e in fast.events] == ["rank_deficient", "full_rank"]
    assert_events_agree(fast.events, ref.events)


# ---- 2. batches of steps in one compiled call equal single steps ------------------------------------------

BATCH_CASES = {
    "breaking_nail": breaking_nail,
    "arm_nail_singular": lambda: core.load_scene(SCENES_DIR / "arm_nail_singular.json"),
    "three_link_free_bodies": lambda: core.load_scene(SCENES_DIR / "three_link_free_bodies.json"),
    "mcclamroch_two_arms": lambda: core.load_scene(SCENES_DIR / "mcclamroch_two_arms.json"),
}


@pytest.mark.parametrize("case", BATCH_CASES)
def test_batched_run_equals_single_steps(case):
    model = BATCH_CASES[case]()
    T, every = 0.1, 10
    batched = core.Simulation(model)
    rec = batched.run(T, record_every=every)

    single = core.Simulation(model)
    assert single.compiled_scene() is not None
    samples = [single.state]
    single.data                         # as run() does (it records the start): E(0) for the energy books
    while single.state.t < T - 1e-12:
        single.step(dt_max=T - single.state.t)
        if single.steps_taken % every == 0:
            samples.append(single.state)
    assert single.steps_taken == batched.steps_taken == 100
    assert single.events == batched.events                                          # exactly, floats included
    for key in ("q", "qd"):
        np.testing.assert_allclose(rec[key], [getattr(s, key) for s in samples], rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(rec["t"], [s.t for s in samples])
    np.testing.assert_allclose(batched.work, single.work, rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(batched.active, single.active)
    assert batched.energy_error() == pytest.approx(single.energy_error(), rel=1e-12, abs=1e-15)
    if case in ("breaking_nail", "arm_nail_singular"):                           # an event inside a batch
        inside = [e for e in batched.events if e["t"] > 0 and round(e["t"] / model.settings["dt"]) % every]
        assert inside, batched.events


def test_constraint_breaks_inside_a_batch_as_on_the_python_path():
    fast, ref = pair(breaking_nail())
    a, b = fast.run(0.1, record_every=10), ref.run(0.1, record_every=10)
    assert_records_agree(a, b)
    assert_events_agree(fast.events, ref.events)
    breaks = [e for e in fast.events if e["type"] == "break"]
    assert len(breaks) == 1 and breaks[0]["t"] == pytest.approx(0.016, abs=1e-12)
    assert breaks[0]["deviation"] > 1e-3 and not fast.active[0]
    assert a["constraint_force_magnitude"][-1, 0] == 0.0 and np.isnan(a["residual"][-1, 0])


@pytest.mark.parametrize("compiled", [
    pytest.param(True, id="compiled"),
    pytest.param(False, id="python")])
def test_energy_books_start_at_the_initial_state_when_only_stepping(compiled):
    """mcclamroch_two_arms (actuators do work): 100 steps without reading ``data`` first; E(0) must still be
    the initial energy, so energy_error() is integration error (~4e-11 J), not −(the actuators' work)."""
    sim = core.Simulation(core.load_scene(SCENES_DIR / "mcclamroch_two_arms.json"), compiled=compiled)
    for _ in range(100):
        sim.step()
    assert abs(sim.work.sum()) > 1e-3
    assert abs(sim.energy_error()) < 1e-9


# ---- 3. the Jacobi eigen-decomposition ----------------------------------------------------------------------

def random_psd(rng, n: int, rank: int, scale: float) -> np.ndarray:
    B = rng.standard_normal((n, rank)) * np.exp(rng.uniform(-3, 3, rank))
    A = scale * (B @ B.T)
    return 0.5 * (A + A.T)


def jacobi(A: np.ndarray, pad: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """symmetric_eigen on a copy of A, in scratch buffers ``pad`` larger than A (as solve_groups passes them)."""
    n = A.shape[0]
    W = np.full((n + pad, n + pad), np.nan)
    W[:n, :n] = A
    lam, Q = np.full(n + pad, np.nan), np.full((n + pad, n + pad), np.nan)
    symmetric_eigen(W, n, lam, Q)
    return lam[:n], Q[:n, :n]



@pytest.mark.parametrize("n", range(1, 21))
def test_symmetric_eigen_matches_numpy(n):
    rng = np.random.default_rng(n)
    for rank in sorted({n, n - 1, n // 2, 1, 0}):
        for scale in (1.0, 1e-3, 1e4):
            A = random_psd(rng, n, rank, scale)
            lam, Q = jacobi(A, pad=n % 3)
            norm = np.linalg.norm(A, 2)
            tol = 1e-13 * norm
            ref = np.linalg.eigvalsh(A)
            ref = ref[np.argsort(-np.abs(ref), kind="stable")]
            assert np.all(np.diff(np.abs(lam)) <= 0), lam                            # sorted by |λ|, descending
            np.testing.assert_allclose(lam, ref, rtol=0, atol=tol)
            np.testing.assert_allclose(Q.T @ Q, np.eye(n), rtol=0, atol=1e-13)       # orthonormal
            np.testing.assert_allclose(Q @ np.diag(lam) @ Q.T, A, rtol=0, atol=tol)  # A = Q Λ Qᵀ
            np.testing.assert_allclose(A @ Q, Q * lam, rtol=0, atol=tol)             # eigenpairs
            assert np.sum(np.abs(lam) > 1e-10 * norm) == rank                        # rank-deficient: zeros
            assert np.all(lam >= -tol)                                               # PSD stays PSD


def test_symmetric_eigen_special_matrices():
    lam, Q = jacobi(np.zeros((4, 4)))                                               # zero: Q = I, λ = 0
    np.testing.assert_array_equal(lam, 0.0)
    np.testing.assert_array_equal(Q, np.eye(4))
    lam, Q = jacobi(np.diag([1.0, -5.0, 3.0, 0.0]))                                  # diagonal: only sorted
    np.testing.assert_array_equal(lam, [-5.0, 3.0, 1.0, 0.0])
    np.testing.assert_array_equal(np.abs(Q), np.eye(4)[:, [1, 2, 0, 3]])
    rng = np.random.default_rng(7)                                                  # indefinite: by |λ|
    V = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    true = np.array([-9.0, 4.0, -2.0, 1e-3, 0.0])
    lam, Q = jacobi(V @ np.diag(true) @ V.T)
    np.testing.assert_allclose(lam, true, atol=1e-13 * 9)
    np.testing.assert_allclose(np.abs(Q.T @ V), np.eye(5), atol=1e-12)              # the eigenvectors, up to sign
    lam, Q = jacobi(np.array([[2.5]]))
    assert lam[0] == 2.5 and Q[0, 0] == 1.0


# ---- 4. the bounded group solve ---------------------------------------------------------------------------

def reference_solve(A, B, groups, members_rows, bases, bounds, dls, rcond, rho):
    """NumPy re-implementation of the solve (core.solver's rules): per group A_g = Q Λ Qᵀ (eigh), keep the
    k = rank largest |λ|; while a constraint's force ‖E F_c‖ exceeds its bound, k −= 1."""
    F = np.zeros(B.size)
    rank_total = dropped_total = 0
    kept_min, svals = np.inf, []
    for group in groups:
        rows = np.concatenate([members_rows[c] for c in group])
        lam, Q = np.linalg.eigh(A[np.ix_(rows, rows)])
        order = np.argsort(-np.abs(lam), kind="stable")
        lam, Q = lam[order], Q[:, order]
        s = np.abs(lam)
        rank = int(np.sum(s > rcond * s[0])) if s[0] > 0 else 0
        k = rank
        while True:
            inv = np.zeros(rows.size)
            inv[:k] = lam[:k] / (lam[:k] ** 2 + rho ** 2) if dls else 1.0 / lam[:k]
            Fg = -Q @ (inv * (Q.T @ B[rows]))
            pos, over = 0, False
            for c in group:
                m = members_rows[c].size
                over |= np.linalg.norm(bases[c] @ Fg[pos:pos + m]) > bounds[c]
                pos += m
            if not over or k == 0:
                break
            k -= 1
        F[rows] = Fg
        rank_total += rank
        dropped_total += rank - k
        if k:
            kept_min = min(kept_min, s[k - 1])
        svals.append(s)
    return F, rank_total, dropped_total, kept_min, np.sort(np.concatenate(svals))[::-1]


def random_system(rng, sizes, groups):
    """A block-diagonal PSD A (one block per group, rank-deficient blocks too) for constraints of ``sizes``
    rows with random bases, and B."""
    K = len(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    rows = [np.arange(starts[c], starts[c + 1]) for c in range(K)]
    m = int(starts[-1])
    A = np.zeros((m, m))
    for g, group in enumerate(groups):
        r = np.concatenate([rows[c] for c in group])
        A[np.ix_(r, r)] = random_psd(rng, r.size, max(1, r.size - g % 2), 1.0)     # odd groups: one zero λ
    B = rng.standard_normal(m) * 5.0
    bases = [np.linalg.qr(rng.standard_normal((3, 3)))[0][:, :n] for n in sizes]
    return A, B, rows, bases


def compiled_solve(A, B, rows, bases, bounds, groups, dls, rcond, rho):
    K, m = len(rows), B.size
    ci = np.full((K, 6), -1, np.int64)
    cf = np.zeros((K, 40))
    for g, group in enumerate(groups):
        for c in group:
            ci[c, 5] = g
    for c in range(K):
        n = rows[c].size
        ci[c, 3], ci[c, 4] = n, rows[c][0]
        E = np.zeros((3, 3))
        E[:, :n] = bases[c]
        cf[c, 6:15] = E.ravel()
        cf[c, 16] = bounds[c]
    F, svals = np.full(m, np.nan), np.full(m, np.nan)
    out = solve_groups(A.copy(), B.copy(), ci, cf, len(groups), dls, rcond, rho, F, svals, np.empty(m, np.int64),
                       np.empty((m, m)), np.empty((m, m)), np.empty(m), np.empty(m), np.empty(m))
    return F, out[0], out[1], out[2], svals[:out[3]], out[3]


@pytest.mark.parametrize("dls", [False, True], ids=["svd", "damped_least_squares"])
@pytest.mark.parametrize("seed", range(8))
def test_solve_groups_matches_the_numpy_solve(seed, dls):
    rng = np.random.default_rng(100 + seed)
    sizes = [3, 2, 1, 3, 3, 2]
    groups = [[0, 2], [1], [3, 4, 5]] if seed % 2 else [[0, 1, 2, 3, 4, 5]]
    A, B, rows, bases = random_system(rng, sizes, groups)
    rho = 0.3
    unbounded = reference_solve(A, B, groups, rows, bases, [np.inf] * 6, dls, 1e-12, rho)[0]
    magnitudes = np.array([np.linalg.norm(E @ unbounded[r]) for E, r in zip(bases, rows)])
    bounds = magnitudes * rng.uniform(0.2, 1.5, 6)                                   # some bind, some do not
    ref = reference_solve(A, B, groups, rows, bases, bounds, dls, 1e-12, rho)
    F, rank, dropped, kept_min, svals, ns = compiled_solve(A, B, rows, bases, bounds, groups, dls, 1e-12, rho)
    assert (rank, dropped) == ref[1:3]
    assert ns == B.size
    np.testing.assert_allclose(F, ref[0], rtol=1e-9, atol=1e-9 * np.abs(ref[0]).max())
    np.testing.assert_allclose(svals, ref[4], rtol=0, atol=1e-13 * ref[4][0])
    if np.isfinite(ref[3]):
        assert kept_min == pytest.approx(ref[3], rel=1e-9)
    else:
        assert math.isnan(kept_min)
    for E, r, bound in zip(bases, rows, bounds):                                    # the bounds hold
        assert np.linalg.norm(E @ F[r]) <= bound * (1 + 1e-12)


def test_solve_groups_drops_the_fewest_singular_values():
    """Mitchell's iteration stops at the first k (from the rank down) at which every force is within its bound:
    with one more singular value kept some force would exceed its bound."""
    rng = np.random.default_rng(3)
    sizes, groups = [3, 3], [[0, 1]]
    for _ in range(20):
        A, B, rows, bases = random_system(rng, sizes, groups)
        bounds = rng.uniform(0.05, 3.0, 2)
        F, rank, dropped, kept_min, svals, _ = compiled_solve(A, B, rows, bases, bounds, groups, False, 1e-12, 0.0)
        lam, Q = np.linalg.eigh(A)
        order = np.argsort(-lam)
        lam, Q = lam[order], Q[:, order]
        k = rank - dropped

        def force(kk):
            return -Q[:, :kk] @ ((Q[:, :kk].T @ B) / lam[:kk])
        np.testing.assert_allclose(F, force(k), rtol=1e-8, atol=1e-10)
        for kk in range(k + 1, rank + 1):                                            # every larger k violates
            f = force(kk)
            assert any(np.linalg.norm(E @ f[r]) > bnd for E, r, bnd in zip(bases, rows, bounds))
        if k:
            assert kept_min == pytest.approx(lam[k - 1], rel=1e-9)


def test_force_bound_drops_singular_values_in_a_scene():
    """three_link_arm_nailed with a 1 N nail: unbounded it needs 25 N; the solve drops one of the two singular
    values and the force stays within the bound all along — on both paths alike."""
    free = core.Simulation(core.load_scene(SCENES_DIR / "three_link_arm_nailed.json")).data
    assert free.constraint_force_magnitude[0] > 20 and free.dropped == 0
    fast, ref = pair(with_constraint("three_link_arm_nailed.json", max_force=1.0))
    d0 = fast.data
    assert d0.rank == 2 and d0.dropped == 1
    assert 0.5 < d0.constraint_force_magnitude[0] <= 1.0                             # partly held, not released
    assert d0.singular_value_cutoff == pytest.approx(d0.singular_values[0])         # the largest σ kept
    a, b = fast.run(0.3, record_every=5), ref.run(0.3, record_every=5)
    assert_records_agree(a, b)
    assert np.all(a["dropped"] >= 1)
    assert np.all(a["constraint_force_magnitude"] <= 1.0 * (1 + 1e-12))
    assert a["deviation"][-1, 0] > 0.1                                               # the nail cannot hold it


@pytest.mark.parametrize("scene,rho", [("three_link_arm_nailed.json", 0.5), ("arm_nail_singular.json", 0.05)])
def test_damped_least_squares_setting_on_both_paths(scene, rho):
    solver = {"solver": {"method": "damped_least_squares", "rho": rho}}
    fast, ref = pair(with_constraint(scene, simulation=solver))
    svd = core.Simulation(core.load_scene(SCENES_DIR / scene)).data
    d = fast.data
    # damping shrinks every component of F (σ/(σ² + ρ²) < 1/σ) and leaves a residual
    assert d.constraint_force_magnitude[0] < svd.constraint_force_magnitude[0] * (1 - 1e-5)
    assert d.residual[0] - svd.residual[0] > 1e-10 * max(1.0, svd.residual[0])
    assert_data_agree(d, ref.data, energy=100.0)
    a, b = fast.run(0.1, record_every=5), ref.run(0.1, record_every=5)
    assert_records_agree(a, b)
    assert_events_agree(fast.events, ref.events)


# ---- 5. run-time inputs -------------------------------------------------------------------------------------

def drag_nail(sim):
    p = core.point_position(sim.model, sim.state.q, "cylinder", sim.model.resolve_point("cylinder", "end")[1])
    sim.move_nail("nail", p + [0.02, 0.0, -0.01], velocity=[0.3, 0.0, -0.1])


def pull_tip(sim):
    sim.set_pull("link3", "tip", target=[1.0, 1.5, 0.2], stiffness=60.0, damping=4.0)


def pull_elbow(sim):                    # (a pull on the nailed tip itself would be taken by the nail)
    sim.set_pull("link2", [0.0, 0.0, 0.0], target=[0.5, 1.5, 0.3], stiffness=80.0, damping=4.0)


def release_pull(sim):
    sim.clear_pull()


INPUT_CASES = {
    "move_nail": ("nail_cylinder_gravity.json", [drag_nail, lambda s: s.move_nail("nail", [0.6, 0.2, 0.0])]),
    "pull": ("three_link_arm_nailed.json", [pull_elbow, release_pull]),
    "pull_free_arm": ("three_link_arm.json", [pull_tip, release_pull]),
    "actuator": ("mcclamroch_two_arms.json", [lambda s: s.set_actuator("motor1", -3.0),
                                              lambda s: s.set_actuator("motor2", 2.5)]),
    # hinges 1 and 2 and one point of hinge 3 removed: the door hangs from one point, then a hinge again
    "set_active": ("door_three_hinges.json", [lambda s: [s.set_active(n, False) for n in (
                                                  "hinge1.p1", "hinge1.p2", "hinge2.p1", "hinge2.p2", "hinge3.p2")],
                                              lambda s: s.set_active("hinge3.p2", True)]),
}


@pytest.mark.parametrize("case", INPUT_CASES)
def test_run_time_inputs_agree_with_the_python_assembly(case):
    scene, inputs = INPUT_CASES[case]
    model = core.load_scene(SCENES_DIR / scene)
    fast, ref = pair(model)
    untouched = core.Simulation(model)
    untouched.run(0.15, record_every=10)
    for sim in (fast, ref):
        sim.run(0.05, record_every=10)
    for change in inputs:
        for sim in (fast, ref):
            change(sim)
        assert fast.compiled_scene() is not None
        assert_data_agree(fast.data, ref.data, energy=100.0)                          # right after the change
        a, b = fast.run(0.05, record_every=10), ref.run(0.05, record_every=10)
        assert_records_agree(a, b)
    assert_events_agree(fast.events, ref.events)
    assert np.abs(fast.state.q - untouched.state.q).max() > 1e-5                     # the inputs acted
    assert abs(fast.energy_error() - ref.energy_error()) <= 1e-10 * 100.0
    if case.startswith("pull"):
        assert fast.work[-1] != 0.0 and fast.work[-1] == pytest.approx(ref.work[-1], rel=1e-9)


def test_removed_constraint_has_no_force_and_its_rows_leave_the_solve():
    fast, ref = pair(core.load_scene(SCENES_DIR / "door_three_hinges.json"))
    rows0 = fast.data.singular_values.size
    for sim in (fast, ref):
        sim.run(0.02, record_every=10)
        sim.set_active("hinge3.p2", False)
    d = fast.data
    i = fast.model.constraint_names.index("hinge3.p2")
    assert d.constraint_force_magnitude[i] == 0.0 and np.isnan(d.residual[i])
    assert np.sum(~np.isnan(d.singular_values)) == rows0 - 3
    assert_data_agree(d, ref.data, energy=100.0)


# ---- 6. divergence ------------------------------------------------------------------------------------------

def naive_bound():
    """arm_nail_singular with a 1e12 N bound (naive SVD): millions of joules in the first steps, then overflow."""
    return with_constraint("arm_nail_singular.json", max_force=1e12)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_divergence_is_reported_and_the_last_good_state_kept(compiled):
    sim = core.Simulation(naive_bound(), compiled=compiled)
    assert (sim.compiled_scene() is not None) == compiled
    with pytest.raises(core.DivergenceError, match="diverging"):
        for _ in range(100):
            good = sim.state
            sim.step()
    assert sim.state is good
    assert np.all(np.isfinite(good.q)) and np.all(np.isfinite(good.qd)) and np.all(np.isfinite(sim.work))
    assert sim.state.t == pytest.approx(0.003, abs=1e-12) and sim.steps_taken == 3
    with pytest.raises(core.DivergenceError):                                        # and again, unchanged
        sim.step()
    assert sim.state is good


def test_divergence_happens_at_the_same_step_on_both_paths():
    fast, ref = pair(naive_bound())
    for sim in (fast, ref):
        with pytest.raises(core.DivergenceError):
            sim.run(1.0, record_every=10)                                              # inside a batch
    assert fast.state.t == ref.state.t and fast.steps_taken == ref.steps_taken == 3
    assert_events_agree(fast.events, ref.events)
    assert np.all(np.isfinite(fast.state.q)) and np.all(np.isfinite(fast.state.qd))
    # the last good state is already far gone (|q̇| ~ 1e22) and amplifies round-off: agreement to ~1e-3
    np.testing.assert_allclose(fast.state.qd, ref.state.qd, rtol=1e-2)
    assert np.abs(fast.state.qd).max() > 1e20


def test_states_before_the_blow_up_agree():
    """The two good steps before the overflow (forces ~1e11 N, σ_min ~3e-10): the ill-conditioned solve amplifies
    round-off, the paths agree to ~4e-8 of |q̇|."""
    fast, ref = pair(naive_bound())
    for _ in range(2):
        fast.step()
        ref.step()
        assert_close("qd", fast.state.qd, ref.state.qd, 1e-6, 1.0)                    # measured 3.5e-8
        assert_close("q", fast.state.q, ref.state.q, 1e-6, 1.0)
    assert fast.data.constraint_force_magnitude[0] > 1e10


@pytest.mark.parametrize("compiled", [
    pytest.param(True, id="compiled"),
    pytest.param(False, id="python")])
def test_data_after_divergence_describes_the_kept_state(compiled):
    sim = core.Simulation(naive_bound(), compiled=compiled)
    with pytest.raises(core.DivergenceError):
        for _ in range(100):
            sim.step()
    fresh = sim.evaluate(sim.state.t, sim.state.q, sim.state.qd)
    d = sim.data
    assert np.all(np.isfinite(d.qdd)) and np.isfinite(d.energy_kinetic)
    np.testing.assert_allclose(d.qdd, fresh.qdd, rtol=1e-12)
    assert np.isfinite(sim.energy_error())


# ---- 7. free bodies: quaternions and energy ------------------------------------------------------------------

FREE_BODY_SCENES = {"free_tumbling_box.json": 1e-12, "spherical_pendulum.json": 1e-10,
                    "three_link_free_bodies.json": 1e-7}      # measured: 1e-15, 9e-13, 4e-9 of the kinetic scale


@pytest.mark.parametrize("scene", FREE_BODY_SCENES)
def test_free_bodies_keep_unit_quaternions_and_close_their_energy_books(scene):
    sim = core.Simulation(core.load_scene(SCENES_DIR / scene))
    assert sim.compiled_scene() is not None
    starts = sim.model.kernel_quat_starts
    assert len(starts) >= 1
    d = sim.run(1.0, record_every=20)
    norms = np.array([[np.linalg.norm(q[i:i + 4]) for i in starts] for q in d["q"]])
    np.testing.assert_allclose(norms, 1.0, rtol=0, atol=1e-14)
    scale = max(np.abs(d["energy_kinetic"]).max(), np.abs(d["energy_total"]).max())
    assert scale > 0.1                                                                 # it really moves
    assert np.abs(d["energy_error"]).max() <= FREE_BODY_SCENES[scene] * scale
    assert np.abs(d["work_total_constraints"]).max() <= 1e-6 * scale                  # ideal joints do no work
    assert np.linalg.norm(d["q"][-1, starts[0]:starts[0] + 4] - d["q"][0, starts[0]:starts[0] + 4]) > 1e-2  # turns


def test_free_tumbling_box_agrees_with_the_python_assembly_over_a_second():
    fast, ref = pair(core.load_scene(SCENES_DIR / "free_tumbling_box.json"))
    a, b = fast.run(1.0, record_every=50), ref.run(1.0, record_every=50)
    assert_records_agree(a, b)
    # torque-free: the total energy is constant to round-off
    assert np.ptp(a["energy_total"]) <= 1e-13 * np.abs(a["energy_total"]).max()
