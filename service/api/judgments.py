"""GET /judgments and GET /judgments/{id}: every stored judge outcome, filterable."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from judges import JudgeResult
from service.api.deps import JudgeKey
from service.api.errors import error_responses, http_error
from service.api.pagination import decode_cursor, encode_cursor, naive_utc, query_pairs
from service.db.engine import session_scope
from service.stores import listings
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


def _out(row: Any, response: Any) -> JudgmentOut:
    """A stored judgment (`judgments` row) and the answer it graded (`responses` row)."""
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
        found = listings.judgment(session, caller.tenant, judgment_id)
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
    where = listings.JudgmentFilter(
        judge=judge,
        rubric=rubric,
        candidate_model=candidate_model,
        status=status,
        metadata=query_pairs(metadata, "metadata"),
        since=naive_utc(since) if since else None,
    )
    after = decode_cursor(cursor) if cursor else None
    with session_scope(request.app.state.sessions) as session:
        rows = listings.judgments(session, caller.tenant, where, after, limit + 1)
    page = [_out(j, r) for j, r in rows[:limit]]
    more = len(rows) > limit
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more and page else None
    return JudgmentPage(items=page, next_cursor=next_cursor)
