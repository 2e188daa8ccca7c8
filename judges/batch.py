"""Grading many requests through the one core: plan each, reuse what the store already
holds, call the rest at bounded concurrency, save the outcomes in bulk.

`qadi regrade`, the benchmarks and the service (`POST /judge` and `/judge/batch`) all grade
here, so the guard, substitutes on provider failure, cache keys and parse-error accounting
cannot differ between them. A run is resumable because a call is identified by its cache
key: a rerun finds every stored key (`find_done`) and makes only the missing calls.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, TypeVar

from judges.cache import JudgmentStore
from judges.config import JudgeConfigError
from judges.grading import Grader, PlannedGrade
from judges.guard import GuardError
from judges.models import Graded, GradeRequest, GradeResult, JudgeResult
from judges.prompts import RequestError
from judges.templates import TemplateError
from rubrics import rubric_hash

# What makes a request ungradable before any call; anything else is a bug and propagates.
REFUSALS = (GuardError, RequestError, TemplateError, JudgeConfigError)
# Asked before a request is graded, with the new judge calls it will make: False stops the run.
Admit = Callable[[int], Awaitable[bool]]
T = TypeVar("T")
EXAMPLES = 50  # failures and refusals kept, with their reasons, for a run's summary


@dataclass
class BatchOptions:
    concurrency: int = 32  # judge calls in flight
    reuse: tuple[str, ...] = ("ok",)  # stored statuses that count as done
    force: bool = False  # call again even when a result is stored
    record_reused: bool = True  # save a `cached` judgment for a reused result
    chunk: int = 1000  # requests planned and looked up together
    write_batch: int = 500  # graded requests per bulk save
    # how long a save waits for more graded requests to join it: without it each save held
    # about two at 400 calls/s, a transaction and a thread hand-off per two calls (issue 40)
    write_linger: float = 0.05
    # blocking work (reading the requests, planning them, the store's lookups and saves) in
    # threads, so the event loop goes on serving others meanwhile (the service's requests).
    # False where the loop serves nothing but this batch (`qadi regrade`): there a thread
    # overlapped nothing the loop needed, and its contention with the loop for the GIL cost
    # about a fifth of a call's CPU (issue 40; docs/explanation/performance.md)
    offload: bool = True


@dataclass
class BatchStats:
    """What a run did, for its summary: new calls by status, reuse, refusals, cost."""

    requests: int = 0
    calls: Counter = field(default_factory=Counter)
    reused: int = 0
    guard_skips: int = 0
    # failed calls and refused requests are counted; the first EXAMPLES of each are kept to
    # be shown, so a run of a million failures holds fifty
    failed: int = 0
    refusals: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (item, reason)
    failures: list[tuple[str, str, str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0  # of the priced calls
    unpriced: int = 0  # answered calls whose model has no price: their cost is unknown
    stopped: bool = False  # `admit` stopped the run: some requests were never graded

    @property
    def made(self) -> int:
        return sum(self.calls.values())

    @property
    def cost_text(self) -> str:
        """The cost as a person should read it: an unknown price is never shown as zero."""
        if not self.unpriced:
            return f"${self.cost_usd:.4f}"
        known = f"${self.cost_usd:.4f} + " if self.cost_usd else ""
        return f"{known}unknown ({self.unpriced} call(s) of unpriced models)"

    def add(self, graded: Graded) -> None:
        self.requests += 1
        item = graded.request.metadata.get("item_id", "")
        if graded.refused is not None:
            self.refusals += 1
            if len(self.refused) < EXAMPLES:
                self.refused.append((item, str(graded.refused)))
            return
        if graded.result is not None:
            self.guard_skips += len(graded.result.skipped)
        for result in graded.result.results if graded.result else graded.judgments:
            if result.cached:
                self.reused += 1
                continue
            self.calls[result.status] += 1
            self.prompt_tokens += result.prompt_tokens or 0
            self.completion_tokens += result.completion_tokens or 0
            self.cost_usd += result.cost_usd or 0.0
            if result.cost_usd is None and result.status in ("ok", "parse_error"):
                self.unpriced += 1  # answered, so paid for, at a price LiteLLM does not know
            if result.status != "ok":
                self.failed += 1
                if len(self.failures) < EXAMPLES:
                    self.failures.append((item, result.judge, result.status, result.error or ""))


class BatchGrader:
    def __init__(
        self,
        grader: Grader,
        store: JudgmentStore,
        options: BatchOptions | None = None,
        slots: asyncio.Semaphore | None = None,
        scope: str | None = None,
    ) -> None:
        """`slots` shares another batch grader's bound on calls in flight (a probe run in
        the service counts against the same judge concurrency as live grading); `scope` is
        the namespace of every cache key it plans (a qadi project; `judges.cache`)."""
        self.grader = grader
        self.store = store
        self.scope = scope
        self.options = options or BatchOptions()
        self.slots = slots or asyncio.Semaphore(max(1, self.options.concurrency))
        self._rubric_hashes: dict[int, tuple[Any, str]] = {}

    def plan(self, request: GradeRequest) -> PlannedGrade | Exception:
        """The plan, or the reason the request cannot be graded (returned, not raised, so
        one bad answer does not stop a batch)."""
        try:
            return self.grader.plan(request, self._rubric_hash(request), self.scope)
        except REFUSALS as exc:
            return exc

    def plan_all(self, requests: Sequence[GradeRequest]) -> list[PlannedGrade | Exception]:
        """Every request's plan (CPU work: rendering and hashing each prompt, about 0.1 ms a
        request; callers on an event loop run it in a thread)."""
        return [self.plan(request) for request in requests]

    def _rubric_hash(self, request: GradeRequest) -> str:
        """Many requests share one rubric object; hash it once (the object is kept alive in
        the memo, so its id cannot be reused by another)."""
        rubric = request.rubric
        memo = self._rubric_hashes.get(id(rubric))
        if memo is None or memo[0] is not rubric:
            memo = (rubric, rubric_hash(rubric))
            self._rubric_hashes[id(rubric)] = memo
        return memo[1]

    async def known(self, plans: Iterable[PlannedGrade | Exception]) -> dict[str, JudgeResult]:
        """Stored results for every key these plans may call; nothing with `force`."""
        if self.options.force:
            return {}
        keys = {k for p in plans if isinstance(p, PlannedGrade) for k in p.keys.values()}
        return await self.store.find_done(sorted(keys), self.options.reuse) if keys else {}

    async def grade(
        self,
        plan: PlannedGrade,
        known: Mapping[str, JudgeResult],
        tag: Any = None,
        stop: Callable[[JudgeResult], bool] | None = None,
    ) -> Graded:
        """Grade one plan (a cascade when `stop` is given, see `Grader.grade`) and choose
        what to persist (reused results only when recorded; a reused result that is not
        recorded again keeps the id of the stored one)."""
        result = await self.grader.grade(plan, known, self.slots, stop)
        if self.options.record_reused or not any(r.cached for r in result.results):
            return Graded(plan.request, result, judgments=list(result.results), tag=tag)
        results = [
            # reused from the store (keeping its id), or shared with a concurrent identical
            # call (`judges.flights`: saved by the call that made it)
            known.get(r.cache_key, r).model_copy(update={"judge": r.judge, "cached": True})
            if r.cached
            else r
            for r in result.results
        ]
        result = result.model_copy(update={"results": results})
        return Graded(plan.request, result, judgments=[r for r in results if not r.cached], tag=tag)

    async def grade_one(self, request: GradeRequest, tag: Any = None) -> GradeResult:
        """One request, looked up, graded and saved; raises what `Grader.plan` raises."""
        plan = self.plan(request)
        if isinstance(plan, Exception):
            raise plan
        graded = await self.grade(plan, await self.known([plan]), tag)
        await self.store.save([graded])
        return graded.result

    async def run(
        self,
        requests: Iterable[GradeRequest],
        on_graded: Callable[[Graded], None] = lambda graded: None,
        stats: BatchStats | None = None,
        admit: Admit | None = None,
    ) -> BatchStats:
        """Grade every request; outcomes are saved in bulk as they come, so an interrupted
        run loses at most what was in flight and a rerun resumes. Requests are read and
        planned in a thread (`BatchOptions.offload`), so a large run does not hold the event
        loop.

        `admit(calls)` is awaited before each plan is graded, with the judge calls it will
        make that are not stored (a service paces them to a key's rate and stops them when
        its client has gone): once it answers False no request starts, `stats.stopped` is
        set, and the calls already in flight finish and are saved."""
        stats = stats if stats is not None else BatchStats()
        queue: asyncio.Queue = asyncio.Queue(maxsize=2 * self.options.chunk)
        writer = _Writer(self.store, self.options.write_batch, self.options.write_linger)
        workers = max(1, self.options.concurrency)

        async def produce() -> None:
            # taken a chunk at a time: requests may be read from a file or a database as
            # they are asked for, and only the chunks in the queue are held
            pending = chunks(requests, self.options.chunk)
            offload = self.options.offload
            while (chunk := await blocking(offload, next, pending, None)) is not None:
                if stats.stopped:
                    break
                plans = await blocking(offload, self.plan_all, chunk)
                known = await self.known(plans)
                for request, plan in zip(chunk, plans, strict=True):
                    await queue.put((request, plan, known))
            for _ in range(workers):
                await queue.put(None)

        async def work() -> None:
            while (item := await queue.get()) is not None:
                request, plan, known = item
                if stats.stopped:
                    continue  # the rest of the queue is drained, not graded
                if isinstance(plan, Exception):
                    graded = Graded(request, refused=plan)
                else:
                    await writer.room()
                    if admit is not None and not await admit(len(pending_calls([plan], known))):
                        stats.stopped = True
                        continue
                    graded = await self.grade(plan, known)
                stats.add(graded)
                await writer.put(graded)
                on_graded(graded)

        writer.start()
        try:
            async with asyncio.TaskGroup() as graders:
                graders.create_task(produce())
                for _ in range(workers):
                    graders.create_task(work())
        finally:
            # what was graded is saved even when grading failed or was interrupted: those
            # calls are paid for, and a rerun must find them
            await writer.close()
        return stats


async def blocking(offload: bool, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`, in a thread when `offload` (see `BatchOptions.offload`)."""
    return await asyncio.to_thread(work, *args) if offload else work(*args)


class _Writer:
    """Collects graded requests from the workers and saves them in bulk, one store call per
    batch (what arrives within `linger` seconds of the first, up to `batch`), while grading
    goes on."""

    def __init__(self, store: JudgmentStore, batch: int, linger: float) -> None:
        self.store = store
        self.batch = batch
        self.linger = linger
        self.stopping = asyncio.Event()  # set by close: a save waiting for company stops waiting
        self.limit = 2 * batch  # graded requests waiting to be saved before graders wait
        self.queue: asyncio.Queue = asyncio.Queue()
        self.draining: asyncio.Task | None = None

    def start(self) -> None:
        self.draining = asyncio.create_task(self.drain())

    async def room(self) -> None:
        """Wait, before a new call is made, while saving lags behind grading, so graded
        requests do not pile up in memory (waiting after the call instead could drop a paid
        result when the run is interrupted); a failed save is raised here."""
        while self.queue.qsize() >= self.limit:
            if self.draining.done():
                self.draining.result()
                raise RuntimeError("the judgment writer stopped before the run ended")
            await asyncio.sleep(0.01)

    async def put(self, graded: Graded) -> None:
        if graded.judgments:
            await self.queue.put(graded)

    async def close(self) -> None:
        """Save what is queued and stop; raises what a save raised."""
        self.stopping.set()
        await self.queue.put(None)
        await asyncio.shield(self.draining)

    async def drain(self) -> None:
        closing = False
        while not closing:
            items = [await self.queue.get()]
            if items[0] is not None and self.linger and self.queue.qsize() < self.batch:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), self.linger)
            while not self.queue.empty() and len(items) < self.batch:
                items.append(self.queue.get_nowait())
            if items[-1] is None:
                closing = True
                items.pop()
            if items:
                await self.store.save(items)


def chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def pending_calls(
    plans: Sequence[PlannedGrade | Exception], known: Mapping[str, JudgeResult]
) -> list[tuple[PlannedGrade, str]]:
    """(plan, judge) for every panel call not already stored: what a run would call, for dry
    runs and batch files (stand-ins are only called when a provider fails)."""
    return [
        (plan, judge)
        for plan in plans
        if isinstance(plan, PlannedGrade)
        for judge in plan.panel.judges
        if plan.keys[judge] not in known
    ]
