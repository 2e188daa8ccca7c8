"""Regrading on several cores: LiteLLM costs about 5 ms of CPU per call, so one process tops
out near 200 calls/s. Worker processes take the answers from one bounded queue the parent
fills as it reads them (so neither holds the whole input, and a fast worker takes more), and
grade them through the batch core, each with its own event loop, LiteLLM client and database
connection; each graded answer is reported to the parent for progress, statistics and the
results file."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import queue as queue_module
import threading
from collections.abc import Callable, Iterable

from judges import BatchOptions, BatchStats, Graded, Grader, GradeRequest, JudgesConfig
from service.collector import start_up_frozen
from service.db.engine import make_engine, make_sessionmaker
from service.stores.judgments import project_batcher

QUEUED_PER_WORKER = 1000  # requests waiting for each worker: a chunk of the batch core


def _child(
    config: JudgesConfig,
    tasks,
    options: BatchOptions,
    database_url: str,
    project: str,
    messages,
) -> None:
    factory = make_sessionmaker(make_engine(database_url))
    batch = project_batcher(Grader(config), factory, project, options)
    try:
        # a Graded pickles whole: request, result, and what was stored
        requests = iter(tasks.get, None)
        with start_up_frozen():
            asyncio.run(batch.run(requests, lambda graded: messages.put(("graded", graded))))
    finally:
        messages.put(("done",))


def _feed(requests: Iterable[GradeRequest], tasks, workers: int, failed: list) -> None:
    """Put every request on the queue, then one end mark per worker (also when reading the
    input fails: the error is kept for the parent to raise once the workers are done)."""
    try:
        for request in requests:
            tasks.put(request)
    except Exception as exc:  # re-raised by run_in_workers once the workers are done
        failed.append(exc)
    finally:
        for _ in range(workers):
            tasks.put(None)


def run_in_workers(
    config: JudgesConfig,
    requests: Iterable[GradeRequest],
    options: BatchOptions,
    workers: int,
    database_url: str,
    project: str,
    stats: BatchStats,
    on_graded: Callable[[Graded], None],
) -> None:
    """Grade `requests` in `workers` processes; `options.concurrency` is the total, shared
    evenly. Every worker grades in `project` (its cache keys and store)."""
    context = mp.get_context("spawn")
    messages = context.Queue()
    tasks = context.Queue(maxsize=QUEUED_PER_WORKER * workers)
    # a worker's requests come from a queue the parent fills: waiting for the next one is
    # done in a thread (`offload`), or the calls in flight would wait with it
    per_worker = BatchOptions(
        **{
            **options.__dict__,
            "concurrency": max(1, options.concurrency // workers),
            "offload": True,
        }
    )
    processes = [
        context.Process(
            target=_child,
            args=(config, tasks, per_worker, database_url, project, messages),
            daemon=True,
        )
        for _ in range(workers)
    ]
    for process in processes:
        process.start()
    feed_failed: list[Exception] = []
    # a daemon: if every worker dies, a feeder blocked on the full queue must not keep the
    # parent alive
    threading.Thread(
        target=_feed, args=(requests, tasks, workers, feed_failed), daemon=True
    ).start()
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
    if feed_failed:
        raise feed_failed[0]
    failed = [p.exitcode for p in processes if p.exitcode]
    if failed:
        raise RuntimeError(
            f"{len(failed)} regrade worker(s) failed (exit codes {failed}); "
            "finished calls are stored, rerun to resume"
        )
