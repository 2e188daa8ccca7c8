"""`qadi projects ...`: the namespaces teams' data lives in (service/stores/projects.py)."""

from __future__ import annotations

import typer
from rich.table import Table

from service.cli.app import app, console, fail, out
from service.db.engine import open_database, session_scope
from service.settings import get_settings
from service.stores.projects import ProjectError, ensure_project, projects_with_keys

projects_app = typer.Typer(
    help="Projects: one per team; a key reads and writes its own project's data.",
    no_args_is_help=True,
)
app.add_typer(projects_app, name="projects")


@projects_app.command("create")
def projects_create(
    name: str = typer.Argument(..., help="lowercase letters, digits, . _ -"),
) -> None:
    """Create a project; qadi keys create --project NAME also creates a missing one."""
    try:
        with session_scope(open_database(get_settings().database_url)) as session:
            made = ensure_project(session, name)
    except ProjectError as exc:
        fail(str(exc))
    console.print(f"created project {name}" if made else f"project {name} exists already")


@projects_app.command("list")
def projects_list() -> None:
    """List projects with their number of active keys."""
    with session_scope(open_database(get_settings().database_url)) as session:
        rows = projects_with_keys(session)
    table = Table("project", "created", "active keys")
    for name, created, keys in rows:
        table.add_row(name, str(created), str(keys))
    out.print(table)
