"""Engines, sessions and the migration state of a database."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from judges.payloads import decode_json
from service.db.locks import migration_lock
from service.errors import StorageUnavailable
from service.json_text import column_text

# Alembic's own layout: `alembic/` at the top of the source tree. An installed wheel does not
# carry it; the image copies it and points QADI_MIGRATIONS_DIR there (see Dockerfile).
SOURCE_MIGRATIONS = Path(__file__).resolve().parents[2] / "alembic"


def migrations_dir() -> Path:
    return Path(os.environ.get("QADI_MIGRATIONS_DIR") or SOURCE_MIGRATIONS)


class NotMigratedError(RuntimeError):
    """The database schema is behind the code; the message names the command that fixes it."""


class UnsupportedDatabase(ValueError):
    """The database URL names a backend qadi does not run on, or is not a URL at all."""


SUPPORTED_BACKENDS = ("sqlite", "postgresql")


def check_backend(url: str) -> None:
    """qadi's schema and locks are written and tested for SQLite and PostgreSQL only; any
    other URL is refused in one line before a driver is looked for (a missing MySQL driver
    would otherwise end in a traceback)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UnsupportedDatabase(
            "the database URL (QADI_DATABASE_URL) is not a SQLAlchemy URL; use "
            "sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST/DB"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        where = parsed.render_as_string(hide_password=True)
        raise UnsupportedDatabase(
            f"unsupported database '{backend}' ({where}): qadi runs on SQLite "
            "(sqlite:///PATH) or PostgreSQL (postgresql+psycopg://USER:PASSWORD@HOST/DB)"
        )


COMMAND_WAIT_SECONDS = 30.0  # commands wait this long for a lock; the service less (settings)
# JSON columns written and read by msgspec where it gives what json.dumps and json.loads give
# (service/json_text.py, judges/payloads.py), in a fraction of their CPU (issue 40)
_JSON = {"json_serializer": column_text, "json_deserializer": decode_json}


def make_engine(url: str, wait_seconds: float = COMMAND_WAIT_SECONDS) -> Engine:
    """An engine with sane defaults for each backend (SQLite: WAL, foreign keys, busy wait).

    `wait_seconds` bounds how long a statement waits for SQLite's write lock, and a checkout
    waits for a pooled connection: past it the database counts as unavailable (a fast 503
    with Retry-After from the service, issue 31.8) instead of a request held for 30 s."""
    check_backend(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"timeout": wait_seconds, "check_same_thread": False},
            pool_timeout=wait_seconds,
            **_JSON,
        )

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:
            # Let SQLAlchemy, not the driver, open transactions (see _begin below).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection) -> None:
            # IMMEDIATE takes the write lock up front, so concurrent writers wait for the
            # busy timeout instead of failing with "database is locked" on lock upgrade.
            connection.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(
        url, pool_size=20, max_overflow=40, pool_pre_ping=True, pool_timeout=wait_seconds, **_JSON
    )


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def is_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached or written (down, read-only, locked too long), as
    opposed to a statement that is wrong for the data."""
    if isinstance(exc, OperationalError | InterfaceError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def recover(factory: sessionmaker[Session]) -> None:
    """Drop pooled connections after an outage: a SQLite connection opened while the file
    was read-only stays read-only, and a PostgreSQL one may be dead."""
    bind = factory.kw.get("bind")
    if bind is not None:
        bind.dispose()


def storage_guard(factory: sessionmaker[Session], work, *args: Any) -> Any:
    """Run `work(session, *args)` in one transaction; an unavailable database becomes
    `StorageUnavailable` (the pool is reset so the next call can succeed)."""
    try:
        with session_scope(factory) as session:
            return work(session, *args)
    except (DBAPIError, PoolTimeout) as exc:
        if not is_unavailable(exc):
            raise
        recover(factory)
        raise StorageUnavailable(
            f"the database is unavailable ({type(getattr(exc, 'orig', exc)).__name__}); "
            "retry shortly"
        ) from exc


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Migrate up under the migration lock: concurrent callers wait, then find the schema
    already at `revision` and do nothing."""
    engine = make_engine(url)  # creates the SQLite directory if needed
    try:
        with migration_lock(engine):
            command.upgrade(alembic_config(url), revision)
    finally:
        engine.dispose()


def downgrade(url: str, revision: str) -> None:
    engine = make_engine(url)
    try:
        with migration_lock(engine):
            command.downgrade(alembic_config(url), revision)
    finally:
        engine.dispose()


def head_revision(url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(url)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


@contextmanager
def reaching(engine: Engine) -> Iterator[None]:
    """A database that cannot be reached becomes `StorageUnavailable`, one line naming it
    (password hidden) and the driver's reason, for the CLI to print without a traceback."""
    try:
        yield
    except (DBAPIError, PoolTimeout) as exc:
        where = engine.url.render_as_string(hide_password=True)
        cause = getattr(exc, "orig", None) or exc
        first_line = next(iter(str(cause).strip().splitlines()), "")
        raise StorageUnavailable(
            f"cannot open database {where} ({type(cause).__name__}: {first_line})"
        ) from exc


def require_migrated(engine: Engine) -> None:
    """Refuse to serve on a database whose schema is not at the code's head revision; a
    database that cannot be reached is `StorageUnavailable`."""
    url = engine.url.render_as_string(hide_password=False)
    with reaching(engine):
        head, current = head_revision(url), current_revision(engine)
    if current != head:
        where = engine.url.render_as_string(hide_password=True)
        raise NotMigratedError(
            f"database {where} is at revision {current or 'none'}, the code needs {head}; "
            "run `qadi db upgrade` first"
        )


def open_database(url: str, wait_seconds: float = COMMAND_WAIT_SECONDS) -> sessionmaker[Session]:
    """Sessions on a database at the code's head revision. Every command and the service
    open the database here, so an unmigrated one is refused the same way everywhere
    (`NotMigratedError`, naming `qadi db upgrade`) before any work is done."""
    engine = make_engine(url, wait_seconds)
    require_migrated(engine)
    return make_sessionmaker(engine)
