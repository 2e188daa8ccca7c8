"""Judge-corrected means over HTTP: `POST /estimates` mirrors `qadi estimate`.

The grades come inline (interchange rows, as `POST /grades` takes them) or, when `grades` is
omitted, from the database (human grades plus the latest ok judgment per item and judge,
narrowed like a calibration report). Nothing is stored. JSON by default; the Markdown or
HTML rendering with `Accept: text/markdown` or `text/html`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from pydantic import ConfigDict, Field

from calibration.estimate import EstimateOptions
from calibration.formats.interchange import GradeFormatError, parse_records
from calibration.render.estimate import to_html, to_markdown
from service.api.deps import GradesKey
from service.api.pagination import naive_utc
from service.reporting.estimates import corrected_means, estimate_over_database
from service.stores.calibration import Selection

router = APIRouter(tags=["calibration"])


class EstimateRequest(EstimateOptions):
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={
            "examples": [
                {
                    "rubric": "iraqi-linguistic-shaku-maku",
                    "by": ["candidate_model"],
                    "compare": ["gpt-4.1", "jais-30b"],
                    "target_halfwidth": 2.5,
                }
            ]
        },
    )

    grades: list[dict[str, Any]] | None = Field(
        default=None, description="interchange rows; omitted: the grades in the database"
    )
    judges: list[str] | None = None
    rubric: str | None = Field(default=None, description="'id' or 'id@version'")
    metadata: dict[str, str] = Field(default_factory=dict)
    since: datetime | None = None
    until: datetime | None = None


def _selection(body: EstimateRequest) -> Selection:
    times = {key: naive_utc(value) for key in ("since", "until") if (value := getattr(body, key))}
    return Selection(**body.model_dump(include={"judges", "rubric", "metadata"}), **times)


def _invalid(field: str, messages: list[str]) -> JSONResponse:
    """422 in FastAPI's validation shape, naming the field."""
    detail = [{"loc": ["body", field], "msg": m, "type": "value_error"} for m in messages]
    return JSONResponse({"detail": detail}, status_code=422)


@router.post("/estimates", summary="Judge-corrected mean scores (PPI++), per judge and stratum")
async def create_estimate(body: EstimateRequest, request: Request, caller: GradesKey):
    """Over the caller's project's grades and judgments only (or the rows sent inline),
    computed in a report worker process (service/reporting/pool.py), off the request path."""
    options = EstimateOptions(**body.model_dump(include=set(EstimateOptions.model_fields)))
    pool = request.app.state.reports
    try:
        if body.grades is not None:
            try:
                rows = parse_records(body.grades)
            except GradeFormatError as exc:
                return _invalid("grades", exc.problems)
            report = await pool.run(corrected_means, rows, options, {"source": "request"})
        else:
            url = request.app.state.settings.database_url
            selection = _selection(body)
            report = await pool.run(
                estimate_over_database, url, caller.project, selection, options
            )
    except ValueError as exc:
        field, _, message = str(exc).partition(": ")
        return _invalid(field if message else "grades", [message or str(exc)])
    accept = request.headers.get("accept", "")
    if "text/html" in accept:
        return HTMLResponse(to_html(report))
    if "text/markdown" in accept:
        return PlainTextResponse(to_markdown(report), media_type="text/markdown")
    return JSONResponse(report)
