"""Impacts, compiled: the velocity jump when contact points touch down or joints reach their limits (McClamroch
§6; Kearney §3: "collision events are resolved by formulating a set of impulse-momentum equations").

Problem. At configuration q with pre-impact velocity q̇⁻, find impulses P on the rows R — the active bilateral
constraints (which keep their velocity), the joints an actuator holds through the impact (a contact's
``impact_holds``: their velocity is kept), and for every touching point its normal row J_n and tangential rows
J_t (a joint bound: the row ±e_j) — such that::

    M (q̇⁺ − q̇⁻) = Rᵀ P                                       (impulse–momentum)
    v_n⁺ ≥ target,  P_n ≥ 0,  P_n (v_n⁺ − target) = 0        (target = −e v_n⁻ for a colliding point whose
                                                              rebound is at least its rest speed, else 0)
    ‖P_t‖ ≤ μ P_n;  v_t⁺ = 0 inside the cone, P_t = −μ P_n t̂ on its edge   (Coulomb, t̂ the slip direction)

After it a point is open when it rebounds at its rest speed or faster, or when it takes no impulse (P_n = 0) and
leaves its plane faster than :data:`LIFT_SPEED` of its rest speed; the others stay in contact.

Solution. An active set (every touching point in, sticking): solve A P = b with A = R M⁻¹ Cᵀ (C = R but for a
sliding point, whose normal column carries its friction, J_n − μ t̂ᵀJ_t) by least squares; a point with P_n < 0
leaves the set (it separates), a point outside its cone slides, a point left out that the others leave moving into
its plane comes back (at most four times each). Without friction this solves the complementarity conditions; with
friction the sliding impulses along the pre-impact slip can leave a point moving in or add energy (about one random
eight-corner box impact in five), and then the problem is solved as the complementarity problem with Coulomb's
disc by projected Gauss–Seidel (:func:`_gauss_seidel`).

Only the points whose trees are linked to a new touchdown or limit (through active constraints, planes fixed in
bodies, or a shared tree) take part: a ball resting elsewhere on the floor feels nothing. M⁻¹Rᵀ comes from one
O(N) articulated-body solve per row (:func:`core.aba.aba_solve`); no mass matrix is formed.
"""
from __future__ import annotations

import numpy as np

from .aba import aba_passes, aba_solve, tree_span
from .constraints import JOINT_SPACE
from .geometry import tangent_basis
from .jit import njit
from .linalg import lu_solve, pinv_apply, svd_columns
from .points import jacobian_columns

__all__ = ["impact", "plane_normal", "OPEN", "STICK", "SLIP", "FRICTIONLESS", "POINT", "BOUND", "NOT_IN_IMPACT", "LIFT_SPEED"]

OPEN, STICK, SLIP, FRICTIONLESS = 0, 1, 2, 3
#: A point the impact leaves with no impulse opens when it moves away faster than this fraction of its rest speed
#: (slower: round-off, which would open a resting bound and take it again at once).
LIFT_SPEED = 0.01
POINT, BOUND = 0, 1
NOT_IN_IMPACT = -1


@njit
def _find(uf, a):
    while uf[a] != a:
        a = uf[a]
    return a


@njit
def _union(uf, a, b):
    a, b = _find(uf, a), _find(uf, b)
    if a != b:
        uf[max(a, b)] = min(a, b)


@njit
def _constraint_roots(tab, root, c, out):
    """The roots of the trees constraint c acts on (up to 2 for a point constraint, its joints' for joint space);
    returns how many (out: scratch of at least the largest joint-space constraint's variables)."""
    con = tab.constraints[c]
    n = 0
    if con.kind == JOINT_SPACE:
        for j in range(con.n_vars):
            out[n] = root[tab.variables[con.var_start + j].link]
            n += 1
        return n
    if con.link_a >= 0 and not con.fixed_a:                  # (a link fixed in the world links nothing)
        out[n] = root[con.link_a]
        n += 1
    if con.link_b >= 0 and not con.fixed_b:
        out[n] = root[con.link_b]
        n += 1
    if n == 0:                                                # (nothing moves: its own tree, linking nothing)
        out[0] = root[con.link_a]
        n = 1
    return n


@njit
def _entry_roots(tree, tab, kind, index, out):
    if kind == POINT:
        return _constraint_roots(tab, tree.root, tab.points[index].normal, out)
    lim = tab.limits[index // 2]
    return _constraint_roots(tab, tree.root, lim.lower_row, out)


@njit
def plane_normal(tab, kin, p, n):
    """The world unit normal of point p's plane (turned with the plane's link when it is a body's); against
    another shape's core, the normal its normal row found at the last evaluation (:func:`core.constraints.rows_kernel`)."""
    pt = tab.points[p]
    if pt.plane_link < 0:
        for a in range(3):
            n[a] = pt.plane_normal[a]
        return
    k = pt.plane_link
    e = tab.constraints[pt.normal].basis
    for a in range(3):
        n[a] = kin.R_WL[k, a, 0] * e[0, 0] + kin.R_WL[k, a, 1] * e[1, 0] + kin.R_WL[k, a, 2] * e[2, 0]


@njit
def _point_rows(tree, tab, kin, p, R, row, E):
    """R[row] ← n ᵀ J_rel and R[row + 1 : row + 1 + nt] ← E_tᵀ J_rel for contact point p, with J_rel the Jacobian of
    the velocity of its material point where it touches relative to the plane body's point there; E (3 x 3)
    receives [n, t_1, t_2] (world; t from the point's stick rows, turned with a body's plane). Returns nt."""
    pt = tab.points[p]
    x = np.empty(3)
    n = np.empty(3)
    plane_normal(tab, kin, p, n)
    k = pt.link
    r = tab.constraints[pt.normal].r_a                       # (the body point; a sliding point's where it was last)
    for a in range(3):
        x[a] = kin.p_WL[k, a] + kin.R_WL[k, a, 0] * r[0] + kin.R_WL[k, a, 1] * r[1] + \
            kin.R_WL[k, a, 2] * r[2] - pt.radius * n[a]
    nt = 0
    for a in range(3):
        E[a, 0] = n[a]
    if pt.stick >= 0 and tab.constraints[pt.normal].shape > 0:    # against a core: the tangents of this normal
        nt = tab.constraints[pt.stick].rows
        tangent_basis(n, E, 1)
    elif pt.stick >= 0:
        con = tab.constraints[pt.stick]
        nt = con.rows
        for b in range(nt):
            for a in range(3):
                if con.body_basis:
                    kb = con.link_b
                    E[a, 1 + b] = kin.R_WL[kb, a, 0] * con.basis[0, b] + kin.R_WL[kb, a, 1] * con.basis[1, b] + \
                        kin.R_WL[kb, a, 2] * con.basis[2, b]
                else:
                    E[a, 1 + b] = con.basis[a, b]
    for b in range(1 + nt):
        for j in range(R.shape[1]):
            R[row + b, j] = 0.0
    jacobian_columns(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, k, x, E, 1 + nt, 1.0, R, row)
    if pt.plane_link >= 0:
        jacobian_columns(tree.parent, tree.S, tree.v_start, tree.nv_j, kin.R_WL, kin.p_WL, pt.plane_link, x, E,
                         1 + nt, -1.0, R, row)
    return nt


@njit
def _lstsq(A, m, b, x, rcond):
    """x ← the minimum-norm least-squares solution of A[:m, :m] x = b (singular values below rcond σ_max
    dropped, as numpy's lstsq)."""
    M = np.empty((m, m))
    for a in range(m):
        for c in range(m):
            M[a, c] = A[c, a]
    V = np.empty((m, m))
    s = np.empty(m)
    svd_columns(M, m, m, V, s)
    r = 0
    for a in range(m):
        if s[a] > rcond * s[0]:
            r += 1
    pinv_apply(M, V, s, m, r, b, x)


@njit
def impact(tree, tab, ws, q, qd, ke, active, ents, new, n_ent, qd_out, result):
    """The impact at (q, q̇⁻ = ``qd``) for the entries ``ents[:n_ent]`` — rows (kind, index): a touching contact
    point (:data:`POINT`, its slot) or a joint bound at its limit (:data:`BOUND`, 2·limit + bound) — of which
    ``new`` flags the ones that touch down or reach their bound now (module docstring). The link kinematics in
    ``ws.kin`` must be those at q, and ``ws.rows`` the layout of the active constraints there (a full evaluation
    at the state; ``ke`` the kinetic energy ½ q̇ᵀ M q̇ there). Writes q̇⁺ into ``qd_out`` and per entry ``result[e] = (P_n, P_t (3, world), v_n⁻, mode)``
    with mode :data:`OPEN`, :data:`STICK`, :data:`SLIP`, :data:`FRICTIONLESS` after the impact, or
    :data:`NOT_IN_IMPACT` for entries not linked to any new one (left as they are). Returns the change of kinetic
    energy (≤ 0 but for a perfectly elastic impact)."""
    nv = qd.shape[0]
    kin, aba, rows = ws.kin, ws.aba, ws.rows
    cons = tab.constraints
    K = cons.shape[0]
    N = tree.parent.shape[0]
    # 1. which trees take part: those linked to a new entry
    uf = np.arange(N)
    roots = np.empty(max(8, tab.variables.shape[0] + 2), np.int64)
    for c in range(K):
        if active[c]:
            nr = _constraint_roots(tab, tree.root, c, roots)
            for j in range(1, nr):
                _union(uf, roots[0], roots[j])
    for e in range(n_ent):
        nr = _entry_roots(tree, tab, ents[e, 0], ents[e, 1], roots)
        for j in range(1, nr):
            _union(uf, roots[0], roots[j])
    hot = np.zeros(N, np.bool_)
    for e in range(n_ent):
        if new[e]:
            _entry_roots(tree, tab, ents[e, 0], ents[e, 1], roots)
            hot[_find(uf, roots[0])] = True
    take = np.zeros(n_ent, np.bool_)
    for e in range(n_ent):
        _entry_roots(tree, tab, ents[e, 0], ents[e, 1], roots)
        take[e] = hot[_find(uf, roots[0])]
        result[e, 5] = NOT_IN_IMPACT
    # 2. the rows: bilateral (active, not unilateral, on a hot tree), held joints, then each entry's
    nb = 0
    for c in range(K):
        if active[c] and not cons[c].unilateral:
            _constraint_roots(tab, tree.root, c, roots)
            if hot[_find(uf, roots[0])]:
                nb += cons[c].rows
    held = np.zeros(nv, np.bool_)
    for e in range(n_ent):
        if take[e] and ents[e, 0] == POINT:
            pt = tab.points[ents[e, 1]]
            for h in range(pt.holds_count):
                held[tab.holds[pt.holds_start + h]] = True
    n_held = 0
    for j in range(nv):
        if held[j]:
            n_held += 1
    nr_max = nb + n_held + 3 * n_ent
    R = np.zeros((max(nr_max, 1), nv))
    r = 0
    for c in range(K):
        if active[c] and not cons[c].unilateral:
            _constraint_roots(tab, tree.root, c, roots)
            if hot[_find(uf, roots[0])]:
                for b in range(cons[c].rows):
                    for j in range(nv):
                        R[r, j] = rows.J[rows.row_of[c] + b, j]
                    r += 1
    for j in range(nv):
        if held[j]:
            R[r, j] = 1.0
            r += 1
    m0 = r                                                   # bilateral and held rows: their velocity is kept
    ent = np.zeros(n_ent, np.int64)                          # the in-impact entries, their first row, tangents
    first = np.zeros(n_ent, np.int64)
    nts = np.zeros(n_ent, np.int64)
    Et = np.zeros((n_ent, 3, 3))
    n_in = 0
    E = np.empty((3, 3))
    for e in range(n_ent):
        if not take[e]:
            continue
        ent[n_in] = e
        first[n_in] = r
        if ents[e, 0] == POINT:
            nt = _point_rows(tree, tab, kin, ents[e, 1], R, r, E)
            for a in range(3):
                for b in range(3):
                    Et[n_in, a, b] = E[a, b]
        else:
            lim = tab.limits[ents[e, 1] // 2]
            for j in range(nv):
                R[r, j] = 0.0
            R[r, lim.v] = 1.0 if ents[e, 1] % 2 == 0 else -1.0
            nt = 0
        nts[n_in] = nt
        r += 1 + nt
        n_in += 1
    nr = r
    # 3. Y = M⁻¹ Rᵀ, one O(N) solve per row, from ABA's factorization at q
    tau0 = np.zeros(nv)
    scratch = np.empty(nv)
    aba_passes(tree, kin, aba, qd, tau0, scratch, False, tree.armature)
    Y = np.empty((nv, max(nr, 1)))
    col = np.empty(nv)
    row = np.empty(nv)
    for a in range(nr):
        for j in range(nv):
            row[j] = R[a, j]
        lo, hi = tree_span(tree.parent, tree.root, tree.v_start, tree.nv_j, row, nv)
        for j in range(nv):
            col[j] = 0.0
        aba_solve(tree.parent, aba.Sw, tree.v_start, tree.nv_j, aba.U, aba.W, aba.Dinv, row, col, aba.pA, aba.u,
                  aba.acc, aba.s6[0], aba.s6[1], lo, hi)
        for j in range(nv):
            Y[j, a] = col[j]
    Rv = np.empty(max(nr, 1))
    for a in range(nr):
        s = 0.0
        for j in range(nv):
            s += R[a, j] * qd[j]
        Rv[a] = s
    # 4. per entry: its pre-impact velocities and target
    vn = np.zeros(n_in)
    target = np.zeros(n_in)
    mu = np.zeros(n_in)
    rest = np.zeros(n_in)
    inside = np.ones(n_in, np.bool_)
    sliding = np.zeros(n_in, np.bool_)
    back = np.zeros(n_in, np.int64)
    tdir = np.zeros((n_in, 2))                               # the slip direction in the tangent basis
    for i in range(n_in):
        e = ent[i]
        o = first[i]
        vn[i] = Rv[o]
        if ents[e, 0] == POINT:
            pt = tab.points[ents[e, 1]]
            mu[i], rest[i], e_rest, was = pt.mu, pt.rest_speed, pt.restitution, active[pt.normal]
        else:
            lim = tab.limits[ents[e, 1] // 2]
            rowc = lim.lower_row if ents[e, 1] % 2 == 0 else lim.upper_row
            rest[i], e_rest, was = lim.rest_speed, lim.restitution, active[rowc]
        if vn[i] < 0.0 and not was and e_rest * -vn[i] >= rest[i]:
            target[i] = -e_rest * vn[i]
        if nts[i] > 0:
            sp = 0.0
            for b in range(nts[i]):
                sp += Rv[o + 1 + b] ** 2
            sp = np.sqrt(sp)
            for b in range(nts[i]):
                tdir[i, b] = Rv[o + 1 + b] / sp if sp > 0 else 0.0
    # 5. the active set
    P = np.zeros(max(nr, 1))
    A = np.zeros((max(nr, 1), max(nr, 1)))
    Cy = np.zeros((nv, max(nr, 1)))                          # M⁻¹ Cᵀ, column by column of the solve's rows
    ridx = np.zeros(max(nr, 1), np.int64)                    # row of R of each solve row
    who = np.zeros(max(nr, 1), np.int64)                     # entry (−1: bilateral) and kind of each solve row
    what = np.zeros(max(nr, 1), np.int64)                    # 0 bilateral, 1 normal, 2 tangential
    b = np.zeros(max(nr, 1))
    x = np.zeros(max(nr, 1))
    after = np.empty(nv)
    ma = 0
    for _ in range(8 * n_in + 8):
        ma = 0
        for a in range(m0):
            ridx[ma], who[ma], what[ma], b[ma] = a, -1, 0, 0.0
            for j in range(nv):
                Cy[j, ma] = Y[j, a]
            ma += 1
        for i in range(n_in):
            if not inside[i]:
                continue
            o = first[i]
            ridx[ma], who[ma], what[ma], b[ma] = o, i, 1, target[i] - vn[i]
            for j in range(nv):
                Cy[j, ma] = Y[j, o]
            if mu[i] > 0 and sliding[i]:
                for t in range(nts[i]):
                    for j in range(nv):
                        Cy[j, ma] -= mu[i] * tdir[i, t] * Y[j, o + 1 + t]
            ma += 1
            if mu[i] > 0 and not sliding[i]:
                for t in range(nts[i]):
                    ridx[ma], who[ma], what[ma], b[ma] = o + 1 + t, i, 2, -Rv[o + 1 + t]
                    for j in range(nv):
                        Cy[j, ma] = Y[j, o + 1 + t]
                    ma += 1
        for a in range(ma):
            for c in range(ma):
                s = 0.0
                for j in range(nv):
                    s += R[ridx[a], j] * Cy[j, c]
                A[a, c] = s
        if ma > 0:
            _lstsq(A, ma, b[:ma].copy(), x[:ma], 1e-10)
        for a in range(ma):
            P[a] = x[a]
        worst, pmin, pmax = -1, np.inf, 1.0
        for a in range(ma):
            if what[a] == 1:
                pmax = max(pmax, abs(P[a]))
                if P[a] < pmin:
                    pmin, worst = P[a], who[a]
        if worst >= 0 and pmin < -1e-12 * pmax:
            inside[worst] = False                             # it separates: solve again without it
            continue
        over = False
        for i in range(n_in):
            if not inside[i] or sliding[i] or mu[i] <= 0 or nts[i] == 0:
                continue
            pn, pt2, vt2 = 0.0, 0.0, 0.0
            for a in range(ma):
                if who[a] == i:
                    if what[a] == 1:
                        pn = P[a]
                    else:
                        pt2 += P[a] * P[a]
            for t in range(nts[i]):
                vt2 += Rv[first[i] + 1 + t] ** 2
            if np.sqrt(pt2) > mu[i] * max(pn, 0.0) * (1 + 1e-9) and vt2 > 0:
                sliding[i] = True                             # outside the cone: a sliding impact
                over = True
        if over:
            continue
        for j in range(nv):                                   # a point left out that the others drive in comes back
            s = qd[j]
            for a in range(ma):
                s += Cy[j, a] * P[a]
            after[j] = s
        best, vbest = -1, 0.0
        for i in range(n_in):
            if inside[i] or back[i] >= 4:
                continue
            o = first[i]
            s = 0.0
            for j in range(nv):
                s += R[o, j] * after[j]
            if s < -1e-9 * (1.0 + abs(vn[i])) and (best < 0 or s < vbest):
                best, vbest = i, s
        if best >= 0:
            inside[best] = True
            back[best] += 1
            continue
        break
    for j in range(nv):
        s = qd[j]
        for a in range(ma):
            s += Cy[j, a] * P[a]
        qd_out[j] = s
    pn_of = np.zeros(n_in)
    pt_of = np.zeros((n_in, 2))
    for a in range(ma):
        if what[a] == 1:
            pn_of[who[a]] = P[a]
        elif what[a] == 2:
            i = who[a]
            pt_of[i, ridx[a] - first[i] - 1] = P[a]
    # the kinetic energy's change ½ (q̇⁺ − q̇⁻)ᵀ M (q̇⁺ + q̇⁻) = ½ Pᵀ C (q̇⁺ + q̇⁻)
    de = _energy_change(R, Y, ridx, who, what, sliding, tdir, nts, mu, first, ma, P, qd, qd_out, Rv)
    friction = False
    for i in range(n_in):
        friction = friction or mu[i] > 0
    if friction:
        bad = 2.0 * de > 1e-12 + 2e-9 * ke
        for i in range(n_in):
            o = first[i]
            s = 0.0
            for j in range(nv):
                s += R[o, j] * qd_out[j]
            if s < (target[i] if inside[i] else 0.0) - 1e-9 * (1.0 + abs(vn[i])):
                bad = True
        if bad:                                               # the active set left a point moving in or added energy
            de = _gauss_seidel(R, Y, Rv, m0, n_in, first, nts, mu, target, qd, qd_out, pn_of, pt_of, inside,
                               sliding, tdir)
    for i in range(n_in):
        e = ent[i]
        o = first[i]
        s = 0.0
        for j in range(nv):
            s += R[o, j] * qd_out[j]
        # open: a rebound at its rest speed or faster, or a point the impact leaves moving away with no impulse
        # (P_n = 0: the others' impulses lift it) faster than LIFT_SPEED of its rest speed — kept closed, its row
        # would hold a velocity the contact cannot have, and the stabilization pull it back over many steps (a
        # ball struck on the floor hovered 0.4 mm above it, its contact closed, before this)
        left = not inside[i] or pn_of[i] <= 0.0
        if s >= rest[i] or (left and s > LIFT_SPEED * rest[i]):
            mode = OPEN
        elif ents[e, 0] == BOUND or tab.points[ents[e, 1]].stick < 0:
            mode = FRICTIONLESS
        else:
            mode = SLIP if sliding[i] or not inside[i] else STICK
            if mode == SLIP and inside[i] and nts[i] > 0:
                # Coulomb at rest: a point the impact left without slip velocity (the other rows hold it still: a
                # heel that lands behind a sticking toe) sticks; the settle after the impact makes it slip again,
                # in its stick force's direction, if that force leaves the cone
                vt = 0.0
                for t in range(nts[i]):
                    st = 0.0
                    for j in range(nv):
                        st += R[o + 1 + t, j] * qd_out[j]
                    vt += st * st
                if np.sqrt(vt) <= 1e-9 * (1.0 + abs(vn[i])):
                    mode = STICK
        result[e, 4] = vn[i]
        result[e, 5] = mode
        if not inside[i]:
            for a in range(4):
                result[e, a] = 0.0
            continue
        result[e, 0] = pn_of[i]
        for a in range(3):
            v = 0.0
            for t in range(nts[i]):
                pt = -mu[i] * pn_of[i] * tdir[i, t] if sliding[i] else pt_of[i, t]
                v += Et[i, a, 1 + t] * pt
            result[e, 1 + a] = v
    return de


@njit
def _energy_change(R, Y, ridx, who, what, sliding, tdir, nts, mu, first, ma, P, v0, v1, Rv):
    """½ (q̇⁺ − q̇⁻)ᵀ M (q̇⁺ + q̇⁻) = ½ Σ_a P_a c_a·(q̇⁺ + q̇⁻), c_a the solve's columns (a sliding normal's carries
    −μ t̂ᵀJ_t)."""
    nv = v0.shape[0]
    de = 0.0
    for a in range(ma):
        r = ridx[a]
        s = 0.0
        for j in range(nv):
            s += R[r, j] * (v0[j] + v1[j])
        i = who[a]
        if what[a] == 1 and sliding[i] and mu[i] > 0:
            for t in range(nts[i]):
                o = first[i] + 1 + t
                u = 0.0
                for j in range(nv):
                    u += R[o, j] * (v0[j] + v1[j])
                s -= mu[i] * tdir[i, t] * u
        de += 0.5 * P[a] * s
    return de


@njit
def _contact_block(W, y, x, o, nt, mu, goal, P):
    """One entry's impulses P (normal, then its ``nt`` tangential rows) against the others' (Gauss–Seidel's local
    problem), with r the entry's row velocities without its own impulses (y − W x on its rows): none if r_n ≥ goal
    (it separates); else the sticking impulses W_ll P = (goal − r_n, −r_t) when they lie in the disc
    ‖P_t‖ ≤ μ P_n; else sliding, P_t = −μ P_n d along the slip direction d of its own result, v_n = goal
    (P_n = (goal − r_n)/(W_nn − μ W_ntᵀd)): d the angle at which v_t ∥ d, bracketed and bisected (if no angle
    slides so, the sticking impulse with its tangential part brought onto the disc)."""
    k = 1 + nt
    r = np.empty(3)
    for a in range(k):
        s = y[o + a]
        for c in range(k):
            s -= W[o + a, o + c] * x[o + c]
        r[a] = s
    for a in range(3):
        P[a] = 0.0
    if r[0] >= goal or not W[o, o] > 0.0:
        return
    if nt == 0:
        P[0] = (goal - r[0]) / W[o, o]
        return
    B = np.empty((3, 3))
    rhs = np.empty(3)
    for a in range(k):
        rhs[a] = (goal - r[0]) if a == 0 else -r[a]
        for c in range(k):
            B[a, c] = W[o + a, o + c]
    stuck = lu_solve(B, k, rhs, P, np.empty(3, np.int64))
    pt = 0.0
    for t in range(nt):
        pt += P[1 + t] * P[1 + t]
    pt = np.sqrt(pt)
    if stuck and P[0] >= 0.0 and pt <= mu * P[0]:
        return
    if nt == 1:                                               # the slip along ±t
        for sign in (1.0, -1.0):
            pn, vt = _sliding(W, r, o, mu, goal, sign, 0.0, 1)
            if pn >= 0.0 and vt[0] * sign >= 0.0:
                P[0], P[1] = pn, -mu * pn * sign
                return
    elif _slide_on_disc(W, r, o, mu, goal, P):
        return
    if stuck and P[0] > 0.0 and pt > 0.0:                     # (no sliding solution: the sticking impulse, its
        for t in range(nt):                                   # tangential part brought onto the cone)
            P[1 + t] *= mu * P[0] / pt


@njit
def _slide_on_disc(W, r, o, mu, goal, P):
    """The sliding impulse of an entry with two tangential rows, into P: the slip's direction d = (cos θ, sin θ)
    where v_t(θ) ∥ d, along it (friction −μ P_n d opposes the slip), with P_n ≥ 0 — the zero of v_t × d bracketed
    on :data:`_ANGLES` angles and bisected. False (P untouched) if no angle slides so."""
    lo = 0.0
    g_lo = _slip_cross(W, r, o, mu, goal, lo)
    for k in range(1, _ANGLES + 1):
        hi = 2.0 * np.pi * k / _ANGLES
        g_hi = _slip_cross(W, r, o, mu, goal, hi)
        if np.isfinite(g_lo) and np.isfinite(g_hi) and g_lo * g_hi <= 0.0:
            a, b, ga = lo, hi, g_lo
            for _ in range(60):
                mid = 0.5 * (a + b)
                gm = _slip_cross(W, r, o, mu, goal, mid)
                if not np.isfinite(gm):
                    break
                if ga * gm <= 0.0:
                    b = mid
                else:
                    a, ga = mid, gm
            theta = 0.5 * (a + b)
            c, sn = np.cos(theta), np.sin(theta)
            pn, vt = _sliding(W, r, o, mu, goal, c, sn, 2)
            if pn >= 0.0 and vt[0] * c + vt[1] * sn >= 0.0:
                P[0], P[1], P[2] = pn, -mu * pn * c, -mu * pn * sn
                return True
        lo, g_lo = hi, g_hi
    return False


#: Angles on which :func:`_slide_on_disc` brackets the slip's direction.
_ANGLES = 64


@njit
def _sliding(W, r, o, mu, goal, d0, d1, nt):
    """An entry sliding along the unit d (its first ``nt`` components) with P_t = −μ P_n d and v_n = goal:
    ``(P_n, v_t)`` (P_n = −1 where W_nn − μ W_ntᵀd ≤ 0: no such impulse)."""
    den = W[o, o] - mu * (W[o, o + 1] * d0 + (W[o, o + 2] * d1 if nt == 2 else 0.0))
    vt = np.zeros(2)
    if not den > 0.0:
        return -1.0, vt
    pn = (goal - r[0]) / den
    for t in range(nt):
        s = r[1 + t] + W[o + 1 + t, o] * pn - mu * pn * W[o + 1 + t, o + 1] * d0
        if nt == 2:
            s -= mu * pn * W[o + 1 + t, o + 2] * d1
        vt[t] = s
    return pn, vt


@njit
def _slip_cross(W, r, o, mu, goal, theta):
    """v_t × d for the slip along d = (cos θ, sin θ) (:func:`_sliding`); NaN where no impulse slides so."""
    c, sn = np.cos(theta), np.sin(theta)
    pn, vt = _sliding(W, r, o, mu, goal, c, sn, 2)
    if pn < 0.0:
        return np.nan
    return vt[0] * sn - vt[1] * c


@njit
def _gauss_seidel(R, Y, Rv, m0, n_in, first, nts, mu, target, v, qd_out, pn_of, pt_of, inside, sliding, tdir,
                  sweeps=5000, tol=1e-12):
    """The impact as the complementarity problem with Coulomb's disc, by projected Gauss–Seidel over every touching
    entry: with W = R M⁻¹ Rᵀ and row velocities y = R q̇⁻ + W x, the bilateral rows keep their velocity, each
    entry has v_n⁺ ≥ target, P_n ≥ 0, P_n (v_n⁺ − target) = 0, and a tangential impulse within ‖P_t‖ ≤ μ P_n that
    stops the slip or, on the disc's edge, opposes it. Each sweep updates every bilateral row, and every entry's
    impulses against the others' latest ones, until no impulse moves by more than ``tol`` relative to the largest
    (:func:`_sweeps`). The sweeps solve each entry's normal and tangential impulses together first
    (:func:`_contact_block`); updated one after the other (the normal row, then the tangential block projected
    onto the disc) the coupling W_nt of a turning body made them cycle between two states on Menagerie's Go2, one
    of them a calf's point left moving into the ground with no impulse, while the block sweeps in turn cycle on
    about one random eight-corner box impact in forty at μ = 1, where the separate updates converge: when the
    first leave the conditions violated, the second are tried and the smaller violation (:func:`_violation`)
    taken. Sets q̇⁺, the impulses and the entries' sliding flags; returns the kinetic energy's change."""
    nv = v.shape[0]
    nr = first[n_in - 1] + 1 + nts[n_in - 1] if n_in > 0 else m0
    W = np.empty((nr, nr))
    for a in range(nr):
        for c in range(nr):
            s = 0.0
            for j in range(nv):
                s += R[a, j] * Y[j, c]
            W[a, c] = s
    goal = np.zeros(nr)
    for i in range(n_in):
        goal[first[i]] = target[i]
    for a in range(m0):
        goal[a] = Rv[a]                                       # bilateral rows: their velocity unchanged
    x = _sweeps(W, Rv, goal, m0, n_in, first, nts, mu, True, sweeps, tol)
    size = 1e-300
    for a in range(nr):
        size = max(size, abs(Rv[a]))
    worst = _violation(W, Rv, x, goal, m0, n_in, first, nts, mu)
    if worst > 1e-9 * size:
        other = _sweeps(W, Rv, goal, m0, n_in, first, nts, mu, False, sweeps, tol)
        if _violation(W, Rv, other, goal, m0, n_in, first, nts, mu) < worst:
            x = other
    for j in range(nv):
        s = v[j]
        for a in range(nr):
            s += Y[j, a] * x[a]
        qd_out[j] = s
    de = 0.0
    for a in range(nr):
        s = 0.0
        for j in range(nv):
            s += R[a, j] * (v[j] + qd_out[j])
        de += 0.5 * x[a] * s
    for i in range(n_in):
        o = first[i]
        inside[i] = True
        pn_of[i] = x[o]
        pt2 = 0.0
        for t in range(nts[i]):
            pt_of[i, t] = x[o + 1 + t]
            pt2 += x[o + 1 + t] ** 2
        sliding[i] = mu[i] > 0 and x[o] > 0 and np.sqrt(pt2) >= mu[i] * x[o] * (1 - 1e-9)
        if sliding[i]:                                        # (so that P_t is reported as it is: −μ P_n t̂)
            for t in range(nts[i]):
                tdir[i, t] = -x[o + 1 + t] / np.sqrt(pt2)
    return de


@njit
def _sweeps(W, Rv, goal, m0, n_in, first, nts, mu, block, sweeps, tol):
    """Projected Gauss–Seidel's impulses x on y = Rv + W x (:func:`_gauss_seidel`): each entry's normal and
    tangential impulses together (``block``: :func:`_contact_block`), or its normal row and then its tangential
    block projected onto the disc (:func:`_split_update`)."""
    nr = W.shape[0]
    x = np.zeros(nr)
    y = Rv[:nr].copy()
    local = np.zeros(3)
    for _ in range(sweeps):
        moved, largest = 0.0, 0.0
        for a in range(m0):
            if W[a, a] > 0:
                dx = (goal[a] - y[a]) / W[a, a]
                x[a] += dx
                for c in range(nr):
                    y[c] += W[c, a] * dx
                moved, largest = max(moved, abs(dx)), max(largest, abs(x[a]))
        for i in range(n_in):
            o = first[i]
            nt = nts[i] if mu[i] > 0 else 0
            if block:
                _contact_block(W, y, x, o, nt, mu[i], goal[o], local)
            else:
                _split_update(W, y, x, o, nt, mu[i], goal[o], local)
            for a in range(1 + nt):
                d = local[a] - x[o + a]
                x[o + a] = local[a]
                if d != 0.0:
                    for c in range(nr):
                        y[c] += W[c, o + a] * d
                moved = max(moved, abs(d))
            largest = max(largest, abs(x[o]))
        if moved <= tol * max(largest, 1e-300):
            break
    return x


@njit
def _split_update(W, y, x, o, nt, mu, goal, P):
    """One entry's impulses P in a sweep, its rows one after the other: the normal x_n ← max(0, x_n + (goal −
    y_n)/W_nn), then the tangential block x_t ← x_t − B⁻¹ y_t (B its block of W, y_t after the normal's change)
    projected onto the disc ‖x_t‖ ≤ μ x_n."""
    xn = max(0.0, x[o] + (goal - y[o]) / W[o, o])
    dn = xn - x[o]
    P[0] = xn
    if nt == 0:
        return
    yt0 = y[o + 1] + W[o + 1, o] * dn
    yt1 = y[o + 2] + W[o + 2, o] * dn if nt == 2 else 0.0
    xt0, xt1 = x[o + 1], x[o + 2] if nt == 2 else 0.0
    if nt == 1:
        d0 = -yt0 / W[o + 1, o + 1] if W[o + 1, o + 1] > 0 else 0.0
        d1 = 0.0
    else:
        b00, b01, b10, b11 = W[o + 1, o + 1], W[o + 1, o + 2], W[o + 2, o + 1], W[o + 2, o + 2]
        det = b00 * b11 - b01 * b10
        if abs(det) > 1e-300:
            d0 = -(b11 * yt0 - b01 * yt1) / det
            d1 = -(-b10 * yt0 + b00 * yt1) / det
        else:
            d0 = -yt0 / b00 if b00 > 0 else 0.0
            d1 = -yt1 / b11 if b11 > 0 else 0.0
    n0, n1 = xt0 + d0, xt1 + d1
    norm = np.sqrt(n0 * n0 + n1 * n1)
    if norm > mu * xn:
        f = mu * xn / norm
        n0, n1 = n0 * f, n1 * f
    P[1] = n0
    if nt == 2:
        P[2] = n1


@njit
def _violation(W, Rv, x, goal, m0, n_in, first, nts, mu):
    """How far impulses x are from solving the Coulomb impact, as velocities (an impulse's error times its row's
    W_nn): the bilateral rows' velocity change, |min(P_n, v_n − goal)|, the disc's excess, the slip inside the
    disc, and on its edge the impulse's departure from −μ P_n v̂_t."""
    nr = W.shape[0]
    y = Rv[:nr].copy()
    for c in range(nr):
        for a in range(nr):
            y[c] += W[c, a] * x[a]
    worst = 0.0
    for a in range(m0):
        worst = max(worst, abs(y[a] - goal[a]))
    for i in range(n_in):
        o = first[i]
        w = W[o, o]
        worst = max(worst, abs(min(x[o] * w, y[o] - goal[o])))
        if mu[i] <= 0 or nts[i] == 0:
            continue
        pt, vt = 0.0, 0.0
        for t in range(nts[i]):
            pt += x[o + 1 + t] ** 2
            vt += y[o + 1 + t] ** 2
        pt, vt = np.sqrt(pt), np.sqrt(vt)
        edge = mu[i] * max(x[o], 0.0)
        worst = max(worst, (pt - edge) * w)
        if pt < edge * (1.0 - 1e-9):
            worst = max(worst, vt)
        elif vt > 0.0:
            e = 0.0
            for t in range(nts[i]):
                e += (x[o + 1 + t] + edge * y[o + 1 + t] / vt) ** 2
            worst = max(worst, np.sqrt(e) * w)
    return worst
