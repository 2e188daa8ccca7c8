"""ASGI middleware: request body size limit (413), hostile input (422) and HTTP metrics."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service import metrics
from service.api.json_checks import InputProblem, strict_loads


async def _send_json(send: Send, status: int, body: dict) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class BodySizeLimit:
    """Refuse bodies over `max_bytes` (413), and hostile input before any endpoint reads it.

    A JSON body must pass `strict_loads` (finite numbers, bounded depth, storable text) and
    no query parameter may hold a NUL: each is a 422 in FastAPI's `detail` shape naming the
    field, instead of a 500 from a validator, an encoder or the database further down.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = _query_problem(scope.get("query_string") or b"")
        if problem is not None:
            await _send_json(send, 422, problem)
            return
        too_big = _problem(
            ["body"], f"request body is larger than the {self.max_bytes}-byte limit", "too_large"
        )
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _send_json(send, 413, too_big)
            return
        if declared is not None and not _is_json(headers):
            await self.app(scope, receive, send)
            return
        # JSON bodies are read whole to be checked; bodies without a declared length
        # (chunked) are buffered up to the limit. Either way they are replayed.
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await _send_json(send, 413, too_big)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        if _is_json(headers):
            problem = _json_problem(b"".join(m.get("body", b"") for m in messages))
            if problem is not None:
                await _send_json(send, 422, problem)
                return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def _is_json(headers: dict[bytes, bytes]) -> bool:
    kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    return kind == b"application/json" or kind.endswith(b"+json")


def _problem(loc: list, message: str, kind: str = "value_error") -> dict:
    """FastAPI's error shape, the one every error of the API has (see service/api/errors.py)."""
    return {"detail": [{"loc": loc, "msg": message, "type": kind}]}


def _json_problem(body: bytes) -> dict | None:
    """A 422 body when the JSON is hostile or is not JSON (FastAPI's own answers to the
    latter are a 400 naming nothing, or a 422 echoing the whole body); an empty body is left
    to the route, whose error names the missing field."""
    if not body.strip():
        return None
    try:
        strict_loads(body)
    except InputProblem as exc:
        return _problem(["body", *exc.path], str(exc))
    except UnicodeDecodeError as exc:
        return _problem(["body"], f"is not UTF-8 text (byte {exc.start})", "json_invalid")
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        return _problem(["body"], f"is not valid JSON: {exc.msg} ({where})", "json_invalid")
    return None


def _query_problem(query: bytes) -> dict | None:
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            return _problem(["query", name.replace("\x00", "")], "contains a NUL character")
    return None


class HttpMetrics:
    """Counts every request and times it, by method, route and status."""

    MAX_SERIES = 1024  # label sets remembered; past it the memo starts again

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        # each label set's counter and histogram, looked up once: `labels()` checks and
        # locks on every call, 1% of a judged request's CPU (issue 40)
        self._series: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            method = scope.get("method", "")
            count, latency = self._series_of(method, path, str(status["code"]))
            count.inc()
            latency.observe(time.perf_counter() - started)

    def _series_of(self, method: str, path: str, code: str) -> tuple[Any, Any]:
        key = (method, path, code)
        series = self._series.get(key)
        if series is None:
            if len(self._series) >= self.MAX_SERIES:
                self._series.clear()
            series = self._series[key] = (
                metrics.HTTP_REQUESTS.labels(method, path, code),
                metrics.HTTP_LATENCY.labels(method, path),
            )
        return series
