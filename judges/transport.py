"""The lean transport: a judge on an OpenAI-compatible server (vLLM, qadi's local judge, any
entry marked `transport: lean`) called over aiohttp directly, not through LiteLLM.

Why: against a server that answers at once, `litellm.acompletion` on a `hosted_vllm/` route
costs about 2.9 ms of CPU per call and a bare aiohttp loop 0.15 ms (issue 40,
docs/explanation/performance.md). On a GPU that CPU, not the model, caps a regrade.

It is a transport only: `judges.client.JudgeClient.complete` keeps the retries, timeout,
cooldown, pacing and the guard, and reads the reply with `judges.replies.read_completion`
like any other. A failure is raised as a `LeanError` named and numbered as the LiteLLM
exception the `hosted_vllm/` route raises for it (class name, `status_code`, Retry-After, the
server's words after LiteLLM's "Hosted_vllmException - "), so the retry and failure rules
cannot tell the two transports apart, and grading with lean judges alone never imports
LiteLLM (about 4 s of CPU at start-up). The reply is the server's JSON as a dict.

One `aiohttp.ClientSession` per server and event loop, reused by every call; its pool has no
limit of its own, so the concurrency is the caller's (the service's judge slots, the regrade's
`--concurrency`), never a second, hidden one. Each request carries an `X-Request-Id`: vLLM
names its engine request by it (serving.py `_base_request_id`) and aborts the request when the
client disconnects (`with_cancellation`, vLLM 0.32), which is what aiohttp does to a request
that is cancelled or times out: its connection is closed, not returned to the pool.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import aiohttp
import msgspec

from judges.payloads import decode_completion, decode_json

# routes whose servers speak OpenAI's chat API: the name LiteLLM gives them in errors, and the
# variable LiteLLM reads their key from when the entry gives none
ROUTES = {
    "hosted_vllm/": ("Hosted_vllm", "HOSTED_VLLM_API_KEY"),
    "openai/": ("OpenAI", "OPENAI_API_KEY"),
}
MAX_ERROR_BODY = 2000  # characters of an error reply kept in the exception


def key_variable(model: Any) -> str | None:
    """The variable LiteLLM reads an OpenAI-compatible route's key from (None for another
    route: LiteLLM's own business)."""
    prefix = next((p for p in ROUTES if isinstance(model, str) and model.startswith(p)), None)
    return ROUTES[prefix][1] if prefix else None


def route_key(params: dict[str, Any]) -> str | None:
    """The key a call with these (resolved) litellm_params carries on an OpenAI-compatible
    route, on either transport: `api_key`, or else the route's variable, as LiteLLM reads it;
    None for another route or when neither is set."""
    if params.get("api_key"):
        return str(params["api_key"])
    variable = key_variable(params.get("model"))
    return os.environ.get(variable) or None if variable else None


@dataclass(frozen=True)
class LeanRoute:
    """Where and how one judge is called: the URL, the model as the server names it and
    the headers (credentials, `extra_headers`)."""

    url: str
    model: str
    label: str  # what LiteLLM writes before a server's message ("Hosted_vllmException - ")
    headers: dict[str, str] = field(default_factory=dict)


def lean_route(params: dict[str, Any]) -> LeanRoute:
    """The route of a one-deployment judge from its resolved litellm_params; without an
    `api_key`, the key is read from the variable LiteLLM reads for the route, as it reads it
    (a server started with `--api-key` takes the same settings on either transport)."""
    model: str = params["model"]
    prefix = next(p for p in ROUTES if model.startswith(p))
    label = ROUTES[prefix][0]
    base = str(params.get("api_base") or params.get("base_url")).rstrip("/")
    headers = {"Content-Type": "application/json"}
    api_key = route_key(params)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    for name in ("headers", "extra_headers"):
        headers.update({str(k): str(v) for k, v in (params.get(name) or {}).items()})
    return LeanRoute(
        url=f"{base}/chat/completions",
        model=model.removeprefix(prefix),
        label=label,
        headers=headers,
    )


class _Pools:
    """The sessions of one event loop, by server; closed when the loop shuts down (an async
    generator the loop closes in `shutdown_asyncgens`, as `asyncio.run` does) or by
    `close`."""

    def __init__(self) -> None:
        self.sessions: dict[str, aiohttp.ClientSession] = {}
        self.closer = self._close_at_shutdown()

    async def start(self) -> None:
        await anext(self.closer)  # from here the loop tracks the generator

    async def _close_at_shutdown(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.close()

    async def close(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await session.close()


_POOLS: dict[asyncio.AbstractEventLoop, _Pools] = {}  # shared by every client of a process


def _server(url: str) -> str:
    return url.split("/", 3)[2]


def _open_session(url: str) -> aiohttp.ClientSession | None:
    """The running loop's open session for the server of `url`, if it has one: every call
    but a server's first (a plain function, so the usual case makes no coroutine)."""
    pools = _POOLS.get(asyncio.get_running_loop())
    session = pools.sessions.get(_server(url)) if pools is not None else None
    return session if session is not None and not session.closed else None


async def _new_session(url: str) -> aiohttp.ClientSession:
    """The session for the server of `url` in the running loop, made when it has none open
    (the loop's pools too, on its first)."""
    loop = asyncio.get_running_loop()
    pools = _POOLS.get(loop)
    if pools is None:
        for ended in [lp for lp in _POOLS if lp.is_closed()]:
            del _POOLS[ended]
        pools = _POOLS[loop] = _Pools()
        await pools.start()
    session = _open_session(url)  # another call may have opened it during the await above
    if session is None:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        session = pools.sessions[_server(url)] = aiohttp.ClientSession(
            connector=connector, skip_auto_headers=("User-Agent",)
        )
    return session


async def complete(
    route: LeanRoute, messages: list[dict[str, Any]], timeout: float, params: dict[str, Any]
) -> dict[str, Any]:
    """One chat completion: the server's JSON reply, or the `LeanError` for the failure
    (named as the exception the `hosted_vllm/` route raises for it)."""
    body = {"model": route.model, "messages": messages, **params}
    extra = body.pop("extra_body", None)  # sent as top-level fields, as the SDK sends them
    if extra:
        body.update(extra)
    data = msgspec.json.encode(body)  # UTF-8 JSON, a tenth of json.dumps's CPU (issue 40)
    headers = {**route.headers, "X-Request-Id": request_id()}
    session = _open_session(route.url) or await _new_session(route.url)
    try:
        async with session.post(
            route.url, data=data, headers=headers, timeout=_timeout(timeout)
        ) as response:
            body = await response.read()
            status, reply_headers = response.status, response.headers
    except TimeoutError:
        message = f"Connection timed out. Timeout passed={timeout}"
        raise _status_error(route, 408, message, {}) from None
    except aiohttp.ClientError as exc:  # refused, reset, cut off: a 500, as LiteLLM reports it
        raise _status_error(route, 500, f"{type(exc).__name__}: {exc}", {}) from None
    if status != 200:
        raise _status_error(route, status, body.decode(errors="replace"), reply_headers)
    try:
        # the typed decoder pays off only where there are tokens to read; a reply to a call
        # that asked for none would be decoded by it and then again by json (its fallback)
        return decode_completion(body) if params.get("logprobs") else decode_json(body)
    except ValueError:
        shown = body[:200].decode(errors="replace")
        raise _status_error(route, 500, f"not JSON: {shown}", {}) from None


class _RequestIds:
    """Request ids unique to the process: a random prefix and a count. `uuid4` per call read
    16 bytes from the kernel and built a UUID, about 1% of a regrade's call (issue 40). A
    forked child (a service worker, a Ray worker) draws a prefix of its own, so two processes
    calling one server never send the same id."""

    def __init__(self) -> None:
        self.renew()
        if hasattr(os, "register_at_fork"):  # Unix only; Windows starts processes afresh
            os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.prefix = uuid.uuid4().hex
        self.count = itertools.count()

    def __call__(self) -> str:
        return f"{self.prefix}-{next(self.count)}"


request_id = _RequestIds()


@lru_cache(maxsize=16)
def _timeout(seconds: float) -> aiohttp.ClientTimeout:
    """One (immutable) ClientTimeout per timeout: a call's is its judge's, and few differ."""
    return aiohttp.ClientTimeout(total=seconds)


async def close() -> None:
    """Close the sessions of the running loop (the others close with their loops); a later
    call opens new ones."""
    pools = _POOLS.pop(asyncio.get_running_loop(), None)
    if pools is not None:
        await pools.close()


class LeanError(Exception):
    """A failed lean call: the HTTP status (500 for a connection refused, reset or cut off,
    408 for a timeout, as LiteLLM reports them), the message and the reply's headers, read
    by `judges.client` exactly as it reads LiteLLM's exceptions."""

    def __init__(self, message: str, status_code: int, response_headers: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.response_headers = response_headers or {}


# Named as LiteLLM's exceptions for the same status on an OpenAI-compatible route, so a stored
# error starts with the same word on either transport ("InternalServerError: ...").
class BadRequestError(LeanError): ...


class AuthenticationError(LeanError): ...


class NotFoundError(LeanError): ...


class Timeout(LeanError): ...


class RateLimitError(LeanError): ...


class InternalServerError(LeanError): ...


class BadGatewayError(LeanError): ...


class ServiceUnavailableError(LeanError): ...


class APIError(LeanError): ...


_BY_STATUS: dict[int, type[LeanError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    404: NotFoundError,
    408: Timeout,
    422: BadRequestError,
    429: RateLimitError,
    500: InternalServerError,
    502: BadGatewayError,
    503: ServiceUnavailableError,
    504: Timeout,  # a gateway's timeout is LiteLLM's Timeout; 403, as any other, its APIError
}


def _status_error(route: LeanRoute, status: int, text: str, headers: Any) -> LeanError:
    """The exception for an HTTP error reply, worded as LiteLLM words it ("Hosted_vllmException
    - <the server's words>"), with the status and the reply's headers (Retry-After)."""
    kind = _BY_STATUS.get(status, APIError)
    return kind(f"{route.label}Exception - {text[:MAX_ERROR_BODY]}", status, headers)
