"""The service recalibrates by itself (issue 36), on SQLite and PostgreSQL: a scope runs
after K new SME labels and stores the thresholds the next POST /judge applies, logs each
change of a live guarantee, keeps a live guarantee its labels cannot test, says why a run
failed, runs once across two processes, and an audit on fresh labels that the live guarantee
fails sets off a recalibration; in a report worker process (issue 39) a run stores what the
in-thread run does, an audit's failures are counted by the serving process, and a worker that
dies mid-run is a failed run, recorded. Judges on the TEST DOUBLE with planted confidences (the
scenario of tests/integration/test_trust_at_request_time.py)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from datetime import timedelta

import pytest
import yaml
from sqlalchemy import func, select, update

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import (
    CalibrationReportRow,
    CalibrationScopeRow,
    GuaranteeChangeRow,
    utcnow,
)
from service.metrics import GUARANTEE_AUDITS_FAILED
from service.recalibration.runner import Recalibrator, check_scope
from service.reporting.pool import ReportPool
from service.stores.guarantees import live
from service.stores.scopes import ScopeSpec, add_scope, find_scope
from tests.integration.test_service_api import Service
from tests.integration.test_trust_at_request_time import (
    HARD,
    N_ITEMS,
    TRUST,
    body,
    judges,
    plant,
    truth,
)

SCOPE = ScopeSpec(name="kinayat", rubric="kinayat-explanation", alpha=0.2, delta=0.2,
                  cascades=[["cheap", "strong"]], every_labels=40, bootstrap=0)  # fmt: skip


@pytest.fixture
def judged(migrated_db, llm_server, tmp_path):
    """48 items judged by all three judges (cheap sure and right on 40, unsure on 8), with
    the items asked later (100: everyone sure, 101: nobody sure) planted too."""
    rules = []
    for i in range(N_ITEMS):
        h = truth(i)
        cheap = (h % 5 + 1, 0.5) if i in HARD else (h, 0.97)
        rules += plant(i, cheap, (h, 0.9), (h, 0.95))
    rules += plant(100, (3, 0.97), (3, 0.9), (3, 0.95))
    rules += plant(101, (2, 0.5), (4, 0.4), (2, 0.95))
    llm_server.rules(*rules)
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges(llm_server)))
    service = Service(migrated_db, path, recalibration_interval_seconds=0)
    for i in range(N_ITEMS):
        assert service.post("/judge", json=body(i)).status_code == 200
    sessions = make_sessionmaker(make_engine(migrated_db))
    return service, sessions


@pytest.fixture
def pool():
    """One report worker process, as the service makes."""
    made = ReportPool(1)
    yield made
    made.close()


def visible(html: str) -> str:
    """A page's text as a reader sees it: tags gone, entities read, spaces collapsed."""
    import re
    from html import unescape

    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def grade(service, items, score=truth) -> None:
    grades = [{"item_id": f"item-{i:03d}", "rater": "sme-1", "rater_kind": "human",
               "score": score(i)} for i in items]  # fmt: skip
    assert service.post("/grades", scope="grades", json={"grades": grades}).status_code == 200


def add(sessions, spec: ScopeSpec = SCOPE) -> int:
    with session_scope(sessions) as session:
        return add_scope(session, "default", spec, "test").id


def reports(sessions) -> list[CalibrationReportRow]:
    with session_scope(sessions) as session:
        return list(session.scalars(select(CalibrationReportRow).where(
            CalibrationReportRow.kind == "auto")))  # fmt: skip


def test_a_scope_recalibrates_after_k_labels_and_the_next_request_is_trusted(judged):
    service, sessions = judged
    add(sessions)
    runner = Recalibrator(sessions)
    grade(service, range(30))
    assert runner.run_round() == []  # 30 labels: fewer than the scope's 40
    before = service.post("/judge", json=body(100, trust={**TRUST, "cascade": ["cheap", "strong"]}))
    assert before.json()["trust"]["status"] == "escalated"  # nothing calibrated yet
    grade(service, range(30, N_ITEMS))
    [outcome] = runner.run_round()
    assert outcome.status == "ok" and outcome.report_id, outcome
    assert runner.run_round() == []  # no new label since
    after = service.post("/judge", json=body(100, trust={**TRUST, "cascade": ["cheap", "strong"]}))
    trust = after.json()["trust"]
    assert trust["status"] == "trusted" and trust["guarantee"]["report_id"] == outcome.report_id
    with session_scope(sessions) as session:
        scope = find_scope(session, "default", "kinayat")
        assert (scope.last_status, scope.labels_seen, scope.runs) == ("ok", N_ITEMS, 1)
        logged = session.scalars(select(GuaranteeChangeRow)).all()
    cascade = [c for c in logged if c.evaluator == "cheap>strong" and c.stratum == "overall"]
    assert [(c.old_threshold, c.trigger, c.actor, c.scope) for c in cascade] == [
        (None, "48 new SME labels", "service", "kinayat")
    ]
    assert cascade[0].new_threshold is not None and cascade[0].n_calibration == N_ITEMS
    [stored] = reports(sessions)
    assert stored.report["estimate"]["judges"]  # the corrected means ride along


def test_a_run_whose_labels_cannot_test_a_threshold_keeps_the_live_one(judged):
    service, sessions = judged
    scope_id = add(sessions, SCOPE.model_copy(update={"by": ["dialect"]}))
    grade(service, range(N_ITEMS))
    runner = Recalibrator(sessions)
    [first] = runner.run_round()
    with session_scope(sessions) as session:
        kept = live(session, "default", "kinayat-explanation", 0.2, 0.2, "token")
    threshold = kept[("cheap", "overall")].threshold
    assert threshold is not None
    # the next run sees only 3 labels of the rubric (the rest deleted): too few to test
    with session_scope(sessions) as session:
        from service.db.schema import HumanGradeRow

        session.query(HumanGradeRow).filter(~HumanGradeRow.item_id.in_(
            ["item-000", "item-001", "item-002"])).delete(synchronize_session=False)  # fmt: skip
    second = runner.run(scope_id, "manual", "test")
    assert second.status == "unchanged" and "kept the live guarantee" in second.message
    with session_scope(sessions) as session:
        still = live(session, "default", "kinayat-explanation", 0.2, 0.2, "token")
    assert still[("cheap", "overall")].report_id == first.report_id


def test_a_failed_run_says_why_and_stores_nothing(judged):
    service, sessions = judged
    scope_id = add(sessions, SCOPE.model_copy(update={"name": "ghost", "rubric": "no-such-rubric"}))
    outcome = Recalibrator(sessions).run(scope_id, "manual", "test")
    assert outcome.status == "failed" and "no-such-rubric" in outcome.message
    with session_scope(sessions) as session:
        scope = find_scope(session, "default", "ghost")
        assert (scope.last_status, scope.lease_owner) == ("failed", None)
    assert reports(sessions) == []


def test_a_scope_whose_check_fails_does_not_stop_the_round(judged):
    """A scope whose schedule no clock can hold (stored before ScopeSpec bounded it: a
    timedelta of 1e300 hours overflows) is logged and passed over; the scopes after it in the
    round still run."""
    service, sessions = judged
    broken = add(sessions, SCOPE.model_copy(
        update={"name": "broken", "every_labels": None, "every_hours": 1.0}))  # fmt: skip
    add(sessions)
    with session_scope(sessions) as session:
        session.execute(update(CalibrationScopeRow).where(CalibrationScopeRow.id == broken)
                        .values(every_hours=1e300, last_run_at=utcnow()))  # fmt: skip
    grade(service, range(N_ITEMS))
    [outcome] = Recalibrator(sessions).run_round()
    assert (outcome.scope, outcome.status) == ("kinayat", "ok"), outcome


def test_two_processes_run_a_due_scope_once(judged):
    """Two runners (two replicas' worth) take the same round at once: one lease, one run."""
    service, sessions = judged
    add(sessions)
    grade(service, range(N_ITEMS))
    runners = [Recalibrator(make_sessionmaker(make_engine(service.settings.database_url)))
               for _ in range(2)]  # fmt: skip
    barrier = threading.Barrier(2)
    results: list = []

    def go(runner):
        barrier.wait()
        results.append(runner.run_round())

    threads = [threading.Thread(target=go, args=(r,)) for r in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(o.status for found in results for o in found)
    assert statuses in (["ok"], ["ok", "skipped"]), statuses
    assert len(reports(sessions)) == 1


def test_a_process_that_found_the_scope_due_before_another_ran_it_does_not_run_it_again(judged):
    """The CI race of test_replicas: process B checks the scope (due) while process A runs it;
    A finishes and lets the lease go; B's lease must not be taken on that stale check."""
    service, sessions = judged
    scope_id = add(sessions)
    grade(service, range(N_ITEMS))
    url = service.settings.database_url
    first, second = (Recalibrator(make_sessionmaker(make_engine(url))) for _ in range(2))
    checks = [check_scope(url, scope_id) for _ in range(2)]
    assert [c.reason for c in checks] == ["48 new SME labels"] * 2
    assert first.run(scope_id, checks[0].reason, "service", checks[0].runs).status == "ok"
    late = second.run(scope_id, checks[1].reason, "service", checks[1].runs)
    assert (late.status, late.message) == ("skipped", "another process is running it or has run it")
    with session_scope(sessions) as session:
        assert find_scope(session, "default", "kinayat").runs == 1
    assert len(reports(sessions)) == 1
    assert second.run(scope_id, "manual", "test").status in ("ok", "unchanged")  # a person may


def test_an_audit_on_fresh_labels_that_the_live_guarantee_fails_sets_off_a_recalibration(
    judged, llm_server, pool
):
    """The live cheap guarantee trusts cheap's 0.97 verdicts; then the judge drifts: 40 new
    items it is as sure of and wrong on are judged and labelled. The audit of the fresh labels
    fails, and the same round recalibrates because of it."""
    service, sessions = judged
    scope_id = add(sessions, SCOPE.model_copy(update={"every_labels": 1000, "audit_slice": 20}))
    grade(service, range(N_ITEMS))
    runner = Recalibrator(sessions, pool)  # the check and its audit in a worker process
    runner.run(scope_id, "manual", "test")  # the live guarantee
    counted = GUARANTEE_AUDITS_FAILED.labels("default", "kinayat")._value.get()
    drifted = range(200, 240)
    llm_server.rules(*[rule for i in drifted
                       for rule in plant(i, (truth(i) % 5 + 1, 0.97), (truth(i), 0.9))])  # fmt: skip
    for i in drifted:
        assert service.post("/judge", json=body(i)).status_code == 200
    grade(service, drifted)
    outcomes = runner.run_round()
    assert [o.status for o in outcomes] == ["ok"]
    with session_scope(sessions) as session:
        from service.stores.guarantees import audits

        found = audits(session, "default", "kinayat")
        assert found and any(a.passed is False for a in found)
        changed = session.scalar(select(func.count()).select_from(GuaranteeChangeRow).where(
            GuaranteeChangeRow.trigger.like("audit failed%")))  # fmt: skip
    assert changed >= 1
    failed = sum(a.passed is False for a in found)  # counted here, where /metrics is scraped
    assert GUARANTEE_AUDITS_FAILED.labels("default", "kinayat")._value.get() == counted + failed


def test_a_run_in_a_report_worker_process_stores_what_the_in_thread_run_does(judged, pool):
    service, sessions = judged
    grade(service, range(N_ITEMS))
    here = Recalibrator(sessions).run(add(sessions), "manual", "test")
    there = Recalibrator(sessions, pool).run(
        add(sessions, SCOPE.model_copy(update={"name": "kinayat-2"})), "manual", "test"
    )
    assert multiprocessing.active_children(), "no worker process ran it"
    assert (there.status, there.message, there.summary) == (here.status, here.message,
                                                             here.summary)  # fmt: skip
    by_id = {r.id: r.report for r in reports(sessions)}
    mine, theirs = by_id[here.report_id], by_id[there.report_id]
    assert theirs["inputs"].pop("calibration_scope") == "kinayat-2"
    assert mine["inputs"].pop("calibration_scope") == "kinayat"
    assert theirs == mine and mine["selective"]["rows"]


def test_a_worker_that_dies_mid_run_is_a_failed_run_recorded_and_the_lease_let_go(judged, pool):
    service, sessions = judged
    grade(service, range(N_ITEMS))
    scope_id = add(sessions)
    outcomes = []
    earlier = {p.pid for p in multiprocessing.active_children()}  # other tests' pools, closing
    run = threading.Thread(target=lambda: outcomes.append(
        Recalibrator(sessions, pool).run(scope_id, "manual", "test")))  # fmt: skip
    run.start()
    deadline, started = time.monotonic() + 60, []
    while not started and time.monotonic() < deadline:
        started = [p for p in multiprocessing.active_children() if p.pid not in earlier]
        time.sleep(0.01)
    [worker] = started  # still starting: it cannot have answered yet
    os.kill(worker.pid, signal.SIGKILL)
    run.join(60)
    [outcome] = outcomes
    assert outcome.status == "failed" and "report worker stopped" in outcome.message, outcome
    with session_scope(sessions) as session:
        scope = find_scope(session, "default", "kinayat")
        assert (scope.last_status, scope.lease_owner) == ("failed", None)
        assert "report worker stopped" in scope.last_message
    assert reports(sessions) == []


def test_the_dashboard_shows_the_live_guarantee_its_history_and_the_log(judged):
    from tests.integration.test_workbench_pages import csrf_of, link_for, sign_in

    service, sessions = judged
    lead = sign_in(service, link_for(sessions, "lina", role="lead"))
    page = lead.get("/workbench/dashboard").text
    made = lead.post("/workbench/dashboard/scopes", data={
        "csrf": csrf_of(page), "name": "kinayat", "rubric": "kinayat-explanation",
        "alpha": "0.2", "delta": "0.2", "cascade": "cheap,strong", "every_labels": "40"})  # fmt: skip
    assert made.status_code == 303 and made.headers["location"] == "/workbench/dashboard/kinayat"
    grade(service, range(N_ITEMS))
    cascade = {**TRUST, "cascade": ["cheap", "strong"], "audit_rate": 0}
    for _ in range(2):  # uncalibrated, before the first run
        service.post("/judge", json=body(100, trust=cascade))
    runner = Recalibrator(sessions)
    [outcome] = runner.run_round()
    service.post("/judge", json=body(100, trust=cascade))  # trusted on an easy item
    service.post("/judge", json=body(101, trust=cascade))  # escalated on a hard one
    scope = lead.get("/workbench/dashboard/kinayat")
    assert scope.status_code == 200
    text = visible(scope.text)
    with session_scope(sessions) as session:
        current = live(session, "default", "kinayat-explanation", 0.2, 0.2, "token")
    cascade = current[("cheap>strong", "overall")]
    assert f"cheap>strong overall {cascade.threshold:.3f} 1.00 48 " in text  # live now
    assert f"cheap>strong overall none → {cascade.threshold:.3f}" in text  # the change log
    assert "48 new SME labels; service" in text
    assert scope.text.count("<svg") >= 3  # MAD, signed error, the daily outcomes
    # requests since: 2 uncalibrated before the run, then one trusted and one escalated
    assert "cheap>strong overall 1 0 1 2" in text
    report = lead.get(f"/workbench/reports/{outcome.report_id}")
    assert report.status_code == 200 and "<html" in report.text.lower()
    sme = sign_in(service, link_for(sessions, "ada"))
    assert sme.get("/workbench/dashboard/kinayat").status_code == 403


def test_a_scope_with_a_window_is_the_nightly_report_on_the_services_schedule(judged):
    service, sessions = judged
    grade(service, range(N_ITEMS))
    scope_id = add(sessions, SCOPE.model_copy(update={"name": "nightly", "every_labels": None,
                                                      "every_hours": 24, "window_hours": 24}))
    runner = Recalibrator(sessions)
    [first] = runner.run_round()  # never run: due by its schedule
    assert first.status == "ok" and runner.run_round() == []  # not again within the day
    second = runner.run(scope_id, "manual", "test")
    with session_scope(sessions) as session:
        stored = {r.id: r for r in session.scalars(select(CalibrationReportRow))}
    assert {stored[first.report_id].kind, stored[second.report_id].kind} == {"nightly"}
    later = stored[second.report_id]
    assert later.report["drift"]["previous_report"] == first.report_id
    assert [p["report"] for p in later.report["history"]] == [first.report_id, None]
    assert later.window_end - later.window_start == timedelta(hours=24)
