"""GET /metrics (issue 16 item 15): judge tokens and cost per judge, and calibration gauges
of the latest stored reports, so a team can alert on a judge from Prometheus."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import CalibrationReportRow
from service.stores.calibration import store_report
from service.stores.projects import ensure_project
from tests.conftest import judges_config_data
from tests.integration.test_service_api import Service, rubric_body, verdict


@pytest.fixture
def service(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return Service(migrated_db, path)


def samples(service) -> dict[tuple[str, frozenset], float]:
    response = service.client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def test_judge_tokens_and_cost_count_calls_not_cache_hits(service, llm_server):
    before = samples(service)
    llm_server.script({"content": verdict()})
    first = service.post("/judge", json=rubric_body())
    again = service.post("/judge", json=rubric_body())  # the same answer: a cache hit
    assert first.status_code == again.status_code == 200, first.text
    [result] = first.json()["results"]
    assert again.json()["results"][0]["cached"] is True
    after = samples(service)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # the test double reports usage 100 prompt + 20 completion tokens per call; one call made
    # labelled by the project whose request made them (the service's key: `default`)
    mine = {"judge": "gpt-judge", "project": "default"}
    assert delta("qadi_judge_tokens_total", **mine, kind="prompt") == 100
    assert delta("qadi_judge_tokens_total", **mine, kind="completion") == 20
    assert result["cost_usd"] > 0  # LiteLLM's price for gpt-4.1
    assert delta("qadi_judge_cost_usd_total", **mine) == pytest.approx(result["cost_usd"])
    assert delta("qadi_judge_cache_hits_total", **mine) == 1


def report(mad: float, signed: float, verdict_: str) -> dict:
    """A stored report in the contract's shape (DESIGN.md, Calibration report JSON)."""
    return {
        "judges": {
            "gpt-judge": {
                "overall": {"n": 40, "mad": mad, "signed_error": signed, "ci": {"mad": [0, 1]}},
                "strata": {"dialect=iraqi": {"mad": 2 * mad, "signed_error": None}},
            }
        },
        "trust": {
            "rows": [
                {"stratum": "overall", "judge": "gpt-judge", "verdict": verdict_},
                {"stratum": "dialect=iraqi", "judge": "gpt-judge", "verdict": "insufficient"},
            ]
        },
    }


def test_calibration_gauges_show_the_latest_report_per_kind_and_scope(service):
    sessions = make_sessionmaker(make_engine(service.settings.database_url))
    with session_scope(sessions) as session:
        ensure_project(session, "team-b")  # its newer report of the same kind and scope
        theirs = store_report(session, "team-b", "nightly", "kinayat", (report(0.1, 0.0, "replace"), "", ""))
        theirs.created_at = datetime(2026, 1, 3)
        old = store_report(session, "default", "nightly", "kinayat", (report(0.9, 0.4, "replace"), "", ""))
        old.created_at = datetime(2026, 1, 1)
        new = store_report(session, "default", "nightly", "kinayat", (report(0.5, -0.25, "not_replacement"), "", ""))
        new.created_at = datetime(2026, 1, 1) + timedelta(days=1)
        store_report(session, "default", "adhoc", "", (report(1.5, 0.75, "replace"), "", ""))
    found = samples(service)
    nightly = {"project": "default", "kind": "nightly", "scope": "kinayat", "judge": "gpt-judge"}
    assert value(found, "qadi_calibration_mad", **nightly, stratum="overall") == 0.5
    assert value(found, "qadi_calibration_mad", **nightly, stratum="dialect=iraqi") == 1.0
    assert value(found, "qadi_calibration_signed_error", **nightly, stratum="overall") == -0.25
    # a null metric (e.g. a nominal scale) is left out rather than exported as 0
    assert ("qadi_calibration_signed_error", frozenset({**nightly, "stratum": "dialect=iraqi"}.items())) not in found
    verdicts = {
        state: value(found, "qadi_calibration_alt_test_verdict", **nightly, stratum="overall", verdict=state)
        for state in ("replace", "not_replacement", "insufficient")
    }
    assert verdicts == {"replace": 0.0, "not_replacement": 1.0, "insufficient": 0.0}
    adhoc = {"project": "default", "kind": "adhoc", "scope": "all", "judge": "gpt-judge",
             "stratum": "overall"}
    assert value(found, "qadi_calibration_mad", **adhoc) == 1.5
    # 2026-01-02T00:00:00Z as Unix time: 1767225600 (2026-01-01) + 86400
    stamp = value(found, "qadi_calibration_report_timestamp_seconds", project="default",
                  kind="nightly", scope="kinayat")
    assert stamp == 1767225600 + 86400
    theirs = {**nightly, "project": "team-b", "stratum": "overall"}  # a series of its own
    assert value(found, "qadi_calibration_mad", **theirs) == 0.1
    with session_scope(sessions) as session:
        assert session.query(CalibrationReportRow).count() == 4


def wide_report(judges: dict[str, int], strata: dict[str, int], mad: float = 0.5) -> dict:
    """A report of these judges (items overall) and strata (items of each judge in it)."""
    blocks = {
        judge: {
            "overall": {"n": n, "mad": mad, "signed_error": 0.1},
            "strata": {name: {"n": size, "mad": mad, "signed_error": 0.1}
                       for name, size in strata.items()},
        }
        for judge, n in judges.items()
    }  # fmt: skip
    rows = [{"stratum": s, "judge": j, "verdict": "insufficient"}
            for j in judges for s in ["overall", *strata]]  # fmt: skip
    return {"judges": blocks, "trust": {"rows": rows}}


def calibration_samples(service) -> dict[tuple[str, frozenset], float]:
    return {key: v for key, v in samples(service).items() if key[0].startswith("qadi_calibration")}


def test_calibration_gauges_are_a_bounded_set_read_once_per_report(migrated_db, tmp_path):
    """Issue 42.7: one report by an attribute of 4,000 values made 40,615 series rebuilt from
    the stored JSON at every scrape. Of each report the gauges now cover the judges and
    strata with the most items, within QADI_METRICS_REPORT_JUDGES and _STRATA, count the
    rest, and a report's JSON is read when it becomes the latest, not at every scrape."""
    service = Service(migrated_db, None, metrics_report_judges=2, metrics_report_strata=3)
    judges = {"big": 50, "mid": 40, "small": 10}
    strata = {f"city=c{k}": size for k, size in enumerate([9, 3, 7, 1, 8, 2])}
    with session_scope(make_sessionmaker(make_engine(migrated_db))) as session:
        store_report(session, "default", "nightly", "", (wide_report(judges, strata), "", ""))
    reads: list[str] = []
    event.listen(service.app.state.engine, "before_cursor_execute",
                 lambda *args: reads.append(args[2]))  # fmt: skip
    found = calibration_samples(service)
    series = set(found)
    mads = {(dict(labels)["judge"], dict(labels)["stratum"])
            for name, labels in series if name == "qadi_calibration_mad"}  # fmt: skip
    kept = {"overall", "city=c0", "city=c2", "city=c4"}  # 9, 7 and 8 items
    assert mads == {(judge, stratum) for judge in ("big", "mid") for stratum in kept}
    scope = {"project": "default", "kind": "nightly", "scope": "all"}
    assert value(found, "qadi_calibration_gauges_omitted", **scope, part="judges") == 1
    assert value(found, "qadi_calibration_gauges_omitted", **scope, part="strata") == 3
    # 2 judges x 4 strata x (MAD, signed error, 3 verdicts), the time, 2 omitted counts
    assert len(series) == 2 * 4 * 5 + 1 + 2
    report_reads = [s for s in reads if "calibration_reports.report" in s]
    assert len(report_reads) == 1
    assert calibration_samples(service) == found  # the same reports: no report read again
    assert len([s for s in reads if "calibration_reports.report" in s]) == 1
    with session_scope(make_sessionmaker(make_engine(migrated_db))) as session:
        newer = store_report(session, "default", "nightly", "",
                             (wide_report(judges, strata, mad=1.25), "", ""))  # fmt: skip
        newer.created_at += timedelta(seconds=1)
    labels = {**scope, "judge": "big", "stratum": "overall"}
    assert value(calibration_samples(service), "qadi_calibration_mad", **labels) == 1.25
