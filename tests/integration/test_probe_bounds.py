"""What one caller of POST /probes can spend is bounded by the service (issue 42.3): the judge
calls a run plans (QADI_PROBE_MAX_CALLS, whatever `max_calls` says), the key's rate limit
(the request and each new call of its run), the runs a key has going at once over every
process (QADI_PROBE_RUNS_PER_KEY), and a run whose client has gone makes no more calls and
keeps those it made. Against the test double's planted judges, on SQLite and PostgreSQL; the
same under load on two workers with a real client going away: tests/chaos/test_hostile_costs.py.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from judges import AnswerRecord, BatchGrader, Grader, load_config
from judges.probes.run import grade_probes
from rubrics import library_rubric
from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import JudgeFlightRow, JudgmentRow
from service.db.values import utcnow
from service.errors import RateLimited
from service.judging.limits import PROBE_LEASE_SECONDS, PacedCalls, ProbeRuns
from service.regrading import local as regrading
from service.reporting import probes as core
from service.settings import Settings
from service.stores import replicas
from service.stores.judgments import project_batcher
from tests.integration.test_probe_run import planted_config, records
from tests.perf.load_judge import body_for

RUBRIC = "kinayat-explanation"
# 2 judges × (8 originals + 8 with an Arabic instruction appended): 32 calls
SMALL = {"rubric": RUBRIC, "probes": ["injection_ar"], "items": records(8)}


def client_for(migrated_db, llm_server, tmp_path, **settings) -> TestClient:
    config = planted_config(llm_server, tmp_path, ("clean", "obeys"))
    return TestClient(
        create_app(Settings(database_url=migrated_db, judges_config=config, auth="off", **settings))
    )


def stored_calls(url: str) -> int:
    """Judge calls the database holds (retries included), as the chaos accounting counts."""
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        return session.scalar(select(func.coalesce(func.sum(JudgmentRow.attempts), 0)))


def test_a_run_planning_more_calls_than_the_service_allows_is_refused_before_any(
    migrated_db, llm_server, tmp_path
):
    """`max_calls: null` lifted every bound (1,000 items planned 156,000 calls). The
    service's own bound holds whatever the caller asks, for dry runs too; planning stops at
    it, and the statistics' work is bounded with it; a run within it is made whole."""
    client = client_for(migrated_db, llm_server, tmp_path, probe_max_calls=50)
    # 2 judges × 24 items × (original, padded, injected) = 144 planned calls
    hostile = {**SMALL, "probes": ["verbosity", "injection_ar"], "items": records(24)}
    for body in (
        {**hostile, "max_calls": None},
        {**hostile, "max_calls": 10**9},
        {**hostile, "max_calls": None, "dry_run": True},
    ):
        refused = client.post("/probes", json=body)
        assert refused.status_code == 422, refused.text
        [error] = refused.json()["detail"]
        assert error["loc"] == ["body", "max_calls"], error
        assert error["msg"].startswith("this run plans more than 50 judge calls, the most")
        assert "(QADI_PROBE_MAX_CALLS)" in error["msg"]
    # the permutation test's work is bounded with the run: draws × pairs ≤ 20,000 × 50
    drawn = client.post("/probes", json={**SMALL, "permutations": 1_000_000})
    assert drawn.status_code == 422, drawn.text
    [error] = drawn.json()["detail"]
    assert error["loc"] == ["body", "permutations"]
    assert error["msg"].startswith("1000000 over 16 pairs is more work than this service does")
    assert llm_server.calls() == 0 and client.get("/probes").json()["items"] == []
    fits = client.post("/probes", json={**SMALL, "max_calls": None})
    assert fits.status_code == 201, fits.text
    assert fits.json()["calls"]["made"] == 32 == llm_server.calls() == stored_calls(migrated_db)
    assert Settings.model_fields["probe_max_calls"].default == 20_000


def test_a_probe_run_and_its_calls_count_against_the_keys_rate_limit(
    migrated_db, llm_server, tmp_path
):
    """A key answered 429 by POST /judge went on to make 400 judge calls through POST
    /probes. Now the request and each new call of its run are requests of the key's window,
    shared with POST /judge; a key at its limit is refused before anything is planned."""
    client = client_for(migrated_db, llm_server, tmp_path, rate_limit_per_minute=40)
    run = client.post("/probes", json=SMALL)
    assert run.status_code == 201, run.text
    assert run.json()["calls"]["made"] == 32
    # the request and its 32 calls took 33 of the key's 40: seven more requests fit
    for _ in range(7):
        assert client.post("/probes", json={**SMALL, "dry_run": True}).status_code == 200
    for path, body in (("/probes", SMALL), ("/probes", {**SMALL, "dry_run": True}),
                       ("/judge", body_for(0, 0))):  # fmt: skip
        refused = client.post(path, json=body)
        assert refused.status_code == 429, (path, refused.text)
        assert int(refused.headers["Retry-After"]) >= 1
        assert "rate limit of 40 requests/minute" in refused.json()["detail"][0]["msg"]
    assert llm_server.calls() == 32 == stored_calls(migrated_db)


def test_a_key_has_one_probe_run_going_over_every_process(migrated_db, llm_server, tmp_path):
    """The lease another worker or replica holds for the key's run refuses this one (429,
    nothing planned or called); when that run ends, or its process dies and stops renewing
    the lease (a renewal makes it live again), the next run starts; a run lets go of its
    lease when it ends."""
    client = client_for(migrated_db, llm_server, tmp_path)
    sessions = make_sessionmaker(make_engine(migrated_db))
    fresh = utcnow() - timedelta(seconds=PROBE_LEASE_SECONDS)

    def lease(owner: str) -> str | None:  # what another process's run takes
        with session_scope(sessions) as session:
            return replicas.lease_probe_run(session, None, 1, owner, fresh)

    held = lease("another-worker")
    assert held == "probe-run:0:0" and lease("a-third-worker") is None
    refused = client.post("/probes", json=SMALL)
    assert refused.status_code == 429, refused.text
    assert "(QADI_PROBE_RUNS_PER_KEY)" in refused.json()["detail"][0]["msg"]
    assert refused.headers["Retry-After"] == "30" and llm_server.calls() == 0
    with session_scope(sessions) as session:
        replicas.release_calls(session, [held], "another-worker")
    assert client.post("/probes", json=SMALL).status_code == 201
    assert lease("a-dying-worker") == held  # the run let go of it

    def last_renewed(seconds_ago: float) -> None:
        with session_scope(sessions) as session:
            session.execute(
                update(JudgeFlightRow)
                .where(JudgeFlightRow.cache_key == held)
                .values(started_at=utcnow() - timedelta(seconds=seconds_ago))
            )

    last_renewed(PROBE_LEASE_SECONDS + 1)
    with session_scope(sessions) as session:  # its owner renews it: live again
        replicas.renew_probe_run(session, held, "a-dying-worker")
    assert client.post("/probes", json={**SMALL, "dry_run": True}).status_code == 429
    last_renewed(PROBE_LEASE_SECONDS + 1)  # its process died a minute ago
    assert client.post("/probes", json={**SMALL, "dry_run": True}).status_code == 200
    with session_scope(sessions) as session:
        assert session.scalars(select(JudgeFlightRow.cache_key)).all() == []


def test_probe_run_leases_allow_the_configured_runs_per_key(migrated_db):
    """QADI_PROBE_RUNS_PER_KEY = 2: two runs of a key at once, the third refused, another
    key's run unaffected; two ProbeRuns are two processes on one database."""
    sessions = make_sessionmaker(make_engine(migrated_db))

    async def scenario() -> None:
        here, there = ProbeRuns(sessions, 2), ProbeRuns(sessions, 2)
        async with here.hold(7), there.hold(7):
            with pytest.raises(RateLimited, match="has 2 probe run"):
                async with here.hold(7):
                    pass
            async with there.hold(8):
                pass
        async with here.hold(7), here.hold(7):
            pass

    asyncio.run(scenario())


def test_paced_calls_wait_for_the_keys_window_and_stop_when_the_client_goes():
    """A call is admitted once the window has room (the run waits rather than failing);
    stored results take no room; a stop ends a wait at once, and admits nothing after."""

    async def scenario() -> None:
        answers = [0.3, None, None]  # full for 0.3 s, then room

        async def take() -> float | None:
            return answers.pop(0) if answers else 60.0

        paced = PacedCalls(take)
        assert await paced(0) and len(answers) == 3  # nothing to call: nothing counted
        started = time.monotonic()
        assert await paced(2) and answers == []
        assert time.monotonic() - started >= 0.3
        waiting = asyncio.create_task(paced(1))  # the window is full for a minute
        await asyncio.sleep(0.1)
        paced.stop()
        assert await asyncio.wait_for(waiting, 1.0) is False
        assert await paced(0) is False

    asyncio.run(scenario())


def test_a_stopped_run_makes_no_call_after_the_stop_and_stores_every_call_it_made(
    migrated_db, llm_server, tmp_path
):
    """The batch core asks before each request that calls; once told to stop, no call
    starts, the calls made are stored as judgments, and no pair is reported (a part of a
    run is no run: the same request again reuses the stored calls)."""
    config = load_config(planted_config(llm_server, tmp_path, ("clean", "obeys")))
    sessions = make_sessionmaker(make_engine(migrated_db))
    answers = [AnswerRecord(**record) for record in records(8)]
    options = core.ProbeOptions(probes=["injection_ar"])
    plan = core.plan_run(config, answers, library_rubric(RUBRIC), options)
    batcher = project_batcher(
        Grader(config), sessions, "default", regrading.options(4, False, False)
    )
    asked: list[int] = []

    async def admit(calls: int) -> bool:
        asked.append(calls)
        return len(asked) <= 5

    pairs, stats = asyncio.run(grade_probes(plan, batcher, admit=admit))
    assert stats.stopped and pairs == [] and stats.made == 5
    assert llm_server.calls() == 5 == stored_calls(migrated_db)


def test_planning_and_statistics_run_off_the_event_loop(
    migrated_db, llm_server, tmp_path, monkeypatch
):
    """Planning a run's requests and drawing its sign patterns ran on the event loop, which
    answered nothing else meanwhile (/healthz waited 13.7 s and 17 s behind them). Each
    request's plan (rendering and hashing its prompt: before the run, for its cost, and
    again as it grades) and the statistics now run in worker threads; the real functions
    run, watched for the thread they run on. (How long /healthz waits beside a large run,
    two workers under load: tests/chaos/test_hostile_costs.py.)"""
    seen: dict[str, list[bool]] = {"plan": [], "statistics": []}

    def watched(name: str, work):
        def run(*args, **kwargs):
            seen[name].append(on_event_loop())
            return work(*args, **kwargs)

        return run

    monkeypatch.setattr(BatchGrader, "plan", watched("plan", BatchGrader.plan))
    monkeypatch.setattr(core, "probe_effects", watched("statistics", core.probe_effects))
    client = client_for(migrated_db, llm_server, tmp_path)
    assert client.post("/probes", json={**SMALL, "dry_run": True}).status_code == 200
    assert client.post("/probes", json=SMALL).status_code == 201
    assert len(seen["plan"]) == 3 * 32 and len(seen["statistics"]) == 1
    assert not any(seen["plan"]) and not any(seen["statistics"]), seen


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
