"""POST /grades and GET /grades: human grades in the interchange format (JSON or CSV)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from collections.abc import Iterator
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from calibration.formats.interchange import (
    WORKBOOK_HINT,
    WORKBOOK_MAGIC,
    GradeFormatError,
    GradeRow,
    neutralise_formula,
    parse_csv,
    parse_jsonl,
    parse_records,
    to_records,
)
from service.api.deps import GradesKey
from service.api.errors import error_responses, http_error, invalid
from service.api.json_checks import InputProblem, strict_loads
from service.api.pagination import decode_cursor, encode_cursor, query_pairs
from service.api.schemas import GradesBody, UploadResult
from service.db.engine import session_scope
from service.stores.grades import (
    GradeFilter,
    check_project,
    check_storable,
    grade_attribute_names,
    grade_from_row,
    grades_page,
    stream_grades,
    upsert_grades,
)
from service.stores.projects import Tenant

router = APIRouter(tags=["grades"], responses=error_responses(401, 403, 413, 422, 503))


def _text(data: bytes, field: str) -> str:
    if data.startswith(WORKBOOK_MAGIC):
        raise invalid(f"{field}: {WORKBOOK_HINT}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise invalid(f"{field}: not UTF-8 text (CSV, JSON or JSONL expected)") from None


async def _rows_from_request(request: Request) -> tuple[list[GradeRow], int]:
    """The rows, and the number of the first (2 in CSV, where the header is row 1)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        form = await request.form()
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise invalid("file: upload the grades as a form field named 'file'")
        text = _text(await upload.read(), "file")
        name = (upload.filename or "").lower()
        content_type = "text/csv"
        if name.endswith((".jsonl", ".ndjson")):
            content_type = "application/jsonl"
        elif name.endswith(".json"):  # a list of rows or {"grades": [...]}, as a JSON body
            content_type = "application/json"
    else:
        text = _text(await request.body(), "body")
    first_row = 2 if content_type == "text/csv" else 1
    return await asyncio.to_thread(_parse_body, content_type, text, first_row), first_row


def _parse_body(content_type: str, raw: str, first_row: int) -> list[GradeRow]:
    """Parse and validate off the event loop: 30k rows take a noticeable fraction of a second."""
    rows = _decode_rows(content_type, raw)
    if "\x00" not in raw and "\\u" not in raw:
        return rows  # decoded UTF-8 has no lone surrogates; only a \u escape could add one
    check_storable(rows, first_row=first_row)
    return rows


def _decode_rows(content_type: str, raw: str) -> list[GradeRow]:
    if content_type == "text/csv":
        return parse_csv(raw)
    if content_type in ("application/x-ndjson", "application/jsonl"):
        return parse_jsonl(raw)
    try:
        data = strict_loads(raw)
    except InputProblem as exc:
        raise http_error(422, ["body", *exc.path], str(exc)) from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one JSON value per line: JSON Lines
            return parse_jsonl(raw)
        raise http_error(422, ["body"], f"not valid JSON ({exc.msg})") from None
    records = data if isinstance(data, list) else None
    if records is None:
        try:
            records = GradesBody.model_validate(data).grades
        except ValidationError:
            raise http_error(
                422, ["body"], 'expected {"grades": [...]} or a list of grade rows'
            ) from None
    return parse_records(records)


@router.post(
    "/grades",
    response_model=UploadResult,
    response_model_exclude_none=True,
    summary="Import grades (JSON, JSONL, CSV body or multipart file upload)",
    openapi_extra={
        "requestBody": {
            "content": {
                "application/json": {"schema": GradesBody.model_json_schema()},
                "text/csv": {
                    "schema": {"type": "string"},
                    "example": "item_id,rater,rater_kind,score,dialect\n"
                    "iraq-0001,sme-iq-1,human,66.7,iraqi\n",
                },
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                    }
                },
            }
        }
    },
)
async def import_grades(request: Request, caller: GradesKey) -> dict[str, Any]:
    """Into the caller's project: another project's (item_id, rater) pairs are untouched,
    and rows whose `project` names another project are refused."""
    try:
        rows, first_row = await _rows_from_request(request)
        check_project(rows, caller.project, first_row)
    except GradeFormatError as exc:
        raise HTTPException(422, exc.problems) from None
    sessions = request.app.state.sessions
    return await asyncio.to_thread(_store, sessions, caller.project, rows, first_row)


def _store(sessions, project: str, rows: list[GradeRow], first_row: int) -> dict[str, Any]:
    with session_scope(sessions) as session:
        counts = upsert_grades(session, project, rows, first_row)
    unfilled = getattr(rows, "unfilled", [])
    return {**counts, "unfilled": len(unfilled)} if unfilled else counts


class GradeOut(BaseModel):
    """A stored grade as an interchange row; every key besides these is an attribute of the
    item. `project` says whose grade it is: an admin key lists every project's."""

    model_config = ConfigDict(extra="allow")

    project: str
    item_id: str
    rater: str
    rater_kind: Literal["human", "judge"]
    score: float
    criteria: dict[str, bool] | None = None
    inclusion_prob: float | None = None
    confidence: float | None = None
    rationale: str | None = Field(default=None, description="the grader's reason")


class GradePage(BaseModel):
    items: list[GradeOut]
    next_cursor: str | None


@router.get(
    "/grades",
    response_model=GradePage,
    response_model_exclude_unset=True,
    summary="Stored grades, filterable; JSON pages or all rows as CSV (each with its project)",
)
def list_grades(
    request: Request,
    caller: GradesKey,
    item_id: str | None = Query(None, max_length=256),
    rater: str | None = Query(None, max_length=256),
    rater_kind: str | None = Query(
        None,
        pattern="^(human|judge)$",
        description="judge: judge scores imported as grades (a grades file, Inspect, lm-eval) "
        "only. The service's own judgments are not grades and are not listed here: "
        "GET /judgments lists them, and `qadi sme queue --from-db` queues SME rounds from them",
    ),
    attribute: list[str] = Query(default=[], description="key=value, repeatable"),
    format: str = Query("json", pattern="^(json|csv)$", description="csv: every row, unpaged"),
    cursor: str | None = Query(None, max_length=512),
    limit: int = Query(500, ge=1),
) -> Any:
    where = GradeFilter(item_id, rater, rater_kind, query_pairs(attribute, "attribute"))
    after = None
    if cursor:
        stamp, last_id = decode_cursor(cursor)
        if not last_id.isdigit():
            raise invalid("cursor: not a cursor returned by this API", "query")
        after = (stamp, int(last_id))
    if format == "csv":
        rows = _csv(request.app.state.sessions, caller.tenant, where)
        return StreamingResponse(rows, media_type="text/csv")
    limit = min(limit, request.app.state.settings.page_size_max)
    with session_scope(request.app.state.sessions) as session:
        rows = grades_page(session, caller.tenant, where, after, limit + 1)
    page, more = rows[:limit], len(rows) > limit
    records = to_records(grade_from_row(r) for r in page)
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more else None
    return {"items": records, "next_cursor": next_cursor}


def _csv(sessions, tenant: Tenant, where: GradeFilter) -> Iterator[str]:
    """All matching rows, streamed: one pass collects the attribute columns (the header
    comes first), a second writes the rows."""
    with session_scope(sessions) as session:
        columns = [
            "item_id", "rater", "rater_kind", "score", "criteria", "inclusion_prob", "confidence",
            "rationale", "project",
        ]  # fmt: skip
        columns += [k for k in grade_attribute_names(session, tenant, where) if k not in columns]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        for row in stream_grades(session, tenant, where):
            record = to_records([row])[0]
            if "criteria" in record:
                record["criteria"] = json.dumps(record["criteria"])
            writer.writerow({k: neutralise_formula(v) for k, v in record.items()})
            if out.tell() > 64 * 1024:
                yield out.getvalue()
                out.seek(0)
                out.truncate()
        yield out.getvalue()
