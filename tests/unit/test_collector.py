"""`service.collector.start_up_frozen`: what exists when the block starts is out of the
collector's walks inside it, and handed back when it ends (so nothing is kept for good),
also when the block raises or sits inside another."""

from __future__ import annotations

import gc
import weakref

import pytest

from service.collector import start_up_frozen


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
