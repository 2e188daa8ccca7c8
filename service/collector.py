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
imports anything: no full collection during start-up, about a fifth less start-up CPU
(`tests/perf/bench_start_up.py`). What is allocated is still collected, in rounds of 10,000
young objects instead of 700.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 10_000  # CPython's default is 700


def fewer_collections() -> None:
    """Collect the youngest generation every YOUNG_THRESHOLD net allocations, the older
    generations as before: for a `qadi` process, set before its imports."""
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


@contextmanager
def start_up_frozen() -> Iterator[None]:
    """Run the block with the objects that exist now out of the collector's walks (inside
    another such block, the outer one has frozen them and unfreezes them)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
