"""The events of a run as one typed record (Kearney §3: contacts made and broken, impacts, constraints added and
removed at run time; thesis §2.3.4: constraints that break, rank changes of J).

Every event goes through :class:`Event`: the compiled step writes events into a buffer of :data:`EVENT` rows
(numbers only, in the order they happen), :func:`decode` names them after the model (contact points, joint
bounds, constraints), and control programs log their own with :meth:`Event.logged`. The records
(``timeseries.npz``'s ``event_*`` arrays), ``summary.json``, the command line's report and the studio's plots and
event list all read these records.

Kinds (``Event.kind``):

- contacts (:mod:`core.contacts`): ``touchdown`` (an impact that leaves the point in contact: its rows added),
  ``bounce`` (an impact it leaves from), ``lift-off`` (its rows removed), ``slip`` (its stick rows removed; a
  Coulomb force takes over), ``stick`` (its stick rows added back);
- joint limits: ``limit`` (the joint reached its bound and stays on it), ``limit-bounce``, ``limit-release``;
- constraints: ``break`` (beyond its deviation bound, removed), ``rank_deficient`` and ``full_rank`` (the
  constraint Jacobian lost or regained row rank);
- control programs (:mod:`core.programs`): ``watch`` (a quantity a program watches crossed its value),
  ``added``/``removed`` (a program's constraint or control equation), and whatever a program logs (``hop`` …).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["Event", "EVENT", "decode", "KIND_NAMES", "TOUCHDOWN", "BOUNCE", "LIFT_OFF", "SLIP", "STICK", "LIMIT",
           "LIMIT_BOUNCE", "LIMIT_RELEASE", "BREAK", "RANK_DEFICIENT", "FULL_RANK", "WATCH", "CONTACT_KINDS"]

TOUCHDOWN, BOUNCE, LIFT_OFF, SLIP, STICK, LIMIT, LIMIT_BOUNCE, LIMIT_RELEASE, BREAK, RANK_DEFICIENT, FULL_RANK, \
    WATCH = range(12)
KIND_NAMES = ("touchdown", "bounce", "lift-off", "slip", "stick", "limit", "limit-bounce", "limit-release", "break",
              "rank_deficient", "full_rank", "watch")
CONTACT_KINDS = ("touchdown", "bounce", "lift-off", "slip", "stick")
_MODES = ("open", "stick", "slip", "frictionless")

#: One event as the compiled step writes it: time ``t``, ``kind`` (the codes above), ``index`` — the contact
#: point's slot (contacts), ``2 · limit + bound`` (joint limits; bound 0 lower, 1 upper), the constraint
#: (break), the watch (programs), the rank of J (rank events) — and its numbers: an impact's normal
#: ``impulse``, ``tangential_impulse`` and the normal ``velocity`` before it, the point's ``mode`` after it
#: (:data:`core.contacts.OPEN` …), the ``force`` at a lift-off, slip or release, the deviation at a break, the
#: rows at a rank change, a watched quantity's value.
EVENT = np.dtype([("t", np.float64), ("kind", np.int64), ("index", np.int64), ("impulse", np.float64),
                  ("tangential_impulse", np.float64), ("velocity", np.float64), ("force", np.float64),
                  ("mode", np.int64), ("value", np.float64)], align=True)

_NAN = math.nan


@dataclass(frozen=True)
class Event:
    """One event of a run (immutable). ``t`` (s) and ``kind`` (module docstring); ``what`` it concerns: a contact
    point ``<contact>.<i>``, a joint bound ``<joint>.<lower|upper>``, a constraint's name, ``J`` for rank changes,
    or ``<program>.<watch>``; then, where they apply:

    - ``contact``, ``joint``, ``bound``, ``constraint``, ``program``: the names behind ``what``;
    - an impact: ``impulse`` (N·s, or N·m·s at a hinge's limit: ``unit``), ``tangential_impulse``, the normal
      ``velocity`` before it (m/s), ``restitution`` and the point's ``mode`` after it;
    - ``force``: the normal force at a lift-off, the tangential force at a slip, the force (or torque) on a limit
      at its release (N or N·m, ``unit``); ``normal_force`` the normal force at a slip;
    - a break: ``deviation`` and ``max_deviation``; a rank change: ``rank`` of J, its ``rows`` and the
      ``formulation``;
    - a watch: ``value`` of the watched quantity;
    - ``added``, ``removed``: the constraint rows (or control equations) it added or removed;
    - ``info``: further numbers a program logged with it, as ``((key, value), …)``."""
    t: float
    kind: str
    what: str = ""
    contact: str = ""
    joint: str = ""
    bound: str = ""
    constraint: str = ""
    program: str = ""
    impulse: float = _NAN
    tangential_impulse: float = _NAN
    velocity: float = _NAN
    restitution: float = _NAN
    mode: str = ""
    force: float = _NAN
    normal_force: float = _NAN
    unit: str = ""
    deviation: float = _NAN
    max_deviation: float = _NAN
    rank: int = -1
    rows: int = -1
    formulation: str = ""
    value: float = _NAN
    added: tuple = ()
    removed: tuple = ()
    info: tuple = field(default=())

    @classmethod
    def logged(cls, t: float, kind: str, program: str, **fields_) -> "Event":
        """An event a control program logs: known fields by name (``constraint=``, ``added=`` …), any other number
        or text into ``info`` (a hop's ``speed`` …)."""
        known = {f.name for f in fields(cls)}
        mine = {k: v for k, v in fields_.items() if k in known}
        extra = tuple((k, v) for k, v in fields_.items() if k not in known)
        for key in ("added", "removed"):
            if key in mine:
                mine[key] = tuple(mine[key])
        what = mine.pop("what", mine.get("constraint") or program)
        return cls(float(t), kind, what, program=program, info=extra, **mine)

    def get(self, key: str, default=None):
        """A field or a logged number by name (``None``-like ``default`` when it does not apply)."""
        if key == "type":
            return self.kind
        for k, v in self.info:
            if k == key:
                return v
        value = getattr(self, key, default)
        if value is None or value == "" or value == () or (isinstance(value, float) and math.isnan(value)) \
                or (key in ("rank", "rows") and value == -1):
            return default
        return value

    @property
    def reading(self) -> tuple[float, str, str]:
        """The number an event list shows for it: ``(value, what it is, unit)`` — an impact's impulse, the force at a
        lift-off, slip or release, a break's deviation, the rank at a rank change, a hop's forward speed (NaN when
        none)."""
        kind = self.kind
        if kind in ("touchdown", "bounce", "limit", "limit-bounce"):
            return self.impulse, "impulse", self.unit or "N·s"
        if kind == "lift-off":
            quantity = "normal force (left at an impact)" if self.force == 0.0 else "normal force"
            return self.force, quantity, "N"
        if kind == "slip":
            return self.force, "tangential force", "N"
        if kind == "limit-release":
            return self.force, "force", self.unit or "N·m"
        if kind == "break":
            return self.deviation, "deviation", "m"
        if kind == "rank_deficient":
            return float(self.rank), "rank of J", ""
        if kind == "watch":
            return self.value, "value", ""
        speed = self.get("speed")
        if kind == "hop" and speed is not None:
            return float(speed), "forward speed", "m/s"
        height = self.get("height")
        if kind == "apex" and height is not None:
            return float(height), "height", "m"
        return _NAN, "", ""

    @property
    def value_text(self) -> str:
        """The reading with its unit ("7.564 N·s"), or "" when the event has none."""
        value, _, unit = self.reading
        if not math.isfinite(value):
            return ""
        return f"{_number(value)} {unit}".strip()

    @property
    def text(self) -> str:
        """A sentence that says it all: "t = 0.4284 s: bounce of ground.0 — impulse 7.564 N·s, …"."""
        kind = self.kind.replace("_", " ")
        if self.kind == "rank_deficient":
            head = f"the constraint Jacobian lost rank ({self.rank} of {self.rows} rows independent)"
        elif self.kind == "full_rank":
            head = "the constraint Jacobian has full rank again"
        elif self.kind == "break":
            head = f"constraint {self.what!r} broke"
        else:
            head = f"{kind} of {self.what}" if self.what else kind
        parts = []
        value, quantity, _ = self.reading
        if self.value_text and self.kind != "rank_deficient":
            parts.append(f"{quantity} {self.value_text}")
        if self.kind in ("touchdown", "bounce", "limit", "limit-bounce") and math.isfinite(self.velocity):
            parts.append(f"normal velocity {_number(self.velocity)} {'rad/s' if self.unit == 'N·m·s' else 'm/s'}")
        if self.tangential_impulse and math.isfinite(self.tangential_impulse):
            parts.append(f"tangential impulse {_number(self.tangential_impulse)} N·s")
        if self.mode and self.kind in ("touchdown", "bounce"):
            parts.append(f"then {self.mode}")
        if self.kind == "break" and math.isfinite(self.max_deviation):
            parts.append(f"over its bound {_number(self.max_deviation)}")
        if self.added:
            parts.append("added " + ", ".join(self.added))
        if self.removed:
            parts.append("removed " + ", ".join(self.removed))
        return f"t = {self.t:.6g} s: {head}" + (" — " + "; ".join(parts) if parts else "")

    def as_dict(self) -> dict:
        """The fields that apply, as a dict for JSON (``type`` for the kind; numbers that do not apply left out)."""
        out = {"t": self.t, "type": self.kind}
        for f in fields(self):
            if f.name in ("t", "kind", "info"):
                continue
            value = self.get(f.name)
            if value is not None:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        for k, v in self.info:
            out[k] = v
        return out


def _number(v: float) -> str:
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.3e}".replace("-", "−")
    return f"{v:.4g}".replace("-", "−")


def decode(model, buffer: np.ndarray, formulation: str = "", watches: tuple = ()) -> list[Event]:
    """The :class:`Event` records of the compiled step's ``buffer`` (rows of :data:`EVENT`), named after
    ``model`` (``watches``: (program, watch) of each row of the programs' watch table)."""
    out = []
    points = [(c, p) for c in model.contacts for p in c.points]
    for row in buffer:
        kind, i, t = int(row["kind"]), int(row["index"]), float(row["t"])
        name = KIND_NAMES[kind]
        if kind <= STICK:
            c, p = points[i]
            rows = [p.label] + ([f"{p.label}.stick"] if p.stick >= 0 else [])
            base = dict(what=p.label, contact=c.name)
            if kind in (TOUCHDOWN, BOUNCE):
                mode = int(row["mode"])
                added = () if kind == BOUNCE else tuple(rows[:1 + (mode == 1)])
                out.append(Event(t, name, impulse=float(row["impulse"]),
                                 tangential_impulse=float(row["tangential_impulse"]), velocity=float(row["velocity"]),
                                 restitution=c.restitution, mode=_MODES[mode], unit="N·s", added=added, **base))
            elif kind == LIFT_OFF:
                out.append(Event(t, name, force=float(row["force"]), unit="N", removed=tuple(rows), **base))
            elif kind == SLIP:
                out.append(Event(t, name, force=float(row["force"]), normal_force=float(row["value"]), unit="N",
                                 removed=(f"{p.label}.stick",), **base))
            else:
                out.append(Event(t, name, added=(f"{p.label}.stick",), **base))
        elif kind <= LIMIT_RELEASE:
            lim, k = model.limits[i // 2], i % 2
            label = lim.label(k)
            base = dict(what=label, joint=lim.joint, bound=("lower", "upper")[k])
            if kind == LIMIT_RELEASE:
                out.append(Event(t, name, force=float(row["force"]), unit="N·m" if lim.angular else "N",
                                 removed=(label,), **base))
            else:
                out.append(Event(t, name, impulse=float(row["impulse"]), velocity=float(row["velocity"]),
                                 restitution=lim.restitution, unit="N·m·s" if lim.angular else "N·s",
                                 added=(label,) if kind == LIMIT else (), **base))
        elif kind == BREAK:
            c = model.constraints[i]
            out.append(Event(t, name, what=c.name, constraint=c.name, deviation=float(row["value"]),
                             max_deviation=float(c.max_deviation), removed=(c.name,)))
        elif kind in (RANK_DEFICIENT, FULL_RANK):
            out.append(Event(t, name, what="J", rank=i, rows=int(row["mode"]), formulation=formulation))
        else:
            program, watch = watches[i] if i < len(watches) else ("", f"watch {i}")
            out.append(Event(t, name, what=f"{program}.{watch}", program=program, value=float(row["value"])))
    return out
