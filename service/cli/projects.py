"""`qadi projects ...`: the namespaces teams' data lives in (service/stores/projects.py)."""

from __future__ import annotations

import typer
from rich.table import Table

from service.cli.app import app, console, fail, out
from service.db.engine import open_database, session_scope
from service.settings import get_settings
from service.stores.projects import (
    ProjectError,
    ensure_project,
    pin_trust_stratum,
    projects_with_keys,
)

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


@projects_app.command("pin-stratum")
def projects_pin_stratum(
    name: str = typer.Argument(..., help="the project"),
    attribute: str | None = typer.Argument(
        None, help="metadata attribute, e.g. dialect; leave out with --unpin"
    ),
    unpin: bool = typer.Option(False, "--unpin", help="let requests name their stratum again"),
) -> None:
    """Pin the project's trust strata to an attribute's stored value: a POST /judge with
    `trust` is placed in the stratum of the value stored with the item when it was first
    stored (a regrade, an import), not the value the request's metadata claims, and may not
    ask for another attribute (`trust.by`). Items not stored before still use the claim."""
    if unpin == (attribute is not None):
        fail("give an attribute to pin, or --unpin (not both)")
    if attribute is not None and not attribute.replace("_", "").isalnum():
        fail(f"attribute: '{attribute}' is not a metadata attribute name")
    try:
        with session_scope(open_database(get_settings().database_url)) as session:
            pin_trust_stratum(session, name, attribute)
    except ProjectError as exc:
        fail(str(exc))
    console.print(
        f"project {name}: trust strata by the stored '{attribute}'"
        if attribute
        else f"project {name}: trust strata as each request names them"
    )
