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
from typing import Any

from sqlalchemy import bindparam, delete, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.db.schema import GradeRequestRow, new_id, utcnow
from service.errors import Conflict

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


def claim_many(
    session: Session,
    project: str,
    wanted: list[tuple[str | None, str]],
    api_key_id: int | None,
    stale_before: datetime,
) -> list[Claim | Replay | Conflict]:
    """Create the request row of each (key, body hash) of one caller in `project`, or answer
    from the earlier request with the same key (keys are scoped by API key, and a key belongs
    to one project); in order, a Conflict in place of a request refused (a key used with
    another body or still in progress). Requests without a key have random ids, nothing to
    collide with, and are inserted in one statement (the group commit of POST /judge claims
    a round at once); a keyed one is claimed on its own."""
    now = utcnow()
    base = {"project": project, "api_key_id": api_key_id, "status": "pending", "attempt": 1,
            "claimed_at": now, "created_at": now}  # fmt: skip
    claimed: list[Claim | Replay | Conflict | None] = [None] * len(wanted)
    fresh = []
    for index, (key, body_hash) in enumerate(wanted):
        row = {**base, "id": new_id(), "body_hash": body_hash}
        if key is None:
            fresh.append(row)
            claimed[index] = Claim(row["id"], 1)
            continue
        try:
            claimed[index] = _claim_key(session, row, key, stale_before)
        except Conflict as exc:
            claimed[index] = exc
    if fresh:
        session.execute(insert(TABLE), fresh)
    return claimed  # type: ignore[return-value]


def _claim_key(session: Session, row: dict[str, Any], key: str, stale_before: datetime):
    """The request of an Idempotency-Key: new, replayed, or taken over from a dead process."""
    row["idempotency_key"] = scoped_key(row["api_key_id"], key)
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    inserted = session.scalar(
        dialect.insert(TABLE).values(**row).on_conflict_do_nothing().returning(TABLE.c.id)
    )
    if inserted is not None:
        return Claim(inserted, 1)
    found = session.execute(
        select(
            GradeRequestRow.id,
            GradeRequestRow.body_hash,
            GradeRequestRow.status,
            GradeRequestRow.attempt,
            GradeRequestRow.claimed_at,
            GradeRequestRow.outcome,
            GradeRequestRow.result,
        ).where(GradeRequestRow.idempotency_key == row["idempotency_key"])
    ).one()
    if found.body_hash != row["body_hash"]:
        raise Conflict("Idempotency-Key was already used with a different body")
    if found.status == "done":
        return Replay(found.id, found.outcome or GRADED, found.result or {})
    return _take_over(session, found.id, found.attempt, stale_before)


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
    """`finish` for several requests, in order, with one executemany UPDATE where it can:
    the group commit of POST /judge finishes every request of a round together. Should any
    of them no longer be its attempt's (rare: a take-over or the reaper came first), the
    batch is undone to its savepoint and each is finished on its own, so the answer says
    which landed. An outage, which also lets go of its key, is finished on its own."""
    batched = [(c, o, r) for c, o, r in finished if o != OUTAGE]
    landed: dict[tuple[str, int], bool] = {}
    if len(batched) > 1:
        now = utcnow()
        statement = (
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
                finished_at=now,
            )
        )
        rows = [
            {"b_id": c.id, "b_attempt": c.attempt, "b_outcome": o, "b_result": r}
            for c, o, r in batched
        ]
        savepoint = session.begin_nested()
        if session.execute(statement, rows).rowcount == len(rows):
            savepoint.commit()
            landed = {(c.id, c.attempt): True for c, _, _ in batched}
        else:
            savepoint.rollback()
    return [
        landed[(c.id, c.attempt)] if (c.id, c.attempt) in landed else finish(session, c, o, r)
        for c, o, r in finished
    ]


def finish(session: Session, claimed: Claim, outcome: str, result: dict[str, Any]) -> bool:
    """Record the answer; False when the request is no longer this attempt's: another
    attempt took it over, or the reaper closed it as abandoned (its finish came after the
    deadline). The first outcome stored stands, so a request counted abandoned stays so
    until a retry with its key takes it over.

    A provider outage is an answer to give once, not to replay: its request lets go of its
    Idempotency-Key, so a retry with the same key grades again once the provider is back
    (the failed calls stay recorded under this request)."""
    values: dict[str, Any] = {
        "status": "done",
        "outcome": outcome,
        "result": result,
        "finished_at": utcnow(),
    }
    if outcome == OUTAGE:
        values["idempotency_key"] = None
    done = session.execute(
        update(TABLE)
        .where(
            TABLE.c.id == claimed.id,
            TABLE.c.attempt == claimed.attempt,
            TABLE.c.status == "pending",
        )
        .values(**values)
    )
    return done.rowcount == 1


def reap(session: Session, stale_before: datetime) -> int:
    """Close requests whose process died: pending since before `stale_before`."""
    closed = session.execute(
        update(TABLE)
        .where(TABLE.c.status == "pending", TABLE.c.claimed_at < stale_before)
        .values(status="abandoned", finished_at=utcnow())
    )
    return closed.rowcount
