"""Offline regrading: plan the judge calls, skip those already stored, run the rest at
bounded concurrency, write every outcome to the database and the results file as it comes.

A run is resumable because a call is identified by its cache key: rerunning the same
command skips every key already stored (ok or parse error), so only missing calls are made.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from judges import Grader, GradeRequest, GuardError, JudgesConfig, RequestError, choose_panel
from judges.cache import cache_key
from judges.client import price
from judges.models import JudgeResult
from judges.prompts import JudgeCall, build_call
from judges.templates import PromptTemplate, load_template
from rubrics import Rubric, rubric_hash
from service.answers import Answer
from service.db.engine import session_scope
from service.db.schema import JudgmentRow
from service.judgment_store import ensure_responses, result_from_row, row_values

DONE_STATUSES = ("ok", "parse_error")  # deterministic outcomes; provider failures are retried


@dataclass
class PlannedCall:
    answer: Answer
    judge: str
    request: GradeRequest
    call: JudgeCall
    key: str
    response_id: int | None = None


@dataclass
class Plan:
    rubric: Rubric
    template: PromptTemplate
    rubric_hash: str
    calls: list[PlannedCall] = field(default_factory=list)
    guard_skips: list[tuple[str, str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def make_plan(
    answers: list[Answer], rubric: Rubric, config: JudgesConfig, judges: list[str] | None
) -> Plan:
    """One call per (answer, judge the guard allows); refused answers are listed, not dropped."""
    template = load_template(rubric.template)
    plan = Plan(rubric=rubric, template=template, rubric_hash=rubric_hash(rubric))
    for answer in answers:
        metadata = {**answer.metadata, "item_id": answer.item_id}
        request = GradeRequest(
            rubric=rubric,
            prompt=answer.prompt,
            response=answer.response,
            reference=answer.reference,
            candidate_model=answer.candidate_model,
            candidate_provider=answer.candidate_provider,
            judges=judges,
            metadata=metadata,
        )
        try:
            panel = choose_panel(config, judges, answer.candidate_model, answer.candidate_provider)
            call = build_call(template, request)
        except (GuardError, RequestError) as exc:
            plan.refused.append((answer.item_id, str(exc)))
            continue
        plan.guard_skips += [(answer.item_id, s.judge, s.detail) for s in panel.skipped]
        for name in panel.judges:
            key = cache_key(config.judge(name), template, plan.rubric_hash, request, call)
            plan.calls.append(PlannedCall(answer, name, request, call, key))
    return plan


def stored_statuses(session: Session, keys: list[str]) -> dict[str, set[str]]:
    """Statuses already stored per cache key (queried in chunks)."""
    found: dict[str, set[str]] = {}
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        rows = session.execute(
            select(JudgmentRow.cache_key, JudgmentRow.status).where(
                JudgmentRow.cache_key.in_(chunk)
            )
        )
        for key, status in rows:
            found.setdefault(key, set()).add(status)
    return found


def pending_calls(
    factory: sessionmaker[Session], plan: Plan, force: bool, retry_failed: bool
) -> tuple[list[PlannedCall], int]:
    """Calls still to make, and how many were skipped because already stored."""
    if force:
        return list(plan.calls), 0
    done = {"ok"} if retry_failed else set(DONE_STATUSES)
    with session_scope(factory) as session:
        statuses = stored_statuses(session, sorted({c.key for c in plan.calls}))
    todo = [c for c in plan.calls if not (statuses.get(c.key, set()) & done)]
    return todo, len(plan.calls) - len(todo)


def store_answers(factory: sessionmaker[Session], calls: list[PlannedCall]) -> None:
    """Items and answers go in before any call, so every judgment has its answer row."""
    requests = list({id(c.request): c.request for c in calls}.values())
    with session_scope(factory) as session:
        ids = dict(zip((id(r) for r in requests), ensure_responses(session, requests), strict=True))
    for planned in calls:
        planned.response_id = ids[id(planned.request)]


@dataclass
class Stats:
    planned: int = 0
    already_stored: int = 0
    statuses: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    errors: list[tuple[str, str, str, str]] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def made(self) -> int:
        return sum(self.statuses.values())

    def add(self, planned: PlannedCall, result: JudgeResult) -> None:
        self.statuses[result.status] += 1
        self.prompt_tokens += result.prompt_tokens or 0
        self.completion_tokens += result.completion_tokens or 0
        self.cost_usd += result.cost_usd or 0.0
        if result.status != "ok":
            self.errors.append(
                (planned.answer.item_id, planned.judge, result.status, result.error or "")
            )


class ResultWriter:
    """Writes outcomes in small batches from a queue: one transaction per batch, then the
    same results appended to the JSONL file, so a crash loses at most what is in flight."""

    def __init__(self, factory: sessionmaker[Session], out: Path | None) -> None:
        self.factory = factory
        self.out = out
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._drain())

    async def put(self, planned: PlannedCall, result: JudgeResult) -> None:
        await self.queue.put((planned, result))

    async def close(self) -> None:
        await self.queue.put(None)
        if self.task is not None:
            await self.task

    async def _drain(self) -> None:
        closing = False
        while not closing:
            batch = [await self.queue.get()]
            while not self.queue.empty() and len(batch) < 500:
                batch.append(self.queue.get_nowait())
            if batch[-1] is None:
                closing = True
                batch.pop()
            if batch:
                await asyncio.to_thread(self._write, batch)

    def _write(self, batch: list[tuple[PlannedCall, JudgeResult]]) -> None:
        with session_scope(self.factory) as session:
            session.execute(
                insert(JudgmentRow), [row_values(r, None, p.response_id) for p, r in batch]
            )
        if self.out is not None:
            with self.out.open("a", encoding="utf-8") as handle:
                for planned, result in batch:
                    handle.write(json.dumps(result_record(planned, result), ensure_ascii=False))
                    handle.write("\n")


def result_record(planned: PlannedCall, result: JudgeResult) -> dict[str, Any]:
    return {
        "item_id": planned.answer.item_id,
        "candidate_model": planned.answer.candidate_model,
        **result.model_dump(mode="json"),
    }


class RateLimiter:
    """Spaces the calls of one judge to its requests-per-minute."""

    def __init__(self, rpm: int) -> None:
        self.interval = 60.0 / rpm
        self.next_at = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self.lock:
            now = time.monotonic()
            delay = self.next_at - now
            self.next_at = max(now, self.next_at) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


class _Discard:
    """The grading core saves through a store; the writer persists instead."""

    async def find_ok(self, cache_key: str) -> None:
        return None

    async def save(self, request, result) -> None:
        return None


async def run_calls(
    grader: Grader,
    plan: Plan,
    calls: list[PlannedCall],
    writer: ResultWriter,
    concurrency: int,
    stats: Stats,
    on_result: Callable[[PlannedCall, JudgeResult], None] = lambda p, r: None,
) -> None:
    """N workers pull calls from a queue: at most `concurrency` calls in flight."""
    queue: asyncio.Queue = asyncio.Queue()
    for planned in calls:
        queue.put_nowait(planned)
    limiters = {e.name: RateLimiter(e.rpm) for e in grader.config.model_list if e.rpm}
    discard = _Discard()

    async def worker() -> None:
        while True:
            try:
                planned = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if planned.judge in limiters:
                await limiters[planned.judge].wait()
            result = await grader.judge_one(
                planned.judge,
                plan.template,
                plan.rubric_hash,
                planned.request,
                planned.call,
                discard,
                force=True,
            )
            stats.add(planned, result)
            await writer.put(planned, result)
            on_result(planned, result)

    writer.start()
    try:
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:
        await writer.close()


def rewrite_results_file(factory: sessionmaker[Session], plan: Plan, out: Path) -> int:
    """Make the file exactly the stored outcomes of this plan (latest per call), atomically."""
    planned_by = {(c.key, c.judge): c for c in plan.calls}
    keys = sorted({c.key for c in plan.calls})
    latest: dict[tuple[str, str], tuple[PlannedCall, JudgmentRow]] = {}
    with session_scope(factory) as session:
        for start in range(0, len(keys), 500):
            rows = session.scalars(
                select(JudgmentRow)
                .where(JudgmentRow.cache_key.in_(keys[start : start + 500]))
                .order_by(JudgmentRow.created_at, JudgmentRow.id)
            )
            for row in rows:
                planned = planned_by.get((row.cache_key, row.judge))
                if planned is not None:
                    latest[(row.cache_key, row.judge)] = (planned, row)
    temporary = out.with_suffix(out.suffix + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        for planned, row in latest.values():
            record = result_record(planned, result_from_row(row))
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    temporary.replace(out)
    return len(latest)


def expected_completion_tokens(plan: Plan) -> int:
    """A stated assumption for dry runs: ~40 tokens per criterion verdict plus a rationale,
    a short JSON for scale judges, a few tokens for a bare integer."""
    criteria = getattr(plan.rubric, "criteria", None)
    if criteria:
        return 40 * len(criteria) + 60
    return 5 if plan.template.output == "first_integer" else 40


def estimate_cost(config: JudgesConfig, plan: Plan, calls: list[PlannedCall]) -> dict[str, Any]:
    """Calls and a price estimate from LiteLLM's own table, per judge; unpriced models say so.

    Prompt tokens are approximate (one tokenizer for all models)."""
    import litellm

    completion = expected_completion_tokens(plan)
    per_judge: dict[str, dict[str, Any]] = {}
    for planned in calls:
        model = config.judge(planned.judge).model
        entry = per_judge.setdefault(
            planned.judge, {"model": model, "calls": 0, "prompt_tokens": 0, "cost_usd": 0.0}
        )
        # counted with LiteLLM's bundled default (tiktoken) encoding for every model: model-
        # specific tokenizers would be fetched from a hub, and this is an estimate anyway
        tokens = litellm.token_counter(messages=planned.call.messages)
        entry["calls"] += 1
        entry["prompt_tokens"] += tokens
        cost = price(model, tokens, completion)
        entry["cost_usd"] = (
            None if cost is None or entry["cost_usd"] is None else (entry["cost_usd"] + cost)
        )
    costs = [e["cost_usd"] for e in per_judge.values()]
    return {
        "calls": len(calls),
        "assumed_completion_tokens_per_call": completion,
        "judges": per_judge,
        "cost_usd": None if any(c is None for c in costs) else sum(costs),
    }
