"""The run's events as the studio shows them: contact events (touchdown, bounce, lift-off, slip, stick), joint
limits (limit, limit-bounce, limit-release), control programs' events (hop, added, removed), broken
constraints and rank changes of J, from ``core.Simulation.events`` — as marks on the plots' time axis and rows of
the event list.

Thread: any; no Qt. The worker turns each event of the core's log into a frozen :class:`EventMark`
(:func:`event_mark`) and sends the new ones in its sample batches; the GUI keeps them in one bounded
:class:`EventLog` (the plots dock owns it, the event list reads it), which follows the run: a reset or a restart
starts an empty log and keeps the previous run's events as the earlier try (drawn faded, like the earlier try's
curves), and going back in time and running on from there drops the events after that time (they become the
earlier try).

Memory: at most ``capacity`` events (default :data:`CAPACITY`, 10 000; the oldest go first, and
:attr:`EventLog.dropped` counts them), each a few hundred bytes.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

__all__ = ["EventMark", "EventLog", "event_mark", "describe", "KIND_COLOURS", "KIND_ORDER", "CONTACT_KINDS",
           "CAPACITY", "colour_of"]

CAPACITY = 10_000

#: Contact events (:mod:`core.contacts`): a point's rows added or removed, an impact.
CONTACT_KINDS = ("touchdown", "bounce", "lift-off", "slip", "stick")

#: Colour (RGB, 0–255, readable on the plots' dark background; Okabe–Ito) of each kind of event, in the order the
#: legend lists them.
KIND_COLOURS = {
    "touchdown": (0, 158, 115), "bounce": (86, 180, 233), "lift-off": (230, 159, 0), "slip": (204, 121, 167),
    "stick": (240, 228, 66), "break": (213, 94, 0), "rank_deficient": (190, 190, 190), "full_rank": (130, 130, 130),
    "limit": (0, 114, 178), "limit-bounce": (120, 170, 220), "limit-release": (200, 140, 60),
    "hop": (235, 235, 235), "added": (140, 200, 140), "removed": (210, 140, 140),
}
KIND_ORDER = tuple(KIND_COLOURS)
OTHER_COLOUR = (160, 160, 160)

#: Per kind: (key of the core's event dict, what it is, unit) of the number the event list shows.
_VALUE = {
    "touchdown": ("impulse", "impulse", "N·s"), "bounce": ("impulse", "impulse", "N·s"),
    "lift-off": ("normal_force", "normal force", "N"), "slip": ("tangential_force", "tangential force", "N"),
    "break": ("deviation", "deviation", "m"), "rank_deficient": ("jacobian_rank", "rank of J", ""),
    "limit": ("impulse", "impulse", "N·m·s"), "limit-bounce": ("impulse", "impulse", "N·m·s"),
    "limit-release": ("force", "force", "N·m"), "hop": ("speed", "forward speed", "m/s"),
}


def colour_of(kind: str) -> tuple:
    return KIND_COLOURS.get(kind, OTHER_COLOUR)


@dataclass(frozen=True)
class EventMark:
    """Any thread (frozen). One event of the run: time ``t`` (s), ``kind`` (the core's ``type``: touchdown,
    bounce, lift-off, slip, stick, break, rank_deficient, full_rank …), ``what`` it concerns (a contact point
    ``<contact>.<i>``, a constraint's name, or "J"), its number ``value`` (NaN if none) with ``quantity`` and
    ``unit`` (an impact's impulse, the force at a lift-off or slip, a broken constraint's deviation), the rows
    ``added`` and ``removed`` (constraint names) and ``text``, a sentence that says it all."""
    t: float
    kind: str
    what: str
    value: float = math.nan
    quantity: str = ""
    unit: str = ""
    added: tuple = ()
    removed: tuple = ()
    text: str = ""

    @property
    def value_text(self) -> str:
        """The number with its unit ("7.564 N·s"), or "" when the event has none."""
        if not math.isfinite(self.value):
            return ""
        return f"{_number(self.value)} {self.unit}".strip()


def _number(v: float) -> str:
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e5):
        return f"{v:.3e}".replace("-", "−")
    return f"{v:.4g}".replace("-", "−")


def event_mark(event: dict) -> EventMark:
    """The :class:`EventMark` of one event of ``core.Simulation.events`` (a dict with ``t`` and ``type``)."""
    kind = str(event.get("type", "event"))
    t = float(event.get("t", math.nan))
    if "point" in event:
        what = str(event["point"])
    elif "joint" in event:                                   # a joint limit's bound
        what = f"{event['joint']}.{event['bound']}" if "bound" in event else str(event["joint"])
    elif "constraint" in event:
        what = str(event["constraint"])
    elif kind in ("rank_deficient", "full_rank"):
        what = "J"
    else:
        what = str(event.get("contact", event.get("program", "")))
    key, quantity, unit = _VALUE.get(kind, ("", "", ""))
    unit = str(event.get("unit", unit))                       # (a joint limit's: N·m·s on a hinge, N·s on a slider)
    raw = event.get(key) if key else None
    try:
        value = float(raw) if raw is not None else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if kind == "lift-off" and value == 0.0 and "normal_force" in event:
        quantity = "normal force (left at an impact)"
    mark = EventMark(t, kind, what, value, quantity, unit, tuple(event.get("added") or ()),
                     tuple(event.get("removed") or ()))
    return EventMark(**{**mark.__dict__, "text": describe(mark, event)})


def describe(mark: EventMark, event: dict | None = None) -> str:
    """A sentence for an event: "t = 0.4284 s: bounce of ground.0 — impulse 7.564 N·s, normal velocity −4.202 m/s"."""
    event = event or {}
    kind = mark.kind.replace("_", " ")
    if mark.kind == "rank_deficient":
        head = f"the constraint Jacobian lost rank ({event.get('jacobian_rank', '?')} of {event.get('rows', '?')} rows)"
    elif mark.kind == "full_rank":
        head = "the constraint Jacobian has full rank again"
    elif mark.kind == "break":
        head = f"constraint {mark.what} broke"
    else:
        head = f"{kind} of {mark.what}" if mark.what else kind
    parts = []
    if mark.value_text:
        parts.append(f"{mark.quantity} {mark.value_text}")
    if "normal_velocity" in event:
        parts.append(f"normal velocity {_number(float(event['normal_velocity']))} m/s")
    if event.get("tangential_impulse"):
        parts.append(f"tangential impulse {_number(float(event['tangential_impulse']))} N·s")
    if "mode" in event and mark.kind in ("touchdown", "bounce"):
        parts.append(f"then {event['mode']}")
    if mark.kind == "break" and "max_deviation" in event:
        parts.append(f"over its bound {_number(float(event['max_deviation']))}")
    if mark.added:
        parts.append("added " + ", ".join(mark.added))
    if mark.removed:
        parts.append("removed " + ", ".join(mark.removed))
    return f"t = {mark.t:.6g} s: {head}" + (" — " + "; ".join(parts) if parts else "")


class EventLog:
    """Any thread, used by one (GUI). The events of the current run in time order, at most ``capacity`` (the
    oldest dropped first), and the earlier try's (``ghost``). Readers follow it by sequence numbers: the event
    ``events[i]`` has number ``first_seq + i``; ``generation`` changes whenever events go other than from the
    front (a new run, going back in time), when a reader must start over."""

    def __init__(self, capacity: int = CAPACITY):
        if capacity < 1:
            raise ValueError("an event log keeps at least one event")
        self.capacity = int(capacity)
        self.events: list[EventMark] = []
        self._times: list[float] = []
        self.ghost: list[EventMark] = []
        self.first_seq = 0
        self.generation = 0
        self.dropped = 0
        self.version = 0              # changes with every change (for redraws)

    def __len__(self) -> int:
        return len(self.events)

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.events)

    def add(self, marks) -> None:
        """Append events (in time order, after the ones held)."""
        marks = list(marks)
        if not marks:
            return
        self.events.extend(marks)
        self._times.extend(m.t for m in marks)
        over = len(self.events) - self.capacity
        if over > 0:
            del self.events[:over], self._times[:over]
            self.first_seq += over
            self.dropped += over
        self.version += 1

    def new_run(self) -> None:
        """A reset or a restart: the events so far become the earlier try; the log starts empty."""
        self.ghost = self.events
        self.events, self._times = [], []
        self.first_seq, self.dropped = self.next_seq, 0
        self.generation += 1
        self.version += 1

    def truncate_after(self, t: float) -> list[EventMark]:
        """The run went on from time ``t``: drop (and return) the events after it; they become the earlier try."""
        k = bisect.bisect_right(self._times, t)
        gone = self.events[k:]
        if gone:
            del self.events[k:], self._times[k:]
            self.ghost = gone
            self.generation += 1
            self.version += 1
        return gone

    def since(self, seq: int) -> list[EventMark]:
        """The events numbered ``seq`` and after (those still held)."""
        return self.events[max(0, seq - self.first_seq):]

    def between(self, lo: float, hi: float) -> list[EventMark]:
        """The events with lo ≤ t ≤ hi."""
        a = bisect.bisect_left(self._times, lo)
        b = bisect.bisect_right(self._times, hi)
        return self.events[a:b]

    def kinds(self) -> list[str]:
        """The kinds of event held (the earlier try's too), in the legend's order."""
        seen = {m.kind for m in self.events} | {m.kind for m in self.ghost}
        return [k for k in KIND_ORDER if k in seen] + sorted(seen - set(KIND_ORDER))
