"""The event loop qadi's commands run their grading on (issue 40).

A regrade against a fast server spends much of its CPU in the event loop itself: scheduling
callbacks, reading sockets, waking tasks. uvloop does that work in C (libuv), as uvicorn
does for the service; `tests/perf/bench_regrade.py --lean` compares the two loops in one
run. uvloop has no Windows build, so there asyncio's own loop serves, with the same results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on uvloop where it is installed, on asyncio's loop elsewhere (or
    when QADI_EVENT_LOOP=asyncio asks for it: a benchmark's baseline, a suspected loop bug).
    As `asyncio.run`, Ctrl-C cancels `main` and is raised as KeyboardInterrupt once it ends."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's `new_event_loop`, or the platform's own asyncio loop when uvloop is not
    installed or QADI_EVENT_LOOP says `asyncio` (whatever event loop policy the process has
    been given)."""
    from service.settings import get_settings

    own = asyncio.DefaultEventLoopPolicy().new_event_loop
    if get_settings().event_loop == "asyncio":
        return own
    try:
        import uvloop
    except ImportError:  # no build for this platform (Windows)
        return own
    return uvloop.new_event_loop
