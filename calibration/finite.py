"""Where a result holds a number that is not one: NaN or an infinity, found in nested JSON.

Neither is JSON, so a report or a stored row holding one fails whoever reads it next (a
500 at serialisation, or at every later read of what was stored); the estimates and the
stores look for them before answering or writing (issue 42, items 4 and 9)."""

from __future__ import annotations

import math
from collections import deque
from typing import Any


def first_non_finite(value: Any, where: str) -> tuple[str, float] | None:
    """(path, number) of a NaN or infinity in `value` (a number, or dicts and lists of
    them), the shallowest first; paths start at `where` ('judges.J.overall.ci[0]')."""
    if not holds_non_finite(value):
        return None  # the usual case, found without naming every path (issue 40)
    waiting: deque[tuple[str, Any]] = deque([(where, value)])
    while waiting:
        path, item = waiting.popleft()
        if isinstance(item, float) and not math.isfinite(item):
            return path, item
        if isinstance(item, dict):
            waiting.extend((f"{path}.{key}", inner) for key, inner in item.items())
        elif isinstance(item, list | tuple):
            waiting.extend((f"{path}[{i}]", inner) for i, inner in enumerate(item))
    return None


def holds_non_finite(value: Any) -> bool:
    """Whether `value` holds a NaN or an infinity anywhere: every stored judgment is checked,
    and building each element's path, as the search above does, was most of the check. The
    leaves that hold no number that can fail (most of a row: text, integers, flags, nulls)
    are passed over by their exact type before any `isinstance` (a judgment row's check took
    9 µs without that, 4 with it: issue 40)."""
    waiting = [value]
    while waiting:
        item = waiting.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if isinstance(item, dict):
            waiting.extend(item.values())
        elif isinstance(item, list | tuple):
            waiting.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return True
    return False
