"""Generative tasks: a target model answers, a judge panel grades the answer through the
injected `Grading` callable, and the task's own metrics are kept beside the grades."""

from __future__ import annotations

from benchmarks.generation import AnswerCache, CandidateModel, answer_items
from benchmarks.grading import Grading
from benchmarks.rows import AnswerRow, Item, PanelGrade
from benchmarks.runner import OnRow
from benchmarks.tasks import Task
from judges import AnswerRecord, GradeRequest, GradeResult, GuardError
from judges.batch import REFUSALS
from rubrics import library_rubric


def grade_request(
    task: Task, item: Item, response: str, model: CandidateModel, judges, run_id: str
) -> GradeRequest:
    answer = AnswerRecord(
        item_id=f"{item.item_id}|{model.name}",
        prompt=item.judge_prompt,
        response=response,
        reference=item.reference,
        candidate_model=model.entry.model,
        metadata={
            "bench_item": item.item_id,
            "bench_run": run_id,
            "candidate": model.name,
            **item.groups,
            **item.meta.get("judge_metadata", {}),  # what the judge's template reads
        },
    )
    return GradeRequest.from_answer(
        item.meta.get("rubric") or library_rubric(task.rubric), answer, judges
    )


def panel_grade(result: GradeResult) -> PanelGrade:
    ok = [r for r in result.results if r.status == "ok"]
    return PanelGrade(
        score=result.aggregate.mean if result.aggregate else None,
        judges={r.judge: r.score for r in ok},
        dimensions={r.judge: r.dimensions for r in ok},
        failed=[r.judge for r in result.results if r.status != "ok"],
        skipped=[s.judge for s in result.skipped],
    )


async def run_generative(
    task: Task,
    items: list[Item],
    model: CandidateModel,
    cache: AnswerCache,
    concurrency: int,
    grade: Grading,
    judges: list[str] | None,
    run_id: str,
    on_row: OnRow | None = None,
) -> list[AnswerRow]:
    rows: list[AnswerRow] = []

    async def on_answer(
        item: Item, key: str, output: str | None, error: str | None, cached: bool
    ) -> None:
        row = AnswerRow.of(item, key, output, error, cached)
        rows.append(row)
        if output is not None:
            await _grade(row, item, output)
        if on_row:
            on_row(row)

    async def _grade(row: AnswerRow, item: Item, output: str) -> None:
        response, extra = task.respond(item, output) if task.respond else (output, {})
        row.problems = list(extra.pop("parse_problems", []))
        row.metrics = extra
        if response is None:
            row.parse_failure = True
            return
        try:
            result = await grade(grade_request(task, item, response, model, judges, run_id))
        except GuardError as exc:
            row.grade_error, row.guard_rejected = str(exc), True
            return
        except REFUSALS as exc:  # the request cannot be graded: recorded, never a grade
            row.grade_error = f"{type(exc).__name__}: {exc}"
            return
        row.grade = panel_grade(result)

    await answer_items(model, task, items, "generate", cache, concurrency, on_answer)
    return rows
