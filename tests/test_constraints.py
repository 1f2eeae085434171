"""Unit tests of the point constraints (thesis §2.2.2–2.2.4, §2.3.4) and of the constraint solver.

For every constraint type — nail (fixed, on a link, and moving along a path), point-to-point between two free
bodies and between a free body and an articulated link, the hinge made of two points, point-on-line,
point-on-plane, point-velocity — at random states:

- D against its definition, and Ḋ against finite differences of D along the motion;
- the Jacobian J against finite differences of D with respect to q (tangent directions through
  ``integrate_configuration``), and γ = D̈ − J q̈ against finite differences of Ḋ along a motion with given q̈;
- the solved accelerations give D̈ = −2λḊ − λ²D (velocity constraint: Ḋ = −λD);
- the forces of the line and plane constraints act only in their constrained directions.

The solver: a hinge from two points (6 x 6 A of rank 5), an inconsistent system (residual = the part of B in
A's null space, forces bounded), force bounds that drop singular values, damped least squares → plain solve as
ρ → 0. And malformed constraints are refused with the JSON path of the field.
"""
from __future__ import annotations

import numpy as np
import pytest

import core
from core.model import State
from core.scene import SceneError, compile_scene, parse_spec
from probe import bounded_solve, look
from trees import random_inertial, random_state

GRAVITY = [0.0, 0.0, -9.81]


def bodies(rng) -> list[dict]:
    """Two free bodies ``a`` and ``b`` and an articulated arm ``l1`` (hinge to the world) → ``l2`` (ball), each
    with random mass properties and a named point."""
    def body(name, joint, parent="world"):
        return {"name": name, "parent": parent, "joint": joint, "inertial": random_inertial(rng),
                "points": {"p": rng.uniform(-0.4, 0.4, 3).tolist(), "tip": [0.3, 0.1, -0.2]}}
    return [body("a", {"type": "free", "q0": [0.2, -0.1, 0.4, 1, 0, 0, 0]}),
            body("b", {"type": "free", "q0": [0.9, 0.3, 0.1, 0, 1, 0, 0]}),
            body("l1", {"type": "hinge", "axis": [0, 0.6, 0.8], "position": [-0.5, 0, 0.2]}),
            body("l2", {"type": "ball", "position": [0.4, 0.1, 0]}, parent="l1")]


def build(constraints: list[dict], rng=None, body_list=None, gravity=GRAVITY) -> core.Model:
    rng = rng or np.random.default_rng(0)
    return compile_scene(parse_spec({"format_version": 1, "name": "constraints", "gravity": gravity,
                                     "bodies": body_list or bodies(rng), "constraints": constraints}))


CASES = {
    "nail": {"type": "nail", "name": "c", "body": "a", "point": "p", "position": [0.1, 0.2, 0.3],
             "stabilization": 7.0},
    "moving_nail": {"type": "nail", "name": "c", "body": "a", "point": "p", "position": [0.1, 0.2, 0.3],
                    "path": {"velocity": [0.1, -0.2, 0.05], "amplitude": [0.2, 0.1, -0.3], "frequency": 0.7,
                             "phase": 0.4}, "stabilization": 7.0},
    "nail_on_link": {"type": "nail", "name": "c", "body": "l2", "point": "tip", "position": [0.0, 0.3, 0.1],
                     "stabilization": 4.0},
    "point_to_point": {"type": "point_to_point", "name": "c", "body_a": "a", "point_a": "p", "body_b": "b",
                       "point_b": "p", "stabilization": 5.0},
    "point_to_link": {"type": "point_to_point", "name": "c", "body_a": "a", "point_a": "p", "body_b": "l2",
                      "point_b": "tip", "stabilization": 5.0},
    "hinge": {"type": "hinge", "name": "c", "body_a": "a", "body_b": "b", "anchor": [0.5, 0.1, 0.2],
              "axis": [0.3, -0.4, 0.8], "spacing": 0.25, "stabilization": 6.0},
    "point_on_line": {"type": "point_on_line", "name": "c", "body": "a", "point": "p", "origin": [0.1, 0, 0.2],
                      "direction": [1.0, 2.0, -0.5], "stabilization": 8.0},
    "point_on_plane": {"type": "point_on_plane", "name": "c", "body": "a", "point": "p", "origin": [0, 0.1, 0.3],
                       "normal": [0.2, -0.3, 1.0], "stabilization": 8.0},
    "point_velocity": {"type": "point_velocity", "name": "c", "body": "a", "point": "p",
                       "velocity": [0.3, -0.1, 0.2], "stabilization": 9.0},
}
FULL_RANK = [k for k in CASES if k != "hinge"]
SEEDS = range(3)


def rows_at(model, q, qd, t):
    """The stacked constraint rows of all the model's constraints, all active, as the compiled rows stage makes
    them (with the Data of the evaluation: ``.data``)."""
    return look(model, t, q, qd, active=[True] * len(model.constraints))


def evaluate(model, t, q, qd, active):
    """core.evaluate at (t, q, q̇) with the constraints ``active``."""
    return core.evaluate(model, State(t, np.asarray(q, float), np.asarray(qd, float), active=np.asarray(active)))


def along(model, q, qd, s):
    """The configuration a time s along the velocity qd (first order in s, with an error even in s)."""
    return core.normalize_configuration(model, core.integrate_configuration(model, q, qd, s))


def case(name, seed):
    rng = np.random.default_rng(seed)
    model = build([CASES[name]], rng)
    q, qd = random_state(rng, model)
    return model, q, qd, float(rng.uniform(0, 3))


def world_point(model, q, body, point):
    return core.point_position(model, q, body, point)


# ---------------------------------------------------------------------------------------------- D and Ḋ
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_deviation_matches_its_definition(name, seed):
    """D from an independent evaluation of each definition: p − n(t) with n(t) = n0 + v t + a sin(2π f t + φ);
    p_a − p_b; the distance vector to a line (|D| = distance, D ⟂ the line); the signed distance to a plane;
    ṗ − v for the velocity constraint. The hinge's two points coincide at the initial configuration."""
    model, q, qd, t = case(name, seed)
    spec = CASES[name]
    rows = rows_at(model, q, qd, t)
    D = rows.D
    if spec["type"] == "nail":
        n = np.array(spec["position"], float)
        if "path" in spec:
            p = spec["path"]
            n = n + np.multiply(p["velocity"], t) + np.multiply(p["amplitude"],
                                                                 np.sin(2 * np.pi * p["frequency"] * t + p["phase"]))
        expected = world_point(model, q, spec["body"], spec["point"]) - n
        np.testing.assert_allclose(D, expected, atol=1e-14)
    elif spec["type"] == "point_to_point":
        expected = (world_point(model, q, spec["body_a"], spec["point_a"])
                    - world_point(model, q, spec["body_b"], spec["point_b"]))
        np.testing.assert_allclose(D, expected, atol=1e-14)
    elif spec["type"] == "hinge":
        assert len(model.constraints) == 2 and [c.name for c in model.constraints] == ["c.p1", "c.p2"]
        on = rows_at(model, model.q0, model.qd0, 0.0)
        np.testing.assert_allclose(on.D, 0.0, atol=1e-15)
        x = [core.point_position(model, model.q0, "a", c.r_a) for c in model.constraints]
        axis = np.array(spec["axis"]) / np.linalg.norm(spec["axis"])
        np.testing.assert_allclose(x[1] - x[0], spec["spacing"] * axis, atol=1e-14)
        np.testing.assert_allclose((x[0] + x[1]) / 2, spec["anchor"], atol=1e-14)
        expected = np.concatenate([core.point_position(model, q, "a", c.r_a) - core.point_position(model, q, "b", c.r_b)
                                   for c in model.constraints])
        np.testing.assert_allclose(D, expected, atol=1e-14)
    elif spec["type"] == "point_on_line":
        d = np.array(spec["direction"]) / np.linalg.norm(spec["direction"])
        r = world_point(model, q, spec["body"], spec["point"]) - spec["origin"]
        assert D.shape == (2,)
        assert np.linalg.norm(D) == pytest.approx(np.linalg.norm(r - (r @ d) * d), rel=1e-12)
        E = model.constraints[0].basis
        np.testing.assert_allclose(E.T @ E, np.eye(2), atol=1e-15)
        np.testing.assert_allclose(E.T @ d, 0.0, atol=1e-15)
    elif spec["type"] == "point_on_plane":
        nrm = np.array(spec["normal"]) / np.linalg.norm(spec["normal"])
        r = world_point(model, q, spec["body"], spec["point"]) - spec["origin"]
        np.testing.assert_allclose(D, [r @ nrm], atol=1e-14)
    elif spec["type"] == "point_velocity":
        v = core.point_velocity(model, q, qd, spec["body"], spec["point"])
        np.testing.assert_allclose(D, v - spec["velocity"], atol=1e-14)
    else:
        raise AssertionError(name)
    assert np.linalg.norm(D) > 1e-3                                        # a random state is off the constraint
    np.testing.assert_allclose(rows.data.deviation, [np.linalg.norm(D[s]) for s in rows.slices], rtol=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", [k for k in CASES if k != "point_velocity"])
def test_deviation_rate_is_the_derivative_along_the_motion(name, seed):
    """Ḋ = d/ds D(q ⊕ q̇ s, t + s) at s = 0 (central differences), the nail path's velocity included."""
    model, q, qd, t = case(name, seed)
    h = 1e-6
    fd = (rows_at(model, along(model, q, qd, h), qd, t + h).D
          - rows_at(model, along(model, q, qd, -h), qd, t - h).D) / (2 * h)
    rate = rows_at(model, q, qd, t).D_rate
    np.testing.assert_allclose(rate, fd, atol=1e-8 * (1 + np.abs(rate).max()))
    assert np.abs(rate).max() > 1e-2


def test_velocity_constraint_deviation_is_the_point_velocity_error():
    """D = ṗ − v with ṗ from finite differences of the point's position along the motion."""
    model, q, qd, t = case("point_velocity", 0)
    h = 1e-6
    spec = CASES["point_velocity"]
    pdot = (world_point(model, along(model, q, qd, h), "a", "p")
            - world_point(model, along(model, q, qd, -h), "a", "p")) / (2 * h)
    np.testing.assert_allclose(rows_at(model, q, qd, t).D, pdot - spec["velocity"], atol=1e-8)


# ---------------------------------------------------------------------------------------------- J and γ
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_jacobian_matches_finite_differences(name, seed):
    """J[:, k] = ∂D/∂q along the k-th tangent direction e_k (q ⊕ ±h e_k); for the velocity constraint, where D
    is linear in q̇, J = ∂D/∂q̇."""
    model, q, qd, t = case(name, seed)
    J = rows_at(model, q, qd, t).J
    assert J.shape == (sum(c.rows for c in model.constraints), model.nv)
    h = 1e-6
    fd = np.zeros_like(J)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = 1.0
        if CASES[name]["type"] == "point_velocity":
            fd[:, k] = rows_at(model, q, qd + e, t).D - rows_at(model, q, qd, t).D
        else:
            fd[:, k] = (rows_at(model, along(model, q, e, h), qd, t).D
                        - rows_at(model, along(model, q, e, -h), qd, t).D) / (2 * h)
    np.testing.assert_allclose(J, fd, atol=1e-8)
    # the columns of joints that do not move either end of the constraint are zero
    ends = [k for c in model.constraints for k in (c.link_a, c.link_b) if k >= 0]
    for i in range(model.n_links):
        if not any(_is_ancestor(model, i, k) for k in ends):
            cols = slice(model.v_start[i], model.v_start[i] + model.nv_j[i])
            assert np.all(J[:, cols] == 0.0), model.link_names[i]
    assert np.abs(J).max() > 0.1


def _is_ancestor(model, i, k):
    """Whether link i is k or one of k's ancestors."""
    while k >= 0:
        if k == i:
            return True
        k = model.parent[k]
    return False


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(CASES))
def test_bias_gamma_is_the_rest_of_the_second_derivative(name, seed):
    """D̈ = J q̈ + γ for an arbitrary q̈: D̈ from central differences of Ḋ along the motion
    (q ⊕ q̇ s, q̇ + q̈ s, t + s) — for the velocity constraint, of D itself."""
    model, q, qd, t = case(name, seed)
    rng = np.random.default_rng(100 + seed)
    qdd = rng.normal(size=model.nv)
    rows = rows_at(model, q, qd, t)
    h = 1e-5
    key = "D" if CASES[name]["type"] == "point_velocity" else "D_rate"
    fd = (getattr(rows_at(model, along(model, q, qd, h), qd + h * qdd, t + h), key)
          - getattr(rows_at(model, along(model, q, qd, -h), qd - h * qdd, t - h), key)) / (2 * h)
    expected = rows.J @ qdd + rows.gamma
    np.testing.assert_allclose(expected, fd, atol=1e-7 * (1 + np.abs(expected).max()))
    assert np.abs(rows.gamma).max() > 1e-2                                  # γ is not trivially zero here


# ---------------------------------------------------------------------------------------------- the solve
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", FULL_RANK)
def test_solved_accelerations_give_the_stabilized_deviation_dynamics(name, seed):
    """With a full-rank A the solve is exact: D̈ = −2λḊ − λ²D (eq. 2.21), or Ḋ = −λD for the velocity
    constraint (§2.2.4) — both algebraically (J q̈ + γ) and by finite differences along the solved motion."""
    model, q, qd, t = case(name, seed)
    (c,) = model.constraints
    lam = c.stabilization
    data = evaluate(model, t, q, qd, np.array([True]))
    rows = rows_at(model, q, qd, t)
    assert data.rank == c.rows and data.dropped == 0
    achieved = rows.J @ data.qdd + rows.gamma
    if c.first_order:
        target = -lam * rows.D
    else:
        target = -2 * lam * rows.D_rate - lam ** 2 * rows.D
    scale = 1 + np.abs(target).max() + np.abs(rows.J @ data.qdd).max()
    np.testing.assert_allclose(achieved, target, atol=1e-11 * scale)
    assert data.residual[0] < 1e-11 * scale
    h = 1e-5
    key = "D" if c.first_order else "D_rate"
    fd = (getattr(rows_at(model, along(model, q, qd, h), qd + h * data.qdd, t + h), key)
          - getattr(rows_at(model, along(model, q, qd, -h), qd - h * data.qdd, t - h), key)) / (2 * h)
    np.testing.assert_allclose(fd, target, atol=1e-7 * scale)
    # the reported force is E F on point a, and its power F·(J q̇) is the force times the point's velocity
    va = core.point_velocity(model, q, qd, c.link_a, c.r_a)
    vb = core.point_velocity(model, q, qd, c.link_b, c.r_b) if c.link_b >= 0 else 0.0
    assert data.power_constraints[0] == pytest.approx(data.constraint_force[0] @ (va - vb), rel=1e-10, abs=1e-14)


def test_velocity_constraint_reports_its_deviation_rate():
    """Data.deviation_rate is documented as ‖Ḋ‖ of every constraint; for D = ṗ − v, Ḋ is the point's
    acceleration, −λD once solved exactly."""
    model, q, qd, t = case("point_velocity", 0)
    data = evaluate(model, t, q, qd, np.array([True]))
    lam = model.constraints[0].stabilization
    assert data.deviation[0] > 0.1
    assert data.deviation_rate[0] == pytest.approx(lam * data.deviation[0], rel=1e-9)


@pytest.mark.parametrize("name", ["moving_nail", "point_velocity"])
def test_runs_follow_the_stabilized_deviation_dynamics(name):
    """In a run (RK4, 1 ms) of a free body under gravity: a nail moving along its path is reached like
    D(t) = (D0 + (Ḋ0 + λD0) t) e^{−λt} whatever the nail does, and a velocity constraint relaxes like
    D(t) = D0 e^{−λt}; the energy books close with the constraint's work (a moving nail does work)."""
    rng = np.random.default_rng(5)
    model = build([CASES[name]], body_list=bodies(rng)[:1])
    lam = model.constraints[0].stabilization
    data = core.Simulation(model, dt=1e-3).run(0.6)
    t = data["t"]
    rows0 = rows_at(model, model.q0, model.qd0, 0.0)
    if model.constraints[0].first_order:
        exact = np.outer(np.exp(-lam * t), rows0.D)
    else:
        exact = (rows0.D + np.outer(t, rows0.D_rate + lam * rows0.D)) * np.exp(-lam * t)[:, None]
    D = np.array([rows_at(model, q, qd, ti).D for ti, q, qd in zip(t, data["q"], data["qd"])])
    assert np.linalg.norm(rows0.D) > 0.1
    np.testing.assert_allclose(D, exact, atol=1e-8 * np.linalg.norm(rows0.D))
    np.testing.assert_allclose(data["deviation"][:, 0], np.linalg.norm(D, axis=1), rtol=1e-12, atol=1e-15)
    assert np.abs(data["energy_error"]).max() < 1e-7 * data["energy_kinetic"].max()
    assert abs(data["work_constraints"][-1, 0]) > 0.1


@pytest.mark.parametrize("seed", SEEDS)
def test_plane_force_is_along_the_normal_and_line_force_perpendicular_to_the_line(seed):
    rng = np.random.default_rng(seed)
    model = build([CASES["point_on_plane"], CASES["point_on_line"] | {"name": "l", "point": "tip"}], rng)
    q, qd = random_state(rng, model)
    data = evaluate(model, 0.0, q, qd, np.array([True, True]))
    f_plane, f_line = data.constraint_force
    n = np.array(CASES["point_on_plane"]["normal"]) / np.linalg.norm(CASES["point_on_plane"]["normal"])
    d = np.array(CASES["point_on_line"]["direction"]) / np.linalg.norm(CASES["point_on_line"]["direction"])
    assert np.linalg.norm(f_plane) > 1e-2 and np.linalg.norm(f_line) > 1e-2
    assert np.linalg.norm(np.cross(f_plane, n)) < 1e-12 * np.linalg.norm(f_plane)
    assert abs(f_line @ d) < 1e-12 * np.linalg.norm(f_line)
    assert data.rank == 3 and data.residual.max() < 1e-10


# ---------------------------------------------------------------------------------------------- the solver
def assembled(model, q, qd, t, active=None):
    """A = J M⁻¹ Jᵀ, B = J M⁻¹(τ − b) + γ + stab (no applied forces in these scenes) and the solver's bookkeeping:
    A and B as the compiled pipeline assembles them (M⁻¹Jᵀ by articulated-body solves), checked against the
    NumPy assembly from the mass matrix; the groups of constraints as the pipeline forms them (a list of
    constraint indices per group)."""
    K = len(model.constraints)
    active = [True] * K if active is None else active
    rows = look(model, t, q, qd, active=active)
    Minv = np.linalg.inv(core.mass_matrix(model, q))
    A = rows.J @ Minv @ rows.J.T
    B = rows.J @ Minv @ -core.nonlinear_effects(model, q, qd) + rows.gamma + rows.stab
    np.testing.assert_allclose(rows.A, A, rtol=0, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(rows.B, B, rtol=0, atol=1e-12 * np.abs(B).max())
    idx = [i for i in range(K) if rows.slices[i] is not None]
    groups = [[n for n, i in enumerate(idx) if rows.groups[i] == g] for g in range(max(rows.groups) + 1)]
    blocks = [rows.slices[i] for i in idx]
    bases = [model.constraints[i].basis for i in idx]
    bounds = [model.constraints[i].max_force for i in idx]
    return rows.A, rows.B, groups, blocks, bases, bounds, rows


def solve_constraint_forces(A, B, groups, blocks, bases, bounds, method="svd", rho=1e-3):
    """The compiled bounded solve (core.solver.solve_groups) of A F = −B."""
    return bounded_solve(A, B, blocks, bases, bounds, groups, method, 1e-12, rho)


def world_velocity_spec(q0, omega, v_origin):
    return {"type": "free", "q0": list(q0), "qd0": [*omega, *v_origin]}


def hinged_pair(rng, s=1.3, max_force=1e6):
    """Free bodies a and b joined by a hinge (two points), on the constraint with consistent velocities: b moves
    with a plus a relative rotation at rate s about the hinge axis."""
    anchor, axis = np.array([0.4, 0.1, 0.3]), np.array([0.3, -0.4, 0.8]) / np.linalg.norm([0.3, -0.4, 0.8])
    pa, pb = np.array([0.0, 0.0, 0.3]), np.array([0.8, 0.3, 0.2])
    wa, va = rng.normal(size=3), rng.normal(size=3)
    wb = wa + s * axis
    vb = va + np.cross(wa, pb - pa) + s * np.cross(axis, pb - anchor)
    qa, qb = rng.normal(size=4), rng.normal(size=4)
    body_list = [{"name": "a", "joint": world_velocity_spec([*pa, *(qa / np.linalg.norm(qa))], wa, va),
                  "inertial": random_inertial(rng)},
                 {"name": "b", "joint": world_velocity_spec([*pb, *(qb / np.linalg.norm(qb))], wb, vb),
                  "inertial": random_inertial(rng)}]
    model = build([{"type": "hinge", "name": "h", "body_a": "a", "body_b": "b", "anchor": anchor.tolist(),
                    "axis": axis.tolist(), "spacing": 0.3, "max_force": max_force}], body_list=body_list)
    return model, axis


@pytest.mark.parametrize("seed", SEEDS)
def test_hinge_from_two_points_has_rank_five_and_is_held(seed):
    """Fig. 2.8 / §2.3.4: a hinge of two point constraints removes 5 degrees of freedom with 6 rows, so the 6 x 6
    A has rank 5; its null vector is a pair of equal and opposite forces along the axis (they only squeeze the
    rigid bodies). On the constraint with consistent velocities B lies in A's range: the solve holds the hinge
    (D̈ = 0, residual round-off) with the minimum-norm forces (no component along the null vector)."""
    model, axis = hinged_pair(np.random.default_rng(seed))
    state = model.initial_state()
    rows = rows_at(model, state.q, state.qd, 0.0)
    np.testing.assert_allclose(rows.D, 0.0, atol=1e-15)
    np.testing.assert_allclose(rows.D_rate, 0.0, atol=1e-13)
    A, B, groups, blocks, bases, bounds, _ = assembled(model, state.q, state.qd, 0.0)
    s = np.linalg.svd(A, compute_uv=False)
    assert s[4] > 1e-3 * s[0] and s[5] < 1e-13 * s[0]
    null = np.concatenate([axis, -axis]) / np.sqrt(2)
    assert np.linalg.norm(A @ null) < 1e-13 * s[0]
    result = solve_constraint_forces(A, B, groups, blocks, bases, bounds)
    assert result.rank == 5 and result.dropped == 0
    assert np.linalg.norm(result.residual) < 1e-11 * np.abs(B).max()
    assert abs(result.F @ null) < 1e-11 * np.linalg.norm(result.F)
    data = evaluate(model, 0.0, state.q, state.qd, np.array([True, True]))
    assert data.rank == 5 and np.nanmax(data.residual) < 1e-11 * np.abs(B).max()
    np.testing.assert_allclose(rows.J @ data.qdd + rows.gamma, 0.0, atol=1e-11 * np.abs(B).max())
    np.testing.assert_allclose(data.constraint_force.ravel(), result.F, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_inconsistent_system_leaves_the_null_space_part_of_B_as_residual(seed):
    """Two nails on one rigid body whose points are 0.5 m apart, with the nails 0.7 m apart: no motion can
    satisfy both (over-determined). A has rank 5, its null vector the pair of opposite forces along the line of
    the two points; the least-squares solve leaves exactly that part of B as the residual, η = n nᵀ B, and the
    forces stay finite and within their bounds."""
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    body_list = [{"name": "a", "joint": world_velocity_spec([0, 0, 0, *(quat / np.linalg.norm(quat))],
                                                            rng.normal(size=3), rng.normal(size=3)),
                  "inertial": random_inertial(rng), "points": {"p1": [-0.25, 0, 0], "p2": [0.25, 0, 0]}}]
    probe = build([], body_list=body_list)
    x1, x2 = (core.point_position(probe, probe.q0, "a", p) for p in ("p1", "p2"))
    u = (x2 - x1) / np.linalg.norm(x2 - x1)
    bound = 200.0
    model = build([{"type": "nail", "name": "n1", "body": "a", "point": "p1", "position": (x1 - 0.1 * u).tolist(),
                    "max_force": bound},
                   {"type": "nail", "name": "n2", "body": "a", "point": "p2", "position": (x2 + 0.1 * u).tolist(),
                    "max_force": bound}], body_list=body_list)
    q, qd = model.q0, model.qd0
    A, B, groups, blocks, bases, bounds, _ = assembled(model, q, qd, 0.0)
    s = np.linalg.svd(A, compute_uv=False)
    null = np.concatenate([u, -u]) / np.sqrt(2)
    assert s[5] < 1e-13 * s[0] and np.linalg.norm(A @ null) < 1e-13 * s[0]
    result = solve_constraint_forces(A, B, groups, blocks, bases, bounds)
    assert result.rank == 5 and result.dropped == 0
    np.testing.assert_allclose(result.residual, null * (null @ B), atol=1e-10 * np.abs(B).max())
    assert np.linalg.norm(result.residual) > 1.0                             # λ² × 0.2 m of mismatch, at least
    for blk in blocks:
        assert np.linalg.norm(result.F[blk]) <= bound
    data = evaluate(model, 0.0, q, qd, np.array([True, True]))
    assert np.hypot(*data.residual) == pytest.approx(abs(null @ B), rel=1e-9)
    assert np.all(data.constraint_force_magnitude <= bound)


@pytest.mark.parametrize("seed", SEEDS)
def test_force_bound_drops_singular_values_in_ascending_order(seed):
    """§2.3.4: a nail far off its point (a random state) needs far more than its 0.5 N strength; singular values
    are dropped smallest first until the force is within the bound — the fewest that achieve it — and the price
    is a residual."""
    rng = np.random.default_rng(seed)
    bound = 0.5
    model = build([CASES["nail"] | {"max_force": bound}], rng)
    q, qd = random_state(rng, model)
    A, B, groups, blocks, bases, bounds, _ = assembled(model, q, qd, 0.0)
    unbounded = solve_constraint_forces(A, B, groups, blocks, bases, [np.inf])
    assert np.linalg.norm(unbounded.F) > 10 * bound
    result = solve_constraint_forces(A, B, groups, blocks, bases, bounds)
    assert result.dropped > 0 and result.rank == 3
    assert np.linalg.norm(result.F) <= bound
    U, s, Vt = np.linalg.svd(A)

    def truncated(k):
        return -Vt[:k].T @ ((U[:, :k].T @ B) / s[:k])
    kept = 3 - result.dropped
    np.testing.assert_allclose(result.F, truncated(kept), rtol=1e-12, atol=1e-15)
    assert np.linalg.norm(truncated(kept + 1)) > bound                       # one fewer dropped is too strong
    if kept > 0:
        assert result.min_kept == pytest.approx(s[kept - 1])
    assert np.linalg.norm(result.residual) > np.linalg.norm(unbounded.residual) + 1.0
    data = evaluate(model, 0.0, q, qd, np.array([True]))
    assert data.dropped == result.dropped and data.constraint_force_magnitude[0] <= bound


def test_damped_least_squares_tends_to_the_plain_solve():
    """Wampler's damped least squares, 1/σ → σ/(σ² + ρ²): on a well-conditioned A its error against the exact
    solve is O(ρ²/σ²) and vanishes as ρ → 0; the svd method is the exact solve."""
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    A = Q @ np.diag(np.linspace(1.0, 5.0, 6)) @ Q.T
    B = rng.normal(size=6)
    args = (A, B, [[0, 1]], [slice(0, 3), slice(3, 6)], [np.eye(3)] * 2, [np.inf] * 2)
    exact = np.linalg.solve(A, -B)
    np.testing.assert_allclose(solve_constraint_forces(*args).F, exact, rtol=1e-13)
    errors = [np.linalg.norm(solve_constraint_forces(*args, method="damped_least_squares", rho=rho).F - exact)
              for rho in (1e-1, 1e-2, 1e-3, 1e-6)]
    assert errors[0] > 1e-3 * np.linalg.norm(exact)
    assert errors[0] / errors[1] == pytest.approx(100, rel=0.05)              # O(ρ²)
    assert errors[1] / errors[2] == pytest.approx(100, rel=0.05)
    assert errors[3] < 1e-11 * np.linalg.norm(exact)


def test_constraints_on_separate_bodies_are_solved_in_separate_groups():
    """Eq. 2.41: A's block i, j is zero when constraints i and j share no body; each group is solved alone, and
    the result equals the solve of the whole system."""
    rng = np.random.default_rng(3)
    model = build([CASES["nail"] | {"name": "n1"}, CASES["nail"] | {"name": "n2", "body": "b"},
                   CASES["point_to_link"] | {"name": "n3", "body_a": "b"}], rng)
    q, qd = random_state(rng, model)
    A, B, groups, blocks, bases, bounds, _ = assembled(model, q, qd, 0.0)
    assert sorted(groups) == [[0], [1, 2]]
    assert np.abs(A[0:3, 3:]).max() < 1e-15 * np.abs(A).max()
    result = solve_constraint_forces(A, B, groups, blocks, bases, bounds)
    np.testing.assert_allclose(result.F, np.linalg.solve(A, -B), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------- validation
def doc_with(constraints):
    return {"format_version": 1, "name": "s", "bodies": [
        {"name": "a", "joint": {"type": "free"}, "inertial": {"mass": 1, "inertia": [1, 1, 1, 0, 0, 0]},
         "points": {"p": [0.1, 0, 0]}},
        {"name": "b", "joint": {"type": "free"}, "inertial": {"mass": 1, "inertia": [1, 1, 1, 0, 0, 0]}}],
        "constraints": constraints}


NAIL = {"type": "nail", "name": "n", "body": "a", "point": "p"}


@pytest.mark.parametrize("constraints,path,what", [
    ([NAIL | {"body": "ghost"}], "$.constraints[0].body", "unknown body"),
    ([NAIL | {"point": "nowhere"}], "$.constraints[0].point", "no point of that name"),
    ([NAIL | {"body": "world"}], "$.constraints[0].body", "must be a body, not the world"),
    ([{"type": "hinge", "name": "h", "body_a": "a", "body_b": "b", "anchor": [0, 0, 0], "axis": [0, 0, 0]}],
     "$.constraints[0].axis", "non-zero direction"),
    ([NAIL | {"max_force": -1.0}], "$.constraints[0].max_force", "greater than 0"),
    ([NAIL | {"max_deviation": 0.0}], "$.constraints[0].max_deviation", "greater than 0"),
    ([NAIL | {"stabilization": -2.0}], "$.constraints[0].stabilization", "greater than or equal to 0"),
    ([{"type": "point_to_point", "name": "pp", "body_a": "a", "point_a": "p", "body_b": "a", "point_b": [0, 0, 0]}],
     "$.constraints[0].body_b", "must differ from body_a"),
    ([{"type": "point_to_point", "name": "pp", "body_a": "a", "point_a": "p", "body_b": "b", "point_b": "p"}],
     "$.constraints[0].point_b", "no point of that name"),
    ([{"type": "point_on_line", "name": "l", "body": "a", "point": "p", "origin": [0, 0, 0], "direction": [0, 0, 0]}],
     "$.constraints[0].direction", "non-zero direction"),
    ([{"type": "point_on_plane", "name": "l", "body": "a", "point": "p", "origin": [0, 0, 0], "normal": [0, 0, 0]}],
     "$.constraints[0].normal", "non-zero direction"),
    ([NAIL | {"stiffnes": 3}], "$.constraints[0].stiffnes", "unknown field"),
    ([NAIL, NAIL | {"point": [0, 0, 0]}], "$.constraints[1].name", "duplicate name"),
    ([NAIL | {"type": "glue"}], "$.constraints[0]", "tag 'glue'"),
])
def test_malformed_constraints_are_refused_with_their_path(constraints, path, what):
    with pytest.raises(SceneError) as info:
        parse_spec(doc_with(constraints))
    assert any(p.path == path and what in p.message for p in info.value.problems), \
        "\n".join(str(p) for p in info.value.problems)


def test_a_well_formed_constraint_document_is_accepted():
    spec = parse_spec(doc_with([NAIL, {"type": "point_velocity", "name": "v", "body": "b", "point": [0, 0, 0]},
                                {"type": "hinge", "name": "h", "body_a": "a", "body_b": "world", "anchor": [0, 0, 0],
                                 "axis": [0, 0, 1]}]))
    assert compile_scene(spec).constraint_names == ["n", "v", "h.p1", "h.p2"]
