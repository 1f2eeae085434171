"""Three-link arms with point constraints, checked against what Mitchell's thesis describes (§2.3.4, §2.4, §2.5,
fig. 2.8–2.12):

- ``arm_nail_singular``: a nail on an arm started at full extension. Two singular values of A = J M⁻¹ Jᵀ start at
  zero, the singular direction is dropped while its force would exceed the 200 000 N bound (large residual), then
  an abrupt transition to a satisfied constraint whose deviation decays as D̈ + 2λḊ + λ²D = 0; naive use of the SVD
  (no useful bound) destabilizes the integration.
- ``three_link_arm_nailed``: the planar arm with its tip nailed: rank 2 (z is already held by the hinges), the tip
  stays put, the arm swings, energy is conserved.
- ``three_link_free_bodies`` vs ``three_link_arm`` ("two ways", §2.4): three free bodies held by six point
  constraints move like the tree of three hinges.
- ``elbow_singularity`` (fig. 2.12): a moving nail drives an elbow manipulator into its boundary singularity and
  out again.

Run lengths are kept short (pure-NumPy core: a few ms per constrained RK4 step).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import core
from core.points import link_kinematics
from core.scene import compile_scene, read_spec

SCENES = Path(__file__).resolve().parent.parent / "scenes"


def nail_matrix(model: core.Model, q: np.ndarray, body: str = "link3", point: str = "tip") -> np.ndarray:
    """A = J M⁻¹ Jᵀ (3 x 3) of a nail on a body point (thesis eq. 2.41), from the core's public functions."""
    J = core.point_jacobian(model, q, body, point)
    return J @ np.linalg.solve(core.mass_matrix(model, q), J.T)


def transition_index(dropped: np.ndarray) -> int:
    """The first record after which no singular value is ever dropped again."""
    late = np.nonzero(dropped > 0)[0]
    return int(late[-1]) + 1 if late.size else 0


# ------------------------------------------------------------------------------------ fig. 2.9–2.11
SINGULAR = SCENES / "arm_nail_singular.json"
BOUND = 200_000.0


def naive_model() -> core.Model:
    """The same scene with a 1e12 N bound, high enough to stop nothing that matters: the SVD uses every singular
    value above rcond × the largest ("defining 'zero' as a number close to machine tolerance", §2.3.4)."""
    spec = read_spec(SINGULAR).model_copy(deep=True)
    spec.constraints[0].max_force = 1e12
    return compile_scene(spec, "naive variant of arm_nail_singular")


@pytest.fixture(scope="module")
def singular():
    model = core.load_scene(SINGULAR)
    assert model.settings["dt"] == 1e-3 and model.settings["integrator"] == "rk4"
    return model, core.Simulation(model).run(0.5)


def test_singular_start_has_two_zero_singular_values(singular):
    """At full extension the only allowable motion of the tip is tangential (§2.5): A has one non-zero singular
    value, along the horizontal of the pitch plane; the nail demands motion mostly outside that direction."""
    model, data = singular
    s = data["singular_values"][0]
    assert s[0] > 1.0
    assert s[1] < 1e-12 * s[0] and s[2] < 1e-12 * s[0]
    assert data["rank"][0] == 1

    w, V = np.linalg.eigh(nail_matrix(model, model.q0))
    yaw = model.q0[model.q_slice("base")][0]
    tangential = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    assert abs(V[:, -1] @ tangential) > 1 - 1e-12
    np.testing.assert_allclose(w[:2], 0.0, atol=1e-12 * w[-1])

    nail = model.constraints[0]
    D0 = core.point_position(model, model.q0, "link3", "tip") - nail.r_b
    assert abs(D0 @ tangential) < 0.5 * np.linalg.norm(D0)
    # the stabilized demand λ²D cannot be met: η = A F + B stays large
    assert data["residual"][0, 0] > 0.5 * nail.stabilization ** 2 * np.linalg.norm(D0)


def test_singular_directions_dropped_and_forces_bounded(singular):
    """While the arm is near full extension the forces the small singular values would need exceed the joint's
    strength, so they are discarded (dropped) and the residual stays large; no force ever exceeds the bound."""
    model, data = singular
    assert model.constraints[0].max_force == BOUND
    t, dropped, F = data["t"], data["dropped"], data["constraint_force_magnitude"][:, 0]
    assert np.all(dropped[(t > 0) & (t < 0.005)] == 2)
    assert F.max() <= BOUND * (1 + 1e-12)
    assert F.max() > 0.5 * BOUND              # the bound, not the dynamics, is what limits the force at the transition
    tr = transition_index(dropped)
    assert data["residual"][1:tr, 0].min() > 100.0


def test_abrupt_transition_to_a_satisfied_constraint(singular):
    """'As the arm slowly moves away from the singularity, an abrupt transition occurs when the constraint can be
    satisfied with forces below the bounds' (fig. 2.11b); after it the deviation decays critically damped."""
    model, data = singular
    t, res, dev = data["t"], data["residual"][:, 0], data["deviation"][:, 0]
    tr = transition_index(data["dropped"])
    print(f"\narm_nail_singular: transition at t = {t[tr]:.3f} s; residual {res[tr - 1]:.3g} -> {res[tr]:.3g} m/s²; "
          f"max force {data['constraint_force_magnitude'].max():.6g} N (bound {BOUND:g}); "
          f"singular values at t = 0: {data['singular_values'][0]}")
    assert 0.005 < t[tr] < 0.1
    assert np.all(data["dropped"][tr:] == 0)
    assert res[tr - 1] / res[tr] > 1e10            # in one step
    assert res[tr:].max() < 1e-9
    assert np.all(data["constraint_force_magnitude"][tr:, 0] <= BOUND)
    assert dev[tr] > 0.99 * dev[0]                 # nothing was gained before the transition

    # from the transition on, D follows D̈ + 2λḊ + λ²D = 0 (eq. 2.21): D(τ) = (D₀ + (Ḋ₀ + λD₀) τ) e^{−λτ}
    lam, nail = model.constraints[0].stabilization, model.constraints[0].r_b
    q, qd = data["q"][tr:], data["qd"][tr:]
    D = np.array([core.point_position(model, x, "link3", "tip") - nail for x in q])
    Dd0 = core.point_velocity(model, q[0], qd[0], "link3", "tip")
    tau = (t[tr:] - t[tr])[:, None]
    predicted = (D[0] + tau * (Dd0 + lam * D[0])) * np.exp(-lam * tau)
    assert np.abs(D - predicted).max() < 1e-3 * np.linalg.norm(D[0])
    assert dev[-1] < 0.1 * dev[tr]
    assert np.all(np.diff(dev[tr:][::20]) < 0)


def test_naive_svd_destabilizes_the_integration(singular):
    """'Naive use of the SVD would lead to constraint forces which destabilize the numerical integration': with a
    1e12 N bound the first steps inject gigajoules where the bounded solve never exceeds ~20 J."""
    _, bounded = singular
    model = naive_model()
    state, kinetic, force = model.initial_state(), [], []
    with np.errstate(all="ignore"):
        for _ in range(2):                         # the pure step (E(0) unknown to it: the books not judged)
            state, data, _ = core.step(model, state)
            kinetic.append(data.energy_kinetic)
            force.append(data.constraint_force_magnitude[0])
    assert bounded["energy_kinetic"].max() < 30.0
    assert max(kinetic) > 1e5 * bounded["energy_kinetic"].max()
    assert max(force) > 10 * BOUND
    sim = core.Simulation(model)                   # a run keeps the books: they no longer close at the first step
    with pytest.raises(core.DivergenceError, match="energy audit"):
        sim.step()
    assert sim.state.t == 0.0


def test_naive_run_reports_divergence():
    """A finite but exploding state whose next evaluation overflows is reported as divergence, state kept."""
    sim = core.Simulation(naive_model())
    with np.errstate(all="ignore"), pytest.raises(core.DivergenceError, match="diverging|non-finite"):
        sim.run(0.05)
    assert np.all(np.isfinite(sim.state.q)) and sim.state.t < 0.05


# ------------------------------------------------------------------------------------ planar arm, tip nailed
@pytest.fixture(scope="module")
def nailed():
    model = core.load_scene(SCENES / "three_link_arm_nailed.json")
    return model, core.Simulation(model, dt=2e-3).run(3.0, record_every=5)


def test_nailed_tip_stays_while_the_arm_swings(nailed):
    model, data = nailed
    tip0 = core.point_position(model, model.q0, "link3", "tip")
    np.testing.assert_allclose(model.constraints[0].r_b, tip0, atol=1e-15)   # nail defaults to where the tip starts
    assert data["deviation"].max() < 1e-8
    assert data["deviation_rate"].max() < 1e-7
    assert np.all(np.ptp(data["q"], axis=0) > 0.05)                          # a four-bar linkage: one dof left
    assert data["energy_kinetic"].max() > 0.1


def test_nailed_planar_arm_has_rank_two_and_z_is_the_null_direction(nailed):
    """The nail has 3 rows but the z hinges already keep the tip in the plane: A has rank 2, its zero singular
    direction is z, and the constraint force has no z component."""
    model, data = nailed
    s = data["singular_values"]
    assert np.all(data["rank"] == 2) and np.all(data["dropped"] == 0)
    assert np.all(s[:, 1] > 0.01 * s[:, 0]) and np.all(s[:, 2] <= 1e-12 * s[:, 0])
    for q in data["q"][::60]:
        w, V = np.linalg.eigh(nail_matrix(model, q))
        assert w[0] <= 1e-12 * w[-1]
        assert abs(V[2, 0]) > 1 - 1e-12
    Fz = np.abs(data["constraint_force"][:, 0, 2])
    assert Fz.max() <= 1e-9 * data["constraint_force_magnitude"].max()


def test_nailed_arm_conserves_energy_and_the_audit_closes(nailed):
    model, data = nailed
    E, W = data["energy_total"], data["work_constraints"][:, 0]
    scale = np.abs(data["energy_potential"]).max()
    assert np.abs(data["energy_error"]).max() < 1e-8 * scale     # E − E₀ − Σ work
    assert np.abs(W).max() < 1e-7 * scale                        # a satisfied nail does (almost) no work
    assert np.abs(E - E[0]).max() < 1e-7 * scale


# ------------------------------------------------------------------------------------ two ways (§2.4)
def two_ways(duration: float = 2.0, dt: float = 1e-3, record_every: int = 10) -> dict:
    """Run the tree arm and the free-body arm; return per scene the model, data and cost, plus their differences.

    Used by the tests below and by ``tests/report_two_ways.py``."""
    out = {}
    for key, name in (("tree", "three_link_arm.json"), ("free", "three_link_free_bodies.json")):
        model = core.load_scene(SCENES / name)
        sim = core.Simulation(model, dt=dt)
        data = sim.run(duration, record_every=record_every)
        out[key] = {"model": model, "data": data, "steps": sim.steps_taken, "wall": sim.wall_time,
                    "ms_per_step": 1e3 * sim.wall_time / sim.steps_taken,
                    "rows": sum(c.rows for c in model.constraints),
                    "drift": float(np.max(data["deviation"])) if model.constraints else 0.0}
    tree, free = out["tree"], out["free"]
    pos = rot = tip = 0.0
    for qt, qf in zip(tree["data"]["q"], free["data"]["q"]):
        kt, kf = link_kinematics(tree["model"], qt), link_kinematics(free["model"], qf)
        pos = max(pos, np.abs(kt.p_WL - kf.p_WL).max())
        rot = max(rot, np.abs(kt.R_WL - kf.R_WL).max())
        tip = max(tip, np.linalg.norm(core.point_position(tree["model"], qt, "link3", "tip")
                                      - core.point_position(free["model"], qf, "link3", "tip")))
    out["difference"] = {"link_position": pos, "link_rotation": rot, "tip": tip}
    return out


def two_ways_table(result: dict) -> str:
    rows = [f"{'scene':<24}{'nv':>4}{'rows':>6}{'steps':>7}{'wall s':>9}{'ms/step':>9}{'max drift m':>13}"
            f"{'|E err| J':>11}"]
    for key in ("tree", "free"):
        r = result[key]
        rows.append(f"{r['model'].name:<24}{r['model'].nv:>4}{r['rows']:>6}{r['steps']:>7}{r['wall']:>9.2f}"
                    f"{r['ms_per_step']:>9.2f}{r['drift']:>13.2e}{np.abs(r['data']['energy_error']).max():>11.2e}")
    d = result["difference"]
    ratio = result["free"]["ms_per_step"] / result["tree"]["ms_per_step"]
    rows.append(f"tree vs free bodies: link origins {d['link_position']:.2e} m, rotations {d['link_rotation']:.2e}, "
                f"tip {d['tip']:.2e} m; cost per step {ratio:.1f}x")
    return "\n".join(rows)


@pytest.fixture(scope="module")
def both_ways():
    return two_ways(2.0, 1e-3)


@pytest.mark.slow
def test_free_body_arm_starts_in_the_tree_arms_pose(both_ways):
    tree, free = both_ways["tree"]["model"], both_ways["free"]["model"]
    assert (free.nq, free.nv, tree.nv) == (21, 18, 3)
    kt, kf = link_kinematics(tree, tree.q0), link_kinematics(free, free.q0)
    np.testing.assert_allclose(kf.p_WL, kt.p_WL, atol=1e-15)
    np.testing.assert_allclose(kf.R_WL, kt.R_WL, atol=1e-15)
    assert free.constraint_names == ["shoulder.p1", "shoulder.p2", "elbow.p1", "elbow.p2", "wrist.p1", "wrist.p2"]


@pytest.mark.slow
def test_two_ways_give_the_same_motion(both_ways):
    """Three free bodies with six point constraints and the tree of three hinges move alike (§2.4), to within the
    constraint drift and integration error, over 2 s of a swing that really moves."""
    print("\n" + two_ways_table(both_ways))
    d = both_ways["difference"]
    assert d["link_position"] < 1e-6 and d["link_rotation"] < 1e-6 and d["tip"] < 1e-6
    q = both_ways["tree"]["data"]["q"]
    assert np.all(np.ptp(q, axis=0) > 0.5)


@pytest.mark.slow
def test_free_body_hinges_drift_little_with_rank_fifteen(both_ways):
    """Each hinge's two points both fix the motion along its axis, so the 18 x 18 matrix has rank 15; the
    redundant directions are cut off by rcond (not dropped for the bound) and the hinges hold to ~1e-9 m."""
    free = both_ways["free"]
    data = free["data"]
    assert np.all(data["rank"] == 15) and np.all(data["dropped"] == 0)
    s = data["singular_values"]
    assert np.all(s[:, 15:] < 1e-12 * s[:, :1])
    assert free["drift"] < 1e-7
    assert np.nanmax(data["residual"]) < 1e-9
    for key in ("tree", "free"):
        r = both_ways[key]
        assert np.abs(r["data"]["energy_error"]).max() < 1e-6 * np.abs(r["data"]["energy_potential"]).max()


# ------------------------------------------------------------------------------------ fig. 2.12
@pytest.fixture(scope="module")
def elbow():
    model = core.load_scene(SCENES / "elbow_singularity.json")
    return model, core.Simulation(model, dt=2e-3).run(1.0)


def test_elbow_nail_reaches_full_reach_at_half_a_second(elbow):
    """The scene's nail path goes from the initial tip out to exactly 2 m from the shoulder at t = 0.5 s and back
    (the nail is the constraint's world end, ``Data.point_b``; at rest, ‖Ḋ‖ is the nail's own speed)."""
    model, _ = elbow
    shoulder = core.point_position(model, model.q0, "link2", [0.0, 0.0, 0.0])
    tip0 = core.point_position(model, model.q0, "link3", "tip")
    rest = np.zeros(model.nv)
    nail = {t: core.evaluate(model, core.State(t, model.q0, rest)) for t in (0.0, 0.25, 0.5, 1.0)}
    r = [np.linalg.norm(nail[t].point_b[0] - shoulder) for t in (0.0, 0.5, 1.0)]
    np.testing.assert_allclose(nail[0.0].point_b[0], tip0, atol=1e-12)
    assert nail[0.0].deviation_rate[0] == pytest.approx(0.0, abs=1e-12)     # it starts at rest,
    assert nail[0.25].deviation_rate[0] > 0.1                                # moves out,
    assert nail[0.5].deviation_rate[0] == pytest.approx(0.0, abs=1e-12)     # turns at full reach
    np.testing.assert_allclose(r, [r[0], 2.0, r[0]], atol=1e-12)
    assert r[0] < 1.6


def test_elbow_singular_value_dips_and_recovers(elbow):
    model, data = elbow
    t, s = data["t"], data["singular_values"]
    ratio = s[:, 2] / s[:, 0]
    i = int(np.argmin(ratio))
    F = data["constraint_force_magnitude"][:, 0]
    print(f"\nelbow_singularity: smallest/largest singular value {ratio[0]:.3f} at t = 0, {ratio[i]:.2e} at "
          f"t = {t[i]:.3f} s, {ratio[-1]:.3f} at t = {t[-1]:.1f} s; max force {F.max():.1f} N at "
          f"t = {t[np.argmax(F)]:.3f} s")
    assert ratio[0] > 0.2
    assert ratio[i] < 1e-5 and abs(t[i] - 0.5) < 0.01
    assert ratio[-1] > 0.2
    assert np.all(ratio[np.abs(t - 0.5) > 0.15] > 0.05)          # singular only near t = 0.5 s
    elbow_angle = data["q"][:, model.q_slice("elbow")][:, 0]
    assert elbow_angle[0] > 1.0 and elbow_angle[-1] < -1.0        # straightened, then out the other side


def test_elbow_force_peaks_at_the_singularity_under_its_bound(elbow):
    model, data = elbow
    t, F = data["t"], data["constraint_force_magnitude"][:, 0]
    bound = model.constraints[0].max_force
    t_singular = t[np.argmin(data["singular_values"][:, 2])]
    assert F.max() <= bound * (1 + 1e-12)
    assert abs(t[np.argmax(F)] - t_singular) < 0.05
    assert F.max() > 10 * np.median(F)
    near = np.abs(t - t_singular) < 0.05
    assert data["dropped"][near].max() >= 1 and np.all(data["dropped"][~near] == 0)


def test_elbow_motion_stays_finite_and_on_the_nail(elbow):
    _, data = elbow
    assert np.all(np.isfinite(data["q"])) and np.all(np.isfinite(data["qd"]))
    assert np.abs(data["qd"]).max() < 10.0
    assert data["energy_kinetic"].max() < 5.0
    assert data["deviation"].max() < 0.01
    assert data["deviation"][-1] < 2e-3
