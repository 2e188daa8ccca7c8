"""Every judge call goes through `JudgeClient.complete`: `litellm.acompletion`, or the lean
transport for a judge on an OpenAI-compatible server (judges/transport.py), with qadi's own
bounded retries (transient failures only), timeout, and cooldown per judge.

A judge with one deployment is called with `litellm.acompletion` directly: `litellm.Router`
deep-copies deployment info and tracks usage on every call, about 2 ms of CPU each
(tests/perf/bench_service.py), and with one deployment its load balancing buys nothing. A
judge with several deployments (several `model_list` entries under one `model_name`, as a
LiteLLM proxy config load-balances them) is called through a `litellm.Router` over those
deployments, built with the config's `router_settings` that choose a deployment. Either way
there is one retry layer, qadi's: the router is built with `num_retries=0` and every call
carries `num_retries=0`, because LiteLLM's retry counts differ between versions; a 429 is
retried after the provider's Retry-After. What the router gave that qadi needs for every
judge, a judge whose calls mostly fail is skipped for a while instead of hammered, is
`Cooldown` below.

LiteLLM is imported only by a client with a judge that goes through it
(judges/lazy_litellm.py): grading with judges on the lean transport alone never pays its
import.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import logging
import os
import re
import time
from collections import deque
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from judges import credentials, standins, transport
from judges.config import MODES, ROUTER_ONLY_PARAMS, JudgeEntry, JudgesConfig, QadiOptions
from judges.lazy_litellm import litellm_module
from judges.logprobs import request_params
from judges.makers import model_name
from judges.replies import read_completion

if TYPE_CHECKING:
    import litellm

# Parameter names whose values are credentials, whatever the provider.
_SECRET_NAME = re.compile(r"key|secret|token|password|credential|authorization", re.IGNORECASE)
_KEY_LIKE = re.compile(r"\b(sk|qadi)[-_][A-Za-z0-9_\-]{8,}")
# what every key-like token holds: a text without any of them is not searched (the search,
# `\b` tried at every character, was 12 µs of a verdict's 0.7 ms: issue 40)
_KEY_STARTS = ("sk-", "sk_", "qadi-", "qadi_")
_MIN_SECRET_LENGTH = 6  # shorter values would redact ordinary words
# Names LiteLLM's proxy refuses to take from a config's environment_variables
# (litellm/proxy/proxy_server.py, ProxyConfig._BLOCKED_ENV_KEYS, LiteLLM 1.106).
BLOCKED_ENV_KEYS = frozenset(
    {
        *("PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES"),
        *("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "HOME", "USER", "SHELL", "LOGNAME"),
        *("NO_PROXY", "no_proxy"),
    }
)


# LiteLLM's price table as it ships it, a file of the package
PRICE_FILE = "model_prices_and_context_window_backup.json"


@cache
def price_table() -> dict[str, dict[str, Any]]:
    """LiteLLM's price table as shipped, read from its file as LiteLLM reads it with
    LITELLM_LOCAL_MODEL_COST_MAP (each entry's `aliases` listed as models too), without
    importing LiteLLM; and the stand-ins, free. qadi looks prices up here, so an unlisted
    model's price is unknown (None), never zero."""
    package = importlib.util.find_spec("litellm")
    assert package is not None and package.submodule_search_locations, "LiteLLM is installed"
    shipped = json.loads((Path(package.submodule_search_locations[0]) / PRICE_FILE).read_bytes())
    shipped.pop("fallback_generalizations", None)  # rules LiteLLM takes out, not a model
    table = {name: entry for name, entry in shipped.items() if isinstance(entry, dict)}
    for entry in list(table.values()):
        aliases = entry.get("aliases")
        for alias in aliases if isinstance(aliases, list) else []:
            table.setdefault(alias, entry)
    return {**table, **standins.PRICES}


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD from LiteLLM's shipped price table, or None when the model is not listed."""
    for key in (model, model_name(model)):
        entry = price_table().get(key)
        if entry and "input_cost_per_token" in entry:
            return prompt_tokens * entry["input_cost_per_token"] + completion_tokens * entry.get(
                "output_cost_per_token", 0.0
            )
    return None


def resolve_env(params: dict[str, Any]) -> dict[str, Any]:
    """LiteLLM's `os.environ/NAME` references, resolved as its proxy resolves them."""
    return {
        k: os.environ.get(v.removeprefix("os.environ/"))
        if isinstance(v, str) and v.startswith("os.environ/")
        else v
        for k, v in params.items()
    }


def export_environment(config: JudgesConfig) -> dict[str, str]:
    """A config's `environment_variables`, set in os.environ as LiteLLM's proxy sets them at
    start (ProxyConfig._load_environment_variables): a value `os.environ/NAME` is read from
    the environment (and skipped when unset), any other value is taken as text, blocked
    names are left alone. Returns what was set, so every value can be redacted."""
    exported = {}
    for key, value in config.environment_variables.items():
        if key in BLOCKED_ENV_KEYS:
            continue
        if isinstance(value, str) and value.startswith("os.environ/"):
            value = os.environ.get(value.removeprefix("os.environ/"))
            if value is None:
                continue
        exported[str(key)] = os.environ[str(key)] = str(value)
    return exported


def secret_values(config: JudgesConfig, exported: dict[str, str] | None = None) -> list[str]:
    """Every credential a judge call can carry: values of secret-named parameters (nested
    headers included), everything resolved from the environment, as resolved, every
    exported `environment_variables` value (LiteLLM's proxy redacts them all too), and the
    key an OpenAI-compatible entry without `api_key` reads from its route's variable
    (`transport.route_key`: HOSTED_VLLM_API_KEY, OPENAI_API_KEY)."""
    found: set[str] = set((exported or {}).values())

    def walk(name: str, value: Any, from_env: bool) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{name}.{key}", inner, from_env)
        elif isinstance(value, str) and (from_env or _SECRET_NAME.search(name)):
            found.add(value)

    for entry in config.model_list:
        resolved = resolve_env(entry.litellm_params)
        for key, value in entry.litellm_params.items():
            walk(key, resolved[key], isinstance(value, str) and value.startswith("os.environ/"))
        if (read := transport.route_key(resolved)) is not None:
            found.add(read)
    # longest first, so a secret containing another is redacted whole
    return sorted((s for s in found if len(s) >= _MIN_SECRET_LENGTH), key=len, reverse=True)


def _direct_params(config: JudgesConfig, entry: JudgeEntry) -> dict[str, Any]:
    """What `litellm.acompletion` gets for a one-deployment judge besides the messages and
    sampling: its connection, with the router-only keys (rpm, weight, ...) left out."""
    params = {k: v for k, v in entry.litellm_params.items() if k not in ROUTER_ONLY_PARAMS}
    return {"max_retries": 0, **config.call_settings, **resolve_env(params)}


def _router(config: JudgesConfig, name: str) -> litellm.Router:
    """LiteLLM's router over the deployments of one judge, load-balancing as the proxy
    would with the config's router_settings; it never retries (qadi does)."""
    deployments = [
        {
            **(entry.model_extra or {}),
            **({"rpm": entry.rpm} if entry.rpm else {}),
            "model_name": name,
            "litellm_params": {**resolve_env(entry.litellm_params), "max_retries": 0},
        }
        for entry in config.deployments(name)
    ]
    return litellm_module().Router(model_list=deployments, num_retries=0, **config.router_args)


class Redactor:
    """Replaces known secrets, and anything shaped like an API key, with `[redacted]`."""

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        if any(start in text for start in _KEY_STARTS):
            return _KEY_LIKE.sub("[redacted]", text)
        return text


class RedactingFilter(logging.Filter):
    """Provider errors reach LiteLLM's loggers too; no secret may reach a log line."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.redact(record.getMessage())
        record.args = ()
        return True


@dataclass
class CallOutcome:
    """One call as the transport saw it: a payload, or the failure that prevented one."""

    status: Literal["ok", "backend_error", "timeout"]
    latency_ms: float
    payload: Any = None
    error: str | None = None
    cost_usd: float | None = None
    attempts: int = 1  # calls made, retries included (0: none, e.g. cooling down)
    refused: bool = False  # the server refused the request itself (not retried)
    server_said: str | None = None  # a refusal's own words, without the provider's prefixes

    @property
    def text(self) -> str | None:
        """The text as generated (a candidate's answer may end at max_tokens); a judge's
        reply is read strictly by `judges.replies.read_completion` instead."""
        if self.payload is None:
            return None
        return read_completion(self.payload, allow_truncated=True).text


OUTAGE_LEVEL = 0.05  # the cooldown's test: a failure rate above `rate` at this level


class Cooldown:
    """A judge whose calls fail at a high rate rests for `seconds`: its calls fail at once
    instead of queueing on a provider that is down (what LiteLLM's Router did).

    The rate is over the final outcomes (after qadi's retries) of the calls that ended in the
    last `window` seconds. The judge rests once at least `min_fails` of them failed and
    either every one of them failed (an outage) or an exact binomial test says their failure
    rate is above `rate` (LiteLLM's threshold, half the calls of the last minute) at level
    OUTAGE_LEVEL. A test, not the raw share: at 20% transient faults three of the first six
    calls fail one time in ten, and a share of one half would rest a healthy judge; the test
    needs, of six calls, all six. A rate, not a run of failures: three failures in a row,
    counted in completion order across 32 concurrent calls, happen at 20% transient faults
    the retries absorb (issue 31.2). A call the provider refused for its rate limit (429) is
    not recorded: the provider is up, and said when to return. Nor is a call that failed for
    the request's own fault: a server refusing the request (`refusal`) or a missing key. The
    provider is healthy, the same request fails the same way every time, and resting the
    judge would replace the message that names the fix with "cooling down".
    """

    def __init__(
        self, min_fails: int, seconds: float, rate: float = 0.5, window: float = 60.0
    ) -> None:
        self.min_fails = min_fails
        self.seconds = seconds
        self.rate = rate
        self.window = window
        self.ended: dict[str, deque[tuple[float, bool]]] = {}  # (when, failed) per judge
        self.fails: dict[str, int] = {}  # failures among `ended`
        self.until: dict[str, float] = {}

    def resting(self, judge: str) -> float:
        """Seconds of rest left for `judge` (0 when it may be called)."""
        return max(0.0, self.until.get(judge, 0.0) - time.monotonic())

    def record(self, judge: str, ok: bool) -> None:
        now = time.monotonic()
        ended = self.ended.setdefault(judge, deque())
        ended.append((now, not ok))
        fails = self.fails.get(judge, 0) + (not ok)
        while now - ended[0][0] > self.window:
            fails -= ended.popleft()[1]
        self.fails[judge] = fails
        if self.seconds and self._down(fails, len(ended)):
            self.until[judge] = now + self.seconds
            ended.clear()  # after the rest the judge starts with a clean window
            self.fails[judge] = 0

    def _down(self, fails: int, calls: int) -> bool:
        """Whether `fails` of the window's `calls` mean the provider is down."""
        if fails < self.min_fails:
            return False
        if fails == calls:
            return True
        if fails < self.rate * calls:  # the test below cannot reject: skip its cost
            return False
        from scipy.stats import binom

        return float(binom.sf(fails - 1, calls, self.rate)) < OUTAGE_LEVEL


class Pacer:
    """A judge's `rpm:` held in this process: calls start at least 60/rpm seconds apart, so a
    run of any length stays under the provider's per-minute limit instead of collecting 429s.
    Each process paces on its own (each `--workers` process, each Ray actor)."""

    def __init__(self, config: JudgesConfig) -> None:
        self.spacing = {
            name: 60.0 / config.judge(name).rpm for name in config.names if config.judge(name).rpm
        }
        self.next_start: dict[str, float] = {}

    async def wait(self, judge: str) -> None:
        spacing = self.spacing.get(judge)
        if spacing is None:
            return
        now = time.monotonic()
        start = max(now, self.next_start.get(judge, now))
        self.next_start[judge] = start + spacing  # reserved before sleeping: callers queue up
        if start > now:
            await asyncio.sleep(start - now)


class JudgeClient:
    """Calls the judges of one configuration."""

    def __init__(self, config: JudgesConfig) -> None:
        self.config = config
        exported = export_environment(config)
        self._params = {
            name: _direct_params(config, config.judge(name))
            for name in config.names
            if len(config.deployments(name)) == 1
        }
        # one-deployment judges on an OpenAI-compatible server, called without LiteLLM
        self._lean: dict[str, transport.LeanRoute] = {
            name: transport.lean_route(self._params[name])
            for name in self._params
            if config.judge(name).lean
        }
        # LiteLLM, and its timeouts' class, for the judges that go through it
        self._litellm = litellm_module() if len(self._lean) < len(config.names) else None
        self._timeouts: tuple[type[Exception], ...] = (transport.Timeout,)
        if self._litellm is not None:
            self._timeouts += (self._litellm.Timeout,)
        if any(standins.is_stand_in(e.model) for e in config.model_list):
            from judges import standin_provider  # a LiteLLM provider: imports LiteLLM

            standin_provider.register()
        self._routers = {
            name: _router(config, name) for name in config.names if name not in self._params
        }
        self._call_settings = config.call_settings
        self._logprobs = {
            name: request_params(config.judge(name).top_logprobs) for name in config.names
        }
        self._priced = {
            name
            for name in config.names
            if all(price(e.model, 1, 1) is not None for e in config.deployments(name))
        }
        # judges every deployment of which reads a credential from an unset variable
        self._unset = {
            name: message
            for name in config.names
            if all(
                (message := credentials.unset_message(name, e.litellm_params))
                for e in config.deployments(name)
            )
        }
        self.redact = Redactor(secret_values(config, exported))
        options = config.qadi
        self.cooldown = Cooldown(
            options.allowed_fails,
            options.cooldown_time,
            options.failure_rate,
            options.failure_window,
        )
        self.pacer = Pacer(config)
        log_filter = RedactingFilter(self.redact)
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "qadi"):
            logging.getLogger(name).addFilter(log_filter)

    async def complete(
        self,
        judge: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        logprobs: bool = True,
        **overrides: Any,
    ) -> CallOutcome:
        """One chat completion; `overrides` (e.g. max_tokens) replace sampling parameters;
        `logprobs` False leaves the judge's token probabilities unasked (`qadi judges check`
        finds so whether they are what a server refuses)."""
        entry = self.config.judge(judge)
        await self.pacer.wait(judge)
        started = time.perf_counter()
        resting = self.cooldown.resting(judge)
        if resting:
            return CallOutcome(
                "backend_error",
                0.0,
                attempts=0,
                error=f"judge '{judge}' is cooling down for {resting:.0f} s after repeated "
                "provider failures",
            )
        if judge in self._unset:  # a missing key is not a provider failure: nothing to retry
            return CallOutcome("backend_error", 0.0, attempts=0, error=self._unset[judge])
        asked = self._logprobs[judge] if logprobs else {}
        kwargs: dict[str, Any] = {**entry.sampling, **asked, **overrides}
        if response_format is not None:
            kwargs["response_format"] = response_format
        options = self.config.qadi
        attempt = 0
        while True:
            try:
                response = await self._call(judge, messages, options.timeout, kwargs)
                break
            except Exception as exc:  # noqa: BLE001 - any provider failure is recorded
                missing = self._missing_key(judge, entry, exc)
                if missing is not None:  # no key: the same call would fail the same way
                    return self._failure(judge, exc, started, attempt, missing, health=False)
                refused = refusal(exc, kwargs)
                if refused is not None:  # the same request would be refused again
                    failure = self._failure(
                        judge, exc, started, attempt, refused.line(judge), health=False
                    )
                    failure.refused, failure.server_said = True, refused.said
                    return failure
                wait = _retry_wait(exc, attempt, options) if _transient(exc) else None
                if wait is not None:
                    attempt += 1
                    await asyncio.sleep(wait)
                    continue
                return self._failure(judge, exc, started, attempt)
        self.cooldown.record(judge, ok=True)
        return CallOutcome(
            "ok",
            (time.perf_counter() - started) * 1000,
            payload=response,
            cost_usd=self._cost(judge, response),
            attempts=attempt + 1,
        )

    def _missing_key(self, judge: str, entry: JudgeEntry, exc: Exception) -> str | None:
        """'NAME is not set (...)' when `exc` says the call had no key to give and names the
        variable to set; None for any other failure. LiteLLM names it for its routes; for a
        lean judge, a 401 to a call that carried no key names its route's variable (LiteLLM's
        lookup would cost its import)."""
        route = self._lean.get(judge)
        if route is None:
            return credentials.missing_key(
                "api_key" in entry.litellm_params,
                exc,
                lambda: credentials.litellm_variables(entry.model),
                f"the provider of {entry.model}",
            )
        variable = transport.key_variable(entry.model)
        return credentials.missing_key(
            any(name.lower() == "authorization" for name in route.headers),
            exc,
            lambda: [variable] if variable else [],
            f"judge '{judge}' has no api_key and the lean transport",
        )

    def _call(
        self, judge: str, messages: list[dict[str, str]], timeout: float, kwargs: dict[str, Any]
    ) -> Any:
        """One attempt: the retries are qadi's (`complete`), never the provider SDK's or
        LiteLLM's, so both LiteLLM paths pass `num_retries=0` (the lean one has none)."""
        route = self._lean.get(judge)
        if route is not None:
            return transport.complete(route, messages, timeout, kwargs)
        params = self._params.get(judge)
        if params is not None:
            return self._litellm.acompletion(
                messages=messages, timeout=timeout, **{**params, **kwargs, "num_retries": 0}
            )
        return self._routers[judge].acompletion(
            model=judge,
            messages=messages,
            timeout=timeout,
            **{**self._call_settings, **kwargs, "num_retries": 0},
        )

    def _cost(self, judge: str, response: Any) -> float | None:
        """LiteLLM's computed cost, only for judges whose every deployment its shipped price
        table lists."""
        if judge not in self._priced:
            return None
        if judge in self._lean:  # the server's reply as sent: priced from its usage
            usage = response.get("usage") or {}
            return price(
                self.config.judge(judge).model,
                usage.get("prompt_tokens") or 0,
                usage.get("completion_tokens") or 0,
            )
        return (getattr(response, "_hidden_params", None) or {}).get("response_cost")

    async def aclose(self) -> None:
        """Close the lean transport's connections of the running event loop (a loop that
        ends closes its own); the service calls it as it stops."""
        await transport.close()

    def _failure(
        self,
        judge: str,
        exc: Exception,
        started: float,
        retries: int,
        message: str | None = None,
        health: bool = True,
    ) -> CallOutcome:
        """The failed call's outcome; `health` False for a failure that says nothing about
        the provider's health (see `Cooldown`), which the cooldown does not count."""
        if health and not _rate_limited(exc):  # a 429 is the provider's pacing, not its failure
            self.cooldown.record(judge, ok=False)
        if message is None:
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            after = f" (after {retries} retr{'y' if retries == 1 else 'ies'})" if retries else ""
            message = f"{type(exc).__name__}: {first_line}{after}"
        return CallOutcome(
            "timeout" if isinstance(exc, self._timeouts) else "backend_error",
            (time.perf_counter() - started) * 1000,
            error=self.redact(message),
            attempts=retries + 1,
        )


# A server that refuses the request itself: retrying sends the same request to the same rules.
REFUSAL_STATUSES = frozenset({400, 404, 405, 413, 415, 422})
# llama-cpp-python answers a request its pydantic models reject with HTTP 500 and the
# validation error as the message (its RouteErrorHandler wraps every exception so)
_VALIDATION_ERROR = re.compile(r"\b\d+ validation errors?\b")
# What LiteLLM and the OpenAI SDK put before a server's words, as often as they nest:
# "litellm.BadRequestError: ", "InternalServerError: ", "OpenAIException - ",
# "Hosted_vllmException - ", "Error code: 400 - "
_PROVIDER_PREFIX = re.compile(
    r"^(?:litellm\.\w+:|\w+(?:Error|Exception)(?::|\s+-)|Error code: \d+\s+-)\s*"
)
# what LiteLLM's router appends after the provider's message
_ROUTER_TAIL = re.compile(r"\s*(?:Received Model Group=|LiteLLM Retried:).*$", re.DOTALL)
MAX_SERVER_MESSAGE = 400


@dataclass(frozen=True)
class Refusal:
    """A server's refusal of the request as such: its HTTP status, its own words and the
    setting of the judge to change."""

    status: int
    said: str
    fix: str

    def line(self, judge: str) -> str:
        """One line naming the judge, the server's message and the fix."""
        return (
            f"judge '{judge}': the server refused the request (HTTP {self.status}): "
            f"{self.said} -- fix: {self.fix.format(judge=judge)}"
        )


def refusal(exc: Exception, sent: dict[str, Any]) -> Refusal | None:
    """The refusal, when a server refused the request as such (4xx, or a request validation
    error however it is wrapped); None for any other failure."""
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return None
    said = server_message(exc)
    if status not in REFUSAL_STATUSES and not (status >= 500 and _VALIDATION_ERROR.search(said)):
        return None
    return Refusal(status, said, refusal_fix(said, sent))


def server_message(exc: Exception) -> str:
    """The server's own words on one line: without LiteLLM's and the SDK's prefixes, and
    the `message` of a JSON error body (`{"error": {"message": ...}}`, `{"error": "..."}`,
    `{"detail": ...}`) rather than the body."""
    text = str(getattr(exc, "message", None) or exc).strip()
    while (stripped := _PROVIDER_PREFIX.sub("", text, count=1)) != text:
        text = stripped
    text = _ROUTER_TAIL.sub("", _body_message(text))
    text = " ".join(text.split())
    return text if len(text) <= MAX_SERVER_MESSAGE else text[:MAX_SERVER_MESSAGE] + "…"


def _body_message(text: str) -> str:
    """The message of an error body sent as JSON (or as the SDK's Python repr of it)."""
    if not text.startswith("{"):
        return text
    body: Any = None
    for read in (json.loads, ast.literal_eval):
        try:
            body = read(text)
            break
        except (ValueError, SyntaxError):
            continue
    if not isinstance(body, dict):
        return text
    error = body.get("error", body)
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail")
    error = error or body.get("detail") or body.get("message")
    return error if isinstance(error, str) else text


_MAX_ALLOWED = re.compile(r"max(?:imum)? allowed:? (\d+)", re.IGNORECASE)


def refusal_fix(said: str, sent: dict[str, Any]) -> str:
    """Which setting of the judge to change, by what the request carried and what the
    server named; `{judge}` stands for the judge's name."""
    lowered = said.lower()
    fmt = sent.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if sent.get("logprobs") and "logprob" in lowered:
        most = _MAX_ALLOWED.search(said)
        if most and int(most.group(1)) > 0:
            return (
                f"set `logprobs: {most.group(1)}` (or fewer, or `false`) on judge '{{judge}}' in "
                "the judges file"
            )
        return "set `logprobs: false` on judge '{judge}' in the judges file"
    if kind in ("json_schema", "json_object") and any(
        word in lowered for word in ("response_format", "schema", "json")
    ):
        sent_mode = kind
        named = [m for m in MODES if m != sent_mode and m != "none" and m in lowered]
        after = [m for m in MODES[MODES.index(sent_mode) + 1 :] if m not in named]
        first, *others = [*named, *after]
        rest = f" (or {' or '.join(f'`{m}`' for m in others)})" if others else ""
        return (
            f"set `structured_output: {first}`{rest} on judge '{{judge}}' in the judges file; "
            "`qadi judges check` finds the mode this server takes"
        )
    return "check judge '{judge}' (model, api_base, parameters); `qadi judges check` tests it"


def _transient(exc: Exception) -> bool:
    """Worth another attempt: timeouts, lost connections, rate limits, server errors. Both
    transports give timeouts 408 and lost connections 500 (LiteLLM's `Timeout` and
    `APIConnectionError` set them whatever the cause)."""
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status in (408, 409, 429))


def _rate_limited(exc: Exception) -> bool:
    return getattr(exc, "status_code", None) == 429


def _retry_wait(exc: Exception, attempt: int, options: QadiOptions) -> float | None:
    """Seconds to wait before retrying a transient failure, or None for no retry: the
    back-off (`retry_after` doubling), or, for a 429, the provider's Retry-After when it is
    longer, up to `max_retry_wait` (a provider asking for more is answered with the failure,
    not a request held past its deadline)."""
    if attempt >= options.num_retries:
        return None
    wait = options.retry_after * 2**attempt
    if _rate_limited(exc):
        asked = _retry_after_header(exc)
        if asked is not None and asked > options.max_retry_wait:
            return None
        wait = max(wait, asked or 0.0)
    return wait


def _retry_after_header(exc: Exception) -> float | None:
    """RFC 9110 Retry-After (seconds or an HTTP date) of a provider's error response, as
    the lean transport or LiteLLM keeps its headers; None when absent or unreadable."""
    headers = getattr(exc, "response_headers", None)
    if headers is None:
        headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    value = str((headers or {}).get("retry-after", "")).strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
