"""`qadi db ...`: migrations."""

from __future__ import annotations

import typer

from service.cli.app import app, console
from service.db.engine import (
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    reaching,
    upgrade,
)
from service.settings import get_settings

db_app = typer.Typer(help="Database migrations (Alembic).", no_args_is_help=True)
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
