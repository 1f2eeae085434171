"""The immutable messages that cross between the GUI thread and the simulation worker.

Thread: any. Every class here is a frozen value holding copies (read-only arrays), never the worker's live arrays,
so no lock is needed (DESIGN.md "Threading in the studio"; the request → worker → response hand-off of napari's
slicer and MuJoCo's studio messages).

- :class:`Command`: one ordered order from the GUI (applied at a step boundary, never dropped).
- :class:`Snapshot`: what the viewport and the status bar show; latest wins.
- :class:`SampleBatch`: what the run recorded since the previous batch — every step's records (for exports),
  the plots' rows, recording frames, markers of edits, the run's events; every batch is delivered, in order.
- :class:`Edit`: a document edit for the worker (typed: what changed), inside an EDIT command.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.drawing import frozen_copy

__all__ = ["CommandKind", "Command", "Snapshot", "SampleBatch", "Edit", "Marker", "frozen_copy", "frozen_records"]


class CommandKind(enum.Enum):
    """Any thread. What a :class:`Command` asks the worker to do."""

    PLAY = "play"
    PAUSE = "pause"
    STEP = "step"                # value None or n: pause, then advance exactly one (or n) time steps
    RESET = "reset"              # pause, then go back to the initial state
    LOAD = "load"                # value (spec, keep_state[, model]): run a new spec; keep the state when the joints
                                 # are unchanged (model: the spec compiled already, by the GUI's validation)
    EDIT = "edit"                # value Edit: a document edit, applied in place where the model's structure is kept
    SEEK = "seek"                # value t: pause and go back (or forward) to the stored state at simulated time t
    RECORD = "record"            # value (t0, period) or None: a recording frame every period s of simulated time
    SPEED = "speed"              # value: simulated seconds per wall-clock second (math.inf: as fast as possible)
    ACTUATOR = "actuator"        # value (name, command)
    MOVE_NAIL = "move_nail"      # value (name, world position)
    POSE = "pose"                # value {joint: position}: set hinge/slider joints in the state (velocity zeroed;
                                 # studio.run.pose), paused; not a document edit
    PULL = "pull"                # value (body, point in body frame, world target, stiffness, damping)
    RELEASE = "release"          # let go of the mouse spring
    RESIDUAL_LIMIT = "residual_limit"   # value: pause when a constraint's solve residual exceeds it
    CALL = "call"                # value (function, future): future gets function(simulation) at a step boundary,
                                 # after what came before it has been sent (a script's reads: the console's sim)
    QUIT = "quit"                # leave the loop; the thread then finishes


@dataclass(frozen=True)
class Command:
    """Any thread (frozen). One order from the GUI; ``value`` is the data a kind carries (see :class:`CommandKind`)."""
    kind: CommandKind
    value: Any = None


@dataclass(frozen=True)
class Snapshot:
    """Any thread (frozen; made on the worker, read on the GUI thread). What the GUI may know of the simulation
    at one instant.

    ``t`` simulated time (s); ``q`` configuration (nq, read-only copy); ``steps`` steps since the last reset;
    ``playing``; ``realtime_factor`` simulated seconds per wall-clock second while playing, averaged over about half
    a second (None when paused); ``model`` the frozen ``core.Model`` that ``q`` belongs to (shared, never written);
    ``run`` counts resets and restarts (the plots keep the previous run as an earlier try when an edit restarted
    it); ``draw`` the :class:`core.drawing.DrawList` (shape poses, nails, springs, arrows) or None; ``step_cost``
    wall-clock seconds per step, averaged; ``energy_error`` the energy audit's error E − E₀ − Σ work (J); ``speed``
    the requested real-time factor; ``batched`` the worker runs the simulation in batches of compiled steps (every
    ``core.Simulation``: False only for a stand-in); ``timeline`` (first, furthest) simulated times the user can go
    back to and return to; ``energy`` the energy audit's books at this state (``(label, joules)`` pairs: E, E(0),
    the work of each source, corrections); ``dropped_at`` (first, last): the first time the solve dropped a singular
    direction and the last time the number it dropped changed (the constraint force jumps there), or None."""
    t: float
    q: np.ndarray
    steps: int
    playing: bool
    realtime_factor: float | None = None
    model: Any = None
    run: int = 0
    draw: Any = None
    step_cost: float | None = None
    energy_error: float = float("nan")
    speed: float = 1.0
    batched: bool = False
    timeline: tuple | None = None
    energy: tuple = ()
    dropped_at: tuple | None = None

    @property
    def overlay(self):
        """The draw list (:class:`core.drawing.DrawList`), by its older name."""
        return self.draw


@dataclass(frozen=True)
class Marker:
    """Any thread (frozen). Something the user changed at simulated time ``t`` (a gain, a constraint, the
    formulation …), for a mark on the plots' time axis."""
    t: float
    text: str


@dataclass(frozen=True)
class SampleBatch:
    """Any thread (frozen). What run ``run`` recorded since the previous batch: ``rows`` (n, width of
    ``layout``) for the plots (:mod:`studio.run.samples`, at most a few a frame); ``records``, every step's records
    as ``core.Simulation.run`` returns them (``(name, read-only array)`` pairs; the first step after the previous
    batch onwards; :mod:`core.records`) of ``model``; ``branch``: when set, the run went on from this earlier
    time, and whatever was recorded after it belongs to an earlier try; ``frames``: recording frames
    (:class:`core.drawing.DrawList` at the times a RECORD command asked for); ``markers``: edits applied;
    ``events``: the run's new events (:class:`core.events.Event`: contacts, broken constraints, rank
    changes), in time order, all after ``branch`` when it is set; ``fresh``: run ``run`` started clean (a
    reset, another document), so the run before it is no earlier try to compare with (a run an edit restarted
    is)."""
    run: int
    layout: Any
    rows: np.ndarray
    records: tuple = ()
    model: Any = None
    branch: float | None = None
    frames: tuple = ()
    markers: tuple = ()
    events: tuple = ()
    fresh: bool = False

    def records_dict(self) -> dict:
        return dict(self.records)


@dataclass(frozen=True)
class Edit:
    """Any thread (frozen). A document edit: the new ``spec`` (validated), ``model`` compiled from it (by the
    GUI's validation; None: compile it), ``changes`` ((path, value), …) — the fields that changed, as document
    paths (:mod:`studio.document.edits`) — or None when the edit is structural (an item added, deleted, renamed), and
    ``text``, the edit's description (for the plots' markers)."""
    spec: Any
    model: Any = None
    changes: tuple | None = None
    text: str = ""


def frozen_records(records: dict, start: int = 0) -> tuple:
    """``(name, read-only copy of rows start:)`` pairs of a run's records."""
    return tuple((name, frozen_copy(np.asarray(values)[start:])) for name, values in records.items())
