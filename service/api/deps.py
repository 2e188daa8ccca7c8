"""Dependencies shared by the routers: the app's services and API-key scopes."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from service.auth import has_scope, verify_key
from service.db.engine import session_scope

bearer = HTTPBearer(auto_error=False, description="API key as 'Authorization: Bearer qadi_...'")
header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key")


def require(scope: str) -> Callable[..., int | None]:
    """A dependency that admits a key with `scope` (or admin); returns the key's row id."""

    def check(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
        api_key: str | None = Depends(header),
    ) -> int | None:
        state = request.app.state
        if state.settings.auth == "off":
            return None
        secret = credentials.credentials if credentials else api_key
        if not secret:
            raise HTTPException(
                401,
                "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key'",
                headers={"WWW-Authenticate": "Bearer"},
            )
        with session_scope(state.sessions) as session:
            row = verify_key(session, secret)
            if row is None:
                raise HTTPException(
                    401, "invalid or revoked API key", headers={"WWW-Authenticate": "Bearer"}
                )
            if not has_scope(row, scope):
                raise HTTPException(403, f"this API key lacks the '{scope}' scope")
            return row.id

    return check
