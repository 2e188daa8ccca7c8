"""Typed errors: one class per kind of refusal, each carrying the server's field errors."""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import BaseModel

from qadi_client.models import JudgeResponse


class FieldError(BaseModel):
    """One entry of FastAPI's `{"detail": [{"loc", "msg", "type"}]}`: which field, and why."""

    loc: list[str | int] = []
    msg: str
    type: str = "value_error"


class QadiError(Exception):
    """The service refused a call. `status_code`, the parsed `body`, its `detail` (every
    error of the service is `{"detail": [{"loc", "msg", "type"}]}`) and `field_errors`."""

    def __init__(self, status_code: int, body: Any, headers: httpx.Headers | None = None):
        self.status_code = status_code
        self.body = body
        self.detail = body.get("detail", body) if isinstance(body, dict) else body
        self.headers = headers or httpx.Headers()
        self.field_errors = field_errors(self.detail)
        super().__init__(f"{status_code}: {describe(self.detail)}")


class AuthError(QadiError):
    """401 (missing or invalid API key) or 403 (the key lacks the scope)."""


class NotFound(QadiError):
    """404: no such judgment, report or rubric."""


class Conflict(QadiError):
    """409: an Idempotency-Key reused with another body, or still in progress."""


class PayloadTooLarge(QadiError):
    """413: the body is over the service's size limit."""


class ValidationFailed(QadiError):
    """422: the input was refused; `field_errors[].loc` names each bad field."""


class RateLimited(QadiError):
    """429 after every retry was spent."""


class JudgesFailed(QadiError):
    """502: every judge failed (parse error, timeout, provider error); no score exists.

    `response` is the grading response sent beside `detail`, whose `results[].error` says
    why each judge failed."""

    @property
    def response(self) -> JudgeResponse:
        return JudgeResponse.model_validate(self.body)


class ServiceUnavailable(QadiError):
    """503 after every retry was spent (database outage, no judges configured, busy)."""


_BY_STATUS: dict[int, type[QadiError]] = {
    401: AuthError,
    403: AuthError,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationFailed,
    429: RateLimited,
    502: JudgesFailed,
    503: ServiceUnavailable,
}


def error_for(response: httpx.Response) -> QadiError:
    """The typed error of a non-2xx response, with its parsed body (or its text, from a
    proxy in front of the service)."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    kind = _BY_STATUS.get(response.status_code, QadiError)
    return kind(response.status_code, body, response.headers)


def field_errors(detail: Any) -> list[FieldError]:
    """The service's list of `{loc, msg, type}`; anything else (a proxy's text) is one error
    without a location."""
    if not isinstance(detail, list):
        return [FieldError(msg=str(detail))]
    return [
        FieldError.model_validate(entry, strict=False)
        if isinstance(entry, dict) and "msg" in entry
        else FieldError(msg=str(entry))
        for entry in detail
    ]


def describe(detail: Any) -> str:
    if isinstance(detail, list):
        return "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', []))}: {e.get('msg')}"
            if isinstance(e, dict)
            else str(e)
            for e in detail
        )
    return str(detail)
