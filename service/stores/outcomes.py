"""POST /judge's trust outcomes counted by day (`trust_outcome_counts`), written with the
requests' own finish, so the dashboard's series over a year of requests reads one small row
per (day, rubric, evaluator, stratum, outcome) instead of the requests."""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from judges.trust import TrustOutcome
from service.db.schema import TrustOutcomeCountRow, utcnow


def count(session: Session, project: str, outcomes: list[tuple[str, TrustOutcome]]) -> None:
    """Add each finished request's outcome (rubric id, trust outcome) to today's counts. One
    upsert, its rows in key order: concurrent finishes lock them in the same order."""
    if not outcomes:
        return
    today = utcnow().date()
    tallied = Counter(
        (rubric_id, *outcome.tally(), outcome.stratum or "none") for rubric_id, outcome in outcomes
    )
    rows = [
        {"project": project, "day": today, "rubric_id": rubric, "evaluator": evaluator[:512],
         "stratum": stratum[:256], "status": status, "n": n}
        for (rubric, evaluator, status, stratum), n in sorted(tallied.items())
    ]  # fmt: skip
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(TrustOutcomeCountRow)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=["project", "day", "rubric_id", "evaluator", "stratum", "status"],
            set_={"n": TrustOutcomeCountRow.n + statement.excluded.n},
        ),
        rows,
    )


def series(session: Session, project: str, rubric_id: str, days: int) -> list[dict[str, Any]]:
    """The last `days` days of a rubric's counts, oldest first."""
    since: date = utcnow().date() - timedelta(days=days - 1)
    table = TrustOutcomeCountRow
    rows = session.execute(
        select(table.day, table.evaluator, table.stratum, table.status, table.n)
        .where(table.project == project, table.rubric_id == rubric_id, table.day >= since)
        .order_by(table.day)
    )
    names = ("day", "evaluator", "stratum", "status", "n")
    return [dict(zip(names, row, strict=True)) for row in rows]
