"""Estimates and reports are computed off the process that serves POST /judge (issue 39), a
worker that dies is a retryable 503, not a 500 and not a hung request, and what a worker
raises comes back as itself."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from calibration.checks import CalibrationInputError
from service.errors import Busy
from service.reporting.pool import ReportPool
from tests.conftest import ROOT


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


def test_a_worker_runs_at_lower_priority_than_the_serving_process():
    """On contended cores the scheduler serves POST /judge first (QADI_REPORT_NICE)."""
    pool = ReportPool(1, nice=7)
    try:
        assert pool.call(os.nice, 0) == min(19, os.nice(0) + 7)
    finally:
        pool.close()


def test_no_workers_computes_in_this_process():
    pool = ReportPool(0)
    assert asyncio.run(pool.run(os.getpid)) == os.getpid()


def refuse(field: str) -> None:
    raise CalibrationInputError(field, ["too many strata", "no grades"])


def test_an_error_whose_constructor_takes_more_than_a_message_crosses_back_whole():
    """CalibrationInputError(field, problems) does not unpickle by itself: uncarried, the
    pool took it for a dead worker (a 503 for what is a 422)."""
    pool = ReportPool(1)
    try:
        with pytest.raises(CalibrationInputError) as raised:
            pool.call(refuse, "by")
        assert (raised.value.field, raised.value.problems, str(raised.value)) == (
            "by", ["too many strata", "no grades"], "by: too many strata; no grades"
        )  # fmt: skip
        assert pool.call(os.getpid) != os.getpid()  # the worker still answers
    finally:
        pool.close()


def test_a_worker_ends_when_the_process_that_made_it_is_killed(tmp_path):
    """A service killed outright (SIGKILL, out of memory) closes no pool: its report workers
    must still end, not wait on their queue forever."""
    script = (
        "import os, sys, time\n"
        "from service.reporting.pool import ReportPool\n"
        "pool = ReportPool(2)\n"
        "print(pool.call(os.getpid), pool.call(os.getpid), flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        workers = {int(pid) for pid in owner.stdout.readline().split()}
        assert workers and all(alive(pid) for pid in workers)
        owner.kill()
        owner.wait(timeout=10)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in workers), f"workers {workers} outlived their owner"
    finally:
        owner.kill()


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended and not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
