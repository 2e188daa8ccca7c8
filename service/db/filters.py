"""Query conditions shared by the list endpoints, the calibration source and regrading."""

from __future__ import annotations

from sqlalchemy import and_, or_


def rubric_matches(column, rubric: str):
    """'id@version' matches that version; a bare 'id' matches every version of it."""
    return column == rubric if "@" in rubric else column.startswith(f"{rubric}@")


def parse_pairs(values: list[str], field: str) -> dict[str, str]:
    """'key=value' strings as a dict (metadata and attribute filters); ValueError names the
    field and the bad value."""
    pairs = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ValueError(f"{field}: expected key=value, got '{value}'")
        pairs[key] = val
    return pairs


def after(created_column, id_column, stamp, last_id):
    """Rows strictly after (created_at, id) in keyset order."""
    return or_(created_column > stamp, and_(created_column == stamp, id_column > last_id))
