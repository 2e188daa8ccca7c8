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


def progress_bar() -> Progress:
    """A task is added with fields `errors` and `cost` (BatchStats.cost_text: an unknown
    price is never shown as zero), updated as calls finish."""
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
