"""Short-lived signed links to a calibration report, so a person can open it in a browser
while every API route keeps its header-only key (issue 16 item 3).

A link carries the report id, an expiry (Unix seconds) and an HMAC-SHA256 of both under the
server secret `QADI_REPORT_LINK_SECRET` (RFC 2104, Python's `hmac`); the signature is checked
in constant time (`hmac.compare_digest`). It grants reading that one report until it expires
and nothing else. Without a configured secret one is drawn on first use and kept in the
database (`service_secrets`), so every worker and replica on it signs and checks alike;
whoever can read that table can read the reports anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

from sqlalchemy.orm import Session

from service.settings import Settings
from service.stores.secrets import shared_secret

MAX_TTL_SECONDS = 7 * 24 * 3600
DEFAULT_TTL_SECONDS = 3600


class LinkRefused(ValueError):
    """The link is forged, altered or expired; `field` names the query parameter at fault."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class SignedLink:
    report_id: str
    expires: int
    signature: str


def link_secret(settings: Settings, session: Session) -> bytes:
    configured = settings.report_link_secret
    if configured is not None:
        return configured.get_secret_value().encode()
    return shared_secret(session, "report-links").encode()


def _signature(secret: bytes, report_id: str, expires: int) -> str:
    message = f"calibration-report:{report_id}:{expires}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def sign(secret: bytes, report_id: str, ttl_seconds: int, now: float | None = None) -> SignedLink:
    expires = int(now if now is not None else time.time()) + ttl_seconds
    return SignedLink(report_id, expires, _signature(secret, report_id, expires))


def verify(
    secret: bytes, report_id: str, expires: int, signature: str, now: float | None = None
) -> None:
    """Raise `LinkRefused` unless the signature is this report's and the link is current."""
    expected = _signature(secret, report_id, expires).encode()
    if not hmac.compare_digest(expected, signature.encode("utf-8", "surrogateescape")):
        raise LinkRefused("signature", "invalid signature for this report and expiry")
    if expires < (now if now is not None else time.time()):
        raise LinkRefused("expires", "this link has expired: ask for a new one")
