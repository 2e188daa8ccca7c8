"""Calibration reports made at once (issue 31.10), on SQLite and, when CI provides it,
PostgreSQL: `qadi report nightly` and ad hoc `POST /calibration/reports` run together while
POST /judge is under load. Every report is stored whole with its own kind, each over the same
grades, the Prometheus gauges show both kinds, and grading goes on: no 500, nothing lost."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import httpx
import pytest
from sqlalchemy import select

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import CalibrationReportRow
from tests.chaos.harness import Chaos
from tests.chaos.test_availability import assert_clean
from tests.chaos.test_chaos import run
from tests.conftest import ROOT
from tests.perf.load_judge import body_for

# three commands each, or a report beside grading load: minutes on a machine shared by many
SLOW_MACHINE = pytest.mark.timeout(900)

RUBRIC = "iraqi-linguistic-shaku-maku"
ITEMS = 30


def qadi(url: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        cwd=ROOT,
        env={**os.environ, "QADI_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


@SLOW_MACHINE
def test_nightly_and_ad_hoc_reports_at_once_under_grading_load(database, tmp_path):
    chaos = Chaos(tmp_path, database, faults={"latency_min": 0.02, "latency_max": 0.1})
    made = qadi(chaos.url, "keys", "create", "--name", "reports", "--scopes", "judge,grades")
    grades_key = {"Authorization": "Bearer " + next(
        w for w in made.stdout.split() if w.startswith("qadi_")
    )}  # fmt: skip

    async def seed(client: httpx.AsyncClient) -> None:
        for n in range(ITEMS):
            answer = await client.post("/judge", json=body_for(n, 0), headers=chaos.headers)
            assert answer.status_code == 200, answer.text
        humans = [
            {"item_id": f"c{n}-0", "rater": f"sme-{r}", "rater_kind": "human",
             "score": (n * 7 + r * 13) % 101, "dialect": "iraqi"}
            for n in range(ITEMS)
            for r in range(3)
        ]  # fmt: skip
        stored = await client.post("/grades", json={"grades": humans}, headers=grades_key)
        assert stored.status_code == 200, stored.text

    async def ad_hoc(client: httpx.AsyncClient) -> httpx.Response:
        body = {"rubric": RUBRIC, "bootstrap": 2000, "by": ["dialect"]}
        return await client.post("/calibration/reports", json=body, headers=grades_key)

    async def scenario():
        async with httpx.AsyncClient(base_url=chaos.base, timeout=120) as client:
            await seed(client)
            nightly = asyncio.to_thread(
                qadi, chaos.url, "report", "nightly", "--window", "1h", "--rubric", RUBRIC,
                "--out-dir", str(tmp_path / "reports"), "--bootstrap", "2000",
            )  # fmt: skip
            grading = chaos.load(clients=4, seconds=6)
            scenario.nightly, *scenario.ad_hoc, _ = await asyncio.gather(
                nightly, ad_hoc(client), ad_hoc(client), grading
            )
            scenario.metrics = (await client.get("/metrics")).text
        await chaos.settle()
        scenario.figures = chaos.account(strict_calls=True)

    run(chaos, scenario)
    assert scenario.nightly.returncode == 0, scenario.nightly.stdout + scenario.nightly.stderr
    for response in scenario.ad_hoc:
        assert response.status_code == 201, response.text
    engine = make_engine(chaos.url)
    with session_scope(make_sessionmaker(engine)) as session:
        stored = session.scalars(select(CalibrationReportRow)).all()
        kinds = sorted(row.kind for row in stored)
        reports = {row.id: (row.kind, row.report, bool(row.html), bool(row.markdown))
                   for row in stored}  # fmt: skip
    engine.dispose()
    assert kinds == ["adhoc", "adhoc", "nightly"]
    for kind, report, html, markdown in reports.values():
        assert html and markdown, kind  # stored whole
        assert report["n_items"] >= ITEMS, (kind, report["n_items"])
        assert set(report["judges"]) == {"gpt-judge", "claude-judge"}
    ad_hoc_ids = {response.json()["id"] for response in scenario.ad_hoc}
    assert len(ad_hoc_ids) == 2 and ad_hoc_ids <= set(reports)
    nightly_file = json.loads(next((tmp_path / "reports").glob("*.json")).read_text())
    assert nightly_file["drift"]["previous_report"] is None  # an ad hoc report is no nightly
    for kind in ("adhoc", "nightly"):
        labels = f'kind="{kind}",project="default",scope="{RUBRIC}"'
        assert f"qadi_calibration_report_timestamp_seconds{{{labels}}}" in scenario.metrics
    figures = scenario.figures
    # grading went on beside the reports (each of the 4 clients got answers), all graded
    assert figures["statuses"].get(200, 0) == figures["requests"] >= 4
    assert_clean(figures)
