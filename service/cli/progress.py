"""The progress bar of long grading runs (`qadi regrade`, `qadi probe`): answers done, rate,
time left, errors and cost so far."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from judges import BatchStats


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


class _Ticks:
    """Counts graded answers, and tells rich the count from a thread of its own every
    `every` seconds: rich redraws ten times a second, and telling it of each answer (its
    lock, its speed samples, the cost's text) was 1% of a regrade's CPU (issue 40). Only
    the graders' thread counts and only the teller reads, so no lock is needed; `close`
    tells the final count, so the bar ends on it."""

    def __init__(self, progress: Progress, task, stats: BatchStats, every: float = 0.1) -> None:
        self.progress, self.task, self.stats, self.every = progress, task, stats, every
        self.done = 0
        self.told = 0
        self.closing = threading.Event()
        self.teller = threading.Thread(target=self._tell_until_closed, daemon=True)
        self.teller.start()

    def __call__(self) -> None:
        self.done += 1

    def _tell_until_closed(self) -> None:
        while not self.closing.wait(self.every):
            self._tell()

    def _tell(self) -> None:
        """The count, errors and cost, when answers came since the last time (before the
        first answer the cost stays "not yet known")."""
        done = self.done
        if done != self.told:
            self.progress.update(
                self.task, completed=done, errors=self.stats.failed, cost=self.stats.cost_text
            )
            self.told = done

    def close(self) -> None:
        self.closing.set()
        self.teller.join()
        self._tell()


@contextmanager
def grading_bar(description: str, total: int, stats: BatchStats) -> Iterator[Callable[[], None]]:
    """A `progress_bar` with one `grading_task`, and a function to call once per graded
    answer; the bar shows `stats`' errors and cost, and ends on the exact count however
    the work ends (an interrupted run's bar shows what was done)."""
    with progress_bar() as progress:
        ticks = _Ticks(progress, grading_task(progress, description, total), stats)
        try:
            yield ticks
        finally:
            ticks.close()
