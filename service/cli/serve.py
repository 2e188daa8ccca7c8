"""`qadi serve`: run the HTTP service under uvicorn."""

from __future__ import annotations

import ipaddress
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
import uvicorn

from service.cli import ports
from service.cli.app import app, chosen_project, console, fail
from service.db.engine import make_engine, open_database, require_migrated
from service.settings import get_settings


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="address to bind"),
    port: int = typer.Option(8000, help="port"),
    workers: int = typer.Option(1, min=1, help="uvicorn worker processes"),
    judges_config: Path | None = typer.Option(None, help="judges YAML (sets QADI_JUDGES_CONFIG)"),
    database_url: str | None = typer.Option(None, help="SQLAlchemy URL (sets QADI_DATABASE_URL)"),
    insecure: bool = typer.Option(
        False, "--insecure", help="allow QADI_AUTH=off on an address other than loopback"
    ),
    keep_alive: float | None = typer.Option(
        None,
        min=1,
        help="seconds an idle connection stays open (default QADI_KEEP_ALIVE_SECONDS, 75: "
        "above client pools' and load balancers' idle times, so they close first)",
    ),
) -> None:
    """Serve the API (docs at /docs). Refuses an unmigrated database, and an open (auth off)
    service on a non-loopback address unless --insecure is given. With --workers above 1
    the Prometheus counters of every worker are added up at /metrics."""
    run_server(host, port, workers, judges_config, database_url, insecure, keep_alive)


def run_server(
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    judges_config: Path | None = None,
    database_url: str | None = None,
    insecure: bool = False,
    keep_alive: float | None = None,
) -> None:
    """`qadi serve` as a plain function, for other commands (`qadi demo`) to call: its
    defaults are values, where the typer command's are OptionInfo objects that a direct
    call would hand on to uvicorn (issue 31: `timeout_keep_alive` became an OptionInfo and
    every response logged a TypeError)."""
    if judges_config is not None:
        os.environ["QADI_JUDGES_CONFIG"] = str(judges_config)
    if database_url is not None:
        os.environ["QADI_DATABASE_URL"] = database_url
    get_settings.cache_clear()
    if get_settings().auth == "off" and not is_loopback(host) and not insecure:
        fail(
            f"QADI_AUTH=off would let anyone who can reach {host} grade and import; bind "
            "127.0.0.1, turn auth on, or pass --insecure if this network is trusted"
        )
    if ports.in_use(host, port):
        fail(ports.taken(host, port, "qadi serve --port {port}"))
    require_migrated(make_engine(get_settings().database_url))  # refused in QadiGroup
    if get_settings().auth == "off":  # every caller is QADI_PROJECT's: it must exist
        chosen_project(open_database(get_settings().database_url), None)
    check_judges_config(get_settings().judges_config)
    with shared_metrics(workers):
        uvicorn.run(
            "service.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            timeout_keep_alive=keep_alive or get_settings().keep_alive_seconds,
        )


@contextmanager
def shared_metrics(workers: int) -> Iterator[None]:
    """Several workers: prometheus_client's multiprocess mode, so /metrics adds up every
    worker's counters instead of showing whichever worker answers (issue 31.5). The
    directory (PROMETHEUS_MULTIPROC_DIR, or a fresh one) is set before the workers import
    prometheus_client; its old files are wiped, as prometheus_client requires."""
    # here, not at the top: the metrics import the trust layer and SciPy, which every other
    # command's start-up would pay (tests/perf/bench_start_up.py)
    from service.metrics import MULTIPROC_ENV

    given = os.environ.get(MULTIPROC_ENV)
    if workers == 1 and not given:
        yield
        return
    folder = Path(given) if given else Path(tempfile.mkdtemp(prefix="qadi-metrics-"))
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(folder)
    try:
        yield
    finally:
        if not given:
            shutil.rmtree(folder, ignore_errors=True)


def check_judges_config(path: Path | None) -> None:
    """A judges file that cannot be used ends `serve` here, in the one line `qadi judges
    check` prints, before any worker starts (a worker would die with a traceback); a judge
    whose key variable is unset is named, since every call it is asked for will fail."""
    from judges import JudgeConfigError, load_config
    from judges.credentials import unset_message

    if path is None:
        return
    try:
        config = load_config(path)
    except JudgeConfigError as exc:
        fail(str(exc))
    for entry in config.model_list:
        message = unset_message(entry.name, entry.litellm_params)
        if message is not None:
            console.print(f"[bold yellow]warning:[/] {message}", highlight=False, soft_wrap=True)


def is_loopback(host: str) -> bool:
    """True for 'localhost' and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False
