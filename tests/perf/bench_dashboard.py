"""The lead's dashboard with a year of use (issue 36): 1,000,000 stored requests, 200 stored
reports of one calibration scope, a year of daily trust outcomes; server time of the
dashboard's pages, p50 and p95. Target: p95 < 300 ms.

The requests, reports and counts are written straight into the database (the requests as
POST /judge stores them, the reports as the recalibration stores them: real calibration
reports of 600 items by 4 judges over two strata attributes, with their history points and
thresholds; 10 distinct reports, stored again in turn up to the count). Times are each
request's wall time through the app in this process (TestClient,
no network), so they are the service's own time per page.

Run: .venv/bin/python tests/perf/bench_dashboard.py [--requests 1000000] [--reports 200]
     [--rounds 50] [--database-url postgresql+psycopg://...]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fastapi.testclient import TestClient
from sqlalchemy import insert

from calibration.calibrate import CalibrationOptions
from calibration.selective_report import SelectiveOptions
from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import (
    CalibrationScopeRow,
    GradeRequestRow,
    TrustOutcomeCountRow,
    utcnow,
)
from service.recalibration.runner import dashboard_summary
from service.reporting.calibration import build_report
from service.settings import Settings
from service.stores.calibration import store_report
from service.stores.guarantees import Change
from service.stores.scopes import ScopeSpec, add_scope
from service.stores.smes import add_person, invite
from tests.perf.bench_calibration import synthetic_rows
from tests.perf.page_times import analyze, print_times

SCOPE = "nightly-kinayat"
DISTINCT = 10  # distinct reports computed; the rest are stored copies of them
STATUSES = ("trusted", "audited", "escalated", "uncalibrated")


def store_requests(url: str, count: int, chunk: int = 20_000) -> None:
    """`count` finished grade requests with their answers, a year of them."""
    engine = make_engine(url)
    start = utcnow() - timedelta(days=365)
    result = {"status": "ok", "results": [{"judge": "cheap", "score": 3.0}],
              "trust": {"status": "trusted"}}  # fmt: skip
    with session_scope(make_sessionmaker(engine)) as session:
        for first in range(0, count, chunk):
            session.execute(insert(GradeRequestRow), [
                {"id": f"r{n:012d}", "project": "default", "idempotency_key": None,
                 "body_hash": "sha256:x", "status": "done", "attempt": 1, "outcome": "ok",
                 "result": result, "api_key_id": None,
                 "created_at": start + timedelta(seconds=n * 31_536_000 // count),
                 "finished_at": start + timedelta(seconds=n * 31_536_000 // count + 1)}
                for n in range(first, min(count, first + chunk))
            ])  # fmt: skip
    engine.dispose()


def store_outcomes(url: str) -> None:
    """A year of daily counts: 3 evaluators × 3 strata × 4 statuses a day."""
    today = utcnow().date()
    rows = [
        {"project": "default", "day": today - timedelta(days=d), "rubric_id": "kinayat-explanation",
         "evaluator": evaluator, "stratum": stratum, "status": status, "n": 40 + d % 17}
        for d in range(365) for evaluator in ("cheap", "strong", "cheap>strong")
        for stratum in ("overall", "dialect=gulf", "dialect=egy") for status in STATUSES
    ]  # fmt: skip
    engine = make_engine(url)
    with session_scope(make_sessionmaker(engine)) as session:
        session.execute(insert(TrustOutcomeCountRow), rows)
    engine.dispose()


def store_reports(url: str, count: int) -> None:
    """`count` reports of the scope, as its runs store them (with thresholds, points and
    the change log)."""
    options = CalibrationOptions(
        scale_min=1, scale_max=5, bootstrap=50, by=["dialect", "category"],
        selective=SelectiveOptions(alpha=0.2, delta=0.2),
    )  # fmt: skip
    engine = make_engine(url)
    sessions = make_sessionmaker(engine)
    with session_scope(sessions) as session:
        spec = ScopeSpec(name=SCOPE, rubric="kinayat-explanation", alpha=0.2, delta=0.2,
                         every_labels=50)  # fmt: skip
        scope = add_scope(session, "default", spec, "bench")
    built = []
    for n in range(min(count, DISTINCT)):  # computing one takes seconds: reuse a few
        rendered = build_report(synthetic_rows(600, seed=n), options, {"source": "database"})
        rendered[0]["selective"] = _bound(rendered[0])
        built.append(rendered)
    for n in range(count):
        rendered = built[n % len(built)]
        with session_scope(sessions) as session:
            row = store_report(session, "default", "auto", "kinayat-explanation", rendered,
                               change=Change("bench", "bench", SCOPE))  # fmt: skip
            last = row.id
    summary = dashboard_summary(built[-1][0], built[-2][0] if len(built) > 1 else None)
    with session_scope(sessions) as session:
        stored = session.get(CalibrationScopeRow, scope.id)
        stored.last_report_id, stored.last_status, stored.last_message = last, "ok", "bench"
        stored.last_run_at, stored.runs, stored.summary = utcnow(), count, summary
    engine.dispose()


def _bound(report: dict) -> dict:
    """The synthetic judgments carry no versions: bind the section's rows as a database
    report's would be, so the thresholds are stored as the service stores them."""
    section = report.get("selective") or {}
    for row in section.get("rows", []):
        row["binding"] = {
            "rubric_ref": "kinayat-explanation@3", "rubric_hash": "sha256:x",
            "stages": [{"judge": s, "model": f"m-{s}", "template": "t@1", "template_hash": "h"}
                       for s in row["stages"]],
        }  # fmt: skip
    return section


def sign_in_lead(app, url: str) -> TestClient:
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        secret = invite(session, add_person(session, "default", "lead", role="lead"), 1)
    client = TestClient(app, follow_redirects=False)
    client.post(f"/workbench/invite/{secret}")
    return client


def measure(url: str, rounds: int) -> dict[str, list[float]]:
    app = create_app(Settings(database_url=url, judges_config=None,
                              recalibration_interval_seconds=0))  # fmt: skip
    client = sign_in_lead(app, url)
    client.get(f"/workbench/dashboard/{SCOPE}")  # warm: templates compiled, pool open
    times: dict[str, list[float]] = {"dashboard": [], "scope page": []}
    for _ in range(rounds):
        for name, path in (("dashboard", "/workbench/dashboard"),
                           ("scope page", f"/workbench/dashboard/{SCOPE}")):  # fmt: skip
            started = time.perf_counter()
            page = client.get(path)
            times[name].append((time.perf_counter() - started) * 1000)
            assert page.status_code == 200, page.text[:500]
    assert re.search(r"<svg", page.text), "the scope page draws its history"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--reports", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    url = args.database_url or f"sqlite:///{Path(tempfile.mkdtemp()) / 'bench.db'}"
    upgrade(url)
    for label, build in (("requests", lambda: store_requests(url, args.requests)),
                         ("outcome counts", lambda: store_outcomes(url)),
                         ("reports", lambda: store_reports(url, args.reports))):  # fmt: skip
        started = time.perf_counter()
        build()
        print(f"stored {label} in {time.perf_counter() - started:.0f} s")
    analyze(url)
    times = measure(url, args.rounds)
    print(f"{args.requests:,} requests, {args.reports} reports ({url.split(':')[0]})")
    print_times(times, args.rounds)


if __name__ == "__main__":
    main()
