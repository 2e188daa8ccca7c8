"""Probe runs over HTTP: `POST /probes` mirrors `qadi probe`; stored runs are read by id (JSON,
HTML or Markdown), listed, and their perturbed texts fetched for checking a run.

The run shares the service's grader (its judges' `rpm` pacing and cooldowns, single-flight
calls) and its bound on judge calls in flight with live grading, reuses stored verdicts by
cache key, and refuses to start when it needs more new calls than `max_calls`. What one
caller can spend is bounded by the service (issue 42.3): a run plans at most
QADI_PROBE_MAX_CALLS judge calls, a key has at most QADI_PROBE_RUNS_PER_KEY runs going, the
request and each new call count against the key's rate limit, a client that goes away stops
the run's calls, and planning and statistics run in threads, off the event loop.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from judges import AnswerRecord, JudgeConfigError, TemplateError
from judges.probes import ProbeError
from judges.probes.run import PlanTooLarge
from service.api.deps import Caller, GradesKey, JudgeKey
from service.api.errors import field_error, invalid
from service.api.formats import negotiate, split_suffix
from service.api.pagination import decode_cursor, encode_cursor, naive_utc
from service.db.engine import session_scope
from service.errors import NotConfigured
from service.judging.limits import PacedCalls
from service.regrading import local as regrading
from service.reporting import probes as core
from service.stores.answers import answers_from_db
from service.stores.judgments import project_batcher
from service.stores.probes import get_run, list_runs, store_run, summary
from service.stores.rubrics import RubricNotFound, get_rubric

router = APIRouter(tags=["probes"])
ITEMS_MAX = 5000


class ProbeRunRequest(core.ProbeOptions):
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={
            "examples": [
                {
                    "rubric": "kinayat-explanation",
                    "probes": ["verbosity", "injection_ar", "diacritics_strip"],
                    "metadata": {"language": "ar"},
                    "limit": 200,
                    "max_calls": 1000,
                }
            ]
        },
    )

    rubric: str = Field(min_length=1, description="'id' or 'id@version' the judges grade with")
    items: list[AnswerRecord] | None = Field(
        default=None,
        max_length=ITEMS_MAX,
        description="answers to probe; omitted: answers stored in the database",
    )
    judged_with: str | None = Field(
        default=None, description="database answers: only those judged under this rubric"
    )
    candidate_model: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict, description="database answers")
    since: datetime | None = Field(default=None, description="database answers stored since")
    limit: int | None = Field(default=None, ge=1, description="only the first N answers")
    max_calls: int | None = Field(
        default=1000,
        ge=0,
        description="refuse (422) a run that needs more new judge calls; null: no limit below "
        "the service's own on the judge calls a run plans (QADI_PROBE_MAX_CALLS)",
    )
    dry_run: bool = Field(
        default=False,
        description="answer 200 with the planned judge calls, pairs, skipped items and a cost "
        "estimate; no call is made and nothing is stored",
    )


class ProbeRunPage(BaseModel):
    items: list[dict[str, Any]]
    next_cursor: str | None


def _answers(body: ProbeRunRequest, session, project: str) -> list[AnswerRecord]:
    if body.items is not None:
        answers = body.items
    else:
        since = naive_utc(body.since) if body.since else None
        answers = answers_from_db(
            session, project, body.judged_with, body.candidate_model, body.metadata, since
        )
    answers = answers[: body.limit] if body.limit else answers
    if not answers:
        where = "items" if body.items is not None else "metadata"
        raise invalid(f"{where}: no answers to probe")
    return answers


def _prepare(request: Request, body: ProbeRunRequest, project: str):
    """Resolve the rubric, read the answers and plan the pairs (before any call), all in
    the caller's project; a plan past the service's bound stops there."""
    grader = request.app.state.grader
    with session_scope(request.app.state.sessions) as session:
        try:
            rubric = get_rubric(session, project, body.rubric)
        except RubricNotFound as exc:
            raise invalid(f"rubric: {exc}") from None
        answers = _answers(body, session, project)
    options = core.ProbeOptions(**body.model_dump(include=set(core.ProbeOptions.model_fields)))
    bound = request.app.state.settings.probe_max_calls
    try:
        plan = core.plan_run(grader.config, answers, rubric, options, bound)
    except PlanTooLarge as exc:
        raise invalid(
            f"max_calls: {exc}, the most one probe run may plan on this service, stored or new "
            "(QADI_PROBE_MAX_CALLS); probe fewer items, judges or probes"
        ) from None
    except (ProbeError, JudgeConfigError) as exc:
        raise invalid(str(exc)) from None
    except TemplateError as exc:
        raise invalid(f"rubric: {exc}") from None
    _check_permutation_work(options.permutations, len(plan.slots), bound)
    return rubric, options, plan


def _check_permutation_work(permutations: int, pairs: int, bound: int) -> None:
    """The sign-flip test's work is about permutations × changed pairs; a run may ask for
    as much as the default draws over its most pairs (QADI_PROBE_MAX_CALLS), a few seconds
    of CPU, and no more (a million draws over 20,000 pairs would be minutes)."""
    drawn = core.ProbeOptions.model_fields["permutations"].default
    if permutations * pairs > drawn * bound:
        raise invalid(
            f"permutations: {permutations} over {pairs} pairs is more work than this service "
            f"does for a probe run ({drawn} × QADI_PROBE_MAX_CALLS = {drawn * bound} "
            "permutations × pairs); ask fewer permutations or probe fewer items"
        )


@router.post(
    "/probes",
    status_code=201,
    summary="Run the probes on answers with the configured judges, store and return the run",
    responses={200: {"description": "`dry_run`: the planned calls and cost; nothing called"}},
)
async def create_run(body: ProbeRunRequest, request: Request, caller: JudgeKey) -> JSONResponse:
    """Refused before anything is planned when the key is over its rate, or has its
    QADI_PROBE_RUNS_PER_KEY runs going (429)."""
    judging = request.app.state.judging
    if judging.batch is None:
        raise NotConfigured("no judges configured: set QADI_JUDGES_CONFIG to a judges YAML")
    await judging.count_request(caller.key_id)
    async with judging.probe_runs.hold(caller.key_id):
        paced = PacedCalls(lambda: judging.take_rate(caller.key_id))
        watching = asyncio.create_task(_stop_when_gone(request, paced))
        try:
            return await _run(body, request, caller, paced)
        finally:
            watching.cancel()


async def _run(
    body: ProbeRunRequest, request: Request, caller: Caller, paced: PacedCalls
) -> JSONResponse:
    judging = request.app.state.judging
    project = caller.project
    rubric, options, plan = await asyncio.to_thread(_prepare, request, body, project)
    batcher = project_batcher(
        judging.batch.grader,
        judging.factory,
        project,
        regrading.options(
            request.app.state.settings.judge_concurrency, False, False, offload=True
        ),
        slots=judging.batch.slots,
    )
    try:
        calls, pending = await core.budget(plan, batcher, options.max_calls, body.dry_run)
    except core.CallBudgetExceeded as exc:
        raise invalid(str(exc)) from None
    if body.dry_run:
        summary = await asyncio.to_thread(
            core.dry_run_summary, plan, calls, pending, batcher.grader.config, options.max_calls
        )
        return JSONResponse(summary)
    report = await core.run(plan, batcher, rubric, options, calls, admit=paced)
    if report is None:
        return JSONResponse(
            field_error(
                [],
                "the client went away: the run stopped; its judge calls are stored, and the "
                "same request again reuses them",
                "client_closed",
            ),
            status_code=499,
        )

    def store() -> dict[str, Any]:
        with session_scope(request.app.state.sessions) as session:
            return store_run(session, project, report, plan.perturbations, core.rendered).report

    return JSONResponse(await asyncio.to_thread(store), status_code=201)


async def _stop_when_gone(request: Request, paced: PacedCalls) -> None:
    """Stop the run's judge calls when its client goes away: the body has been read, so
    the next message is `http.disconnect`, sent when the connection closes."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    paced.stop()


@router.get("/probes", response_model=ProbeRunPage, summary="Stored probe runs, oldest first")
def list_probe_runs(
    request: Request,
    caller: GradesKey,
    cursor: str | None = Query(None, max_length=512),
    limit: int = Query(100, ge=1),
) -> ProbeRunPage:
    limit = min(limit, request.app.state.settings.page_size_max)
    position = decode_cursor(cursor) if cursor else None
    with session_scope(request.app.state.sessions) as session:
        rows = list_runs(session, caller.tenant, limit + 1, position)
        page = [summary(row) for row in rows[:limit]]
        last = rows[limit - 1] if len(rows) > limit else None
        next_cursor = encode_cursor(last.created_at, last.id) if last is not None else None
    return ProbeRunPage(items=page, next_cursor=next_cursor)


@router.get(
    "/probes/{run_id}",
    summary="A probe run as JSON, or HTML/Markdown by Accept header or a .html/.md suffix",
)
def show_run(run_id: str, request: Request, caller: GradesKey):
    run_id, fmt = split_suffix(run_id)
    with session_scope(request.app.state.sessions) as session:
        row = get_run(session, caller.tenant, run_id)
        if row is None:
            raise HTTPException(404, "no such probe run")
        return negotiate(request, fmt, row.report, row.html, row.markdown)


@router.get(
    "/probes/{run_id}/perturbations",
    summary="The perturbed texts of a run, with their probe, version and seed",
)
def show_perturbations(run_id: str, request: Request, caller: GradesKey) -> dict[str, Any]:
    with session_scope(request.app.state.sessions) as session:
        row = get_run(session, caller.tenant, run_id)
        if row is None:
            raise HTTPException(404, "no such probe run")
        return {"id": row.id, "seed": row.seed, "perturbations": row.perturbations}
