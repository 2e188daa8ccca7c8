"""Running a task for one model: records → items (missing fields reported, the run goes
on), answers (cached), strict parsing, and the task's summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks import scoring
from benchmarks.generation import AnswerCache, CandidateModel, Mode, answer_items
from benchmarks.tasks import Item, MissingField, Task


@dataclass
class TaskRun:
    task: Task
    rows: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def build_items(
    task: Task, records: list[dict[str, Any]], seed: int, limit: int | None
) -> tuple[list[Item], list[str]]:
    items, missing = [], []
    selected = [r for r in task.prepare(records) if task.selects(r)]
    for index, record in enumerate(selected[:limit] if limit else selected):
        try:
            items.extend(task.items(record, index, seed))
        except MissingField as exc:
            missing.append(str(exc))
    return items, missing


async def run_task(
    task: Task,
    records: list[dict[str, Any]],
    model: CandidateModel,
    mode: Mode,
    seed: int,
    limit: int | None,
    cache: AnswerCache,
    concurrency: int,
    on_row=None,
) -> TaskRun:
    items, missing = build_items(task, records, seed, limit)
    run = TaskRun(task=task, missing=missing)

    def record(item: Item, key: str, output: str | None, error: str | None, cached: bool):
        parsed = scoring.parse_answer(output, item.labels) if output is not None else None
        row = {
            "item_id": item.item_id,
            "unit": item.unit,
            "groups": item.groups,
            "prompt": item.prompt,
            "gold": item.gold,
            "output": output,
            "parsed": parsed,
            "correct": parsed == item.gold,
            "parse_failure": output is not None and parsed is None,
            "error": error,
            "cached": cached,
            "cache_key": key,
        }
        run.rows.append(row)
        return on_row(task, row) if on_row else None

    await answer_items(model, task, items, mode, cache, concurrency, record)
    return run


def summarize(task_name: str, rows: list[dict[str, Any]], missing: int) -> dict[str, Any]:
    """Accuracy ± stderr (per unit where items are rotations), failures, and breakdowns."""
    units: dict[str, list[bool]] = {}
    for row in rows:
        units.setdefault(row["unit"] or row["item_id"], []).append(row["correct"])
    summary: dict[str, Any] = {
        **scoring.accuracy(all(flags) for flags in units.values()),
        "items": len(rows),
        "parse_failures": sum(r["parse_failure"] for r in rows),
        "errors": sum(r["error"] is not None for r in rows),
        "missing_records": missing,
    }
    for attribute in ("language", "tier", "variety", "usage", "context"):
        groups = scoring.by_group(rows, attribute)
        if groups:
            summary[f"by_{attribute}"] = groups
    if "by_language" in summary and "by_tier" in summary:
        summary["tier_macro"] = _tier_macro(rows)
    if task_name == "midi-bias" and summary["accuracy"] is not None:
        fig = summary["accuracy"]
        summary["bias"] = {"figurative": fig, "literal": 1 - fig, "delta": 2 * fig - 1}
    return summary


def _tier_macro(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Mean over languages of per-language accuracy within each tier (MIDI's tier cells)."""
    out = {}
    for tier in sorted({r["groups"].get("tier") for r in rows if r["groups"].get("tier")}):
        languages = scoring.by_group(
            [r for r in rows if r["groups"].get("tier") == tier], "language"
        )
        out[tier] = scoring.macro(languages)
    return out
