"""Group commit's linger (service/stores/group.py): under load a round about to start small
waits for the jobs others in flight will bring, so they share one transaction; with nobody
else under way the first job runs at once. Real database, real threads."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import text

from service.db.engine import make_engine, make_sessionmaker
from service.judging.grading import GradingService
from service.settings import Settings
from service.stores.group import GroupCommit

LINGER = 0.3  # long against the test's own pauses (a few ms), so rounds are deterministic


def warm_sessions(url: str):
    """Sessions on an engine whose pool already holds a connection: the tests time rounds,
    and a first connection (on PostgreSQL, to a database just made) can take longer than
    the linger on a loaded machine; CI once saw 0.84 s."""
    engine = make_engine(url)
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))
    return make_sessionmaker(engine)


def recorder(rounds: list[list[str]]):
    """A round's work: touch the database, note the round's jobs, answer each job."""

    def work(session, jobs):
        session.execute(text("SELECT 1"))
        rounds.append(list(jobs))
        return [f"done {job}" for job in jobs]

    return work


async def submit_spread(commit: GroupCommit, jobs: list[str]) -> list[tuple[str, float]]:
    """Each job submitted 5 ms after the one before; (result, seconds to it) per job."""
    started = time.perf_counter()

    async def one(delay: float, job: str) -> tuple[str, float]:
        await asyncio.sleep(delay)
        result = await commit.submit(job)
        return result, time.perf_counter() - started

    return await asyncio.gather(*(one(0.005 * i, job) for i, job in enumerate(jobs)))


def test_a_round_waits_for_the_jobs_others_in_flight_bring(migrated_db):
    rounds: list[list[str]] = []
    sizes: list[int] = []
    commit = GroupCommit(
        warm_sessions(migrated_db), recorder(rounds),
        linger=LINGER, in_flight=lambda: 32, observe=sizes.append,
    )  # fmt: skip
    answered = asyncio.run(submit_spread(commit, ["a", "b", "c"]))
    assert rounds == [["a", "b", "c"]]  # one transaction, not three
    assert sizes == [3]  # and the metric is told so
    assert [result for result, _ in answered] == ["done a", "done b", "done c"]


def test_alone_a_job_runs_at_once(migrated_db):
    rounds: list[list[str]] = []
    in_flight = {"jobs": 0}
    commit = GroupCommit(
        warm_sessions(migrated_db), recorder(rounds),
        linger=LINGER, in_flight=lambda: in_flight["jobs"],
    )  # fmt: skip
    in_flight["jobs"] = 1  # itself only
    [(result, seconds)] = asyncio.run(submit_spread(commit, ["alone"]))
    assert result == "done alone" and rounds == [["alone"]]
    assert seconds < LINGER  # no wait
    in_flight["jobs"] = 5  # four others: fewer than the five siblings a wait needs
    asyncio.run(submit_spread(commit, ["x", "y"]))
    assert rounds[1] == ["x"]  # the first of them ran at once


def test_no_linger_means_no_wait(migrated_db):
    rounds: list[list[str]] = []
    commit = GroupCommit(
        warm_sessions(migrated_db), recorder(rounds), in_flight=lambda: 32
    )
    [(_, seconds), _] = asyncio.run(submit_spread(commit, ["p", "q"]))
    assert rounds[0] == ["p"] and seconds < LINGER


def test_the_services_settings_set_both_steps_linger_and_siblings(migrated_db):
    settings = Settings(database_url=migrated_db, commit_linger_ms=25, commit_siblings=2)
    service = GradingService(settings, warm_sessions(migrated_db), None)
    for step in (service._preparing, service._closing):
        assert (step.linger, step.siblings) == (0.025, 2)
