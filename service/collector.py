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
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
