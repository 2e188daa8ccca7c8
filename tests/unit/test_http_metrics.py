"""Every request is counted once under its method, route and status, with the counters
looked up once per label set (HttpMetrics keeps them)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from prometheus_client import REGISTRY

from service.api.middleware import HttpMetrics


def counted(method: str, route: str, status: str) -> float:
    labels = {"method": method, "route": route, "status": status}
    return REGISTRY.get_sample_value("qadi_http_requests_total", labels) or 0.0


def timed(method: str, route: str) -> float:
    labels = {"method": method, "route": route}
    return REGISTRY.get_sample_value("qadi_http_request_duration_seconds_count", labels) or 0.0


async def answer(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": scope["status"], "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def sent(_message) -> None:
    return None


def test_each_request_is_counted_once_under_its_own_labels_past_the_memo_s_limit():
    middleware = HttpMetrics(answer)
    middleware.MAX_SERIES = 2  # the memo starts again twice below
    requests = [("POST", "/t-judge", 200)] * 3 + [("GET", "/t-healthz", 200), ("POST", "/t-judge", 422)]
    before = {(m, r, s): counted(m, r, str(s)) for m, r, s in requests}
    timed_before = timed("POST", "/t-judge")
    for method, route, status in requests * 2:
        scope = {"type": "http", "method": method, "route": SimpleNamespace(path=route), "status": status}
        asyncio.run(middleware(scope, None, sent))
    assert counted("POST", "/t-judge", "200") - before[("POST", "/t-judge", 200)] == 6
    assert counted("GET", "/t-healthz", "200") - before[("GET", "/t-healthz", 200)] == 2
    assert counted("POST", "/t-judge", "422") - before[("POST", "/t-judge", 422)] == 2
    assert timed("POST", "/t-judge") - timed_before == 8
