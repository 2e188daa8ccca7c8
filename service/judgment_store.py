"""The SQL implementation of the grading core's `JudgmentStore`, and answer persistence."""

from __future__ import annotations

import asyncio
from contextlib import nullcontext

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from judges import GradeRequest, JudgeResult
from judges.models import CriterionVerdict
from rubrics import content_hash
from service.db.engine import session_scope
from service.db.schema import ItemRow, JudgmentRow, ResponseRow, utcnow


def item_key(request: GradeRequest) -> str:
    """The id grades refer to: metadata item_id when given, else one derived from the answer."""
    return request.metadata.get("item_id") or "resp-" + response_hash(request)[7:23]


def response_hash(request: GradeRequest) -> str:
    return content_hash(
        {
            "prompt": request.prompt,
            "reference": request.reference,
            "candidate_model": request.candidate_model,
            "response": request.response,
            "item_id": request.metadata.get("item_id"),
        }
    )


def ensure_responses(session: Session, requests: list[GradeRequest]) -> list[int]:
    """`ensure_response` for many answers at once: existing rows are looked up in chunks and
    the missing ones inserted together (a concurrent writer falls back to one by one)."""
    item_hashes = [_item_hash(r) for r in requests]
    response_hashes = [response_hash(r) for r in requests]
    items = _existing(session, ItemRow, item_hashes)
    responses = _existing(session, ResponseRow, response_hashes)
    try:
        with session.begin_nested():
            for request, item_hash in zip(requests, item_hashes, strict=True):
                if item_hash not in items:
                    row = ItemRow(
                        content_hash=item_hash, prompt=request.prompt, reference=request.reference
                    )
                    session.add(row)
                    session.flush()
                    items[item_hash] = row.id
            for request, item_hash, rhash in zip(
                requests, item_hashes, response_hashes, strict=True
            ):
                if rhash not in responses:
                    row = _response_row(request, rhash, items[item_hash])
                    session.add(row)
                    responses[rhash] = row
            session.flush()
    except IntegrityError:
        return [ensure_response(session, r) for r in requests]
    return [r if isinstance(r, int) else r.id for r in (responses[h] for h in response_hashes)]


def _existing(session: Session, table, hashes: list[str]) -> dict[str, int]:
    unique = sorted(set(hashes))
    found: dict[str, int] = {}
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        query = select(table.content_hash, table.id).where(table.content_hash.in_(chunk))
        found.update(dict(session.execute(query).all()))
    return found


def _item_hash(request: GradeRequest) -> str:
    return content_hash({"prompt": request.prompt, "reference": request.reference})


def _response_row(request: GradeRequest, rhash: str, item_id: int) -> ResponseRow:
    return ResponseRow(
        content_hash=rhash,
        item_id=item_id,
        item_key=item_key(request),
        candidate_model=request.candidate_model,
        candidate_provider=request.candidate_provider,
        text=request.response,
        attributes=dict(request.metadata),
    )


def ensure_response(session: Session, request: GradeRequest) -> int:
    """Insert the item and the candidate's answer unless already stored; return the answer's id."""
    item_hash = _item_hash(request)
    item_id = _get_or_insert(
        session,
        select(ItemRow.id).where(ItemRow.content_hash == item_hash),
        lambda: ItemRow(content_hash=item_hash, prompt=request.prompt, reference=request.reference),
    )
    rhash = response_hash(request)
    return _get_or_insert(
        session,
        select(ResponseRow.id).where(ResponseRow.content_hash == rhash),
        lambda: _response_row(request, rhash, item_id),
    )


def _get_or_insert(session: Session, query, make) -> int:
    found = session.scalar(query)
    if found is not None:
        return found
    try:
        with guarded_insert(session):
            row = make()
            session.add(row)
            session.flush()
        return row.id
    except IntegrityError:  # a concurrent request inserted it first
        return session.scalar(query)


def guarded_insert(session: Session):
    """A savepoint around an insert that may collide with a concurrent writer's, so the
    collision can be recovered from. SQLite transactions here take the write lock up front
    (BEGIN IMMEDIATE), so nothing can interleave and the savepoint's round trips are saved."""
    if session.get_bind().dialect.name == "sqlite":
        return nullcontext()
    return session.begin_nested()


def row_from_result(result: JudgeResult, request_id: str | None, response_id: int) -> JudgmentRow:
    return JudgmentRow(**row_values(result, request_id, response_id))


def row_values(result: JudgeResult, request_id: str | None, response_id: int) -> dict:
    """Column values of a judgments row (for ORM objects and bulk inserts alike)."""
    return dict(
        id=result.id,
        request_id=request_id,
        response_id=response_id,
        judge=result.judge,
        judge_model=result.model,
        judge_maker=result.maker,
        status=result.status,
        score=result.score,
        raw_score=result.raw_score,
        clipped=result.clipped,
        dimensions=result.dimensions,
        criteria=[c.model_dump() for c in result.criteria],
        rationale=result.rationale,
        raw_reply=result.raw_reply,
        error=result.error,
        latency_ms=result.latency_ms,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        cost_usd=result.cost_usd,
        cached=result.cached,
        cache_key=result.cache_key,
        rubric_ref=result.rubric_ref,
        rubric_hash=result.rubric_hash,
        template=result.template,
        template_hash=result.template_hash,
        created_at=utcnow(),
    )


def result_from_row(row: JudgmentRow) -> JudgeResult:
    return JudgeResult(
        id=row.id,
        judge=row.judge,
        model=row.judge_model,
        maker=row.judge_maker,
        status=row.status,
        score=row.score,
        raw_score=row.raw_score,
        clipped=row.clipped,
        dimensions=row.dimensions or {},
        criteria=[CriterionVerdict(**c) for c in row.criteria or []],
        rationale=row.rationale,
        raw_reply=row.raw_reply,
        error=row.error,
        latency_ms=row.latency_ms,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        cost_usd=row.cost_usd,
        cached=row.cached,
        cache_key=row.cache_key,
        rubric_ref=row.rubric_ref,
        rubric_hash=row.rubric_hash,
        template=row.template,
        template_hash=row.template_hash,
    )


def find_ok_sync(session: Session, cache_key: str) -> JudgeResult | None:
    row = session.scalars(
        select(JudgmentRow)
        .where(JudgmentRow.cache_key == cache_key, JudgmentRow.status == "ok")
        .order_by(JudgmentRow.created_at)
        .limit(1)
    ).first()
    return result_from_row(row) if row is not None else None


class CollectingStore:
    """Cache lookups go to the database; outcomes are kept until the service writes them
    together with the request's answer, in one transaction."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory
        self.response_id: int | None = None
        self.results: list[JudgeResult] = []

    async def find_ok(self, cache_key: str) -> JudgeResult | None:
        return await asyncio.to_thread(self._find, cache_key)

    async def save(self, request: GradeRequest, result: JudgeResult) -> None:
        self.results.append(result)

    def _find(self, cache_key: str) -> JudgeResult | None:
        with session_scope(self.factory) as session:
            return find_ok_sync(session, cache_key)
