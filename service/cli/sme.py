"""`qadi sme ...`: the workbench's people (invite an SME, a senior SME or a lead by a one-time
sign-in link; withdraw one; list them). `qadi sme queue` is in service/cli/estimate.py."""

from __future__ import annotations

import typer
from rich.table import Table

from service.cli.app import app, console, fail, open_project, out, project_option

sme_app = typer.Typer(help="Work for subject-matter experts.", no_args_is_help=True)
app.add_typer(sme_app, name="sme")


@sme_app.command("invite")
def invite(
    handle: str = typer.Argument(..., help="her rater name in the grades, e.g. amira"),
    name: str | None = typer.Option(None, help="her name as the pages show it"),
    role: str = typer.Option("sme", help="sme, senior (also settles disagreements) or lead"),
    tag: list[str] = typer.Option(
        [], "--tag", help="expertise, attribute=value (e.g. dialect=egy); repeat for several"
    ),
    hours: float | None = typer.Option(
        None, min=0.01, help="how long the link works (default QADI_WORKBENCH_INVITE_HOURS)"
    ),
    base_url: str | None = typer.Option(
        None,
        help="the address the workbench is reached at (default QADI_PUBLIC_URL, else "
        "http://127.0.0.1:$QADI_PORT or :8000)",
    ),
    project: str | None = project_option(),
) -> None:
    """Invite a person to the workbench: prints a sign-in link that works once, until it
    expires. Send it to her; opening it signs her in. Inviting someone again (a lost link)
    makes a new link and keeps her grades; it also updates her name, role and expertise."""
    import os

    from service.db.engine import session_scope
    from service.settings import get_settings
    from service.stores.smes import PeopleError, add_person, invite_url
    from service.stores.smes import invite as make_invite

    settings = get_settings()
    sessions, chosen = open_project(project)
    port = os.environ.get("QADI_PORT", "8000")
    base = base_url or settings.public_url or f"http://127.0.0.1:{port}"
    valid = hours or settings.workbench_invite_hours
    try:
        with session_scope(sessions) as session:
            person = add_person(session, chosen, handle, name, role, tag)  # type: ignore[arg-type]
            secret = make_invite(session, person, valid)
    except PeopleError as exc:
        fail(str(exc))
    console.print(
        f"sign-in link for {person.display_name} ({person.role}, project {chosen}), "
        f"valid {valid:g} h, once:"
    )
    out.print(invite_url(base, secret), soft_wrap=True)


@sme_app.command("revoke")
def revoke(
    handle: str = typer.Argument(..., help="her rater name"),
    project: str | None = project_option(),
) -> None:
    """Withdraw a person's access: her links and sessions stop working at once; her grades
    stay."""
    from service.db.engine import session_scope
    from service.stores.smes import PeopleError, find_person, revoke_person

    sessions, chosen = open_project(project)
    try:
        with session_scope(sessions) as session:
            revoke_person(session, find_person(session, chosen, handle))
    except PeopleError as exc:
        fail(str(exc))
    console.print(f"{handle}: access withdrawn")


@sme_app.command("people")
def people_list(project: str | None = project_option()) -> None:
    """The project's people: role, expertise, labels submitted, access."""
    from service.db.engine import session_scope
    from service.stores.adjudications import labels_by_person
    from service.stores.smes import people

    sessions, chosen = open_project(project)
    with session_scope(sessions) as session:
        everyone, done = people(session, chosen), labels_by_person(session, chosen)
    table = Table("rater", "name", "role", "expertise", "labels", "access")
    for person, revoked in everyone:
        access = f"withdrawn {revoked:%Y-%m-%d}" if revoked else "active"
        table.add_row(
            person.handle, person.display_name, person.role, ", ".join(person.tags) or "any",
            str(done.get(person.id, 0)), access,
        )  # fmt: skip
    out.print(table)
