"""Reading provider payloads: LiteLLM response objects and batch-file dicts alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def field_of(obj: Any, name: str) -> Any:
    """Attribute or key access (None when absent): live calls give LiteLLM objects, OpenAI
    Batch-file results give plain dicts, and both are read by the same code."""
    if type(obj) is dict:  # the lean transport's replies and batch files: skip the ABC check
        return obj.get(name)
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
