"""How qadi stores times, ids and numbers, for the tables and for code that compares with
them: naive UTC times (stored the same way on SQLite and PostgreSQL, so comparisons agree),
time-ordered hex ids, and finite numbers only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from calibration.finite import first_non_finite
from judges.models import ordered_id


def utcnow() -> datetime:
    """Naive UTC: stored the same way on SQLite and PostgreSQL, so comparisons agree."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    """A row's id: time-ordered, so inserts append to its primary key (judges.models)."""
    return ordered_id()


class NonFiniteValue(ValueError):
    """A number that is not finite, on its way into a table: refused."""


def refuse_non_finite(where: str, value: Any) -> None:
    """Raise NonFiniteValue naming the place (`where`, then the path inside `value`) of a
    NaN or infinity in `value`, a number or JSON. Either is a defect upstream, and stored it
    poisons every read: SQLite keeps NaN in JSON and float columns, and every answer replayed
    from it fails to serialise; PostgreSQL refuses it in JSON only after the judges were
    paid (issue 42.4)."""
    found = first_non_finite(value, where)
    if found is not None:
        path, number = found
        raise NonFiniteValue(f"{path} is {number}, not a finite number: not stored")
