"""How qadi stores times, ids and numbers, for the tables and for code that compares with
them: naive UTC times (stored the same way on SQLite and PostgreSQL, so comparisons agree),
random hex ids, and finite numbers only."""

from __future__ import annotations

import math
import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any


def utcnow() -> datetime:
    """Naive UTC: stored the same way on SQLite and PostgreSQL, so comparisons agree."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return uuid.uuid4().hex


class NonFiniteValue(ValueError):
    """A number that is not finite, on its way into a table: refused."""


def refuse_non_finite(where: str, value: Any) -> None:
    """Raise NonFiniteValue naming the place (`where`, then the path inside `value`) of a
    NaN or infinity in `value` (the shallowest), a number or JSON (dicts and lists). Either is a
    defect upstream, and stored it poisons every read: SQLite keeps NaN in a JSON column and
    float columns, and every answer replayed from it fails to serialise; PostgreSQL refuses
    it in JSON only after the judges were paid (issue 42.4)."""
    waiting: deque[tuple[str, Any]] = deque([(where, value)])
    while waiting:
        path, item = waiting.popleft()
        if isinstance(item, float) and not math.isfinite(item):
            raise NonFiniteValue(f"{path} is {item}, not a finite number: not stored")
        if isinstance(item, dict):
            waiting.extend((f"{path}.{key}", inner) for key, inner in item.items())
        elif isinstance(item, list | tuple):
            waiting.extend((f"{path}[{i}]", inner) for i, inner in enumerate(item))
