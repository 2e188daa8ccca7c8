"""Service replicas share one set of limits (issue 18 part 2). On PostgreSQL every process
counts a key's requests in one window and identical calls in flight are made once; on
SQLite (one machine, normally one process) the same holds within the process.

The PostgreSQL run starts `qadi serve --workers 2` and a second `qadi serve` (a replica on
another port) over one database, and spreads the requests over both."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import httpx
import pytest
import yaml

from tests.conftest import (
    BACKENDS,
    POSTGRES_URL,
    ROOT,
    free_port,
    judges_config_data,
    reset_postgres,
    wait_for_http,
)

PER_MINUTE = 60


def body(response: str) -> dict:
    return {
        "kind": "rubric",
        "prompt": "شنو معنى شكو؟",
        "response": response,
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": "iraqi-linguistic-shaku-maku",
        "metadata": {"item_id": "replica-item", "dialect": "iraqi"},
    }


def layout(backend: str) -> list[int]:
    """Two uvicorn workers plus a second replica on PostgreSQL; one process on SQLite,
    whose limits are per process by design (README, "Several workers or replicas")."""
    return [2, 1] if backend == "postgresql" else [1]


@pytest.fixture(scope="module", params=BACKENDS)
def replicas(request, llm_server_process, tmp_path_factory):
    """`qadi serve` processes (see `layout`) on one migrated database, judging with the test
    double; yields their base URLs and the database URL."""
    from service.db.engine import upgrade

    folder = tmp_path_factory.mktemp(f"replicas-{request.param}")
    if request.param == "postgresql":
        reset_postgres(POSTGRES_URL)
        db_url = POSTGRES_URL
    else:
        db_url = f"sqlite:///{folder / 'qadi.db'}"
    upgrade(db_url)
    config = folder / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server_process)))
    env = {
        **os.environ,
        "QADI_DATABASE_URL": db_url,
        "QADI_JUDGES_CONFIG": str(config),
        "QADI_RATE_LIMIT_PER_MINUTE": str(PER_MINUTE),
        "QADI_RECALIBRATION_INTERVAL_SECONDS": "0.5",  # every process checks, twice a second
    }
    processes, bases = [], []
    try:
        for n, count in enumerate(layout(request.param)):
            port = free_port()
            command = ["serve", "--port", str(port), "--workers", str(count)]
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "service", *command],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=(folder / f"replica-{n}.log").open("w"),
                )
            )
            bases.append(f"http://127.0.0.1:{port}")
        for base, process in zip(bases, processes, strict=True):
            wait_for_http(f"{base}/healthz", timeout=180, process=process)
        yield bases, db_url
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


def new_key(db_url: str) -> str:
    """A key of its own per test: each has its own rate window."""
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.stores.keys import create_key

    with session_scope(make_sessionmaker(make_engine(db_url))) as session:
        return create_key(session, f"replicas-{uuid.uuid4().hex[:6]}", ["judge"])


async def post_all(bases: list[str], key: str, bodies: list[dict], parallel: int) -> list:
    """POST each body to /judge, round-robin over the replicas, `parallel` at a time."""
    gate = asyncio.Semaphore(parallel)
    async with httpx.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {key}"}) as c:

        async def post(n: int, payload: dict) -> httpx.Response:
            async with gate:
                return await c.post(f"{bases[n % len(bases)]}/judge", json=payload)

        return await asyncio.gather(*(post(n, b) for n, b in enumerate(bodies)))


def test_a_keys_rate_limit_holds_across_every_process(replicas, llm_server):
    bases, db_url = replicas
    bodies = [body(f"شكو يعني شنو اكو {uuid.uuid4().hex}") for _ in range(150)]
    replies = asyncio.run(post_all(bases, new_key(db_url), bodies, parallel=12))
    statuses = [r.status_code for r in replies]
    # 150 requests well inside one minute: the key's 60 are accepted wherever they land
    assert abs(statuses.count(200) - PER_MINUTE) <= 1, statuses
    assert statuses.count(429) == len(bodies) - statuses.count(200)
    refused = next(r for r in replies if r.status_code == 429)
    assert int(refused.headers["retry-after"]) in range(1, 61)
    assert llm_server.calls() == statuses.count(200)


def test_identical_requests_in_flight_together_make_one_backend_call(replicas, llm_server):
    bases, db_url = replicas
    # a 1 s backend keeps the first call in flight while the other 19 arrive
    llm_server.faults(latency_min=1.0, latency_max=1.0)
    same = body(f"شكو يعني شنو اكو، وماكو يعني ماكو شي ({uuid.uuid4().hex[:8]})")
    replies = asyncio.run(post_all(bases, new_key(db_url), [same] * 20, parallel=20))
    assert [r.status_code for r in replies] == [200] * 20
    assert llm_server.calls() == 1
    scores = {r.json()["aggregate"]["mean"] for r in replies}
    assert len(scores) == 1


def test_a_due_scope_is_recalibrated_once_whatever_the_number_of_processes(replicas):
    """Issue 36: every process of every replica checks the calibration scopes twice a
    second; a scope that falls due is run by one of them, once."""
    import time

    from sqlalchemy import select

    from calibration.formats.interchange import GradeRow
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import CalibrationReportRow
    from service.stores.grades import upsert_grades
    from service.stores.scopes import ScopeSpec, add_scope, find_scope

    bases, db_url = replicas
    tag = uuid.uuid4().hex[:8]
    bodies = [{**body(f"شكو يعني شنو اكو {tag} {i}"), "metadata": {"item_id": f"{tag}-{i}"}}
              for i in range(20)]  # fmt: skip
    replies = asyncio.run(post_all(bases, new_key(db_url), bodies, parallel=4))
    assert [r.status_code for r in replies] == [200] * 20
    sessions = make_sessionmaker(make_engine(db_url))
    with session_scope(sessions) as session:
        grades = [GradeRow(item_id=f"{tag}-{i}", rater="sme", rater_kind="human", score=80.0)
                  for i in range(20)]  # fmt: skip
        upsert_grades(session, "default", grades)
        spec = ScopeSpec(name=f"scope-{tag}", rubric="iraqi-linguistic-shaku-maku", alpha=0.2,
                         delta=0.2, every_labels=20, bootstrap=0)  # fmt: skip
        add_scope(session, "default", spec, "test")

    def auto_reports() -> int:
        with session_scope(sessions) as session:
            return len(session.scalars(select(CalibrationReportRow.id).where(
                CalibrationReportRow.kind == "auto")).all())  # fmt: skip

    deadline = time.monotonic() + 120
    while auto_reports() == 0:
        assert time.monotonic() < deadline, "no process recalibrated the scope"
        time.sleep(0.5)
    time.sleep(5)  # ten more rounds of every process: none may run it again
    with session_scope(sessions) as session:
        scope = find_scope(session, "default", spec.name)
        assert scope.runs == 1 and scope.last_status != "failed", scope.last_message
    assert auto_reports() == 1


def a_round_of_one_keys_requests_is_counted_in_order_against_its_window():
    """take_rate counts a round's requests of one key together: the window's room is given
    in order, the rest wait until the oldest request leaves it; a later round sees them."""
    from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
    from service.stores.replicas import lock_rate_windows, take_rate

    reset_postgres(POSTGRES_URL)
    upgrade(POSTGRES_URL)
    sessions = make_sessionmaker(make_engine(POSTGRES_URL))
    with session_scope(sessions) as session:
        lock_rate_windows(session, [7])
        first = take_rate(session, 7, 3, requests=5)
    assert first[:3] == [None, None, None] and all(w in range(59, 61) for w in first[3:])
    with session_scope(sessions) as session:
        lock_rate_windows(session, [7, 8])
        again, other = take_rate(session, 7, 3, requests=2), take_rate(session, 8, 3, requests=1)
    assert all(w in range(58, 61) for w in again) and len(again) == 2
    assert other == [None]  # another key's window is its own


if POSTGRES_URL:  # the shared rate window is PostgreSQL's (CI runs one; never skipped)
    test_a_round_of_one_keys_requests_is_counted_in_order_against_its_window = (
        a_round_of_one_keys_requests_is_counted_in_order_against_its_window
    )

