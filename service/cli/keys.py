"""`qadi keys ...`: API keys (stored hashed; the secret is printed once)."""

from __future__ import annotations

import typer
from rich.table import Table
from sqlalchemy import select

from service.auth import ScopeError, create_key, revoke_key
from service.cli.app import app, console, fail, out, split_names
from service.db.engine import open_database, session_scope
from service.db.schema import ApiKeyRow
from service.settings import get_settings

keys_app = typer.Typer(help="API keys with scopes judge, grades, admin.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


def _sessions():
    return open_database(get_settings().database_url)


@keys_app.command("create")
def keys_create(
    scopes: str = typer.Option(..., help="comma-separated: judge, grades, admin"),
    name: str = typer.Option("unnamed", help="who or what uses the key"),
) -> None:
    """Create a key and print it once; only its hash is stored."""
    try:
        with session_scope(_sessions()) as session:
            key = create_key(session, name, split_names(scopes) or [])
    except ScopeError as exc:
        fail(str(exc))
    typer.echo(key)
    console.print("store it now: qadi keeps only a hash and cannot show it again")


@keys_app.command("list")
def keys_list() -> None:
    """List keys (prefix, name, scopes, state); secrets are never shown."""
    with session_scope(_sessions()) as session:
        rows = session.scalars(select(ApiKeyRow).order_by(ApiKeyRow.id)).all()
    table = Table("prefix", "name", "scopes", "created", "revoked")
    for row in rows:
        table.add_row(
            row.prefix, row.name, row.scopes, str(row.created_at), str(row.revoked_at or "")
        )
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(prefix: str = typer.Argument(..., help="the 8-hex prefix after 'qadi_'")) -> None:
    """Revoke a key by its prefix."""
    with session_scope(_sessions()) as session:
        if not revoke_key(session, prefix):
            fail(f"no key with prefix '{prefix}'")
    console.print(f"revoked {prefix}")
