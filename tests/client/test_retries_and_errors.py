"""Retries, idempotency keys and typed errors of qadi_client, over httpx's MockTransport (the
server's side is scripted here; the same paths against a live service are in
tests/integration/test_client.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
from pydantic import ValidationError
from qadi_client import (
    AsyncQadiClient,
    QadiClient,
    QadiError,
    RateLimited,
    ServiceUnavailable,
)
from qadi_client._retry import RetryPolicy, retry_after

BODY = {"kind": "rubric", "response": "r", "candidate_model": "qwen", "rubric_id": "x"}
OK = {"inserted": 1, "updated": 0}
BATCH = {"results": []}
ROW = {"item_id": "a", "rater": "h", "rater_kind": "human", "score": 1.0}


class Script:
    """Answers in order and records every request."""

    def __init__(self, *responses: httpx.Response) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.responses.pop(0)

    @property
    def keys(self) -> list[str]:
        return [r.headers.get("Idempotency-Key") for r in self.requests]


def client(script: Script, **kwargs) -> QadiClient:
    return QadiClient("http://qadi.test", api_key="k", transport=httpx.MockTransport(script),
                      **kwargs)


def test_429_waits_as_retry_after_says_and_keeps_the_key():
    script = Script(
        httpx.Response(429, json={"detail": "rate limit"}, headers={"Retry-After": "1"}),
        httpx.Response(200, json=BATCH),
    )
    started = time.monotonic()
    with client(script) as qadi:
        assert qadi.judge_batch([BODY]).results == []
    assert time.monotonic() - started >= 1.0
    assert len(script.keys) == 2 and script.keys[0] == script.keys[1] and script.keys[0]
    assert script.requests[0].headers["Authorization"] == "Bearer k"


def test_each_logical_call_has_its_own_key():
    script = Script(httpx.Response(200, json=BATCH), httpx.Response(200, json=BATCH))
    with client(script) as qadi:
        qadi.judge_batch([BODY])
        qadi.judge_batch([BODY])
    assert script.keys[0] != script.keys[1] and all(script.keys)


def test_a_429_on_an_upload_is_retried_without_a_key():
    """The service refused it before acting (nothing was stored), so waiting and sending it
    again is safe; it carries no key, as the service does not deduplicate uploads."""
    script = Script(
        httpx.Response(429, json={"detail": "rate limit"}, headers={"Retry-After": "0"}),
        httpx.Response(200, json=OK),
    )
    with client(script) as qadi:
        assert qadi.upload_grades([ROW]).inserted == 1
    assert script.keys == [None, None]


def test_503_gives_up_after_max_retries_with_a_typed_error():
    busy = httpx.Response(503, json={"detail": "busy"}, headers={"Retry-After": "0"})
    script = Script(*[busy] * 3)
    with client(script, max_retries=2) as qadi, pytest.raises(ServiceUnavailable) as raised:
        qadi.judge(**BODY)
    assert len(script.requests) == 3  # the first attempt and two retries
    assert raised.value.field_errors[0].msg == "busy"


def test_a_wait_longer_than_max_wait_is_not_slept():
    script = Script(httpx.Response(429, json={"detail": "slow down"}, headers={"Retry-After": "3600"}))
    with client(script) as qadi, pytest.raises(RateLimited) as raised:
        qadi.judge(**BODY)
    assert raised.value.headers["Retry-After"] == "3600" and len(script.requests) == 1


def test_other_errors_are_not_retried():
    script = Script(httpx.Response(500, text="boom"))
    with client(script) as qadi, pytest.raises(QadiError) as raised:
        qadi.judge(**BODY)
    assert raised.value.status_code == 500 and len(script.requests) == 1


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("7") == 7.0
    in_ten = format_datetime(datetime.now(UTC) + timedelta(seconds=10), usegmt=True)
    assert 8.0 <= retry_after(in_ten) <= 10.0
    assert retry_after("soon") is None and retry_after(None) is None
    # no header: 0.5 s, then 1 s, then 2 s (backoff * 2**attempt)
    bare = httpx.Response(503)
    policy = RetryPolicy(max_retries=3, backoff=0.5)
    assert [policy.delay(bare, n) for n in range(4)] == [0.5, 1.0, 2.0, None]


def test_bad_input_is_refused_locally_naming_the_field():
    script = Script()
    with client(script) as qadi, pytest.raises(ValidationError) as raised:
        qadi.judge(kind="rubric", candidate_model="qwen", rubric_id="x")
    assert raised.value.errors()[0]["loc"] == ("response",) and script.requests == []


def test_async_client_retries_with_the_same_key():
    script = Script(
        httpx.Response(503, json={"detail": "busy"}, headers={"Retry-After": "0"}),
        httpx.Response(200, json=OK),
    )

    async def run():
        async with AsyncQadiClient("http://qadi.test", transport=httpx.MockTransport(script)) as q:
            return await q.upload_grades([ROW])

    assert asyncio.run(run()).inserted == 1
    assert script.keys[0] == script.keys[1]
    assert "Authorization" not in script.requests[0].headers
