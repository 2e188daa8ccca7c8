"""GET /sme/queue: the items sent to the SMEs at request time (escalated: no judge's verdict
was trusted; audit: a trusted verdict drawn at the policy's audit rate) and calibration
samples drawn from stored judgments (`qadi sme sample`), each with its inclusion probability,
to be graded in the workbench or uploaded through POST /grades with it. An item is listed once
per rubric version and reason, however many requests sent it."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from service.api.deps import GradesKey, SessionDep
from service.api.errors import error_responses, invalid
from service.api.pagination import decode_cursor, encode_cursor, naive_utc, within_bytes
from service.stores.sme_queue import queued_items

Reason = Literal["escalated", "audit", "sample"]
router = APIRouter(tags=["sme"], responses=error_responses(401, 403, 422, 503))


class SmeQueueItem(BaseModel):
    id: int
    project: str
    item_id: str
    request_id: str | None = Field(description="the request that queued it first")
    rubric_ref: str
    reason: Reason
    inclusion_prob: float = Field(
        description="the item's chance of reaching the SMEs: 1 when escalated, the audit "
        "rate when audited, its round's probability for a calibration sample (`qadi sme "
        "sample`); upload the SME's grade with it (POST /grades `inclusion_prob`)"
    )
    inclusion_stratum: str | None = Field(
        description="a calibration sample's stratum (upload it as `inclusion_stratum`)"
    )
    labels_wanted: int = Field(description="2 when two SMEs grade it (their agreement)")
    route_tag: str = Field(description="the expertise it needs ('dialect=egy'), or ''")
    status: Literal["open", "done"]
    prompt: str
    reference: str | None
    response: str
    candidate_model: str
    attributes: dict[str, Any]
    trust: dict[str, Any] | None = Field(
        description="the trust outcome of the request that queued it (judges/trust.py)"
    )
    queued_at: datetime


class SmeQueuePage(BaseModel):
    items: list[SmeQueueItem] = Field(
        description="at most `limit` items, fewer when their texts pass the page's byte "
        "limit (QADI_PAGE_BYTES_MAX): follow next_cursor for the rest"
    )
    next_cursor: str | None


@router.get("/sme/queue", response_model=SmeQueuePage, summary="Items waiting for the SMEs")
def sme_queue(
    request: Request,
    session: SessionDep,
    caller: GradesKey,
    reason: Reason | None = Query(None),
    since: datetime | None = Query(None, description="queued at or after this time"),
    cursor: str | None = Query(None, max_length=512),
    limit: int = Query(100, ge=1, le=500),
) -> SmeQueuePage:
    after_row = None
    if cursor:
        stamp, last_id = decode_cursor(cursor)
        if not last_id.isdigit():
            raise invalid("cursor: not a cursor returned by this API", "query")
        after_row = (stamp, int(last_id))
    since = naive_utc(since) if since else None
    found = queued_items(session, caller.tenant, reason, since, limit + 1, after_row)
    listed = [SmeQueueItem.model_validate(item) for item in found[:limit]]
    page = within_bytes(listed, request.app.state.settings.page_bytes_max)
    more = len(found) > len(page)
    next_cursor = encode_cursor(page[-1].queued_at, page[-1].id) if more and page else None
    return SmeQueuePage(items=page, next_cursor=next_cursor)
