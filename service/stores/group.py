"""Group commit: the database work of concurrent requests, run together.

Under load many POST /judge requests reach the same step (claim before the judge calls,
finish after) at once. Each would pay a thread hop, a transaction and, on SQLite, a turn at
the single write lock. `GroupCommit` queues them and runs every job waiting at that moment
in one transaction on one thread: the first job runs at once, the rest ride along with the
next round, so at low load nothing waits and at high load the cost per request falls.
An outage fails every job of the round (each gets the exception); any other failure is
one job's doing, so the round is run again one job per transaction and only that job fails.

Left alone, rounds stay small under load: while one round runs, only the few jobs that
arrive meanwhile wait for the next (about four a round at 32 requests in flight), and a
round's fixed cost (the thread hop, the session, each statement's execution) is most of
its CPU. So a round about to start small waits `linger` seconds for more jobs when enough
others are in flight to come (`siblings`), as PostgreSQL's `commit_delay` waits only when
`commit_siblings` other transactions are active: an idle service never waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from service.db.engine import storage_guard
from service.errors import StorageUnavailable

Job = TypeVar("Job")
Result = TypeVar("Result")


class GroupCommit(Generic[Job, Result]):
    def __init__(
        self,
        factory: sessionmaker[Session],
        work: Callable[[Session, Sequence[Job]], Sequence[Result]],
        max_jobs: int = 128,
        linger: float = 0.0,
        in_flight: Callable[[], int] = lambda: 0,
        siblings: int = 5,
        observe: Callable[[int], None] = lambda jobs: None,
    ) -> None:
        """`in_flight()`: the jobs under way that may come to this step (those waiting
        included); with `siblings` of them besides the waiting ones, a small round waits
        `linger` seconds first. `observe(jobs)` is told each round's size as it starts (a
        metric: how well rounds are shared is what the linger tunes)."""
        self.factory = factory
        self.work = work
        self.max_jobs = max_jobs
        self.linger = linger
        self.in_flight = in_flight
        self.siblings = siblings
        self.observe = observe
        self.waiting: list[tuple[Job, asyncio.Future]] = []
        self.draining = False

    async def submit(self, job: Job) -> Result:
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((job, future))
        if not self.draining:
            self.draining = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self.waiting:
                if self._worth_waiting():
                    await asyncio.sleep(self.linger)
                batch = self.waiting[: self.max_jobs]
                del self.waiting[: self.max_jobs]
                self.observe(len(batch))
                await self._run(batch)
        finally:
            self.draining = False

    def _worth_waiting(self) -> bool:
        """Whether the next round should wait for more jobs: it would start small and
        enough others are under way to join it."""
        waiting = len(self.waiting)
        return (
            self.linger > 0
            and waiting < self.max_jobs
            and self.in_flight() - waiting >= self.siblings
        )

    async def _run(self, batch: list[tuple[Job, asyncio.Future]]) -> None:
        jobs = [job for job, _ in batch]
        try:
            results: Sequence[Any] = await asyncio.to_thread(
                storage_guard, self.factory, self.work, jobs
            )
        except StorageUnavailable as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except Exception as exc:  # noqa: BLE001 - one job's doing: find it, fail only it
            if len(batch) > 1:
                for single in batch:
                    await self._run([single])
            elif not batch[0][1].done():
                batch[0][1].set_exception(exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)
