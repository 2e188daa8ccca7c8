"""The migration lock: one `qadi db upgrade` at a time per database, so replicas that all
migrate on start wait for one migrator instead of racing to create the same tables.

PostgreSQL: a session-level advisory lock (`pg_advisory_lock`), held on a connection of its
own while Alembic migrates on another; the lock dies with that session if the process does.
SQLite: an exclusive `flock` on a file beside the database (processes on one host).
"""

from __future__ import annotations

import fcntl
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, text

# A fixed 32-bit key for qadi's migrations; advisory-lock keys are per database.
MIGRATION_LOCK_KEY = zlib.crc32(b"qadi.migrations")


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Hold the database's migration lock for the duration of the block (blocks to wait)."""
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        with _advisory_lock(engine):
            yield
    elif backend == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        with _file_lock(Path(f"{engine.url.database}.migrate-lock")):
            yield
    else:
        yield


@contextmanager
def _advisory_lock(engine: Engine) -> Iterator[None]:
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        connection.commit()
        try:
            yield
        finally:
            connection.execute(
                text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
            connection.commit()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
