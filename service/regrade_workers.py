"""Regrading on several cores: LiteLLM costs about 5 ms of CPU per call, so one process tops
out near 200 calls/s; shards of the pending calls run in worker processes, each with its own
event loop, LiteLLM client and database connection, reporting every outcome to the parent."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue as queue_module
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from judges import Grader, JudgesConfig
from judges.models import JudgeResult
from service.db.engine import make_engine, make_sessionmaker
from service.regrade import Plan, PlannedCall, ResultWriter, Stats, run_calls


def _child(
    config: JudgesConfig,
    plan: Plan,
    calls: list[PlannedCall],
    concurrency: int,
    database_url: str,
    out: Path | None,
    messages,
) -> None:
    grader = Grader(config, direct=True)
    sessions = make_sessionmaker(make_engine(database_url))
    writer = ResultWriter(sessions, out)
    stats = Stats()

    def report(planned: PlannedCall, result: JudgeResult) -> None:
        messages.put(
            (
                "result",
                planned.answer.item_id,
                planned.judge,
                result.status,
                result.prompt_tokens,
                result.completion_tokens,
                result.cost_usd,
                result.error,
            )
        )

    try:
        asyncio.run(run_calls(grader, plan, calls, writer, concurrency, stats, report))
    finally:
        messages.put(("done",))


def run_in_workers(
    config: JudgesConfig,
    plan: Plan,
    calls: list[PlannedCall],
    workers: int,
    concurrency: int,
    database_url: str,
    out: Path | None,
    stats: Stats,
    on_result: Callable[[], None],
) -> None:
    """Split `calls` round-robin over `workers` processes; `concurrency` is the total."""
    context = mp.get_context("spawn")
    messages = context.Queue()
    light_plan = replace(plan, calls=[])
    shards = [calls[k::workers] for k in range(workers)]
    per_worker = max(1, concurrency // workers)
    processes = [
        context.Process(
            target=_child,
            args=(config, light_plan, shard, per_worker, database_url, out, messages),
            daemon=True,
        )
        for shard in shards
        if shard
    ]
    for process in processes:
        process.start()
    running = len(processes)
    while running:
        try:
            message = messages.get(timeout=1.0)
        except queue_module.Empty:
            if not any(p.is_alive() for p in processes):
                break
            continue
        if message[0] == "done":
            running -= 1
            continue
        _, item, judge, status, prompt_tokens, completion_tokens, cost, error = message
        stats.statuses[status] += 1
        stats.prompt_tokens += prompt_tokens or 0
        stats.completion_tokens += completion_tokens or 0
        stats.cost_usd += cost or 0.0
        if status != "ok":
            stats.errors.append((item, judge, status, error or ""))
        on_result()
    for process in processes:
        process.join()
    failed = [p.exitcode for p in processes if p.exitcode]
    if failed:
        raise RuntimeError(
            f"{len(failed)} regrade worker(s) failed (exit codes {failed}); "
            "finished calls are stored, rerun to resume"
        )
