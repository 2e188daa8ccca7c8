"""The SME queue as the lead sees it: how much is open and done, what each person did, the
items no active person can be given, and the items an SME could not judge (with her
reason), so nothing waits in the queue without anyone knowing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.db.schema import SmeAssignmentRow, SmeQueueRow, SmeRow

NOTES_SHOWN = 50


def queue_counts(session: Session, project: str) -> dict[str, int]:
    """Open and done items of the project's queue."""
    counts = dict(
        session.execute(
            select(SmeQueueRow.status, func.count())
            .where(SmeQueueRow.project == project)
            .group_by(SmeQueueRow.status)
        ).all()
    )
    return {"open": counts.get("open", 0), "done": counts.get("done", 0)}


def labels_by_person(session: Session, project: str) -> dict[int, int]:
    """How many labels each person of the project submitted."""
    rows = session.execute(
        select(SmeAssignmentRow.sme_id, func.count())
        .where(SmeAssignmentRow.project == project, SmeAssignmentRow.status == "submitted")
        .group_by(SmeAssignmentRow.sme_id)
    )
    return dict(rows.all())


def unroutable(session: Session, project: str) -> list[tuple[str, int]]:
    """Open items by the expertise they need, for each expertise no active person has."""
    held = {
        tag
        for tags in session.scalars(
            select(SmeRow.tags).where(SmeRow.project == project, SmeRow.revoked_at.is_(None))
        )
        for tag in tags or []
    }
    needed = session.execute(
        select(SmeQueueRow.route_tag, func.count())
        .where(
            SmeQueueRow.project == project,
            SmeQueueRow.status == "open",
            SmeQueueRow.route_tag != "",
        )
        .group_by(SmeQueueRow.route_tag)
        .order_by(SmeQueueRow.route_tag)
    ).all()
    return [(tag, count) for tag, count in needed if tag not in held]


def cannot_judge_notes(session: Session, project: str) -> list[dict[str, Any]]:
    """The latest items an SME could not judge, with who and why."""
    rows = session.execute(
        select(SmeQueueRow.item_id, SmeRow.handle, SmeAssignmentRow.note,
               SmeAssignmentRow.submitted_at)  # fmt: skip
        .join(SmeQueueRow, SmeQueueRow.id == SmeAssignmentRow.queue_id)
        .join(SmeRow, SmeRow.id == SmeAssignmentRow.sme_id)
        .where(SmeAssignmentRow.project == project, SmeAssignmentRow.status == "cannot_judge")
        .order_by(SmeAssignmentRow.submitted_at.desc())
        .limit(NOTES_SHOWN)
    ).all()
    return [{"item_id": i, "handle": h, "note": n, "at": a} for i, h, n, a in rows]
