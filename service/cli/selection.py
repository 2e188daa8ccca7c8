"""Which stored judgments a command reads with --from-db (or from an export, --from-parquet):
the options `qadi calibrate` and `qadi estimate` share, and the `Selection`
(service/stores/calibration.py) they make."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import typer

from service.cli.app import fail, split_names

SINCE = typer.Option(None, help="with --from-db/--from-parquet: judgments from this time")
UNTIL = typer.Option(None, help="with --from-db/--from-parquet: judgments before this time")
JUDGES = typer.Option(None, help="with --from-db/--from-parquet: only these judges, e.g. a,b")
METADATA = typer.Option(
    [], "--metadata", help="with --from-db/--from-parquet: only answers with this attribute, "
    "key=value (repeatable)"
)  # fmt: skip
FROM_PARQUET = typer.Option(
    None, "--from-parquet", help="read the judgments and grades of a qadi export folder "
    "instead of the DB, selected as --from-db selects them"
)  # fmt: skip
ENGINE = typer.Option(
    "local", "--engine", help="with --from-parquet: local (pyarrow, this machine) | ray "
    "(Ray Data: a local Ray, or the cluster of --address)"
)  # fmt: skip
ADDRESS = typer.Option(None, help="--engine ray: join this Ray cluster ('auto' or host:port)")


def db_selection(
    *,
    judges: str | None,
    rubric: str | None,
    metadata: list[str],
    since: datetime | None,
    until: datetime | None,
    scale: tuple[float, float] | None = None,
    score: str = "discrete",
):
    """The Selection of these option values, or a clean exit naming the option at fault."""
    from service.db.filters import parse_pairs
    from service.stores.calibration import Selection

    try:
        pairs = parse_pairs(metadata, "--metadata")
    except ValueError as exc:
        fail(str(exc))
    if since is not None and until is not None and until <= since:
        fail(f"--until: {until.isoformat()} is not after --since {since.isoformat()}")
    return Selection(
        judges=split_names(judges), rubric=rubric, metadata=pairs, since=since, until=until,
        scale=scale, score=score,
    )  # fmt: skip


def check_file_or_db(grades_file, from_db: bool, **db_only) -> None:
    """One source: a grades file or --from-db; the database's options only with it."""
    if (grades_file is None) == (not from_db):
        fail("give a GRADES_FILE or --from-db (one of them)")
    given = [name for name, value in db_only.items() if value]
    if grades_file is not None and given:
        fail(f"--{given[0].replace('_', '-')}: only with --from-db")


def check_source(
    grades_file, from_db: bool, from_parquet: Path | None, engine: str, address: str | None,
    **selecting,
) -> None:  # fmt: skip
    """One source: a grades file, --from-db or --from-parquet; the selection's options only
    with the last two, --engine only with --from-parquet, --address only with --engine ray."""
    if sum((grades_file is not None, from_db, from_parquet is not None)) != 1:
        fail("give a GRADES_FILE, --from-db or --from-parquet DIR (one of them)")
    if engine not in ("local", "ray"):
        fail(f"--engine: expected local or ray, got '{engine}'")
    if engine != "local" and from_parquet is None:
        fail("--engine: only with --from-parquet (the database does its own work)")
    if address is not None and engine != "ray":
        fail("--address joins a Ray cluster: add --engine ray")
    given = [name for name, value in selecting.items() if value]
    if grades_file is not None and given:
        fail(f"--{given[0].replace('_', '-')}: only with --from-db or --from-parquet")


def parquet_rows(directory: Path, selection, project: str | None, engine: str, address):
    """Rows and inputs from an export (service/exporting/calibration.py), or a clean exit
    saying why it cannot be read."""
    from service.exporting.calibration import ParquetSourceError, rows_from_parquet

    try:
        return rows_from_parquet(directory, selection, project, engine, address)
    except ParquetSourceError as exc:
        fail(str(exc))


def parquet_rubric(rubric: str | None, scale_needed: bool):
    """With --from-parquet (an export holds no rubrics): the bundled rubric --rubric names;
    None without --rubric, or for a rubric not bundled (a project's own) when its scale is
    not needed (--scale given); a clean exit when it is needed and the rubric not bundled."""
    from rubrics import RubricError, library_rubric

    if rubric is None:
        return None
    try:
        return library_rubric(rubric)
    except RubricError as exc:
        if scale_needed:
            problem = str(exc).removeprefix("rubric_id: ")
            fail(f"--scale: required with --from-parquet unless --rubric is a bundled rubric "
                 f"(an export holds no rubrics): {problem}")  # fmt: skip
        return None
