"""`qadi judge`: grade one answer from the command line, store it, print the result as JSON.

It grades through the same batch core and judgment store as `POST /judge` and `qadi regrade`:
the printed judgment ids are stored (readable at GET /judgments/{id}), and a judge whose
verdict for this exact answer is already stored is not called again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from judges import (
    BatchGrader,
    Grader,
    GradeRequest,
    GuardError,
    JudgeConfigError,
    RequestError,
    TemplateError,
    load_config,
)
from judges.templates import read_template_file
from rubrics import RubricError, resolve_rubric
from service.cli.app import app, fail, split_names
from service.db.engine import open_database
from service.settings import get_settings
from service.stores.judgments import SqlJudgmentStore


@app.command()
def judge(
    rubric: str = typer.Option(..., help="rubric file (.yaml/.json) or library id[@version]"),
    prompt: str = typer.Option("", help="what the candidate model was asked"),
    response: str = typer.Option(..., help="the candidate's answer"),
    reference: str | None = typer.Option(None, help="gold answer or explanation"),
    candidate_model: str = typer.Option(..., help="model that wrote the answer (for the guard)"),
    candidate_provider: str | None = typer.Option(None, help="maker of the candidate model"),
    judges: str | None = typer.Option(None, help="comma-separated judge names; default panel"),
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
    template: Path | None = typer.Option(
        None, help="grade with this prompt template file (YAML/JSON) instead of the rubric's"
    ),
) -> None:
    """Grade one answer with the configured judges, store the judgments and print the
    grade as JSON (needs a migrated database: `qadi db upgrade`)."""
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
    store = SqlJudgmentStore(open_database(get_settings().database_url))
    result = asyncio.run(BatchGrader(grader, store).grade_one(request))
    typer.echo(result.model_dump_json(indent=2))
    if result.status == "failed":
        raise typer.Exit(1)
