"""The SME queue as the lead sees it: how much is open and done, by reason and expertise;
what each person did, day by day; the items no active person can be given; stale items; and
the items an SME could not judge (with her reason), so nothing waits in the queue without
anyone knowing."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.db.schema import SmeAssignmentRow, SmeQueueRow, SmeRow, utcnow

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


def backlog(session: Session, project: str) -> list[tuple[str, str, int]]:
    """Open items by reason and by the expertise they need."""
    return [
        tuple(row)
        for row in session.execute(
            select(SmeQueueRow.reason, SmeQueueRow.route_tag, func.count())
            .where(SmeQueueRow.project == project, SmeQueueRow.status == "open")
            .group_by(SmeQueueRow.reason, SmeQueueRow.route_tag)
            .order_by(SmeQueueRow.reason, SmeQueueRow.route_tag)
        )
    ]


def throughput(session: Session, project: str, days: int = 7) -> dict[str, list[int]]:
    """Labels each person submitted on each of the last `days` days, oldest first."""
    today = utcnow().date()
    since = datetime.combine(today - timedelta(days=days - 1), datetime.min.time())
    found: dict[str, list[int]] = {}
    rows = session.execute(
        select(SmeRow.handle, SmeAssignmentRow.submitted_at)
        .join(SmeRow, SmeRow.id == SmeAssignmentRow.sme_id)
        .where(
            SmeAssignmentRow.project == project,
            SmeAssignmentRow.status == "submitted",
            SmeAssignmentRow.submitted_at >= since,
        )
    )
    for handle, at in rows:
        found.setdefault(handle, [0] * days)[(at.date() - since.date()).days] += 1
    return dict(sorted(found.items()))


def stale(session: Session, project: str, open_days: float = 7.0) -> dict[str, int]:
    """Reservations past their time that nobody took over (the SME left an item open), and
    items open for more than `open_days` days."""
    now = utcnow()
    lapsed = session.scalar(
        select(func.count()).where(
            SmeAssignmentRow.project == project,
            SmeAssignmentRow.status == "reserved",
            SmeAssignmentRow.reserved_until < now,
        )
    )
    old = session.scalar(
        select(func.count()).where(
            SmeQueueRow.project == project,
            SmeQueueRow.status == "open",
            SmeQueueRow.created_at < now - timedelta(days=open_days),
        )
    )
    return {"lapsed": lapsed or 0, "old": old or 0, "open_days": open_days}
