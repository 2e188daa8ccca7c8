"""Secrets every process and replica on one database shares, drawn on first use (the key of
signed report links when QADI_REPORT_LINK_SECRET is not set: a per-process key would fail on
every worker but the one that minted the link)."""

from __future__ import annotations

import secrets

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.db.schema import ServiceSecretRow


def shared_secret(session: Session, name: str) -> str:
    """The shared secret `name`, drawn by whichever process asks first (a concurrent first
    draw loses the insert and reads the winner's)."""
    stored = session.get(ServiceSecretRow, name)
    if stored is None:
        try:
            with session.begin_nested():
                session.add(ServiceSecretRow(name=name, value=secrets.token_hex(32)))
        except IntegrityError:
            pass
        stored = session.get(ServiceSecretRow, name)
    return stored.value
