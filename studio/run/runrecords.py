"""Every step's records of the run the studio shows, kept for exact exports.

Thread: GUI (:class:`~studio.qt.window.plots.PlotPanel` feeds it every :class:`~studio.run.messages.SampleBatch`). Plain
NumPy; no Qt.

The worker records every step (the columns of ``core.records``) and sends them in its sample batches;
:class:`RunRecords` keeps them in chunks, split into *segments* where the layout of the records changes (an edit
that added a constraint continues the run with more columns). Going back in time and running on (a branch)
drops what was recorded after the branch point; a reset or a restart starts over.

:meth:`RunRecords.write_csv` writes them with the columns and number format of ``python -m core run``'s
``timeseries.csv`` (``core.output.csv_columns``; every number as ``%.17g``, so a run played in the studio and the
same scene run from the command line agree to the last digit), units added to the header cells
(:mod:`core.columns`).

Memory: at most ``limit_bytes`` (default :data:`LIMIT_BYTES`, 512 MiB: about 25 minutes of the nailed
three-link arm or 13 of the 20-link chain at 1 ms steps); beyond it the oldest chunks are dropped and the export
says from which time it starts (:attr:`RunRecords.dropped_until`).
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.columns import column_units, header
from core.fileio import atomic_writer

__all__ = ["RunRecords", "Segment", "LIMIT_BYTES"]

LIMIT_BYTES = 512 * 2 ** 20


@dataclass
class Segment:
    """GUI thread. Records of one layout: ``model`` (of their last chunk) and chunks of rows (dicts of arrays)."""
    model: object
    key: tuple
    chunks: list = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(len(c["t"]) for c in self.chunks)

    @property
    def t_first(self) -> float:
        return float(self.chunks[0]["t"][0])

    @property
    def t_last(self) -> float:
        return float(self.chunks[-1]["t"][-1])

    def nbytes(self) -> int:
        return sum(int(np.asarray(a).nbytes) for c in self.chunks for a in c.values())

    def arrays(self) -> dict:
        return {k: np.concatenate([c[k] for c in self.chunks]) for k in self.chunks[0]}


def _layout_key(model, records: dict) -> tuple:
    """What decides the CSV columns: the series and their shapes, and the names of joints and constraints."""
    return (tuple((k, np.asarray(v).shape[1:]) for k, v in records.items()), tuple(model.joint_link_names),
            tuple(model.constraint_names))


class RunRecords:
    """GUI thread. The records of the current run (module docstring)."""

    def __init__(self, limit_bytes: int = LIMIT_BYTES):
        self.limit_bytes = int(limit_bytes)
        self.run = None
        self.segments: list[Segment] = []
        self.dropped_until: float | None = None
        self._bytes = 0

    def clear(self) -> None:
        self.segments = []
        self.dropped_until = None
        self._bytes = 0

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.segments)

    @property
    def t_last(self) -> float | None:
        return self.segments[-1].t_last if self.segments else None

    def add(self, batch) -> None:
        """Take what a sample batch recorded (a new run starts over; a branch first drops what came after it)."""
        if batch.run != self.run:
            self.clear()
            self.run = batch.run
        if batch.branch is not None:
            self.truncate_after(batch.branch)
        if not batch.records or batch.model is None:
            return
        records = {k: np.asarray(v) for k, v in batch.records}
        t = records["t"]
        last = self.t_last
        if last is not None and len(t) and t[0] <= last:           # a row we have (a new model's first row)
            keep = t > last
            records = {k: v[keep] for k, v in records.items()}
            if not len(records["t"]):
                return
        key = _layout_key(batch.model, records)
        if not self.segments or self.segments[-1].key != key:
            self.segments.append(Segment(batch.model, key))
        seg = self.segments[-1]
        seg.model = batch.model
        seg.chunks.append(records)
        self._bytes += sum(v.nbytes for v in records.values())
        self._bound()

    def truncate_after(self, t: float) -> None:
        """Forget every record after simulated time ``t``."""
        kept = []
        for seg in self.segments:
            if seg.t_first > t:
                continue
            chunks = []
            for c in seg.chunks:
                if c["t"][0] > t:
                    break
                if c["t"][-1] > t:
                    keep = c["t"] <= t
                    c = {k: v[keep] for k, v in c.items()}
                chunks.append(c)
            seg.chunks = chunks
            kept.append(seg)
        self.segments = kept
        self._bytes = sum(s.nbytes() for s in self.segments)

    def _bound(self) -> None:
        while self._bytes > self.limit_bytes and (len(self.segments) > 1 or len(self.segments[0].chunks) > 1):
            seg = self.segments[0]
            chunk = seg.chunks.pop(0)
            self._bytes -= sum(v.nbytes for v in chunk.values())
            self.dropped_until = float(chunk["t"][-1])
            if not seg.chunks:
                self.segments.pop(0)

    # ---- export --------------------------------------------------------------------------------------------
    def write_csv(self, path: str | os.PathLike) -> list[Path]:
        """Write the run as CSV (module docstring): ``path`` for a run of one layout, else one file per part,
        ``<stem>-1.csv``, ``<stem>-2.csv`` … in time order. Each file is written whole or not at all. Returns
        the files."""
        from core.output import csv_columns
        path = Path(path)
        if not self.segments:
            raise ValueError("nothing has been recorded yet: play or step the simulation first")
        out = []
        for n, seg in enumerate(self.segments, start=1):
            target = path if len(self.segments) == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
            data = seg.arrays()
            names, table = csv_columns(seg.model, data)
            cells = header(names, column_units(seg.model, data))
            _write_atomically(target, cells, table)
            out.append(target)
        return out


def _write_atomically(target: Path, cells: list[str], table: np.ndarray) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(target) as f:
        text = io.TextIOWrapper(f, encoding="utf-8", newline="\n")
        text.write(",".join(cells) + "\n")
        np.savetxt(text, table, delimiter=",", fmt="%.17g")
        text.flush()
        text.detach()                                    # (the binary file is atomic_writer's to close)
