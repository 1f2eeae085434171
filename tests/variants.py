"""The shipped scenes (scenes/*.json) and small variants of them that exercise what the shipped ones do not: a
breaking nail, a moving nail, a velocity constraint, every force element, the damped-least-squares solver, and
every controller kind (PD with torque limits, computed torque with and without gravity in its model, Slotine–Li
with and without gravity in its regressor, the recursive mixture, projected inverse dynamics for motion only, a
disabled controller, force control against an unmodelled push). Documents are plain dicts; :func:`build`
compiles one."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np

import core
from core.scene import compile_scene, parse_spec

SCENES_DIR = Path(__file__).resolve().parents[1] / "scenes"
ALL_SCENES = sorted(SCENES_DIR.glob("*.json"))
#: The scenes the independent oracle (tests/oracle) can run: not those with contacts (listed, a ground or a scene's
#: collisions), whose events it does not model
#: (tests/test_contacts.py checks them against analytic solutions instead), nor those with control programs
#: (tests/test_programs.py checks Kearney's particle against its analytic solution and the hoppers' hops).
ORACLE_SCENES = [p for p in ALL_SCENES if not any(json.loads(p.read_text()).get(key)
                                                   for key in ("contacts", "ground", "collisions", "programs"))]

__all__ = ["SCENES_DIR", "ALL_SCENES", "ORACLE_SCENES", "scene_doc", "build", "load", "VARIANTS", "CONTROLLER_VARIANTS", "variant",
           "edited"]


def scene_doc(name: str) -> dict:
    """The document of shipped scene ``name`` (with or without ``.json``)."""
    name = name if name.endswith(".json") else f"{name}.json"
    return json.loads((SCENES_DIR / name).read_text())


def build(doc: dict) -> core.Model:
    return compile_scene(parse_spec(doc))


def load(name: str) -> core.Model:
    name = name if name.endswith(".json") else f"{name}.json"
    return core.load_scene(SCENES_DIR / name)


def _edit(name: str, fn) -> dict:
    doc = scene_doc(name)
    fn(doc)
    return doc


def _breaking_nail(doc):                       # 1 N cannot hold the arm: the nail breaks at 1 mm (t = 16 ms)
    doc["constraints"][0].update(max_force=1.0, max_deviation=1e-3)


def _moving_nail(doc):
    doc["constraints"][0]["path"] = {"velocity": [0.05, 0.0, 0.0], "amplitude": [0.0, 0.1, 0.02],
                                     "frequency": 2.0, "phase": 0.3}


def _velocity_constraint_and_forces(doc):
    doc["bodies"][2]["points"] = {"tip": [1.0, 0.0, 0.0]}
    doc["constraints"] = [{"type": "point_velocity", "name": "tip_velocity", "body": "link3", "point": "tip",
                           "velocity": [0.1, -0.2, 0.0], "stabilization": 20.0}]
    doc["forces"] = [
        {"type": "spring", "name": "s1", "body_a": "link3", "point_a": [0.5, 0, 0], "body_b": "link1",
         "point_b": [0.2, 0.1, 0], "stiffness": 40.0, "damping": 0.7, "rest_length": 0.3},
        {"type": "spring", "name": "s0", "body_a": "link2", "point_a": [0.5, 0, 0], "body_b": "world",
         "point_b": [1.0, 1.0, 0.0], "stiffness": 10.0, "damping": 0.2},
        {"type": "joint_spring", "name": "js", "joint": "elbow", "stiffness": 5.0, "damping": 0.3, "rest": 0.1},
        {"type": "drag", "name": "dr", "body": "link2", "point": [0.7, 0, 0], "linear": 0.4, "quadratic": 0.2},
        {"type": "actuator", "name": "act", "joint": "wrist", "torque": 9.0, "limit": 2.0},
        {"type": "point_force", "name": "pf", "body": "link1", "point": [0.5, 0, 0], "force": [0, 3.0, 1.0],
         "start": 0.05, "stop": 0.15}]


def _damped_least_squares(doc):
    doc["simulation"]["solver"] = {"method": "damped_least_squares", "rho": 1e-2}


SS = {"type": "sinusoid", "alpha": [0.0, 0.0], "beta": [1.33, 0.75], "omega": [2.356194490192345, 6.283185307179586]}


def _pd_and_computed_torque(doc):
    doc["controllers"] = [
        {"type": "pd", "name": "pd", "joints": ["shoulder", "wrist"], "kp": [20.0, 5.0], "kd": 2.0,
         "torque_limit": [3.0, 1.0],
         "trajectory": {"type": "point_to_point", "points": [[0.0, 0.0], [0.5, -0.3], [0.2, 0.4]],
                        "durations": [0.1, 0.15], "rate": [40.0, 60.0]}},
        {"type": "computed_torque", "name": "ct", "kp": [100.0, 50.0, 80.0], "kd": 20.0, "model_gravity": False,
         "trajectory": {"type": "set_point", "q": [0.3, -0.2, 0.1]}}]


def _computed_torque_with_gravity(doc):
    doc["controllers"] = [
        {"type": "computed_torque", "name": "ct", "kp": 100.0, "kd": 20.0, "model_gravity": True,
         "trajectory": {"type": "sinusoid", "alpha": [0.3, 0.4, 0.5], "beta": [0.2, -0.1, 0.3],
                        "omega": [3.0, 5.0, 2.0], "time_scale": 1.3}}]


def _slotine_li_with_gravity(model_gravity: bool):
    def edit(doc):
        doc["gravity"] = [0.0, -9.81, 0.0]
        doc["controllers"][0].update(model_gravity=model_gravity,
                                     initial_parameters="model" if model_gravity else "zero")
    return edit


def _recursive_mixture(doc):
    doc["controllers"][0].update(rule="recursive", experts=2, sigma=0.7)
    doc["controllers"][0]["trajectory"]["time_scale"] = 1.5


def _slotine_li_base_full_gamma(doc):            # the base parameters (6 with gravity) and a full Γ
    doc["gravity"] = [0.0, -9.81, 0.0]
    rng = np.random.default_rng(5)
    A = rng.normal(size=(6, 6))
    doc["controllers"][0].update(model_gravity=True, parameters="base", eta=0.5,
                                 gamma=(A @ A.T + 0.5 * np.eye(6)).tolist(),
                                 initial_parameters=rng.normal(size=6).tolist())


def _slotine_li_standard_diagonal_gamma(doc):    # the ten standard parameters per link, a diagonal Γ
    doc["controllers"][0].update(parameters="standard", gamma=np.linspace(0.5, 3.0, 20).tolist(), eta=0.3,
                                 initial_parameters="model")
    doc["controllers"][0]["trajectory"]["time_scale"] = 1.4


def _recursive_mixture_with(covariance):
    def edit(doc):
        _recursive_mixture(doc)
        doc["controllers"][0].update(eta=0.2, covariance=covariance)
    return edit


def _motion_only(doc):
    doc["controllers"][0].pop("desired_force")


def _force_control_with_a_push(doc):           # an unmodelled 4 N push: what the force loop's gains act on
    doc["forces"] = [{"type": "point_force", "name": "push", "body": "link2", "point": [0.5, 0.0, 0.0],
                      "force": [0.0, -4.0, 0.0]}]


def _disabled_and_enabled(doc):
    doc["controllers"] = [
        {"type": "pd", "name": "off", "kp": 50.0, "kd": 5.0, "enabled": False,
         "trajectory": {"type": "set_point", "q": [1.0, 1.0]}},
        {"type": "mixture", "name": "on", "experts": 4, "kp": 9.0, "kd": 1.0, "eta": 0.05, "trajectory": SS}]


VARIANTS = {
    "breaking_nail": ("three_link_arm_nailed", _breaking_nail),
    "moving_nail": ("nail_cylinder_gravity", _moving_nail),
    "velocity_constraint_and_forces": ("three_link_arm", _velocity_constraint_and_forces),
    "damped_least_squares": ("arm_nail_singular", _damped_least_squares),
}

#: A scene for every controller kind the shipped scenes lack (slotine_li without gravity, the gradient mixture,
#: constraint-force and passive-joint projected control are shipped: slotine_li_arm, uno_kawato_arm,
#: arm_on_line_pidc, three_link_passive_pidc).
CONTROLLER_VARIANTS = {
    "pd_and_computed_torque": ("three_link_arm", _pd_and_computed_torque),
    "computed_torque_with_gravity": ("three_link_arm", _computed_torque_with_gravity),
    "slotine_li_gravity_modelled": ("slotine_li_arm_viscous", _slotine_li_with_gravity(True)),
    "slotine_li_gravity_unmodelled": ("slotine_li_arm", _slotine_li_with_gravity(False)),
    "recursive_mixture": ("uno_kawato_arm", _recursive_mixture),
    "slotine_li_base_full_gamma": ("slotine_li_arm", _slotine_li_base_full_gamma),
    "slotine_li_standard_diagonal_gamma": ("slotine_li_arm", _slotine_li_standard_diagonal_gamma),
    "recursive_mixture_forgetting": ("uno_kawato_arm", _recursive_mixture_with({"rule": "forgetting",
                                                                                "forgetting_factor": 2.0})),
    "recursive_mixture_floor": ("uno_kawato_arm", _recursive_mixture_with({"rule": "floor", "floor": 0.05})),
    "projected_motion_only": ("arm_on_line_pidc", _motion_only),
    "force_control_with_a_push": ("arm_on_line_pidc", _force_control_with_a_push),
    "disabled_controller": ("uno_kawato_arm", _disabled_and_enabled),
}


def variant(name: str) -> dict:
    """The document of variant ``name`` (of :data:`VARIANTS` or :data:`CONTROLLER_VARIANTS`), a fresh copy."""
    base, fn = {**VARIANTS, **CONTROLLER_VARIANTS}[name]
    return _edit(base, fn)


def edited(doc: dict, fn) -> dict:
    """A copy of ``doc`` changed in place by ``fn``."""
    out = copy.deepcopy(doc)
    fn(out)
    return out
