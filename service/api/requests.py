"""GET /requests: grade requests and how each ended (done, or abandoned by a dead process),
so an operator can see that nothing accepted waits `pending` forever."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from service.api.deps import JudgeKey, SessionDep
from service.api.errors import error_responses, http_error
from service.api.pagination import decode_cursor, encode_cursor
from service.stores import listings

router = APIRouter(tags=["judgments"], responses=error_responses(401, 403, 404, 422, 503))


class GradeRequestOut(BaseModel):
    id: str
    project: str
    status: str  # pending | done | abandoned
    outcome: str | None  # graded | no_verdict | outage | rejected (when done)
    attempt: int
    created_at: datetime
    claimed_at: datetime | None
    finished_at: datetime | None


class GradeRequestPage(BaseModel):
    items: list[GradeRequestOut]
    next_cursor: str | None


def _out(row: Any) -> GradeRequestOut:
    return GradeRequestOut.model_validate(row, from_attributes=True)


@router.get("/requests/{request_id}", response_model=GradeRequestOut)
def get_request(request_id: str, session: SessionDep, caller: JudgeKey) -> GradeRequestOut:
    row = listings.grade_request(session, caller.tenant, request_id)
    if row is None:  # or another project's: unknown either way
        raise http_error(404, ["path", "request_id"], f"no grade request '{request_id}'")
    return _out(row)


@router.get("/requests", response_model=GradeRequestPage)
def list_requests(
    session: SessionDep,
    caller: JudgeKey,
    status: str | None = Query(None, pattern="^(pending|done|abandoned)$"),
    cursor: str | None = Query(None, max_length=512),
    limit: int = Query(100, ge=1, le=500),
) -> GradeRequestPage:
    after = decode_cursor(cursor) if cursor else None
    rows = listings.grade_requests(session, caller.tenant, status, after, limit + 1)
    page = [_out(r) for r in rows[:limit]]
    more = len(rows) > limit
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more and page else None
    return GradeRequestPage(items=page, next_cursor=next_cursor)
