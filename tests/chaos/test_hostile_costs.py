"""Chaos runs of requests that cost the service too much (issue 42): each is refused at its
bound while ordinary load goes on, with the usual accounting (0 × 500, 0 duplicated, 0 lost,
0 fabricated); a probe run whose client goes away stops calling and keeps what it paid.
Against a real `qadi serve` (tests/chaos/harness.py)."""

from __future__ import annotations

import asyncio
import contextlib
import time

import httpx
from sqlalchemy import func, select

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import JudgmentRow, SmeQueueRow
from tests.chaos.harness import Chaos
from tests.conftest import settled
from tests.perf.load_judge import body_for

FREEZING = "{{ ((((10)**64)**64)**64)**64 }}"  # 13 s of CPU per request before issue 42


def hostile_template_body(number: int) -> dict:
    """A penalty-weighted request (the load's rubric) with an inline template that shows all
    it must and then computes a number of 10^(64^4) digits."""
    user = "{{ criteria }}\n{{ reply_format }}\n{{ prompt }}\n{{ answer }}\n" + FREEZING
    return {
        "kind": "rubric",
        "prompt": "شنو معنى شكو؟",
        "response": f"hostile answer {number}",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": "iraqi-linguistic-shaku-maku",
        "template": {"id": "hostile", "version": 1, "output": "criteria_json", "user": user},
        "metadata": {"item_id": f"hostile-{number}"},
    }


def test_freezing_templates_under_load_are_refused_at_once_and_the_workers_keep_serving(
    sqlite_database, tmp_path
):
    chaos = Chaos(
        tmp_path, sqlite_database, faults={"latency_min": 0.02, "latency_max": 0.1}, workers=2
    )
    hostile: list[tuple[int, float, str]] = []
    health: list[float] = []

    async def send_hostile() -> None:
        async with httpx.AsyncClient(base_url=chaos.base, timeout=60, headers=chaos.headers) as c:
            for number in range(12):
                started = time.monotonic()
                answer = await c.post("/judge", json=hostile_template_body(number))
                hostile.append((answer.status_code, time.monotonic() - started, answer.text))

    async def watch_health() -> None:
        async with httpx.AsyncClient(base_url=chaos.base, timeout=60) as client:
            for _ in range(40):
                started = time.monotonic()
                (await client.get("/healthz")).raise_for_status()
                health.append(time.monotonic() - started)
                await asyncio.sleep(0.1)

    figures = chaos.load_then_account(4, 6, [(0.5, send_hostile), (0.5, watch_health)])
    assert len(hostile) == 12
    for status, seconds, text in hostile:
        assert status == 422 and "over 256 bits" in text, text
        assert seconds < 3, f"a refused template took {seconds:.1f} s"
    assert max(health) < 2, f"/healthz waited {max(health):.1f} s"
    assert figures["statuses"].get(200, 0) > 10
    assert (figures["500"], figures["non_json"]) == (0, 0)
    assert (figures["duplicates"], figures["lost"], figures["fabricated"]) == (0, 0, 0)


def test_a_key_flooding_the_sme_queue_adds_each_item_once_and_stops_at_its_budget(
    database, tmp_path
):
    """60 identical uncalibrated `trust` requests (cache hits after the first) and 60 with
    item ids of their own, beside ordinary load: the identical item is queued once, the key
    queues no more than its budget of 20, and every request is still answered."""
    budget = {"QADI_SME_QUEUE_PER_KEY_PER_DAY": "20"}
    chaos = Chaos(tmp_path, database, faults={"latency_min": 0.02, "latency_max": 0.1}, env=budget)
    answers: list[dict] = []

    async def flood() -> None:
        async with httpx.AsyncClient(base_url=chaos.base, timeout=60, headers=chaos.headers) as c:
            for number in range(120):
                body = {
                    **body_for(999, number),
                    "trust": {"alpha": 0.1, "delta": 0.1},
                    "metadata": {"item_id": "flood" if number < 60 else f"flood-{number}"},
                }
                if number < 60:
                    body["response"] = "the same answer"
                answers.append(await chaos.send(c, f"flood-{number}", body))

    figures = chaos.load_then_account(3, 5, [(0.2, flood)])
    assert [a["status"] for a in answers] == [200] * 120
    assert all(a["body"]["trust"]["status"] == "escalated" for a in answers)
    rows = queue_rows(chaos.url)
    assert len(rows) == 20 and rows.count("flood") == 1  # the budget; the identical item once
    # the identical item is in the queue for all 60; 19 distinct ones fit the budget after it
    notes = [a["body"]["trust"]["queue_note"] for a in answers]
    assert notes[:79] == [None] * 79 and all("budget" in n for n in notes[79:])
    assert (figures["500"], figures["non_json"]) == (0, 0)
    assert (figures["duplicates"], figures["lost"], figures["fabricated"]) == (0, 0, 0)


def queue_rows(url: str) -> list[str]:
    """The item ids in the SME queue."""
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            return list(session.scalars(select(SmeQueueRow.item_id)))
    finally:
        engine.dispose()


def short_answers(n: int) -> list[dict]:
    """n distinct short English answers to probe (a 5,000-answer body stays under 1 MB)."""
    return [
        {
            "item_id": f"p{i}",
            "prompt": "Explain: time is a sword.",
            "response": f"Time is precious; use it well ({i}).",
            "reference": "Use your time before it is gone.",
            "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        }
        for i in range(n)
    ]


def probe_calls(url: str) -> int:
    """Judge calls made by probe runs (their judgments answer no HTTP request), retries
    included."""
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            found = select(func.coalesce(func.sum(JudgmentRow.attempts), 0))
            return session.scalar(found.where(JudgmentRow.request_id.is_(None)))
    finally:
        engine.dispose()


def test_probe_runs_past_the_services_bounds_are_refused_at_once_beside_load(
    sqlite_database, tmp_path
):
    """5,000 answers × every probe with `max_calls: null` (about 90,000 planned calls; before
    issue 42 a run of 1,000 planned 156,000 and called them all, holding the event loop 13.7
    s to plan them): refused at QADI_PROBE_MAX_CALLS, run or dry run, with no call, while
    grading goes on on two workers and /healthz keeps answering."""
    chaos = Chaos(
        tmp_path, sqlite_database, faults={"latency_min": 0.02, "latency_max": 0.1}, workers=2
    )
    hostile: list[tuple[int, float, dict]] = []
    health: list[float] = []
    body = {"rubric": "kinayat-explanation", "items": short_answers(5000), "max_calls": None}

    async def send_hostile() -> None:
        async with httpx.AsyncClient(base_url=chaos.base, timeout=120, headers=chaos.headers) as c:
            for sent in (body, {**body, "dry_run": True}, body):
                started = time.monotonic()
                answer = await c.post("/probes", json=sent)
                hostile.append((answer.status_code, time.monotonic() - started, answer.json()))

    async def watch_health() -> None:
        async with httpx.AsyncClient(base_url=chaos.base, timeout=60) as client:
            for _ in range(60):
                started = time.monotonic()
                (await client.get("/healthz")).raise_for_status()
                health.append(time.monotonic() - started)
                await asyncio.sleep(0.1)

    async def scenario():
        await chaos.load(clients=3, seconds=8, events=[(0.5, send_hostile), (0.5, watch_health)])
        await chaos.settle()
        scenario.figures = chaos.account(strict_calls=True)

    try:
        asyncio.run(scenario())
    finally:
        chaos.close()
    assert len(hostile) == 3
    for status, seconds, answer in hostile:
        assert status == 422, answer
        [error] = answer["detail"]
        assert error["loc"] == ["body", "max_calls"] and "QADI_PROBE_MAX_CALLS" in error["msg"]
        assert seconds < 30, f"a refused probe run took {seconds:.1f} s"
    assert max(health) < 3, f"/healthz waited {max(health):.1f} s"
    assert probe_calls(chaos.url) == 0
    figures = scenario.figures
    assert figures["statuses"].get(200, 0) > 10
    assert (figures["500"], figures["non_json"]) == (0, 0)
    assert (figures["duplicates"], figures["lost"], figures["fabricated"]) == (0, 0, 0)


def test_a_probe_run_whose_client_goes_away_stops_calling_and_keeps_its_calls(database, tmp_path):
    """A run of 400 calls, 4 at a time and 0.2-0.3 s each, on two workers: while it runs,
    the same key's next runs are refused on either worker (429, its runs per key); then its
    client goes away (the request cancelled, its connection closed). Before issue 42 the run
    went on to make all 400 calls. Now no call starts after the service sees the connection
    close, the calls in flight finish, and every call made is a stored judgment, which the
    key's next request finds."""
    chaos = Chaos(
        tmp_path,
        database,
        faults={"latency_min": 0.2, "latency_max": 0.3},
        env={"QADI_JUDGE_CONCURRENCY": "4"},
        workers=2,
    )
    # 2 judges × 100 answers × (original, padded)
    body = {"rubric": "kinayat-explanation", "probes": ["verbosity"],
            "items": short_answers(100), "max_calls": None}  # fmt: skip
    outcome: dict = {}

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=chaos.base, timeout=60, headers=chaos.headers)

    async def scenario():
        async with client() as leaving, client() as other:
            running = asyncio.create_task(leaving.post("/probes", json=body))
            while await asyncio.to_thread(chaos.server.calls) < 8:  # the run is calling
                await asyncio.sleep(0.05)
            outcome["second"] = [
                await other.post("/probes", json={**body, "dry_run": True}) for _ in range(4)
            ]
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
        outcome["gone"] = chaos.server.calls()
        outcome["stopped"] = await asyncio.to_thread(settled, chaos.server.calls, 0.5, 4)
        await asyncio.sleep(1.0)  # the run lets go of its lease once its calls have landed
        async with client() as again:
            outcome["again"] = await again.post("/probes", json={**body, "dry_run": True})
        scenario.figures = chaos.account(strict_calls=True)

    try:
        asyncio.run(scenario())
    finally:
        chaos.close()
    for refused in outcome["second"]:
        assert refused.status_code == 429, refused.text
        assert "(QADI_PROBE_RUNS_PER_KEY)" in refused.json()["detail"][0]["msg"]
    gone, stopped = outcome["gone"], outcome["stopped"]
    assert 8 <= stopped < 400 and stopped - gone <= 4, (gone, stopped)
    assert probe_calls(chaos.url) == stopped  # every call paid is a stored judgment
    again = outcome["again"]
    assert again.status_code == 200, again.text
    assert again.json()["calls"] == {
        "planned": 400,
        "already_stored": stopped,
        "to_make": 400 - stopped,
    }
    figures = scenario.figures
    assert (figures["500"], figures["duplicates"], figures["lost"]) == (0, 0, 0)
