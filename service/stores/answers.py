"""Items (what was asked) and responses (a candidate's answer), each stored once by content
hash, and stored answers read back for regrading.

An answer belongs to a project (its metadata is that team's), so a response's hash includes
its project; items (prompt and reference) are shared, as only a project's answers lead to
them. The default project's hashes are those of before projects, so its rows stay found."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import cache

from sqlalchemy import Select, select
from sqlalchemy.orm import Session, sessionmaker

from judges import AnswerRecord, GradeRequest
from rubrics.hashing import fields_hash
from service.db.filters import has_attribute, not_a_probe, rubric_matches
from service.db.schema import ItemRow, JudgmentRow, ResponseRow, utcnow
from service.stores.chunks import chunked, insert_missing, listed
from service.stores.projects import cache_scope


def item_key(request: GradeRequest) -> str:
    """The id grades refer to: metadata item_id when given, else one derived from the answer
    (the same in every project, so a team's ids do not depend on its project's name)."""
    return request.metadata.get("item_id") or "resp-" + response_hash(request)[7:23]


def response_hash(request: GradeRequest, project: str | None = None) -> str:
    """The answer's content hash in `project` (None: the unscoped hash, the default
    project's)."""
    fields = {
        "prompt": request.prompt,
        "reference": request.reference,
        "candidate_model": request.candidate_model,
        "response": request.response,
        "item_id": request.metadata.get("item_id"),
    }
    scope = cache_scope(project) if project is not None else None
    if scope is not None:
        fields["project"] = scope
    return fields_hash(fields)  # texts only


def _item_hash(request: GradeRequest) -> str:
    return fields_hash({"prompt": request.prompt, "reference": request.reference})


def ensure_responses(session: Session, project: str, requests: list[GradeRequest]) -> list[int]:
    """The response id of each request's answer in `project`, inserting the items and
    answers not yet stored (a concurrent writer inserting the same rows first is not an
    error).

    Items (a prompt and its reference) repeat across answers, so the stored ones are looked
    up before the rest are inserted. An answer is usually new: on SQLite answers are
    inserted at once (ON CONFLICT DO NOTHING) and only those already stored looked up after,
    one statement fewer per transaction on the grading path; on PostgreSQL a conflicting
    INSERT still uses up a value of the id sequence, so answers are looked up first there
    too (a regrade of stored answers would otherwise spend one per answer and run)."""
    if not requests:
        return []
    now = utcnow()
    item_hashes = [_item_hash(r) for r in requests]
    item_rows = {
        h: {"content_hash": h, "prompt": r.prompt, "reference": r.reference, "created_at": now}
        for h, r in zip(item_hashes, requests, strict=True)
    }
    items = _ensure(session, ItemRow, item_rows, look_first=True)
    response_hashes = [response_hash(r, project) for r in requests]
    response_rows = {
        h: {
            "content_hash": h,
            "project": project,
            "item_id": items[ih],
            "item_key": item_key(r),
            "candidate_model": r.candidate_model,
            "candidate_provider": r.candidate_provider,
            "text": r.response,
            "attributes": dict(r.metadata),
            "created_at": now,
        }
        for h, r, ih in zip(response_hashes, requests, item_hashes, strict=True)
    }
    postgresql = session.get_bind().dialect.name == "postgresql"
    responses = _ensure(session, ResponseRow, response_rows, look_first=postgresql)
    return [responses[h] for h in response_hashes]


def _ensure(session: Session, table, rows: dict[str, dict], look_first: bool) -> dict[str, int]:
    """Ids by content hash of `rows`, inserting those not stored yet; with `look_first` the
    stored ones are looked up before inserting, else after. Rows are inserted in hash
    order: on PostgreSQL an insert waits for a concurrent transaction's uncommitted row of
    the same hash, and two transactions (two replicas' rounds) inserting shared answers in
    opposite orders would deadlock."""
    found = _existing(session, table, list(rows)) if look_first else {}
    missing = sorted(h for h in rows if h not in found)
    if missing:
        found.update(insert_missing(session, table, [rows[h] for h in missing]))
        found.update(_existing(session, table, [h for h in missing if h not in found]))
    return found


def _existing(session: Session, table, hashes: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    if not hashes:
        return found
    query = _by_hash(table)
    for chunk in chunked(sorted(set(hashes))):
        found.update(dict(session.execute(query, {"hashes": chunk}).all()))
    return found


@cache
def _by_hash(table) -> Select:
    """`_existing`'s query of a table, built once (service/stores/chunks.py)."""
    return select(table.content_hash, table.id).where(table.content_hash.in_(listed("hashes")))


def texts_of_items(
    session: Session, project: str, item_keys: list[str]
) -> dict[str, dict[str, str | None]]:
    """The question, answer and reference an SME grades each of `item_keys` by (`qadi sme
    queue`): the project's stored answer with that id, its latest when several were stored
    under one id (a re-sent answer); probes are not items. Ids without a stored answer are
    absent."""
    found: dict[str, dict[str, str | None]] = {}
    for chunk in chunked(sorted(set(item_keys))):
        query = (
            select(ResponseRow.item_key, ItemRow.prompt, ResponseRow.text, ItemRow.reference)
            .join(ItemRow, ResponseRow.item_id == ItemRow.id)
            .where(
                ResponseRow.project == project, ResponseRow.item_key.in_(chunk), not_a_probe()
            )
            .order_by(ResponseRow.id)
        )
        for key, prompt, text, reference in session.execute(query):
            found[key] = {"question": prompt, "answer": text, "reference": reference}
    return found


def answers_from_db(
    session: Session,
    project: str,
    rubric: str | None = None,
    candidate_model: str | None = None,
    metadata: dict[str, str] | None = None,
    since: datetime | None = None,
) -> list[AnswerRecord]:
    """The project's stored answers (probe copies excluded); with `rubric`, only answers
    already judged under that rubric."""
    query = _answers_query(project, rubric, candidate_model, metadata, since)
    return [_answer(response, item) for response, item in session.execute(query)]


def stream_answers_from_db(
    factory: sessionmaker[Session],
    project: str,
    rubric: str | None = None,
    candidate_model: str | None = None,
    metadata: dict[str, str] | None = None,
    since: datetime | None = None,
    page: int = 1000,
) -> Iterator[AnswerRecord]:
    """The answers `answers_from_db` selects, a page at a time by id, each page read in its
    own short session: memory holds one page however many are stored, and no read stays
    open while the run writes its judgments (a long read would block SQLite's writers)."""
    query = _answers_query(project, rubric, candidate_model, metadata, since)
    after = 0
    while True:
        with factory() as session:
            rows = session.execute(query.where(ResponseRow.id > after).limit(page)).all()
        if not rows:
            return
        after = rows[-1][0].id
        yield from (_answer(response, item) for response, item in rows)


def _answers_query(
    project: str,
    rubric: str | None,
    candidate_model: str | None,
    metadata: dict[str, str] | None,
    since: datetime | None,
) -> Select:
    query = (
        select(ResponseRow, ItemRow)
        .join(ItemRow, ResponseRow.item_id == ItemRow.id)
        .where(ResponseRow.project == project, not_a_probe())
    )
    if candidate_model:
        query = query.where(ResponseRow.candidate_model == candidate_model)
    for key, value in (metadata or {}).items():
        query = query.where(has_attribute(key, value))
    if since:
        query = query.where(ResponseRow.created_at >= since)
    if rubric:
        judged = select(JudgmentRow.response_id).where(
            rubric_matches(JudgmentRow.rubric_ref, rubric)
        )
        query = query.where(ResponseRow.id.in_(judged))
    return query.order_by(ResponseRow.id)


def _answer(response: ResponseRow, item: ItemRow) -> AnswerRecord:
    return AnswerRecord(
        item_id=response.item_key,
        prompt=item.prompt,
        response=response.text,
        candidate_model=response.candidate_model,
        reference=item.reference,
        candidate_provider=response.candidate_provider,
        metadata={k: str(v) for k, v in (response.attributes or {}).items()},
    )
