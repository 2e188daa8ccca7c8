"""The grading progress bar: rich is told of graded answers a few times a second, and the
bar ends on the exact count however the work ends."""

from __future__ import annotations

import pytest

from judges import BatchStats
from service.cli import progress as bars


def _task(progress):
    (task,) = progress.tasks
    return task


def _bars_made(monkeypatch) -> list:
    """The progress bars `grading_bar` makes, kept to be read after it ends."""
    made = []
    real = bars.progress_bar
    monkeypatch.setattr(bars, "progress_bar", lambda: made.append(real()) or made[-1])
    return made


def test_answers_are_told_to_rich_in_bunches_and_the_bar_ends_on_the_count(monkeypatch):
    made = _bars_made(monkeypatch)
    stats = BatchStats()
    with bars.grading_bar("regrade", 1000, stats) as tick:
        for _ in range(999):
            tick()
        told = _task(made[0]).completed
    assert told < 999  # not each answer (999 updates would take far more than 0.1 s here)
    assert _task(made[0]).completed == 999
    assert _task(made[0]).fields["errors"] == 0


def test_an_interrupted_run_s_bar_shows_what_was_done(monkeypatch):
    made = _bars_made(monkeypatch)
    with pytest.raises(KeyboardInterrupt), bars.grading_bar("regrade", 10, BatchStats()) as tick:
        for _ in range(3):
            tick()
        raise KeyboardInterrupt
    assert _task(made[0]).completed == 3
