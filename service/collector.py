"""The cyclic garbage collector during long grading work (issue 40).

Importing qadi, LiteLLM and their dependencies leaves about 400,000 objects (modules,
classes, functions, LiteLLM's tables) that live as long as the process. CPython's collector
walks every one of them on each full collection, about 230 ms here, and a regrade's steady
stream of short-lived results brings a full collection every thousand calls or so: measured,
a quarter of a regrade's CPU went to finding that the modules are still alive
(`tests/perf/bench_gc.py`).

`gc.freeze()` moves every object that exists into a permanent generation that collections
skip; what the work allocates afterwards is collected as before. Unfreezing when the work
ends hands the frozen objects back to the collector, so anything among them that became
garbage in the meantime (a reference cycle) is still freed: nothing is kept for good, which
matters where the work runs inside a longer process (a test run, a notebook).

Start-up itself pays for the same walks: while the imports pile up those objects, CPython's
default threshold (a young collection every 700 net allocations, a full one every hundred of
those) brings 3 full collections before `qadi`'s commands are even defined and about 7 by the
time a regrade has imported LiteLLM, each walking all that was imported so far. The `qadi`
command (`service/__main__.py`) therefore raises the young generation's threshold before it
imports anything: no full collection during start-up, about an eighth less start-up CPU
(`tests/perf/bench_start_up.py`). What is allocated is still collected, in rounds of
YOUNG_THRESHOLD young objects instead of 700.

Long work (`start_up_frozen`: a regrade, the service) collects at that threshold too,
whichever way its process was started (uvicorn's worker processes, a test run). At
CPython's 700, a regrade's requests and results waiting in its queues outlived a young
collection or ten and were walked again in the older generations: with the start-up frozen,
the collector still took about an eighth of a regrade's CPU, against about a third of that
at 10,000 (`tests/perf/bench_gc.py`). 50,000 took 0.986 of 10,000's instructions per regrade
call and 200,000 0.990 (`tests/perf/bench_instructions.py`, 4,000 answers; runs of one
build differ by 0.007): a small gain that stops growing past 50,000, likely fewer walks over
the requests waiting in a regrade's queues before they are promoted. Garbage in reference
cycles waits at most 50,000 net allocations longer to be freed, some megabytes. The
thresholds are put back when the work ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # CPython's default is 700
_before_start_up: tuple[int, ...] | None = None  # the thresholds fewer_collections replaced


def fewer_collections() -> None:
    """Collect the youngest generation every YOUNG_THRESHOLD net allocations, the older
    generations as before, until `start_up_frozen` begins: for a `qadi` process, set
    before its imports."""
    global _before_start_up
    if _before_start_up is None:
        _before_start_up = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *_before_start_up[1:])


def _start_up_over() -> None:
    """The thresholds as they were before `fewer_collections`, if it was called."""
    global _before_start_up
    if _before_start_up is not None:
        gc.set_threshold(*_before_start_up)
        _before_start_up = None


@contextmanager
def start_up_frozen() -> Iterator[None]:
    """Run the block with the objects that exist now out of the collector's walks, the
    youngest generation collected every YOUNG_THRESHOLD net allocations (inside another
    such block, the outer one has set both and undoes them); after it, the thresholds are
    those from before the start-up."""
    if gc.get_freeze_count():
        yield
        return
    _start_up_over()
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
