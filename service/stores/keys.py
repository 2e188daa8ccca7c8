"""API keys: random secrets shown once, stored as SHA-256 hashes, each with scopes.

Keys are 32 random bytes, so a fast hash is enough (no password-stretching needed); the
prefix lets a key be found without scanning every hash.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.schema import ApiKeyRow
from service.stores.projects import DEFAULT_PROJECT, require_project

SCOPES = ("judge", "grades", "admin")


class ScopeError(ValueError):
    """Bad key creation input (unknown scope)."""


def _hash(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()


def create_key(
    session: Session, name: str, scopes: list[str], project: str = DEFAULT_PROJECT
) -> str:
    """A new key of `project` (which must exist: `service.projects.ensure_project`)."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ScopeError(f"scopes: unknown {unknown or 'none given'}; choose from {list(SCOPES)}")
    require_project(session, project)
    prefix = secrets.token_hex(4)
    key = f"qadi_{prefix}_{secrets.token_urlsafe(32)}"
    session.add(
        ApiKeyRow(
            name=name,
            prefix=prefix,
            key_hash=_hash(key),
            scopes=",".join(sorted(scopes)),
            project=project,
        )
    )
    session.flush()
    return key


def verify_key(session: Session, key: str) -> ApiKeyRow | None:
    """The active key row for this secret, or None (unknown, malformed, revoked)."""
    parts = key.split("_")
    if len(parts) < 3 or parts[0] != "qadi":
        return None
    row = session.scalar(select(ApiKeyRow).where(ApiKeyRow.prefix == parts[1]))
    if row is None or row.revoked_at is not None:
        return None
    return row if hmac.compare_digest(row.key_hash, _hash(key)) else None


def revoke_key(session: Session, prefix: str) -> bool:
    row = session.scalar(select(ApiKeyRow).where(ApiKeyRow.prefix == prefix))
    if row is None:
        return False
    row.revoked_at = datetime.now(UTC).replace(tzinfo=None)
    return True


def has_scope(row: ApiKeyRow, scope: str) -> bool:
    granted = set(row.scopes.split(","))
    return scope in granted or "admin" in granted


def list_keys(session: Session) -> list[ApiKeyRow]:
    """Every key, oldest first (their hashes, never secrets)."""
    return list(session.scalars(select(ApiKeyRow).order_by(ApiKeyRow.id)).all())
