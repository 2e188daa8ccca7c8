"""Human (and imported judge) grades in the database, in the interchange format."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from calibration.formats.interchange import GradeFormatError, GradeRow, row_numbers
from service.db.filters import after as after_row
from service.db.filters import json_text_equals
from service.db.schema import HumanGradeRow, utcnow
from service.db.text import check_text
from service.stores.projects import Tenant

_UPSERT_INSERT = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}


SHOWN_DUPLICATES = 10  # rows listed by `duplicates`; the count covers them all


def upsert_grades(
    session: Session, project: str, rows: list[GradeRow], first_row: int = 1
) -> dict[str, Any]:
    """Insert new (item_id, rater) grades of `project`; a re-imported pair replaces the old
    score (another project's same pair is another grade, untouched).

    One `INSERT ... ON CONFLICT DO UPDATE` for all rows instead of a SELECT per row: the
    database settles concurrent uploads of the same pairs (no IntegrityError), and 30k rows
    take a fraction of a second. Within one upload the last row of a pair wins, and the
    answer says so: `duplicates` (only when there are any) counts the rows that repeat a
    pair of an earlier row and lists the first of them, numbered from `first_row` as the
    parser numbers rows (2 for CSV; a JSON Lines file's line numbers, blank lines counted,
    as its validation errors say). inserted + updated + duplicates = rows.
    """
    if not rows:  # an INSERT of no rows would insert one row of defaults
        return {"inserted": 0, "updated": 0}
    latest: dict[tuple[str, str], GradeRow] = {}
    first_seen: dict[tuple[str, str], int] = {}
    repeated: list[dict[str, Any]] = []
    for number, row in zip(row_numbers(rows, first_row), rows, strict=True):
        pair = (row.item_id, row.rater)
        if pair in latest:
            repeated.append(
                {"row": number, "item_id": row.item_id, "rater": row.rater,
                 "repeats_row": first_seen[pair]}
            )
        else:
            first_seen[pair] = number
        latest[pair] = row
    insert = _UPSERT_INSERT[session.get_bind().dialect.name]
    now = utcnow()
    values = [
        {
            "project": project,
            "item_id": row.item_id,
            "rater": row.rater,
            "rater_kind": row.rater_kind,
            "score": row.score,
            "criteria": row.criteria,
            "inclusion_prob": row.inclusion_prob,
            "confidence": row.confidence,
            "attributes": row.attributes,
            "rationale": row.rationale,
            "created_at": now,
        }
        for row in latest.values()
    ]
    statement = insert(HumanGradeRow)
    replaced = statement.excluded
    upsert = statement.on_conflict_do_update(
        index_elements=["project", "item_id", "rater"],
        set_={
            "rater_kind": replaced.rater_kind,
            "score": replaced.score,
            "criteria": replaced.criteria,
            "inclusion_prob": replaced.inclusion_prob,
            "confidence": replaced.confidence,
            "attributes": replaced.attributes,
            "rationale": replaced.rationale,
        },
    )
    session.connection().execute(upsert, values)  # Core executemany: one compiled statement
    # An inserted row carries this upload's created_at; an updated one keeps its own older
    # one. Counting them afterwards costs one query instead of a lookup per row.
    inserted = session.scalar(
        select(func.count())
        .select_from(HumanGradeRow)
        .where(HumanGradeRow.project == project, HumanGradeRow.created_at == now)
    )
    counts: dict[str, Any] = {"inserted": inserted, "updated": len(latest) - inserted}
    if repeated:
        counts["duplicates"] = {"count": len(repeated), "rows": repeated[:SHOWN_DUPLICATES]}
    return counts


def check_project(rows: list[GradeRow], project: str, first_row: int = 1) -> None:
    """Refuse rows exported from another project (their `project` column, GET /grades): an
    admin's export holds every project's grades, and importing it into one project would
    mix them. Rows without a project are the importer's."""
    numbered = zip(row_numbers(rows, first_row), rows, strict=True)
    problems = [
        f"row {number}: project: '{row.project}' is another project's grade; this import "
        f"writes into '{project}'"
        for number, row in numbered
        if row.project not in (None, project)
    ]
    if problems:
        raise GradeFormatError(problems)


def check_storable(rows: list[GradeRow], first_row: int = 1) -> None:
    """Refuse text the database cannot hold as given (NUL; lone surrogates, which only a JSON
    escape can produce), every problem named by row (numbered from `first_row`, 2 for CSV as
    the parser numbers them) and field."""
    numbered = zip(row_numbers(rows, first_row), rows, strict=True)
    problems = [p for number, row in numbered for p in _unstorable(number, row)]
    if problems:
        raise GradeFormatError(problems)


def _unstorable(number: int, row: GradeRow) -> list[str]:
    fields = [("item_id", row.item_id), ("rater", row.rater)]
    fields += [("rationale", row.rationale)] if row.rationale else []
    fields += [(f"criteria.{k}", k) for k in row.criteria or {}]
    for key, value in row.attributes.items():
        fields += [(f"attributes.{key}", key), (f"attributes.{key}", value)]
    found = ((name, check_text(value)) for name, value in fields)
    return [f"row {number}: {name}: {problem}" for name, problem in found if problem]


def grade_from_row(row: HumanGradeRow | Row) -> GradeRow:
    """A stored grade (an ORM row, or a Core row of its columns) as it was accepted, not
    validated again: a rule added since (the inclusion_prob floor, issue 42.9) must not make
    the rows stored before it unreadable."""
    return GradeRow.model_construct(
        item_id=row.item_id,
        rater=row.rater,
        rater_kind=row.rater_kind,
        score=row.score,
        criteria=row.criteria,
        inclusion_prob=row.inclusion_prob,
        confidence=row.confidence,
        attributes=row.attributes or {},
        rationale=row.rationale,
        project=row.project,
    )


@dataclass(frozen=True)
class GradeFilter:
    """What GET /grades narrows by: item, rater, kind, and item attributes (key = value)."""

    item_id: str | None = None
    rater: str | None = None
    rater_kind: str | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)


def grades_page(
    session: Session,
    tenant: Tenant,
    where: GradeFilter,
    after: tuple[datetime, int] | None,
    limit: int,
) -> list[HumanGradeRow]:
    """The grades the tenant may read, oldest first, after the keyset `after`."""
    query = _grades(tenant, where)
    if after is not None:
        query = query.where(after_row(HumanGradeRow.created_at, HumanGradeRow.id, *after))
    return list(session.scalars(query.limit(limit)).all())


def grade_attribute_names(session: Session, tenant: Tenant, where: GradeFilter) -> list[str]:
    """Every attribute key of the matching grades, in order of first appearance (a CSV
    export's columns, known before its first row)."""
    names: dict[str, None] = {}
    attributes = _grades(tenant, where).with_only_columns(HumanGradeRow.attributes)
    for found in session.scalars(attributes.execution_options(yield_per=1000)):
        names.update(dict.fromkeys(found or {}))
    return list(names)


def stream_grades(
    session: Session, tenant: Tenant, where: GradeFilter, batch: int = 1000
) -> Iterator[GradeRow]:
    """Every matching grade in batches, so an export of any size never sits in memory whole."""
    query = _grades(tenant, where).execution_options(yield_per=batch)
    for row in session.scalars(query):
        yield grade_from_row(row)


def _grades(tenant: Tenant, where: GradeFilter):
    query = select(HumanGradeRow).where(tenant.visible(HumanGradeRow.project))
    if where.item_id:
        query = query.where(HumanGradeRow.item_id == where.item_id)
    if where.rater:
        query = query.where(HumanGradeRow.rater == where.rater)
    if where.rater_kind:
        query = query.where(HumanGradeRow.rater_kind == where.rater_kind)
    for key, value in where.attributes.items():
        query = query.where(json_text_equals(HumanGradeRow.attributes, key, value))
    return query.order_by(HumanGradeRow.created_at, HumanGradeRow.id)
