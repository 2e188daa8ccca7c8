"""The stored judgments, grades and reports as flat records for a warehouse (`qadi export`),
streamed oldest first in batches: memory holds one batch, whatever the table's size.

JSON columns (an answer's attributes, criteria, a report) are written as their JSON text, so
every record has the same flat columns whatever a project put in them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from service.db.schema import CalibrationReportRow, HumanGradeRow, JudgmentRow, ResponseRow

Table = Literal["judgments", "grades", "reports"]
TABLES: tuple[Table, ...] = ("judgments", "grades", "reports")
BATCH = 20_000  # records read and written at a time


def _judgments() -> Select:
    return select(
        JudgmentRow.id, JudgmentRow.project, JudgmentRow.request_id,
        ResponseRow.item_key.label("item_id"), ResponseRow.candidate_model,
        ResponseRow.attributes, JudgmentRow.judge, JudgmentRow.judge_model,
        JudgmentRow.status, JudgmentRow.score, JudgmentRow.expected_score,
        JudgmentRow.confidence, JudgmentRow.confidence_source, JudgmentRow.criteria,
        JudgmentRow.rubric_ref, JudgmentRow.rubric_hash, JudgmentRow.template,
        JudgmentRow.template_hash, JudgmentRow.cached,
        JudgmentRow.latency_ms, JudgmentRow.cost_usd, JudgmentRow.error,
        JudgmentRow.rationale, JudgmentRow.raw_reply, JudgmentRow.created_at,
    ).join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)  # fmt: skip


def _grades() -> Select:
    return select(
        HumanGradeRow.id, HumanGradeRow.project, HumanGradeRow.item_id, HumanGradeRow.rater,
        HumanGradeRow.rater_kind, HumanGradeRow.score, HumanGradeRow.criteria,
        HumanGradeRow.inclusion_prob, HumanGradeRow.confidence, HumanGradeRow.attributes,
        HumanGradeRow.rationale, HumanGradeRow.created_at,
    )  # fmt: skip


def _reports() -> Select:
    return select(
        CalibrationReportRow.id, CalibrationReportRow.project, CalibrationReportRow.kind,
        CalibrationReportRow.scope, CalibrationReportRow.window_start,
        CalibrationReportRow.window_end, CalibrationReportRow.report,
        CalibrationReportRow.created_at,
    )  # fmt: skip


_QUERIES = {"judgments": (_judgments, JudgmentRow), "grades": (_grades, HumanGradeRow),
            "reports": (_reports, CalibrationReportRow)}  # fmt: skip
JSON_COLUMNS = frozenset({"attributes", "criteria", "report"})


def export_batches(
    session: Session,
    table: Table,
    project: str | None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """The table's records (one project's, or every project's with None) made in [since,
    until), oldest first, `BATCH` at a time (a server-side cursor on PostgreSQL)."""
    build, row = _QUERIES[table]
    query = build()
    if project is not None:
        query = query.where(row.project == project)
    if since is not None:
        query = query.where(row.created_at >= since)
    if until is not None:
        query = query.where(row.created_at < until)
    query = query.order_by(row.created_at, row.id)
    result = session.execute(query, execution_options={"yield_per": BATCH})
    for rows in result.partitions():
        yield [_flat(found._asdict()) for found in rows]


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    return {
        key: (json.dumps(value, ensure_ascii=False) if key in JSON_COLUMNS and value is not None
              else value)
        for key, value in record.items()
    }  # fmt: skip
