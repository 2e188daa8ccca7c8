"""Human (and imported judge) grades in the database, in the interchange format."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from calibration.interchange import GradeRow
from service.db.schema import HumanGradeRow


def upsert_grades(session: Session, rows: list[GradeRow]) -> dict[str, int]:
    """Insert new (item_id, rater) grades; a re-imported pair replaces the old score."""
    inserted = updated = 0
    for row in rows:
        existing = session.scalar(
            select(HumanGradeRow).where(
                HumanGradeRow.item_id == row.item_id, HumanGradeRow.rater == row.rater
            )
        )
        if existing is None:
            session.add(
                HumanGradeRow(
                    item_id=row.item_id,
                    rater=row.rater,
                    rater_kind=row.rater_kind,
                    score=row.score,
                    criteria=row.criteria,
                    attributes=row.attributes,
                )
            )
            inserted += 1
        else:
            existing.rater_kind = row.rater_kind
            existing.score = row.score
            existing.criteria = row.criteria
            existing.attributes = row.attributes
            updated += 1
    session.flush()
    return {"inserted": inserted, "updated": updated}


def grade_from_row(row: HumanGradeRow) -> GradeRow:
    return GradeRow(
        item_id=row.item_id,
        rater=row.rater,
        rater_kind=row.rater_kind,
        score=row.score,
        criteria=row.criteria,
        attributes=row.attributes or {},
    )
