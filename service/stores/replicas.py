"""What service replicas on one PostgreSQL database share: per-key rate windows and leases
on judge calls in flight. PostgreSQL only (advisory locks, INSERT ... ON CONFLICT with a
condition); on SQLite the service keeps its per-process limits (`service.judging.limits`).
The leases of probe runs (a key's runs going at once) are shared on either database: the
processes of one SQLite file share them too."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from judges import JudgeResult
from service.db.schema import JudgeFlightRow, RateEventRow, utcnow
from service.stores.judgments import find_done_in

RATE_LOCKS = 0x71616469  # advisory lock space of the rate windows ("qadi")
WINDOW = timedelta(seconds=60)


def lock_rate_windows(session: Session, api_key_ids: Iterable[int | None]) -> None:
    """Hold the windows of these keys until the transaction ends, taken in one order so two
    replicas locking several keys cannot deadlock."""
    for key in sorted({k or 0 for k in api_key_ids}):
        session.execute(
            text("SELECT pg_advisory_xact_lock(:space, :key)"), {"space": RATE_LOCKS, "key": key}
        )


def take_rate(
    session: Session, api_key_id: int | None, per_minute: int, requests: int
) -> list[int | None]:
    """Count `requests` of one key against its last minute, in order: for each, None when
    accepted, else the seconds until the oldest request leaves the window (a round of the
    group commit takes its key's requests at once: four statements, not four each). The
    key's window must be locked (`lock_rate_windows`); the database's clock is the one clock
    all replicas share. `per_minute` > 0 (a limit of 0, none, never gets here:
    `SharedLimits.take`)."""
    key = api_key_id or 0
    now: datetime = session.scalar(text("SELECT timezone('utc', clock_timestamp())"))
    where = RateEventRow.api_key_id == key
    session.execute(delete(RateEventRow).where(where, RateEventRow.at <= now - WINDOW))
    count, first = session.execute(
        select(func.count(), func.min(RateEventRow.at)).where(where)
    ).one()
    accepted = max(0, min(requests, per_minute - count))
    if accepted:
        session.execute(insert(RateEventRow), [{"api_key_id": key, "at": now}] * accepted)
    wait = max(1, math.ceil(((first or now) + WINDOW - now).total_seconds()))
    return [None] * accepted + [wait] * (requests - accepted)


def lease_calls(
    session: Session, keys: Collection[str], owner: str, stale_before: datetime
) -> set[str]:
    """Lease the judge calls about to be made; the keys another live process holds (whose
    judgments to wait for) are returned. A lease of this process is renewed, one older than
    `stale_before` (its process died) is taken over."""
    if not keys:
        return set()
    now = utcnow()
    statement = pg_insert(JudgeFlightRow).values(
        [{"cache_key": k, "owner": owner, "started_at": now} for k in sorted(keys)]
    )
    statement = statement.on_conflict_do_update(
        index_elements=[JudgeFlightRow.cache_key],
        set_={"owner": statement.excluded.owner, "started_at": statement.excluded.started_at},
        where=(JudgeFlightRow.owner == owner) | (JudgeFlightRow.started_at < stale_before),
    ).returning(JudgeFlightRow.cache_key)
    held = set(session.scalars(statement))
    return set(keys) - held


def release_calls(session: Session, keys: Collection[str], owner: str) -> None:
    """The calls were made and their judgments written in this transaction: end the leases."""
    if keys:
        session.execute(
            delete(JudgeFlightRow).where(
                JudgeFlightRow.cache_key.in_(sorted(keys)), JudgeFlightRow.owner == owner
            )
        )


def landed(
    session: Session, keys: Collection[str], stale_before: datetime
) -> tuple[dict[str, JudgeResult], set[str]]:
    """Of calls leased elsewhere: the `ok` judgments written so far, and the keys still in
    flight. A key in neither ended without a verdict (or its process died): call it."""
    done = find_done_in(session, keys, ("ok",))
    flying = set(
        session.scalars(
            select(JudgeFlightRow.cache_key).where(
                JudgeFlightRow.cache_key.in_(sorted(keys)),
                JudgeFlightRow.started_at >= stale_before,
            )
        )
    )
    return done, flying - done.keys()


def lease_probe_run(
    session: Session, api_key_id: int | None, slots: int, owner: str, stale_before: datetime
) -> str | None:
    """One of the key's `slots` probe-run leases for `owner` (a run): its lease key, or None
    while a live run holds each. A lease not renewed since `stale_before` belonged to a
    process that died, and is taken over. Kept in `judge_flights` beside the call leases,
    under keys no cache key can take (`probe-run:KEY:SLOT`)."""
    upsert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    now = utcnow()
    for slot in range(slots):
        key = f"probe-run:{api_key_id or 0}:{slot}"
        statement = upsert(JudgeFlightRow).values(cache_key=key, owner=owner, started_at=now)
        statement = statement.on_conflict_do_update(
            index_elements=[JudgeFlightRow.cache_key],
            set_={"owner": owner, "started_at": now},
            where=JudgeFlightRow.started_at < stale_before,
        ).returning(JudgeFlightRow.cache_key)
        if session.scalar(statement) is not None:
            return key
    return None


def renew_probe_run(session: Session, key: str, owner: str) -> None:
    """The run is alive: its lease starts again (it lapses only when nobody renews it)."""
    session.execute(
        update(JudgeFlightRow)
        .where(JudgeFlightRow.cache_key == key, JudgeFlightRow.owner == owner)
        .values(started_at=utcnow())
    )
