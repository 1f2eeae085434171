"""The figures of thesis §3.4 drawn from a sweep's rows and traces (matplotlib, Agg backend, PNG). Each figure
is drawn only when the grid holds what it needs; :func:`draw_figures` returns the files written.

- fig3_3_pd_l2_vs_k.png — PD L2 error against bandwidth k for each gain level (fig. 3.3).
- fig3_4_pd_fast_sinusoid.png, fig3_6_mixture_fast_sinusoid.png — PD and a mixture compensator (M4 if present)
  on the fastest sinusoid: a) joint errors against time, b) desired (line) and actual (circles 20 ms apart)
  paths in joint space over the last 8 s (fig. 3.4, 3.6).
- fig3_5_normalized_errors.png — normalized L2 errors by controller, mean ± 1 s.d. over tasks (fig. 3.5).
- fig3_7_adaptation_gain.png — normalized errors for each η; unstable trials counted and marked (fig. 3.7).
- fig3_8_gravity.png — a) absolute L2 errors with and without gravity, b) normalized errors with gravity.
- fig3_9_viscosity.png — normalized errors on arms with nonlinear viscosity (scenes with force elements).
- fig3_10_parameters.png — adaptive parameters of the mixture compensator against time (fig. 3.10).
- fig3_2_trajectories.png — the desired trajectories (fig. 3.2): a) the joint-space areas the grid's trajectories
  cover, b) the Sanner–Slotine sinusoid, c) a point-to-point sequence, circles 20 ms apart (drawn from the spec
  alone, whatever was run).
- fig_variants.png — for a grid with ``variants``: the mean normalized error of each controller (and η) under
  each variant, unstable trials counted; the thesis's figures are drawn only for grids without variants.

Figures with IDSL bars say in a caption which parameters IDSL adapted on each arm and with which gain (the
``parameterization`` and ``gamma`` columns of the results).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .trial import controller_key, trial_id

__all__ = ["draw_figures"]

DEFAULT_LABELS = ("pd", "computed_torque", "idsl")


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _base(label: str) -> str:
    return label.split("_kp")[0]


def _default_gains(row) -> bool:
    return "_kp" not in row["controller"]


def _eta_ref(rows) -> float | None:
    etas = sorted({r["eta"] for r in rows if r["eta"] is not None})
    if not etas:
        return None
    return 0.01 if any(abs(e - 0.01) < 1e-12 for e in etas) else etas[0]


def _eta_ok(row, eta) -> bool:
    return row["eta"] is None or eta is None or abs(row["eta"] - eta) < 1e-12


def _controller_order(rows) -> list[str]:
    return sorted(dict.fromkeys(r["controller"] for r in rows), key=controller_key)


def idsl_caption(rows, arms=None) -> str:
    """What the figure's IDSL bars adapted, per arm: e.g. "IDSL adapts, slotine_li: custom(a1,a2,a3,a4), Γ = η·1
    (Slotine & Li's parameters, as the thesis)"; empty when there is no IDSL row."""
    seen: dict = {}
    for r in rows:
        if _base(r["controller"]).startswith("idsl") and r.get("parameterization") and (arms is None
                                                                                        or r["arm"] in arms):
            gamma = "Γ = η·1" if r.get("gamma") == "eta*I" else f"Γ = {r.get('gamma', '')}"
            seen.setdefault(r["arm"], {}).setdefault(display(_base(r["controller"])),
                                                     f"{r['parameterization']}, {gamma}")
    if not seen:
        return ""
    parts = []
    for arm, labels in sorted(seen.items()):
        parts.append(f"{arm}: " + "; ".join(f"{lab} {what}" for lab, what in labels.items()))
    book = any("custom(a1,a2,a3,a4" in w for labels in seen.values() for w in labels.values())
    return ("IDSL adapts — " + " | ".join(parts)
            + (" (custom a1…a4: Slotine & Li's parameterization, as in the thesis)" if book else ""))


def _save(fig, path: Path, caption: str = "") -> Path:
    fig.tight_layout()
    if caption:
        fig.subplots_adjust(bottom=max(fig.subplotpars.bottom, 0.22))
        fig.text(0.5, 0.01, caption, ha="center", va="bottom", fontsize=6.5, wrap=True)
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _bars(ax, rows, controllers, title, ylabel="normalized L2 error", value="normalized_error"):
    """Mean ± s.d. bars per controller; unstable trials are counted above the bar with a red arrow."""
    x = np.arange(len(controllers))
    for i, c in enumerate(controllers):
        sel = [r for r in rows if r["controller"] == c]
        vals = np.array([r[value] for r in sel if not r["unstable"] and math.isfinite(r[value])])
        n_bad = sum(r["unstable"] for r in sel)
        mean = vals.mean() if vals.size else 0.0
        sd = vals.std() if vals.size > 1 else 0.0
        ax.bar(i, mean, color="0.55" if c.startswith("pd") else "tab:blue", width=0.65)
        if vals.size > 1:
            ax.errorbar(i, mean, yerr=sd, color="k", capsize=3, lw=1)
        if n_bad:                                            # thesis fig. 3.7: arrows mark unstable trials
            ax.annotate(f"{n_bad}/{len(sel)}\nunstable", xy=(i, 0.78), xytext=(i, 0.97), xycoords=trans(ax),
                        textcoords=trans(ax), ha="center", va="top", fontsize=7, color="tab:red",
                        arrowprops=dict(arrowstyle="-|>", color="tab:red", lw=1.2))
    if value == "normalized_error":
        ax.axhline(1.0, color="k", ls="--", lw=0.8)
        ax.set_ylim(0.0, max(1.4, ax.get_ylim()[1]))
    ax.set_xticks(x, [display(c) for c in controllers], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)


def trans(ax):
    """x in data coordinates, y as a fraction of the axes."""
    from matplotlib.transforms import blended_transform_factory
    return blended_transform_factory(ax.transData, ax.transAxes)


def display(label: str) -> str:
    """Controller labels as the thesis writes them: PD, IDSL, M4, M4 (RLS), CT; gain suffixes kept."""
    base, _, gains = label.partition("_kp")
    name = {"pd": "PD", "idsl": "IDSL", "computed_torque": "CT", "idsl_base": "IDSL (base)",
            "idsl_standard": "IDSL (standard)"}.get(base)
    if name is None:
        name = base.upper().replace("_RLS", " (RLS)")
    return name + (f" kp{gains}" if gains else "")


def _traces(out: Path, row) -> dict | None:
    p = out / "traces" / f"{trial_id(row)}.npz"
    if not p.exists():
        return None
    with np.load(p) as f:
        return {k: f[k] for k in f.files}


def fig3_3(out, rows, res):
    pd = [r for r in rows if _base(r["controller"]) == "pd" and not r["gravity"] and r["arm"] in _plain(res)]
    if len({r["k"] for r in pd}) < 2:
        return None
    trajs = list(dict.fromkeys(r["trajectory"] for r in pd))
    traj = next((t for t in trajs if t.split("@")[0] == "bandwidth"), trajs[0])
    arms = sorted({r["arm"] for r in pd}, key=lambda a: (a != "uno_kawato", a))   # the human arm first
    plt = _plt()
    fig, axes = plt.subplots(1, len(arms), figsize=(4.2 * len(arms), 3.4), squeeze=False)
    for ax, arm in zip(axes[0], arms):
        for label in _controller_order([r for r in pd if r["arm"] == arm]):
            sel = sorted([r for r in pd if r["arm"] == arm and r["trajectory"] == traj and r["controller"] == label],
                         key=lambda r: r["k"])
            if not sel:
                continue
            gains = "K_p = 9, K_d = 1" if label == "pd" else label.replace("pd_kp", "K_p = ").replace("_kd", ", K_d = ")
            ax.plot([r["k"] for r in sel], [r["l2_error"] for r in sel], "o-", ms=3, label=gains)
        low = sorted([r for r in pd if r["arm"] == arm and r["trajectory"] == traj and r["controller"] == "pd"],
                     key=lambda r: r["k"])
        if low:
            ax.annotate("", xy=(low[-1]["k"], low[-1]["l2_error"]),
                        xytext=(low[-1]["k"] - 0.15, low[-1]["l2_error"] * 1.25 + 0.02),
                        arrowprops=dict(arrowstyle="->"))
        ax.set_xlabel("bandwidth k")
        ax.set_ylabel("L2 error (rad)")
        ax.set_title(f"PD, {arm} arm, {traj}", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 3.3: L2 error of PD control vs movement bandwidth", fontsize=10)
    return _save(fig, out / "fig3_3_pd_l2_vs_k.png")


def _plain(res) -> set:
    """Arms without external force elements."""
    return {a for a, f in res.arm_has_forces.items() if not f}


def _fast_sinusoid(rows, res):
    """(trajectory, k) of the fastest sinusoid task without external forces."""
    sin = [r for r in rows if res.trajectories.get(r["trajectory"], {}).get("type") == "sinusoid"
           and not r["gravity"] and r["arm"] in _plain(res)]
    if not sin:
        return None
    trajs = [t for t in dict.fromkeys(r["trajectory"] for r in sin) if t.split("@")[0] == "sanner_slotine"] \
        or [sin[0]["trajectory"]]
    k = max(r["k"] for r in sin if r["trajectory"] == trajs[0])
    return trajs[0], k


def _mixture_label(rows) -> str | None:
    labels = [r["controller"] for r in rows if r["controller"].startswith("m") and "_kp" not in r["controller"]]
    if not labels:
        return None
    return "m4" if "m4" in labels else labels[0]


def _time_and_joint_space(out, rows, res, label, name, title):
    task = _fast_sinusoid(rows, res)
    if task is None or label is None:
        return None
    traj, k = task
    eta = _eta_ref(rows)
    sel = [r for r in rows if r["trajectory"] == traj and r["k"] == k and not r["gravity"]
           and r["controller"] == label and _eta_ok(r, eta)]
    runs = [(r, _traces(out, r)) for r in sorted(sel, key=lambda r: r["arm"])]
    runs = [(r, t) for r, t in runs if t is not None and t["t"].size]
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.3 * len(runs)), squeeze=False)
    for (r, tr), (ax1, ax2) in zip(runs, axes):
        t, e = tr["t"], tr["error"]
        for j in range(e.shape[1]):
            ax1.plot(t, e[:, j], lw=0.7, label=["shoulder", "elbow", "joint 3", "joint 4"][min(j, 3)])
        ax1.set_xlabel("t (s)")
        ax1.set_ylabel("joint angle error (rad)")
        ax1.legend(fontsize=7, loc="upper right")
        ax1.set_title(f"a) {r['arm']} arm: errors (L2 over 30–40 s = {r['l2_error']:.3g} rad)", fontsize=9)
        last = t >= t[-1] - 8.0
        ax2.plot(tr["desired"][last, 0], tr["desired"][last, 1], "k-", lw=1, label="desired")
        ax2.plot(tr["q"][last, 0], tr["q"][last, 1], "o", ms=2.5, mfc="none", mec="tab:red", mew=0.6,
                 label="actual (every 20 ms)")
        ax2.set_xlabel("shoulder (rad)")
        ax2.set_ylabel("elbow (rad)")
        ax2.set_aspect("equal", adjustable="datalim")
        ax2.legend(fontsize=7, loc="upper right")
        ax2.set_title(f"b) joint space, t = {t[-1] - 8:.0f}–{t[-1]:.0f} s", fontsize=9)
    fig.suptitle(f"{title} ({traj}, k = {k:g})", fontsize=10)
    return _save(fig, out / name)


def fig3_4(out, rows, res):
    return _time_and_joint_space(out, rows, res, "pd", "fig3_4_pd_fast_sinusoid.png",
                                 "Fig. 3.4: low-gain PD (K_p = 9, K_d = 1) on a fast sinusoid")


def fig3_6(out, rows, res):
    label = _mixture_label(rows)
    return _time_and_joint_space(out, rows, res, label, "fig3_6_mixture_fast_sinusoid.png",
                                 f"Fig. 3.6: mixture compensator {display(label) if label else ''} on a fast sinusoid")


def _adaptive_rows(rows, res, arms, gravity=False, eta="ref"):
    eta = _eta_ref(rows) if eta == "ref" else eta
    return [r for r in rows if r["arm"] in arms and r["gravity"] == gravity and _default_gains(r)
            and r["k"] > 0 and _eta_ok(r, eta) and r["controller"] not in ("pd",)]


def fig3_5(out, rows, res):
    arms = sorted(_plain(res) & {r["arm"] for r in rows})
    sel = _adaptive_rows(rows, res, arms)
    if not sel:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(arms), figsize=(4.5 * len(arms), 3.6), squeeze=False)
    for ax, arm in zip(axes[0], arms):
        a = [r for r in sel if r["arm"] == arm]
        n_tasks = len({(r["trajectory"], r["k"]) for r in a})
        _bars(ax, a, _controller_order(a), f"{arm} arm ({n_tasks} tasks, η = {_eta_ref(rows):g})")
    fig.suptitle("Fig. 3.5: normalized L2 errors (L2 / L2 of PD with the same gains), no external forces",
                 fontsize=10)
    return _save(fig, out / "fig3_5_normalized_errors.png", idsl_caption(rows, arms))


def fig3_7(out, rows, res):
    etas = sorted({r["eta"] for r in rows if r["eta"] is not None}, reverse=True)
    if len(etas) < 2:
        return None
    plain = sorted(_plain(res) & {r["arm"] for r in rows})
    arm = "uno_kawato" if "uno_kawato" in plain else (plain[0] if plain else None)
    if arm is None:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(etas), figsize=(3.8 * len(etas), 3.6), squeeze=False, sharey=True)
    for n, (ax, eta) in enumerate(zip(axes[0], etas)):
        a = [r for r in _adaptive_rows(rows, res, [arm], eta=eta) if r["eta"] is not None]
        _bars(ax, a, _controller_order(a), f"{'abcdefgh'[n]}) η = {eta:g}")
    fig.suptitle(f"Fig. 3.7: normalized L2 errors, {arm} arm, for each adaptation gain\n(unstable trials are "
                 "left out of the bars and marked with arrows)", fontsize=9)
    return _save(fig, out / "fig3_7_adaptation_gain.png", idsl_caption(rows, [arm]))


def fig3_8(out, rows, res):
    if {r["gravity"] for r in rows} != {False, True}:
        return None
    arms = sorted(_plain(res) & {r["arm"] for r in rows})
    eta = _eta_ref(rows)
    plt = _plt()
    fig, axes = plt.subplots(len(arms), 2, figsize=(10, 3.5 * len(arms)), squeeze=False)
    for (ax1, ax2), arm in zip(axes, arms):
        a = [r for r in rows if r["arm"] == arm and _default_gains(r) and r["k"] > 0 and _eta_ok(r, eta)]
        controllers = _controller_order(a)
        x = np.arange(len(controllers))
        for off, grav, colour in ((-0.2, False, "tab:blue"), (0.2, True, "tab:orange")):
            means = [np.nanmean([r["l2_error"] for r in a if r["controller"] == c and r["gravity"] == grav
                                 and not r["unstable"]] or [np.nan]) for c in controllers]
            ax1.bar(x + off, means, width=0.4, color=colour, label="gravity" if grav else "no gravity")
        ax1.set_xticks(x, [display(c) for c in controllers], rotation=45, ha="right", fontsize=8)
        ax1.set_ylabel("L2 error (rad)")
        ax1.legend(fontsize=7)
        ax1.set_title(f"a) {arm} arm: absolute L2 errors", fontsize=9)
        g = [r for r in a if r["gravity"] and r["controller"] != "pd"]
        _bars(ax2, g, _controller_order(g), f"b) {arm} arm: normalized errors with gravity")
    fig.suptitle("Fig. 3.8: gravity as an unmodelled external force", fontsize=10)
    return _save(fig, out / "fig3_8_gravity.png", idsl_caption(rows, arms))


def fig3_9(out, rows, res):
    arms = sorted({a for a, f in res.arm_has_forces.items() if f} & {r["arm"] for r in rows})
    if not arms:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(arms), figsize=(4.5 * len(arms), 3.6), squeeze=False)
    for ax, arm in zip(axes[0], arms):
        a = _adaptive_rows(rows, res, [arm])
        _bars(ax, a, _controller_order(a), f"{arm}")
    fig.suptitle("Fig. 3.9: external forces: nonlinear viscosity, normalized errors", fontsize=10)
    return _save(fig, out / "fig3_9_viscosity.png", idsl_caption(rows, arms))


def fig3_10(out, rows, res):
    label = _mixture_label(rows)
    task = _fast_sinusoid(rows, res)
    if label is None or task is None:
        return None
    traj, k = task
    eta = _eta_ref(rows)
    sel = [r for r in rows if r["controller"] == label and r["trajectory"] == traj and r["k"] == k
           and not r["gravity"] and _eta_ok(r, eta)]
    runs = [(r, _traces(out, r)) for r in sorted(sel, key=lambda r: r["arm"])]
    runs = [(r, t) for r, t in runs if t is not None and t["parameters"].size]
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 3.6), squeeze=False)
    for ax, (r, tr) in zip(axes[0], runs):
        P = tr["parameters"]
        n = int(round(math.sqrt(P.shape[1] / 2 / max(1, int(label[1:].split("_")[0])))))   # W is n x 2nN
        idx = np.argsort(-P.std(axis=0))[:8]
        for j in idx:
            row, col = divmod(int(j), P.shape[1] // max(n, 1))
            expert, part = divmod(col, 2 * n)
            name = f"{'A' if part < n else 'B'}{expert + 1}[{row},{part % n}]"
            ax.plot(tr["parameter_t"], P[:, j], lw=0.8, label=name)
        ax.set_xlabel("t (s)")
        ax.set_ylabel("parameter value")
        ax.legend(fontsize=6, ncol=2)
        ax.set_title(f"{display(label)}, {r['arm']} arm ({traj}, k = {k:g}, η = {r['eta']:g})", fontsize=9)
    fig.suptitle("Fig. 3.10: adapting parameters of a mixture compensator (the 8 that vary most)", fontsize=10)
    return _save(fig, out / "fig3_10_parameters.png")


def fig3_2(out, rows, res):
    """Fig. 3.2: a) the joint-space areas covered by the grid's trajectories, b) the Sanner–Slotine sinusoid
    (shoulder 0.75π, elbow 2π rad/s, eq. 3.38–3.39) and c) a point-to-point sequence (eq. 3.40–3.43), circles
    20 ms apart, at k = 1."""
    from ..control.trajectories import PointToPoint, Sinusoid
    from ..scene.schema import TrajectorySpec
    from pydantic import TypeAdapter
    from ..control.trajectories import from_spec
    adapter = TypeAdapter(TrajectorySpec)
    built = {name: from_spec(adapter.validate_python({**t, "time_scale": 1.0}))
             for name, t in res.trajectories.items() if t.get("type") in ("sinusoid", "point_to_point")}
    built = {n: t for n, t in built.items() if t.n == 2}
    if not built:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    colours = {}
    for name, traj in built.items():
        area = name.split("@")[1] if "@" in name else ""
        colour = colours.setdefault(area, f"C{len(colours)}")
        span = traj.duration if isinstance(traj, PointToPoint) else 8.0      # the sinusoids repeat after 8 s
        q = traj.sample(np.linspace(0.0, span, 1500))
        axes[0].plot(q[:, 0], q[:, 1], "-", color=colour, lw=0.8, alpha=0.8,
                     label=(f"area {area}" if area else None) if name.split("@")[0] == "sanner_slotine" else None)
    axes[0].set_title("a) joint-space areas of the grid's trajectories", fontsize=9)
    for ax, kind in ((axes[1], Sinusoid), (axes[2], PointToPoint)):
        pick = next(((n, t) for n, t in built.items() if isinstance(t, kind)
                     and n.split("@")[0] in ("sanner_slotine", "point_to_point")), None) \
            or next(((n, t) for n, t in built.items() if isinstance(t, kind)), None)
        if pick is None:
            ax.set_visible(False)
            continue
        name, traj = pick
        span = 8.0 if kind is Sinusoid else min(traj.duration, 4.0)     # one period of 0.75π and 2π rad/s
        fine = traj.sample(np.linspace(0.0, span, 2000))
        dots = traj.sample(np.arange(0.0, span + 1e-9, 0.02))
        ax.plot(fine[:, 0], fine[:, 1], "k-", lw=0.8)
        ax.plot(dots[:, 0], dots[:, 1], "o", ms=3, mfc="none", mec="tab:red", mew=0.6)
        ax.set_title(("b) sinusoid " if kind is Sinusoid else "c) point-to-point ") + f"{name}, "
                     f"{span:.3g} s, circles 20 ms apart", fontsize=9)
    for ax in axes:
        ax.set_xlabel("shoulder θ1 (rad)")
        ax.set_ylabel("elbow θ2 (rad)")
        ax.set_aspect("equal", adjustable="datalim")
    if colours and any(colours):
        axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 3.2: desired trajectories for tracking (k = 1)", fontsize=10)
    return _save(fig, out / "fig3_2_trajectories.png")


def fig_variants(out, rows, res):
    """Mean normalized error per controller (and η) under each variant of the grid; unstable trials counted."""
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    if len(variants) < 2 and not res.spec.variants:
        return None
    labels = [c for c in _controller_order(rows) if _base(c) != "pd" and _default_gains({"controller": c})]
    etas = sorted({r["eta"] for r in rows if r["eta"] is not None})
    keys = [(c, e) for c in labels for e in (etas if any(r["eta"] is not None for r in rows if r["controller"] == c)
                                             else [None])]
    groups = sorted({(r["arm"], r["gravity"]) for r in rows})
    plt = _plt()
    fig, axes = plt.subplots(len(groups), 1, figsize=(max(8.0, 0.5 * len(keys) * len(variants) / 2 + 4),
                                                      3.4 * len(groups)), squeeze=False)
    width = 0.8 / len(variants)
    for ax, (arm, gravity) in zip(axes[:, 0], groups):
        top = 0.0
        for j, v in enumerate(variants):
            for i, (c, e) in enumerate(keys):
                sel = [r for r in rows if r["variant"] == v and r["arm"] == arm and r["gravity"] == gravity
                       and r["controller"] == c and (e is None or r["eta"] == e)]
                vals = np.array([r["normalized_error"] for r in sel if r["status"] == "ok"
                                 and math.isfinite(r["normalized_error"])])
                mean = vals.mean() if vals.size else 0.0
                x = i + (j - (len(variants) - 1) / 2) * width
                ax.bar(x, mean, width=width * 0.95, color=f"C{j}", label=v if i == 0 else None)
                top = max(top, mean)
                bad = sum(r["status"] == "unstable" for r in sel)
                if bad:
                    ax.text(x, mean, f"{bad}✗", ha="center", va="bottom", fontsize=6, color="tab:red")
        ax.set_xticks(np.arange(len(keys)), [display(c) + ("" if e is None else f"\nη={e:g}") for c, e in keys],
                      fontsize=7)
        ax.set_ylabel("normalized L2 (mean)")
        ax.set_title(f"{arm} arm, {'gravity' if gravity else 'no gravity'} (✗: unstable trials, left out)",
                     fontsize=9)
        ax.legend(fontsize=7, ncol=min(4, len(variants)))
    fig.suptitle(f"Variants of {Path(res.source).name}", fontsize=10)
    return _save(fig, out / "fig_variants.png")


def draw_figures(out, rows, res) -> list[Path]:
    """Every figure the rows support; returns the paths written."""
    out = Path(out)
    written = []
    if res.spec.variants:
        return [p for p in (fig3_2(out, rows, res), fig_variants(out, rows, res)) if p is not None]
    for f in (fig3_2, fig3_3, fig3_4, fig3_5, fig3_6, fig3_7, fig3_8, fig3_9, fig3_10):
        p = f(out, rows, res)
        if p is not None:
            written.append(p)
    return written
