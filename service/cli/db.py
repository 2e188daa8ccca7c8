"""`qadi db ...`: migrations, and retention of what judgments keep."""

from __future__ import annotations

import typer

from service.cli.app import app, console, fail
from service.db.engine import (
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    make_sessionmaker,
    reaching,
    require_migrated,
    upgrade,
)
from service.settings import get_settings
from service.stores.judgments import drop_raw_text

db_app = typer.Typer(
    help="Database migrations (Alembic) and retention.", no_args_is_help=True
)
app.add_typer(db_app, name="db")


def database_url(url: str | None) -> str:
    return url or get_settings().database_url


@db_app.command("upgrade")
def db_upgrade(
    revision: str = typer.Argument("head"),
    database_url_: str | None = typer.Option(
        None, "--database-url", help="default $QADI_DATABASE_URL"
    ),
) -> None:
    """Apply migrations up to REVISION (default: head)."""
    url = database_url(database_url_)
    engine = make_engine(url)
    with reaching(engine):
        upgrade(url, revision)
        console.print(f"database at revision {current_revision(engine)}")


@db_app.command("downgrade")
def db_downgrade(
    revision: str = typer.Argument(..., help="target revision, e.g. base or -1"),
    database_url_: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Revert migrations down to REVISION."""
    url = database_url(database_url_)
    engine = make_engine(url)
    with reaching(engine):
        downgrade(url, revision)
        console.print(f"database at revision {current_revision(engine) or 'base'}")


@db_app.command("current")
def db_current(database_url_: str | None = typer.Option(None, "--database-url")) -> None:
    """Print the database's revision and the code's head."""
    url = database_url(database_url_)
    engine = make_engine(url)
    with reaching(engine):
        current = current_revision(engine)
    typer.echo(f"current: {current or 'none'}  head: {head_revision(url)}")


@db_app.command("retain")
def db_retain(
    raw_days: int | None = typer.Option(
        None, "--raw-days", min=1, help="default $QADI_RETAIN_RAW_DAYS"
    ),
    database_url_: str | None = typer.Option(None, "--database-url"),
) -> None:
    """Drop the raw replies and rationales of judgments older than --raw-days days; their
    verdicts, scores, criteria marks, confidences and token probabilities stay, so reports
    over any period are unchanged. Run it daily (cron, a systemd timer) to bound storage."""
    days = raw_days or get_settings().retain_raw_days
    if days is None:
        fail("--raw-days: give the age in days, or set QADI_RETAIN_RAW_DAYS")
    url = database_url(database_url_)
    engine = make_engine(url)
    with reaching(engine):
        require_migrated(engine)
        before, dropped = drop_raw_text(make_sessionmaker(engine), days)
    console.print(
        f"judgments made before {before:%Y-%m-%d %H:%M} UTC: {dropped} lost their raw reply "
        "and rationale; verdicts, scores and confidences kept",
        highlight=False,
    )
