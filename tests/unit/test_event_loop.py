"""The commands' event loop: uvloop by default, asyncio's own when QADI_EVENT_LOOP asks."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from service import event_loop
from service.settings import get_settings


@pytest.fixture
def loop_setting(monkeypatch):
    """Sets QADI_EVENT_LOOP (None: unset) with the settings read afresh."""

    def choose(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("QADI_EVENT_LOOP", raising=False)
        else:
            monkeypatch.setenv("QADI_EVENT_LOOP", value)
        get_settings.cache_clear()

    yield choose
    get_settings.cache_clear()


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_grading_runs_on_uvloop_by_default(loop_setting):
    loop_setting(None)
    assert isinstance(event_loop.run(_running_loop()), uvloop.Loop)


def test_asyncio_s_loop_when_asked(loop_setting):
    loop_setting("asyncio")
    loop = event_loop.run(_running_loop())
    assert not isinstance(loop, uvloop.Loop)
    assert isinstance(loop, asyncio.BaseEventLoop)


def test_the_loop_is_closed_and_its_async_generators_finished(loop_setting):
    """As asyncio.run: the judges' HTTP sessions close in the loop's shutdown_asyncgens."""
    loop_setting(None)
    finished = []

    async def generator():
        try:
            yield
        finally:
            finished.append(True)

    async def main():
        gen = generator()
        await anext(gen)
        return gen, asyncio.get_running_loop()

    _, loop = event_loop.run(main())
    assert finished == [True] and loop.is_closed()
