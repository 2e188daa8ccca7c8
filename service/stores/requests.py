"""Idempotent grade requests: claim a key, take over a dead claim, finish, reap.

Every accepted POST /judge (or batch item) is a `grade_requests` row that ends `done` with
its outcome and response, or `abandoned` when its process died and nobody retried. A retry
with the same Idempotency-Key (scoped by API key) replays the first outcome; a retry of a
request whose process died takes it over with one conditional UPDATE on (id, attempt), so
exactly one of several concurrent retries wins, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Insert, bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.db.schema import GradeRequestRow, new_id, utcnow
from service.db.values import refuse_non_finite
from service.errors import Conflict
from service.stores.chunks import chunked, listed

GRADED, NO_VERDICT, OUTAGE, REJECTED = "graded", "no_verdict", "outage", "rejected"
IN_PROGRESS = "a request with this Idempotency-Key is in progress"
TAKEN_OVER = (
    "this request was closed before its grade was stored (taken over by a retry with the same "
    "Idempotency-Key, or closed as abandoned past its deadline); retry it with the same key"
)
TABLE = GradeRequestRow.__table__


@dataclass(frozen=True)
class Claim:
    """This process may grade request `id`; its finish lands only for this `attempt`."""

    id: str
    attempt: int


@dataclass(frozen=True)
class Replay:
    """The request was answered before: the same outcome again."""

    id: str
    outcome: str
    result: dict[str, Any]


def scoped_key(api_key_id: int | None, key: str) -> str:
    """Idempotency keys belong to the API key that sent them: another tenant's identical
    key is another request."""
    return f"{api_key_id if api_key_id is not None else '-'}:{key}"


@dataclass(frozen=True)
class Ask:
    """A request to claim: its caller's project and API key, its Idempotency-Key (None: the
    request has none), and the hash of its body."""

    project: str
    api_key_id: int | None
    key: str | None
    body_hash: str


def claim_many(
    session: Session, asks: list[Ask], stale_before: datetime
) -> list[Claim | Replay | Conflict]:
    """Create the request row of each ask, or answer from the earlier request with the same
    key (keys are scoped by API key, and a key belongs to one project); in order, a Conflict
    in place of a request refused (a key used with another body or still in progress). The
    group commit of POST /judge claims a whole round (many callers) at once.

    Keyed rows are inserted in one statement in the order of their scoped keys, and the
    requests of a dead process are taken over in that order too. An insert whose key another
    transaction has just inserted (or is updating) waits for it, so on PostgreSQL two rounds
    claiming overlapping keys in different orders each held a key the other waited for: a
    deadlock. Taken in one order, the first key they share decides which waits for the other,
    and the waiter then finds the key claimed (in progress) or answered (a replay)."""
    now = utcnow()
    rows = [
        {"id": new_id(), "project": a.project, "api_key_id": a.api_key_id,
         "idempotency_key": None if a.key is None else scoped_key(a.api_key_id, a.key),
         "body_hash": a.body_hash, "status": "pending", "attempt": 1, "claimed_at": now,
         "created_at": now}
        for a in asks
    ]  # fmt: skip
    keyed = sorted((r for r in rows if r["idempotency_key"]), key=lambda r: r["idempotency_key"])
    fresh = [r for r in rows if not r["idempotency_key"]]  # random ids: nothing to wait for
    if fresh:
        session.execute(insert(TABLE), fresh)
    inserted = _insert_keyed(session, keyed)
    claimed: dict[str, Claim | Replay | Conflict] = {r["id"]: Claim(r["id"], 1) for r in fresh}
    claimed.update({i: Claim(i, 1) for i in inserted})
    taken = [r for r in keyed if r["id"] not in inserted]
    for row, earlier in zip(taken, _earlier(session, taken), strict=True):
        try:
            claimed[row["id"]] = _answer_from(session, row, earlier, stale_before)
        except Conflict as exc:
            claimed[row["id"]] = exc
    return [claimed[r["id"]] for r in rows]


def _insert_keyed(session: Session, rows: list[dict[str, Any]]) -> set[str]:
    """INSERT ... ON CONFLICT DO NOTHING of `rows`, in their order; the ids inserted (a row
    whose key is already stored, or repeated in `rows`, is not)."""
    if not rows:
        return set()
    return set(session.scalars(_claiming(session.get_bind().dialect.name), rows))


@cache
def _claiming(dialect_name: str) -> Insert:
    """`_insert_keyed`'s statement on a backend, built once (service/stores/chunks.py)."""
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    return dialect.insert(TABLE).on_conflict_do_nothing().returning(TABLE.c.id)


def _earlier(session: Session, rows: list[dict[str, Any]]) -> list[Any | None]:
    """The stored request of each row's key, None when there is none now (an outage's
    request let go of its key since the insert)."""
    found = {}
    for keys in chunked(sorted({r["idempotency_key"] for r in rows})):
        found.update({r.idempotency_key: r for r in session.execute(_BY_KEY, {"keys": keys})})
    return [found.get(r["idempotency_key"]) for r in rows]


# `_earlier`'s query, built once (service/stores/chunks.py)
_BY_KEY = select(
    GradeRequestRow.id,
    GradeRequestRow.idempotency_key,
    GradeRequestRow.body_hash,
    GradeRequestRow.status,
    GradeRequestRow.attempt,
    GradeRequestRow.outcome,
    GradeRequestRow.result,
).where(GradeRequestRow.idempotency_key.in_(listed("keys")))


def _answer_from(session: Session, row: dict[str, Any], earlier: Any, stale_before: datetime):
    """The answer to a key already claimed: replayed, taken over from a dead process, or a
    Conflict (another body, or still in progress)."""
    if earlier is None:
        raise Conflict(IN_PROGRESS, retry_after=2)
    if earlier.body_hash != row["body_hash"]:
        raise Conflict("Idempotency-Key was already used with a different body")
    if earlier.status == "done":
        return Replay(earlier.id, earlier.outcome or GRADED, earlier.result or {})
    return _take_over(session, earlier.id, earlier.attempt, stale_before)


def _take_over(session: Session, request_id: str, attempt: int, stale_before: datetime) -> Claim:
    """Claim a request whose process died (stale or abandoned); one retry wins."""
    taken = session.execute(
        update(TABLE)
        .where(
            TABLE.c.id == request_id,
            TABLE.c.attempt == attempt,
            or_(
                TABLE.c.status == "abandoned",
                (TABLE.c.status == "pending") & (TABLE.c.claimed_at < stale_before),
            ),
        )
        .values(status="pending", attempt=attempt + 1, claimed_at=utcnow(), finished_at=None)
    )
    if taken.rowcount != 1:
        raise Conflict(IN_PROGRESS, retry_after=2)
    return Claim(request_id, attempt + 1)


def release(session: Session, claimed: Claim) -> None:
    """Let go of a claim made in this transaction before any judge was called (the service
    is at capacity): a new request is forgotten, a taken-over one is closed as abandoned
    again, so a retry with the same key claims it afresh."""
    if claimed.attempt == 1:
        session.execute(delete(TABLE).where(TABLE.c.id == claimed.id))
        return
    session.execute(
        update(TABLE)
        .where(TABLE.c.id == claimed.id, TABLE.c.attempt == claimed.attempt)
        .values(status="abandoned", finished_at=utcnow())
    )


def finish_many(session: Session, finished: list[tuple[Claim, str, dict[str, Any]]]) -> list[bool]:
    """`finish` for several requests (answered in the order given, written in id order),
    with one executemany UPDATE where it can: the group commit of POST /judge finishes
    every request of a round together. Should any of them no longer be its attempt's
    (rare: a take-over or the reaper came first), the batch is undone to its savepoint and
    each is finished on its own, so the answer says which landed. An outage, which also
    lets go of its key, is finished on its own."""
    # in id order, as answers are inserted in hash order: two rounds that share a request
    # (a take-over) lock its row in the same order and cannot deadlock on PostgreSQL
    order = sorted(range(len(finished)), key=lambda i: finished[i][0].id)
    batched = [finished[i] for i in order if finished[i][1] != OUTAGE]
    landed: set[tuple[str, int]] = set()
    if len(batched) > 1:
        for _, _, result in batched:
            refuse_non_finite("response", result)
        now = utcnow()
        rows = [_finish_values(c, o, r, now) for c, o, r in batched]
        savepoint = session.begin_nested()
        if session.execute(_FINISH, rows).rowcount == len(rows):
            savepoint.commit()
            landed = {(c.id, c.attempt) for c, _, _ in batched}
        else:
            savepoint.rollback()
    answers: dict[int, bool] = {}
    for i in order:  # the requests finished one by one (an outage, a batch undone) too
        c, o, r = finished[i]
        answers[i] = (c.id, c.attempt) in landed or finish(session, c, o, r)
    return [answers[i] for i in range(len(finished))]


def finish(session: Session, claimed: Claim, outcome: str, result: dict[str, Any]) -> bool:
    """Record the answer; False when the request is no longer this attempt's: another
    attempt took it over, or the reaper closed it as abandoned (its finish came after the
    deadline). The first outcome stored stands, so a request counted abandoned stays so
    until a retry with its key takes it over.

    A provider outage is an answer to give once, not to replay: its request lets go of its
    Idempotency-Key, so a retry with the same key grades again once the provider is back
    (the failed calls stay recorded under this request).

    A response holding NaN or an infinity is refused (NonFiniteValue): it could never be
    replayed."""
    refuse_non_finite("response", result)
    statement = _FINISH_LETTING_GO if outcome == OUTAGE else _FINISH
    done = session.execute(statement, _finish_values(claimed, outcome, result, utcnow()))
    return done.rowcount == 1


def _finish_values(
    claimed: Claim, outcome: str, result: dict[str, Any], now: datetime
) -> dict[str, Any]:
    """The bound values of `_FINISH` for one request."""
    return {"b_id": claimed.id, "b_attempt": claimed.attempt, "b_outcome": outcome,
            "b_result": result, "b_finished": now}  # fmt: skip


# the answer of a request still pending at its attempt (`finish`, `finish_many`), built once
# (service/stores/chunks.py); an outage's lets go of its key too
_FINISH = (
    update(TABLE)
    .where(
        TABLE.c.id == bindparam("b_id"),
        TABLE.c.attempt == bindparam("b_attempt"),
        TABLE.c.status == "pending",
    )
    .values(
        status="done",
        outcome=bindparam("b_outcome"),
        result=bindparam("b_result"),
        finished_at=bindparam("b_finished"),
    )
)
_FINISH_LETTING_GO = _FINISH.values(idempotency_key=None)


def reap(session: Session, stale_before: datetime) -> int:
    """Close requests whose process died: pending since before `stale_before`."""
    closed = session.execute(
        update(TABLE)
        .where(TABLE.c.status == "pending", TABLE.c.claimed_at < stale_before)
        .values(status="abandoned", finished_at=utcnow())
    )
    return closed.rowcount
