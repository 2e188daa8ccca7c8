"""Liveness, readiness (database reachable), Prometheus metrics, and the judges list."""

from __future__ import annotations

import asyncio
from contextlib import suppress

import httpx
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from prometheus_client import CONTENT_TYPE_LATEST
from sqlalchemy import text

from judges.standins import is_stand_in
from service.api.deps import JudgeKey, bearer, header, require
from service.api.errors import error_responses, problem
from service.api.schemas import JudgeInfo
from service.db.engine import storage_guard
from service.errors import StorageUnavailable
from service.metrics import exposition as process_metrics

router = APIRouter(tags=["operations"])


@router.get("/", include_in_schema=False)
def root() -> RedirectResponse:
    """A browser pointed at the service lands on its docs."""
    return RedirectResponse("/docs")


@router.get("/healthz", summary="The process is up")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="The database answers")
def readyz(request: Request) -> JSONResponse:
    try:
        with request.app.state.engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure means not ready
        name = type(exc).__name__
        message = f"the database does not answer ({name})"
        detail = [problem([], message, "unavailable")]
        return JSONResponse(
            {"status": "unavailable", "database": name, "detail": detail},
            503,
            headers={"Retry-After": str(StorageUnavailable.retry_after)},
        )
    return JSONResponse({"status": "ready", "database": "ok"})


async def metrics_key(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    api_key: str | None = Depends(header),
) -> None:
    """With QADI_METRICS_AUTH=admin, an admin-scope key: the numbers are every project's."""
    if request.app.state.settings.metrics_auth == "admin":
        await require("admin")(request, credentials, api_key)


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    responses=error_responses(401, 403),
    dependencies=[Depends(metrics_key)],
)
def metrics(request: Request) -> Response:
    """HTTP, judge calls, tokens and cost of this process; calibration gauges of the latest
    stored reports, a bounded set (service/api/gauges.py; left out while the database is
    unavailable: the rest still answers).
    Judge costs and gauges are labelled by `project`: an operator's view of every team,
    behind an admin key with QADI_METRICS_AUTH=admin."""
    body = process_metrics()
    with suppress(StorageUnavailable):
        body += storage_guard(request.app.state.sessions, request.app.state.gauges.exposition)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@router.get(
    "/judges",
    response_model=list[JudgeInfo],
    tags=["judge"],
    responses=error_responses(401, 403, 503),
)
async def judges(request: Request, _: JudgeKey) -> list[JudgeInfo]:
    """Configured judges, their makers, and whether an OpenAI-compatible endpoint answers."""
    grader = request.app.state.grader
    if grader is None:
        return []
    config = grader.config
    async with httpx.AsyncClient(timeout=2.0) as client:
        probes = await asyncio.gather(*(_probe(client, e) for e in config.model_list))
    return [
        JudgeInfo(
            name=e.name,
            model=e.model,
            maker=config.maker_of_judge(e),
            stand_in=is_stand_in(e.model),
            substitute=e.substitute,
            confidence_source=e.confidence.source,
            calls_per_verdict=e.confidence.calls_per_verdict,
            reachable=reachable,
            detail=detail,
        )
        for e, (reachable, detail) in zip(config.model_list, probes, strict=True)
    ]


async def _probe(client: httpx.AsyncClient, entry) -> tuple[bool | None, str]:
    if is_stand_in(entry.model):
        return True, "stand-in judge: deterministic, no model behind it (judges/standins.py)"
    base = entry.litellm_params.get("api_base")
    if not base:
        return None, "provider endpoint; not probed (use `qadi judges check` for a real call)"
    try:
        response = await client.get(f"{str(base).rstrip('/')}/models")
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__} reaching {base}"
    return response.status_code < 500, f"GET {base}/models -> {response.status_code}"
