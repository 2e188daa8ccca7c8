"""Projects: the namespace each team's data lives in, below HTTP and the CLI alike.

Every API key belongs to one project. A key reads and writes its own project's grade
requests, judgments, answers, grades, rubrics, reports and probe runs; an admin-scope key
also reads every other project's (`Tenant.sees_all`), while what it writes and computes is
in its own. The `default` project (made by migration 0009) holds single-team use, so a
service with one team behaves as before projects existed.

Judge-call cache keys are scoped too (`cache_scope`): a project never reuses another's
verdict, so `cached: true` cannot tell one team that another graded the same text. The
default project's keys are the unscoped keys of before, so its stored verdicts stay reusable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, true
from sqlalchemy.orm import Session

from service.db.schema import ApiKeyRow, ProjectRow, utcnow

DEFAULT_PROJECT = "default"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


class ProjectError(ValueError):
    """A project name that is malformed or names no project."""


@dataclass(frozen=True)
class Tenant:
    """Whose data a caller may see: its own project's, or (an admin key) every project's."""

    project: str = DEFAULT_PROJECT
    sees_all: bool = False

    def visible(self, column: Any) -> Any:
        """A WHERE condition on a `project` column: the rows this caller may read."""
        return true() if self.sees_all else column == self.project

    def owns(self, project: str) -> bool:
        return self.sees_all or project == self.project


def cache_scope(project: str) -> str | None:
    """The namespace of a project's judge-call cache keys; None for the default project,
    whose keys are those made before projects existed."""
    return None if project == DEFAULT_PROJECT else project


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise ProjectError(
            f"project: '{name}' is not a project name (lowercase letters, digits, '.', '_' "
            "and '-', starting with a letter or digit, at most 64)"
        )
    return name


def ensure_project(session: Session, name: str) -> bool:
    """Make project `name` unless it exists; True when it was made."""
    check_name(name)
    if session.get(ProjectRow, name) is not None:
        return False
    session.add(ProjectRow(name=name, created_at=utcnow()))
    session.flush()
    return True


def require_project(session: Session, name: str) -> str:
    """`name`, when it is a project: a mistyped name must not open an empty namespace that
    a command then writes into."""
    check_name(name)
    if session.get(ProjectRow, name) is None:
        known = session.scalars(select(ProjectRow.name).order_by(ProjectRow.name)).all()
        raise ProjectError(
            f"project: no project '{name}' (there are {', '.join(known)}); create it with "
            f"`qadi projects create {name}`"
        )
    return name


def projects_with_keys(session: Session) -> list[tuple[str, datetime, int]]:
    """Every project, its creation time and its number of active (unrevoked) keys."""
    active = (
        select(ApiKeyRow.project, func.count().label("active_keys"))
        .where(ApiKeyRow.revoked_at.is_(None))
        .group_by(ApiKeyRow.project)
        .subquery()
    )
    rows = session.execute(
        select(ProjectRow.name, ProjectRow.created_at, active.c.active_keys)
        .outerjoin(active, active.c.project == ProjectRow.name)
        .order_by(ProjectRow.name)
    ).all()
    return [(name, created, keys or 0) for name, created, keys in rows]


def pin_trust_stratum(session: Session, name: str, attribute: str | None) -> None:
    """Pin (or, with None, unpin) the metadata attribute trust strata of `name` come from:
    the item's stored value of it (service/stores/trust.py `stored_attribute`), not the
    request's claim."""
    session.get(ProjectRow, require_project(session, name)).trust_stratum = attribute


def pinned_stratum(session: Session, name: str) -> str | None:
    """The attribute `name` pins trust strata to, if any."""
    return session.scalar(select(ProjectRow.trust_stratum).where(ProjectRow.name == name))
