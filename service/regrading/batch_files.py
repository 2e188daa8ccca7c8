"""Regrading through batch files: the OpenAI Batch API JSONL format, which provider batch
endpoints (about half the price) and `vllm run-batch` accept and produce.

Each request's custom_id is the judge and the call's cache key, so results read back with
`--ingest` become judgments through the same reply reading (`judges.replies`) as live calls.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from judges import Graded, Grader, JudgeResult, PlannedGrade
from judges.client import price
from judges.logprobs import request_params
from judges.makers import model_name
from judges.replies import judge_result, read_completion

BATCH_PRICE_FACTOR = 0.5  # provider batch endpoints bill about half the synchronous price


def custom_id(plan: PlannedGrade, judge: str) -> str:
    return f"{judge}|{plan.keys[judge].removeprefix('sha256:')}"


def write_batch(grader: Grader, pending: Iterable[tuple[PlannedGrade, str]], path: Path) -> int:
    """One request line per pending call, written as each comes; the body is what a live
    call would send. A sampling judge's samples are combined as they come back live, so
    batch files refuse it (and no file is left)."""
    count = 0
    try:
        with path.open("w", encoding="utf-8") as handle:
            for plan, judge in pending:
                handle.write(json.dumps(_request_line(grader, plan, judge), ensure_ascii=False))
                handle.write("\n")
                count += 1
    except ValueError:
        path.unlink(missing_ok=True)
        raise
    return count


def _request_line(grader: Grader, plan: PlannedGrade, judge: str) -> dict[str, Any]:
    entry = grader.config.judge(judge)
    if entry.confidence.source == "sampling":
        raise ValueError(
            f"--batch: judge {judge} takes its confidence from sampling, which batch files "
            "do not carry; regrade it live, or give it another confidence source"
        )
    call = plan.call_for(entry)
    body: dict[str, Any] = {
        "model": model_name(entry.model),
        "messages": call.messages,
        **entry.sampling,
        **request_params(entry.top_logprobs),
    }
    if call.response_format is not None:
        body["response_format"] = call.response_format
    return {
        "custom_id": custom_id(plan, judge),
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": body,
    }


def read_results(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Result lines, split on newlines only (a JSON string may hold U+2028 and the like)."""
    with path.open(encoding="utf-8", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}: row {number}: not valid JSON ({exc.msg})") from None


def ingest_results(
    grader: Grader, plans: list[PlannedGrade], path: Path
) -> tuple[list[Graded], list[str]]:
    """Batch output lines as graded requests (one judgment each); unknown ids are reported."""
    by_id = {custom_id(p, judge): (p, judge) for p in plans for judge in p.panel.judges}
    graded, unknown = [], []
    for number, line in read_results(path):
        found = by_id.get(str(line.get("custom_id")))
        if found is None:
            unknown.append(f"row {number}: custom_id {line.get('custom_id')!r} is not in this plan")
            continue
        plan, judge = found
        graded.append(Graded(plan.request, judgments=[_result(grader, plan, judge, line)]))
    return graded, unknown


def _result(grader: Grader, plan: PlannedGrade, judge: str, line: dict[str, Any]) -> JudgeResult:
    entry = grader.config.judge(judge)
    response = line.get("response") or {}
    body = response.get("body") or {}
    base = grader.unanswered(judge, plan)
    redact = grader.client.redact
    if line.get("error") or response.get("status_code") != 200:
        detail = line.get("error") or body.get("error") or f"status {response.get('status_code')}"
        return base.model_copy(update={"error": redact(f"batch error: {detail}")})
    verbalised = entry.confidence.source == "verbalised"
    result = judge_result(
        base, read_completion(body), plan.template, plan.request, redact, verbalised
    )
    return result.model_copy(
        update={
            "cost_usd": batch_cost(
                entry.model, result.prompt_tokens or 0, result.completion_tokens or 0
            )
        }
    )


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    cost = price(model, prompt_tokens, completion_tokens)
    return None if cost is None else cost * BATCH_PRICE_FACTOR
