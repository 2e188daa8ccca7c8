"""The SME workbench's speed with a long queue (issue 35): server time of the queue page, of
reserving the next item, and of the grading page, p50 and p95, with 100,000 items queued
(4 dialects, 10% double-labelled) and SMEs grading through them.

The queue is built straight into the database (items, answers and queue rows inserted in
bulk, as POST /judge would store them; on PostgreSQL then ANALYZEd, as autovacuum would),
then each SME signs in by an invite link and loops:
GET /workbench/queue, POST /workbench/next (which reserves and redirects), GET the item page,
POST the label. Times are each request's wall time through the app in this process (Starlette's
TestClient: no network, no other load), so they are the service's own time per page.

Run: .venv/bin/python tests/perf/bench_workbench.py [--items 100000] [--rounds 200]
     [--database-url postgresql+psycopg://...]   (default: a SQLite file in a temp folder)
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fastapi.testclient import TestClient
from sqlalchemy import insert, select

from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import ItemRow, ResponseRow, SmeQueueRow, utcnow
from service.settings import Settings
from service.stores.sme_queue import QueuePolicy, placement, route_tag
from service.stores.smes import add_person, invite
from tests.perf.page_times import analyze, print_times

DIALECTS = ("egy", "lev", "gulf", "iraqi")
RUBRIC = "iraqi-linguistic-shaku-maku@2"
MARKS = {"shaku_meaning": "met", "maku_meaning": "met", "greeting_example": "not_met",
         "thanks_confusion": "not_met", "msa_claim": "not_met"}  # fmt: skip


def build_queue(url: str, items: int, chunk: int = 5000) -> None:
    """`items` escalated items of the penalty-weighted rubric, stored in bulk."""
    policy = QueuePolicy(overlap_share=0.1)
    engine = make_engine(url)
    now = utcnow()
    with session_scope(make_sessionmaker(engine)) as session:
        for start in range(0, items, chunk):
            numbers = range(start, min(items, start + chunk))
            session.execute(insert(ItemRow), [
                {"content_hash": f"item-{i}", "prompt": f"شنو معنى شكو؟ ({i})",
                 "reference": None, "created_at": now} for i in numbers
            ])  # fmt: skip
            item_ids = dict(session.execute(
                select(ItemRow.content_hash, ItemRow.id).where(
                    ItemRow.content_hash.in_([f"item-{i}" for i in numbers]))
            ).all())  # fmt: skip
            session.execute(insert(ResponseRow), [
                {"project": "default", "content_hash": f"resp-{i}", "item_id": item_ids[f"item-{i}"],
                 "item_key": f"i{i}", "candidate_model": "gpt-4o",
                 "text": f"شكو يعني شنو اكو ({i})", "attributes": {"dialect": _dialect(i)},
                 "created_at": now} for i in numbers
            ])  # fmt: skip
            response_ids = dict(session.execute(
                select(ResponseRow.item_key, ResponseRow.id).where(
                    ResponseRow.item_key.in_([f"i{i}" for i in numbers]))
            ).all())  # fmt: skip
            session.execute(insert(SmeQueueRow), [
                {"project": "default", "request_id": None, "response_id": response_ids[f"i{i}"],
                 "item_id": f"i{i}", "rubric_ref": RUBRIC, "reason": "escalated",
                 "inclusion_prob": 1.0, "trust": None, "attributes": {"dialect": _dialect(i)},
                 "route_tag": route_tag({"dialect": _dialect(i)}, policy.route_by),
                 "status": "open", "created_at": now,
                 **placement("default", f"i{i}", RUBRIC, policy)} for i in numbers
            ])  # fmt: skip
    engine.dispose()
    analyze(url)


def _dialect(i: int) -> str:
    return DIALECTS[i % len(DIALECTS)]


def sign_in(app, url: str, handle: str, dialect: str) -> tuple[TestClient, str]:
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        person = add_person(session, "default", handle, tags=[f"dialect={dialect}"])
        secret = invite(session, person, 1)
    client = TestClient(app, follow_redirects=False)
    client.post(f"/workbench/invite/{secret}")
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/workbench/queue").text)
    return client, token.group(1)


def timed(call, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    answer = call(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, answer


def measure(url: str, rounds: int) -> dict[str, list[float]]:
    app = create_app(Settings(database_url=url, judges_config=None))
    smes = [sign_in(app, url, f"sme-{d}", d) for d in DIALECTS]
    times: dict[str, list[float]] = {"queue page": [], "next item": [], "grading page": [],
                                     "submit": []}  # fmt: skip
    for round_number in range(rounds):
        client, token = smes[round_number % len(smes)]
        spent, page = timed(client.get, "/workbench/queue")
        assert page.status_code == 200
        times["queue page"].append(spent)
        spent, moved = timed(client.post, "/workbench/next", data={"csrf": token})
        times["next item"].append(spent)
        path = moved.headers["location"]
        assert path.startswith("/workbench/items/"), path
        spent, page = timed(client.get, path)
        assert page.status_code == 200
        times["grading page"].append(spent)
        fields = {f"mark.{k}": v for k, v in MARKS.items()}
        spent, done = timed(client.post, f"{path}/submit", data={**fields, "csrf": token})
        assert done.status_code == 303, done.text
        times["submit"].append(spent)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    url = args.database_url or f"sqlite:///{folder / 'bench.db'}"
    upgrade(url)
    started = time.perf_counter()
    build_queue(url, args.items)
    took = time.perf_counter() - started
    print(f"queued {args.items:,} items in {took:.1f} s ({url.split(':')[0]})")
    times = measure(url, args.rounds)
    print_times(times, args.rounds)


if __name__ == "__main__":
    main()
