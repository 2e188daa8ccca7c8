"""The stand-in judges (judges/standins.py) as a LiteLLM custom provider.

`register()` adds the `qadi-stand-in` provider to `litellm.custom_provider_map` (LiteLLM's
documented way to add a provider in-process) and prices its models at zero in LiteLLM's
table, so LiteLLM computes their cost as for any model. `JudgeClient` registers it when a
judges file names a stand-in; nothing else about a stand-in's call differs from a model's.
"""

from __future__ import annotations

import time
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError

from judges.standins import BEHAVIOURS, PRICES, PROVIDER, ROUTE, reply, token_logprobs


class StandInJudge(CustomLLM):
    """The LiteLLM handler of every `qadi-stand-in/<behaviour>` model."""

    def completion(self, model: str, messages: list, *args: Any, **kwargs: Any):
        return self._respond(model, messages, kwargs.get("optional_params") or {})

    async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any):
        return self._respond(model, messages, kwargs.get("optional_params") or {})

    def _respond(self, model: str, messages: list, optional_params: dict) -> Any:
        behaviour = model.removeprefix(ROUTE)
        if behaviour not in BEHAVIOURS:
            raise CustomLLMError(
                404, f"no stand-in '{behaviour}'; stand-ins are {', '.join(BEHAVIOURS)}"
            )
        response_format = optional_params.get("response_format")
        text = reply(behaviour, messages, response_format)
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": text},
        }
        if optional_params.get("logprobs"):
            content = token_logprobs(behaviour, messages, response_format, text)
            choice["logprobs"] = {"content": content} if content else None
        return litellm.ModelResponse(
            model=f"{ROUTE}{behaviour}",
            created=int(time.time()),
            choices=[choice],
            usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        )


_HANDLER = StandInJudge()


def register() -> None:
    """Make the `qadi-stand-in/...` models callable through LiteLLM in this process."""
    if any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
        return
    litellm.custom_provider_map = [
        *litellm.custom_provider_map,
        {"provider": PROVIDER, "custom_handler": _HANDLER},
    ]
    litellm.register_model(PRICES)
