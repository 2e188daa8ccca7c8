"""`qadi sme ...`: the workbench's people (invite an SME, a senior SME or a lead by a one-time
sign-in link; withdraw one; list them) and its calibration samples. `qadi sme queue`, which
writes files, is in service/cli/estimate.py."""

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
    role: str | None = typer.Option(
        None, help="sme (a new person's default), senior (also settles disagreements) or lead"
    ),
    tag: list[str] | None = typer.Option(
        None,
        "--tag",
        help="expertise, attribute=value (e.g. dialect=egy; a space in the value as _); "
        "repeat for several",
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
    makes a new link, and her earlier unused links stop working; her grades, and her name,
    role and expertise unless given here, stay as they were."""
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
    from service.stores.queue_overview import labels_by_person
    from service.stores.smes import people

    sessions, chosen = open_project(project)
    with session_scope(sessions) as session:
        everyone, done = people(session, chosen), labels_by_person(session, chosen)
    table = Table("rater", "name", "role", "expertise", "labels", "access")
    for person, revoked in everyone:
        access = f"withdrawn {revoked:%Y-%m-%d}" if revoked else "active"
        expertise = ", ".join(person.tags) or "untagged items"
        table.add_row(
            person.handle, person.display_name, person.role, expertise,
            str(done.get(person.id, 0)), access,
        )  # fmt: skip
    out.print(table)


@sme_app.command("sample")
def sample(
    rubric: str = typer.Option(..., help="'id' or 'id@version' of the judgments to sample"),
    n: int = typer.Option(..., "--n", min=1, help="how many items to queue"),
    by: str | None = typer.Option(None, help="the strata attribute, e.g. candidate_model"),
    alpha: float = typer.Option(0.05, min=0.0001, max=0.5, help="1 − confidence"),
    seed: int = typer.Option(0, help="seed of the random draw inside a stratum"),
    floor: int = typer.Option(
        5, "--floor", min=2, help="labels every stratum gets first, before widths are compared"
    ),
    project: str | None = project_option(),
) -> None:
    """Queue a calibration sample in the workbench: N items drawn from the stored judgments
    of the rubric as `qadi sme queue` draws them (every stratum first gets --floor labels,
    then the widest corrected intervals; at random inside a stratum), each with its
    inclusion probability and stratum, for the SMEs to grade (reason "Calibration sample")."""
    from calibration.sme_queue import choose, queue_records
    from service.db.engine import session_scope
    from service.settings import get_settings
    from service.stores.calibration import Selection, rows_from_db
    from service.stores.sme_queue import QueuePolicy, enqueue_sample

    settings = get_settings()
    policy = QueuePolicy(settings.sme_overlap_share, tuple(settings.sme_route_by))
    sessions, chosen = open_project(project)
    with session_scope(sessions) as session:
        rows, inputs = rows_from_db(session, chosen, Selection(rubric=rubric))
        versions = inputs["rubric_versions"]
        if not versions:
            fail(
                f"--rubric: project {chosen} stores no judgment under '{rubric}'; grade answers "
                "with it first (POST /judge, qadi regrade)"
            )
        if len(versions) > 1:
            fail(f"--rubric: the judgments of '{rubric}' are under {', '.join(versions)}; "
                 "name one version (id@version)")  # fmt: skip
        try:
            drawn = queue_records(choose(rows, n, by, alpha, seed, floor))
        except ValueError as exc:
            fail(f"--{exc}" if str(exc).startswith("by:") else str(exc))
        queued = enqueue_sample(session, chosen, versions[0], drawn, policy)
    out.print(
        f"{queued} item(s) of {versions[0]} queued in the workbench as a calibration sample"
        + (f" ({len(drawn) - queued} drawn were queued already)" if queued < len(drawn) else "")
    )
