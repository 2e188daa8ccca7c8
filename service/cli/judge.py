"""`qadi judge`: grade one answer from the command line, store it, print a summary (the whole
result as JSON with `--json`).

It grades through the same batch core and judgment store as `POST /judge` and `qadi regrade`:
the printed judgment ids are stored (readable at GET /judgments/{id}), and a judge whose
verdict for this exact answer is already stored is not called again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.table import Table

from calibration.formatting import judge_label
from judges import (
    Grader,
    GradeRequest,
    GradeResult,
    GuardError,
    JudgeConfigError,
    RequestError,
    TemplateError,
    load_config,
)
from judges.templates import read_template_file
from rubrics import RubricError, resolve_rubric
from service.cli.app import app, fail, open_project, out, project_option, split_names
from service.stores.judgments import project_batcher


@app.command()
def judge(
    rubric: str = typer.Option(..., help=r"rubric file (.yaml/.json) or library id\[@version]"),
    prompt: str = typer.Option("", help="what the candidate model was asked"),
    response: str = typer.Option(..., help="the candidate's answer"),
    reference: str | None = typer.Option(None, help="gold answer or explanation"),
    candidate_model: str = typer.Option(..., help="model that wrote the answer (for the guard)"),
    candidate_provider: str | None = typer.Option(None, help="maker of the candidate model"),
    judges: str | None = typer.Option(None, help="comma-separated judge names; default panel"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    as_json: bool = typer.Option(False, "--json", help="print the whole result as JSON"),
    template: Path | None = typer.Option(
        None, help="grade with this prompt template file (YAML/JSON) instead of the rubric's"
    ),
    project: str | None = project_option(),
) -> None:
    """Grade one answer with the configured judges, store the judgments and print a summary
    of the grade, or all of it as JSON with --json (needs a migrated database: `qadi db
    upgrade`)."""
    try:
        request = GradeRequest(
            rubric=resolve_rubric(rubric),
            prompt=prompt,
            response=response,
            reference=reference,
            candidate_model=candidate_model,
            candidate_provider=candidate_provider,
            judges=split_names(judges),
            template=read_template_file(template) if template else None,
        )
        grader = Grader(load_config(config))
        grader.plan(request)  # bad input is refused before the database is opened
    except (RubricError, JudgeConfigError, GuardError, RequestError, TemplateError) as exc:
        fail(str(exc))
    sessions, project = open_project(project)
    result = asyncio.run(project_batcher(grader, sessions, project).grade_one(request))
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        print_grade(result)
    if result.status == "failed":
        raise typer.Exit(1)


def print_grade(result: GradeResult) -> None:
    """The grade in a few lines: the panel's mean, each judge's score or error, who the
    guard skipped and who stood in; the stored judgment ids for GET /judgments/{id}."""
    mean = result.aggregate
    head = f"{result.rubric_id}@{result.rubric_version} · {result.candidate_model}"
    head += f" ({result.candidate_maker or 'maker unknown'}) · {result.status}"
    if mean is not None:
        head += f" · mean {mean.mean:.2f} over {mean.n} judge(s)"
    out.print(head, highlight=False)
    table = Table("judge", "model", "status", "score", "cost", "judgment id")
    for judged in result.results:
        cost = "unknown" if judged.cost_usd is None else f"${judged.cost_usd:.4f}"
        ok = judged.status == "ok" and judged.score is not None
        table.add_row(
            judge_label(judged.judge, judged.stand_in),
            judged.model,
            judged.status + (" (cached)" if judged.cached else ""),
            f"{judged.score:g}" if ok else judged.error or "",
            cost,
            judged.id,
        )
    out.print(table)
    for skipped in result.skipped:
        instead = f"; {skipped.substitute} graded instead" if skipped.substitute else ""
        out.print(f"skipped {skipped.judge}: {skipped.detail}{instead}", highlight=False)
    for gone in result.unavailable:
        instead = f"; {gone.substitute} stood in" if gone.substitute else ""
        out.print(f"unavailable {gone.judge}: {gone.error}{instead}", highlight=False)
