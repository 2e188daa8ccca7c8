"""`qadi keys ...`: API keys (stored hashed; the secret is printed once)."""

from __future__ import annotations

import typer
from rich.table import Table

from service.cli.app import app, console, fail, out, split_names
from service.db.engine import open_database, session_scope
from service.settings import get_settings
from service.stores.keys import ScopeError, create_key, list_keys, revoke_key
from service.stores.projects import DEFAULT_PROJECT, ProjectError, ensure_project

keys_app = typer.Typer(help="API keys with scopes judge, grades, admin.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


def _sessions():
    return open_database(get_settings().database_url)


@keys_app.command("create")
def keys_create(
    scopes: str = typer.Option(..., help="comma-separated: judge, grades, admin"),
    name: str = typer.Option("unnamed", help="who or what uses the key"),
    project: str = typer.Option(
        DEFAULT_PROJECT,
        help="the project (team) the key reads and writes; made when it does not exist",
    ),
) -> None:
    """Create a key of a project and print it once; only its hash is stored. An admin-scope
    key also reads every other project's data."""
    try:
        with session_scope(_sessions()) as session:
            made = ensure_project(session, project)
            key = create_key(session, name, split_names(scopes) or [], project)
    except (ScopeError, ProjectError) as exc:
        fail(str(exc))
    if made:
        console.print(f"created project {project}")
    typer.echo(key)
    console.print("store it now: qadi keeps only a hash and cannot show it again")


@keys_app.command("list")
def keys_list() -> None:
    """List keys (prefix, name, project, scopes, state); secrets are never shown."""
    with session_scope(_sessions()) as session:
        rows = list_keys(session)
    table = Table("prefix", "name", "project", "scopes", "created", "revoked")
    for row in rows:
        table.add_row(
            row.prefix,
            row.name,
            row.project,
            row.scopes,
            str(row.created_at),
            str(row.revoked_at or ""),
        )
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(prefix: str = typer.Argument(..., help="the 8-hex prefix after 'qadi_'")) -> None:
    """Revoke a key by its prefix."""
    with session_scope(_sessions()) as session:
        if not revoke_key(session, prefix):
            fail(f"no key with prefix '{prefix}'")
    console.print(f"revoked {prefix}")
