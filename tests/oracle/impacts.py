"""The impact solve in NumPy (tests only): the oracle of the compiled one (:func:`core.impacts.impact`), as the
step used it before impacts were compiled — M formed by CRBA and inverted, J rebuilt from the link kinematics, the
active set solved by numpy's least squares, the frictional fallback by projected Gauss–Seidel."""
from __future__ import annotations

import numpy as np

from core.contacts import FRICTIONLESS, OPEN, SLIP, STICK

from .rows import constraint_rows
from core.crba import mass_matrix
from core.points import jacobian_at, link_kinematics

__all__ = ["impact", "Bound"]


def perpendicular_basis(direction: np.ndarray) -> np.ndarray:
    """Two unit vectors (3 x 2) orthogonal to ``direction`` and to each other."""
    d = direction / np.linalg.norm(direction)
    helper = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(d, helper)
    e1 /= np.linalg.norm(e1)
    return np.column_stack([e1, np.cross(d, e1)])


class Bound:
    """A joint bound in the impact solve, shaped like a contact and its point."""

    def __init__(self, lim: JointLimit, k: int):
        self.name = self.label = lim.label(k)
        self.friction, self.restitution, self.rest_speed = 0.0, lim.restitution, lim.rest_speed
        self.normal, self.stick, self.holds = lim.rows[k], -1, ()
        self.lim, self.k = lim, k



def contact_point_body(p: ContactPoint, R_WL: np.ndarray, normal: np.ndarray, omega=None,
                       lead: float = 0.0) -> np.ndarray:
    """The body-frame coordinates of the material point at which point ``p`` touches the plane with world unit
    ``normal`` (its sphere's lowest point along the normal; the point itself when its radius is zero), for the
    link rotation R_WL — or, given the link's angular velocity relative to the plane ``omega`` (link frame),
    the one that touches ``lead`` seconds later (to first order: the body-frame normal turns as
    dn/dt = −ω × n). A step holds the point that touches at its middle, so a rolling sphere's contact point is
    held with no bias of first order in the step."""
    if p.radius == 0:
        return p.r
    n = R_WL.T @ normal
    if lead and omega is not None:
        n = n - lead * np.cross(omega, n)
        n /= np.linalg.norm(n)
    return p.r - p.radius * n



def relative_jacobian(model, kin, c: Contact, p: ContactPoint, x: np.ndarray | None = None) -> np.ndarray:
    """The Jacobian (3 x nv) of the velocity of contact point ``p``'s material point where it touches (world
    point ``x``, else its own) relative to the plane's body's material point there."""
    n, _ = c.plane(kin)
    r = contact_point_body(p, kin.R_WL[p.link], n)
    J = jacobian_at(model, kin, p.link, r)
    if c.plane_link >= 0:
        if x is None:
            x = kin.p_WL[p.link] + kin.R_WL[p.link] @ r
        rb = kin.R_WL[c.plane_link].T @ (x - kin.p_WL[c.plane_link])
        J = J - jacobian_at(model, kin, c.plane_link, rb)
    return J



def impact(model, state, touching: list, contact_rows: set, limits: list = ()) -> tuple[np.ndarray, dict]:
    """Resolve an impact at ``state``: the post-impact velocity q̇⁺ and, per point of ``touching`` (the
    (contact, point) pairs that touch: colliding or resting), ``(P_n, P_t vector, v_n⁻, mode)`` with the mode
    after the impact: :data:`OPEN` when it leaves the plane at its rest speed or faster, or faster than 1 % of it
    with no impulse (P_n = 0), else in contact
    (stick, slip or frictionless).

    Impulse–momentum (McClamroch §6; Kearney §3): M (q̇⁺ − q̇⁻) = Jᵀ P over the rows of every active constraint
    that is not a contact (``contact_rows``: the indices of the contacts' constraints) and of the joints the
    touching contacts hold (:attr:`Contact.holds`) — whose velocity the impact leaves unchanged — and of the
    touching points: normal rows with v_n⁺ = −e v_n⁻ (0 for a
    resting point) and P_n ≥ 0, tangential rows with v_t⁺ = 0 while ‖P_t‖ ≤ μ P_n, else a sliding impact with
    P_t = −μ P_n t̂ (t̂ the pre-impact slip direction). Points whose P_n would be negative separate and are
    dropped, one at a time, and a dropped point that the others' impulses leave moving into the plane is taken
    back (an active-set solution of the complementarity conditions: without friction no touching point leaves
    the impact moving into its plane; with friction, sliding impulses along the pre-impact slip can leave a point
    moving in, or even add energy. When they do — about one random eight-corner impact in five, μ = 0.3–1 — the
    impact is solved again as the complementarity problem with Coulomb's cone, :func:`_frictional_impact`).
    ``limits``: (joint limit, bound) pairs at their bounds, solved alike with the rows ±e_j (their info keyed by
    the bound's label). ``info["energy_change"]`` is the kinetic energy the impact changes (≤ 0 but for e = 1,
    where it is zero)."""
    q, v = state.q, state.qd
    kin = link_kinematics(model, q)
    M = mass_matrix(model, q)
    mask = np.array([bool(on) and i not in contact_rows for i, on in enumerate(state.active)], dtype=bool)
    bilateral = [constraint_rows(model, state.t, q, v, mask).J] if mask.any() else []
    held = sorted({j for c, _ in touching for j in c.holds})
    for j in held:                                             # joints an actuator holds through the impact
        row = np.zeros((1, model.nv))
        row[0, j] = 1.0
        bilateral.append(row)
    Jb = np.vstack(bilateral) if bilateral else np.zeros((0, model.nv))
    info = {}
    pts = []
    entries = [(c, p) for c, p in touching] + [(b, b) for b in (Bound(lim, k) for lim, k in limits)]
    for c, p in entries:
        if isinstance(c, Bound):
            Jn = np.zeros(model.nv)
            Jn[c.lim.v] = 1.0 if c.k == 0 else -1.0
            Et, Jt = np.zeros((3, 2)), np.zeros((2, model.nv))
        else:
            n, _ = c.plane(kin)
            Jp = relative_jacobian(model, kin, c, p)
            Jn = n @ Jp
            Et = perpendicular_basis(n)
            Jt = Et.T @ Jp
        vn = float(Jn @ v)
        vt = Jt @ v
        colliding = vn < 0 and not state.active[p.normal]
        target = -c.restitution * vn if colliding and c.restitution * -vn >= c.rest_speed else 0.0
        pts.append({"c": c, "p": p, "Jn": Jn, "Jt": Jt, "Et": Et, "vn": vn, "vt": vt, "target": target,
                    "sliding": False, "in": True})
    Minv = np.linalg.inv(M)
    for _ in range(8 * len(pts) + 8):
        rows, cols, rhs, kinds = [Jb], [Jb], [np.zeros(Jb.shape[0])], []
        for k, d in enumerate(pts):
            if not d["in"]:
                continue
            mu = d["c"].friction
            col = d["Jn"]
            if mu > 0 and d["sliding"]:
                t = d["vt"] / max(np.linalg.norm(d["vt"]), 1e-300)
                col = d["Jn"] - mu * (t @ d["Jt"])
            rows.append(d["Jn"][None])
            cols.append(col[None])
            rhs.append(np.array([d["target"] - d["vn"]]))
            kinds.append((k, "n"))
            if mu > 0 and not d["sliding"]:
                rows.append(d["Jt"])
                cols.append(d["Jt"])
                rhs.append(-d["vt"])
                kinds.extend([(k, "t"), (k, "t")])
        R, C, b = np.vstack(rows), np.vstack(cols), np.concatenate(rhs)
        A = R @ Minv @ C.T
        P = np.linalg.lstsq(A, b, rcond=1e-10)[0] if A.size else np.zeros(0)
        m0 = Jb.shape[0]
        Pn, Pt = {}, {}
        for j, (k, what) in enumerate(kinds):
            if what == "n":
                Pn[k] = P[m0 + j]
            else:
                Pt.setdefault(k, []).append(P[m0 + j])
        worst = min(Pn, key=lambda k: Pn[k], default=None)
        if worst is not None and Pn[worst] < -1e-12 * max(1.0, max(abs(x) for x in Pn.values())):
            pts[worst]["in"] = False                            # it separates: drop it and solve again
            continue
        over = [k for k in Pt if np.linalg.norm(Pt[k]) > pts[k]["c"].friction * max(Pn[k], 0.0) * (1 + 1e-9)
                and np.linalg.norm(pts[k]["vt"]) > 0]
        if over:
            for k in over:
                pts[k]["sliding"] = True                         # outside the friction cone: a sliding impact
            continue
        # a point dropped earlier that the others' impulses leave moving into the plane takes part again (the
        # active set grows as well as shrinks; each point comes back at most four times, so the search ends)
        after = v + Minv @ (C.T @ P) if len(P) else v
        back = [(float(d["Jn"] @ after), k) for k, d in enumerate(pts)
                if not d["in"] and d.get("back", 0) < 4 and float(d["Jn"] @ after) < -1e-9 * (1.0 + abs(d["vn"]))]
        if back:
            k = min(back)[1]
            pts[k]["in"], pts[k]["back"] = True, pts[k].get("back", 0) + 1
            continue
        break
    qd = v + Minv @ (C.T @ P) if len(P) else v.copy()
    if any(d["c"].friction > 0 for d in pts) and (
            any(float(d["Jn"] @ qd) < d["target"] * d["in"] - 1e-9 * (1.0 + abs(d["vn"])) for d in pts)
            or float(qd @ M @ qd) > float(v @ M @ v) * (1 + 1e-9) + 1e-12):
        qd, Pn, Pt = _frictional_impact(Jb, pts, Minv, v)       # the active set left a point moving in, or
    info["energy_change"] = 0.5 * float(qd @ M @ qd - v @ M @ v)  # its sliding impulses added energy
    for k, d in enumerate(pts):
        after = float(d["Jn"] @ qd)
        left = not d["in"] or float(Pn.get(k, 0.0)) <= 0.0      # no impulse: the others' impulses lift it
        if after >= d["c"].rest_speed or (left and after > 0.01 * d["c"].rest_speed):
            mode = OPEN                                         # it rebounds, or separates (core: LIFT_SPEED)
        elif d["p"].stick < 0:
            mode = FRICTIONLESS
        else:
            mode = SLIP if d["sliding"] or not d["in"] else STICK
        if not d["in"]:
            info[(d["c"].name, d["p"].label)] = (0.0, np.zeros(3), d["vn"], mode)
            continue
        pn = float(Pn.get(k, 0.0))
        if d["sliding"]:
            t = d["vt"] / max(np.linalg.norm(d["vt"]), 1e-300)
            pt = -d["c"].friction * pn * (d["Et"] @ t)
        else:
            pt = d["Et"] @ np.asarray(Pt.get(k, [0.0, 0.0]))
        info[(d["c"].name, d["p"].label)] = (pn, pt, d["vn"], mode)
    return qd, info



def _frictional_impact(Jb: np.ndarray, pts: list, Minv: np.ndarray, v: np.ndarray, sweeps: int = 5000,
                       tol: float = 1e-12) -> tuple[np.ndarray, dict, dict]:
    """The impact as the complementarity problem with Coulomb's cone, by projected Gauss–Seidel over every
    touching point (:func:`impact` calls it when its active set leaves a frictional point moving into its plane).

    With the rows R = [J_b; J_n,k; J_t,k] and W = R M⁻¹ Rᵀ, the impulses x give q̇⁺ = q̇⁻ + M⁻¹ Rᵀ x and row
    velocities R q̇⁻ + W x. The bilateral rows keep their velocity (J_b Δq̇ = 0); each point has
    v_n⁺ ≥ target, P_n ≥ 0, P_n (v_n⁺ − target) = 0, and a tangential impulse within the disc ‖P_t‖ ≤ μ P_n
    that stops the slip or, on the disc's edge, opposes it. Sweeps update each bilateral row and each point's
    impulses against the others' latest ones until no impulse moves by more than ``tol`` relative to the largest:
    a point's normal and tangential impulses together (:func:`_block`), and where those sweeps leave the
    conditions violated, its normal row and then its tangential block projected onto the disc, whichever
    violates them less (:func:`_violation`). Returns ``(q̇⁺, P_n by point, P_t (2,) by point)``; the points'
    ``sliding`` flags are set for the impulses on the cone's edge."""
    nb = Jb.shape[0]
    rows = [Jb] + [np.vstack([d["Jn"][None], d["Jt"]]) for d in pts]
    R = np.vstack(rows)
    W = R @ Minv @ R.T
    base = R @ v
    target = base.copy()                                    # bilateral rows: their velocity unchanged
    for k, d in enumerate(pts):
        o = nb + 3 * k
        target[o], target[o + 1:o + 3] = d["target"], 0.0
    mus = [d["c"].friction for d in pts]
    x = _sweeps(W, base, target, nb, mus, True, sweeps, tol)
    worst = _violation(W, base, x, target, nb, mus)
    if worst > 1e-9 * max(np.abs(base).max(), 1e-300):     # (the block sweeps cycled: the separate updates)
        other = _sweeps(W, base, target, nb, mus, False, sweeps, tol)
        if _violation(W, base, other, target, nb, mus) < worst:
            x = other
    Pn, Pt = {}, {}
    for k, d in enumerate(pts):
        o = nb + 3 * k
        d["in"] = True
        Pn[k], Pt[k] = float(x[o]), x[o + 1:o + 3].copy()
        mu = d["c"].friction
        d["sliding"] = mu > 0 and Pn[k] > 0 and float(np.hypot(*Pt[k])) >= mu * Pn[k] * (1 - 1e-9)
        if d["sliding"]:                                    # (so that impact() reports P_t as it is)
            d["vt"] = -Pt[k]
    return v + Minv @ (R.T @ x), Pn, Pt


def _sweeps(W, base, target, nb, mus, block, sweeps, tol):
    """Projected Gauss–Seidel's impulses x on y = base + W x (:func:`_frictional_impact`)."""
    x, y = np.zeros(len(base)), base.copy()                 # y = R q̇⁺ = R q̇⁻ + W x
    for _ in range(sweeps):
        moved, largest = 0.0, 0.0
        for i in range(nb):
            if W[i, i] > 0:
                dx = (target[i] - y[i]) / W[i, i]
                x[i] += dx
                y += W[:, i] * dx
                moved, largest = max(moved, abs(dx)), max(largest, abs(x[i]))
        for k, mu in enumerate(mus):
            o = nb + 3 * k
            sl = slice(o, o + 3) if mu > 0 else slice(o, o + 1)
            if block:
                new = _block(W[sl, sl], y[sl] - W[sl, sl] @ x[sl], target[o], mu)
            else:
                new = x[sl].copy()
                new[0] = max(0.0, x[o] + (target[o] - y[o]) / W[o, o])
                if mu > 0:
                    yt = y[o + 1:o + 3] + W[o + 1:o + 3, o] * (new[0] - x[o])
                    xt = x[o + 1:o + 3] - np.linalg.lstsq(W[o + 1:o + 3, o + 1:o + 3], yt, rcond=1e-12)[0]
                    norm = float(np.hypot(xt[0], xt[1]))
                    new[1:] = xt * (mu * new[0] / norm) if norm > mu * new[0] else xt
            delta = new - x[sl]
            x[sl] += delta
            y += W[:, sl] @ delta
            moved = max(moved, float(np.abs(delta).max()))
            largest = max(largest, abs(x[o]))
        if moved <= tol * max(largest, 1e-300):
            break
    return x


def _violation(W, base, x, target, nb, mus) -> float:
    """How far impulses x are from solving the impact, as velocities (core.impacts._violation)."""
    y = base + W @ x
    worst = float(np.abs(y[:nb] - target[:nb]).max()) if nb else 0.0
    for k, mu in enumerate(mus):
        o = nb + 3 * k
        w = W[o, o]
        worst = max(worst, abs(min(x[o] * w, y[o] - target[o])))
        if mu <= 0:
            continue
        pt, vt = np.linalg.norm(x[o + 1:o + 3]), np.linalg.norm(y[o + 1:o + 3])
        edge = mu * max(x[o], 0.0)
        worst = max(worst, (pt - edge) * w)
        if pt < edge * (1 - 1e-9):
            worst = max(worst, vt)
        elif vt > 0:
            worst = max(worst, np.linalg.norm(x[o + 1:o + 3] + edge * y[o + 1:o + 3] / vt) * w)
    return worst


def _block(W: np.ndarray, r: np.ndarray, goal: float, mu: float) -> np.ndarray:
    """One point's impulses (normal, then tangential) against the others' in projected Gauss–Seidel, ``r`` its row
    velocities without its own impulses: none when r_n ≥ goal; the sticking impulses W P = (goal − r_n, −r_t)
    inside the disc; else sliding, P_t = −μ P_n d with v_n = goal and d the direction of the resulting slip
    (the angle at which v_t ∥ d, bracketed on a grid and bisected)."""
    P = np.zeros(len(r))
    if r[0] >= goal:
        return P
    if len(r) == 1:
        P[0] = (goal - r[0]) / W[0, 0]
        return P
    stick = np.linalg.solve(W, np.concatenate([[goal - r[0]], -r[1:]]))
    if stick[0] >= 0 and np.linalg.norm(stick[1:]) <= mu * stick[0]:
        return stick

    def sliding(d):                                         # (P_n, v_t) sliding along d; P_n < 0: none
        den = W[0, 0] - mu * W[0, 1:] @ d
        if not den > 0:
            return -1.0, None
        pn = (goal - r[0]) / den
        return pn, r[1:] + W[1:, 0] * pn - mu * pn * W[1:, 1:] @ d

    if len(r) == 2:
        for d in (np.array([1.0]), np.array([-1.0])):
            pn, vt = sliding(d)
            if pn >= 0 and vt @ d >= 0:
                return np.concatenate([[pn], -mu * pn * d])
    else:
        def cross(theta):
            d = np.array([np.cos(theta), np.sin(theta)])
            pn, vt = sliding(d)
            return np.nan if pn < 0 else vt[0] * d[1] - vt[1] * d[0]
        grid = np.linspace(0.0, 2.0 * np.pi, 65)
        values = [cross(th) for th in grid]
        for a, b, ga, gb in zip(grid[:-1], grid[1:], values[:-1], values[1:]):
            if not (np.isfinite(ga) and np.isfinite(gb) and ga * gb <= 0):
                continue
            for _ in range(60):
                mid = 0.5 * (a + b)
                gm = cross(mid)
                if not np.isfinite(gm):
                    break
                a, b, ga = (a, mid, ga) if ga * gm <= 0 else (mid, b, gm)
            d = np.array([np.cos(0.5 * (a + b)), np.sin(0.5 * (a + b))])
            pn, vt = sliding(d)
            if pn >= 0 and vt @ d >= 0:
                return np.concatenate([[pn], -mu * pn * d])
    if stick[0] > 0 and np.linalg.norm(stick[1:]) > 0:     # no sliding solution: the sticking impulse, its
        stick[1:] *= mu * stick[0] / np.linalg.norm(stick[1:])   # tangential part brought onto the cone
    return stick
