"""`qadi projects ...`: the namespaces teams' data lives in (service/projects.py)."""

from __future__ import annotations

import typer
from rich.table import Table
from sqlalchemy import func, select

from service.cli.app import app, console, fail, out
from service.db.engine import open_database, session_scope
from service.db.schema import ApiKeyRow, ProjectRow
from service.projects import ProjectError, ensure_project
from service.settings import get_settings

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
        active = (
            select(ApiKeyRow.project, func.count().label("active_keys"))
            .where(ApiKeyRow.revoked_at.is_(None))
            .group_by(ApiKeyRow.project)
            .subquery()
        )
        rows = session.execute(
            select(ProjectRow.name, ProjectRow.created_at, active.c.active_keys)
            .outerjoin(active, active.c.project == ProjectRow.name)
            .order_by(ProjectRow.name)
        ).all()
    table = Table("project", "created", "active keys")
    for name, created, keys in rows:
        table.add_row(name, str(created), str(keys or 0))
    out.print(table)
