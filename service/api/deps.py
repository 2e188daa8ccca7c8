"""Dependencies shared by the routers, as typed aliases: a database session, the grading
use case, and the caller: an API key with a scope (`JudgeKey`, `GradesKey`), which carries
the key's project (`Caller.tenant`). A route scopes every read and write by that tenant
(service/stores/projects.py); a new route gets it by taking `JudgeKey` or `GradesKey`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from service.api.errors import AUTH, http_error
from service.db.engine import session_scope
from service.judging.grading import GradingService
from service.stores.keys import has_scope, verify_key
from service.stores.projects import Tenant

bearer = HTTPBearer(auto_error=False, description="API key as 'Authorization: Bearer qadi_...'")
header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key")


@dataclass(frozen=True)
class Caller:
    """Who is asking: the key's row id (None without keys), and the project it may read and
    write (an admin key reads every project's data; it writes and computes in its own)."""

    key_id: int | None
    tenant: Tenant

    @property
    def project(self) -> str:
        return self.tenant.project


def require(scope: str) -> Callable[..., Awaitable[Caller]]:
    """A dependency that admits a key with `scope` (or admin) and says who it is. Without
    keys (QADI_AUTH=off) every caller is the project QADI_PROJECT names.

    Async, so a request without keys takes no thread (FastAPI runs a sync dependency in its
    thread pool: a hop per request on the hot path); the key lookup, a database read, runs
    in that pool."""

    async def check(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
        api_key: str | None = Depends(header),
    ) -> Caller:
        state = request.app.state
        if state.settings.auth == "off":
            return Caller(None, Tenant(state.settings.project))
        secret = credentials.credentials if credentials else api_key
        if not secret:
            raise http_error(
                401,
                AUTH,
                "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return await run_in_threadpool(_caller, state.sessions, secret, scope)

    return check


def _caller(sessions: sessionmaker[Session], secret: str, scope: str) -> Caller:
    """The key's caller, or the 401/403 that refuses it."""
    with session_scope(sessions) as session:
        row = verify_key(session, secret)
        if row is None:
            raise http_error(
                401, AUTH, "invalid or revoked API key", {"WWW-Authenticate": "Bearer"}
            )
        if not has_scope(row, scope):
            raise http_error(403, AUTH, f"this API key lacks the '{scope}' scope")
        return Caller(row.id, Tenant(row.project, sees_all=has_scope(row, "admin")))


def _session(request: Request) -> Iterator[Session]:
    """A session whose transaction commits when the endpoint returns."""
    with session_scope(request.app.state.sessions) as session:
        yield session


async def _judging(request: Request) -> GradingService:
    return request.app.state.judging


SessionDep = Annotated[Session, Depends(_session)]
JudgingDep = Annotated[GradingService, Depends(_judging)]
JudgeKey = Annotated[Caller, Depends(require("judge"))]
GradesKey = Annotated[Caller, Depends(require("grades"))]
