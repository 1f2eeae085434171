"""The named memory of the compiled pipeline (:mod:`core.forward`, :mod:`core.integrators`): what a step reads
(:class:`Tables`, :data:`SETTINGS`), the scratch it works in (:class:`Workspace`, one named tuple per stage) and
what it writes (:class:`Outputs`). Fields have names, never positions, in the spirit of MJX's ``Data`` and
Pinocchio's ``Data``.

Sizes: N links, nv velocities, K constraints with R rows in all (the most an evaluation can have active),
L instructions in the longest joint-space program over at most V variables, nz controller states, C
controllers controlling nc coordinates in all, P adaptive parameters of the largest regressor (10 N).

Everything here is allocated once per plan (:func:`outputs` here, :func:`core.forward.workspace`), never inside an
evaluation.
"""
from __future__ import annotations

import threading
from collections import namedtuple

import numpy as np
from numba.core import types
from numba.experimental import structref
from numba.experimental.structref import StructRefProxy, define_proxy

from .jit import njit

class _Struct(types.StructRef):
    """A named record of arrays passed by reference between compiled functions (numba's StructRef): a stage
    takes one pointer instead of a flattened tuple of every array, which keeps compiling the pipeline quick."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


__all__ = ["kinematics_work", "articulated_work", "plant_work", "thread_work", "Tables", "Outputs", "OutputArrays", "OUTPUT_FIELDS", "TreeRef", "Workspace", "Kinematics", "Articulated", "RowsWork", "SolveWork", "Plant", "Dense",
           "ControlWork", "IntegratorWork", "EventWork", "ProgramWork", "SETTINGS", "SCALARS", "outputs", "DYNAMIC_CONSTRAINTS", "PROJECTION",
           "MULTIPLIERS", "FORMULATION_CODES", "RK4", "CASH_KARP", "SEMI_IMPLICIT_EULER", "IMPLICITFAST", "INTEGRATOR_CODES",
           "integrator_problem",
           "MC", "MC_SYMMETRIC", "MC_GAMMA", "VARIANT_CODES"]

DYNAMIC_CONSTRAINTS, PROJECTION, MULTIPLIERS = 0, 1, 2
FORMULATION_CODES = {"dynamic_constraints": DYNAMIC_CONSTRAINTS, "projection": PROJECTION,
                     "multipliers": MULTIPLIERS}
RK4, CASH_KARP, SEMI_IMPLICIT_EULER, IMPLICITFAST = 0, 1, 2, 3
INTEGRATOR_CODES = {"rk4": RK4, "cash_karp": CASH_KARP, "semi_implicit_euler": SEMI_IMPLICIT_EULER,
                    "implicitfast": IMPLICITFAST}


def integrator_problem(integrator: str, formulation: str | None) -> str | None:
    """Why ``integrator`` cannot run under ``formulation`` (None: it can) — one rule for the scene schema,
    :func:`core.plan.build_plan` and :class:`core.Simulation`'s setters: the implicitfast step solves with
    H + h C through the articulated-body factorization, which the projection formulation does not use."""
    if integrator == "implicitfast" and formulation == "projection":
        return ("the implicitfast integrator takes the dynamic_constraints or multipliers formulation, not "
                "projection: it solves with H + h C through the articulated-body factorization, which the "
                "projection formulation does not use (it forms M itself)")
    return None
MC, MC_SYMMETRIC, MC_GAMMA = 0, 1, 2
VARIANT_CODES = {"Mc": MC, "Mc_symmetric": MC_SYMMETRIC, "Mc_gamma": MC_GAMMA}

#: The run-time settings of a step (one record): the formulation and its solver (thesis §2.3.4: ``method``
#: svd | damped least squares, ``rcond``, ``rho``), the rank rule of every formulation (``rank_tolerance``),
#: Aghili's projection (``variant`` of the constraint inertia, its ``gamma`` (NaN: ‖M‖₂), the pseudo-inverse
#: tolerance ``projection_tolerance`` and the Newton–Raphson ``position_tolerance`` and ``max_iterations``), the
#: integrator and the adaptive one's ``tolerance``, and what the step must assemble: ``mass_matrix`` (the
#: projection formulation or a controller needs M and b), ``gravity_torque`` (a controller needs g(q)); the time
#: to which events are isolated (``event_tolerance``, s); ``implicit_step``: the step length h over which an
#: evaluation takes the joints' dampers and actuators' velocity gains implicitly (the ``implicitfast`` step writes
#: it around its own evaluation, :func:`core.integrators._take_step`; 0 elsewhere: the state's own q̈).
SETTINGS = np.dtype([
    ("formulation", np.int64), ("method", np.int64), ("rcond", np.float64), ("rho", np.float64),
    ("rank_tolerance", np.float64), ("variant", np.int64), ("gamma", np.float64),
    ("projection_tolerance", np.float64), ("position_tolerance", np.float64), ("max_iterations", np.int64),
    ("integrator", np.int64), ("tolerance", np.float64), ("mass_matrix", np.bool_), ("gravity_torque", np.bool_),
    ("event_tolerance", np.float64), ("implicit_step", np.float64),
], align=True)

#: The scalar results of one evaluation (one record of :class:`Outputs`): see :class:`core.data.Data`.
SCALARS = np.dtype([
    ("rank", np.int64), ("dropped", np.int64), ("cutoff", np.float64), ("jacobian_rank", np.int64),
    ("rows", np.int64), ("n_svals", np.int64), ("energy_kinetic", np.float64), ("energy_gravity", np.float64),
    ("energy_elastic", np.float64),
], align=True)


class Tables(StructRefProxy):
    """What a step reads besides the model's tree: the constraints (:data:`core.constraints.CONSTRAINT`), the
    joint-space programs and their variables, the force elements (:data:`core.forces.FORCE`), the controllers
    (:data:`core.control.kernels.CONTROLLER`) with their integer and float pools, the settings (:data:`SETTINGS`,
    one record), the contact points, joint limits and held joints (:data:`core.contacts.CONTACT_POINT`,
    :data:`core.contacts.LIMIT`), and the control programs' declarations in force (:mod:`core.programs.kernels`:
    quantities, law terms, servos, watches, control equations with their left-hand terms, and the force rows of
    the actuators the equations solve for, ``unknowns``)."""


@structref.register
class TablesType(_Struct):
    pass


define_proxy(Tables, TablesType, ['constraints', 'tape', 'variables', 'forces', 'controllers', 'control_ints',
                                  'control_floats', 'settings', 'points', 'limits', 'holds', 'quantities', 'terms',
                                  'servos', 'watches', 'equations', 'lhs', 'unknowns'])

class Outputs(StructRefProxy):
    """What one evaluation writes (see :class:`core.data.Data` for the meaning): ``qdd``, ``tau`` (all applied
    generalized forces), ``tau_control`` (nv); ``multipliers`` (R, the active rows in order), ``residual_rows``
    (R); ``constraint_force`` (K, 3), ``residual`` (K); ``singular_values`` (R); ``deviation``,
    ``deviation_rate`` (K); ``point_a``, ``point_b``, ``velocity_a`` (K, 3); ``power`` (K + 4) and
    ``tau_sources`` (4, nv: the generalized force of each power source, whose product with q̇ is its power,
    :func:`core.forward.powers`; the springs' elastic forces are the rest of ``tau``); ``z_rate`` (nz);
    per controlled coordinate ``tracking_error``, ``desired``, ``sliding`` (nc); per controller ``s_energy`` (C)
    and ``torque`` (C, nv); ``quantities``: the control programs' quantities (their capacity; :mod:`core.programs.kernels`);
    ``scalars`` (:data:`SCALARS`, one record)."""


@structref.register
class OutputsType(_Struct):
    pass


define_proxy(Outputs, OutputsType, ['qdd', 'tau', 'tau_control', 'multipliers', 'residual_rows', 'constraint_force', 'residual', 'singular_values', 'deviation', 'deviation_rate', 'point_a', 'point_b', 'velocity_a', 'power', 'tau_sources', 'z_rate', 'tracking_error', 'desired', 'sliding', 's_energy', 'torque', 'quantities', 'scalars'])

OUTPUT_FIELDS = ("qdd", "tau", "tau_control", "multipliers", "residual_rows", "constraint_force", "residual",
                 "singular_values", "deviation", "deviation_rate", "point_a", "point_b", "velocity_a", "power",
                 "tau_sources", "z_rate", "tracking_error", "desired", "sliding", "s_energy", "torque", "quantities", "scalars")
OutputArrays = namedtuple("OutputArrays", OUTPUT_FIELDS)
OutputArrays.__doc__ = "The arrays of an :class:`Outputs`, as Python reads them."


def outputs(nv: int, K: int, R: int, nz: int, nc: int, C: int, Q: int = 0) -> tuple[OutputArrays, "Outputs"]:
    """Zeroed output arrays for a model of these sizes (Q: the programs' quantities): ``(arrays, the Outputs the
    kernels write into them)``."""
    z = np.zeros
    arrays = OutputArrays(z(nv), z(nv), z(nv), z(R), z(R), z((K, 3)), z(K), z(R), z(K), z(K), z((K, 3)),
                          z((K, 3)), z((K, 3)), z(K + 4), z((4, nv)), z(nz), z(nc), z(nc), z(nc), z(C),
                          z((C, nv)), z(Q), np.zeros(1, SCALARS))
    return arrays, Outputs(*arrays)


class TreeRef(StructRefProxy):
    """The model's tree (:class:`core.model.Tree`) as the pipeline's stages take it: one reference."""


@structref.register
class TreeRefType(_Struct):
    pass


define_proxy(TreeRef, TreeRefType, ["parent", "joint_type", "axis", "R_tree", "p_tree", "S", "q_start", "v_start",
                                    "nq_j", "nv_j", "inertia", "gravity", "quat_starts", "root", "mass", "com",
                                    "inertia_com", "armature", "lone", "lone_Dinv"])


class Kinematics(StructRefProxy):
    """Per link (N): parent → link transform ``E`` = R_PCᵀ, ``r`` = p_PC; world pose ``R_WL``, ``p_WL``; spatial
    velocity ``v`` and velocity-product acceleration ``c`` = v × S q̇ (link coordinates); ``a_vp`` the link
    acceleration at q̈ = 0 without gravity (eq. 2.65)."""


@structref.register
class KinematicsType(_Struct):
    pass


define_proxy(Kinematics, KinematicsType, ['E', 'r', 'R_WL', 'p_WL', 'v', 'c', 'a_vp'])

class Articulated(StructRefProxy):
    """The articulated-body algorithm's arrays (:mod:`core.aba`, world axes about the world origin): motion
    subspaces ``Sw``, external forces ``fx``, link velocities ``v`` and ``c`` = v × s q̇, bias forces ``pA``,
    articulated inertias ``IA``, the factorization ``U``, ``W``, ``Dinv`` (q only), ``u``, accelerations
    ``acc``, and small scratch ``G`` (6 x 12), ``D6`` (6 x 6), ``s6`` (8 x 6)."""


@structref.register
class ArticulatedType(_Struct):
    pass


define_proxy(Articulated, ArticulatedType, ['Sw', 'fx', 'v', 'c', 'pA', 'IA', 'U', 'W', 'Dinv', 'u', 'acc', 'G', 'D6',
                                            's6'])


class RowsWork(StructRefProxy):
    """The active constraints' rows (m of R used): ``J`` (R x nv), ``gamma`` = J̇q̇, ``D``, ``D_rate``, ``stab``
    (R); the layout ``row_of``, ``group_of``, ``uf`` (K ints); scratch ``P3`` (22 x 3) and the joint-space
    programs' registers ``val``, ``d1``, ``d2`` (L), ``grad`` (L x V), ``xv``, ``vv`` (V)."""


@structref.register
class RowsWorkType(_Struct):
    pass


define_proxy(RowsWork, RowsWorkType, ['J', 'gamma', 'D', 'D_rate', 'stab', 'row_of', 'group_of', 'uf', 'P3', 'val', 'd1', 'd2', 'grad', 'xv', 'vv'])

class SolveWork(StructRefProxy):
    """The constraint solve: unconstrained ``qdd_free`` = M⁻¹(τ − b) (nv), ``Y`` = M⁻¹Jᵀ (nv x R), ``A`` = J M⁻¹Jᵀ
    (R x R, the multipliers formulation's; dynamic constraints form its blocks as they need them), the right-hand side ``B`` (R), per row the velocities its trees span and its
    group (``span``, R x 3), and scratch for the bounded solve and the eigen-decompositions (``Q1``: nv x R, the rows
    of an orthonormal basis of a group's J; ``C``: nv x nv)."""


@structref.register
class SolveWorkType(_Struct):
    pass


define_proxy(SolveWork, SolveWorkType, ['qdd_free', 'col', 'Y', 'A', 'B', 'svals', 'idx', 'Ag', 'Q', 'lam', 'QtB', 'Fg',
                                        'span', 'Q1', 'C'])

class Plant(StructRefProxy):
    """The joint-space dynamics when a stage needs it: ``M`` (nv x nv, CRBA), ``b`` = C q̇ + g and ``g`` (nv,
    RNEA), with scratch ``Ic`` (N x 6 x 6), ``f``, ``v``, ``acc`` (N x 6), zero external forces ``fx`` (N x 6)
    and a zero nv-vector ``zero``, ``F6`` (6 x 6), ``s6`` (3 x 6). CRBA and RNEA work from the links' world
    subspaces and inertias in the :class:`Articulated` arrays ``Sw`` and ``IA``, before ABA's pass 2."""


@structref.register
class PlantType(_Struct):
    pass


define_proxy(Plant, PlantType, ['M', 'b', 'g', 'Ic', 'f', 'v', 'acc', 'fx', 'zero', 'F6', 's6'])

class Dense(StructRefProxy):
    """Dense scratch of the projection and multiplier formulations: the SVD of J as ``Ju`` (nv x R: UΣ of Jᵀ),
    ``Vj`` (R x R), ``sj`` (R); ``Jpinv`` (nv x R); nv x nv matrices ``P``, ``Mc``, ``K``, ``T``; vectors ``x``,
    ``y``, ``w`` (nv), ``piv`` (nv ints); R-vectors ``ra``, ``rb``."""


@structref.register
class DenseType(_Struct):
    pass


define_proxy(Dense, DenseType, ['Ju', 'Vj', 'sj', 'Jpinv', 'P', 'Mc', 'K', 'T', 'x', 'y', 'w', 'piv', 'ra', 'rb'])

class ControlWork(StructRefProxy):
    """The controllers' scratch: the regressors ``Y`` (3 x nv x P: Y or its inertial part, its gravity part, and
    Y_p of the adapted parameters) with ``wp`` (P) for Y_pᵀ s, the reference velocity and acceleration ``qd_r``,
    ``qdd_r`` (nv), per controlled coordinate ``q_d``, ``qd_d``, ``qdd_d``, ``e``, ``e_dot``, ``s``, ``u`` (nv),
    features ``phi`` and ``Pphi`` (F), the transpose of a stacked (R + nv) x nv matrix ``S2`` with its SVD
    scratch ``V2`` ((R + nv)², ``s2``) and right-hand side ``b2`` (R + nv), nv x nv scratch ``N1``, ``N2``, ``N3``
    nv-vectors ``v1`` … ``v4`` and a 3-vector ``g3``."""


@structref.register
class ControlWorkType(_Struct):
    pass


define_proxy(ControlWork, ControlWorkType, ['Y', 'wp', 'qd_r', 'qdd_r', 'q_d', 'qd_d', 'qdd_d', 'e', 'e_dot', 's', 'u', 'phi', 'Pphi', 'S2', 'V2', 's2', 'b2', 'N1', 'N2', 'N3', 'v1', 'v2', 'v3', 'v4', 'g3'])

class IntegratorWork(StructRefProxy):
    """The integrator's stages ``k`` (6 x n: the derivatives of y = [q, q̇, work, z], n entries), the two
    solutions ``y1``, ``y2`` (n) of an embedded pair, ``flags`` (run-time booleans: False and True, then whether
    ``out`` holds the open constraints' rows of the state evaluated, True only around such an evaluation), the
    ``implicitfast`` step's ``damping`` (4 x nv: −∂τ/∂q̇ of the joint dampers and actuators by power source,
    diagonal, as the step takes it) and the ``armature`` its articulated-body pass takes (nv: the joints' armature
    + h · the sources' damping), and a first-order step's forces at its start, which its work is booked with at
    its end velocity: the active constraints' rows of ``J`` (R x nv) and their ``multipliers`` (R), laid out as
    ``RowsWork.row_of`` says, and the sources' generalized forces ``sources`` (4 x nv)."""


@structref.register
class IntegratorWorkType(_Struct):
    pass


define_proxy(IntegratorWork, IntegratorWorkType, ["k", "y1", "y2", "flags", "damping", "armature", "J",
                                                  "multipliers", "sources"])


class EventWork(StructRefProxy):
    """The event stage's scratch (:mod:`core.witnesses`): the events found at a state (``kind``, ``index``, the
    witness value ``g``; at most one per contact point and two per joint limit, plus one per constraint), per
    contact point whether it may stick in this step (``eligible``), is held in stick (``held``) and how often it
    switched (``switches``); an impact's entries (``ents``, E x 2), which are new (``is_new``), their results
    (``result``, E x 6) and q̇⁺ (``qd``); the state a step starts from (``y0``) and the first one found past an
    event (``y_hi``); per armed watch whether its witness is positive at the step's start (``watch_sign``); while
    an event is isolated, the events found at the bracket's late end (``bracket_id``: kind, index) and their
    witnesses at its two ends and their rates there (``bracket_g``: early, late, early rate, late rate; NaN where
    not known)."""


@structref.register
class EventWorkType(_Struct):
    pass


define_proxy(EventWork, EventWorkType, ['kind', 'index', 'g', 'eligible', 'held', 'switches', 'ents', 'is_new',
                                        'result', 'qd', 'y0', 'y_hi', 'watch_sign', 'bracket_id',
                                        'bracket_g'])


class ProgramWork(StructRefProxy):
    """The control programs' scratch (:mod:`core.programs.kernels`): per quantity its ``rates``, gradient
    ``grad`` (Q x nv), ``bias`` and unit direction ``dirs`` (Q x 3, distances); the servos' commands per force row
    (``extra``; NaN: none); ``E3`` (3 x 3); for the control equations, the unconstrained accelerations ``qdd0``,
    the responses ``X`` (U x nv) to each unknown command, the equations' readings ``Y`` ((U + 1) x E), their
    matrix ``A`` (E x U) and right side ``b`` (E), the commands ``u`` (U), Aᵀ's SVD (``At`` U x E, ``V`` E x E,
    ``s`` E) and four 3-vectors ``v3`` (4 x 3)."""


@structref.register
class ProgramWorkType(_Struct):
    pass


define_proxy(ProgramWork, ProgramWorkType, ['rates', 'grad', 'bias', 'dirs', 'extra', 'E3', 'qdd0', 'X', 'Y', 'A',
                                            'b', 'u', 'tau', 'At', 'V', 's', 'v3'])


class Workspace(StructRefProxy):
    """All scratch of one compiled call, by stage."""


@structref.register
class WorkspaceType(_Struct):
    pass


define_proxy(Workspace, WorkspaceType, ['kin', 'aba', 'rows', 'solve', 'plant', 'dense', 'control', 'integrator',
                                        'events', 'programs'])


@njit
def kinematics_work(N):
    """A zeroed :class:`Kinematics` for N links."""
    return Kinematics(np.zeros((N, 3, 3)), np.zeros((N, 3)), np.zeros((N, 3, 3)), np.zeros((N, 3)),
                      np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((N, 6)))


@njit
def articulated_work(N):
    """A zeroed :class:`Articulated` for N links (its external forces ``fx`` zero)."""
    return Articulated(np.zeros((N, 6, 6)), np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((N, 6)),
                       np.zeros((N, 6, 6)), np.zeros((N, 6, 6)), np.zeros((N, 6, 6)), np.zeros((N, 6, 6)),
                       np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((6, 12)), np.zeros((6, 6)), np.zeros((8, 6)))


@njit
def plant_work(N, nv):
    """A zeroed :class:`Plant` for N links and nv velocities (its external forces ``fx`` and ``zero`` zero)."""
    return Plant(np.zeros((nv, nv)), np.zeros(nv), np.zeros(nv), np.zeros((N, 6, 6)), np.zeros((N, 6)),
                 np.zeros((N, 6)), np.zeros((N, 6)), np.zeros((N, 6)), np.zeros(nv), np.zeros((6, 6)),
                 np.zeros((3, 6)))


_thread = threading.local()
THREAD_WORK_SIZES = 8


def thread_work(n_links: int) -> tuple:
    """This thread's ``(Kinematics, Articulated, Plant)`` for a model of ``n_links`` links, made on first use and
    kept: what the single calls from Python (``core.forward_dynamics``, ``inverse_dynamics``, ``mass_matrix``)
    evaluate in, so that a call allocates nothing but its result and threads never share scratch. The Plant's
    joint-space arrays are empty (those calls write M and τ into their results), so the scratch is O(N), and each
    thread keeps it for the :data:`THREAD_WORK_SIZES` sizes used last."""
    works = getattr(_thread, "works", None)
    if works is None:
        works = _thread.works = {}
    work = works.pop(n_links, None)
    if work is None:
        work = (kinematics_work(n_links), articulated_work(n_links), plant_work(n_links, 0))
        while len(works) >= THREAD_WORK_SIZES:
            works.pop(next(iter(works)))                 # the least recently used size
    works[n_links] = work                                # (now the most recent)
    return work
