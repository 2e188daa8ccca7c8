"""Backpressure and rate limits for POST /judge, per process.

Admission bounds the judge calls in flight: beyond the limit the service answers 503 with
Retry-After instead of queueing without bound. RateLimit is a sliding one-minute window per
API key. With several uvicorn workers each enforces its own share.
"""

from __future__ import annotations

import math
import time
from collections import deque


class Admission:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_flight = 0

    def try_acquire(self, slots: int) -> bool:
        """Admit a request needing `slots` judge calls if they fit (a request larger than the
        whole capacity is admitted alone, so it can never starve)."""
        if self.in_flight and self.in_flight + slots > self.capacity:
            return False
        self.in_flight += slots
        return True

    def release(self, slots: int) -> None:
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
