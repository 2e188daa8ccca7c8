"""Query conditions shared by the list endpoints, the calibration source and regrading."""

from __future__ import annotations

from sqlalchemy import Boolean, String, literal, tuple_
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from service.db.schema import ResponseRow


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


def not_a_probe():
    """Responses that are real answers, not a probe's perturbed copy (`probe_of` attribute,
    service/reporting/probes.py): calibration, estimates and regrading read items, never probes."""
    return _NotAProbe(ResponseRow.attributes)


class _NotAProbe(FunctionElement):
    """No `probe_of` key (or a null one). On PostgreSQL `NOT (attributes ? 'probe_of')`:
    the planner estimated `attributes ->> 'probe_of' IS NULL` at 0.5% of answers when it
    matches nearly all, so a calibration over a day's window joined every answer in a
    nested loop instead of reading the window by the time index (issue 39; EXPLAIN in
    docs/explanation/performance.md). A null `probe_of` (never written) still counts as none."""

    type = Boolean()
    inherit_cache = True
    name = "not_a_probe"


@compiles(_NotAProbe)
def _not_a_probe_sqlite(element, compiler, **kw) -> str:
    column = compiler.process(element.clauses.clauses[0], **kw)
    return f"(json_extract({column}, '$.probe_of') IS NULL)"


@compiles(_NotAProbe, "postgresql")
def _not_a_probe_postgresql(element, compiler, **kw) -> str:
    column = compiler.process(element.clauses.clauses[0], **kw)
    return f"(NOT ({column} ? 'probe_of') OR ({column} ->> 'probe_of') IS NULL)"


def after(created_column, id_column, stamp, last_id):
    """Rows strictly after (created_at, id) in keyset order, as a row comparison: PostgreSQL
    starts a (created_at, id) index scan at the cursor for `(a, b) > (x, y)`, while the
    equivalent `a > x OR (a = x AND b > y)` walked the index from its start under a generic
    plan (277 ms for a page near the end of 1M judgments; issue 39). SQLite reads row values
    since 3.15."""
    return tuple_(created_column, id_column) > tuple_(stamp, last_id)


class _JsonTextEquals(FunctionElement):
    """`column[key]` (a JSON object of strings) equals `value`, for any key text.

    On PostgreSQL a containment, `column @> {"key": "value"}`, which the GIN index of the
    answers' attributes answers (migration 0015) where `column ->> key = value` read every
    answer (issue 39). SQLAlchemy's `column[key]` on SQLite renders a JSON path ('$."key"')
    that a key holding a double quote breaks; looking the key up with json_each compares it
    as plain text. Both match string values only.
    """

    type = Boolean()
    inherit_cache = True
    name = "json_text_equals"


@compiles(_JsonTextEquals)
def _json_text_equals_postgresql(element, compiler, **kw) -> str:
    column, key, value = (compiler.process(c, **kw) for c in element.clauses)
    return f"({column} @> jsonb_build_object(CAST({key} AS TEXT), CAST({value} AS TEXT)))"


@compiles(_JsonTextEquals, "sqlite")
def _json_text_equals_sqlite(element, compiler, **kw) -> str:
    column, key, value = (compiler.process(c, **kw) for c in element.clauses)
    return (
        f"EXISTS (SELECT 1 FROM json_each({column}) AS attr "
        f"WHERE attr.key = {key} AND attr.type = 'text' AND attr.value = {value})"
    )


def json_text_equals(column, key: str, value: str):
    return _JsonTextEquals(column, literal(key), literal(value))


def has_attribute(key: str, value: str):
    """The answer's attribute `key` is the string `value` (metadata= filters)."""
    return json_text_equals(ResponseRow.attributes, key, value)


class _JsonText(FunctionElement):
    """A JSON column as its stored text, optionally without one top-level key, so a reader
    of millions of rows decodes each distinct text once (issue 39): with the key removed
    (an answer's own `item_id`), answers of one kind share their text."""

    type = String()
    inherit_cache = True
    name = "json_text"


@compiles(_JsonText)
def _json_text_postgresql(element, compiler, **kw) -> str:
    column, *dropped = (compiler.process(c, **kw) for c in element.clauses)
    return f"CAST(({column} - {dropped[0]}) AS TEXT)" if dropped else f"CAST({column} AS TEXT)"


@compiles(_JsonText, "sqlite")
def _json_text_sqlite(element, compiler, **kw) -> str:
    column, *dropped = element.clauses
    text = compiler.process(column, **kw)
    if not dropped:
        return text
    return f"json_remove({text}, '$.' || json_quote({compiler.process(dropped[0], **kw)}))"


def json_text(column, without: str | None = None):
    """`column` (JSON) as text, without the top-level key `without` when given."""
    return _JsonText(column) if without is None else _JsonText(column, literal(without))
