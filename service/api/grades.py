"""POST /grades and GET /grades: human grades in the interchange format (JSON or CSV)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import ValidationError
from sqlalchemy import select

from calibration.interchange import (
    GradeFormatError,
    GradeRow,
    parse_csv,
    parse_jsonl,
    parse_records,
    to_records,
)
from service.api.deps import require
from service.api.pagination import decode_cursor, encode_cursor, query_pairs
from service.api.schemas import GradesBody
from service.db.engine import session_scope
from service.db.filters import after
from service.db.schema import HumanGradeRow
from service.grade_store import grade_from_row, upsert_grades

router = APIRouter(tags=["grades"])


def _text(data: bytes, field: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HTTPException(422, f"{field}: not UTF-8 text (CSV, JSON or JSONL expected)") from None


async def _rows_from_request(request: Request) -> list[GradeRow]:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        form = await request.form()
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise HTTPException(422, "file: upload the grades as a form field named 'file'")
        text = _text(await upload.read(), "file")
        name = (upload.filename or "").lower()
        return parse_jsonl(text) if name.endswith((".jsonl", ".json")) else parse_csv(text)
    raw = _text(await request.body(), "body")
    if content_type == "text/csv":
        return parse_csv(raw)
    if content_type in ("application/x-ndjson", "application/jsonl"):
        return parse_jsonl(raw)
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise HTTPException(422, f"body: not valid JSON ({exc.msg})") from None
    records = data if isinstance(data, list) else None
    if records is None:
        try:
            records = GradesBody.model_validate(data).grades
        except ValidationError:
            raise HTTPException(
                422, 'body: expected {"grades": [...]} or a list of grade rows'
            ) from None
    return parse_records(records)


@router.post(
    "/grades",
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
async def import_grades(
    request: Request, _: int | None = Depends(require("grades"))
) -> dict[str, int]:
    try:
        rows = await _rows_from_request(request)
    except GradeFormatError as exc:
        raise HTTPException(422, exc.problems) from None
    with session_scope(request.app.state.sessions) as session:
        return upsert_grades(session, rows)


@router.get("/grades", summary="Stored grades, filterable; JSON pages or CSV")
def list_grades(
    request: Request,
    item_id: str | None = Query(None, max_length=256),
    rater: str | None = Query(None, max_length=256),
    rater_kind: str | None = Query(None, pattern="^(human|judge)$"),
    attribute: list[str] = Query(default=[], description="key=value, repeatable"),
    format: str = Query("json", pattern="^(json|csv)$"),
    cursor: str | None = Query(None, max_length=512),
    limit: int = Query(500, ge=1),
    _: int | None = Depends(require("grades")),
) -> Any:
    limit = min(limit, request.app.state.settings.page_size_max)
    query = select(HumanGradeRow)
    if item_id:
        query = query.where(HumanGradeRow.item_id == item_id)
    if rater:
        query = query.where(HumanGradeRow.rater == rater)
    if rater_kind:
        query = query.where(HumanGradeRow.rater_kind == rater_kind)
    for key, value in query_pairs(attribute, "attribute").items():
        query = query.where(HumanGradeRow.attributes[key].as_string() == value)
    if cursor:
        stamp, last_id = decode_cursor(cursor)
        if not last_id.isdigit():
            raise HTTPException(422, "cursor: not a cursor returned by this API")
        query = query.where(after(HumanGradeRow.created_at, HumanGradeRow.id, stamp, int(last_id)))
    query = query.order_by(HumanGradeRow.created_at, HumanGradeRow.id).limit(limit + 1)
    with session_scope(request.app.state.sessions) as session:
        rows = session.scalars(query).all()
    page, more = rows[:limit], len(rows) > limit
    records = to_records(grade_from_row(r) for r in page)
    if format == "csv":
        return PlainTextResponse(_csv(records), media_type="text/csv")
    next_cursor = encode_cursor(page[-1].created_at, page[-1].id) if more else None
    return {"items": records, "next_cursor": next_cursor}


def _csv(records: list[dict[str, Any]]) -> str:
    columns = ["item_id", "rater", "rater_kind", "score", "criteria"]
    for record in records:
        columns += [k for k in record if k not in columns]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns)
    writer.writeheader()
    for record in records:
        row = dict(record)
        if "criteria" in row:
            row["criteria"] = json.dumps(row["criteria"])
        writer.writerow(row)
    return out.getvalue()
