"""The service over a large stored history on PostgreSQL (issue 39): what a request costs with
10M judgments stored against an empty database, and the plan of each query behind it.

Measured, in this order, against the database at URL (migrated here; built by judgment_db.py)
and, with `--baseline`, an empty one:
- `qadi report nightly --window 24h --rubric kinayat-explanation` over URL, in this process:
  wall time;
- `qadi serve` over each (stand-in judges of service/sample/judges.yaml, auth off, one
  process each), then per request over HTTP, one database after the other: `GET /judgments`
  first page, a page near the end by cursor, both with `metadata=domain=food`, and a
  `/metrics` scrape, `--rounds` times each; then `POST /judge` (stand-in-good, a new answer
  each time) to each service in turn for `--seconds`, and the ratio of their p50s;
- with `--explain`: EXPLAIN (ANALYZE, BUFFERS) over URL of every query the nightly, the pages
  and the scrape made (captured as they ran, parameters included), trimmed to each plan's
  nodes, conditions, buffers and time (`--full-plans` for the whole).

Run: PYTHONPATH=. .venv/bin/python tests/perf/bench_at_scale.py postgresql+psycopg://.../tenm
     --baseline postgresql+psycopg://.../empty [--rounds 20] [--seconds 20] [--explain]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import tempfile
import time
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import httpx
from sqlalchemy import event, func, select, text
from sqlalchemy.engine import Engine

from service.api.pagination import decode_cursor, encode_cursor
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import JudgmentRow
from tests.conftest import ROOT, free_port
from tests.perf.bench_estimate_contention import body, judge_latencies
from tests.perf.bench_metrics_scrape import scrape
from tests.perf.load_judge import Service
from tests.perf.page_times import analyze, print_times

RUBRIC = "kinayat-explanation"
FOOD = {"metadata": "domain=food"}
PLAN_LINES = re.compile(r"->|Cond|Filter|Rows Removed|Sort Method|Execution Time")


@contextmanager
def captured(statements: list[tuple[str, object]]):
    """Every SELECT any engine of this process runs meanwhile, with its parameters."""

    def keep(connection, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            statements.append((statement, parameters))

    event.listen(Engine, "before_cursor_execute", keep)
    try:
        yield statements
    finally:
        event.remove(Engine, "before_cursor_execute", keep)


def nightly(url: str, folder: Path, statements: list) -> float:
    """Wall seconds of `qadi report nightly --window 24h`, run here (its queries captured)."""
    from typer.testing import CliRunner

    from service.cli.app import app

    os.environ["QADI_DATABASE_URL"] = url
    arguments = ["report", "nightly", "--window", "24h", "--rubric", RUBRIC, "--out-dir"]
    started = time.perf_counter()
    with captured(statements):
        result = CliRunner().invoke(app, [*arguments, str(folder)])
    wall = time.perf_counter() - started
    print(f"qadi report nightly --window 24h: {wall:.1f} s (exit {result.exit_code})")
    if result.exit_code not in (0, 3):  # 3: drift found, still a report
        print(result.output[-2000:])
    return wall


def deep_cursor(url: str) -> str | None:
    """The cursor of the 1000th judgment from the end: the next page is the last but ten."""
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        row = session.execute(
            select(JudgmentRow.created_at, JudgmentRow.id)
            .where(JudgmentRow.project == "default")
            .order_by(JudgmentRow.created_at.desc(), JudgmentRow.id.desc())
            .offset(1000)
            .limit(1)
        ).first()
    return encode_cursor(*row) if row else None


def pages(client: httpx.Client, cursor: str | None, rounds: int) -> dict[str, list[float]]:
    """Seconds of each kind of GET /judgments page and of a /metrics scrape, `rounds` each."""
    deep = {"cursor": cursor} if cursor else {}
    kinds = {"first": {}, "deep": deep, "food first": FOOD, "food deep": {**FOOD, **deep}}
    times: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(rounds):
        for name, params in kinds.items():
            started = time.perf_counter()
            response = client.get("/judgments", params={**params, "limit": 100})
            times[name].append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
    times["/metrics"] = scrape(client, rounds)[0]
    return {name: [1000 * t for t in values] for name, values in times.items()}


def explain(url: str, statements: list[tuple[str, object]], full: bool) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of each distinct captured query over judgments, answers or
    reports, trimmed to its scans, buffers and time unless `full`."""
    engine = make_engine(url)
    seen = set()
    with engine.connect() as connection:
        for statement, parameters in statements:
            if statement in seen or not re.search(r"judgments|responses|reports", statement):
                continue
            seen.add(statement)
            plan = connection.exec_driver_sql(
                f"EXPLAIN (ANALYZE, BUFFERS) {statement}", parameters
            ).scalars()
            lines = list(plan) if full else trimmed(list(plan))
            print(f"\n-- {' '.join(statement.split())[:300]}")
            print("\n".join(lines))
    engine.dispose()


def trimmed(plan: list[str]) -> list[str]:
    """A plan's nodes, conditions and time, with the buffers of the whole (its first node)."""
    total = next((line.strip() for line in plan if "Buffers" in line), "")
    kept = [line for line in plan[1:] if PLAN_LINES.search(line)]
    return [plan[0], *kept[:-1], f"{kept[-1]}   ({total})"]


@contextmanager
def served(urls: list[str], folder: Path):
    """`qadi serve` over each database (stand-in judges, auth off), their base URLs."""
    services = [Service(url, ROOT / "service/sample/judges.yaml", free_port(), folder)
                for url in urls]  # fmt: skip
    try:
        for service in services:
            service.start()
        yield [f"http://127.0.0.1:{service.port}" for service in services]
    finally:
        for service in services:
            service.stop()


def measure(urls: list[str], folder: Path, rounds: int, seconds: float) -> None:
    """The HTTP figures of each database: pages and scrapes one database after the other,
    POST /judge interleaved (one request to each in turn, so both see the same load from the
    rest of the machine: on 2 shared cores, runs minutes apart differ by more than 10%)."""
    with served(urls, folder) as bases:
        times = []
        for url, base in zip(urls, bases, strict=True):
            with httpx.Client(base_url=base, timeout=60) as client:
                times.append(pages(client, deep_cursor(url), rounds))
        judged = asyncio.run(judging(bases, seconds))
    for url, found, latencies in zip(urls, times, judged, strict=True):
        print(f"\n{url.rsplit('/', 1)[-1]} (~{judgment_count(url):,} judgments):")
        print_times({**found, "POST /judge": latencies}, rounds)
    if len(urls) > 1:
        ratio = statistics.median(judged[0]) / statistics.median(judged[1])
        print(f"\nPOST /judge p50 ratio, {len(judged[0])} requests each: {ratio:.2f}")


def capture_listings(url: str, statements: list) -> None:
    """The queries of the pages and the scrape measured, as the service makes them."""
    from service.stores import listings
    from service.stores.calibration import latest_report_keys
    from service.stores.projects import Tenant

    cursor = deep_cursor(url)
    after = decode_cursor(cursor) if cursor else None
    food = listings.JudgmentFilter(metadata={"domain": "food"})
    with captured(statements), session_scope(make_sessionmaker(make_engine(url))) as session:
        for where in (listings.JudgmentFilter(), food):
            listings.judgments(session, Tenant("default"), where, None, 101)
            listings.judgments(session, Tenant("default"), where, after, 101)
        latest_report_keys(session)


async def judging(bases: list[str], seconds: float) -> list[list[float]]:
    """Milliseconds of POST /judge to each service in turn for `seconds`, each a new answer
    (numbered from the clock: no cache hit from an earlier run)."""
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=60))
                   for base in bases]  # fmt: skip
        for client in clients:  # the rubric stored, connections warm
            await judge_latencies(client, 2, time.time_ns())
        found: list[list[float]] = [[] for _ in bases]
        number, stop = time.time_ns(), time.monotonic() + seconds
        while time.monotonic() < stop:
            for client, latencies in zip(clients, found, strict=True):
                latencies.append(await judged_once(client, number))
            number += 1
    return found


async def judged_once(client: httpx.AsyncClient, number: int) -> float:
    """Milliseconds of one POST /judge of answer `number`."""
    began = time.perf_counter()
    response = await client.post("/judge", json=body(number))
    assert response.status_code == 200, response.text
    return 1000 * (time.perf_counter() - began)


def judgment_count(url: str) -> int:
    """The judgments stored (an estimate from the statistics ANALYZE keeps: count(*) of 10M
    reads the table)."""
    engine = make_engine(url)
    with engine.connect() as connection:
        found = connection.scalar(
            text("SELECT reltuples::bigint FROM pg_class WHERE relname = 'judgments'")
        )
        if not found or found < 0:
            found = connection.scalar(select(func.count()).select_from(JudgmentRow))
    engine.dispose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="a PostgreSQL database URL (judgment_db.py's, or empty)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0, help="of POST /judge")
    parser.add_argument("--baseline", help="an empty database to compare with (migrated here)")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--full-plans", action="store_true")
    args = parser.parse_args()
    for url in (args.url, args.baseline):
        if url:
            upgrade(url)
            analyze(url)
    statements: list = []
    with tempfile.TemporaryDirectory() as folder:
        nightly(args.url, Path(folder), statements)
        urls = [args.url, *([args.baseline] if args.baseline else [])]
        measure(urls, Path(folder), args.rounds, args.seconds)
    capture_listings(args.url, statements)
    if args.explain:
        explain(args.url, statements, args.full_plans)


if __name__ == "__main__":
    main()
