"""Heavy reads off the request path: an estimate over the database, a calibration report
(POST /calibration/reports) and a recalibration run are computed in a worker process, so
their seconds of Python (reading rows, bootstraps, PPI per stratum, plots) do not hold the
GIL of the process that serves `POST /judge` (issue 39 measured `POST /judge` p50 20 → 143 ms
while a 12 s `POST /estimates` ran in the same worker's thread pool).

The pool is made at the first heavy request (`spawn`: a clean interpreter, no inherited
connections or threads) with QADI_REPORT_WORKERS processes, and closed with the service.
A process does not take the GIL from another, but on a machine with few cores it still takes
the CPU: each worker lowers its own scheduling priority by QADI_REPORT_NICE, so when the
cores are contended the serving process runs first and the report takes what is left.
Each worker opens its own engine on the database (`worker_sessions`). 0 workers computes in the
caller's thread, as before. A worker ends when the process that made it dies, however it died
(`_exit_with_parent`).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import cache
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from service.errors import Busy

T = TypeVar("T")


class ReportPool:
    """Worker processes for reports, estimates and recalibration runs; callable from the
    event loop (`run`) and from a thread that may wait (`call`)."""

    def __init__(self, workers: int, nice: int = 0) -> None:
        self.workers = workers
        self.nice = nice  # added to each worker's niceness (lower priority), at its start
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()  # the loop and the recalibration thread share the pool

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a worker (both picklable), or in a thread with no workers. A
        worker that died (killed, out of memory) is a 503 the client may retry; the pool is
        made anew for the next request."""
        if self.workers == 0:
            return await asyncio.to_thread(fn, *args)
        pool, future = self._submit(fn, *args)
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            raise self._broken(pool) from None

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """`run` for a caller on a thread of its own (a sync endpoint, the recalibrator): it
        waits here, the work is done in a worker; with no workers, here."""
        if self.workers == 0:
            return fn(*args)
        pool, future = self._submit(fn, *args)
        try:
            return future.result()
        except BrokenProcessPool:
            raise self._broken(pool) from None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _submit(self, fn: Callable[..., T], *args: Any) -> tuple[ProcessPoolExecutor, Future]:
        with self._lock:
            if self._pool is None:
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=context,
                    initializer=_start_worker,
                    initargs=(os.getpid(), self.nice),
                )
            pool = self._pool
        try:
            return pool, pool.submit(_portable, fn, *args)
        except BrokenProcessPool:
            raise self._broken(pool) from None

    def _broken(self, pool: ProcessPoolExecutor) -> Busy:
        """Forget a pool whose worker died (unless another caller already replaced it)."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)
        return Busy("the report worker stopped before answering; retry")


def _start_worker(parent: int, nice: int) -> None:
    """A worker's start: a lower scheduling priority, and a watch on the process that made it."""
    os.nice(nice)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


PARENT_CHECK_SECONDS = 1.0


def _exit_with_parent(parent: int) -> None:
    """End this worker once `parent` is gone. A serving process killed outright (SIGKILL,
    out of memory) shuts no pool down, and its workers' task queue stays open in each of
    them, so they would wait on it forever, ~200 MB each (CI found seven after its chaos
    tests killed services)."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)


def _portable(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a worker, its exception made to cross back whole. An exception whose
    constructor takes more than its message (`CalibrationInputError(field, problems)`) does
    not unpickle, and the pool would take that for a dead worker: a 503 for what is a 422."""
    try:
        return fn(*args)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001 - any failure to cross: carry its fields instead
            raise _Carried(exc) from exc
        raise


class _Carried(Exception):
    """An exception crossing as its class, arguments and fields; unpickled, it is that
    exception again (built without its constructor)."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (type(self.exc), self.exc.args, vars(self.exc))


def _rebuilt(cls: type[Exception], args: tuple, fields: dict[str, Any]) -> Exception:
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(fields)
    return exc


@cache
def worker_sessions(url: str) -> sessionmaker[Session]:
    """This worker's sessions on the database (one engine per worker process)."""
    from service.db.engine import make_engine, make_sessionmaker

    return make_sessionmaker(make_engine(url))
