"""`service.collector.start_up_frozen`: what exists when the block starts is out of the
collector's walks inside it, and handed back when it ends (so nothing is kept for good),
also when the block raises or sits inside another. The `qadi` entry point starts up with
fewer collections."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from service.collector import YOUNG_THRESHOLD, fewer_collections, start_up_frozen
from tests.conftest import ROOT


class Node:
    """A reference cycle's member: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


def cycle() -> weakref.ref:
    """A weak reference to a cycle no one else holds: dead once the collector walks it."""
    return weakref.ref(Node())


def test_a_cycle_made_before_the_block_is_skipped_inside_it_and_freed_after():
    before = cycle()
    with start_up_frozen():
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert before() is not None  # frozen: the walk skipped it
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert before() is None


def test_a_cycle_made_inside_the_block_is_collected_there():
    with start_up_frozen():
        inside = cycle()
        gc.collect()
        assert inside() is None


def test_an_inner_block_does_not_unfreeze_what_the_outer_froze():
    before = cycle()
    with start_up_frozen():
        with start_up_frozen():
            pass
        gc.collect()
        assert before() is not None
    gc.collect()
    assert before() is None


def test_a_block_that_raises_still_unfreezes():
    with pytest.raises(RuntimeError), start_up_frozen():
        raise RuntimeError("the run failed")
    assert gc.get_freeze_count() == 0


# `qadi --help` started one way or the other, the full collections of its start-up counted
STARTED = """
import atexit, gc, sys
full = []
gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2
                    and full.append(1))
atexit.register(lambda: print(len(full), gc.get_threshold()[0]))
sys.argv = ["qadi", "--help"]
{start}
"""


def started(start: str) -> tuple[int, int]:
    """(full collections, young threshold) of a `qadi --help` process started by `start`."""
    done = subprocess.run(
        [sys.executable, "-c", STARTED.format(start=start)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    full, threshold = done.stdout.split()[-2:]
    return int(full), int(threshold)


def test_the_qadi_command_starts_up_without_a_full_collection():
    """Importing the CLI at CPython's default threshold walks the start-up's objects in full
    collections (three, here); the entry point raises the threshold before it imports."""
    assert started("from service.__main__ import main; main()") == (0, YOUNG_THRESHOLD)
    full, threshold = started("from service.cli import app; app()")
    assert full >= 1 and threshold == 700


def test_long_work_collects_at_the_raised_threshold_and_puts_the_thresholds_back():
    """Inside `start_up_frozen` the youngest generation is collected every YOUNG_THRESHOLD
    net allocations, whoever started the process (at CPython's 700 the collector took a
    tenth of a regrade's CPU: tests/perf/bench_gc.py); after it the thresholds are those
    from before the start-up raised them."""
    before = gc.get_threshold()
    try:
        for start_up in (fewer_collections, lambda: None):
            start_up()
            with start_up_frozen():
                assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
                with start_up_frozen():
                    pass
                assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
            assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


def test_a_block_that_raises_still_puts_the_thresholds_back():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), start_up_frozen():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == before
