"""Issue 16 item 13: a bench run shows counts and the time left, not a bare spinner."""

from __future__ import annotations

from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress, TimeRemainingColumn

from service.cli.bench import progress_columns


def test_bench_progress_shows_done_of_total_and_eta():
    columns = progress_columns()
    assert any(isinstance(c, MofNCompleteColumn) for c in columns)
    assert any(isinstance(c, TimeRemainingColumn) for c in columns)
    console = Console(record=True, width=120, force_terminal=False)
    progress = Progress(*columns, console=console, auto_refresh=False)
    task = progress.add_task("gpt-4o · midi-mcq", total=480)
    progress.advance(task, 120)
    console.print(progress.make_tasks_table(progress.tasks))
    line = console.export_text()
    assert "gpt-4o · midi-mcq" in line and "120/480" in line and "ETA" in line


def test_grading_progress_starts_with_an_unknown_cost_not_zero():
    """`qadi regrade` and `qadi probe` start their bar before any call is priced: "$0.0000"
    there said a run costs nothing, when an unpriced model's calls never cost zero."""
    from judges import BatchStats
    from service.cli.progress import grading_task, progress_bar

    progress = progress_bar()
    console = Console(record=True, width=160, force_terminal=False)
    task = grading_task(progress, "regrade", 10)
    console.print(progress.make_tasks_table(progress.tasks))
    started = console.export_text()
    assert "errors 0  cost –" in started and "$0" not in started
    progress.update(task, advance=1, cost=BatchStats(unpriced=1).cost_text)
    console.print(progress.make_tasks_table(progress.tasks))
    assert "unknown (1 call(s) of unpriced models)" in console.export_text()
