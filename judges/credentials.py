"""A judge whose provider key is missing: said in the key's own name, and never retried.

Two cases. A judges file that reads a credential with LiteLLM's `os.environ/NAME` syntax
while NAME is unset is known before any call, so no call is made. A provider that finds no
key of its own (`openai/...` without `api_key`, reading OPENAI_API_KEY) fails at the call:
through the OpenAI SDK as an error that looks transient (OpenAI's "Missing credentials"
arrives as an InternalServerError), through LiteLLM's own HTTP handler (qadi's default,
judges/__init__.py) as the provider's 401 to a call sent without a key. Either is
recognised here and named by the keys LiteLLM's `validate_environment` says the model needs.
"""

from __future__ import annotations

import os
import re
from typing import Any

from judges.lazy_litellm import litellm_module

# What providers say when they found no credential at all (not a wrong one).
_NO_CREDENTIALS = re.compile(
    r"missing credentials|missing .{0,20}api key|api_key client option must be set|"
    r"no api key|api key is not set|set .{0,10}api_key",
    re.IGNORECASE,
)


def unset_references(litellm_params: dict[str, Any]) -> list[tuple[str, str]]:
    """(parameter, variable) for each `os.environ/NAME` reference whose NAME is unset."""
    return [
        (key, value.removeprefix("os.environ/"))
        for key, value in litellm_params.items()
        if isinstance(value, str)
        and value.startswith("os.environ/")
        and not os.environ.get(value.removeprefix("os.environ/"))
    ]


def unset_message(judge: str, litellm_params: dict[str, Any]) -> str | None:
    """'OPENAI_API_KEY is not set (...)' when the judge reads a credential from an unset
    variable; None when every reference resolves."""
    unset = unset_references(litellm_params)
    if not unset:
        return None
    names = " and ".join(sorted({name for _, name in unset}))
    where = ", ".join(f"litellm_params.{key}: os.environ/{name}" for key, name in unset)
    verb = "is" if len({name for _, name in unset}) == 1 else "are"
    return f"{names} {verb} not set (judge '{judge}' reads {where}); no call was made"


def missing_key(model: str, has_api_key: bool, exc: Exception) -> str | None:
    """'OPENAI_API_KEY is not set' when `exc` is a provider finding no key (its words, or a
    401 to a call that had none) and LiteLLM names the variable the model reads it from;
    None for any other failure."""
    unauthorized = getattr(exc, "status_code", None) == 401
    if has_api_key or not (unauthorized or _NO_CREDENTIALS.search(str(exc))):
        return None
    try:
        missing = litellm_module().validate_environment(model=model).get("missing_keys") or []
    except Exception:  # noqa: BLE001 - an unknown provider: no name to give
        return None
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return f"{' and '.join(missing)} {verb} not set (the provider of {model} reads it)"


def unsent_key(judge: str, variable: str | None, sent_key: bool, exc: Exception) -> str | None:
    """'NAME is not set (...)' when a lean call carried no key and its server answered 401,
    NAME being the variable the lean transport reads for the route; None for any other
    failure (LiteLLM's lookup in `missing_key` would cost its import)."""
    if sent_key or variable is None or getattr(exc, "status_code", None) != 401:
        return None
    return (
        f"{variable} is not set (judge '{judge}' has no api_key and the lean transport reads "
        "it); the server answered 401"
    )
