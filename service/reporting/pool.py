"""Heavy reads off the request path: an estimate over the database is computed in a worker
process, so its seconds of Python (reading rows, PPI per stratum) do not hold the GIL of the
process that serves `POST /judge` (issue 39 measured `POST /judge` p50 20 → 143 ms while a
12 s `POST /estimates` ran in the same worker's thread pool).

The pool is made at the first heavy request (`spawn`: a clean interpreter, no inherited
connections or threads) with QADI_REPORT_WORKERS processes, and closed with the service.
Each worker opens its own engine on the database (`worker_sessions`). 0 workers computes in the
request's thread, as before.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import cache
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from service.errors import Busy

T = TypeVar("T")


class ReportPool:
    """Worker processes for reports and estimates."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a worker (both picklable), or in a thread with no workers. A
        worker that died (killed, out of memory) is a 503 the client may retry; the pool is
        made anew for the next request."""
        if self.workers == 0:
            return await asyncio.to_thread(fn, *args)
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        except BrokenProcessPool:
            self._pool = None
            raise Busy("the report worker stopped before answering; retry") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


@cache
def worker_sessions(url: str) -> sessionmaker[Session]:
    """This worker's sessions on the database (one engine per worker process)."""
    from service.db.engine import make_engine, make_sessionmaker

    return make_sessionmaker(make_engine(url))
