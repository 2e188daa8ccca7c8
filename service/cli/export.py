"""`qadi export`: judgments, grades and reports as Parquet partitioned by day."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import typer

from service.cli.app import app, chosen_project, console, fail, project_option, split_names


@app.command("export")
def export(
    out: Path = typer.Argument(..., help="folder to write TABLE/day=YYYY-MM-DD/*.parquet in"),
    tables: str = typer.Option(
        "judgments,grades,reports", help="which tables: judgments, grades, reports"
    ),
    since: datetime | None = typer.Option(None, help="records made from this time"),
    until: datetime | None = typer.Option(None, help="records made before this time"),
    project: str | None = project_option(),
) -> None:
    """Write the project's judgments, human grades and calibration reports (their JSON, not
    their HTML) as Parquet files partitioned by day, for a warehouse or Ray Data. Streamed:
    memory holds one batch of records, whatever the database's size."""
    from service.db.engine import make_engine, make_sessionmaker, require_migrated, session_scope
    from service.exporting.parquet import ExportError, target, write_days
    from service.settings import get_settings
    from service.stores.exports import TABLES, export_batches

    chosen = split_names(tables) or []
    unknown = [t for t in chosen if t not in TABLES]
    if unknown or not chosen:
        fail(f"--tables: '{','.join(unknown) or tables}' is not a table; give {', '.join(TABLES)}")
    if since is not None and until is not None and until <= since:
        fail(f"--until: {until.isoformat()} is not after --since {since.isoformat()}")
    engine = make_engine(get_settings().database_url)
    require_migrated(engine)
    sessions = make_sessionmaker(engine)
    name = chosen_project(sessions, project)
    try:
        folders = {table: target(out, table) for table in chosen}
        for table, folder in folders.items():
            with session_scope(sessions) as session:
                batches = export_batches(session, table, name, since, until)
                written = write_days(batches, folder, table)
            console.print(f"{table}: {written} records -> {folder}", highlight=False)
    except ExportError as exc:
        fail(str(exc))
    finally:
        engine.dispose()
