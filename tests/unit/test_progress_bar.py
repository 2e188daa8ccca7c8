"""The grading progress bar: rich is told of graded answers a few times a second, also while
none arrive, and the bar ends on the exact count however the work ends."""

from __future__ import annotations

import time

import pytest

from judges import BatchStats
from service.cli import progress as bars


def _task(progress):
    (task,) = progress.tasks
    return task


def _bars_made(monkeypatch) -> list:
    """The progress bars `grading_bar` makes, each with the number of times rich was told
    of its task (`told[0]`), kept to be read after it ends."""
    made = []
    real = bars.progress_bar

    def counted():
        bar = real()
        update = bar.update
        bar.told = [0]

        def counting_update(*args, **kwargs):
            bar.told[0] += 1
            return update(*args, **kwargs)

        bar.update = counting_update
        made.append(bar)
        return bar

    monkeypatch.setattr(bars, "progress_bar", counted)
    return made


def test_answers_are_counted_without_telling_rich_until_the_teller_runs(monkeypatch):
    """No update per answer: with a teller that would wait an hour, 999 answers tell rich
    nothing until the bar closes, and closing tells it once, the exact count."""
    made = _bars_made(monkeypatch)
    progress = bars.progress_bar()
    with progress:
        task = bars.grading_task(progress, "regrade", 1000)
        ticks = bars._Ticks(progress, task, BatchStats(), every=3600)
        for _ in range(999):
            ticks()
        assert (_task(made[0]).completed, made[0].told[0]) == (0, 0)
        ticks.close()
    assert (_task(made[0]).completed, made[0].told[0]) == (999, 1)


def test_the_bar_ends_on_the_count(monkeypatch):
    made = _bars_made(monkeypatch)
    with bars.grading_bar("regrade", 1000, BatchStats()) as tick:
        for _ in range(999):
            tick()
    assert _task(made[0]).completed == 999


def test_the_bar_catches_up_while_no_answer_arrives(monkeypatch):
    made = _bars_made(monkeypatch)
    with bars.grading_bar("regrade", 10, BatchStats()) as tick:
        for _ in range(3):
            tick()
        deadline = time.monotonic() + 5
        while _task(made[0]).completed < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _task(made[0]).completed == 3  # told within the run, not only at its end


def test_an_interrupted_run_s_bar_shows_what_was_done(monkeypatch):
    made = _bars_made(monkeypatch)
    with pytest.raises(KeyboardInterrupt), bars.grading_bar("regrade", 10, BatchStats()) as tick:
        for _ in range(3):
            tick()
        raise KeyboardInterrupt
    assert _task(made[0]).completed == 3


def test_a_run_stopped_before_any_answer_shows_no_cost(monkeypatch):
    made = _bars_made(monkeypatch)
    with pytest.raises(KeyboardInterrupt), bars.grading_bar("regrade", 10, BatchStats()):
        raise KeyboardInterrupt
    assert _task(made[0]).completed == 0
    assert _task(made[0]).fields["cost"] == bars.NO_COST_YET
