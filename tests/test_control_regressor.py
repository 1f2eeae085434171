"""The inertial-parameter regressor (thesis eq. 3.17) on random trees of every joint type, checked against the
core's independent algorithms: Y θ = RNEA when q̇_r = q̇ and q̈_r = q̈; Y θ = M q̈_r + C q̇_r + g with the C of the
recursion satisfying Ṁ − 2C skew (the property the Slotine–Li Lyapunov proof needs); the compiled Y equals the
plain NumPy one; θ reproduces every link's spatial inertia."""
from __future__ import annotations

import numpy as np
import pytest

import core
from core.control.regressor import (coriolis_matrix, inertial_parameters, parameters_to_inertia, regressor,
                                    regressor_reference, slotine_li_torque)
from core.kinematics import integrate_configuration
from trees import random_state, random_tree

CHAINS = ("hinge", "slider")


def _case(seed, joints=None, branching=0.5):
    rng = np.random.default_rng(seed)
    kw = {} if joints is None else {"joints": joints}
    model = random_tree(rng, int(rng.integers(2, 7)), branching=branching, **kw)
    q, qd = random_state(rng, model)
    return rng, model, q, qd


@pytest.mark.parametrize("seed", range(12))
def test_regressor_times_parameters_is_the_inverse_dynamics_on_random_chains(seed):
    """Y(q, q̇, q̇, q̈) θ = RNEA(q, q̇, q̈) with gravity, for serial chains (branching 0) of hinges and sliders."""
    rng, model, q, qd = _case(seed, joints=CHAINS, branching=0.0)
    qdd = rng.normal(size=model.nv)
    theta = inertial_parameters(model)
    tau = core.inverse_dynamics(model, q, qd, qdd)
    Y = regressor(model, q, qd, qd, qdd)
    assert Y.shape == (model.nv, 10 * model.n_links)
    assert np.abs(Y @ theta - tau).max(initial=0.0) <= 1e-11 * max(1.0, np.abs(tau).max(initial=0.0))


@pytest.mark.parametrize("seed", range(12))
def test_regressor_on_random_trees_of_every_joint_type(seed):
    """Y θ = τ_r = M q̈_r + C q̇_r + g for independent q̇_r, q̈_r, on trees with ball and free joints (nq ≠ nv)."""
    rng, model, q, qd = _case(100 + seed)
    qdr, qddr = rng.normal(size=model.nv), rng.normal(size=model.nv)
    theta = inertial_parameters(model)
    Y = regressor(model, q, qd, qdr, qddr)
    tau_r = slotine_li_torque(model, q, qd, qdr, qddr)
    M, C = core.mass_matrix(model, q), coriolis_matrix(model, q, qd)
    g = core.inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
    scale = max(1.0, np.abs(tau_r).max(initial=0.0))
    assert np.abs(Y @ theta - tau_r).max(initial=0.0) <= 1e-11 * scale
    assert np.abs(M @ qddr + C @ qdr + g - tau_r).max(initial=0.0) <= 1e-11 * scale
    Y_ref = regressor_reference(model, q, qd, qdr, qddr)              # the compiled recursion = the NumPy one
    assert np.abs(Y - Y_ref).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(Y).max(initial=0.0))
    # with q̇_r = q̇ and q̈_r = q̈ the reference torque is the ordinary inverse dynamics
    qdd = rng.normal(size=model.nv)
    assert np.allclose(slotine_li_torque(model, q, qd, qd, qdd), core.inverse_dynamics(model, q, qd, qdd),
                       rtol=0, atol=1e-11 * max(1.0, np.abs(tau_r).max(initial=0.0)))


@pytest.mark.parametrize("seed", range(8))
def test_mdot_minus_two_c_is_skew_symmetric(seed):
    """Ṁ − 2C skew (thesis §3.2), Ṁ by central differences along q̇ on the configuration manifold."""
    _, model, q, qd = _case(200 + seed)
    h = 1e-6
    Mdot = (core.mass_matrix(model, integrate_configuration(model, q, qd, h))
            - core.mass_matrix(model, integrate_configuration(model, q, qd, -h))) / (2 * h)
    N = Mdot - 2.0 * coriolis_matrix(model, q, qd)
    assert np.abs(N + N.T).max(initial=0.0) <= 1e-6 * max(1.0, np.abs(Mdot).max(initial=0.0))


def test_gravity_can_be_left_out_of_the_regressor():
    rng, model, q, qd = _case(7, joints=CHAINS, branching=0.0)
    qdr, qddr = rng.normal(size=model.nv), rng.normal(size=model.nv)
    theta = inertial_parameters(model)
    g = core.inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
    with_g = regressor(model, q, qd, qdr, qddr) @ theta
    without = regressor(model, q, qd, qdr, qddr, gravity=np.zeros(3)) @ theta
    assert np.allclose(with_g - without, g, atol=1e-11)


def test_parameters_reproduce_the_spatial_inertias():
    _, model, _, _ = _case(3)
    theta = inertial_parameters(model).reshape(-1, 10)
    for th, I in zip(theta, model.inertia):
        assert np.allclose(parameters_to_inertia(th), I, atol=1e-14)
