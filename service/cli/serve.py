"""`qadi serve`: run the HTTP service under uvicorn."""

from __future__ import annotations

import os
from pathlib import Path

import typer
import uvicorn

from service.cli.app import app, fail
from service.db.engine import NotMigratedError, make_engine, require_migrated
from service.settings import get_settings


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="address to bind"),
    port: int = typer.Option(8000, help="port"),
    workers: int = typer.Option(1, min=1, help="uvicorn worker processes"),
    judges_config: Path | None = typer.Option(None, help="judges YAML (sets QADI_JUDGES_CONFIG)"),
    database_url: str | None = typer.Option(None, help="SQLAlchemy URL (sets QADI_DATABASE_URL)"),
) -> None:
    """Serve the API (docs at /docs). Refuses an unmigrated database."""
    if judges_config is not None:
        os.environ["QADI_JUDGES_CONFIG"] = str(judges_config)
    if database_url is not None:
        os.environ["QADI_DATABASE_URL"] = database_url
    get_settings.cache_clear()
    try:
        require_migrated(make_engine(get_settings().database_url))
    except NotMigratedError as exc:
        fail(str(exc))
    uvicorn.run(
        "service.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
    )
