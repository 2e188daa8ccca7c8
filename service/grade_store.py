"""Human (and imported judge) grades in the database, in the interchange format."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from calibration.interchange import GradeFormatError, GradeRow
from service.db.schema import HumanGradeRow, utcnow
from service.json_checks import check_text

_UPSERT_INSERT = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}


def upsert_grades(session: Session, rows: list[GradeRow]) -> dict[str, int]:
    """Insert new (item_id, rater) grades; a re-imported pair replaces the old score.

    One `INSERT ... ON CONFLICT DO UPDATE` for all rows instead of a SELECT per row: the
    database settles concurrent uploads of the same pairs (no IntegrityError), and 30k rows
    take a fraction of a second. Within one upload the last row of a pair wins, as before.
    """
    if not rows:  # an INSERT of no rows would insert one row of defaults
        return {"inserted": 0, "updated": 0}
    latest = {(row.item_id, row.rater): row for row in rows}
    insert = _UPSERT_INSERT[session.get_bind().dialect.name]
    now = utcnow()
    values = [
        {
            "item_id": row.item_id,
            "rater": row.rater,
            "rater_kind": row.rater_kind,
            "score": row.score,
            "criteria": row.criteria,
            "inclusion_prob": row.inclusion_prob,
            "attributes": row.attributes,
            "created_at": now,
        }
        for row in latest.values()
    ]
    statement = insert(HumanGradeRow)
    replaced = statement.excluded
    upsert = statement.on_conflict_do_update(
        index_elements=["item_id", "rater"],
        set_={
            "rater_kind": replaced.rater_kind,
            "score": replaced.score,
            "criteria": replaced.criteria,
            "inclusion_prob": replaced.inclusion_prob,
            "attributes": replaced.attributes,
        },
    )
    session.connection().execute(upsert, values)  # Core executemany: one compiled statement
    # An inserted row carries this upload's created_at; an updated one keeps its own older
    # one. Counting them afterwards costs one query instead of a lookup per row.
    inserted = session.scalar(
        select(func.count()).select_from(HumanGradeRow).where(HumanGradeRow.created_at == now)
    )
    return {"inserted": inserted, "updated": len(rows) - inserted}


def check_storable(rows: list[GradeRow], first_row: int = 1) -> None:
    """Refuse text the database cannot hold as given (NUL; lone surrogates, which only a JSON
    escape can produce), every problem named by row (numbered from `first_row`, 2 for CSV as
    the parser numbers them) and field."""
    numbered = enumerate(rows, start=first_row)
    problems = [p for number, row in numbered for p in _unstorable(number, row)]
    if problems:
        raise GradeFormatError(problems)


def _unstorable(number: int, row: GradeRow) -> list[str]:
    fields = [("item_id", row.item_id), ("rater", row.rater)]
    fields += [(f"criteria.{k}", k) for k in row.criteria or {}]
    for key, value in row.attributes.items():
        fields += [(f"attributes.{key}", key), (f"attributes.{key}", value)]
    found = ((name, check_text(value)) for name, value in fields)
    return [f"row {number}: {name}: {problem}" for name, problem in found if problem]


def grade_from_row(row: HumanGradeRow) -> GradeRow:
    return GradeRow(
        item_id=row.item_id,
        rater=row.rater,
        rater_kind=row.rater_kind,
        score=row.score,
        criteria=row.criteria,
        inclusion_prob=row.inclusion_prob,
        attributes=row.attributes or {},
    )


def stream_grades(session: Session, query, batch: int = 1000) -> Iterator[HumanGradeRow]:
    """Every row of `query` in batches, so an export of any size never sits in memory whole."""
    yield from session.scalars(query.execution_options(yield_per=batch))
