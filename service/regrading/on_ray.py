"""`qadi regrade --engine ray`: the grade requests (each answer with its rubric) stream through
a Ray dataset and are graded in a Ray Data actor pool, each actor holding one `BatchGrader`
(the same batch core as the default engine, so the guard, substitutes, cache keys,
parse-error accounting and resume cannot differ).

Memory is bounded by the pool, not the input: Ray Data has no dataset fed by the driver as
it reads (every source is listed when the dataset is made), so the dataset's rows are
placeholders, one per block of requests, and the first stage turns each into the next block
the driver has read into a bounded queue (`_Feeder`). The driver holds the blocks queued,
the object store those in flight, and each outcome streams back with its request's JSON.

Nothing the driver sends or reads goes through the object store's shared memory: every
piece of a block it queues and every block of outcomes it reads is kept under Ray's inline
limit (`INLINE_BYTES`), so it travels in the call or the task's reply. A process maps the
store, and each page of it the process touches stays in its resident memory: a driver that
read its blocks of outcomes from the store grew by ~0.8 KB per answer, towards the size of
the whole store (its shared pages 18 MB at 5,000 answers, 37 MB at 29,000, while its heap
and its Python objects stayed flat). The heap those blocks now pass through is trimmed as
the driver goes (`_heap_releaser`).

Where results are written: **each actor saves its own outcomes directly**, through the batch
core's bulk writer and its own connection pool, on SQLite as on PostgreSQL; only a compact
copy of each outcome streams back to the driver, for the progress bar, the summary and
`--out`. Why not stream everything back and write from the driver:
- resume needs the store in the actors anyway: each actor looks up what is already stored
  (`find_done`) before calling, which is what makes a rerun make zero calls;
- the core saves while it grades (`judges.batch._Writer`), so a killed run loses only the
  calls in flight, not every batch whose result had not yet reached the driver;
- the driver stays a thin consumer at 10^6 answers instead of the one writer all rows queue for.
The price: every actor must reach the database. On one machine SQLite works (its writers
queue on the file lock, as with `--workers`); a cluster of several nodes needs PostgreSQL,
and a SQLite URL there is refused before anything is called.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice

import numpy as np
from pydantic import TypeAdapter

from judges import (
    BatchOptions,
    BatchStats,
    Graded,
    Grader,
    GradeRequest,
    JudgesConfig,
)
from judges.batch import chunks
from rubrics import Rubric
from service.collector import start_up_frozen
from service.db.engine import make_engine, make_sessionmaker
from service.stores.judgments import project_batcher

# Ray passes an object of up to 100 KiB inside the call or reply that carries it (its
# max_direct_call_object_size) instead of through the object store; what the driver queues
# and reads stays under this, with room for the pickle's framing.
INLINE_BYTES = 64 * 1024

# Answers per dataset: Ray Data keeps every block's stats for as long as its execution runs,
# and builds a summary of them all when it ends (its StreamingExecutor.shutdown); with one
# dataset the driver grew 0.53 KB per answer from 20,000 to 200,000, with a dataset and an
# actor pool per chunk 0.18, at the price of starting the actors again (seconds) per chunk.
CHUNK_ANSWERS = 50_000

# The driver hands the free pages of its heap back to the system every this many outcomes
# (`_heap_releaser`).
RELEASE_EVERY = 2048

# Ray Data runs up to this many batches of an async UDF at once in one actor (its
# DEFAULT_ASYNC_BATCH_UDF_MAX_CONCURRENCY); a block of this many batches keeps them all busy.
BATCHES_PER_BLOCK = 4


class RayEngineError(RuntimeError):
    """The Ray engine cannot run as asked (not installed, or a database the nodes can't share)."""


@dataclass(frozen=True)
class RayCluster:
    workers: int  # actors in the pool, one grader each
    address: str | None = None  # "auto" or host:port joins a running cluster; None starts one


class GraderActor:
    """One grader per actor: its own LiteLLM client, connection pool and semaphore of
    `options.concurrency` calls, all used on the one event loop Ray Data gives async UDFs."""

    def __init__(
        self, config: JudgesConfig, options: BatchOptions, database_url: str, project: str
    ) -> None:
        factory = make_sessionmaker(make_engine(database_url))
        self.batcher = project_batcher(Grader(config), factory, project, options)
        self.rubrics = Rubrics()

    async def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Grade a batch of requests (JSON rows, each with its rubric's JSON); return, per
        request, its two JSON columns and its pickled outcome, so the driver holds no
        request."""
        rows = zip(batch["rubric"], batch["request"], strict=True)
        requests = [self.rubrics.request(rubric, request) for rubric, request in rows]
        row_of = {id(r): i for i, r in enumerate(requests)}
        graded: list[Graded] = []
        with start_up_frozen():
            await self.batcher.run(requests, graded.append)
        rows = [row_of[id(g.request)] for g in graded]
        return {
            "rubric": batch["rubric"][rows],
            "request": batch["request"][rows],
            "outcome": np.array([pickle.dumps(_outcome(g)) for g in graded], dtype=object),
        }


def _outcome(graded: Graded) -> tuple:
    """What the driver reads of an outcome (the summary and --out): its result, or why it was
    refused and the judgments recorded for it. A result's judgments were saved here and
    repeat its results, so they stay here: nearly half the bytes of a block of fresh outcomes."""
    judgments = graded.judgments if graded.result is None else []
    return graded.result, graded.refused, judgments


class Rubrics:
    """Requests rebuilt from their rows with one rubric object per rubric: the batch core
    hashes a rubric once per object and keeps it (`BatchGrader._rubric_hash`), so a copy
    parsed for every row would be kept for every row."""

    def __init__(self) -> None:
        self.parsed: dict[str, Rubric] = {}

    def request(self, rubric: str, request: str) -> GradeRequest:
        found = self.parsed.get(rubric)
        if found is None:
            found = self.parsed[rubric] = RUBRIC.validate_json(rubric)
        return GradeRequest.model_validate({**json.loads(request), "rubric": found})


RUBRIC: TypeAdapter[Rubric] = TypeAdapter(Rubric)


def take_block(batch: dict[str, np.ndarray], feed) -> dict[str, np.ndarray]:
    """A placeholder row becomes the next block of requests the driver has read (`_Feeder`),
    taken a piece at a time up to the block's last: each request's rubric as JSON, and the
    request without it."""
    block: list[tuple[str, str]] = []
    last = False
    while not last:
        piece, last = feed.get()
        block.extend(piece)
    return {
        "rubric": np.array([rubric for rubric, _ in block], dtype=object),
        "request": np.array([request for _, request in block], dtype=object),
    }


def batch_size(answers: int, cluster: RayCluster, concurrency: int) -> int:
    """Two calls' worth per slot, smaller when the input is too short to reach every actor."""
    spread = math.ceil(answers / (cluster.workers * BATCHES_PER_BLOCK))
    return max(1, min(2 * concurrency, spread))


def run_on_ray(
    config: JudgesConfig,
    requests: Iterable[GradeRequest],
    count: int,
    options: BatchOptions,
    cluster: RayCluster,
    database_url: str,
    project: str,
    stats: BatchStats,
    on_graded: Callable[[Graded], None],
) -> None:
    """Grade the `count` `requests` in `project` in an actor pool of `cluster.workers`
    actors at `options.concurrency` calls each; each outcome is counted in `stats` and
    handed to `on_graded` as it streams back.

    The requests are read as the pool takes them: the dataset's rows are `count / block`
    placeholders, each turned into the next block the driver has read (`take_block`), which
    a bounded queue holds (`_Feeder`); so neither the driver nor the object store holds the
    input, only the blocks queued and in flight. The placeholders are run a chunk of
    `CHUNK_ANSWERS` at a time, each chunk a dataset and an actor pool of its own, so what
    Ray Data keeps of an execution is bounded by the chunk (`CHUNK_ANSWERS`)."""
    started = connect(cluster)
    import ray

    try:
        _check_shared_database(ray, database_url)
        size = batch_size(count, cluster, options.concurrency)
        block = size * BATCHES_PER_BLOCK
        blocks = max(1, math.ceil(count / block))
        per_chunk = max(1, CHUNK_ANSWERS // block)
        actor_args = (config, options, database_url, project)
        feeder = _Feeder(ray, islice(requests, count), block, blocks, cluster.workers)
        with feeder as feed, _blocks_under(ray.data.DataContext.get_current(), INLINE_BYTES):
            rubrics, release = Rubrics(), _heap_releaser()
            for first in range(0, blocks, per_chunk):
                placeholders = min(per_chunk, blocks - first)
                dataset = _pipeline(ray, feed.queue, placeholders, size, cluster, actor_args)
                for read, graded in enumerate(_outcomes(dataset, rubrics), start=1):
                    stats.add(graded)
                    on_graded(graded)
                    if read % RELEASE_EVERY == 0:
                        release()
                release()
    finally:
        if started:
            ray.shutdown()


def _pipeline(ray, queue, placeholders: int, size: int, cluster: RayCluster, actor_args: tuple):
    """A dataset of `placeholders` rows, each the next block from `queue` (`take_block`),
    graded in batches of `size` by a pool of `cluster.workers` actors (`GraderActor`)."""
    return (
        ray.data.from_items(
            [{"block": i} for i in range(placeholders)], override_num_blocks=placeholders
        )
        .map_batches(
            take_block,
            fn_kwargs={"feed": queue},
            batch_size=1,
            num_cpus=0,  # the actors hold every CPU Ray was started with
            compute=ray.data.TaskPoolStrategy(size=1),
            # a retried take would take another block, and one would be lost
            ray_remote_args_fn=lambda: {"max_retries": 0},
        )
        .map_batches(
            GraderActor,
            fn_constructor_args=actor_args,
            batch_size=size,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=cluster.workers),
            num_cpus=1,
        )
    )


def _outcomes(dataset, rubrics: Rubrics) -> Iterator[Graded]:
    """Each outcome as it streams back, with its request rebuilt from its row."""
    for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
        for rubric, request, outcome in zip(
            batch["rubric"], batch["request"], batch["outcome"], strict=True
        ):
            result, refused, judgments = pickle.loads(outcome)
            yield Graded(rubrics.request(rubric, request), result, refused, judgments)


# Pieces (a block each, unless its answers are long: `inline_pieces`) read ahead per actor:
# enough that an actor finishing a block finds the next ready.
QUEUED_PER_ACTOR = 2


class _Feeder:
    """A thread that reads the requests a block at a time into a bounded Ray queue, then
    pads it with empty blocks to the `blocks` the dataset takes (when the input ran short);
    an error reading the input is raised when the run ends, as `run_in_workers` does."""

    def __init__(self, ray, requests: Iterable[GradeRequest], block: int, blocks: int, actors: int):
        from ray.util.queue import Queue

        self.ray = ray
        self.queue = Queue(maxsize=QUEUED_PER_ACTOR * actors, actor_options={"num_cpus": 0})
        self.failed: list[BaseException] = []
        self.thread = threading.Thread(
            target=self._feed, args=(requests, block, blocks), daemon=True
        )

    def _feed(self, requests: Iterable[GradeRequest], block: int, blocks: int) -> None:
        sent, rubrics = 0, {}  # id(rubric) -> (rubric, its JSON): the requests share a few
        try:
            for chunk in chunks(requests, block):
                *pieces, last = inline_pieces([_row(r, rubrics) for r in chunk], INLINE_BYTES)
                for piece in pieces:
                    self.queue.put((piece, False))
                self.queue.put((last, True))
                sent += 1
        except Exception as exc:  # raised by __exit__ once the pool is done
            self.failed.append(exc)
        try:
            for _ in range(blocks - sent):
                self.queue.put(([], True))
        except Exception:  # the queue was ended under a failed run: nothing waits for it
            return

    def __enter__(self) -> _Feeder:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.ray.kill(self.queue.actor)
        self.thread.join(timeout=5)
        if self.failed and exc_info[0] is None:
            raise self.failed[0]


def inline_pieces(rows: list[tuple[str, str]], limit: int) -> list[list[tuple[str, str]]]:
    """`rows` in order, split in halves until each part pickles to at most `limit` bytes (or
    is one row), so the queue call carrying it passes it inline (`INLINE_BYTES`); a block of
    short answers is one piece."""
    if len(rows) <= 1 or len(pickle.dumps(rows)) <= limit:
        return [rows]
    half = len(rows) // 2
    return inline_pieces(rows[:half], limit) + inline_pieces(rows[half:], limit)


@contextmanager
def _blocks_under(context, limit: int) -> Iterator[None]:
    """Ray Data's blocks made under this (the dataset copies the context it is made in) are
    cut at `limit` bytes, so each block of outcomes the driver reads comes inline; the
    process's own setting is put back for its other datasets."""
    saved = context.target_max_block_size
    context.target_max_block_size = limit
    try:
        yield
    finally:
        context.target_max_block_size = saved


def _heap_releaser() -> Callable[[], None]:
    """glibc's `malloc_trim`, or nothing where there is no glibc. Every block of outcomes the
    driver reads inline passes through its heap in buffers of up to `INLINE_BYTES`; glibc
    keeps the pages of those it frees, and the driver's heap grew with the run though what it
    held did not (at 10,000 and 39,000 answers: 17 and 35 MB free in the heap, 129 and 112 MB
    in use); trimmed, it stays at its start's size."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    return lambda: trim(0)


def _row(request: GradeRequest, rubrics: dict[int, tuple[Rubric, str]]) -> tuple[str, str]:
    """(the rubric's JSON, the request's without it); each rubric object serialised once."""
    memo = rubrics.get(id(request.rubric))
    if memo is None or memo[0] is not request.rubric:
        memo = rubrics[id(request.rubric)] = (request.rubric, request.rubric.model_dump_json())
    return memo[1], request.model_dump_json(exclude={"rubric"})


def connect(cluster: RayCluster) -> bool:
    """Join the cluster at `cluster.address`, reuse a Ray already started in this process,
    or start a local one sized to the pool (no dashboard, warnings only). True when started
    or joined here, so the caller disconnects (which ends the pool's actors)."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise RayEngineError("the ray engine needs Ray: pip install 'qadi[ray]'") from exc
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # qadi shows its own bar
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.WARNING, "log_to_driver": False}
    if cluster.address is not None:
        ray.init(address=cluster.address, **quiet)
    else:
        ray.init(num_cpus=cluster.workers, include_dashboard=False, **quiet)
    return True


def _check_shared_database(ray, database_url: str) -> None:
    """A SQLite file is only shared by processes on one machine."""
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    if database_url.startswith("sqlite") and len(nodes) > 1:
        raise RayEngineError(
            f"the Ray cluster has {len(nodes)} nodes and QADI_DATABASE_URL is SQLite, which "
            "only one machine can reach: point QADI_DATABASE_URL at PostgreSQL"
        )
