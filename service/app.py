"""The FastAPI application factory. `qadi serve` runs it under uvicorn."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from importlib.metadata import version

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from judges import Grader, load_config
from service.api import (
    calibration,
    errors,
    estimates,
    grades,
    health,
    judge,
    judgments,
    probes,
    requests,
    rubrics,
    sme,
)
from service.api.access_log import redact_access_log
from service.api.gauges import CalibrationGauges
from service.api.middleware import BodySizeLimit, HttpMetrics
from service.collector import start_up_frozen
from service.db.engine import open_database, session_scope, storage_guard
from service.errors import StorageUnavailable
from service.judging.grading import GradingService
from service.recalibration.runner import Recalibrator
from service.reporting.pool import ReportPool
from service.settings import Settings, get_settings
from service.stores.projects import require_project
from service.web import install as install_workbench

log = logging.getLogger("qadi")

DESCRIPTION = """
qadi grades model answers with LLM judges and measures the judges against human experts.

Write endpoints need an API key (`Authorization: Bearer qadi_...` or `X-API-Key`) with the
right scope (`judge`, `grades`, `admin`); create one with `qadi keys create --scopes judge`.
A grade is never made up: failed judge calls are stored and reported with their error.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app; refuses an unmigrated database (run `qadi db upgrade`), and without
    keys (QADI_AUTH=off) a QADI_PROJECT that names no project."""
    settings = settings or get_settings()
    sessions = open_database(settings.database_url, settings.database_wait_seconds)
    if settings.auth == "off":
        with session_scope(sessions) as session:
            require_project(session, settings.project)
    grader = Grader(load_config(settings.judges_config)) if settings.judges_config else None
    if grader is None:
        log.warning("no judges configured (QADI_JUDGES_CONFIG); POST /judge will answer 503")

    judging = GradingService(settings, sessions, grader)
    # heavy reads off the request path, in workers of lower priority
    reports = ReportPool(settings.report_workers, settings.report_nice)
    recalibrator = Recalibrator(sessions, reports)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(_reap_forever(judging, settings.reap_interval_seconds))]
        if settings.recalibration_interval_seconds > 0:
            interval = settings.recalibration_interval_seconds
            tasks.append(asyncio.create_task(recalibrator.run_forever(interval)))
        try:
            with start_up_frozen():  # what start-up made lives as long as the service
                yield
        finally:
            for task in tasks:
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            await judging.drain()  # grades still waiting for the database
            if grader is not None:
                await grader.client.aclose()  # the lean transport's connections to judges
            reports.close()
            sessions.kw["bind"].dispose()  # hand the pooled connections back to the server

    # FastAPIOffline: /docs and /redoc load Swagger UI and ReDoc from files in the package,
    # not a CDN, so the docs work on a machine without internet access.
    app = FastAPIOffline(
        title="qadi", version=version("qadi"), description=DESCRIPTION, lifespan=lifespan
    )
    app.state.settings = settings
    app.state.engine = sessions.kw["bind"]
    app.state.sessions = sessions
    app.state.grader = grader
    app.state.judging = judging
    app.state.recalibrator = recalibrator
    app.state.reports = reports
    app.state.gauges = CalibrationGauges(
        settings.metrics_report_judges, settings.metrics_report_strata
    )
    plain = (judge, judgments, requests, rubrics, grades, health)
    documented = (calibration, estimates, probes, sme)  # their errors, documented in one shape
    for module in plain:
        app.include_router(module.router)
    for module in documented:
        app.include_router(module.router, responses=errors.error_responses(401, 403, 422, 503))
    redact_access_log(module.router for module in (*plain, *documented))
    errors.install(app)
    install_workbench(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(HttpMetrics)
    return app


async def _reap_forever(judging: GradingService, interval: float) -> None:
    """Close requests whose process died, so no request waits `pending` forever."""
    while True:
        await asyncio.sleep(interval)
        try:
            closed = await asyncio.to_thread(storage_guard, judging.factory, judging.reap)
        except StorageUnavailable:
            continue  # the database is away; try again next round
        except Exception:  # noqa: BLE001 - the reaper must outlive any one failed round
            log.exception("reaping abandoned grade requests failed; trying again next round")
            continue
        if closed:
            log.warning("closed %d abandoned grade request(s)", closed)
