"""Opaque keyset cursors: (created_at, id) of the last row seen, base64-encoded."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel

from service.api.errors import invalid
from service.db.filters import parse_pairs


def encode_cursor(created_at: datetime, row_id: str | int) -> str:
    raw = f"{created_at.isoformat()}|{row_id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        stamp, _, row_id = base64.urlsafe_b64decode(padded).decode().partition("|")
        if "\x00" in row_id:  # PostgreSQL text cannot hold NUL: never a row id
            raise ValueError(row_id)
        return datetime.fromisoformat(stamp), row_id
    except (ValueError, UnicodeDecodeError):
        raise invalid("cursor: not a cursor returned by this API", "query") from None


def naive_utc(moment: datetime) -> datetime:
    """Timestamps are stored as naive UTC; an aware filter value is converted."""
    if moment.tzinfo is None:
        return moment
    from datetime import UTC

    return moment.astimezone(UTC).replace(tzinfo=None)


def query_pairs(values: list[str], field: str) -> dict[str, str]:
    """`parse_pairs` for a query parameter: a malformed pair is a 422 naming the field."""
    try:
        return parse_pairs(values, field)
    except ValueError as exc:
        raise invalid(str(exc), "query") from None


def within_bytes(rows: Sequence[BaseModel], max_bytes: int) -> list[BaseModel]:
    """The first rows whose JSON fits in `max_bytes` (at least one, so a page always moves
    on): a page of long texts stops early and its cursor leads to the rest, instead of one
    response of tens of megabytes (200 copies of a 300 kB answer were 60 MB)."""
    kept, used = [], 0
    for row in rows:
        used += len(row.model_dump_json().encode())
        if kept and used > max_bytes:
            break
        kept.append(row)
    return kept
