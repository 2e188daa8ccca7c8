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

litellm.suppress_debug_info = True
litellm.telemetry = False


class CallOutcome(BaseModel):
    status: Literal["ok", "backend_error", "timeout"]
    text: str | None = None
    error: str | None = None
    latency_ms: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None


_KEY_LIKE = re.compile(r"\b(sk|qadi)[-_][A-Za-z0-9_\-]{8,}")


class JudgeRouter:
    """The LiteLLM router for one judges configuration."""

    def __init__(self, config: JudgesConfig) -> None:
        self.config = config
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
        self, judge: str, messages: list[dict[str, str]], response_format: dict[str, Any] | None
    ) -> CallOutcome:
        entry = self.config.judge(judge)
        kwargs: dict[str, Any] = dict(entry.sampling)
        if response_format is not None:
            kwargs["response_format"] = response_format
        started = time.perf_counter()
        try:
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
            cost_usd=(getattr(response, "_hidden_params", None) or {}).get("response_cost"),
        )

    def _failure(self, status, exc: Exception, started: float) -> CallOutcome:
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return CallOutcome(
            status=status,
            error=self.redact(message),
            latency_ms=(time.perf_counter() - started) * 1000,
        )
