"""The one SQL implementation of the grading core's `JudgmentStore`: every path (POST /judge,
/judge/batch, `qadi regrade`, the benchmarks) looks up and saves judgments here, each in its
project. Lookups go by cache key, which carries the project (`project_batcher`), so a
project finds only its own verdicts."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from judges import BatchGrader, BatchOptions, Graded, Grader, JudgeResult
from judges.batch import blocking
from judges.models import CriterionVerdict
from service.db.engine import session_scope
from service.db.filters import after
from service.db.schema import JudgmentRow, utcnow
from service.db.values import refuse_non_finite
from service.stores.answers import ensure_responses
from service.stores.chunks import chunked, listed
from service.stores.projects import cache_scope

_RESULT_COLUMNS = {
    "id": "id",
    "judge": "judge",
    "model": "judge_model",
    "maker": "judge_maker",
    "status": "status",
    "score": "score",
    "raw_score": "raw_score",
    "clipped": "clipped",
    "dimensions": "dimensions",
    "rationale": "rationale",
    "expected_score": "expected_score",
    "confidence": "confidence",
    "confidence_source": "confidence_source",
    "raw_reply": "raw_reply",
    "error": "error",
    "latency_ms": "latency_ms",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "cost_usd": "cost_usd",
    "cached": "cached",
    "attempts": "attempts",
    "cache_key": "cache_key",
    "rubric_ref": "rubric_ref",
    "rubric_hash": "rubric_hash",
    "template": "template",
    "template_hash": "template_hash",
}


# what a judgments row takes from a result as pydantic dumps it: one dump of the model
# (issue 40; for a judgment without token probabilities a third of the CPU of reading each
# field and dumping each criterion apart); the token probabilities and samples as JSON
_DUMPED = frozenset(_RESULT_COLUMNS) | {"criteria"}
_RENAMED = {name: column for name, column in _RESULT_COLUMNS.items() if name != column}


def row_values(
    project: str, result: JudgeResult, request_id: str | None, response_id: int
) -> dict[str, Any]:
    """Column values of one judgments row; NonFiniteValue when a number in it is NaN or
    infinite."""
    values = result.model_dump(include=_DUMPED)
    for name, column in _RENAMED.items():
        values[column] = values.pop(name)
    values.update(
        project=project,
        request_id=request_id,
        response_id=response_id,
        probabilities=(
            result.probabilities.model_dump(mode="json") if result.probabilities else None
        ),
        samples=(
            None if result.samples is None else [s.model_dump(mode="json") for s in result.samples]
        ),
        created_at=utcnow(),
    )
    refuse_non_finite("judgment", values)  # a defect upstream must not poison every replay
    return values


def result_from_row(row: JudgmentRow) -> JudgeResult:
    values = {name: getattr(row, column) for name, column in _RESULT_COLUMNS.items()}
    values["dimensions"] = values["dimensions"] or {}
    values["criteria"] = [CriterionVerdict(**c) for c in row.criteria or []]
    values["probabilities"] = row.probabilities
    values["samples"] = row.samples
    return JudgeResult(**values)


def find_done_in(
    session: Session, keys: Collection[str], statuses: Collection[str]
) -> dict[str, JudgeResult]:
    """The earliest stored call (not a cached copy) per key with one of `statuses`."""
    found: dict[str, JudgeResult] = {}
    for chunk in chunked(sorted(set(keys))):
        rows = session.scalars(_DONE_IN, {"keys": chunk, "statuses": list(statuses)})
        for row in rows:
            found.setdefault(row.cache_key, result_from_row(row))
    return found


# `find_done_in`'s query, built once (service/stores/chunks.py)
_DONE_IN = (
    select(JudgmentRow)
    .where(
        JudgmentRow.cache_key.in_(listed("keys")),
        JudgmentRow.status.in_(listed("statuses")),
        JudgmentRow.cached.is_(False),
    )
    .order_by(JudgmentRow.created_at, JudgmentRow.id)
)


def write_judgments(session: Session, project: str, graded: Sequence[Graded]) -> None:
    """The answers (once each) and the judgments of `graded`, in `project`, in the caller's
    transaction. A graded request's `tag`, when a string, is the id of the HTTP request it
    answers."""
    with_judgments = [g for g in graded if g.judgments]
    if not with_judgments:
        return
    response_ids = ensure_responses(session, project, [g.request for g in with_judgments])
    rows = [
        row_values(project, result, g.tag if isinstance(g.tag, str) else None, response_id)
        for g, response_id in zip(with_judgments, response_ids, strict=True)
        for result in g.judgments
    ]
    insert_judgments(session, rows)


def insert_judgments(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert `row_values` rows with Core's INSERT, not the ORM's bulk one: every row holds
    every column, so the ORM's work per row (mapping it to the table, grouping rows by the
    columns they set) bought nothing; it was 3% of a regrade's CPU (issue 40)."""
    session.execute(insert(JudgmentRow.__table__), rows)


class SqlJudgmentStore:
    """`JudgmentStore` over the database, saving in `project`; its blocking work runs off
    the event loop, in a thread, when `offload` (`judges.BatchOptions.offload`)."""

    def __init__(self, factory: sessionmaker[Session], project: str, offload: bool = True):
        self.factory = factory
        self.project = project
        self.offload = offload

    async def find_done(
        self, keys: Collection[str], statuses: Collection[str]
    ) -> dict[str, JudgeResult]:
        return await blocking(self.offload, self._find_done, keys, statuses)

    async def save(self, graded: Sequence[Graded]) -> None:
        await blocking(self.offload, self._save, graded)

    def _find_done(self, keys, statuses) -> dict[str, JudgeResult]:
        with session_scope(self.factory) as session:
            return find_done_in(session, keys, statuses)

    def _save(self, graded: Sequence[Graded]) -> None:
        with session_scope(self.factory) as session:
            write_judgments(session, self.project, graded)


def project_batcher(
    grader: Grader,
    factory: sessionmaker[Session],
    project: str,
    options: BatchOptions | None = None,
    slots: asyncio.Semaphore | None = None,
) -> BatchGrader:
    """The batch core for `project`: its judgments are saved there, and its cache keys carry
    the project, so it reuses only that project's verdicts (a shared cache would tell a team
    through `cached: true` that another graded the same text)."""
    options = options or BatchOptions()
    store = SqlJudgmentStore(factory, project, options.offload)
    return BatchGrader(grader, store, options, slots, cache_scope(project))


RETENTION_BATCH = 5_000  # judgments per transaction: short locks, memory bounded by the batch


def drop_raw_text(factory: sessionmaker[Session], days: int) -> tuple[datetime, int]:
    """Empty the raw replies and rationales of judgments more than `days` days old, walking
    them in (created_at, id) order a batch per transaction; return the cut-off and how many
    judgments lost them. What a report reads stays (verdicts, scores, criteria marks, confidences,
    probabilities): the period's reports are the same after (docs/explanation/performance.md,
    "Storage")."""
    before = utcnow() - timedelta(days=days)
    dropped, last = 0, None
    while True:
        with session_scope(factory) as session:
            query = select(JudgmentRow.created_at, JudgmentRow.id).where(
                JudgmentRow.created_at < before
            )
            if last is not None:
                query = query.where(after(JudgmentRow.created_at, JudgmentRow.id, *last))
            batch = session.execute(
                query.order_by(JudgmentRow.created_at, JudgmentRow.id).limit(RETENTION_BATCH)
            ).all()
            if not batch:
                return before, dropped
            emptied = session.execute(
                update(JudgmentRow)
                .where(
                    JudgmentRow.id.in_([row_id for _, row_id in batch]),
                    or_(JudgmentRow.raw_reply.is_not(None), JudgmentRow.rationale.is_not(None)),
                )
                .values(raw_reply=None, rationale=None)
            )
            dropped += emptied.rowcount
            last = tuple(batch[-1])
