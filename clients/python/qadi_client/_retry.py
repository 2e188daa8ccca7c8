"""When to retry a call: 429 and 503, after the server's Retry-After or an exponential backoff;
and a connection closed under a request that is safe to send again.

Kept free of I/O so the sync and async clients share one policy and only sleep differently.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

RETRY_STATUSES = frozenset({429, 503})
# A pooled keep-alive connection the server (or a load balancer) closed just as a request
# went out on it: the request may not have reached the service, or its answer was lost.
CLOSED_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclass(frozen=True)
class RetryPolicy:
    """`max_retries` extra attempts; waits `backoff * 2**attempt` s when no Retry-After is
    given, and never more than `max_wait` s for one wait (a server asking for an hour is
    answered with an error, not a hung pipeline)."""

    max_retries: int = 3
    backoff: float = 0.5
    max_wait: float = 60.0

    def delay(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None when this response is final."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        asked = retry_after(response.headers.get("Retry-After"))
        wait = asked if asked is not None else self.backoff * 2**attempt
        return wait if wait <= self.max_wait else None

    def resend(self, request: httpx.Request, error: httpx.TransportError, attempt: int) -> bool:
        """Send `request` again after its connection closed under it? Only when the service
        cannot act on it twice: a read (GET, HEAD), or a write carrying an Idempotency-Key,
        which the service answers once and replays (the client sends one only to POST /judge
        and /judge/batch, the writes the service deduplicates; a grades upload, report,
        estimate or probe run is not resent). The next attempt takes a new connection."""
        if not isinstance(error, CLOSED_CONNECTION) or attempt >= self.max_retries:
            return False
        return request.method in ("GET", "HEAD") or "Idempotency-Key" in request.headers


def retry_after(value: str | None) -> float | None:
    """RFC 9110 Retry-After: delay-seconds or an HTTP-date; None when absent or malformed."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())
