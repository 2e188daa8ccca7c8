"""Single-flight for judge calls within one process.

Two requests for the same cache key in flight at once would pay for the same verdict twice
(a client retrying, a batch with duplicate answers, a burst of identical requests). The first
caller of a key makes the call; callers arriving while it is in flight wait for it and reuse
its result when it is `ok`. A failed call is not shared: each waiter then calls for itself,
as it would have without single-flight (a failure is not a verdict to reuse).

Across processes on PostgreSQL the service adds a database lease on top
(`service.judging.limits.SharedLimits`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from judges.models import JudgeResult


class Flights:
    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[JudgeResult | None]] = {}

    async def share(
        self, key: str, call: Callable[[], Awaitable[JudgeResult]]
    ) -> tuple[JudgeResult, bool]:
        """The result for `key` and whether it was another caller's (shared)."""
        pending = self._pending.get(key)
        if pending is not None:
            landed = await asyncio.shield(pending)
            if landed is not None and landed.status == "ok":
                return landed, True
            return await call(), False
        future: asyncio.Future[JudgeResult | None] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        result = None
        try:
            result = await call()
            return result, False
        finally:
            del self._pending[key]
            future.set_result(result)
