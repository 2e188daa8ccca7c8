"""Estimates are computed off the process that serves POST /judge (issue 39), and a worker
that dies is a retryable 503, not a 500 and not a hung request."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from service.errors import Busy
from service.reporting.pool import ReportPool


def test_the_work_runs_in_another_process_and_a_dead_worker_is_busy_then_replaced():
    async def scenario() -> tuple[int, int]:
        pool = ReportPool(1)
        try:
            worker = await pool.run(os.getpid)
            with pytest.raises(Busy, match="the report worker stopped before answering; retry"):
                await pool.run(os.kill, worker, signal.SIGKILL)  # the worker kills itself
            return worker, await pool.run(os.getpid)  # a new pool answers the next request
        finally:
            pool.close()

    first, second = asyncio.run(scenario())
    assert os.getpid() not in (first, second) and first != second


def test_no_workers_computes_in_this_process():
    pool = ReportPool(0)
    assert asyncio.run(pool.run(os.getpid)) == os.getpid()
