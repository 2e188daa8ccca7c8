"""Idempotent grade requests (service/stores/requests.py) on SQLite and PostgreSQL: one
winner among concurrent take-overs, replays, conflicts, keys scoped by API key, the reaper."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import event, select, update

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import GradeRequestRow, utcnow
from service.errors import Conflict
from service.stores import requests

pytestmark = pytest.mark.db


@pytest.fixture
def sessions(migrated_db):
    engine = make_engine(migrated_db)
    yield make_sessionmaker(engine)
    engine.dispose()


def claim(sessions, key="k1", body="h1", api_key=None, stale=timedelta(seconds=60)):
    with session_scope(sessions) as session:
        [claimed] = requests.claim_many(
            session, [requests.Ask("default", api_key, key, body)], utcnow() - stale
        )
        if isinstance(claimed, requests.Conflict):
            raise claimed
        return claimed


def age(sessions, request_id: str, seconds: float) -> None:
    """Pretend the claim was made `seconds` ago (its process died then)."""
    with session_scope(sessions) as session:
        row = session.get(GradeRequestRow, request_id)
        row.claimed_at = utcnow() - timedelta(seconds=seconds)


def test_exactly_one_of_ten_concurrent_retries_takes_over_a_dead_request(sessions):
    first = claim(sessions)
    age(sessions, first.id, 120)

    def retry(_):
        try:
            return claim(sessions)
        except Conflict as exc:
            return exc

    with ThreadPoolExecutor(max_workers=10) as pool:
        outcomes = list(pool.map(retry, range(10)))
    winners = [o for o in outcomes if isinstance(o, requests.Claim)]
    losers = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(winners) == 1 and len(losers) == 9
    assert winners[0] == requests.Claim(first.id, 2)
    assert all(c.retry_after == 2 for c in losers)
    # the dead attempt can no longer finish: its judgments would duplicate the winner's
    with session_scope(sessions) as session:
        assert requests.finish(session, first, requests.GRADED, {"a": 1}) is False
        assert requests.finish(session, winners[0], requests.GRADED, {"a": 2}) is True
    assert claim(sessions) == requests.Replay(first.id, requests.GRADED, {"a": 2})


def test_a_live_request_is_in_progress_and_another_body_is_a_conflict(sessions):
    claim(sessions)
    with pytest.raises(Conflict, match="in progress"):
        claim(sessions)
    with pytest.raises(Conflict, match="different body"):
        claim(sessions, body="h2")


def test_idempotency_keys_belong_to_their_api_key(sessions):
    mine = claim(sessions, api_key=1)
    with session_scope(sessions) as session:
        requests.finish(session, mine, requests.GRADED, {"tenant": 1})
    theirs = claim(sessions, api_key=2)  # same key string, another tenant: a new request
    assert isinstance(theirs, requests.Claim) and theirs.id != mine.id
    assert claim(sessions, api_key=1) == requests.Replay(mine.id, requests.GRADED, {"tenant": 1})


def test_the_reaper_closes_dead_requests_and_a_retry_reopens_them(sessions):
    dead = claim(sessions, key="dead")
    live = claim(sessions, key="live")
    age(sessions, dead.id, 120)
    with session_scope(sessions) as session:
        assert requests.reap(session, utcnow() - timedelta(seconds=60)) == 1
        states = dict(session.execute(select(GradeRequestRow.id, GradeRequestRow.status)).all())
    assert states == {dead.id: "abandoned", live.id: "pending"}
    assert claim(sessions, key="dead") == requests.Claim(dead.id, 2)


def test_a_late_finish_cannot_turn_an_abandoned_request_into_done(sessions):
    """Issue 30.4: the first persisted outcome stands. A request the reaper closed as
    abandoned (counted in qadi_requests_abandoned_total) stays abandoned when its slow
    process finishes after all; a retry with the same key takes it over and grades it."""
    slow = claim(sessions, key="slow")
    age(sessions, slow.id, 120)
    with session_scope(sessions) as session:
        assert requests.reap(session, utcnow() - timedelta(seconds=60)) == 1
    with session_scope(sessions) as session:
        assert requests.finish(session, slow, requests.GRADED, {"late": True}) is False
        row = session.get(GradeRequestRow, slow.id)
        assert (row.status, row.outcome, row.result) == ("abandoned", None, None)
    retry = claim(sessions, key="slow")
    assert retry == requests.Claim(slow.id, 2)
    with session_scope(sessions) as session:
        assert requests.finish(session, retry, requests.GRADED, {"retry": True}) is True
    assert claim(sessions, key="slow") == requests.Replay(slow.id, requests.GRADED, {"retry": True})


def test_a_released_claim_leaves_the_key_free(sessions):
    """A request refused for capacity after its claim lets the claim go: a new one is
    forgotten, a taken-over one is abandoned again; either way the next retry claims it."""
    fresh = claim(sessions, key="busy")
    with session_scope(sessions) as session:
        requests.release(session, fresh)
        assert session.get(GradeRequestRow, fresh.id) is None
    again = claim(sessions, key="busy")
    age(sessions, again.id, 120)
    taken = claim(sessions, key="busy")
    assert taken == requests.Claim(again.id, 2)
    with session_scope(sessions) as session:
        requests.release(session, taken)
        assert session.get(GradeRequestRow, again.id).status == "abandoned"
    assert claim(sessions, key="busy") == requests.Claim(again.id, 3)


def test_finishing_a_round_together_lands_each_request_as_its_own_finish_would(sessions):
    """finish_many: one batched UPDATE when every request is still its attempt's; when one
    was taken over meanwhile, each is finished on its own and only the live ones land; an
    outage lets go of its key whichever way the rest went."""
    live = [claim(sessions, key=f"live-{i}") for i in range(3)]
    with session_scope(sessions) as session:
        landed = requests.finish_many(
            session, [(c, requests.GRADED, {"n": i}) for i, c in enumerate(live)]
        )
    assert landed == [True, True, True]
    assert [claim(sessions, key=f"live-{i}").result for i in range(3)] == [
        {"n": 0},
        {"n": 1},
        {"n": 2},
    ]

    old, kept, down = (claim(sessions, key=k) for k in ("old", "kept", "down"))
    age(sessions, old.id, 120)
    retry = claim(sessions, key="old")  # takes `old` over: attempt 2
    assert retry == requests.Claim(old.id, 2)
    with session_scope(sessions) as session:
        landed = requests.finish_many(
            session,
            [
                (old, requests.GRADED, {"by": "dead attempt"}),
                (kept, requests.GRADED, {"by": "kept"}),
                (down, requests.OUTAGE, {"by": "outage"}),
            ],
        )
    assert landed == [False, True, True]
    with session_scope(sessions) as session:
        rows = {r.id: r for r in session.scalars(select(GradeRequestRow))}
    assert rows[old.id].status == "pending" and rows[old.id].attempt == 2  # the retry's now
    assert rows[kept.id].status == "done" and rows[kept.id].result == {"by": "kept"}
    assert rows[down.id].status == "done" and rows[down.id].idempotency_key is None


@pytest.mark.parametrize("batch", ["lands", "undone"])
def test_a_round_finishes_its_requests_in_id_order(migrated_db, batch):
    """The round's UPDATEs reach the database in request-id order, whatever order the round
    came in (two rounds sharing a request lock it in one order on PostgreSQL): the batched
    UPDATE's rows, and the requests finished one by one when the batch is undone (one of
    them was taken over) or ended by an outage. Each caller still gets its own answer, in
    the order given."""
    engine = make_engine(migrated_db)
    sessions = make_sessionmaker(engine)
    keys = {claim(sessions, key=f"k{i}"): f"k{i}" for i in range(6)}
    claims = sorted(keys, key=lambda c: c.id)
    if batch == "undone":
        age(sessions, claims[2].id, 120)
        assert claim(sessions, key=keys[claims[2]]).attempt == 2  # taken over
    ids = {c.id for c in claims}
    updated: dict[bool, list[str]] = {True: [], False: []}  # by executemany

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.startswith("UPDATE grade_requests"):
            for row in parameters if executemany else [parameters]:
                values = row.values() if isinstance(row, dict) else row  # psycopg / sqlite3
                updated[executemany].append(next(v for v in values if v in ids))

    event.listen(engine, "before_cursor_execute", record)
    given = claims[::-1]
    outcomes = [requests.OUTAGE if c is claims[4] else requests.GRADED for c in given]
    with session_scope(sessions) as session:
        landed = requests.finish_many(
            session, [(c, o, {"id": c.id}) for c, o in zip(given, outcomes, strict=True)]
        )
    engine.dispose()
    in_order = [c.id for c in claims]
    assert updated[True] == [i for i in in_order if i != claims[4].id]
    if batch == "lands":
        assert landed == [True] * 6
        assert updated[False] == [claims[4].id]
    else:
        assert landed == [c is not claims[2] for c in given]
        assert updated[False] == in_order
    with session_scope(make_sessionmaker(make_engine(migrated_db))) as session:
        rows = {r.id: r.result for r in session.scalars(select(GradeRequestRow))}
    assert all(rows[c.id] == {"id": c.id} for c in claims if c is not claims[2] or batch == "lands")


def test_a_round_is_claimed_in_order_whatever_its_keys_did_before(sessions):
    """One claim_many for a round of several callers: each ask gets its own answer, in the
    order asked (keys are claimed in another order, see the next test)."""
    done = claim(sessions, key="done")
    with session_scope(sessions) as session:
        requests.finish(session, done, requests.GRADED, {"done": 1})
    claim(sessions, key="live")
    asks = [
        requests.Ask("default", None, "new", "h1"),
        requests.Ask("default", None, None, "h1"),
        requests.Ask("default", None, "done", "h1"),
        requests.Ask("default", None, "live", "h1"),
        requests.Ask("default", None, "done", "h2"),
        requests.Ask("default", None, "new", "h1"),  # the same key twice in one round
        requests.Ask("default", 7, "new", "h1"),  # another tenant's key of that name
    ]
    with session_scope(sessions) as session:
        answers = requests.claim_many(session, asks, utcnow() - timedelta(seconds=60))
    new, unkeyed, replay, live, other_body, again, tenant = answers
    assert isinstance(new, requests.Claim) and isinstance(unkeyed, requests.Claim)
    assert replay == requests.Replay(done.id, requests.GRADED, {"done": 1})
    assert isinstance(live, Conflict) and live.message == requests.IN_PROGRESS
    assert isinstance(other_body, Conflict) and "different body" in other_body.message
    assert isinstance(again, Conflict) and again.message == requests.IN_PROGRESS
    assert isinstance(tenant, requests.Claim) and tenant.id not in (new.id, unkeyed.id)


KEYS = [f"round-{n:04d}" for n in range(1200)]  # more than one page of inserts and lookups


@pytest.mark.parametrize("earlier", ["none", "a dead process"])
def test_two_rounds_claiming_keys_in_opposite_orders_do_not_deadlock(sessions, earlier):
    """Issue 42.8: two workers' rounds claim overlapping keys at once, in opposite orders
    (new keys, or the requests of a dead process to take over). Claimed one by one in the
    order given, each round held keys the other waited for, and PostgreSQL broke the
    deadlock by failing one (DeadlockDetected, a 503 for its whole round). Now one round
    waits for the other: each key is claimed once, and in progress for the other round."""
    if earlier == "a dead process":
        with session_scope(sessions) as session:
            asks = [requests.Ask("default", None, key, "h1") for key in KEYS]
            requests.claim_many(session, asks, utcnow())
            session.execute(
                update(GradeRequestRow).values(claimed_at=utcnow() - timedelta(hours=1))
            )
    both = threading.Barrier(2)

    def claim_round(keys: list[str]) -> list:
        with session_scope(sessions) as session:
            both.wait(timeout=30)
            asks = [requests.Ask("default", None, key, "h1") for key in keys]
            return requests.claim_many(session, asks, utcnow() - timedelta(seconds=60))

    with ThreadPoolExecutor(max_workers=2) as pool:
        forward, backward = pool.map(claim_round, [KEYS, KEYS[::-1]])
    attempt = 1 if earlier == "none" else 2
    for key, answers in zip(KEYS, zip(forward, backward[::-1], strict=True), strict=True):
        claims = [a for a in answers if isinstance(a, requests.Claim)]
        refused = [a for a in answers if isinstance(a, Conflict)]
        assert [c.attempt for c in claims] == [attempt], (key, answers)
        assert [c.message for c in refused] == [requests.IN_PROGRESS], (key, answers)
