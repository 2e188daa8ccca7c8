"""Backpressure and limits for POST /judge and POST /probes.

Admission bounds the judge calls in flight, per process: beyond the limit the service
answers 503 with Retry-After instead of queueing without bound. Only calls about to be made
count: a request is admitted after its idempotency claim, so a replay or a concurrent retry
of the same key (409) takes no slot, and a verdict already stored takes none either.
Request sizes are checked before anything is stored. The per-key rate limit is a sliding
one-minute window: per process on SQLite (`RateLimit`; one machine, one process is the
normal deployment), and shared by every process and replica on PostgreSQL (`SharedLimits`,
which also leases judge calls in flight so replicas make one backend call for identical
concurrent requests). A probe run counts against the same window, call by call
(`PacedCalls`), and a key has at most QADI_PROBE_RUNS_PER_KEY runs going (`ProbeRuns`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from judges import Grader, JudgeResult
from service.db.engine import storage_guard
from service.db.values import new_id, utcnow
from service.errors import RateLimited, Rejected, StorageUnavailable
from service.settings import Settings
from service.stores import replicas

log = logging.getLogger("qadi")
ITEM_ID_MAX = 256  # responses.item_key
PROBE_LEASE_SECONDS = 60.0  # a probe run's lease lapses this long after its last renewal
# A request's two transactions (its claim, its judgments) may each wait for the one before
# it in the group commit and then for the database (SQLite's write lock or a pooled
# connection), each wait bounded by QADI_DATABASE_WAIT_SECONDS; the slack is their work.
DATABASE_WAITS_PER_REQUEST = 4
DATABASE_SLACK_SECONDS = 5.0


def request_deadline(grader: Grader | None, database_wait_seconds: float) -> float:
    """How long a live request can take: every attempt of the panel and then of the
    stand-ins, with the back-off between attempts, plus the database's waits and a
    margin. An unfinished request older than this died with its process. The database's
    part follows the service's own wait, so raising QADI_DATABASE_WAIT_SECONDS never makes
    a request that is still waiting look dead (and its calls made twice)."""
    if grader is None:
        return 60.0
    database = DATABASE_WAITS_PER_REQUEST * database_wait_seconds + DATABASE_SLACK_SECONDS
    options = grader.config.qadi
    backoff = options.retry_after * (2**options.num_retries - 1)
    backoff += options.num_retries * options.max_retry_wait  # a 429's Retry-After, at most
    one_judge = options.timeout * (options.num_retries + 1) + backoff
    return 2 * one_judge + database


class Admission:
    """The judge calls in flight in this process, against the capacity. Taken in the
    request's first transaction (a worker thread), released on the event loop: a lock keeps
    the count exact."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_flight = 0
        self._lock = threading.Lock()

    def try_acquire(self, slots: int) -> bool:
        """Admit a request needing `slots` judge calls if they fit (a request larger than the
        whole capacity is admitted alone, so it can never starve; one needing none always)."""
        with self._lock:
            if slots and self.in_flight and self.in_flight + slots > self.capacity:
                return False
            self.in_flight += slots
            return True

    def release(self, slots: int) -> None:
        with self._lock:
            self.in_flight -= slots


class RateLimit:
    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.seen: dict[int | None, deque[float]] = {}

    def check(self, key: int | None) -> int | None:
        """None when allowed (and counted); else seconds until a slot frees up."""
        if self.per_minute <= 0:
            return None
        now = time.monotonic()
        window = self.seen.setdefault(key, deque())
        while window and now - window[0] >= 60:
            window.popleft()
        if len(window) >= self.per_minute:
            return max(1, math.ceil(60 - (now - window[0])))
        window.append(now)
        return None


def check_sizes(body: Any, settings: Settings) -> None:
    """Refuse texts, item ids and rubrics over the configured limits, naming the field."""
    limit = settings.max_text_chars
    for field in ("prompt", "response", "reference"):
        value = getattr(body, field) or ""
        if len(value) > limit:
            raise Rejected(field, f"text is {len(value)} characters; the limit is {limit}")
    item_id = body.metadata.get("item_id", "")
    if len(item_id) > ITEM_ID_MAX:
        raise Rejected("metadata.item_id", f"{len(item_id)} characters; the limit is {ITEM_ID_MAX}")
    criteria = (body.rubric or {}).get("criteria")
    if isinstance(criteria, list) and len(criteria) > settings.max_criteria:
        raise Rejected(
            "rubric.criteria", f"{len(criteria)} criteria; the limit is {settings.max_criteria}"
        )


class SharedLimits:
    """The rate limit and the judge-call leases of all replicas on one PostgreSQL database.

    The rate window and the leases are taken inside the service's prepare transaction (no
    extra round trip for a request that is not limited), the leases end in its finish
    transaction. A replica asking for a call another one has in flight polls for that
    judgment instead of calling, until the lease ends or goes stale.
    """

    def __init__(self, per_minute: int, owner: str) -> None:
        self.per_minute = per_minute
        self.owner = owner

    def lock(self, session: Session, api_key_ids: list[int | None]) -> None:
        if self.per_minute > 0:
            replicas.lock_rate_windows(session, api_key_ids)

    def take(self, session: Session, api_key_id: int | None, requests: int) -> list[int | None]:
        """Per request of the key, in order: None when within its rate, else the seconds to
        wait."""
        if self.per_minute <= 0:
            return [None] * requests
        return replicas.take_rate(session, api_key_id, self.per_minute, requests)

    def lease(self, session: Session, keys: Collection[str], stale_before: datetime) -> set[str]:
        """Lease the calls about to be made; those in flight elsewhere are returned."""
        return replicas.lease_calls(session, keys, self.owner, stale_before)

    def release(self, session: Session, keys: Collection[str]) -> None:
        replicas.release_calls(session, keys, self.owner)

    async def wait_for(
        self, factory: sessionmaker[Session], keys: set[str], stale_after: timedelta
    ) -> dict[str, JudgeResult]:
        """The ok judgments of calls other replicas are making, as they land; a call whose
        lease ends without one, or outlives the request deadline (its process died), is
        left out, for the caller to make itself."""
        found: dict[str, JudgeResult] = {}
        pending, delay = set(keys), 0.05
        while pending:
            await asyncio.sleep(delay)
            delay = min(2 * delay, 0.5)
            done, pending = await asyncio.to_thread(
                storage_guard, factory, replicas.landed, pending, utcnow() - stale_after
            )
            found.update(done)
        return found


class ProbeRuns:
    """The probe runs each API key has going, at most `per_key` at once over every process
    and replica on the database: a run holds a lease (`replicas.lease_probe_run`) that it
    renews while it runs and ends when it ends; one whose process died lapses after
    PROBE_LEASE_SECONDS."""

    def __init__(self, factory: sessionmaker[Session], per_key: int) -> None:
        self.factory = factory
        self.per_key = per_key

    @contextlib.asynccontextmanager
    async def hold(self, api_key_id: int | None) -> AsyncIterator[None]:
        """One of the key's runs, or RateLimited when it has `per_key` going."""
        owner = new_id()
        stale_before = utcnow() - timedelta(seconds=PROBE_LEASE_SECONDS)
        key = await asyncio.to_thread(
            storage_guard,
            self.factory,
            replicas.lease_probe_run,
            api_key_id,
            self.per_key,
            owner,
            stale_before,
        )
        if key is None:
            raise RateLimited(
                f"this key has {self.per_key} probe run(s) going, its limit "
                "(QADI_PROBE_RUNS_PER_KEY); retry when one ends",
                retry_after=30,
            )
        renewing = asyncio.create_task(self._renew(key, owner))
        try:
            yield
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            with contextlib.suppress(StorageUnavailable):  # then the lease lapses by itself
                await asyncio.to_thread(
                    storage_guard, self.factory, replicas.release_calls, [key], owner
                )

    async def _renew(self, key: str, owner: str) -> None:
        while True:
            await asyncio.sleep(PROBE_LEASE_SECONDS / 4)
            try:
                await asyncio.to_thread(
                    storage_guard, self.factory, replicas.renew_probe_run, key, owner
                )
            except StorageUnavailable as exc:  # the next renewal may reach it
                log.warning("probe run lease not renewed: %s", exc)


class PacedCalls:
    """Admits a probe run's judge calls (`judges.batch.Admit`): each new call is one request
    of the caller's key against its rate window, taken one at a time, waiting while the
    window is full (a run larger than a minute's rate paces itself instead of failing
    midway); once `stop` is called (the client went away) no call is admitted again."""

    def __init__(self, take: Callable[[], Awaitable[int | None]]) -> None:
        self.take = take  # None when a request is counted, else seconds until there is room
        self.stopped = asyncio.Event()
        self._turn = asyncio.Lock()

    def stop(self) -> None:
        self.stopped.set()

    async def __call__(self, calls: int) -> bool:
        if calls and not self.stopped.is_set():
            async with self._turn:
                for _ in range(calls):
                    while not self.stopped.is_set() and (wait := await self.take()) is not None:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(self.stopped.wait(), wait)
        return not self.stopped.is_set()
