"""Regrading through batch files: the OpenAI Batch API JSONL format, which provider batch
endpoints (about half the price) and `vllm run-batch` accept and produce.

Each request's custom_id is the call's cache key, so results read back with `--ingest`
land in the same judgments with the same validation and parse-error accounting.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judges import Grader
from judges.makers import model_name
from judges.models import JudgeResult
from judges.verdicts import ParseFailure, parse_reply
from service.regrade import Plan, PlannedCall, price

BATCH_PRICE_FACTOR = 0.5  # provider batch endpoints bill about half the synchronous price


def custom_id(planned: PlannedCall) -> str:
    return f"{planned.judge}|{planned.key.removeprefix('sha256:')}"


def write_batch(grader: Grader, calls: list[PlannedCall], path: Path) -> int:
    """One request line per pending call; the body is what the router would have sent."""
    with path.open("w", encoding="utf-8") as handle:
        for planned in calls:
            entry = grader.config.judge(planned.judge)
            body: dict[str, Any] = {
                "model": model_name(entry.model),
                "messages": planned.call.messages,
                **entry.sampling,
            }
            if planned.call.response_format is not None:
                body["response_format"] = planned.call.response_format
            line = {
                "custom_id": custom_id(planned),
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": body,
            }
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(calls)


def read_results(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: row {number}: not valid JSON ({exc.msg})") from None


def ingest_results(
    grader: Grader, plan: Plan, path: Path
) -> tuple[list[tuple[PlannedCall, JudgeResult]], list[str]]:
    """Turn batch output lines into judge results; unknown custom_ids are reported."""
    by_id = {custom_id(c): c for c in plan.calls}
    results, unknown = [], []
    for number, line in read_results(path):
        planned = by_id.get(str(line.get("custom_id")))
        if planned is None:
            unknown.append(f"row {number}: custom_id {line.get('custom_id')!r} is not in this plan")
            continue
        results.append((planned, _result(grader, plan, planned, line)))
    return results, unknown


def _result(grader: Grader, plan: Plan, planned: PlannedCall, line: dict[str, Any]) -> JudgeResult:
    entry = grader.config.judge(planned.judge)
    response = line.get("response") or {}
    body = response.get("body") or {}
    base = JudgeResult(
        judge=planned.judge,
        model=entry.model,
        maker=grader.config.maker_of_judge(entry),
        status="backend_error",
        cache_key=planned.key,
        template=plan.template.ref,
        template_hash=plan.template.hash,
        rubric_ref=f"{plan.rubric.id}@{plan.rubric.version}",
        rubric_hash=plan.rubric_hash,
    )
    if line.get("error") or response.get("status_code") != 200:
        detail = line.get("error") or body.get("error") or f"status {response.get('status_code')}"
        return base.model_copy(update={"error": grader.router.redact(f"batch error: {detail}")})
    try:
        text = body["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        return base.model_copy(update={"error": "batch result has no choices[0].message.content"})
    usage = body.get("usage") or {}
    prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
    update: dict[str, Any] = {
        "status": "ok",
        "raw_reply": text,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost_usd": batch_cost(entry.model, prompt_tokens or 0, completion_tokens or 0),
    }
    try:
        verdict = parse_reply(plan.template, plan.rubric, text)
    except ParseFailure as exc:
        return base.model_copy(update={**update, "status": "parse_error", "error": str(exc)})
    update.update({k: getattr(verdict, k) for k in type(verdict).model_fields})
    return base.model_copy(update=update)


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    cost = price(model, prompt_tokens, completion_tokens)
    return None if cost is None else cost * BATCH_PRICE_FACTOR
