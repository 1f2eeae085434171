"""The immutable messages that cross between the GUI thread and the simulation worker.

Thread: any. Every class here is a frozen value holding copies (read-only arrays), never the worker's live arrays,
so no lock is needed (DESIGN.md "Threading in the studio"; the request → worker → response hand-off of napari's
slicer and MuJoCo's studio messages).

- :class:`Command`: one ordered order from the GUI (applied at a step boundary, never dropped).
- :class:`Snapshot`: what the viewport and the status bar show; latest wins.
- :class:`SampleBatch`: the rows recorded since the previous batch, for the plots; every batch is delivered.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CommandKind", "Command", "Snapshot", "SampleBatch", "frozen_copy"]


class CommandKind(enum.Enum):
    """Any thread. What a :class:`Command` asks the worker to do."""

    PLAY = "play"
    PAUSE = "pause"
    STEP = "step"                # pause, then advance exactly one time step
    RESET = "reset"              # pause, then go back to the initial state
    LOAD = "load"                # value (spec, keep_state): recompile; keep the state when the joints are unchanged
    SPEED = "speed"              # value: simulated seconds per wall-clock second (math.inf: as fast as possible)
    ACTUATOR = "actuator"        # value (name, command)
    MOVE_NAIL = "move_nail"      # value (name, world position)
    PULL = "pull"                # value (body, point in body frame, world target, stiffness, damping)
    RELEASE = "release"          # let go of the mouse spring
    RESIDUAL_LIMIT = "residual_limit"   # value: pause when a constraint's solve residual exceeds it
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
    ``playing``; ``realtime_factor`` simulated seconds per wall-clock second while playing, averaged over about
    half a second (None when paused); ``model`` the frozen ``core.Model`` that ``q`` belongs to (shared, never
    written); ``run`` counts resets and reloads (the plots start over when it changes); ``overlay`` the
    :class:`studio.probe.Overlay` (nails, springs, arrows) or None; ``step_cost`` wall-clock seconds per step,
    averaged; ``energy_error`` the energy audit's error E − E₀ − Σ work (J); ``speed`` the requested real-time
    factor; ``batched`` the worker runs the simulation in batches of compiled steps (every ``core.Simulation``:
    False only for a stand-in)."""
    t: float
    q: np.ndarray
    steps: int
    playing: bool
    realtime_factor: float | None = None
    model: Any = None
    run: int = 0
    overlay: Any = None
    step_cost: float | None = None
    energy_error: float = float("nan")
    speed: float = 1.0
    batched: bool = False


@dataclass(frozen=True)
class SampleBatch:
    """Any thread (frozen). Rows (n, len(layout.columns)) sampled since the previous batch, during run ``run``
    (:mod:`studio.samples`)."""
    run: int
    layout: Any
    rows: np.ndarray


def frozen_copy(a, dtype=float) -> np.ndarray:
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a
