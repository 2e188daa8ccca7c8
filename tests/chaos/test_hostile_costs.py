"""Chaos runs of requests that cost the service too much (issue 42): each is refused at its
bound while ordinary load goes on, with the usual accounting (0 × 500, 0 duplicated, 0 lost,
0 fabricated). Against a real `qadi serve` (tests/chaos/harness.py)."""

from __future__ import annotations

import asyncio
import time

import httpx
from sqlalchemy import select

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import SmeQueueRow
from tests.chaos.harness import Chaos
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
    database, tmp_path
):
    chaos = Chaos(tmp_path, database, faults={"latency_min": 0.02, "latency_max": 0.1}, workers=2)
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
