"""The three formulations on the same assembled quantities (core.formulations), checked against the identities
of Aghili's projection formulation and McClamroch's reduction:

- P = I − J⁺J is symmetric and idempotent and annihilates the constraint forces (P Jᵀ = 0), eq. 4, 15;
- the constraint inertia matrices: zᵀ Mc z = zᵀ M z, so Mc is positive definite wherever M is (Theorem 2) —
  at singular and redundant configurations too; M′c symmetric positive definite (Proposition 1); M″c invertible
  (Proposition 2); all three give the same q̈ (eq. 22, 27);
- the force recovered by projection (eq. 32) equals the multipliers' solution (eq. 26) where J has full rank,
  and M q̈ + b − τ = Jᵀλ in every formulation;
- redundant constraints: the generalized force is unique, the multipliers are not (Remark 4); every formulation
  returns the minimum-norm λ;
- the rank rule: a lone row through zero (the slider-crank singularity) is rank-deficient, which a purely
  relative tolerance never says; the multipliers formulation flags it and returns finite values;
- Aghili's closed forms for the slider-crank, eq. 69–71 (whose "if |c1| < ε" cases are swapped in the text:
  P = I at the singularity, where A⁺ = 0);
- Newton–Raphson position correction (eq. 39) converges quadratically and the velocity is projected;
- the formulation can be switched between steps.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.formulations import FORMULATIONS, PROJECTION_VARIANTS, _resting_group, certified_rank
from core.linalg import numerical_rank
from core.scene import compile_scene, parse_spec
from probe import look, project, stage, with_settings
from trees import random_state, random_tree_spec

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def constrained_tree(seed: int, stabilization: float = 0.0) -> core.Model:
    """A random tree of six hinge/slider/ball/free joints with a nail (3 rows), a point-on-plane (1 row) and a
    joint-space constraint (1 row) — 5 rows, full rank at generic states."""
    rng = np.random.default_rng(seed)
    doc = random_tree_spec(rng, 6, joints=("hinge", "slider", "ball", "free"))
    for b in doc["bodies"][1:3]:                            # two coordinates for the joint-space constraint
        b["joint"] = {"type": "hinge", "axis": [0, 0, 1], "position": [0.3, 0, 0], "q0": 0.2}
    doc["constraints"] = [
        {"type": "nail", "name": "nail", "body": "b5", "point": "p", "stabilization": stabilization},
        {"type": "point_on_plane", "name": "plane", "body": "b3", "point": "p", "origin": [0, 0, 0.1],
         "normal": rng.normal(size=3).tolist(), "stabilization": stabilization},
        {"type": "joint_space", "name": "loop", "expression": "sin(b1) + 0.5 * b2 ** 2", "value": 0.1,
         "stabilization": stabilization}]
    doc["forces"] = [{"type": "actuator", "name": f"motor_{b['name']}", "joint": b["name"]}     # applied τ
                     for b in doc["bodies"] if b["joint"]["type"] in ("hinge", "slider")]
    return compile_scene(parse_spec(doc))


def states(model, seed, n=4):
    """Random states and actuator commands (a random τ on the hinges and sliders)."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q, qd = random_state(rng, model)
        yield q, qd, {f.name: float(rng.normal()) for f in model.forces}


def tau_of(model, commands) -> np.ndarray:
    """The generalized force of the actuator commands."""
    tau = np.zeros(model.nv)
    for f in model.forces:
        tau[f.dof] += commands.get(f.name, 0.0)
    return tau


def at(model, q, qd, formulation, commands=None, t=0.0, **settings):
    """The compiled evaluation (:func:`probe.look`) under ``formulation``, actuator ``commands`` and
    ``simulation`` settings."""
    if settings:
        model = with_settings(model, **settings)
    inputs = core.Inputs(formulation=formulation).with_(actuators=commands or {})
    return look(model, t, q, qd, inputs=inputs)


def constraint_inertia(M, P, variant="Mc", gamma=None):
    """``(Mc, K)`` with Cc q̇ = K (C q̇) (eq. 22): Mc = M + PM − MP, K = M (eq. 23–24); M′c = PMP + (I−P)M(I−P),
    K = (I − 2P)M (eq. 27–28); M″c = PM + γ(I − P), K = γI, γ = ‖M‖₂ by default (eq. 29)."""
    n = M.shape[0]
    Q = np.eye(n) - P
    if variant == "Mc":
        return M + P @ M - M @ P, M
    if variant == "Mc_symmetric":
        return P @ M @ P + Q @ M @ Q, (np.eye(n) - 2.0 * P) @ M
    g = float(gamma) if gamma else float(np.linalg.norm(M, 2))
    return P @ M + g * Q, g * np.eye(n)


def singular_cases():
    """(name, model, q, qd): configurations where J loses rank, and redundant constraints."""
    crank = core.load_scene(SCENES / "slider_crank.json")
    arm = core.load_scene(SCENES / "arm_nail_singular.json")
    door = core.load_scene(SCENES / "door_three_hinges.json")
    four = core.load_scene(SCENES / "four_bar.json")
    return [("slider_crank at q1 = π/2", crank, np.array([np.pi / 2, np.pi]), np.array([2.0, -4.0])),
            ("slider_crank 1e-7 from it", crank, np.array([np.pi / 2 + 1e-7, np.pi - 2e-7]), np.array([2.0, -4.0])),
            ("arm at full extension", arm, arm.q0, arm.qd0),
            ("door on three hinges", door, door.q0, door.qd0 + 0.3),
            ("four-bar (planar loop)", four, four.q0, four.qd0)]


SINGULAR = singular_cases()


# ------------------------------------------------------------------------------------------- P
@pytest.mark.parametrize("seed", range(4))
def test_projector_is_symmetric_idempotent_and_annihilates_constraint_forces(seed):
    """P = I − J⁺J as the projection formulation forms it (one-sided Jacobi SVD of J), eq. 4, 15."""
    model = constrained_tree(seed)
    for q, qd, _ in states(model, seed):
        a = at(model, q, qd, "projection")
        P, J = a.P, a.J
        np.testing.assert_allclose(P, P.T, atol=1e-14)
        np.testing.assert_allclose(P @ P, P, atol=1e-13)
        np.testing.assert_allclose(P @ J.T, 0.0, atol=1e-12)                  # P ℱ = 0 for ℱ = Jᵀλ
        assert np.trace(P) == pytest.approx(model.nv - np.linalg.matrix_rank(J))
        np.testing.assert_allclose(a.Jpinv, np.linalg.pinv(J), atol=1e-12 * np.abs(np.linalg.pinv(J)).max())


@pytest.mark.parametrize("seed", [0, 2, 3])        # (in tree 1 the admissible motion misses the constraints)
def test_normal_acceleration_is_the_derivative_of_the_projector(seed):
    """eq. 13–16: for q̇ in the null space of J, C q̇ = Ṗ q̇ (C = dP/dt, eq. 14) equals −J⁺ J̇q̇ (eq. 16)."""
    model = constrained_tree(seed)
    q, qd, _ = next(states(model, seed))
    qd = at(model, q, qd, "projection").P @ qd                              # an admissible velocity
    a = at(model, q, qd, "projection")
    h = 1e-5
    P = [at(model, core.normalize_configuration(model, core.integrate_configuration(model, q, qd, s)), qd,
            "projection").P for s in (h, -h)]
    Pdot_qd = (P[0] - P[1]) @ qd / (2 * h)
    Cqd = -a.Jpinv @ a.gamma
    np.testing.assert_allclose(Pdot_qd, Cqd, atol=1e-6 * (1 + np.abs(Cqd).max()))
    assert np.abs(Cqd).max() > 1e-3                                          # not trivially zero


@pytest.mark.parametrize("name, model, q, qd", SINGULAR, ids=[c[0] for c in SINGULAR])
def test_projector_identities_hold_at_singular_and_redundant_configurations(name, model, q, qd):
    a = at(model, q, qd, "projection")
    P = a.P
    np.testing.assert_allclose(P, P.T, atol=1e-14)
    np.testing.assert_allclose(P @ P, P, atol=1e-12)
    assert np.trace(P) == pytest.approx(model.nv - a.data.rank)
    s = np.linalg.svd(a.J, compute_uv=False)
    np.testing.assert_allclose(P @ a.J.T, 0.0, atol=1e-3 * max(s.max(initial=0), a.scale) * 1.01)


# ------------------------------------------------------------------------------------------- Mc
@pytest.mark.parametrize("name, model, q, qd", SINGULAR, ids=[c[0] for c in SINGULAR])
def test_constraint_inertia_is_positive_definite_at_singular_configurations(name, model, q, qd):
    """Theorem 2: Mc = M + PM − MP adds a skew-symmetric part, so zᵀ Mc z = zᵀ M z > 0; M′c is symmetric
    positive definite (Proposition 1) and M″c invertible (Proposition 2) — with the pipeline's P."""
    P = at(model, q, qd, "projection").P
    M = core.mass_matrix(model, q)
    Mc, _ = constraint_inertia(M, P, "Mc")
    np.testing.assert_allclose(Mc - M, -(Mc - M).T, atol=1e-12)                 # M̃ skew-symmetric
    z = np.random.default_rng(0).normal(size=(model.nv, 20))
    np.testing.assert_allclose(np.einsum("ik,ij,jk->k", z, Mc, z), np.einsum("ik,ij,jk->k", z, M, z), rtol=1e-12)
    assert np.linalg.eigvalsh(0.5 * (Mc + Mc.T)).min() > 0
    Ms, _ = constraint_inertia(M, P, "Mc_symmetric")
    np.testing.assert_allclose(Ms, Ms.T, atol=1e-12)
    assert np.linalg.eigvalsh(Ms).min() > 0
    Mg, _ = constraint_inertia(M, P, "Mc_gamma")
    assert abs(np.linalg.det(Mg)) > 1e-12 * np.linalg.norm(M, 2) ** model.nv


VARIANT_SETTINGS = [("Mc", {}), ("Mc_symmetric", {}), ("Mc_gamma", {}), ("Mc_gamma", {"gamma": 0.37})]


@pytest.mark.parametrize("seed", range(4))
def test_all_three_constraint_inertias_give_the_same_acceleration(seed):
    """eq. 22 with each constraint inertia (and any γ > 0, eq. 29): the pipeline's q̈ solves
    Mc q̈ = P(τ − b) + K C q̇ for the variant's (Mc, K), and all variants give the same q̈."""
    model = constrained_tree(seed)
    for q, qd, commands in states(model, seed):
        M, b, tau = core.mass_matrix(model, q), core.nonlinear_effects(model, q, qd), tau_of(model, commands)
        qdd = []
        for variant, extra in VARIANT_SETTINGS:
            a = at(model, q, qd, "projection", commands, projection={"variant": variant, **extra})
            Mc, K = constraint_inertia(M, a.P, variant, extra.get("gamma"))
            rhs = a.P @ (tau - b) + K @ (-a.Jpinv @ a.gamma)
            np.testing.assert_allclose(Mc @ a.data.qdd, rhs, atol=1e-10 * (1 + np.abs(rhs).max()))
            qdd.append(a.data.qdd)
        for other in qdd[1:]:
            np.testing.assert_allclose(other, qdd[0], rtol=1e-9, atol=1e-9 * (1 + np.abs(qdd[0]).max()))


@pytest.mark.parametrize("name, model, q, qd", SINGULAR, ids=[c[0] for c in SINGULAR])
def test_constraint_inertias_agree_at_singular_configurations(name, model, q, qd):
    qdd = [at(model, q, qd, "projection", projection={"variant": v}).data.qdd for v in PROJECTION_VARIANTS]
    for other in qdd[1:]:
        np.testing.assert_allclose(other, qdd[0], rtol=1e-9, atol=1e-9 * (1 + np.abs(qdd[0]).max()))


# ------------------------------------------------------------------------------------------- forces
@pytest.mark.parametrize("seed", range(4))
def test_projection_recovers_the_multipliers_where_J_has_full_rank(seed):
    """eq. 32 then λ = J⁺ᵀ(Jᵀλ) equals McClamroch's λ = (J M⁻¹Jᵀ)⁻¹(…) (eq. 26) and the dynamic-constraints
    solve; all satisfy M q̈ + b − τ = Jᵀλ and J q̈ + γ = 0 (no Baumgarte terms: stabilization 0)."""
    model = constrained_tree(seed, stabilization=0.0)
    for q, qd, commands in states(model, seed):
        sols = {f: at(model, q, qd, f, commands) for f in FORMULATIONS}
        ref = sols["multipliers"]
        J, gamma = ref.J, ref.gamma
        assert np.linalg.matrix_rank(J) == J.shape[0] and not ref.data.rank_deficient
        M, b, tau = core.mass_matrix(model, q), core.nonlinear_effects(model, q, qd), tau_of(model, commands)
        np.testing.assert_allclose(ref.data.tau_applied, tau, rtol=0, atol=1e-14)
        for f, sol in sols.items():
            scale = 1 + np.abs(ref.lam).max()
            np.testing.assert_allclose(sol.lam, ref.lam, rtol=1e-8, atol=1e-8 * scale, err_msg=f)
            np.testing.assert_allclose(sol.data.qdd, ref.data.qdd, rtol=1e-8, atol=1e-8 * (1 + np.abs(ref.data.qdd).max()))
            np.testing.assert_allclose(M @ sol.data.qdd + b - tau, J.T @ sol.lam, atol=1e-8 * scale * 10)
            np.testing.assert_allclose(J @ sol.data.qdd + gamma, 0.0, atol=1e-8 * (1 + np.abs(ref.data.qdd).max()))


def test_redundant_multipliers_are_minimum_norm_and_the_generalized_force_is_unique():
    """Remark 4 on the door: 18 rows of rank 5 leave 13 indeterminate multiplier combinations. Every formulation
    returns the same minimum-norm λ (in the range of J) and the same Jᵀλ; adding any n with Jᵀn = 0 changes
    nothing physical."""
    door = core.load_scene(SCENES / "door_three_hinges.json")
    door = compile_scene(door.spec.model_copy(update={"constraints": [
        c.model_copy(update={"stabilization": 0.0}) for c in door.spec.constraints]}))
    q, qd = door.q0, door.qd0 + np.array([0.0, 0.0, 1.3, 0.0, 0.0, 0.0])    # swinging about the hinge axis
    sols = {f: at(door, q, qd, f) for f in FORMULATIONS}
    J = sols["projection"].J
    M, b = core.mass_matrix(door, q), core.nonlinear_effects(door, q, qd)
    U, s, Vt = np.linalg.svd(J)
    r = int(np.sum(s > 1e-9 * s[0]))
    assert J.shape == (18, 6) and r == 5
    null = U[:, r:]                                                          # the indeterminate combinations
    for f, sol in sols.items():
        assert sol.data.jacobian_rank == 5 and sol.data.rank_deficient, f
        np.testing.assert_allclose(null.T @ sol.lam, 0.0, atol=1e-9 * np.abs(sol.lam).max())   # minimum norm
        np.testing.assert_allclose(sol.lam, sols["projection"].lam, atol=1e-8 * np.abs(sol.lam).max())
        np.testing.assert_allclose(J.T @ sol.lam, M @ sol.data.qdd + b, atol=1e-8)
    other = sols["multipliers"].lam + null @ np.random.default_rng(0).normal(size=18 - r) * 50.0
    np.testing.assert_allclose(J.T @ other, J.T @ sols["multipliers"].lam, atol=1e-9)


# ------------------------------------------------------------------------------------------- rank
def test_a_lone_row_through_zero_is_rank_deficient_only_with_the_scale_floor():
    """A relative test (σ > tol·σ_max) can never flag a single row: σ = σ_max. The floor (the row's norm at the
    initial configuration) makes the slider-crank singularity rank 0 (Aghili's ε, eq. 70)."""
    crank = core.load_scene(SCENES / "slider_crank.json")
    a = at(crank, np.array([np.pi / 2 + 1e-6, np.pi - 2e-6]), np.zeros(2), "projection")
    s = np.linalg.svd(a.J, compute_uv=False)
    assert s[0] == pytest.approx(np.sqrt(5) * 1e-6, rel=1e-6)
    np.testing.assert_allclose(a.sj, s, rtol=1e-12)                          # the pipeline's SVD of J
    assert a.scale == pytest.approx(np.sqrt(5) * np.cos(0.3), rel=1e-12)
    assert numerical_rank(s, 1, 1e-3, 0.0) == 1                              # purely relative: never singular
    assert numerical_rank(s, 1, 1e-3, a.scale) == 0
    assert numerical_rank(np.array([0.0]), 1, 1e-3, 0.0) == 0
    assert a.data.jacobian_rank == 0 and a.data.rank_deficient


def _rule(J, tolerance, scale) -> int:
    """The one rank rule on NumPy's singular values of J (module docstring of core.formulations)."""
    s = np.linalg.svd(J, compute_uv=False) if J.size else np.zeros(0)
    return numerical_rank(s, s.size, tolerance, scale)


@pytest.mark.parametrize("tolerance", [1e-3, 1e-8])
def test_the_jacobian_rank_is_the_rule_on_the_singular_values_of_j_certified_or_not(tolerance):
    """Under dynamic constraints a full evaluation's rank (:func:`core.formulations.jacobian_rank`) certifies
    full rank from each group's Gram matrix where it can and takes J's singular values where it cannot (near a
    singularity, or below CERTIFIED_TOLERANCE); either way it is the rule on NumPy's singular values of J: the box
    stack at rest (one group: 60 rows on 30 velocities, rank 30), the free bodies held by redundant rows (rank 15
    of 18), and the slider-crank swept through its singularity, where σ crosses the tolerance times the scale."""
    stack = with_settings(core.load_scene(SCENES / "box_stack.json"), rank_tolerance=tolerance)
    sim = core.Simulation(stack)
    sim.run(0.05)
    rest = look(stack, sim.state.t, sim.state.q, sim.state.qd, active=sim.state.active)
    assert rest.J.shape == (60, 30) and rest.data.jacobian_rank == _rule(rest.J, tolerance, rest.scale) == 30
    free = core.load_scene(SCENES / "three_link_free_bodies.json")
    redundant = at(free, free.q0, free.qd0, "dynamic_constraints", rank_tolerance=tolerance)
    assert redundant.data.jacobian_rank == _rule(redundant.J, tolerance, redundant.scale) < redundant.m == 18
    crank = core.load_scene(SCENES / "slider_crank.json")
    ranks = []
    for d in tolerance * np.array([0.5, 0.9, 0.93, 0.97, 1.0, 1.5, 10.0, 1e3]):
        a = at(crank, np.array([np.pi / 2 + d, np.pi - 2 * d]), np.zeros(2), "dynamic_constraints",
               rank_tolerance=tolerance)
        ranks.append(a.data.jacobian_rank)
        assert a.data.jacobian_rank == _rule(a.J, tolerance, a.scale), d
    assert ranks[0] == 0 and ranks[-1] == 1                   # (both sides of the threshold were swept)


@pytest.mark.parametrize("seed", range(6))
def test_a_certified_rank_is_never_wrong_and_is_found_across_a_clear_gap(seed):
    """:func:`core.formulations.certified_rank` on symmetric positive semi-definite matrices of known spectra (sizes
    1–30, ranks 0–n, eigenvalues graded over six decades, then a gap or none): whenever it answers, its rank r has
    λ_r above twice the upper bound of the threshold and λ_{r+1} below half its lower bound — the rule's count for
    any threshold between them; across a clear gap (the kept eigenvalues ≥ 10⁴ times the threshold, the others
    ≤ 10⁻⁴ times it) it answers; with an eigenvalue at the threshold it declines (−1)."""
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 31))
        r = int(rng.integers(0, n + 1))
        threshold = 10.0 ** rng.uniform(-8, -2)
        big = threshold * 10.0 ** rng.uniform(4, 10, r)
        small = threshold * 10.0 ** rng.uniform(-12, -4, n - r) * (rng.random(n - r) > 0.3)
        for case in ("gap", "at"):
            lam = np.concatenate([big, small])
            if case == "at" and n > 0:
                lam[int(rng.integers(0, n))] = threshold
            Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
            G = (Q * lam) @ Q.T
            G = 0.5 * (G + G.T)
            got = certified_rank(G, n, threshold, threshold, np.zeros(n, np.int64), np.zeros(n), np.zeros((n, n)),
                                 np.zeros(n))
            ordered = np.sort(lam)[::-1]
            if got >= 0:
                assert got == 0 or ordered[got - 1] > threshold, (n, r, got)
                assert got == n or ordered[got] < threshold, (n, r, got)
            if case == "gap":
                assert got == r
            else:
                assert got == -1


def test_a_stage_solves_bodies_resting_on_each_other_as_the_minimum_norm_solution():
    """Five boxes stacked at rest: one group of 60 rows (four corners of each box, a normal and two stick rows
    each) on 30 velocities, J of full column rank, every body alone in its tree. An integrator's stage solves it
    without A (:func:`core.formulations._resting_group`: F = J G⁻¹ M x, x = −G⁻¹JᵀB, G = JᵀJ); its forces and
    accelerations are the minimum-norm solution F = −A⁺B of the full evaluation's A and B (NumPy's pseudo-inverse),
    and equal the full evaluation's own (the compressed eigen-solve) to round-off."""
    stack = core.load_scene(SCENES / "box_stack.json")
    sim = core.Simulation(stack)
    sim.run(0.05)
    s = sim.state
    full = look(stack, s.t, s.q, s.qd, active=s.active)
    assert full.J.shape == (60, 30) and np.linalg.matrix_rank(full.J) == 30
    qdd, lam = stage(stack, s.t, s.q, s.qd, s.active)
    F = -np.linalg.pinv(full.A, rcond=1e-12) @ full.B
    top = np.abs(F).max()
    assert top > 10.0                                         # (the stack's weight, hundreds of newtons)
    np.testing.assert_allclose(lam, F, rtol=0, atol=1e-9 * top)
    np.testing.assert_allclose(qdd, full.qdd_free + full.MinvJt @ F, rtol=0, atol=1e-9)
    np.testing.assert_allclose(lam, full.lam, rtol=0, atol=1e-9 * top)
    np.testing.assert_allclose(qdd, full.data.qdd, rtol=0, atol=1e-9)
    assert np.abs(qdd).max() < 1e-6                           # (at rest)
    tree = stack.tree                                         # the group's own solve, called as the stage calls it
    n, p = full.J.shape
    Fg = np.full(n, np.nan)
    span = np.tile([0, p, 0], (n, 1))
    taken = _resting_group(full.J, full.B, np.arange(n), n, span, 0, p, tree.root, tree.v_start, tree.nv_j,
                           tree.lone_Dinv, np.zeros((p, p)), np.zeros((6, 6)), np.zeros(p), np.zeros(p), Fg)
    assert taken and tree.lone.all()
    np.testing.assert_allclose(Fg, F, rtol=0, atol=1e-9 * top)


def test_multipliers_flag_the_slider_crank_singularity_instead_of_producing_garbage():
    """Near q1 = π/2 the reduction λ = (J M⁻¹Jᵀ)⁻¹(…) divides by σ² ≈ 5e-12: with a drifted state the multiplier
    would be ~1e5 N. The formulation reports the rank loss and drops the direction (λ = 0), so q̈ stays the
    bounded free acceleration; projection does the same (P = I); above the tolerance all three agree."""
    crank = core.load_scene(SCENES / "slider_crank.json")
    q, qd = np.array([np.pi / 2 + 1e-6, np.pi - 2e-6 + 1e-9]), np.array([2.0, -4.0 + 1e-6])
    mu = at(crank, q, qd, "multipliers")
    assert mu.data.rank_deficient and mu.data.jacobian_rank == 0 and mu.data.rank == 0
    assert np.all(np.isfinite(mu.data.qdd)) and np.abs(mu.data.qdd).max() < 1e2 and np.all(mu.lam == 0.0)
    naive = np.linalg.solve(mu.A, -mu.B)
    assert np.abs(naive).max() > 1e4                                         # what it would have produced
    np.testing.assert_allclose(mu.data.qdd, mu.qdd_free, rtol=0, atol=0)     # the free acceleration
    pr = at(crank, q, qd, "projection")
    assert pr.data.rank == 0 and np.all(pr.lam == 0.0)
    np.testing.assert_allclose(pr.data.qdd, mu.data.qdd, atol=1e-9)
    sols = [at(crank, crank.q0, crank.qd0, f) for f in FORMULATIONS]        # regular: all agree
    for sol in sols:
        assert not sol.data.rank_deficient and sol.data.jacobian_rank == 1
        np.testing.assert_allclose(sol.data.qdd, sols[0].data.qdd, rtol=1e-10)


def test_aghili_closed_forms_for_the_slider_crank():
    """eq. 69: J = c1 [2 1] on the branch q2 = 2π − 2q1; eq. 70: P = [[1, −2], [−2, 4]]/5 away from the
    singularity and I at it; eq. 71 (γ = m l² = 1): M″c = [[1, (1 + c2)/5], [0, (3 − 2c2)/5]] away from it, and
    the pipeline's q̈ with it solves eq. 22; M′c = M at the singularity. (The paper's text attaches the cases of
    eq. 70–71 the wrong way round: at |c1| < ε, A⁺ = 0.) Also C ≡ 0 on the branch: γ = J̇q̇ = 0 for consistent
    velocities."""
    crank = core.load_scene(SCENES / "slider_crank.json")
    q1 = 0.7
    q, qd = np.array([q1, 2 * np.pi - 2 * q1]), np.array([1.3, -2.6])
    a = at(crank, q, qd, "projection", projection={"variant": "Mc_gamma", "gamma": 1.0})
    np.testing.assert_allclose(a.J, np.cos(q1) * np.array([[2.0, 1.0]]), atol=1e-14)
    assert a.gamma[0] == pytest.approx(0.0, abs=1e-13)
    M = core.mass_matrix(crank, q)
    c2 = np.cos(q[1])
    np.testing.assert_allclose(M, [[3 + 2 * c2, 1 + c2], [1 + c2, 1]], atol=1e-13)          # eq. 68
    np.testing.assert_allclose(a.P, np.array([[1, -2], [-2, 4]]) / 5, atol=1e-14)
    Mg = np.array([[1, (1 + c2) / 5], [0, (3 - 2 * c2) / 5]])
    np.testing.assert_allclose(constraint_inertia(M, a.P, "Mc_gamma", gamma=1.0)[0], Mg, atol=1e-14)
    b = core.nonlinear_effects(crank, q, qd)
    np.testing.assert_allclose(Mg @ a.data.qdd, a.P @ -b, atol=1e-12)      # C q̇ = 0 on the branch (eq. 22)
    qs = np.array([np.pi / 2, np.pi])
    s = at(crank, qs, np.zeros(2), "projection")
    np.testing.assert_allclose(s.P, np.eye(2), atol=1e-15)
    Ms = core.mass_matrix(crank, qs)
    np.testing.assert_allclose(constraint_inertia(Ms, s.P, "Mc_symmetric")[0], Ms, atol=1e-15)


# ------------------------------------------------------------------------------------------- correction
def test_newton_raphson_correction_converges_quadratically_and_projects_the_velocity():
    """eq. 39 from a state knocked 1e-3 off the four-bar's constraint manifold: ‖Φ‖ falls below 1e-12 within a
    few iterations, each squaring the error (Theorem 3), and J q̇ = 0 afterwards."""
    four = core.load_scene(SCENES / "four_bar.json")
    rng = np.random.default_rng(4)
    q = four.q0 + 1e-3 * rng.normal(size=3)
    qd = four.qd0 + 1e-2 * rng.normal(size=3)
    phi0 = np.abs(look(four, 0.0, q, qd).D).max()
    norms = []
    for n in range(1, 5):
        capped = with_settings(four, projection={"max_iterations": n, "position_tolerance": 1e-300})
        qn, _, it = project(capped, 0.0, q, qd)
        assert it == n
        norms.append(np.abs(look(four, 0.0, qn, qd).D).max())
    assert phi0 > 1e-4
    assert norms[0] < 1e-2 * phi0 and norms[1] < 10 * norms[0] ** 2 and norms[2] < 1e-12
    q1, qd1, it = project(four, 0.0, q, qd)
    rows = look(four, 0.0, q1, qd1)
    assert it <= 4 and np.abs(rows.D).max() <= 1e-12
    np.testing.assert_allclose(rows.J @ qd1, 0.0, atol=1e-12)


def test_newton_raphson_keeps_the_best_iterate_when_it_cannot_converge():
    """arm_nail_singular's nail is out of the arm's reach: Newton–Raphson cannot make Φ zero. It stops when an
    iteration no longer lowers ‖Φ‖ and keeps the best configuration, never a worse one."""
    arm = core.load_scene(SCENES / "arm_nail_singular.json")
    q, qd = arm.q0 + np.array([0.05, -0.1, 0.02]), np.zeros(arm.nv)
    phi0 = np.linalg.norm(look(arm, 0.0, q, qd).D)
    q1, _, it = project(arm, 0.0, q, qd)
    phi1 = np.linalg.norm(look(arm, 0.0, q1, qd).D)
    assert 0 < it < arm.settings.get("projection", {}).get("max_iterations", 20)
    assert phi1 <= phi0 and phi1 > 1.0                                       # as close as it gets; still far


def test_formulation_can_be_switched_between_steps():
    """Paused at a step boundary, the formulation changes and the run continues from the same state on the
    same motion (the slider-crank, 0.3 s projection then 0.3 s multipliers, against 0.6 s of projection)."""
    crank = core.load_scene(SCENES / "slider_crank.json")
    one = core.Simulation(crank)
    one.run(0.3)
    state = one.state.copy()
    one.set_formulation("multipliers")
    assert one.formulation == "multipliers"
    np.testing.assert_array_equal(one.state.q, state.q)
    one.run(0.3)
    ref = core.Simulation(crank)
    ref.run(0.6)
    assert np.abs(one.state.q - ref.state.q).max() < 1e-8
    with pytest.raises(ValueError, match="unknown formulation"):
        one.set_formulation("lagrange")
