"""`qadi grades import`: grades in the interchange format, or from other tools' logs."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import NoReturn

import typer

from calibration.formats.imports import Imported, read_inspect_log, read_lm_eval_results
from calibration.formats.interchange import GradeFormatError, read_grades
from service.cli.app import app, fail, open_project, project_option
from service.db.engine import session_scope
from service.stores.grades import check_project, check_storable, upsert_grades

grades_app = typer.Typer(help="Human grades (CSV/JSONL interchange format).", no_args_is_help=True)
app.add_typer(grades_app, name="grades")


class Source(StrEnum):
    """Where grades come from: qadi's interchange file, an Inspect AI log, lm-eval results."""

    interchange = "interchange"
    inspect = "inspect"
    lm_eval = "lm-eval"


def _read(path: Path, source: Source) -> Imported:
    if source is Source.inspect:
        return read_inspect_log(path)
    if source is Source.lm_eval:
        if not path.is_dir():
            raise GradeFormatError([f"{path}: --from lm-eval takes the results directory"])
        return read_lm_eval_results(path)
    if path.is_dir():
        raise GradeFormatError([f"{path}: a directory; give a .csv or .jsonl grades file"])
    rows = read_grades(path)
    unfilled = getattr(rows, "unfilled", [])
    return Imported(rows, [f"row {n}: unfilled (no rater, no score)" for n in unfilled])


@grades_app.command("import")
def grades_import(
    path: Path = typer.Argument(..., exists=True, help="grades file, .eval log or lm-eval dir"),
    source: Source = typer.Option(
        Source.interchange,
        "--from",
        help="interchange (CSV/JSONL), inspect (an Inspect AI .eval/.json log) or lm-eval "
        "(a results directory written with --log_samples)",
    ),
    project: str | None = project_option(),
) -> None:
    """Import grades into a project; a re-imported (item_id, rater) replaces its score."""
    first_row = 2 if path.suffix.lower() == ".csv" else 1
    try:
        imported = _read(path, source)
        check_storable(imported.rows, first_row=first_row)
    except GradeFormatError as exc:
        _refuse(path, exc)
    sessions, project = open_project(project)
    try:  # an export of another project (GET /grades writes each row's project)
        check_project(imported.rows, project, first_row)
    except GradeFormatError as exc:
        _refuse(path, exc)
    with session_scope(sessions) as session:
        counts = upsert_grades(session, project, imported.rows, first_row)
    for reason in imported.skipped:
        typer.echo(f"skipped: {reason}", err=True)
    summary = {"file": str(path), "rows": len(imported.rows), **counts}
    if source is not Source.interchange or imported.skipped:
        summary["skipped"] = len(imported.skipped)
    typer.echo(json.dumps(summary))


def _refuse(path: Path, exc: GradeFormatError) -> NoReturn:
    fail("\n  ".join([f"{path}: invalid grades", *exc.problems]))
