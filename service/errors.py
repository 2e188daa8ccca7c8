"""What can go wrong in a use case, as types. The layers below HTTP raise these; only
`service/api/errors.py` turns them into status codes and bodies."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """Base of the typed errors; `message` is for a person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Rejected(ServiceError):
    """The input cannot be used; `field` names it (dotted path below the body); `kind` is
    the error's `type` (`guard_refused` when the self-evaluation guard refuses to grade)."""

    def __init__(self, field: str | None, message: str, kind: str = "value_error") -> None:
        super().__init__(message)
        self.field = field
        self.kind = kind


class Conflict(ServiceError):
    """The Idempotency-Key is in use: with another body, or by a request still running."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Busy(ServiceError):
    """Too many judge calls in flight; retry shortly."""

    retry_after = 1


class RateLimited(ServiceError):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NotConfigured(ServiceError):
    """The service has no judges configured (a restart with a judges file fixes it)."""

    retry_after = 60


class StorageUnavailable(ServiceError):
    """The database cannot be reached or written; nothing was lost, retry later."""

    retry_after = 5


class NoJudgeAnswered(ServiceError):
    """Every judge failed. `outage` when a provider failed (retry later) rather than every
    judge answering without a usable verdict. `payload` is the full grading response."""

    def __init__(self, message: str, payload: dict[str, Any], outage: bool) -> None:
        super().__init__(message)
        self.payload = payload
        self.outage = outage
