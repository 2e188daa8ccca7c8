"""How qadi stores times and ids, for the tables and for code that compares with them:
naive UTC times (stored the same way on SQLite and PostgreSQL, so comparisons agree) and
random hex ids."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def utcnow() -> datetime:
    """Naive UTC: stored the same way on SQLite and PostgreSQL, so comparisons agree."""
    return datetime.now(UTC).replace(tzinfo=None)


def new_id() -> str:
    return uuid.uuid4().hex
