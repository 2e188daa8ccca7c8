"""Regrading on several cores: LiteLLM costs about 5 ms of CPU per call, so one process tops
out near 200 calls/s. Shards of the answers run through the batch core in worker processes,
each with its own event loop, LiteLLM client and database connection; each graded answer
is reported to the parent for progress, statistics and the results file."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue as queue_module
from collections.abc import Callable

from judges import BatchOptions, BatchStats, Graded, Grader, GradeRequest, JudgesConfig
from service.db.engine import make_engine, make_sessionmaker
from service.stores.judgments import project_batcher


def _child(
    config: JudgesConfig,
    requests: list[GradeRequest],
    options: BatchOptions,
    database_url: str,
    project: str,
    messages,
) -> None:
    factory = make_sessionmaker(make_engine(database_url))
    batch = project_batcher(Grader(config), factory, project, options)
    try:
        # a Graded pickles whole: request, result, and what was stored
        asyncio.run(batch.run(requests, lambda graded: messages.put(("graded", graded))))
    finally:
        messages.put(("done",))


def run_in_workers(
    config: JudgesConfig,
    requests: list[GradeRequest],
    options: BatchOptions,
    workers: int,
    database_url: str,
    project: str,
    stats: BatchStats,
    on_graded: Callable[[Graded], None],
) -> None:
    """Split the answers round-robin over `workers` processes; `options.concurrency` is the
    total, shared evenly. Every worker grades in `project` (its cache keys and store)."""
    context = mp.get_context("spawn")
    messages = context.Queue()
    per_worker = BatchOptions(
        **{**options.__dict__, "concurrency": max(1, options.concurrency // workers)}
    )
    processes = [
        context.Process(
            target=_child,
            args=(config, shard, per_worker, database_url, project, messages),
            daemon=True,
        )
        for shard in (requests[k::workers] for k in range(workers))
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
        stats.add(message[1])
        on_graded(message[1])
    for process in processes:
        process.join()
    failed = [p.exitcode for p in processes if p.exitcode]
    if failed:
        raise RuntimeError(
            f"{len(failed)} regrade worker(s) failed (exit codes {failed}); "
            "finished calls are stored, rerun to resume"
        )
