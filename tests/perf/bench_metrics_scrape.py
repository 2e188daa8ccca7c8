"""The cost of a Prometheus scrape (GET /metrics) with many stored calibration reports
(issue 42.7): wall time per scrape, p50 and p95, the body's size and its number of series.

Stored reports are real ones: one report computed by `calibration.calibrate` over synthetic
grades (3 judges, 2 SMEs, `--strata` values of one `by` attribute) is stored `--reports`
times over `--scopes` (project, kind, scope) keys, a new one every minute, as nightly and ad
hoc runs pile up. Times are each request's wall time through the app in this process
(Starlette's TestClient: no network, no other load).

Run: .venv/bin/python tests/perf/bench_metrics_scrape.py [--reports 400] [--scopes 40]
     [--strata 50] [--rounds 20] [--database-url postgresql+psycopg://...]
     (default: a SQLite file in a temp folder)
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient
from sqlalchemy import insert

from calibration.calibrate import CalibrationOptions, calibrate
from calibration.formats.interchange import GradeRow
from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import CalibrationReportRow, new_id
from service.settings import Settings
from service.stores.projects import ensure_project

JUDGES, HUMANS = ("cheap", "strong", "panel"), ("sme-1", "sme-2")


def synthetic_report(strata: int) -> dict:
    """A report by one attribute of `strata` values (its JSON is what a scrape reads)."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(max(1000, strata)):
        truth = int(rng.integers(1, 6))
        attributes = {"city": f"c{i % strata}"}
        for rater, kind in [(h, "human") for h in HUMANS] + [(j, "judge") for j in JUDGES]:
            score = float(np.clip(truth + rng.integers(-1, 2), 1, 5))
            rows.append(GradeRow(item_id=f"i{i}", rater=rater, rater_kind=kind, score=score,
                                 attributes=attributes))  # fmt: skip
    options = CalibrationOptions(
        scale_min=1, scale_max=5, by=["city"], bootstrap=200, max_strata=max(strata, 1)
    )
    return calibrate(rows, options)


def store(url: str, report: dict, reports: int, scopes: int, after: int = 0) -> None:
    """`reports` copies over `scopes` (project, kind, scope) keys, a minute apart, the first
    `after` minutes past the first stored."""
    start = datetime(2026, 1, 1) + timedelta(minutes=after)
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        projects = sorted({f"team-{k % 4}" for k in range(scopes)})
        for project in projects:
            ensure_project(session, project)
        session.flush()
        rows = [
            {
                "id": new_id(),
                "project": f"team-{k % scopes % 4}",
                "kind": ("nightly", "adhoc")[k % scopes % 2],
                "scope": f"rubric-{k % scopes}",
                "report": report,
                "html": "",
                "markdown": "",
                "created_at": start + timedelta(minutes=k),
            }
            for k in range(reports)
        ]
        for chunk in range(0, len(rows), 50):
            session.execute(insert(CalibrationReportRow), rows[chunk : chunk + 50])


def scrape(client: TestClient, rounds: int) -> tuple[list[float], bytes]:
    times, body = [], b""
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.get("/metrics")
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
        body = response.content
    return times, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=400)
    parser.add_argument("--scopes", type=int, default=40)
    parser.add_argument("--strata", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20, help="scrapes, at least 2")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'qadi.db'}"
        upgrade(url)
        report = synthetic_report(args.strata)
        store(url, report, args.reports, args.scopes)
        client = TestClient(create_app(Settings(database_url=url, data_dir=Path(folder))))
        times, body = scrape(client, args.rounds)
        store(url, report, 1, args.scopes, after=args.reports)  # a new report of one scope
        changed, _ = scrape(client, 1)
    series = sum(1 for line in body.decode().splitlines() if line.startswith("qadi_calibration"))
    later = sorted(t * 1000 for t in times[1:])
    print(
        f"{args.reports} reports over {args.scopes} scopes, {args.strata} strata each "
        f"({url.split(':')[0]}): first scrape {times[0] * 1000:.0f} ms, then p50 "
        f"{statistics.median(later):.0f} ms, p95 {later[int(0.95 * (len(later) - 1))]:.0f} ms, "
        f"after a new report {changed[0] * 1000:.0f} ms; body {len(body) / 1e6:.2f} MB, "
        f"{series} calibration series"
    )


if __name__ == "__main__":
    main()
