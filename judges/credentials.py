"""A judge whose provider key is missing: said in the key's own name, and never retried.

Two cases. A judges file that reads a credential with LiteLLM's `os.environ/NAME` syntax
while NAME is unset is known before any call, so no call is made. A provider that finds no
key of its own (`openai/...` without `api_key`, reading OPENAI_API_KEY) fails at the call:
through the OpenAI SDK as an error that looks transient (OpenAI's "Missing credentials"
arrives as an InternalServerError), through LiteLLM's own HTTP handler (qadi's default,
judges/__init__.py) as the provider's 401 to a call sent without a key, and on the lean
transport as the server's 401 to a call that carried none. Each is recognised by
`missing_key` and named by the variables the key is read from: those LiteLLM's
`validate_environment` says the model needs, or the lean route's own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
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


def missing_key(
    sent_key: bool, exc: Exception, variables: Callable[[], list[str]], reader: str
) -> str | None:
    """'NAME is not set (READER reads it)' when `exc` is a provider finding no key (its
    words, or a 401 to a call that carried none) and `variables()` names the variables the
    key is read from; None for any other failure. `variables` is called only then: for a
    LiteLLM route it is LiteLLM's `validate_environment` (see `litellm_variables`), for a
    lean one the route's variable (judges/transport.py), which costs no LiteLLM import."""
    unauthorized = getattr(exc, "status_code", None) == 401
    if sent_key or not (unauthorized or _NO_CREDENTIALS.search(str(exc))):
        return None
    missing = variables()
    if not missing:
        return None
    verb = "is" if len(missing) == 1 else "are"
    return f"{' and '.join(missing)} {verb} not set ({reader} reads it)"


def litellm_variables(model: str) -> list[str]:
    """The variables LiteLLM says `model`'s provider reads its key from that are unset;
    none for a provider it does not know."""
    try:
        return litellm_module().validate_environment(model=model).get("missing_keys") or []
    except Exception:  # noqa: BLE001 - an unknown provider: no name to give
        return []
