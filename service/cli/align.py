"""`qadi align ...`: see where a judge and the SMEs disagree, revise its template from a
training fold of their labels, certify the revision on the held-out fold, and approve it
(service/alignment/)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer
from rich.table import Table

from service.cli.app import app, console, fail, fail_invalid, open_project, out, project_option
from service.cli.progress import grading_task, progress_bar

align_app = typer.Typer(
    help="Align a judge with your experts: its disagreements with the SMEs, a revision of "
    "its template certified on labels it never saw, and the lead's approval.",
    no_args_is_help=True,
)
app.add_typer(align_app, name="align")

RUBRIC = typer.Option(..., help="'id' (its newest version) or 'id@version'")
JUDGE = typer.Option(..., help="the judge (a name of the judges config)")


@align_app.command("diff")
def diff(
    rubric: str = RUBRIC,
    judge: str = JUDGE,
    stratum: str | None = typer.Option(None, help="only this stratum: attribute=value"),
    export: Path | None = typer.Option(
        None, help="write every disagreement to this .csv or .jsonl file", dir_okay=False
    ),
    show: int = typer.Option(3, min=0, help="items shown per group"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    project: str | None = project_option(),
) -> None:
    """The items where the judge and the SMEs disagree: by criterion (penalty-weighted
    rubrics) or by rating gap (1-5 scales), the SMEs' reasons beside the judge's."""
    from service.alignment.disagreements import EXPORT_FORMATS, by_group
    from service.alignment.disagreements import export as export_text

    where = None
    if stratum is not None:
        key, sep, value = stratum.partition("=")
        if not sep or not key:
            fail(f"stratum: expected attribute=value, got '{stratum}'")
        where = (key, value)
    fmt = export.suffix.lstrip(".").lower() if export is not None else None
    if fmt is not None and fmt not in EXPORT_FORMATS:
        fail(f"export: '{export}' ends in neither .csv nor .jsonl")
    items, found = _labelled(rubric, judge, config, project)
    groups = by_group(items, found, where)
    if export is not None:
        export.write_text(export_text(groups, fmt), encoding="utf-8")
    total = len({d.item_id for g in groups.values() for d in g})
    out.print(
        f"{judge} on {found.id}@{found.version}: {len(items)} SME-labelled items, "
        f"{total} with a disagreement" + (f" (stratum {stratum})" if stratum else ""),
        highlight=False,
    )
    for group, disagreements in groups.items():
        table = Table(title=f"{group}: {len(disagreements)} item(s)", title_justify="left")
        for column in ("item", "judge", "judge's reason", "SMEs", "SMEs' reasons"):
            table.add_column(column, overflow="fold")
        for d in disagreements[:show]:
            table.add_row(d.item_id, d.judge, _short(d.judge_rationale), ", ".join(d.smes),
                          " | ".join(_short(r) for r in d.sme_rationales))  # fmt: skip
        out.print(table)
    if export is not None:
        console.print(f"wrote {sum(len(g) for g in groups.values())} rows to {export}")


def _short(text: str | None, limit: int = 160) -> str:
    text = (text or "—").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _labelled(rubric: str, judge: str, config: Path | None, project: str | None):
    """The rubric and the judge's SME-labelled items under it (its live template's grades)."""
    from judges import JudgeConfigError, TemplateError, load_config
    from service.alignment.disagreements import labelled_for
    from service.db.engine import session_scope
    from service.stores.rubrics import RubricNotFound

    sessions, chosen = open_project(project)
    try:
        templates = load_config(config).templates
        with session_scope(sessions) as session:
            found, _, items = labelled_for(session, chosen, rubric, judge, templates)
    except (RubricNotFound, JudgeConfigError, TemplateError) as exc:
        fail(str(exc))
    return items, found


@align_app.command("propose")
def propose(
    rubric: str = RUBRIC,
    judge: str = JUDGE,
    reviser: str = typer.Option(
        ..., help="the judges-config model that writes the revision (the local judge too)"
    ),
    holdout: float = typer.Option(0.5, min=0.05, max=0.95, help="share of items held out"),
    seed: int = typer.Option(0, min=0, help="fixes the folds (recorded with the run)"),
    level: float = typer.Option(0.05, min=0.001, max=0.25, help="level of the one-sided test"),
    stratify_by: str | None = typer.Option(None, help="attribute the folds balance"),
    cluster: str | None = typer.Option(None, help="attribute of dependent items (one prompt)"),
    concurrency: int = typer.Option(8, min=1, max=256, help="held-out calls in flight"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    apply: bool = typer.Option(False, "--apply", help="approve it at once if certified"),
    project: str | None = project_option(),
) -> None:
    """Revise the judge's template from the training fold's disagreements and certify the
    candidate on the held-out fold. Exit code 1 when it is not certified."""
    from pydantic import ValidationError

    from judges import Grader, JudgeConfigError, TemplateError, load_config
    from service.alignment.revision import AlignmentError, AlignOptions
    from service.alignment.revision import propose as run_proposal
    from service.stores.rubrics import RubricNotFound

    try:
        options = AlignOptions(
            rubric=rubric, judge=judge, reviser=reviser, holdout=holdout, seed=seed,
            level=level, stratify_by=stratify_by, cluster=cluster, concurrency=concurrency,
        )  # fmt: skip
    except ValidationError as exc:
        fail_invalid(exc)
    sessions, chosen = open_project(project)
    try:
        grader = Grader(load_config(config))
        with progress_bar() as progress:
            task = grading_task(progress, "held-out fold", 0)

            def advance(done: int, total: int, failed: int) -> None:
                progress.update(task, completed=done, total=total, errors=failed)

            run_id = asyncio.run(run_proposal(sessions, chosen, grader, options, advance))
    except (AlignmentError, RubricNotFound, JudgeConfigError, TemplateError) as exc:
        fail(str(exc))
    certified = _print_run(sessions, chosen, run_id)
    if apply and certified:
        _approve(sessions, chosen, run_id)
    if not certified:
        raise typer.Exit(1)


def _print_run(sessions, project: str, run_id: str) -> bool:
    """The run's certification, as a person reads it; whether it was certified."""
    from service.db.engine import session_scope
    from service.stores.alignment import get_run

    with session_scope(sessions) as session:
        run = get_run(session, project, run_id)
        status, cert, candidate = run.status, run.certification or {}, run.candidate
        header = f"run {run.id}: {run.judge} on {run.rubric_ref}, revised by {run.reviser}"
    out.print(header, highlight=False)
    out.print(f"candidate template {candidate['id']}@{candidate['version']}; "
                  f"{cert.get('training_items')} training, {cert.get('held_out')} held-out "
                  "items", highlight=False)  # fmt: skip
    table = Table(title="held-out fold", title_justify="left")
    for column in ("", "old", "revised", "change", "interval", "one-sided p"):
        table.add_column(column)
    for change in (cert.get("mad"), cert.get("exact_match")):
        if change:
            table.add_row(change["metric"], _num(change["old"]), _num(change["new"]),
                          _num(change["difference"]), _interval(change["ci"]),
                          _num(change["p_value"]))  # fmt: skip
    agreement = cert.get("agreement") or {}
    if "old" in agreement:
        for metric in ("cohen_kappa", "krippendorff_alpha"):
            table.add_row(metric, _num(agreement["old"][metric]), _num(agreement["new"][metric]),
                          "", "", "")  # fmt: skip
        table.add_row("alt-test", str(agreement["old"]["alt_test"]),
                      str(agreement["new"]["alt_test"]), "", "", "")  # fmt: skip
    out.print(table)
    if cert.get("without_candidate_grade"):
        out.print(f"[yellow]note[/]: {len(cert['without_candidate_grade'])} held-out "
                      "item(s) have no grade by the candidate (not compared)")  # fmt: skip
    colour = "green" if status == "certified" else "yellow"
    out.print(f"[{colour}]{cert.get('verdict')}[/]", highlight=False)
    return status == "certified"


def _num(value) -> str:
    return "—" if value is None else f"{value:.3g}"


def _interval(ci) -> str:
    return "—" if not ci else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


@align_app.command("approve")
def approve(
    run_id: str = typer.Argument(..., help="the run's id (qadi align list)"),
    uncertified: bool = typer.Option(
        False, "--uncertified", help="approve it although the held-out fold did not certify it"
    ),
    project: str | None = project_option(),
) -> None:
    """Make a revision live: a new rubric version whose template is the candidate."""
    sessions, chosen = open_project(project)
    _approve(sessions, chosen, run_id, uncertified)


def _approve(sessions, project: str, run_id: str, uncertified: bool = False) -> None:
    from service.alignment.approval import approve_run
    from service.alignment.revision import AlignmentError
    from service.db.engine import session_scope

    try:
        with session_scope(sessions) as session:
            new_ref = approve_run(session, project, run_id, "cli", uncertified)
    except AlignmentError as exc:
        fail(str(exc))
    out.print(f"approved: {new_ref} grades with the revised template from now on "
                  "(POST /judge by the rubric's id)", highlight=False)  # fmt: skip


@align_app.command("list")
def list_runs(project: str | None = project_option()) -> None:
    """The project's alignment runs, newest first."""
    from service.db.engine import session_scope
    from service.stores.alignment import runs

    sessions, chosen = open_project(project)
    table = Table()
    for column in ("run", "created", "rubric", "judge", "reviser", "status", "ΔMAD", "p"):
        table.add_column(column)
    with session_scope(sessions) as session:
        for run in runs(session, chosen):
            mad = (run.certification or {}).get("mad") or {}
            status = run.status + (f" → {run.approved_rubric_ref}" if run.approved_rubric_ref
                                   else "")  # fmt: skip
            if run.status == "approved" and not (run.certification or {}).get("certified"):
                status += " (not certified)"
            table.add_row(run.id, f"{run.created_at:%Y-%m-%d %H:%M}", run.rubric_ref, run.judge,
                          run.reviser, status, _num(mad.get("difference")),
                          _num(mad.get("p_value")))  # fmt: skip
    out.print(table)


@align_app.command("show")
def show(
    run_id: str = typer.Argument(..., help="the run's id (qadi align list)"),
    as_json: bool = typer.Option(False, "--json", help="the whole run as JSON"),
    project: str | None = project_option(),
) -> None:
    """One run: its folds' sizes, the candidate's guidance and its certification."""
    from judges.alignment import GUIDANCE_NAME
    from service.db.engine import session_scope
    from service.stores.alignment import get_run

    sessions, chosen = open_project(project)
    with session_scope(sessions) as session:
        run = get_run(session, chosen, run_id)
        if run is None:
            fail(f"run: the project has no alignment run '{run_id}'")
        data = {k: getattr(run, k) for k in ("id", "rubric_ref", "judge", "reviser", "seed",
                "holdout", "folds", "old_template", "candidate", "candidate_hash", "status",
                "certification", "approved_by", "approved_rubric_ref")}  # fmt: skip
    if as_json:
        out.print_json(json.dumps(data, default=str))
        return
    _print_run(sessions, chosen, run_id)
    added = (data["candidate"].get("constants") or {}).get(GUIDANCE_NAME, "")
    out.print("what the candidate adds to the instructions:\n" + added, highlight=False,
              markup=False)  # fmt: skip
