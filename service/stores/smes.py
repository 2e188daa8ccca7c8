"""The workbench's people and how they sign in: SMEs, senior SMEs and leads of a project,
their one-time invite links and their browser sessions.

A link is a random secret shown once (only its SHA-256 is stored, like API keys): it works
once, until it expires, unless revoked. Opening it starts a session whose secret lives in an
httpOnly cookie (again only its hash is stored) with a CSRF token every form sends back.
Revoking a person closes her sessions and links at once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from service.db.schema import SmeInviteRow, SmeRow, WebSessionRow, utcnow
from service.stores.projects import require_project

Role = Literal["sme", "senior", "lead"]
ROLES: tuple[Role, ...] = ("sme", "senior", "lead")
_HANDLE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_TAG = re.compile(r"^[A-Za-z0-9_]{1,64}=[^\s=]{1,128}$")


INVITE_PATH = "/workbench/invite/"


def invite_url(base_url: str, secret: str) -> str:
    """The link a person signs in by (the page that uses it: service/web/signin.py)."""
    return f"{base_url.rstrip('/')}{INVITE_PATH}{secret}"


class PeopleError(ValueError):
    """Bad input about a person (a malformed handle or tag, an unknown role or person)."""


class SignInRefused(Exception):
    """An invite link or session that opens nothing; the message says why, for the page."""


@dataclass(frozen=True)
class Person:
    """Who a session belongs to."""

    id: int
    project: str
    handle: str
    display_name: str
    role: Role
    tags: tuple[str, ...]

    @property
    def may_adjudicate(self) -> bool:
        return self.role in ("senior", "lead")

    @property
    def is_lead(self) -> bool:
        return self.role == "lead"


@dataclass(frozen=True)
class SignedIn:
    """An open session: its person and the CSRF token its forms carry."""

    person: Person
    csrf_token: str
    expires_at: datetime


def digest(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()


def _person(row: SmeRow) -> Person:
    return Person(row.id, row.project, row.handle, row.display_name, row.role, tuple(row.tags))


def check_tags(tags: list[str]) -> list[str]:
    for tag in tags:
        if not _TAG.fullmatch(tag):
            raise PeopleError(
                f"tag: '{tag}' is not attribute=value (e.g. dialect=egy; write a space in the "
                "value as _, e.g. dialect=Gulf_Arabic)"
            )
    return sorted(set(tags))


def add_person(
    session: Session,
    project: str,
    handle: str,
    display_name: str | None = None,
    role: Role | None = None,
    tags: list[str] | None = None,
) -> Person:
    """A new person of `project` (role `sme` unless given), or the existing one with this
    handle, active again if she was revoked, with what is given changed and the rest kept:
    inviting her again for a lost link must not turn a lead into an SME."""
    require_project(session, project)
    if not _HANDLE.fullmatch(handle):
        raise PeopleError(
            f"handle: '{handle}' is not a handle (lowercase letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 64); it is her rater name in the grades"
        )
    if role is not None and role not in ROLES:
        raise PeopleError(f"role: '{role}' is not one of {', '.join(ROLES)}")
    checked = check_tags(tags) if tags is not None else None
    row = session.scalar(select(SmeRow).where(SmeRow.project == project, SmeRow.handle == handle))
    if row is None:
        row = SmeRow(
            project=project, handle=handle, display_name=handle, role="sme", tags=[],
            created_at=utcnow(),
        )  # fmt: skip
        session.add(row)
    if display_name:
        row.display_name = display_name[:256]
    if role is not None:
        row.role = role
    if checked is not None:
        row.tags = checked
    row.revoked_at = None
    session.flush()
    return _person(row)


def find_person(session: Session, project: str, handle: str) -> Person:
    row = session.scalar(select(SmeRow).where(SmeRow.project == project, SmeRow.handle == handle))
    if row is None:
        raise PeopleError(f"handle: no person '{handle}' in project {project}")
    return _person(row)


def people(session: Session, project: str) -> list[tuple[Person, datetime | None]]:
    """Everyone of the project, with when they were revoked (None: active)."""
    rows = session.scalars(select(SmeRow).where(SmeRow.project == project).order_by(SmeRow.handle))
    return [(_person(row), row.revoked_at) for row in rows]


def invite(session: Session, person: Person, hours: float) -> str:
    """A one-time sign-in secret for `person`, valid `hours`; only its hash is kept. Her
    earlier links that were never used stop working: a new link is asked for when the old
    one was lost, and a lost link should open nothing."""
    revoke_invites(session, person)
    secret = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        SmeInviteRow(
            project=person.project,
            sme_id=person.id,
            token_hash=digest(secret),
            created_at=now,
            expires_at=now + timedelta(hours=hours),
        )
    )
    session.flush()
    return secret


def invited(session: Session, secret: str) -> Person:
    """Whom a link invites, without using it (the page that asks her to sign in)."""
    return _usable_invite(session, secret)[1]


def open_session(session: Session, secret: str, hours: float) -> tuple[str, SignedIn]:
    """Use an invite link once: a new session (its cookie secret, and what it is). A second
    use, an expired or revoked link, or a revoked person is SignInRefused."""
    row, person = _usable_invite(session, secret)
    now = utcnow()
    used = session.execute(  # one winner when the link is opened twice at once
        update(SmeInviteRow)
        .where(SmeInviteRow.id == row.id, SmeInviteRow.used_at.is_(None))
        .values(used_at=now)
    )
    if used.rowcount != 1:
        raise SignInRefused("this link was used already; ask your lead for a new one")
    cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
    expires = now + timedelta(hours=hours)
    session.add(
        WebSessionRow(
            id=digest(cookie),
            project=person.project,
            sme_id=person.id,
            csrf_token=csrf,
            created_at=now,
            expires_at=expires,
        )
    )
    session.flush()
    return cookie, SignedIn(person, csrf, expires)


def _usable_invite(session: Session, secret: str) -> tuple[SmeInviteRow, Person]:
    found = session.execute(
        select(SmeInviteRow, SmeRow)
        .join(SmeRow, SmeRow.id == SmeInviteRow.sme_id)
        .where(SmeInviteRow.token_hash == digest(secret))
    ).first()
    if found is None:
        raise SignInRefused("this link is not a sign-in link of this workbench")
    row, person = found
    if row.revoked_at is not None or person.revoked_at is not None:
        raise SignInRefused("this link was withdrawn; ask your lead for a new one")
    if row.used_at is not None:
        raise SignInRefused("this link was used already; ask your lead for a new one")
    if row.expires_at <= utcnow():
        raise SignInRefused("this link has expired; ask your lead for a new one")
    return row, _person(person)


def signed_in(session: Session, cookie: str) -> SignedIn | None:
    """The open session a cookie belongs to, or None (unknown, expired, revoked)."""
    found = session.execute(
        select(WebSessionRow, SmeRow)
        .join(SmeRow, SmeRow.id == WebSessionRow.sme_id)
        .where(WebSessionRow.id == digest(cookie))
    ).first()
    if found is None:
        return None
    row, person = found
    if row.revoked_at or person.revoked_at or row.expires_at <= utcnow():
        return None
    return SignedIn(_person(person), row.csrf_token, row.expires_at)


def close_session(session: Session, cookie: str) -> None:
    session.execute(
        update(WebSessionRow)
        .where(WebSessionRow.id == digest(cookie))
        .values(revoked_at=utcnow())
    )


def revoke_invites(session: Session, person: Person) -> int:
    """Withdraw her unused links (her sessions stay)."""
    done = session.execute(
        update(SmeInviteRow)
        .where(
            SmeInviteRow.sme_id == person.id,
            SmeInviteRow.used_at.is_(None),
            SmeInviteRow.revoked_at.is_(None),
        )
        .values(revoked_at=utcnow())
    )
    return done.rowcount


def revoke_person(session: Session, person: Person) -> None:
    """She signs in no more: her links and sessions stop working at once. Her grades stay."""
    now = utcnow()
    session.execute(update(SmeRow).where(SmeRow.id == person.id).values(revoked_at=now))
    revoke_invites(session, person)
    session.execute(
        update(WebSessionRow)
        .where(WebSessionRow.sme_id == person.id, WebSessionRow.revoked_at.is_(None))
        .values(revoked_at=now)
    )
