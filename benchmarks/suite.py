"""Running a suite: every task for every target model, each answer cached, each task's
summary built from its own declarations (breakdowns, summary hook), everything stored
through a `RunStore` as it goes. No task is special-cased here.

Storage, grading and progress display are the caller's (the CLI passes the database store,
the service's grader and a rich progress bar); this module only needs their protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.generation import AnswerCache, CandidateModel, Mode
from benchmarks.generative import run_generative
from benchmarks.grading import Grading
from benchmarks.loading import DatasetUnavailable, load_records
from benchmarks.rows import AnswerRow
from benchmarks.runner import build_items, run_task
from benchmarks.summary import summarize
from benchmarks.tasks import Source, Task

GUARD_HINT = (
    "to reproduce a paper whose judge grades its own maker's answers (Fann or Flop: GPT-4o "
    "judging GPT-4o), run this task with --guard off; the run records it"
)


SAVE_EVERY = 16  # answers stored together while a task runs

class RunStore(Protocol):
    def create_run(self, suite: str, model: str, mode: str, seed: int) -> str: ...
    def save_answers(self, run_id: str, task: str, rows: list[AnswerRow]) -> None: ...
    def save_summary(self, run_id: str, summary: dict[str, Any]) -> None: ...


class Progress(Protocol):
    def start(self, label: str, total: int) -> None: ...
    def advance(self) -> None: ...
    def note(self, message: str) -> None: ...


@dataclass
class SuiteOptions:
    suite: str
    mode: Mode = "generate"
    seed: int = 0
    limit: int | None = None
    concurrency: int = 16
    data_dir: Path | None = None
    judges: list[str] | None = None  # the panel for generative tasks
    guard: str = "provider"  # the judges' self-evaluation guard, recorded with each run


@dataclass
class ModelRun:
    run_id: str
    model: str
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def all_skipped(self) -> bool:
        return all("skipped" in task for task in self.summary.values())


def localized(tasks: list[Task], templates: dict[str, dict[str, str]]) -> list[Task]:
    """Tasks with user-supplied localized templates ({task: {language: template}})."""
    known = {t.name for t in tasks}
    for name in templates:
        if name not in known:
            raise ValueError(f"templates: task '{name}' is not in this suite")
    out = []
    for task in tasks:
        if task.name in templates:
            if task.localize is None:
                raise ValueError(f"templates: task '{task.name}' takes no localized templates")
            task = task.localize(templates[task.name])
        out.append(task)
    return out


class Suite:
    """One suite run over several target models; datasets are loaded once for all."""

    def __init__(
        self,
        tasks: list[Task],
        options: SuiteOptions,
        store: RunStore,
        cache: AnswerCache,
        grade: Grading | None,
        progress: Progress,
        load: Callable[[Source, Path | None], list[dict[str, Any]]] = load_records,
    ) -> None:
        self.tasks, self.options, self.store, self.cache = tasks, options, store, cache
        self.grade, self.progress, self.load = grade, progress, load
        self._records: dict[str, list[dict[str, Any]] | DatasetUnavailable] = {}

    async def run(self, models: list[CandidateModel]) -> list[ModelRun]:
        return [await self.run_model(model) for model in models]

    async def run_model(self, model: CandidateModel) -> ModelRun:
        o = self.options
        run = ModelRun(self.store.create_run(o.suite, model.name, o.mode, o.seed), model.name)
        for task in self.tasks:
            run.summary[task.name] = await self.run_task(task, model, run.run_id)
            for note in run.summary[task.name].get("notes", []):
                self.progress.note(f"{model.name} · {task.name}: {note}")
        self.store.save_summary(run.run_id, run.summary)
        return run

    def records(self, source: Source) -> list[dict[str, Any]]:
        if source.file not in self._records:
            try:
                self._records[source.file] = self.load(source, self.options.data_dir)
            except DatasetUnavailable as exc:
                self._records[source.file] = exc
        found = self._records[source.file]
        if isinstance(found, DatasetUnavailable):
            raise found
        return found

    async def run_task(self, task: Task, model: CandidateModel, run_id: str) -> dict[str, Any]:
        o = self.options
        try:
            records = self.records(task.source)
        except DatasetUnavailable as exc:
            return {"skipped": str(exc)}
        if task.generative and self.grade is None:
            return {"skipped": "no judges configured (--judges-config)"}
        built = build_items(task, records, o.seed, o.limit)
        self.progress.start(f"{model.name} · {task.name}", len(built.items))

        unsaved: list[AnswerRow] = []

        def advance(row: AnswerRow) -> None:
            """Answers are stored as they come, a few at a time: a run killed mid-task keeps
            what it answered, and the next run finds those answers in the cache."""
            self.progress.advance()
            unsaved.append(row)
            if len(unsaved) >= SAVE_EVERY:
                self.store.save_answers(run_id, task.name, unsaved[:])
                unsaved.clear()

        if task.generative:
            rows = await run_generative(
                task, built.items, model, self.cache, o.concurrency, self.grade, o.judges,
                run_id, advance,
            )  # fmt: skip
        else:
            rows = await run_task(
                task, built.items, model, o.mode, self.cache, o.concurrency, advance
            )
        self.store.save_answers(run_id, task.name, unsaved)
        summary = summarize(task, rows, len(built.missing), model.name)
        summary.update(records=built.records, selected=built.selected, missing=built.missing[:20])
        notes = [*summary.get("notes", []), *built.missing[:5]]
        if task.generative:
            summary["guard"] = o.guard
            notes.append(f"judged with the self-evaluation guard '{o.guard}'")
            if summary["rejected_by_guard"]:
                notes.append(
                    f"{summary['rejected_by_guard']} answers had no judge the self-evaluation "
                    f"guard allows ({summary['grade_errors'][0]}); {GUARD_HINT}"
                )
        summary["notes"] = notes
        return summary
