"""GET /judgments and GET /judgments/{id}: every stored judge outcome, filterable."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel
from sqlalchemy import select

from judges import JudgeResult
from service.api.deps import JudgeKey
from service.api.errors import error_responses, http_error
from service.api.pagination import decode_cursor, encode_cursor, naive_utc, query_pairs
from service.db.engine import session_scope
from service.db.filters import after, rubric_matches
from service.db.schema import JudgmentRow, ResponseRow
from service.stores.judgments import result_from_row

router = APIRouter(tags=["judgments"], responses=error_responses(401, 403, 404, 422, 503))


class JudgmentOut(JudgeResult):
    project: str
    request_id: str | None
    item_id: str
    candidate_model: str
    metadata: dict[str, Any]
    created_at: datetime


class JudgmentPage(BaseModel):
    items: list[JudgmentOut]
    next_cursor: str | None


def _out(row: JudgmentRow, response: ResponseRow) -> JudgmentOut:
    return JudgmentOut(
        **result_from_row(row).model_dump(),
        project=row.project,
        request_id=row.request_id,
        item_id=response.item_key,
        candidate_model=response.candidate_model,
        metadata=response.attributes or {},
        created_at=row.created_at,
    )


@router.get("/judgments/{judgment_id}", response_model=JudgmentOut)
def get_judgment(judgment_id: str, request: Request, caller: JudgeKey) -> JudgmentOut:
    with session_scope(request.app.state.sessions) as session:
        found = session.execute(
            select(JudgmentRow, ResponseRow)
            .join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)
            .where(JudgmentRow.id == judgment_id, caller.tenant.visible(JudgmentRow.project))
        ).first()
        if found is None:
            raise http_error(404, ["path", "judgment_id"], f"no judgment '{judgment_id}'")
        return _out(*found)


@router.get("/judgments", response_model=JudgmentPage)
def list_judgments(
    request: Request,
    caller: JudgeKey,
    judge: str | None = Query(None, max_length=128),
    rubric: str | None = Query(None, max_length=160, description="'id' or 'id@version'"),
    candidate_model: str | None = Query(None, max_length=256),
    status: str | None = Query(None, pattern="^(ok|parse_error|backend_error|timeout)$"),
    metadata: list[str] = Query(default=[], description="key=value, repeatable"),
    since: datetime | None = Query(None, description="ISO-8601 time; created at or after"),
    cursor: str | None = Query(None, max_length=512),
    limit: int = Query(100, ge=1),
) -> JudgmentPage:
    limit = min(limit, request.app.state.settings.page_size_max)
    query = (
        select(JudgmentRow, ResponseRow)
        .join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)
        .where(caller.tenant.visible(JudgmentRow.project))
    )
    if judge:
        query = query.where(JudgmentRow.judge == judge)
    if rubric:
        query = query.where(rubric_matches(JudgmentRow.rubric_ref, rubric))
    if candidate_model:
        query = query.where(ResponseRow.candidate_model == candidate_model)
    if status:
        query = query.where(JudgmentRow.status == status)
    for key, value in query_pairs(metadata, "metadata").items():
        query = query.where(ResponseRow.attributes[key].as_string() == value)
    if since:
        query = query.where(JudgmentRow.created_at >= naive_utc(since))
    if cursor:
        stamp, last_id = decode_cursor(cursor)
        query = query.where(after(JudgmentRow.created_at, JudgmentRow.id, stamp, last_id))
    query = query.order_by(JudgmentRow.created_at, JudgmentRow.id).limit(limit + 1)
    with session_scope(request.app.state.sessions) as session:
        rows = session.execute(query).all()
    page = [_out(j, r) for j, r in rows[:limit]]
    more = len(rows) > limit
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more and page else None
    return JudgmentPage(items=page, next_cursor=next_cursor)
