"""The one place where errors become HTTP: status codes, headers and bodies.

Every error body has one shape, FastAPI's `{"detail": [{"loc", "msg", "type"}]}`: a field's
error names the field in `loc`; an error about the request as a whole names where it comes
from (`["header", "Authorization"]`, `["path", "judgment_id"]`, `["body"]`) or is `[]` for
the service's own state (503). A failed grade also carries the full grading response beside
`detail`. Handlers here rewrite any other shape (a plain `HTTPException` string) into this one.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from service import metrics
from service.api.schemas import ErrorBody, FailedGradeBody
from service.db.engine import is_unavailable, recover
from service.errors import (
    Busy,
    Conflict,
    NoJudgeAnswered,
    NotConfigured,
    RateLimited,
    Rejected,
    ServiceError,
    StorageUnavailable,
)

# The `type` of an error that is not a field's validation error, and where it comes from.
KIND = {
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    422: "value_error",
    429: "rate_limited",
    502: "no_verdict",
    503: "unavailable",
}
AUTH = ["header", "Authorization"]
LOC = {
    401: AUTH,
    403: AUTH,
    404: ["path"],
    429: AUTH,
    409: ["header", "Idempotency-Key"],
    413: ["body"],
    422: ["body"],
}

DESCRIPTIONS = {
    401: "missing or invalid API key",
    403: "the API key lacks the scope this route needs",
    404: "no such resource",
    409: "Idempotency-Key reused with another body, or still in progress",
    413: "request body over the size limit",
    422: "invalid input; `detail[].loc` names the field",
    429: "the key's rate limit; see Retry-After",
    502: "every judge answered without a usable verdict; no score",
    503: "the database is unavailable, the service is at capacity, or no judges are "
    "configured; see Retry-After",
}


def problem(loc: list[Any], message: str, kind: str = "value_error") -> dict[str, Any]:
    return {"loc": loc, "msg": message, "type": kind}


def field_error(loc: list[Any], message: str, kind: str = "value_error") -> dict[str, Any]:
    return {"detail": [problem(loc, message, kind)]}


def http_error(
    status: int, loc: list[Any], message: str, headers: dict[str, str] | None = None
) -> HTTPException:
    """An HTTPException whose detail is already in the one shape (raise it from a route)."""
    return HTTPException(status, [problem(loc, message, KIND.get(status, "error"))], headers)


def invalid(message: str, root: str = "body") -> HTTPException:
    """A 422 for a layer's 'field: message' error, located under `root` (body or query)."""
    return HTTPException(422, [located(422, message, root)])


def error_responses(*codes: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these status codes, each with the error body's schema;
    `described` overrides a description by code (`_404="no judgment with this id"`)."""
    return {
        code: {
            "model": FailedGradeBody if code == 502 else ErrorBody,
            "description": described.get(f"_{code}", DESCRIPTIONS[code]),
        }
        for code in codes
    }


# "criteria.0.kind: must be ..." - the messages of the layers below start with the field.
_FIELD_FIRST = re.compile(r"^([A-Za-z_][\w]*(?:\.[\w]+)*): (.+)$", re.DOTALL)


def located(status: int, message: str, root: str = "body") -> dict[str, Any]:
    """A message as one error item; a leading 'field.path: ' becomes the `loc` under
    `root` (body or query) for a 422, else the status's usual place."""
    kind = KIND.get(status, "error")
    message = message.removeprefix(f"{root}: ")  # "body: criteria: ..." names criteria
    match = _FIELD_FIRST.match(message) if status == 422 else None
    if match is None:
        return problem(list(LOC.get(status, [])), message, kind)
    path = [int(p) if p.isdigit() else p for p in match.group(1).split(".")]
    return problem([root, *path], match.group(2), kind)


def normalized(status: int, detail: Any) -> list[dict[str, Any]]:
    """`detail` of any shape as a list of `{loc, msg, type}` items."""
    items = detail if isinstance(detail, list) else [detail]
    return [
        item
        if isinstance(item, dict) and {"loc", "msg", "type"} <= item.keys()
        else located(status, str(item))
        for item in items
    ]


def error_response(exc: ServiceError, loc_prefix: tuple[Any, ...] = ("body",)) -> JSONResponse:
    """The HTTP answer for a use-case error (`loc_prefix` places a batch item's fields)."""
    if isinstance(exc, Rejected):
        loc = [*loc_prefix, *exc.field.split(".")] if exc.field else list(loc_prefix)
        return JSONResponse(field_error(loc, exc.message, exc.kind), 422)
    if isinstance(exc, NoJudgeAnswered):
        status = 503 if exc.outage else 502
        body = {**exc.payload, "detail": [problem([], exc.message, KIND[status])]}
        return JSONResponse(body, status, headers={"Retry-After": "5"} if exc.outage else None)
    headers = {"Retry-After": str(exc.retry_after)} if getattr(exc, "retry_after", None) else None
    status = {
        Conflict: 409,
        Busy: 503,
        RateLimited: 429,
        NotConfigured: 503,
        StorageUnavailable: 503,
    }.get(type(exc), 500)
    if isinstance(exc, StorageUnavailable):
        metrics.STORAGE_UNAVAILABLE.inc()
    loc = list(LOC.get(status, []))
    return JSONResponse(
        {"detail": [problem(loc, exc.message, KIND.get(status, "error"))]}, status, headers=headers
    )


def validation_errors(exc: RequestValidationError, request: Request) -> list[dict[str, Any]]:
    """A validation error's items as `{loc, msg, type}` only: the rejected `input` is not
    echoed (a refused NaN cannot be written as JSON, bytes that are not UTF-8 cannot be
    decoded, and either would turn a clear 422 into a 500) and pydantic's `ctx` is dropped
    (the message already says it). A body that is not an object, sent as something other
    than JSON, is told how to send it."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    sent_as_json = kind == "application/json" or kind.endswith("+json")
    shown = f"'{kind}'" if kind else "no Content-Type"
    not_json = f"must be a JSON object sent as Content-Type: application/json (got {shown})"
    return [
        problem(
            list(e["loc"]),
            not_json
            if not sent_as_json and tuple(e["loc"]) == ("body",) and e["type"] in _NOT_AN_OBJECT
            else e["msg"],
            e["type"],
        )
        for e in exc.errors()
    ]


# pydantic's words when a body is not an object: the usual cause is a body sent as text
_NOT_AN_OBJECT = {"model_attributes_type", "dict_type"}


def install(app: FastAPI) -> None:
    """Register the handlers on the app."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_errors(exc, request)}, 422)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Routing errors (404, 405) and every `HTTPException`, in the one shape."""
        return JSONResponse(
            {"detail": normalized(exc.status_code, exc.detail)},
            exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(DBAPIError)
    async def _database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        """Any endpoint: a database outage is a 503 the client may retry, never a 500."""
        if not is_unavailable(exc):
            raise exc
        recover(request.app.state.sessions)
        return error_response(
            StorageUnavailable(
                f"the database is unavailable ({type(exc.orig).__name__}); retry shortly"
            )
        )
