"""Running a bench's tasks on the local cores, robust to a worker that dies: what the adaptive-control sweep
(:mod:`core.bench.sweep`) and the thesis cylinder grid (:mod:`core.bench.cylinder`) share."""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

__all__ = ["local_results"]


def local_results(workers: int, tasks: Iterable, run: Callable, failed: Callable) -> Iterator:
    """``run(task)`` of each task, from ``workers`` processes, as they finish (in order with one worker);
    ``failed(task, exc)`` for a task that raised. A worker that dies (killed, out of memory) breaks the pool and
    every task in it: those are run again, then one per process, so only the task that kills its process is
    failed. ``run`` and ``failed`` are module-level functions (a process pool pickles them)."""
    tasks = list(tasks)
    if workers <= 1:
        for t in tasks:
            yield run(t)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool
    pending, alone = tasks, False
    while pending:
        batch, pending = (pending[:1], pending[1:]) if alone else (pending, [])
        broken = []
        with ProcessPoolExecutor(max_workers=1 if alone else workers) as ex:
            futures = {ex.submit(run, t): t for t in batch}
            for fut in as_completed(futures):
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    broken.append(futures[fut])
                except Exception as exc:      # noqa: BLE001 — that task failed
                    yield failed(futures[fut], exc)
        if alone:
            for t in broken:
                yield failed(t, RuntimeError("its worker process died (killed, or out of memory)"))
        elif broken:
            pending, alone = broken, True
