"""The stored objects the API lists and shows by id: grade requests and judgments, each read
as the caller's tenant may (service/stores/projects.py), in keyset pages oldest first
(`after`: the (created_at, id) of the last row of the page before)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.filters import after as after_row
from service.db.filters import has_attribute, rubric_matches
from service.db.schema import GradeRequestRow, JudgmentRow, ResponseRow
from service.stores.projects import Tenant

Keyset = tuple[datetime, str]


def grade_request(session: Session, tenant: Tenant, request_id: str) -> GradeRequestRow | None:
    """A grade request the tenant may read; another project's is None, as an unknown id."""
    row = session.get(GradeRequestRow, request_id)
    return row if row is not None and tenant.owns(row.project) else None


def grade_requests(
    session: Session, tenant: Tenant, status: str | None, after: Keyset | None, limit: int
) -> list[GradeRequestRow]:
    query = select(GradeRequestRow).where(tenant.visible(GradeRequestRow.project))
    if status:
        query = query.where(GradeRequestRow.status == status)
    if after:
        query = query.where(after_row(GradeRequestRow.created_at, GradeRequestRow.id, *after))
    query = query.order_by(GradeRequestRow.created_at, GradeRequestRow.id).limit(limit)
    return list(session.scalars(query).all())


@dataclass(frozen=True)
class JudgmentFilter:
    """What GET /judgments narrows by."""

    judge: str | None = None
    rubric: str | None = None
    candidate_model: str | None = None
    status: str | None = None
    metadata: Mapping[str, str] | None = None
    since: datetime | None = None


def judgment(
    session: Session, tenant: Tenant, judgment_id: str
) -> tuple[JudgmentRow, ResponseRow] | None:
    """A judgment the tenant may read, with the answer it graded; else None."""
    found = session.execute(_judgments(tenant).where(JudgmentRow.id == judgment_id)).first()
    return None if found is None else tuple(found)


def judgments(
    session: Session, tenant: Tenant, where: JudgmentFilter, after: Keyset | None, limit: int
) -> list[tuple[JudgmentRow, ResponseRow]]:
    query = _judgments(tenant)
    conditions: list[Any] = []
    if where.judge:
        conditions.append(JudgmentRow.judge == where.judge)
    if where.rubric:
        conditions.append(rubric_matches(JudgmentRow.rubric_ref, where.rubric))
    if where.candidate_model:
        conditions.append(ResponseRow.candidate_model == where.candidate_model)
    if where.status:
        conditions.append(JudgmentRow.status == where.status)
    for key, value in (where.metadata or {}).items():
        conditions.append(has_attribute(key, value))
    if where.since:
        conditions.append(JudgmentRow.created_at >= where.since)
    if after:
        conditions.append(after_row(JudgmentRow.created_at, JudgmentRow.id, *after))
    query = query.where(*conditions).order_by(JudgmentRow.created_at, JudgmentRow.id)
    return [tuple(row) for row in session.execute(query.limit(limit)).all()]


def _judgments(tenant: Tenant):
    return (
        select(JudgmentRow, ResponseRow)
        .join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)
        .where(tenant.visible(JudgmentRow.project))
    )
