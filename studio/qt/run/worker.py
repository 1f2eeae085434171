"""The simulation worker: the only owner of the model, the state and the running simulation.

Thread: :class:`SimulationWorker` lives on its own QThread (moved there by :class:`studio.qt.run.simthread.SimulationThread`);
nothing else reads or writes the simulation it runs. What crosses threads are the frozen values of
:mod:`studio.run.messages`.

Loop (DESIGN.md "Threading in the studio"; MuJoCo's ``_physics_loop``): drain the ordered command queue at the top
of every iteration, so a command acts at a step boundary and none is dropped; while playing, step as long as
simulated time is behind wall-clock time × speed, but for at most ``step_share`` of each display frame, then emit
one :class:`~studio.run.messages.SampleBatch` with what was recorded since the last one and one
:class:`~studio.run.messages.Snapshot` (latest wins on the GUI side; while playing, only once the GUI has taken the
last one: ``snapshot_taken``). A scene slower than real time
therefore lowers the real-time factor, never the frame rate; more than ``max_lag`` behind, the worker forgives the
lag instead of catching up.

Batches: every scene runs on the core's one compiled pipeline, a frame's worth of steps per ``Simulation.run``
call (:func:`studio.run.stepping.run_steps`: with a fixed step, batches end on the integrator's own time grid, so the
run is bit for bit the one ``python -m core run`` makes in one call). Each call into compiled code releases the GIL
and must win it back from the GUI thread, so one call per step made a 60 µs step cost 0.5–2 ms; a batch pays that a
few times a frame. Every step is recorded (the columns of ``core.records``) and sent to the GUI, which keeps the
whole run for exports; the plots get at most ``max_samples_per_frame`` of those rows a frame.

Timeline: where each batch begins the worker keeps a keyframe (``Simulation.snapshot``; :mod:`studio.run.timeline`,
bounded). SEEK goes back (or forward) to the keyframe at or before a time and, with a fixed step, steps on to the
exact step asked for; the document's current settings and gains then apply. Playing or stepping from a state
earlier than the furthest one reached starts a new branch: the keyframes after it are dropped and the next
sample batch says so (``branch``), so the GUI can keep the earlier try as a faded overlay.

Recordings: RECORD (t0, period, count) asks for a frame every ``period`` of simulated time from t0: batches are
cut at those times (at the first step at or after each, with a fixed step) and the draw list of that state
(:func:`core.drawing.draw_list`) goes to the GUI in the sample batch, so a video has T·F frames whatever the
machine's speed.

Edits: an EDIT command carries the new spec, the model the GUI compiled while validating it, and what changed.
Run settings and controller gains go in place (``set_integrator``, ``set_formulation``,
``set_controller_parameter`` on a simulation of the new model that takes over the running one's snapshot; no
compile); anything else continues the run on the new model when the joints are the same
(:mod:`studio.run.reload`), else starts it over.

Divergence: a step that raises, leaves a non-finite state or a constraint residual above ``residual_limit`` is
undone with ``Simulation.restore`` of the snapshot taken before it (the last good state is kept), the worker pauses
and ``error`` says why. A batch is checked at every step and at its end; when it raised or went bad, the
simulation is restored to the snapshot taken where the batch began and steps it one step at a time, so the pause
comes at the same step as without batches. An exception in a command is reported the same way; nothing is lost
silently.

First use: the core's kernels are compiled once per version and machine and cached on disk. The main window has
them compiled in a separate process before it starts this worker when the cache is cold (:mod:`studio.qt.run.kernels`);
loading them from the cache takes a few seconds. The worker's constructor evaluates nothing: before the first
evaluation in the process, ``busy`` says the kernels are being loaded (the GUI counts the seconds); the worker then
evaluates the initial state, steps once and restores its snapshot (so that Play does not stall later) and clears
the message (``busy("")``). It loads them refusing to compile any (:func:`~studio.qt.run.kernels.refusing_compiles`):
when the cache was judged complete wrongly, it runs the separate compile itself (``busy`` says so, the window stays
live) and loads again. Only if that process fails do they compile here, on the worker thread (minutes, the window
sluggish), never on the GUI thread.
"""
from __future__ import annotations

import math
import queue
import threading
import time

import numpy as np
from PySide6.QtCore import QObject, QThread, Signal, Slot

from studio.qt.run.kernels import KernelsNotCached, WarmProcess, refusing_compiles
from studio.run.events import NOTICE_KINDS
from studio.run.pose import pose
from studio.run.messages import Command, CommandKind, Marker, SampleBatch, Snapshot, frozen_copy, frozen_records
from core.drawing import draw_list
from studio.run.reload import apply_edit, apply_settings, reload_simulation, same_structure
from studio.run.samples import sample_layout, sample_row, sample_rows
from studio.run.stepping import fixed_step, run_steps, steps_to
from studio.run.timeline import Timeline

__all__ = ["SimulationWorker", "RATE_WINDOW", "PREPARING", "LOADING", "describe_event"]

RATE_WINDOW = 0.5          # seconds over which the reported real-time factor is averaged
COST_WEIGHT = 0.05         # weight of the newest step in the averaged cost per step
MAX_BATCH = 2000           # steps in one Simulation.run call at most (a frame's worth is usually far fewer)

PREPARING = ("Compiling the physics kernels on the simulation thread (the first run of this version on this "
             "machine: about a minute or two); the scene can be edited meanwhile…")
LOADING = "Loading the compiled physics kernels…"
COMPILING = ("Compiling the physics kernels in a separate process (the cache lacked some: about two minutes); the "
             "scene can be edited meanwhile…")

#: Kinds of simulation (their types: every core.Simulation runs the same compiled pipeline) already evaluated and
#: stepped in this process: their kernels are compiled (or loaded from the cache) and the next one starts at once.
#: Worker thread only.
_PREPARED: set = set()

#: Document sections whose edits are marked on the plots' time axis.
MARKED_SECTIONS = ("simulation", "constraints", "forces", "controllers")


class SimulationWorker(QObject):
    """Worker thread. Runs ``simulation`` (a ``core.Simulation``, or anything with ``state`` (``t``, ``q``, ``qd``,
    ``copy()``), ``dt``, ``step()`` and ``reset()``) on the commands read from ``commands``.

    Signals (emitted on the worker thread; connect them to objects on the GUI thread): ``snapshot``
    (:class:`Snapshot`), ``samples`` (:class:`SampleBatch`), ``error`` (str: the simulation paused),
    ``notice`` (str, float: an event such as a broken constraint, and its simulated time), ``busy`` (str: what
    keeps the worker from answering for a while, such as compiling the kernels; "" when it is done), ``finished``
    (after QUIT).

    The constructor (on the GUI thread) only stores ``simulation``: it is first evaluated in :meth:`run`."""

    snapshot = Signal(object)
    samples = Signal(object)
    error = Signal(str)
    notice = Signal(str, float)
    busy = Signal(str)
    finished = Signal()

    def __init__(self, simulation, commands: queue.Queue, *, speed: float = 1.0, frame_period: float = 1 / 60,
                 step_share: float = 0.8, max_lag: float = 0.1, residual_limit: float = 1e6,
                 max_samples_per_frame: int = 4, batches: bool = True, clock=time.perf_counter,
                 keyframes: int | None = None, snapshot_taken: threading.Event | None = None):
        super().__init__()
        self._commands = commands
        self.speed = float(speed)
        self.frame_period = float(frame_period)
        self.step_share = float(step_share)
        self.max_lag = float(max_lag)
        self.residual_limit = float(residual_limit)
        self.max_samples_per_frame = int(max_samples_per_frame)
        self.batches = bool(batches)
        self._clock = clock
        self._playing = False
        self._run = 0
        self._rate: float | None = None                  # smoothed real-time factor while playing
        self._cost: float | None = None                  # smoothed wall-clock seconds per step
        self._span: float | None = None                  # smoothed simulated seconds per step (adaptive steps)
        self._sim = simulation                           # evaluated first on the worker thread, in run()
        self._layout = None
        self._batched = False
        self._rows: list[np.ndarray] = []
        self._records: list[dict] = []                   # every step's records since the last emit
        self._frames: list = []                          # recording frames since the last emit
        self._markers: list[Marker] = []
        self._events: list = []                          # the run's events since the last emit (core Events)
        self._branch: float | None = None                # the run went on from this earlier time (not yet told)
        self._fresh = False                              # the new run started clean (not yet told)
        self._recording = None                           # (t0, period, count or None, frames made)
        self._timeline = Timeline(**({} if keyframes is None else {"capacity": keyframes}))
        self._steps = 0
        self._last_record: dict | None = None
        self._dropped_at: tuple | None = None          # (first time, last change, last value) of 'dropped'
        self._actuators: dict = {}                       # actuator commands the user gave (they outlive a seek)
        #: Set by the GUI side when it has taken the last snapshot emitted (:class:`SimulationThread` passes one);
        #: while it is not, a playing frame sends no new one (None: every frame sends one).
        self.snapshot_taken = snapshot_taken

    def _set_simulation(self, sim, new_run: bool = True) -> None:
        """Start showing ``sim`` (worker thread): evaluate it, after saying so if its kernels may compile.
        ``new_run``: the run starts over (the timeline is cleared), else it goes on (an edit kept the state)."""
        self._sim = sim
        self._events_seen = len(getattr(sim, "events", ()))
        self._rows = []
        self._records = []          # (a frame's records of the old model: its columns may differ from the new one's)
        self._stride, self._since_sample, self._steps_this_frame = 1, 0, 0
        self._span = None
        if new_run:
            self._steps = 0
            self._events = []
            self._timeline.clear()
            self._dropped_at = None
            self._branch = None
            self._rebase_recording()
        kind = type(sim).__qualname__
        if kind in _PREPARED:
            self._layout = _layout_of(sim)
            self._sample()
        else:
            try:
                self._prepare(sim)
            finally:
                _PREPARED.add(kind)
                self.busy.emit("")
        self._batched = self.batches and _runs_batches(sim) and self._layout is not None
        if self._batched:
            head = self._timeline.head_t
            at_head = new_run or head is None or sim.state.t >= head
            self._record_here(send=at_head)     # (looking back: the run goes on from here only when played)
            if at_head:
                self._keyframe()
        self._anchor_wall, self._anchor_t = self._clock(), sim.state.t   # sim time _anchor_t reached at wall time
        self._last_emit_wall, self._last_emit_t = self._anchor_wall, sim.state.t
        if new_run and self._recording is not None:
            self._take_frames()                 # the first frame of the new run

    def _prepare(self, sim) -> None:
        """The first evaluation and step of ``sim``'s kind in this process: its kernels load from the cache, or
        compile in a separate process if they are missing (module docstring)."""
        message = _preparing_message()
        self.busy.emit(message)
        if message == LOADING:
            try:
                with refusing_compiles():
                    self._evaluate(sim)
                return
            except KernelsNotCached:
                self.busy.emit(LOADING if self._compile_in_child() else PREPARING)
        self._evaluate(sim)

    def _evaluate(self, sim) -> None:
        self._layout = _layout_of(sim)
        self._sample()
        _warm_up_step(sim)

    def _compile_in_child(self) -> bool:
        """Compile the kernels in a separate process (:class:`~studio.qt.run.kernels.WarmProcess`) and wait for
        it, saying so; True when it succeeded. A QUIT waiting in the queue (the window closed) ends the process and
        raises :class:`~studio.qt.run.kernels.KernelsNotCached`, leaving the QUIT to the loop."""
        self.busy.emit(COMPILING)
        process = WarmProcess()
        try:
            while process.poll() is None:
                with self._commands.mutex:
                    quit_asked = any(c.kind is CommandKind.QUIT for c in self._commands.queue)
                if quit_asked:
                    raise KernelsNotCached("the window closed before the kernels were compiled")
                time.sleep(0.2)
            if process.poll() != 0:
                self.error.emit(f"{process.failure()}; compiling them on the simulation thread instead")
                return False
            return True
        finally:
            process.close()

    # ---- the loop ------------------------------------------------------------------------------------------
    @Slot()
    def run(self) -> None:
        """The worker's whole life: started by ``QThread.started``, returns after a QUIT command."""
        try:
            try:
                self._set_simulation(self._sim)
            except Exception as exc:           # reported; the commands (a LOAD, a RESET) may still mend it
                self._layout, self._batched = None, False
                self._anchor_wall, self._anchor_t = self._clock(), self._sim.state.t
                self._last_emit_wall, self._last_emit_t = self._anchor_wall, self._sim.state.t
                self.error.emit(f"the simulation cannot be evaluated: {type(exc).__name__}: {exc}")
            self._emit()
            next_frame = self._clock()
            while True:
                timeout = max(0.0, next_frame - self._clock()) if self._playing else None
                if not self._apply_commands(timeout):
                    break
                if self._playing and self._clock() >= next_frame:
                    frame_start = self._clock()
                    self._advance(deadline=frame_start + self.step_share * self.frame_period)
                    self._emit(frame=True)
                    # Rest for the rest of the frame, and at least its GUI share even when a step overran: the
                    # GUI thread needs the GIL to draw (a busy worker would starve it, see GIL "convoys"). The
                    # compiled steps release the GIL, so the GUI thread draws beside them on the other core: a
                    # share of 0.6 left the collision scenes (~1 ms of steps a frame) at 0.3-0.45x real time with
                    # 30 % of the CPU idle; 0.8 gives 0.57-0.63x and 1x where 0.6 gave 0.94x, the viewport at
                    # 16-23 fps (bench_studio, 1600x1000; README).
                    next_frame = max(frame_start + self.frame_period,
                                     self._clock() + (1.0 - self.step_share) * self.frame_period)
        finally:
            self.finished.emit()
            QThread.currentThread().quit()   # thread-safe; lets the thread finish without the GUI's event loop

    def _apply_commands(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` s (forever if None) for a command, then apply every queued one in order.
        False on QUIT."""
        try:
            cmd = self._commands.get(timeout=timeout) if timeout is None or timeout > 0 else \
                self._commands.get_nowait()
        except queue.Empty:
            return True
        while True:
            if cmd.kind is CommandKind.QUIT:
                return False
            try:
                nxt = self._commands.get_nowait()
            except queue.Empty:
                nxt = None
            # a run of SEEKs or of LOADs/EDITs (a slider or a mouse drag sends many): only the last one matters
            if nxt is not None and nxt.kind is cmd.kind and cmd.kind in (CommandKind.SEEK, CommandKind.LOAD):
                cmd = nxt
                continue
            if nxt is not None and nxt.kind is cmd.kind is CommandKind.POSE:     # a joint slider dragged
                cmd = Command(CommandKind.POSE, {**cmd.value, **nxt.value})
                continue
            try:
                self._apply(cmd)
            except Exception as exc:   # a failing command must not kill the thread, nor go unreported
                self._playing = False
                self.error.emit(f"{cmd.kind.value} failed: {type(exc).__name__}: {exc}")
            if nxt is None:
                self._emit()           # once for all the commands drained (a mouse drag sends many)
                return True
            cmd = nxt

    def _apply(self, cmd: Command) -> None:
        kind, value, sim = cmd.kind, cmd.value, self._sim
        if kind is CommandKind.PLAY:
            if not self._playing and self._check_finite():
                self._playing = True
                self._anchor_wall, self._anchor_t = self._clock(), sim.state.t
                self._last_emit_wall, self._last_emit_t = self._anchor_wall, self._anchor_t
        elif kind is CommandKind.PAUSE:
            self._playing = False
        elif kind is CommandKind.STEP:
            self._playing = False
            for _ in range(1 if value is None else int(value)):
                if not (self._check_finite() and self._step_once()):
                    break
        elif kind is CommandKind.RESET:
            self._playing = False
            sim.reset()
            self._run += 1
            self._fresh = True                # Reset starts clean: the plots drop the run before (issue 27)
            self._actuators = {}
            self._set_simulation(sim)
        elif kind is CommandKind.LOAD:
            spec, keep_state, *model = value
            new, kept = reload_simulation(sim, spec, keep_state, model[0] if model else None)
            self._take(new, kept)
            # another document: its plots start empty, not beside another scene's curves (issue 27)
            self._fresh = self._fresh or not kept
        elif kind is CommandKind.EDIT:
            new, kept = apply_edit(sim, value)
            self._take(new, kept)
            self._mark(value)
        elif kind is CommandKind.SEEK:
            self._seek(float(value))
        elif kind is CommandKind.RECORD:
            self._start_recording(value)
        elif kind is CommandKind.SPEED:
            if not value > 0:
                raise ValueError(f"the speed must be positive, got {value}")
            self.speed = float(value)
            self._anchor_wall, self._anchor_t = self._clock(), sim.state.t
        elif kind is CommandKind.ACTUATOR:
            sim.set_actuator(*value)
            self._actuators[value[0]] = value[1]
        elif kind is CommandKind.MOVE_NAIL:
            name, position = value
            sim.move_nail(name, position, (0.0, 0.0, 0.0))
        elif kind is CommandKind.POSE:
            self._pose(value)
        elif kind is CommandKind.PULL:
            sim.set_pull(*value)
        elif kind is CommandKind.RELEASE:
            sim.clear_pull()
        elif kind is CommandKind.RESIDUAL_LIMIT:
            self.residual_limit = float(value)
        elif kind is CommandKind.CALL:
            function, future = value
            try:
                result = function(sim)
            except BaseException as exc:      # the caller's to see, not the simulation's
                future.set_exception(exc)
                return
            self._emit()                      # what the commands before it changed reaches the GUI first
            future.set_result(result)
        else:
            raise ValueError(f"unknown command {kind!r}")

    def _take(self, new, kept: bool) -> None:
        """Run ``new`` from now on: the same run when ``kept`` (the state went on), else a new one. The keyframes
        stay only if the new model has the structure of the old one (their snapshots fit it)."""
        old = getattr(self._sim, "model", None)
        if not kept:
            self._run += 1
            self._set_simulation(new)
            return
        if old is None or not same_structure(old, new.model):
            self._timeline.clear()
        self._set_simulation(new, new_run=False)

    def _mark(self, edit) -> None:
        changes = edit.changes
        sections = {p[0] for p, _ in changes} if changes else {"structure"}
        if edit.text and self._steps > 0 and (sections & set(MARKED_SECTIONS) or "structure" in sections):
            self._markers.append(Marker(float(self._sim.state.t), edit.text))

    def _pose(self, positions: dict) -> None:
        """Set joints by hand (:func:`studio.run.pose.pose`): the run goes on from the posed state, a new branch
        if it was behind the furthest state reached; the keyframe of this instant is the posed state."""
        pose(self._sim, positions)
        if self._batched:
            self._branch_if_behind()
            self._keyframe()
        self._record_here(send=False)

    # ---- the timeline --------------------------------------------------------------------------------------
    def _keyframe(self) -> None:
        """Keep the current state (where a batch begins)."""
        if self._batched:
            self._timeline.add(float(self._sim.state.t), self._steps, self._sim.snapshot())

    def _branch_if_behind(self) -> None:
        """Stepping from a state earlier than the furthest reached: the later keyframes belong to an earlier try."""
        tl, t = self._timeline, float(self._sim.state.t)
        if tl.head_t is not None and t < tl.head_t:
            tl.truncate_after(t)
            tl.reached(t, self._steps)
            self._branch = t

    def _seek(self, t: float) -> None:
        """Go to the stored state at simulated time ``t`` (paused), the document's settings applied."""
        self._playing = False
        sim, tl = self._sim, self._timeline
        key = tl.at_or_before(t) if self._batched else None
        if key is None:
            return
        sim.restore(key.snapshot)
        self._steps = key.step
        if fixed_step(sim) and t > key.t:
            nxt = tl.after(key)
            limit = (nxt.step if nxt is not None else tl.head_step) - key.step
            n = min(steps_to(sim, t), max(limit, 0))
            if n > 0:
                run_steps(sim, n)
                self._steps += n
        self._events_seen = len(sim.events)
        self._apply_document_inputs()
        self._record_here(send=False)
        self._rebase_recording()
        self._take_frames()
        self._anchor_wall, self._anchor_t = self._clock(), sim.state.t

    def _apply_document_inputs(self) -> None:
        """After going back to a keyframe: the run settings and gains of the model the simulation runs (the
        document's, which may have changed since), and the actuator commands the user gives now."""
        sim = self._sim
        apply_settings(sim)
        if sim.pull is not None:
            sim.clear_pull()
        for name, value in self._actuators.items():
            sim.set_actuator(name, value)

    # ---- recording -----------------------------------------------------------------------------------------
    def _start_recording(self, value) -> None:
        if value is None:
            self._recording = None
            return
        period, count = float(value[0]), value[1]
        if not period > 0:
            raise ValueError(f"the frame period must be positive, got {period}")
        t0 = float(self._sim.state.t)
        self._recording = (t0, period, None if count is None else int(count), 0)
        self._take_frames()

    def _rebase_recording(self) -> None:
        """The run jumped (a reset, a seek, a restart) while recording: the next frame is due now, the frames
        after it one period apart from here (the video goes on from the new state, without a gap or a stall)."""
        if self._recording is not None:
            t0, period, count, made = self._recording
            self._recording = (float(self._sim.state.t) - made * period, period, count, made)

    def _frame_time(self) -> float | None:
        rec = self._recording
        if rec is None:
            return None
        t0, period, count, made = rec
        if count is not None and made >= count:
            self._recording = None
            return None
        return t0 + made * period

    def _take_frames(self) -> None:
        """The draw list of the current state for every frame time it has reached."""
        t = float(self._sim.state.t)
        tol = 1e-9 * max(1.0, abs(t))
        drawn = None
        while (due := self._frame_time()) is not None and t >= due - tol:
            drawn = drawn or draw_list(self._sim)
            t0, period, count, made = self._recording
            self._recording = (t0, period, count, made + 1)
            self._frames.append(drawn)

    # ---- stepping ------------------------------------------------------------------------------------------
    def _advance(self, deadline: float) -> None:
        """Step while simulated time is behind (wall time since play) × speed, until ``deadline``."""
        self._steps_this_frame = 0
        now = self._clock()
        if math.isinf(self.speed):
            target = math.inf
        else:
            target = self._anchor_t + (now - self._anchor_wall) * self.speed
            excess = (target - self._sim.state.t) / self.speed - self.max_lag
            if excess > 0:                      # too far behind the wall clock: forgive all but max_lag of it
                self._anchor_wall += excess
                target = self._anchor_t + (now - self._anchor_wall) * self.speed
        while self._playing and self._sim.state.t < target and self._clock() < deadline:
            if self._batched:
                self._step_batch(self._batch_size(target, deadline))
            else:
                self._step_once()

    def _step_span(self) -> float:
        """Simulated seconds per step: ``dt``, or less with adaptive steps (averaged over the batches run)."""
        dt = self._sim.dt
        span = self._span
        return dt if span is None or span >= dt * (1 - 1e-9) else span

    def _batch_size(self, target: float, deadline: float) -> int:
        """Steps of the next batch: enough to reach ``target``, but no more than fit before ``deadline`` at the
        averaged cost per step (a few while there is no average), and none past the next recording frame."""
        sim = self._sim
        n = MAX_BATCH if math.isinf(target) else math.ceil((target - sim.state.t) / self._step_span() - 1e-9)
        budget = 8 if self._cost is None else int(max(0.0, deadline - self._clock()) / max(self._cost, 1e-9))
        n = max(1, min(n, budget, MAX_BATCH))
        due = self._frame_time()
        if due is not None:
            to_frame = steps_to(sim, due) if fixed_step(sim) else \
                math.ceil((due - sim.state.t) / self._step_span() - 1e-9)
            n = max(1, min(n, to_frame))
        return n

    def _step_once(self) -> bool:
        """One step; on an exception, a non-finite result or a residual over the limit, restore the snapshot taken
        before it (the last good state), pause and report."""
        sim = self._sim
        if self._batched:
            self._branch_if_behind()
            self._keyframe()
        good = _save(sim)
        t_before = sim.state.t
        start = self._clock()
        try:
            if self._batched:
                records = run_steps(sim, 1, self._step_span(), until=self._frame_time())
            else:
                sim.step()
                records = None
        except Exception as exc:
            _restore(sim, good)
            self._diverged(f"{type(exc).__name__}: {exc}")
            return False
        cost = self._clock() - start
        why = self._why_bad(t_before)
        if why:
            _restore(sim, good)
            self._diverged(why)
            return False
        self._cost = cost if self._cost is None else self._cost + COST_WEIGHT * (cost - self._cost)
        self._steps += 1
        self._steps_this_frame += 1
        self._since_sample += 1
        if records is not None:
            self._keep_records(records, 1)
            self._timeline.reached(float(sim.state.t), self._steps)
        if self._since_sample >= self._stride:
            self._sample()
        self._report_events()
        self._take_frames()
        return True

    def _step_batch(self, n: int) -> None:
        """``n`` steps in one ``Simulation.run`` call, every step recorded. If it raises, or a recorded state is
        not finite or has a residual over the limit, restore the snapshot taken where it began and step one
        step at a time (:meth:`_step_once` then pauses at the bad step, as without batches)."""
        sim = self._sim
        self._branch_if_behind()
        saved = sim.snapshot()
        self._timeline.add(float(sim.state.t), self._steps, saved)
        t0, taken0 = sim.state.t, sim.steps_taken
        start = self._clock()
        try:
            records = run_steps(sim, n, self._step_span(), until=self._frame_time())
            bad = not self._state_is_finite() or not self._records_are_good(records)
        except Exception:
            bad = True
        if bad:
            sim.restore(saved)
            for _ in range(n):
                if not (self._playing and self._step_once()):
                    break
            return
        taken = sim.steps_taken - taken0
        if taken > 0:
            cost, span = (self._clock() - start) / taken, (sim.state.t - t0) / taken
            weight = min(1.0, COST_WEIGHT * taken)
            self._cost = cost if self._cost is None else self._cost + weight * (cost - self._cost)
            self._span = span if self._span is None else self._span + weight * (span - self._span)
        self._steps += taken
        self._steps_this_frame += taken
        self._keep_records(records, self._stride)
        self._timeline.reached(float(sim.state.t), self._steps)
        self._report_events()
        self._take_frames()
        if sim.state.t <= t0:                       # nothing advanced (cannot happen without an error): stop
            self._playing = False

    def _keep_records(self, records: dict, stride: int) -> None:
        """Keep the records of the steps just taken (row 0 is the state they started from) for the GUI, and
        every ``stride``-th of them (and the last) for the plots."""
        n = len(records["t"]) - 1
        if n <= 0:
            return
        new = {name: values[1:] for name, values in records.items()}
        self._records.append(new)
        self._last_record = {name: values[-1] for name, values in new.items()}
        dropped = np.asarray(new["dropped"])
        if np.any(dropped > 0) or self._dropped_at is not None:
            first, last, value = self._dropped_at or (None, None, 0.0)
            if first is None:
                first = float(new["t"][np.flatnonzero(dropped > 0)[0]])
            changes = np.flatnonzero(np.diff(np.concatenate([[value], dropped])) != 0)
            if changes.size:
                last = float(new["t"][changes[-1]])
            self._dropped_at = (first, last, float(dropped[-1]))
        first = (stride - 1 - self._since_sample) % stride
        picks = list(range(first, n, stride))
        if not picks or picks[-1] != n - 1:
            picks.append(n - 1)
        self._since_sample = 0
        if self._layout is not None:
            self._rows.extend(sample_rows({name: values[picks] for name, values in new.items()}, self._layout))

    def _record_here(self, send: bool = True) -> None:
        """The records of the current state (one row) as the run's latest (and, with ``send``, for the GUI: the
        first row of a run or of a new model's part of it)."""
        try:
            with np.errstate(all="ignore"):
                records = self._sim.run(0.0)
        except Exception:
            return
        self._last_record = {name: values[-1] for name, values in records.items()}
        if send:
            self._records.append(records)

    def _records_are_good(self, records: dict) -> bool:
        q = np.asarray(records["q"])
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(np.asarray(records["qd"])))):
            return False
        residual = np.asarray(records["residual"])
        return not np.any(residual > self.residual_limit)      # NaN (inactive) compares False

    def _why_bad(self, t_before: float) -> str | None:
        """Why the state just reached (from ``t_before``) cannot be kept, or None."""
        if not self._state_is_finite():
            return f"the step from t = {t_before:.6g} s gave a non-finite state ({self._non_finite()})"
        if self._layout is not None and self._layout.size("residual"):
            residual = np.asarray(self._sim.data.residual, dtype=float)
            worst = int(np.nanargmax(np.where(np.isnan(residual), -np.inf, residual)))
            if residual[worst] > self.residual_limit:
                name = self._layout.labels["residual"][worst]
                return (f"the solve residual of constraint {name!r} reached {residual[worst]:.3g} m/s², over the "
                        f"limit of {self.residual_limit:.3g} m/s²")
        return None

    def _check_finite(self) -> bool:
        if self._state_is_finite():
            return True
        self._playing = False
        self.error.emit(f"paused: the state at t = {self._sim.state.t:.6g} s is not finite "
                        f"({self._non_finite()}); nothing was stepped")
        return False

    def _diverged(self, why: str) -> None:
        self._playing = False
        self.error.emit(f"paused at t = {self._sim.state.t:.6g} s, keeping the last good state: {why}")

    def _state_is_finite(self) -> bool:
        s = self._sim.state
        return bool(np.isfinite(s.t) and np.all(np.isfinite(s.q)) and np.all(np.isfinite(s.qd)))

    def _non_finite(self, limit: int = 4) -> str:
        s = self._sim.state
        bad = [f"q[{i}] = {v}" for i, v in enumerate(np.asarray(s.q)) if not np.isfinite(v)]
        bad += [f"qd[{i}] = {v}" for i, v in enumerate(np.asarray(s.qd)) if not np.isfinite(v)]
        if not np.isfinite(s.t):
            bad.insert(0, f"t = {s.t}")
        return ", ".join(bad[:limit]) + (f" and {len(bad) - limit} more" if len(bad) > limit else "")

    def _report_events(self) -> None:
        """The events the run logged since the last look: every one goes to the GUI in the next sample batch
        (the plots' marks and the event list); a broken constraint and a rank change
        (:data:`~studio.run.events.NOTICE_KINDS`) are also said in the status bar and the Messages dock."""
        events = getattr(self._sim, "events", ())
        for event in events[self._events_seen:]:
            self._events.append(event)
            if event.kind in NOTICE_KINDS:
                self.notice.emit(describe_event(event), float(event.t))
        self._events_seen = len(events)

    # ---- output --------------------------------------------------------------------------------------------
    def _sample(self) -> None:
        self._since_sample = 0
        if self._layout is not None and self._state_is_finite():
            try:
                self._rows.append(sample_row(self._sim, self._layout))
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                pass                            # a state the dynamics cannot evaluate: _why_bad or _emit says so

    def _energy_books(self) -> tuple:
        """The energy audit at the latest recorded state: ``(label, joules)`` pairs for the status bar."""
        r = self._last_record
        if r is None:
            return ()
        f = {k: float(np.sum(r[k])) for k in ("energy_kinetic", "energy_potential", "energy_total", "energy_error",
                                             "work_total_constraints", "work_dampers", "work_drag", "work_actuators",
                                             "work_external", "work_corrections") if k in r}
        work = sum(f.get(k, 0.0) for k in ("work_total_constraints", "work_dampers", "work_drag", "work_actuators",
                                           "work_external"))
        e0 = f["energy_total"] - f["energy_error"] - work - f.get("work_corrections", 0.0)
        return (("E = kinetic + potential", f["energy_total"]), ("kinetic", f["energy_kinetic"]),
                ("potential", f["energy_potential"]), ("E(0)", e0),
                ("work by constraint forces", f.get("work_total_constraints", 0.0)),
                ("work by dampers", f.get("work_dampers", 0.0)), ("work by drag", f.get("work_drag", 0.0)),
                ("work by actuators and controllers", f.get("work_actuators", 0.0)),
                ("work by external forces (mouse spring, point forces)", f.get("work_external", 0.0)),
                ("projection corrections", f.get("work_corrections", 0.0)),
                ("error E − E(0) − Σ work − corrections", f["energy_error"]))

    def _emit(self, frame: bool = False) -> None:
        """Send what was recorded since the last emit (a :class:`SampleBatch`: every step, in order) and a
        :class:`Snapshot` of the state with its draw list — on a ``frame`` that leaves the run playing, only if
        the GUI has taken the last one (:attr:`snapshot_taken`): a window that draws 17 frames a second while the
        worker emits 45 (the collision scenes at 1600 x 1000 in software OpenGL) dropped most of them unseen, and
        each cost the worker ~2 ms of Python (the draw list: shapes' poses, contact points' states)."""
        sim, s = self._sim, self._sim.state
        now = self._clock()
        factor = None
        if self._playing and now > self._last_emit_wall:
            rate = (s.t - self._last_emit_t) / (now - self._last_emit_wall)
            weight = min(1.0, (now - self._last_emit_wall) / RATE_WINDOW)
            factor = rate if self._rate is None else self._rate + weight * (rate - self._rate)
        self._rate = factor
        self._last_emit_wall, self._last_emit_t = now, s.t
        # at most max_samples_per_frame rows a frame: sample every stride-th step
        self._stride = max(1, math.ceil(self._steps_this_frame / self.max_samples_per_frame))
        model = getattr(sim, "model", None)
        if self._rows or self._records or self._frames or self._markers or self._events or \
                self._branch is not None:
            records = ()
            if self._records:
                chunks = self._records
                records = frozen_records({k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]})
            rows = frozen_copy(np.vstack(self._rows)) if self._rows else \
                frozen_copy(np.zeros((0, self._layout.width if self._layout is not None else 1)))
            self.samples.emit(SampleBatch(self._run, self._layout, rows, records=records, model=model,
                                          branch=self._branch, frames=tuple(self._frames),
                                          markers=tuple(self._markers), events=tuple(self._events),
                                          fresh=self._fresh))
            self._rows, self._records, self._frames, self._markers, self._events = [], [], [], [], []
            self._branch, self._fresh = None, False
        taken = self.snapshot_taken
        if frame and self._playing and taken is not None and not taken.is_set():
            return                            # the GUI has not taken the last one yet: the next frame sends one
            #                                   (a frame that stopped the play — diverged, ended — sends its own)
        if taken is not None:
            taken.clear()
        drawn = energy_error = None
        if self._layout is not None and self._state_is_finite():
            try:
                drawn, energy_error = draw_list(sim), float(sim.energy_error())
            except Exception as exc:          # shown, never lost; the snapshot goes out without overlays
                self._playing = False
                self.error.emit(f"paused: the state at t = {s.t:.6g} s cannot be evaluated: "
                                f"{type(exc).__name__}: {exc}")
        tl = self._timeline
        timeline = (tl.first_t, tl.head_t) if tl.first_t is not None else None
        self.snapshot.emit(Snapshot(
            t=float(s.t), q=frozen_copy(s.q), steps=self._steps, playing=self._playing, realtime_factor=factor,
            model=model, run=self._run, draw=drawn, step_cost=self._cost,
            energy_error=float("nan") if energy_error is None else energy_error, speed=self.speed,
            batched=self._batched, timeline=timeline, energy=self._energy_books(),
            dropped_at=None if self._dropped_at is None else self._dropped_at[:2]))


def _runs_batches(sim) -> bool:
    """Whether ``sim`` steps whole batches in compiled code and can go back to a snapshot (``core.Simulation``)."""
    return all(callable(getattr(sim, name, None)) for name in ("run", "snapshot", "restore")) \
        and hasattr(sim, "steps_taken")


def _save(sim):
    """What :func:`_restore` needs to bring ``sim`` back: its snapshot, or the state of a stand-in without one."""
    return sim.snapshot() if callable(getattr(sim, "snapshot", None)) else sim.state.copy()


def _restore(sim, saved) -> None:
    if callable(getattr(sim, "restore", None)):
        sim.restore(saved)
    else:
        sim.state = saved


def _preparing_message() -> str:
    try:
        from core.jit import kernels_cached
        return LOADING if kernels_cached() else PREPARING
    except Exception:
        return PREPARING


def _warm_up_step(sim) -> None:
    """Step ``sim`` once and bring it back, so that its step's kernels are compiled (or loaded) now and not at the
    first Play. Whatever goes wrong here is left for the real step to report."""
    saved = _save(sim)
    try:
        with np.errstate(all="ignore"):
            sim.step()
    except KernelsNotCached:
        raise
    except Exception:
        pass
    finally:
        _restore(sim, saved)


def _layout_of(sim):
    """The sample layout of a ``core.Simulation`` (None for a stand-in without ``model`` and ``data``)."""
    model = getattr(sim, "model", None)
    if model is None or not hasattr(type(sim), "data"):
        return None
    try:
        return sample_layout(model, sim)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):   # a state the controllers cannot evaluate
        return sample_layout(model)


def describe_event(event) -> str:
    """A sentence for one of ``core.Simulation.events`` (:class:`core.events.Event`)."""
    return event.text
