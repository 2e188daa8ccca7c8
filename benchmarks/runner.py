"""Running a multiple-choice task for one model: records → items (missing fields reported,
the run goes on), answers (cached) and strict parsing, as typed answer rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.generation import AnswerCache, CandidateModel, Mode, answer_items
from benchmarks.rows import AnswerRow, Item
from benchmarks.tasks import MissingField, Task

OnRow = Callable[[AnswerRow], None]


@dataclass
class Built:
    """A task's items, the records that lacked a field, and how many records the task's
    selection kept (MIDI's figurative-only tasks, Kinayat's 3/3-agreement connotations)."""

    items: list[Item] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    records: int = 0
    selected: int = 0


def build_items(task: Task, records: list[dict[str, Any]], seed: int, limit: int | None) -> Built:
    prepared = task.prepare(records)
    selected = [r for r in prepared if task.selects(r)]
    built = Built(records=len(prepared), selected=len(selected))
    for index, record in enumerate(selected[:limit] if limit else selected):
        try:
            built.items.extend(task.items(record, index, seed))
        except MissingField as exc:
            built.missing.append(str(exc))
    return built


async def run_task(
    task: Task,
    items: list[Item],
    model: CandidateModel,
    mode: Mode,
    cache: AnswerCache,
    concurrency: int,
    on_row: OnRow | None = None,
) -> list[AnswerRow]:
    rows: list[AnswerRow] = []

    def record(item: Item, key: str, output: str | None, error: str | None, cached: bool):
        row = AnswerRow.of(item, key, output, error, cached)
        if output is not None:
            row.parsed = task.parse(output, item)
            row.correct = row.parsed == item.gold
            row.parse_failure = row.parsed is None
        rows.append(row)
        if on_row:
            on_row(row)

    await answer_items(model, task, items, mode, cache, concurrency, record)
    return rows
