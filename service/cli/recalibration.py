"""`qadi recalibration ...`: the calibration scopes the service recalibrates by itself
(service/recalibration/): add one, list them with their last run, run one now, remove one."""

from __future__ import annotations

import typer
from rich.table import Table

from service.cli.app import app, console, fail, fail_invalid, open_project, out, project_option
from service.cli.calibrate import CASCADE, TRUST_ALPHA, TRUST_CONFIDENCE, TRUST_DELTA

recalibration_app = typer.Typer(
    help="Scopes the service recalibrates by itself (after new SME labels, on a schedule, "
    "or when an audit of a live guarantee fails).",
    no_args_is_help=True,
)
app.add_typer(recalibration_app, name="recalibration")


@recalibration_app.command("add")
def add(
    name: str = typer.Argument(..., help="the scope's name, e.g. kinayat-gulf"),
    rubric: str = typer.Option(..., help="'id' or 'id@version' of the judgments"),
    trust_alpha: float = TRUST_ALPHA,
    trust_delta: float = TRUST_DELTA,
    trust_confidence: str = TRUST_CONFIDENCE,
    cascade: list[str] | None = CASCADE,
    by: list[str] | None = typer.Option(None, "--by", help="a strata attribute; repeatable"),
    every_labels: int | None = typer.Option(
        None, min=1, help="run after this many new SME labels on the rubric's items"
    ),
    every_hours: float | None = typer.Option(None, min=0.01, help="run at least this often"),
    audit_slice: int = typer.Option(
        30, min=1, help="fresh labels of trusted verdicts each audit of a live guarantee tests"
    ),
    bootstrap: int = typer.Option(500, min=0, help="bootstrap resamples of each report"),
    window_hours: float | None = typer.Option(
        None,
        min=0.01,
        help="a nightly scope: only the judgments of the last N hours, stored "
        "as a nightly report with its drift against the previous one (with --every-hours 24: "
        "qadi report nightly on the service's own schedule)",
    ),  # fmt: skip
    project: str | None = project_option(),
) -> None:
    """Add a scope: from now on the service recalibrates the rubric's thresholds for these
    trust options by itself, and the next POST /judge applies what it stores."""
    from pydantic import ValidationError

    from service.db.engine import session_scope
    from service.stores.scopes import ScopeError, ScopeSpec, add_scope

    try:
        spec = ScopeSpec(
            name=name, rubric=rubric, alpha=trust_alpha, delta=trust_delta,
            confidence=trust_confidence, cascades=[c.split(",") for c in cascade or []],
            by=by or [], every_labels=every_labels, every_hours=every_hours,
            audit_slice=audit_slice, bootstrap=bootstrap, window_hours=window_hours,
        )  # fmt: skip
    except ValidationError as exc:
        fail_invalid(exc)
    sessions, chosen = open_project(project)
    try:
        with session_scope(sessions) as session:
            add_scope(session, chosen, spec, "cli")
    except ScopeError as exc:
        fail(str(exc))
    when = [f"after {every_labels} new SME labels"] if every_labels else []
    when += [f"every {every_hours:g} h"] if every_hours else []
    console.print(f"scope {name} (project {chosen}): {rubric} recalibrated {' and '.join(when)}")


@recalibration_app.command("list")
def list_scopes(project: str | None = project_option()) -> None:
    """The project's scopes, when each runs, and how its last run went."""
    from service.db.engine import session_scope
    from service.stores.scopes import scopes

    sessions, chosen = open_project(project)
    with session_scope(sessions) as session:
        found = scopes(session, chosen)
    table = Table("scope", "rubric", "α", "δ", "runs", "last run", "status", "message")
    for scope in found:
        last = f"{scope.last_run_at:%Y-%m-%d %H:%M}" if scope.last_run_at else "—"
        table.add_row(
            scope.name, scope.rubric, f"{scope.options['alpha']:g}",
            f"{scope.options['delta']:g}", str(scope.runs), last, scope.last_status or "—",
            scope.last_message or "",
        )  # fmt: skip
    out.print(table)


@recalibration_app.command("run")
def run_now(name: str = typer.Argument(...), project: str | None = project_option()) -> None:
    """Run a scope now (whether or not it is due), as the service would."""
    from service.db.engine import session_scope
    from service.recalibration.runner import Recalibrator
    from service.stores.scopes import ScopeError, find_scope

    sessions, chosen = open_project(project)
    try:
        with session_scope(sessions) as session:
            scope_id = find_scope(session, chosen, name).id
    except ScopeError as exc:
        fail(str(exc))
    outcome = Recalibrator(sessions).run(scope_id, "manual", "cli")
    out.print(f"{name}: {outcome.status}: {outcome.message}")
    if outcome.status == "failed":
        raise typer.Exit(1)


@recalibration_app.command("remove")
def remove(name: str = typer.Argument(...), project: str | None = project_option()) -> None:
    """Stop recalibrating a scope; its reports, thresholds and log stay."""
    from service.db.engine import session_scope
    from service.stores.scopes import ScopeError, remove_scope

    sessions, chosen = open_project(project)
    try:
        with session_scope(sessions) as session:
            remove_scope(session, chosen, name)
    except ScopeError as exc:
        fail(str(exc))
    console.print(f"scope {name} removed")
