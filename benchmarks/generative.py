"""Generative tasks: a target model answers, a judge panel grades the answer through the
grading core (flow 1), and the task's own metrics are kept beside the grades."""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.generation import AnswerCache, CandidateModel, answer_items
from benchmarks.runner import TaskRun, build_items
from benchmarks.tasks import Item, Task
from judges import GradeRequest, GradeResult, GuardError, RequestError
from rubrics import library_rubric

GradeFn = Callable[[GradeRequest], Awaitable[GradeResult]]


async def run_generative(
    task: Task,
    records: list[dict[str, Any]],
    model: CandidateModel,
    seed: int,
    limit: int | None,
    cache: AnswerCache,
    concurrency: int,
    grade: GradeFn,
    judges: list[str] | None,
    run_id: str,
) -> TaskRun:
    items, missing = build_items(task, records, seed, limit)
    run = TaskRun(task=task, missing=missing)

    async def on_answer(
        item: Item, key: str, output: str | None, error: str | None, cached: bool
    ) -> None:
        row: dict[str, Any] = {
            "item_id": item.item_id,
            "unit": None,
            "groups": item.groups,
            "prompt": item.prompt,
            "gold": "",
            "output": output,
            "parsed": None,
            "correct": False,
            "error": error,
            "cached": cached,
            "cache_key": key,
            "parse_failure": False,
        }
        run.rows.append(row)
        if output is None:
            return
        response, extra = task.respond(item, output) if task.respond else (output, {})
        row.update(extra)
        if response is None:
            row["parse_failure"] = True
            return
        request = GradeRequest(
            rubric=item.meta.get("rubric") or library_rubric(task.rubric),
            prompt=item.judge_prompt,
            response=response,
            reference=item.reference,
            candidate_model=model.entry.model,
            judges=judges,
            metadata={
                "item_id": f"{item.item_id}|{model.name}",
                "bench_item": item.item_id,
                "bench_run": run_id,
                "candidate": model.name,
                **item.groups,
                **{k: item.meta[k] for k in ("poem_id", "title") if k in item.meta},
            },
        )
        try:
            result = await grade(request)
        except (GuardError, RequestError) as exc:
            row["grade_error"] = str(exc)
            return
        row["grade"] = {
            "score": result.aggregate.mean if result.aggregate else None,
            "judges": {r.judge: r.score for r in result.results if r.status == "ok"},
            "dimensions": {r.judge: r.dimensions for r in result.results if r.status == "ok"},
            "failed": [r.judge for r in result.results if r.status != "ok"],
            "skipped": [s.judge for s in result.skipped],
        }

    await answer_items(model, task, items, "generate", cache, concurrency, on_answer)
    return run


def mean_sd(values: list[float]) -> dict[str, float | int | None]:
    """Mean, sample SD (n−1) and standard error SD/√n."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "stderr": None}
    sd = statistics.stdev(values) if n > 1 else None
    return {
        "n": n,
        "mean": statistics.fmean(values),
        "sd": sd,
        "stderr": sd / n**0.5 if sd is not None else None,
    }


def summarize_generative(task_name: str, rows: list[dict[str, Any]], missing: int) -> dict:
    graded = [r for r in rows if r.get("grade") and r["grade"]["score"] is not None]
    judges = sorted({j for r in graded for j in r["grade"]["judges"]})
    summary: dict[str, Any] = {
        "items": len(rows),
        "answered": sum(r["output"] is not None for r in rows),
        "errors": sum(r["error"] is not None for r in rows),
        "parse_failures": sum(r["parse_failure"] for r in rows),
        "missing_records": missing,
        "graded": len(graded),
        "evaluations": sum(len(r["grade"]["judges"]) for r in rows if r.get("grade")),
        "failed_evaluations": sum(len(r["grade"]["failed"]) for r in rows if r.get("grade")),
        "skipped_by_guard": sum(len(r["grade"]["skipped"]) for r in rows if r.get("grade")),
        "score": mean_sd([r["grade"]["score"] for r in graded]),
        "by_judge": {
            j: mean_sd([r["grade"]["judges"][j] for r in graded if j in r["grade"]["judges"]])
            for j in judges
        },
    }
    for attribute in ("dialect", "category", "era", "genre", "meter", "variety"):
        values = sorted({r["groups"][attribute] for r in graded if attribute in r["groups"]})
        if values:
            summary[f"by_{attribute}"] = {
                v: mean_sd([r["grade"]["score"] for r in graded if r["groups"].get(attribute) == v])
                for v in values
            }
    if any("bleu" in r for r in rows):
        summary["bleu"] = mean_sd([r["bleu"] for r in rows if "bleu" in r])
        summary["chrf"] = mean_sd([r["chrf"] for r in rows if "chrf" in r])
        for dimension in ("faithfulness", "fluency", "overall"):
            summary[dimension] = mean_sd(
                [
                    statistics.fmean(d[dimension] for d in r["grade"]["dimensions"].values())
                    for r in graded
                    if r["grade"]["dimensions"]
                ]
            )
    return summary
