"""Every judge call goes through one `litellm.Router`: retries, timeouts, cooldowns.

LiteLLM fetches its price map from the internet at import unless told not to; the flag is
set before the import so a start-up never waits on a network this machine may not have.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Literal

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from judges.config import JudgesConfig  # noqa: E402
from judges.makers import model_name  # noqa: E402

litellm.suppress_debug_info = True
litellm.telemetry = False

# LiteLLM's own price table as shipped. A Router later registers every deployment with a zero
# price, which would make an unlisted model look free; prices are looked up here instead.
PRICE_TABLE = dict(litellm.model_cost)


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD from LiteLLM's shipped price table, or None when the model is not listed."""
    for key in (model, model_name(model)):
        entry = PRICE_TABLE.get(key)
        if entry and "input_cost_per_token" in entry:
            return prompt_tokens * entry["input_cost_per_token"] + completion_tokens * entry.get(
                "output_cost_per_token", 0.0
            )
    return None


class CallOutcome(BaseModel):
    status: Literal["ok", "backend_error", "timeout"]
    text: str | None = None
    error: str | None = None
    latency_ms: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None


_KEY_LIKE = re.compile(r"\b(sk|qadi)[-_][A-Za-z0-9_\-]{8,}")


def resolve_env(params: dict[str, Any]) -> dict[str, Any]:
    """LiteLLM's `os.environ/NAME` references, resolved as its Router resolves them."""
    return {
        k: os.environ.get(v.removeprefix("os.environ/"))
        if isinstance(v, str) and v.startswith("os.environ/")
        else v
        for k, v in params.items()
    }


class JudgeRouter:
    """The LiteLLM router for one judges configuration.

    `direct=True` calls `litellm.acompletion` per deployment instead of going through
    `litellm.Router`: the same retries and timeouts, without the router's per-call
    bookkeeping (cooldowns, usage tracking), which offline regrading does not need and
    which costs about 2 ms of CPU per call (tests/perf/bench_regrade.py).
    """

    def __init__(self, config: JudgesConfig, direct: bool = False) -> None:
        self.config = config
        self.direct = direct
        self._params = {e.name: resolve_env(e.litellm_params) for e in config.model_list}
        options = config.qadi
        settings: dict[str, Any] = {
            "num_retries": options.num_retries,
            "timeout": options.timeout,
            "retry_after": options.retry_after,
            "allowed_fails": options.allowed_fails,
            "cooldown_time": options.cooldown_time,
            **config.router_settings,
        }
        model_list = [
            {"model_name": e.name, "litellm_params": dict(e.litellm_params)}
            for e in config.model_list
        ]
        self.router = litellm.Router(model_list=model_list, **settings)
        self._secrets = [
            str(e.litellm_params["api_key"])
            for e in config.model_list
            if e.litellm_params.get("api_key") and len(str(e.litellm_params["api_key"])) >= 6
        ]

    def redact(self, text: str) -> str:
        """Provider errors can echo request headers or keys; none may reach a log or a reply."""
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return _KEY_LIKE.sub("[redacted]", text)

    async def complete(
        self,
        judge: str,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None,
        **overrides: Any,
    ) -> CallOutcome:
        """One chat completion; `overrides` (e.g. max_tokens) replace sampling parameters."""
        entry = self.config.judge(judge)
        kwargs: dict[str, Any] = {**entry.sampling, **overrides}
        if response_format is not None:
            kwargs["response_format"] = response_format
        started = time.perf_counter()
        try:
            if self.direct:
                response = await litellm.acompletion(
                    messages=messages,
                    num_retries=self.config.qadi.num_retries,
                    timeout=self.config.qadi.timeout,
                    **{**self._params[judge], **kwargs},
                )
            else:
                response = await self.router.acompletion(model=judge, messages=messages, **kwargs)
        except litellm.Timeout as exc:
            return self._failure("timeout", exc, started)
        except Exception as exc:  # noqa: BLE001 - any provider failure is recorded, not raised
            return self._failure("backend_error", exc, started)
        latency = (time.perf_counter() - started) * 1000
        usage = getattr(response, "usage", None)
        return CallOutcome(
            status="ok",
            text=response.choices[0].message.content or "",
            latency_ms=latency,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cost_usd=self._cost(entry.model, response),
        )

    @staticmethod
    def _cost(model: str, response) -> float | None:
        """LiteLLM's computed cost, only for models its shipped price table lists."""
        if price(model, 1, 1) is None:
            return None
        return (getattr(response, "_hidden_params", None) or {}).get("response_cost")

    def _failure(self, status, exc: Exception, started: float) -> CallOutcome:
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return CallOutcome(
            status=status,
            error=self.redact(message),
            latency_ms=(time.perf_counter() - started) * 1000,
        )
