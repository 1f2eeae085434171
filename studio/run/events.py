"""The run's events as the studio shows them: contact events (touchdown, bounce, lift-off, slip, stick), joint
limits (limit, limit-bounce, limit-release), control programs' events (hop, added, removed), broken
constraints and rank changes of J, from ``core.Simulation.events`` — as marks on the plots' time axis and rows of
the event list.

Thread: any; no Qt. The worker sends the run's new events (:class:`core.events.Event`, frozen: their reading and
their sentence are the core's) in its sample batches; the GUI keeps them in one bounded
:class:`EventLog` (the plots dock owns it, the event list reads it), which follows the run: a new run starts an
empty log — a run an edit restarted keeps the previous run's events as the earlier try (drawn faded, like the
earlier try's curves), a reset or another document drops them — and going back in time and running on from there
drops the events after that time (they become the earlier try).

Memory: at most ``capacity`` events (default :data:`CAPACITY`, 10 000; the oldest go first, and
:attr:`EventLog.dropped` counts them), each a few hundred bytes.
"""
from __future__ import annotations

import bisect

from core.events import CONTACT_KINDS  # (a point's rows added or removed, an impact)

__all__ = ["EventLog", "KIND_COLOURS", "KIND_ORDER", "NOTICE_KINDS", "CONTACT_KINDS", "CAPACITY", "colour_of"]

CAPACITY = 10_000

#: Colour (RGB, 0–255, readable on the plots' dark background; Okabe–Ito) of each kind of event, in the order the
#: legend lists them.
KIND_COLOURS = {
    "touchdown": (0, 158, 115), "bounce": (86, 180, 233), "lift-off": (230, 159, 0), "slip": (204, 121, 167),
    "stick": (240, 228, 66), "break": (213, 94, 0), "rank_deficient": (190, 190, 190), "full_rank": (130, 130, 130),
    "limit": (0, 114, 178), "limit-bounce": (120, 170, 220), "limit-release": (200, 140, 60),
    "hop": (235, 235, 235), "added": (140, 200, 140), "removed": (210, 140, 140),
}
KIND_ORDER = tuple(KIND_COLOURS)
#: The kinds said in the status bar and the Messages dock as well: a run's turning points. The rest — contacts,
#: limits, control programs' hops and watches, many a second — are in the Events dock and on the plots.
NOTICE_KINDS = ("break", "rank_deficient", "full_rank")
OTHER_COLOUR = (160, 160, 160)

def colour_of(kind: str) -> tuple:
    return KIND_COLOURS.get(kind, OTHER_COLOUR)


class EventLog:
    """Any thread, used by one (GUI). The events of the current run in time order, at most ``capacity`` (the
    oldest dropped first), and the earlier try's (``ghost``). Readers follow it by sequence numbers: the event
    ``events[i]`` has number ``first_seq + i``; ``generation`` changes whenever events go other than from the
    front (a new run, going back in time), when a reader must start over."""

    def __init__(self, capacity: int = CAPACITY):
        if capacity < 1:
            raise ValueError("an event log keeps at least one event")
        self.capacity = int(capacity)
        self.events: list = []
        self._times: list[float] = []
        self.ghost: list = []
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

    def new_run(self, keep: bool = True) -> None:
        """A new run: the log starts empty; the events so far become the earlier try with ``keep`` (a run an edit
        restarted), else they go too (a reset, another document)."""
        self.ghost = self.events if keep else []
        self.events, self._times = [], []
        self.first_seq, self.dropped = self.next_seq, 0
        self.generation += 1
        self.version += 1

    def truncate_after(self, t: float) -> list:
        """The run went on from time ``t``: drop (and return) the events after it; they become the earlier try."""
        k = bisect.bisect_right(self._times, t)
        gone = self.events[k:]
        if gone:
            del self.events[k:], self._times[k:]
            self.ghost = gone
            self.generation += 1
            self.version += 1
        return gone

    def since(self, seq: int) -> list:
        """The events numbered ``seq`` and after (those still held)."""
        return self.events[max(0, seq - self.first_seq):]

    def between(self, lo: float, hi: float) -> list:
        """The events with lo ≤ t ≤ hi."""
        a = bisect.bisect_left(self._times, lo)
        b = bisect.bisect_right(self._times, hi)
        return self.events[a:b]

    def kinds(self) -> list[str]:
        """The kinds of event held (the earlier try's too), in the legend's order."""
        seen = {m.kind for m in self.events} | {m.kind for m in self.ghost}
        return [k for k in KIND_ORDER if k in seen] + sorted(seen - set(KIND_ORDER))
