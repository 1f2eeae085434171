"""Bounded time-series storage for the live plots, so hours of simulated time stay cheap.

Thread: any (used by :mod:`studio.qt.window.plots` on the GUI thread). Plain NumPy.

:class:`History` keeps two buffers of sample rows (column 0 is time):

- the *recent* ring of the last ``capacity`` rows. Each row is written twice, at ``k`` and ``k + capacity`` of a
  buffer twice that long, so the newest ``n <= capacity`` rows are always one contiguous view: drawing a rolling
  window never copies;
- the *overview* of the whole run: every ``stride``-th row; when it fills, every other row is dropped and the
  stride doubles, so its size stays under ``overview_capacity`` however long the run.

Both are allocated up front, so their memory is bounded by ``max_bytes`` (48 MiB by default): a wide layout — a
scene whose contacts give hundreds of constraint rows, each with its force, deviation, rate and residual — keeps
proportionally fewer rows rather than a gigabyte (100 000 rows of 946 columns would be 760 MB).
"""
from __future__ import annotations

import numpy as np

__all__ = ["History", "MAX_BYTES"]

MAX_BYTES = 48 * 2**20


class History:
    """Any thread, one at a time (the plots use it on the GUI thread). Rows of ``width`` floats appended in time
    order (column 0 = t)."""

    def __init__(self, width: int, capacity: int = 60_000, overview_capacity: int = 20_000,
                 max_bytes: int = MAX_BYTES):
        if capacity < 1 or overview_capacity < 2:
            raise ValueError("capacities must be positive (overview at least 2)")
        self.width = int(width)
        rows = 2 * int(capacity) + int(overview_capacity)            # what the two buffers hold together
        fit = max_bytes // (8 * max(self.width, 1))
        scale = min(1.0, fit / rows)
        self.capacity = max(1, int(capacity * scale))
        self.overview_capacity = max(2, int(overview_capacity * scale))
        self._asked = (int(capacity), int(overview_capacity), int(max_bytes))
        self._ring = np.full((2 * self.capacity, self.width), np.nan)
        self._overview = np.full((self.overview_capacity, self.width), np.nan)
        self.clear()

    def clear(self) -> None:
        self.count = 0             # rows appended since the last clear
        self._n_overview = 0
        self.stride = 1            # the overview keeps rows whose number is a multiple of this

    # ---- writing ------------------------------------------------------------------------------------------
    def append(self, rows) -> None:
        rows = np.asarray(rows, dtype=float).reshape(-1, self.width)
        if len(rows) > self.capacity:          # only the newest rows fit in the ring; all go to the overview
            self._append_overview(rows[:-self.capacity], self.count)
            self.count += len(rows) - self.capacity
            rows = rows[-self.capacity:]
        n = len(rows)
        if n == 0:
            return
        first = self.count
        pos = (first + np.arange(n)) % self.capacity
        self._ring[pos] = rows
        self._ring[pos + self.capacity] = rows
        self._append_overview(rows, first)
        self.count += n

    def _append_overview(self, rows: np.ndarray, first: int) -> None:
        numbers = first + np.arange(len(rows))
        wanted = numbers % self.stride == 0
        rows, numbers = rows[wanted], numbers[wanted]
        while len(rows):
            room = self.overview_capacity - self._n_overview
            self._overview[self._n_overview:self._n_overview + min(room, len(rows))] = rows[:room]
            self._n_overview += min(room, len(rows))
            rows, numbers = rows[room:], numbers[room:]
            if self._n_overview == self.overview_capacity:
                # full: the kept rows are numbers 0, s, 2s, …; keep 0, 2s, 4s, … and double the stride
                half = self._overview[:self._n_overview:2].copy()
                self._overview[:len(half)] = half
                self._n_overview = len(half)
                self.stride *= 2
                wanted = numbers % self.stride == 0
                rows, numbers = rows[wanted], numbers[wanted]

    # ---- reading (views: do not write to them) ------------------------------------------------------------
    def recent(self, n: int | None = None) -> np.ndarray:
        """The newest ``n`` rows (default all that the ring holds), oldest first: a view."""
        held = min(self.count, self.capacity)
        n = held if n is None else max(0, min(int(n), held))
        if n == 0:
            return self._ring[:0]
        end = (self.count - 1) % self.capacity + self.capacity + 1
        return self._ring[end - n:end]

    def window(self, seconds: float) -> np.ndarray:
        """The rows of the last ``seconds`` of simulated time (as far back as the ring reaches): a view."""
        rows = self.recent()
        if len(rows) == 0:
            return rows
        start = np.searchsorted(rows[:, 0], rows[-1, 0] - seconds, side="left")
        return rows[start:]

    def whole(self) -> np.ndarray:
        """The whole run, thinned to at most ``overview_capacity`` rows, with the newest row last."""
        rows = self._overview[:self._n_overview]
        if self.count and (self.count - 1) % self.stride:   # the newest row was not kept: show it anyway
            rows = np.vstack([rows, self.recent(1)])
        return rows

    def between(self, t0: float, t1: float) -> np.ndarray:
        """The rows with t0 <= t <= t1: from the ring when it reaches back to t0 (a view), else from the
        overview (thinned)."""
        rows = self.recent()
        if len(rows) == 0 or rows[0, 0] > t0:
            rows = self.whole()
        if len(rows) == 0:
            return rows
        a = np.searchsorted(rows[:, 0], t0, side="left")
        b = np.searchsorted(rows[:, 0], t1, side="right")
        return rows[max(a - 1, 0):b + 1]                     # one row either side: the curves reach the edges

    @property
    def last_time(self) -> float:
        return float(self.recent(1)[0, 0]) if self.count else float("nan")

    @property
    def first_time(self) -> float:
        rows = self.whole()
        return float(rows[0, 0]) if len(rows) else float("nan")

    # ---- editing the past ---------------------------------------------------------------------------------
    def truncate_after(self, t: float) -> np.ndarray:
        """Forget the rows after time ``t`` (the run went on from an earlier state) and return them (the
        overview's, thinned, plus the ring's)."""
        whole = self.whole()
        gone = whole[whole[:, 0] > t].copy() if len(whole) else whole.copy()
        ring = self.recent()
        if len(ring) and ring[0, 0] <= t:                    # the ring reaches back to t: cut it exactly
            n_gone = len(ring) - int(np.searchsorted(ring[:, 0], t, side="right"))
            self.count -= n_gone
            keep = self._overview[:self._n_overview, 0] <= t
            self._n_overview = int(np.count_nonzero(keep))
        else:                                                # rebuild from the overview before t
            kept = whole[whole[:, 0] <= t].copy() if len(whole) else whole
            self.clear()
            self.append(kept)
        return gone

    def remap(self, width: int, source: list) -> None:
        """Change the row layout to ``width`` columns, column j taken from old column ``source[j]`` (None: NaN):
        the plots keep their history when an edit adds or removes a constraint. A wider row may hold fewer rows
        (``max_bytes``): then the newest are kept, and the overview thinned as appending would have."""
        kept = [(j, k) for j, k in enumerate(source) if k is not None]
        to = np.array([j for j, _ in kept], dtype=np.intp)
        take = np.array([k for _, k in kept], dtype=np.intp)

        def moved(a: np.ndarray) -> np.ndarray:
            out = np.full((a.shape[0], int(width)), np.nan)
            out[:, to] = a[:, take]
            return out
        resized = History(width, self._asked[0], self._asked[1], self._asked[2])
        if (resized.capacity, resized.overview_capacity) == (self.capacity, self.overview_capacity):
            self._ring, self._overview = moved(self._ring), moved(self._overview)
            self.width = int(width)
            return
        overview, ring = moved(self.whole()), moved(self.recent())
        older = overview[overview[:, 0] < ring[0, 0]] if len(ring) and len(overview) else overview
        resized.append(older if len(ring) else overview)        # (thinned already: kept as it was, then thinned)
        resized.append(ring)
        self.__dict__.update(resized.__dict__)
