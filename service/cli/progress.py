"""The progress bar of long grading runs (`qadi regrade`, `qadi probe`): answers done, rate,
time left, errors and cost so far."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from service.cli.app import console


class RateColumn(ProgressColumn):
    """Answers per second over rich's sliding window."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:.1f}/s" if task.speed else "–/s")


NO_COST_YET = "cost –"  # before the first call: not yet known, and never shown as zero


def progress_bar() -> Progress:
    """A task is added with `grading_task`, updated as calls finish with `errors` and `cost`
    (BatchStats.cost_text: an unknown price is never shown as zero)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("errors {task.fields[errors]}  {task.fields[cost]}"),
        console=console,
        transient=False,
    )


def grading_task(progress: Progress, description: str, total: int):
    """A task of `progress_bar`: no errors and no cost known yet. It does not start at
    "$0.0000": nothing is priced before the first call answers, and an unpriced model's
    calls never cost zero."""
    return progress.add_task(description, total=total, errors=0, cost=NO_COST_YET)
