"""Offline regrading: stored or file answers through the batch core (`judges.batch`), every
outcome saved to the database and written to the results file as it comes.

A run is resumable because a call is identified by its cache key: rerunning the same
command reuses every key already stored (ok, and parse errors unless --retry-failed), so
only missing calls are made. Provider failures are never reused: they are called again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judges import AnswerRecord, BatchOptions, Graded, GradeRequest, JudgesConfig, PlannedGrade
from judges.client import price
from judges.config import JudgeEntry
from judges.lazy_litellm import litellm_module
from judges.templates import PromptTemplate
from rubrics import Rubric, ScaleRubric


def requests_for(
    answers: Iterable[AnswerRecord], rubrics: dict[str | None, Rubric], judges: list[str] | None
) -> Iterator[GradeRequest]:
    """One request per answer, made as it is asked for, under the rubric of its `rubric_id`
    (`rubrics[None]`: the one given for every answer, see `rubric_plan`)."""
    return (
        GradeRequest.from_answer(rubrics.get(None) or rubrics[answer.rubric_id], answer, judges)
        for answer in answers
    )


def rubric_plan(
    answers: Iterable[AnswerRecord], given: str | None
) -> tuple[int, set[str], list[str]]:
    """The number of answers, the rubric references to resolve and what to tell the user
    about them, in one pass that keeps no answer. Given one (`--rubric`), it grades every
    answer and the lines naming another are counted in a note; otherwise each line's own
    `rubric_id` is used, and a line without one is an error."""
    count, others, named, missing, first_missing = 0, 0, set(), 0, []
    for answer in answers:
        count += 1
        if not answer.rubric_id:
            missing += 1
            if len(first_missing) < 5:
                first_missing.append(answer.item_id)
            continue
        named.add(answer.rubric_id)
        if given is not None and answer.rubric_id != given:
            others += 1
    if given is not None:
        note = f"--rubric {given} grades {others} answer(s) whose line names another rubric_id"
        return count, {given}, [note] if others else []
    if missing:
        more = f" (+{missing - 5} more)" if missing > 5 else ""
        shown = ", ".join(first_missing) + more
        raise ValueError(
            f"--rubric: not given, and {missing} answer(s) have no rubric_id ({shown}); "
            "give --rubric or a rubric_id on every line"
        )
    return count, named, []


# Requests planned and looked up together. The batch core holds about three chunks of
# planned requests besides those in flight (one being planned, two queued), ~10 KB each, so
# this bounds a run's memory whatever its input; 256 keys are still one cheap lookup.
CHUNK = 256


def options(
    concurrency: int, force: bool, retry_failed: bool, *, offload: bool = False
) -> BatchOptions:
    """Parse errors are deterministic, so they count as done unless --retry-failed; a rerun
    reuses stored results without storing them again. A regrade's event loop serves nothing
    but its judge calls, so its blocking work runs on it rather than in threads; `offload`
    where the loop serves others too (the service's probe runs): `BatchOptions.offload`."""
    reuse = ("ok",) if retry_failed else ("ok", "parse_error")
    return BatchOptions(
        concurrency=concurrency,
        reuse=reuse,
        force=force,
        record_reused=False,
        chunk=CHUNK,
        offload=offload,
    )


EVERY_STATUS = ("ok", "parse_error", "backend_error", "timeout")


def not_yet_stored(graded: list[Graded], stored: dict[str, Any]) -> list[Graded]:
    """Ingested results whose call is not stored yet, each once: ingesting a results file
    twice, or one that repeats a request, stores nothing twice."""
    seen: set[tuple[str, str]] = set()
    fresh = []
    for item in graded:
        [result] = item.judgments
        key = (result.cache_key, result.judge)
        if result.cache_key not in stored and key not in seen:
            seen.add(key)
            fresh.append(item)
    return fresh


# one encoder for every line: `json.dumps` with an option builds a new one per call
_ANSWER = json.JSONEncoder(ensure_ascii=False)


def result_lines(graded: Graded) -> list[str]:
    """One JSON line of the results file per judge that answered a graded answer (a reused
    stored result included, marked `cached`): the answer's item id and candidate, then the
    result's fields as pydantic's serialiser writes them (6 µs a line with token
    probabilities, against 22 µs for `model_dump` then `json.dumps`: issue 40)."""
    results = graded.result.results if graded.result is not None else graded.judgments
    answer = _ANSWER.encode(
        {
            "item_id": graded.request.metadata.get("item_id"),
            "candidate_model": graded.request.candidate_model,
        }
    )
    return [f"{answer[:-1]}, {result.model_dump_json()[1:]}\n" for result in results]


@contextmanager
def results_file(out: Path | None) -> Iterator[Callable[[Graded], None]]:
    """A writer of each graded answer's lines (`result_lines`) as it comes, so no result
    waits in memory. They go to a temporary file that replaces `out` when the run ends;
    an interrupted or failed run leaves the previous file whole. No `out`: nothing written."""
    if out is None:
        yield lambda graded: None
        return
    temporary = out.with_suffix(out.suffix + ".tmp")
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            yield lambda graded: handle.writelines(result_lines(graded))
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    temporary.replace(out)


def expected_completion_tokens(rubric: Rubric, template: PromptTemplate) -> int:
    """A stated assumption for dry runs: ~40 tokens per criterion verdict plus a rationale,
    a short JSON for scale judges, a few tokens for a bare integer."""
    criteria = getattr(rubric, "criteria", None)
    if criteria:
        return 40 * len(criteria) + 60
    return 5 if template.output == "first_integer" else 40


def calls_per_verdict(entry: JudgeEntry, plan: PlannedGrade) -> int:
    """The calls one verdict costs: `samples` for a sampling judge (judges/sampling.py);
    with `score_values`, one more per allowed value and dimension (judges/value_scoring.py)."""
    calls = entry.confidence.calls_per_verdict
    rubric, output = plan.request.rubric, plan.template.output
    if (
        entry.confidence.score_values
        and isinstance(rubric, ScaleRubric)
        and output in ("rating_json", "scores_json")
    ):
        dimensions = 1 if output == "rating_json" else len(rubric.dimensions)
        calls += dimensions * int(rubric.scale.max - rubric.scale.min + 1)
    return calls


def estimate_cost(
    config: JudgesConfig, pending: Iterable[tuple[PlannedGrade, str]]
) -> dict[str, Any]:
    """Calls and a price estimate from LiteLLM's own table, per judge. A judge whose model
    has no price is named and left out of the total, which is then marked partial."""
    litellm = litellm_module()  # its token counter: a dry run imports LiteLLM, ~4 s of CPU
    per_judge: dict[str, dict[str, Any]] = {}
    completion = 0
    for plan, judge in pending:
        model = config.judge(judge).model
        calls = calls_per_verdict(config.judge(judge), plan)
        completion = expected_completion_tokens(plan.request.rubric, plan.template)
        entry = per_judge.setdefault(
            judge,
            {"model": model, "calls": 0, "calls_per_verdict": calls, "prompt_tokens": 0,
             "cost_usd": 0.0},
        )  # fmt: skip
        # counted with LiteLLM's bundled default (tiktoken) encoding for every model: model-
        # specific tokenizers would be fetched from a hub, and this is an estimate anyway
        tokens = calls * litellm.token_counter(messages=plan.call.messages)
        entry["calls"] += calls
        entry["prompt_tokens"] += tokens
        cost = price(model, tokens, calls * completion)
        entry["cost_usd"] = (
            None if cost is None or entry["cost_usd"] is None else (entry["cost_usd"] + cost)
        )
    unpriced = sorted(j for j, e in per_judge.items() if e["cost_usd"] is None)
    return {
        "calls": sum(e["calls"] for e in per_judge.values()),
        "assumed_completion_tokens_per_call": completion,
        "judges": per_judge,
        "cost_usd": sum(e["cost_usd"] for e in per_judge.values() if e["cost_usd"] is not None),
        "cost_complete": not unpriced,
        "unpriced_judges": unpriced,
    }
