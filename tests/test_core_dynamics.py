"""Identities between the dynamics algorithms on random trees of every joint type (spatial_v2's
UnitTest_Dynamics style): ABA vs H⁻¹(τ − b), RNEA∘ABA = id, H SPD, Ḣ − 2C skew, KE = ½q̇ᵀHq̇, power balance,
point Jacobians and J̇q̇ vs finite differences."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import core
from core.kinematics import integrate_configuration
from trees import JOINTS, random_state, random_tree

SEEDS = range(6)


@pytest.fixture(params=SEEDS)
def tree(request):
    """A random tree; odd seeds give its hinges and sliders armature, so every identity below holds with it."""
    rng = np.random.default_rng(request.param)
    model = random_tree(rng, n_links=int(rng.integers(3, 9)), armature=0.4 if request.param % 2 else 0.0)
    q, qd = random_state(rng, model)
    return rng, model, q, qd


def test_armature_adds_its_diagonal_to_the_joint_space_inertia():
    """The same tree with and without armature: H differs by diag(a) exactly where the hinges and sliders are, and
    ABA, RNEA and the kinetic energy see the same H."""
    from trees import random_tree_spec
    from core.scene import compile_scene, parse_spec
    for seed in range(4):
        plain = compile_scene(parse_spec(random_tree_spec(np.random.default_rng(seed), 6)))
        geared = compile_scene(parse_spec(random_tree_spec(np.random.default_rng(seed), 6, armature=0.5)))
        assert geared.armature.any() and not plain.armature.any()
        q, qd = random_state(np.random.default_rng(seed + 10), plain)
        H0, H1 = core.mass_matrix(plain, q), core.mass_matrix(geared, q)
        np.testing.assert_allclose(H1 - H0, np.diag(geared.armature), atol=1e-12 * np.abs(H0).max())
        tau = np.random.default_rng(seed + 20).normal(size=plain.nv)
        qdd = core.forward_dynamics(geared, q, qd, tau)
        b = core.inverse_dynamics(geared, q, qd, np.zeros(plain.nv))
        np.testing.assert_allclose(H1 @ qdd + b, tau, atol=1e-10 * max(1.0, np.abs(tau).max()))
        assert core.kinetic_energy(geared, q, qd) == pytest.approx(0.5 * qd @ H1 @ qd, rel=1e-12)


def test_random_trees_cover_every_joint_type():
    seen = set()
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        model = random_tree(rng, n_links=int(rng.integers(3, 9)))
        seen |= set(int(t) for t in model.joint_type)
    assert seen == {core.model.JOINT_TYPES[j] for j in JOINTS}


def test_aba_equals_crba_solve(tree):
    rng, model, q, qd = tree
    tau = rng.normal(size=model.nv)
    H = core.mass_matrix(model, q)
    b = core.nonlinear_effects(model, q, qd)
    np.testing.assert_allclose(core.forward_dynamics(model, q, qd, tau), np.linalg.solve(H, tau - b),
                               rtol=1e-9, atol=1e-9)


def test_rnea_inverts_aba_with_external_forces(tree):
    rng, model, q, qd = tree
    tau = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.n_links, 6))
    qdd = core.forward_dynamics(model, q, qd, tau, f_ext)
    np.testing.assert_allclose(core.inverse_dynamics(model, q, qd, qdd, f_ext), tau, rtol=1e-9, atol=1e-9)


def test_mass_matrix_symmetric_positive_definite(tree):
    _, model, q, _ = tree
    H = core.mass_matrix(model, q)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    assert np.linalg.eigvalsh(H).min() > 0


def test_kinetic_energy_is_half_qd_H_qd(tree):
    _, model, q, qd = tree
    H = core.mass_matrix(model, q)
    assert core.kinetic_energy(model, q, qd) == pytest.approx(0.5 * qd @ H @ qd, rel=1e-12)


def test_mass_matrix_columns_are_inverse_dynamics_without_velocity_and_gravity(tree):
    _, model, q, _ = tree
    g0 = dataclasses.replace(model, gravity=np.zeros(3))
    H = core.mass_matrix(model, q)
    cols = np.column_stack([core.inverse_dynamics(g0, q, np.zeros(model.nv), e) for e in np.eye(model.nv)])
    np.testing.assert_allclose(cols, H, atol=1e-10)


def test_power_balance(tree):
    """d/dt ½q̇ᵀHq̇ = q̇ᵀ(τ − g) along the motion q̈ = ABA(τ): holds for quaternion joints too."""
    rng, model, q, qd = tree
    tau = rng.normal(size=model.nv)
    g = core.nonlinear_effects(model, q, np.zeros(model.nv))
    qdd = core.forward_dynamics(model, q, qd, tau)
    h = 1e-6
    ke = [core.kinetic_energy(model, integrate_configuration(model, q, qd, s * h), qd + s * h * qdd) for s in (-1, 1)]
    assert (ke[1] - ke[0]) / (2 * h) == pytest.approx(qd @ (tau - g), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
def test_Hdot_minus_2C_is_skew(seed):
    """For holonomic coordinates (hinges and sliders) build C from Christoffel symbols of finite-difference
    ∂H/∂q and check C q̇ = b − g (RNEA) and that Ḣ − 2C is skew-symmetric."""
    rng = np.random.default_rng(100 + seed)
    model = random_tree(rng, n_links=5, joints=("hinge", "slider"))
    q, qd = random_state(rng, model)
    n, h = model.nv, 1e-6
    dH = np.array([(core.mass_matrix(model, q + h * e) - core.mass_matrix(model, q - h * e)) / (2 * h) for e in np.eye(n)])
    # Γ_{ij,k} = ½(∂H_kj/∂q_i + ∂H_ki/∂q_j − ∂H_ij/∂q_k);  C_kj = Σ_i Γ_{ij,k} q̇_i
    C = 0.5 * (np.einsum("ikj,i->kj", dH, qd) + np.einsum("jki,i->kj", dH, qd) - np.einsum("kij,i->kj", dH, qd))
    Hdot = np.einsum("ikj,i->kj", dH, qd)
    b_minus_g = core.nonlinear_effects(model, q, qd) - core.nonlinear_effects(model, q, np.zeros(n))
    np.testing.assert_allclose(C @ qd, b_minus_g, rtol=1e-6, atol=1e-6)
    S = Hdot - 2 * C
    np.testing.assert_allclose(S, -S.T, atol=1e-6)


def test_point_jacobian_matches_finite_differences(tree):
    _, model, q, qd = tree
    h = 1e-6
    for k in range(model.n_links):
        body = model.link_names[k]
        J = core.point_jacobian(model, q, body, "p")
        fd = np.column_stack([
            (core.point_position(model, integrate_configuration(model, q, e, h), body, "p")
             - core.point_position(model, integrate_configuration(model, q, e, -h), body, "p")) / (2 * h)
            for e in np.eye(model.nv)])
        np.testing.assert_allclose(J, fd, atol=1e-7)
        np.testing.assert_allclose(core.point_velocity(model, q, qd, body, "p"), J @ qd, atol=1e-10)


def test_point_acceleration_and_bias_match_finite_differences(tree):
    """ẍ = J q̈ + J̇q̇ (eq. 2.59) against a central difference of ẋ along (q̇, q̈)."""
    rng, model, q, qd = tree
    qdd = rng.normal(size=model.nv)
    h = 1e-5
    for k in range(model.n_links):
        body = model.link_names[k]
        vel = [core.point_velocity(model, integrate_configuration(model, q, qd, s * h), qd + s * h * qdd, body, "p")
               for s in (-1, 1)]
        fd = (vel[1] - vel[0]) / (2 * h)
        acc = core.point_acceleration(model, q, qd, qdd, body, "p")
        np.testing.assert_allclose(acc, fd, atol=1e-6 * max(1.0, np.abs(fd).max()))
        J = core.point_jacobian(model, q, body, "p")
        np.testing.assert_allclose(core.point_bias_acceleration(model, q, qd, body, "p"), acc - J @ qdd, atol=1e-9)


def test_configuration_derivative_matches_retraction(tree):
    _, model, q, qd = tree
    h = 1e-7
    fd = (integrate_configuration(model, q, qd, h) - integrate_configuration(model, q, qd, -h)) / (2 * h)
    np.testing.assert_allclose(core.configuration_derivative(model, q, qd), fd, atol=1e-6)


def test_gravity_torques_are_the_gradient_of_potential_energy(tree):
    """g(q) = RNEA(q, 0, 0) = ∂PE/∂q along every tangent direction (quaternion joints included)."""
    _, model, q, _ = tree
    g = core.nonlinear_effects(model, q, np.zeros(model.nv))
    h = 1e-6
    grad = [(core.potential_energy(model, integrate_configuration(model, q, e, h))
             - core.potential_energy(model, integrate_configuration(model, q, e, -h))) / (2 * h) for e in np.eye(model.nv)]
    np.testing.assert_allclose(g, grad, rtol=1e-6, atol=1e-6)


def test_single_calls_keep_bounded_scratch_per_thread():
    """forward_dynamics, inverse_dynamics and mass_matrix evaluate in scratch kept per thread and per link count:
    O(N) (no nv × nv matrix for a call that returns one), at most THREAD_WORK_SIZES sizes, never shared between
    threads (two threads get their own, and their results agree)."""
    import threading

    from numba import njit

    from core.layout import THREAD_WORK_SIZES, thread_work

    @njit
    def sizes(aba, plant):                              # (the proxies show their arrays to compiled code only)
        return plant.M.shape[0], plant.M.shape[1], aba.IA.shape[0]
    kin, aba, plant = thread_work(7)
    assert sizes(aba, plant) == (0, 0, 7)
    assert thread_work(7)[0] is kin
    for n in range(1, 3 * THREAD_WORK_SIZES):
        thread_work(n)
    import core.layout as layout
    assert len(layout._thread.works) == THREAD_WORK_SIZES
    rng = np.random.default_rng(4)
    model = random_tree(rng, n_links=6)
    q, qd = random_state(rng, model)
    tau = rng.normal(size=model.nv)
    results, works = {}, {}

    def run(name):
        works[name] = thread_work(model.n_links)[1]
        results[name] = [core.forward_dynamics(model, q, qd, tau) for _ in range(50)][-1]
    threads = [threading.Thread(target=run, args=(k,)) for k in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert works["a"] is not works["b"]
    np.testing.assert_array_equal(results["a"], results["b"])
    np.testing.assert_array_equal(results["a"], core.forward_dynamics(model, q, qd, tau))
