"""Issue 42 finding 6: what a judge-scope key can put in front of the SMEs is bounded. Every
`trust` request without a calibration escalates, and identical requests are cache hits that
cost no judge call, so before: 100 requests added 100 queue rows for 2 backend calls, and
200 copies of a 300 kB answer made one 60 MB page of GET /sme/queue. Now an item is queued
once per (item, rubric version, reason), a key queues at most its daily budget, and a page
stops at a byte limit. Judge calls go to the test double."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import judges_config_data
from tests.integration.test_service_api import Service, rubric_body, verdict

TRUST = {"alpha": 0.1, "delta": 0.1}  # never calibrated here: every item escalates


@pytest.fixture
def make_service(migrated_db, llm_server, tmp_path):
    llm_server.script({"content": verdict()})
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return lambda **settings: Service(migrated_db, path, **settings)


def escalate(service, item: str, response: str = "It means a thing.") -> dict:
    body = rubric_body(response=response, metadata={"item_id": item}, trust=TRUST)
    answer = service.post("/judge", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["trust"]["status"] == "escalated"
    return answer.json()["trust"]


def queue_of(service, limit: int = 500) -> list[dict]:
    items, cursor = [], None
    while True:
        query = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = service.get("/sme/queue", scope="grades", params=query)
        assert page.status_code == 200, page.text
        items += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return items


def test_identical_requests_queue_their_item_once(make_service, llm_server):
    service = make_service()
    for _ in range(30):
        trust = escalate(service, "same-item")
        assert trust["queued"] == {"reason": "escalated", "inclusion_prob": 1.0}
    [item] = queue_of(service)
    assert item["item_id"] == "same-item" and item["reason"] == "escalated"
    assert len(llm_server.requests()) == 1  # the other 29 were cache hits


def test_a_key_queues_at_most_its_daily_budget_and_every_verdict_is_still_answered(
    make_service,
):
    service = make_service(sme_queue_per_key_per_day=5)
    trusts = [escalate(service, f"item-{i}") for i in range(8)]
    assert [t["queued"] is not None for t in trusts] == [True] * 5 + [False] * 3
    assert "SME queue budget for the last 24 h is used up" in trusts[-1]["queue_note"]
    assert sorted(i["item_id"] for i in queue_of(service)) == [f"item-{i}" for i in range(5)]


def test_a_page_of_long_answers_stops_at_the_byte_limit_and_its_cursor_reaches_the_rest(
    make_service,
):
    service = make_service(page_bytes_max=100_000, sme_queue_per_key_per_day=0)
    long = "طويل " * 6_000  # 30,000 characters, 54 kB of UTF-8
    for i in range(6):
        escalate(service, f"long-{i}", response=f"{i} {long}")
    first = service.get("/sme/queue", scope="grades", params={"limit": 100}).json()
    assert len(first["items"]) == 1 and first["next_cursor"]  # a second item would pass 100 kB
    assert sorted(i["item_id"] for i in queue_of(service)) == [f"long-{i}" for i in range(6)]
