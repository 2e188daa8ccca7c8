"""Calibration reports over HTTP: create from a selection, read as JSON, HTML or Markdown."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy.orm import Session

from calibration.alt_test import MIN_ITEMS_FLOOR, check_min_items
from calibration.calibrate import CalibrationOptions
from calibration.checks import CalibrationInputError
from calibration.drift import drift
from calibration.scoring import ScoringName
from calibration.selective_report import SelectiveOptions
from service.api.deps import Caller, GradesKey
from service.api.errors import error_responses, invalid
from service.api.formats import negotiate, split_suffix
from service.api.links import (
    DEFAULT_TTL_SECONDS,
    MAX_TTL_SECONDS,
    LinkRefused,
    link_secret,
    sign,
    verify,
)
from service.api.pagination import naive_utc
from service.db.engine import session_scope
from service.reporting.calibration import report_over_database
from service.reporting.probes import ProbeRunError, with_probe_run
from service.stores.calibration import (
    Selection,
    criterion_weights,
    get_report,
    latest_report,
    linked_report,
    scale_of_rubric,
    store_report,
)
from service.stores.projects import Tenant
from service.stores.rubrics import RubricNotFound, get_rubric

if TYPE_CHECKING:
    from service.db.schema import CalibrationReportRow

router = APIRouter(tags=["calibration"])


class ReportRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "rubric": "iraqi-linguistic-shaku-maku",
                    "by": ["dialect", "category"],
                    "bootstrap": 2000,
                    "seed": 0,
                }
            ]
        },
    )

    judges: list[str] | None = None
    rubric: str | None = Field(default=None, description="'id' or 'id@version'; sets the scale")
    metadata: dict[str, str] = Field(default_factory=dict)
    since: datetime | None = None
    until: datetime | None = None
    scale_min: float | None = None
    scale_max: float | None = None
    level: Literal["nominal", "ordinal", "interval"] | None = Field(
        default=None, description="nominal: scores compared as labels; no scale needed"
    )
    reference: str = "mean"
    by: list[str] = Field(
        default_factory=list,
        description="strata attributes: at most QADI_REPORT_STRATA_MAX (200) strata, their "
        "values summed; more is a 422 before any work",
    )
    bootstrap: int = Field(default=2000, ge=0, le=20000)
    seed: int = 0
    cluster: str | None = None
    confidence: float = Field(
        default=0.95, gt=0, lt=1, description="confidence level of every interval"
    )
    alt_test: bool = Field(default=False, description="require the alt-test (422 if untestable)")
    epsilon: float = Field(default=0.2, ge=0, lt=1, description="alt-test cost-benefit allowance")
    alt_scoring: ScoringName | None = Field(  # type: ignore[valid-type]
        default=None,
        description="accuracy | neg_rmse (published) | balanced_accuracy (chance-corrected) "
        "| jaccard (tag sets); default accuracy for labels, neg_rmse for numbers",
    )
    alt_min_items: int = Field(
        default=30,
        le=100000,
        json_schema_extra={"minimum": MIN_ITEMS_FLOOR},
        description=f"independent units (items, or clusters) an annotator needs; the floor "
        f"{MIN_ITEMS_FLOOR} keeps the alt-test at its level",
    )
    probe_run: str | None = Field(
        default=None,
        description="stored probe run (id or 'latest'): its moved judges are marked on the "
        "trust map (`probes` on a row) and its table and plot added to the report",
    )
    trust: SelectiveOptions = Field(
        default_factory=SelectiveOptions,
        description="selective judging: the α, δ, agreement tolerance, cascades and "
        "confidence source whose thresholds the report fixes (POST /judge applies them)",
    )

    _floor = field_validator("alt_min_items")(check_min_items)


def _input_error(exc: CalibrationInputError, body: ReportRequest) -> HTTPException:
    """422 naming the option at fault: `by`, `judges` (one grades nothing selected), the
    scale the stored scores fall outside, or the selection as a whole (`grades`: no judged
    item has a human grade)."""
    loc = {"by": ["body", "by"], "grades": ["body"], "judges": ["body", "judges"]}.get(exc.field)
    loc = loc or ["body", "rubric" if body.rubric else "scale_min"]
    return HTTPException(
        422, [{"loc": loc, "msg": p, "type": "value_error"} for p in exc.problems]
    )


def _payload(row: CalibrationReportRow) -> dict[str, Any]:
    return {"id": row.id, "kind": row.kind, "created_at": row.created_at.isoformat(), **row.report}


@router.post("/calibration/reports", status_code=201, summary="Compute and store a report")
def create_report(body: ReportRequest, request: Request, caller: GradesKey) -> JSONResponse:
    """Computed over the caller's project's grades and judgments, in a report worker process
    (service/reporting/pool.py: off the process serving POST /judge), stored in that project."""
    sessions, settings = request.app.state.sessions, request.app.state.settings
    with session_scope(sessions) as session:
        options, selection = _report_inputs(session, caller, body, settings.report_strata_max)
    # read and computed between two short transactions, not inside one: on SQLite a
    # transaction holds the write lock, and every POST /judge would wait for the report
    work = (report_over_database, settings.database_url, caller.project, selection, options)
    try:
        rendered = request.app.state.reports.call(*work)
    except CalibrationInputError as exc:
        raise _input_error(exc, body) from None
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    with session_scope(sessions) as session:
        try:
            # the probe run must be this project's: a report shows what it attaches
            rendered = with_probe_run(session, Tenant(caller.project), rendered, body.probe_run)
        except ProbeRunError as exc:
            raise invalid(str(exc)) from None
        row = store_report(
            session,
            caller.project,
            "adhoc",
            body.rubric or "",
            rendered,
            (selection.since, selection.until),
        )
        return JSONResponse(_payload(row), status_code=201)


def _report_inputs(
    session: Session, caller: Caller, body: ReportRequest, max_strata: int
) -> tuple[CalibrationOptions, Selection]:
    """The options and selection of the report `body` asks for, with at most `max_strata`
    strata (the rows are read where the report is computed)."""
    low, high, level = body.scale_min, body.scale_max, body.level
    project = caller.project
    try:
        rubric = get_rubric(session, project, body.rubric) if body.rubric else None
        weights = criterion_weights(rubric) if rubric else {}
        if (low is None or high is None) and level != "nominal":
            if body.rubric is None:
                raise HTTPException(422, "scale_min/scale_max: required unless 'rubric' is given")
            low, high, rubric_level = scale_of_rubric(session, project, body.rubric)
            level = level or rubric_level
    except RubricNotFound as exc:
        raise HTTPException(422, str(exc)) from None
    try:
        options = CalibrationOptions(
            **body.model_dump(
                include={
                    "reference",
                    "by",
                    "bootstrap",
                    "seed",
                    "cluster",
                    "confidence",
                    "alt_test",
                    "epsilon",
                    "alt_scoring",
                    "alt_min_items",
                }
            ),
            scale_min=low,
            scale_max=high,
            level=level,
            criterion_weights=weights,
            selective=body.trust,
            max_strata=max_strata,
        )
    except ValidationError as exc:
        raise RequestValidationError(
            [
                {"loc": ("body", *e["loc"]), "msg": e["msg"], "type": e["type"]}
                for e in exc.errors(include_url=False)
            ]
        ) from None
    selection = Selection(
        judges=body.judges,
        rubric=body.rubric,
        metadata=body.metadata,
        since=naive_utc(body.since) if body.since else None,
        until=naive_utc(body.until) if body.until else None,
        scale=None if low is None or high is None else (low, high),
    )
    return options, selection


def _respond(row: CalibrationReportRow | None, request: Request, fmt: str | None):
    if row is None:
        raise HTTPException(404, "no such calibration report")
    return negotiate(request, fmt, _payload(row), row.html, row.markdown)


@router.get("/calibration/reports/latest", summary="The newest report (?kind=nightly|adhoc)")
def latest(request: Request, caller: GradesKey, kind: str | None = None):
    with session_scope(request.app.state.sessions) as session:
        return _respond(latest_report(session, caller.tenant, kind=kind), request, None)


@router.get(
    "/calibration/reports/{report_id}",
    summary="A report as JSON, or HTML/Markdown by Accept header or a .html/.md suffix",
)
def show(report_id: str, request: Request, caller: GradesKey):
    report_id, fmt = split_suffix(report_id)
    with session_scope(request.app.state.sessions) as session:
        return _respond(get_report(session, caller.tenant, report_id), request, fmt)


@router.get(
    "/calibration/reports/{report_id}/drift",
    summary="Drift of a report against an earlier one (the rule of `qadi report diff`)",
)
def report_drift(report_id: str, against: str, request: Request, caller: GradesKey):
    """Welch's test per judge × stratum × metric on both reports' standard errors,
    Benjamini–Hochberg over every cell; `changes` lists the cells that drifted."""
    with session_scope(request.app.state.sessions) as session:
        new = get_report(session, caller.tenant, report_id)
        old = get_report(session, caller.tenant, against)
        if new is None:
            raise HTTPException(404, "no such calibration report")
        if old is None:
            detail = [
                {"loc": ["query", "against"], "msg": f"no stored report '{against}'",
                 "type": "not_found"}
            ]  # fmt: skip
            raise HTTPException(404, detail)
        found = drift(new.report, old.report)
    return JSONResponse({"report": report_id, "previous_report": against, **found})


class LinkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ttl_seconds: int = Field(
        default=DEFAULT_TTL_SECONDS, ge=60, le=MAX_TTL_SECONDS, description="how long it opens"
    )
    format: Literal["html", "md"] = "html"


class ReportLink(BaseModel):
    url: str = Field(description="opens the report without an API key until `expires_at`")
    expires_at: datetime


@router.post(
    "/calibration/reports/{report_id}/links",
    status_code=201,
    summary="A short-lived signed link to view a report in a browser",
)
def mint_link(
    report_id: str, request: Request, caller: GradesKey, body: LinkRequest | None = None
) -> ReportLink:
    body = body or LinkRequest()
    with session_scope(request.app.state.sessions) as session:
        if get_report(session, caller.tenant, report_id) is None:
            raise HTTPException(404, "no such calibration report")
        secret = link_secret(request.app.state.settings, session)
    link = sign(secret, report_id, body.ttl_seconds)
    url = request.url_for("view_report", report_id=report_id).include_query_params(
        expires=link.expires, signature=link.signature, format=body.format
    )
    return ReportLink(url=str(url), expires_at=datetime.fromtimestamp(link.expires, UTC))


@router.get(
    "/calibration/reports/{report_id}/view",
    summary="A report opened through a signed link (no API key; see POST .../links)",
    responses=error_responses(403, _403="forged, altered or expired link"),
)
def view_report(
    report_id: str,
    request: Request,
    expires: int,
    signature: str,
    format: Literal["html", "md"] = "html",
):
    with session_scope(request.app.state.sessions) as session:
        try:
            verify(link_secret(request.app.state.settings, session), report_id, expires, signature)
        except LinkRefused as exc:
            detail = [{"loc": ["query", exc.field], "msg": str(exc), "type": "link_refused"}]
            raise HTTPException(403, detail) from None
        response = _respond(linked_report(session, report_id), request, format)
    # the signature must not leave in a Referer; the page runs no script and loads nothing
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
    )
    return response
