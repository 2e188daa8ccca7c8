"""POST /judge behind the HTTP layer: idempotency, persistence, limits, and the grade itself.

Every accepted request leaves a `grade_requests` row that ends `done` with the HTTP status
and body it answered, and one `judgments` row per judge outcome (ok, failed, or cached).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from judges import Grader, GradeRequest, GuardError, JudgeConfigError, RequestError, TemplateError
from rubrics import (
    PenaltyWeightedRubric,
    Rubric,
    RubricError,
    content_hash,
    parse_rubric,
    rubric_hash,
)
from service import metrics
from service.api.schemas import JudgeResponse, RubricInfo
from service.db.engine import session_scope
from service.db.schema import GradeRequestRow, JudgmentRow, new_id, utcnow
from service.judgment_store import CollectingStore, ensure_response, guarded_insert, row_values
from service.limits import Admission, RateLimit
from service.rubric_store import RubricNotFound, get_rubric, save_rubric
from service.settings import Settings

RUBRIC_KIND_FOR = {"rubric": "penalty_weighted", "explanation": "scale"}


@dataclass
class Outcome:
    status_code: int
    body: dict[str, Any]
    headers: dict[str, str] | None = None


def error(status_code: int, field: str | None, message: str, **extra: Any) -> Outcome:
    detail: Any = message
    if field is not None:
        detail = [{"loc": ["body", *field.split(".")], "msg": message, "type": "value_error"}]
    return Outcome(status_code, {"detail": detail, **extra})


@dataclass
class Prepared:
    request_id: str
    request: GradeRequest | None
    response_id: int | None
    rejection: Outcome | None


def rejection(exc: Exception) -> Outcome:
    """A request the grading core refuses: 422 naming the field."""
    if isinstance(exc, RubricNotFound):
        return error(422, "rubric_id", str(exc).removeprefix("rubric_id: "))
    if isinstance(exc, RubricError):
        return error(422, "rubric", str(exc))
    if isinstance(exc, GuardError):
        return error(422, "candidate_model", str(exc))
    field, _, message = str(exc).partition(": ")
    return error(422, field if message else None, message or str(exc))


def _request_deadline(grader: Grader | None) -> float:
    """How long a live request can take: every attempt of the panel and of the stand-ins,
    plus a margin. An unfinished request older than this died with its process."""
    if grader is None:
        return 60.0
    options = grader.config.qadi
    return 2 * options.timeout * (options.num_retries + 1) + 5


class JudgeService:
    def __init__(
        self, settings: Settings, factory: sessionmaker[Session], grader: Grader | None
    ) -> None:
        self.settings = settings
        self.factory = factory
        self.grader = grader
        self.stale_after = timedelta(seconds=_request_deadline(grader))
        self._stored_rubrics: set[str] = set()  # hashes known to be in the database
        self.admission = Admission(settings.judge_concurrency)
        self.rate = RateLimit(settings.rate_limit_per_minute)

    async def judge(self, body, idempotency_key: str | None, api_key_id: int | None) -> Outcome:
        problem = self.check_limits(body)
        if problem is not None:
            return problem
        if self.grader is None:
            return error(503, None, "no judges configured: set QADI_JUDGES_CONFIG to a judges YAML")
        wait = self.rate.check(api_key_id)
        if wait is not None:
            return Outcome(
                429,
                {"detail": f"rate limit of {self.rate.per_minute} requests/minute for this key"},
                {"Retry-After": str(wait)},
            )
        slots = len(body.judges or self.grader.config.default_panel)
        if not self.admission.try_acquire(slots):
            return Outcome(
                503,
                {"detail": "busy: the judge calls in flight are at the limit; retry shortly"},
                {"Retry-After": "1"},
            )
        try:
            return await self._judge_admitted(body, idempotency_key, api_key_id)
        finally:
            self.admission.release(slots)

    async def _judge_admitted(self, body, idempotency_key, api_key_id) -> Outcome:
        body_hash = content_hash(body.model_dump(mode="json"))
        prepared = await asyncio.to_thread(
            self._prepare, body, idempotency_key, body_hash, api_key_id
        )
        if isinstance(prepared, Outcome):
            return prepared
        store = CollectingStore(self.factory)
        store.response_id = prepared.response_id
        outcome = prepared.rejection or await self._grade(prepared, store)
        await asyncio.to_thread(self._finish, prepared.request_id, outcome, store)
        return outcome

    def _prepare(self, body, key: str | None, body_hash: str, api_key_id: int | None):
        """Everything before the judge calls in one transaction: claim the request (or answer
        from an earlier one with the same key), resolve the rubric, store the answer."""
        with session_scope(self.factory) as session:
            claimed = self._claim(session, key, body_hash, api_key_id)
            if isinstance(claimed, Outcome):
                return claimed
            try:
                rubric = self._resolve_rubric(session, body)
                request = GradeRequest(
                    rubric=rubric,
                    prompt=body.prompt,
                    response=body.response,
                    reference=body.reference,
                    candidate_model=body.candidate_model,
                    candidate_provider=body.candidate_provider,
                    judges=body.judges,
                    metadata=body.metadata,
                )
                response_id = ensure_response(session, request)
            except (RubricNotFound, RubricError, RequestError) as exc:
                return Prepared(claimed, None, None, rejection(exc))
            return Prepared(claimed, request, response_id, None)

    def check_limits(self, body) -> Outcome | None:
        limit = self.settings.max_text_chars
        for field in ("prompt", "response", "reference"):
            value = getattr(body, field) or ""
            if len(value) > limit:
                return error(422, field, f"text is {len(value)} characters; the limit is {limit}")
        criteria = (body.rubric or {}).get("criteria")
        if isinstance(criteria, list) and len(criteria) > self.settings.max_criteria:
            return error(
                422,
                "rubric.criteria",
                f"{len(criteria)} criteria; the limit is {self.settings.max_criteria}",
            )
        return None

    def _claim(
        self, session: Session, key: str | None, body_hash: str, api_key_id: int | None
    ) -> str | Outcome:
        """Create the request row, or answer from the earlier request with the same key."""
        if key is not None:
            found = session.scalar(
                select(GradeRequestRow).where(GradeRequestRow.idempotency_key == key)
            )
            if found is not None:
                return self._replay(session, found, body_hash)
        row = GradeRequestRow(
            id=new_id(), idempotency_key=key, body_hash=body_hash, api_key_id=api_key_id
        )
        if key is None:  # ids are random: nothing to collide with
            session.add(row)
            return row.id
        try:
            with guarded_insert(session):
                session.add(row)
                session.flush()
        except IntegrityError:
            return error(409, None, "a request with this Idempotency-Key is in progress")
        return row.id

    def _replay(self, session: Session, found: GradeRequestRow, body_hash: str) -> str | Outcome:
        if found.body_hash != body_hash:
            return error(409, None, "Idempotency-Key was already used with a different body")
        if found.status == "done":
            return Outcome(found.http_status or 200, found.result or {})
        if utcnow() - found.created_at < self.stale_after:
            return Outcome(
                409,
                {"detail": "a request with this Idempotency-Key is in progress"},
                {"Retry-After": "2"},
            )
        found.created_at = utcnow()  # the first attempt died (crash); take it over
        return found.id

    def _finish(self, request_id: str, outcome: Outcome, store: CollectingStore) -> None:
        """The judgments and the request's answer in one transaction: a crash leaves either
        all of them or none (the request then stays pending and a retry re-runs it)."""
        with session_scope(self.factory) as session:
            if store.results:
                session.execute(
                    insert(JudgmentRow),
                    [row_values(r, request_id, store.response_id) for r in store.results],
                )
            session.execute(
                update(GradeRequestRow)
                .where(GradeRequestRow.id == request_id)
                .values(
                    status="done",
                    http_status=outcome.status_code,
                    result=outcome.body,
                    finished_at=utcnow(),
                )
            )

    async def _grade(self, prepared: Prepared, store: CollectingStore) -> Outcome:
        try:
            result = await self.grader.grade(prepared.request, store)
        except (GuardError, RequestError, JudgeConfigError, TemplateError) as exc:
            return rejection(exc)
        rubric = prepared.request.rubric
        request_id = prepared.request_id
        for judge_result in result.results:
            metrics.observe_judge(
                judge_result.judge,
                judge_result.status,
                judge_result.cached,
                judge_result.latency_ms,
            )
        payload = JudgeResponse(
            request_id=request_id,
            status=result.status,
            rubric=RubricInfo(id=rubric.id, version=rubric.version, hash=result.rubric_hash),
            candidate_model=result.candidate_model,
            candidate_maker=result.candidate_maker,
            aggregate=result.aggregate,
            results=result.results,
            skipped=result.skipped,
            unavailable=result.unavailable,
        ).model_dump(mode="json")
        if result.provider_outage:
            failing = ", ".join(f"{r.judge}: {r.error}" for r in result.results)
            payload["detail"] = f"no judge could answer ({failing})"
            return Outcome(503, payload, {"Retry-After": "5"})
        if result.status == "failed":
            payload["detail"] = "no judge produced a usable verdict; see results[].error"
            return Outcome(502, payload)
        return Outcome(200, payload)

    def _resolve_rubric(self, session: Session, body) -> Rubric:
        if body.rubric is not None:
            rubric, _ = save_rubric(session, parse_rubric(body.rubric, source="rubric"))
        else:
            rubric = get_rubric(session, body.rubric_id)
            digest = rubric_hash(rubric)
            if digest not in self._stored_rubrics:
                save_rubric(session, rubric)  # library rubrics are stored on first use
                self._stored_rubrics.add(digest)
        expected = RUBRIC_KIND_FOR[body.kind]
        if rubric.kind != expected:
            raise RubricError(
                f"kind '{body.kind}' needs a {expected} rubric; '{rubric.id}' is {rubric.kind}"
            )
        if isinstance(rubric, PenaltyWeightedRubric) and len(rubric.criteria) > (
            self.settings.max_criteria
        ):
            raise RubricError(f"criteria: more than {self.settings.max_criteria} criteria")
        return rubric
