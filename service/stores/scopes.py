"""Calibration scopes: what a project recalibrates by itself, when, and how its last run went
(the runner is service/recalibration/). A scope is a rubric with the trust options of `qadi
calibrate --trust-*`; it runs after `every_labels` new SME labels on the rubric's items, every
`every_hours`, or when an audit of a live guarantee failed. One process runs a scope at a
time, on any number of replicas: the lease is taken by one conditional UPDATE (one winner),
and a lease whose holder died runs out."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import exists, func, or_, select, update
from sqlalchemy.orm import Session

from service.db.filters import rubric_matches
from service.db.schema import (
    CalibrationScopeRow,
    HumanGradeRow,
    JudgmentRow,
    ResponseRow,
    utcnow,
)
from service.stores.projects import require_project

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


class ScopeError(ValueError):
    """A scope that cannot be made or found; the message names the field."""


HOURS_A_YEAR = 366 * 24


class ScopeSpec(BaseModel):
    """What a scope calibrates and when (the trust options as `qadi calibrate --trust-*`)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    rubric: str = Field(description="'id' or 'id@version'")
    alpha: float = Field(gt=0, lt=1)
    delta: float = Field(gt=0, lt=1)
    confidence: Literal["token", "panel"] = "token"
    cascades: list[list[str]] = Field(default_factory=list)
    by: list[str] = Field(default_factory=list, description="strata attributes")
    # Upper bounds a schedule can mean (a year, a million labels, ten years of judgments):
    # past them a value overflows a column or a timedelta and stops every scope's round.
    every_labels: int | None = Field(default=None, ge=1, le=1_000_000)
    every_hours: float | None = Field(default=None, ge=0.01, le=HOURS_A_YEAR, allow_inf_nan=False)
    audit_slice: int = Field(default=30, ge=1, le=100_000, description="fresh labels per audit")
    bootstrap: int = Field(default=500, ge=0, le=100_000, description="the report's resamples")
    window_hours: float | None = Field(
        default=None,
        ge=0.01,
        le=10 * HOURS_A_YEAR,
        allow_inf_nan=False,
        description="a nightly scope: the judgments of the last N hours only, stored as a "
        "nightly report with its drift against the previous one (`qadi report nightly` on the "
        "service's own schedule)",
    )

    def options(self) -> dict:
        return self.model_dump(include={"alpha", "delta", "confidence", "cascades", "by",
                                        "bootstrap", "window_hours"})  # fmt: skip


def add_scope(session: Session, project: str, spec: ScopeSpec, actor: str) -> CalibrationScopeRow:
    require_project(session, project)
    if not _NAME.fullmatch(spec.name):
        raise ScopeError(
            f"name: '{spec.name}' is not a scope name (lowercase letters, digits, '.', '_', "
            "'-'; at most 64)"
        )
    if spec.every_labels is None and spec.every_hours is None:
        raise ScopeError("every_labels / every_hours: give at least one, or it never runs")
    taken = session.scalar(
        select(CalibrationScopeRow.id).where(
            CalibrationScopeRow.project == project, CalibrationScopeRow.name == spec.name
        )
    )
    if taken is not None:
        raise ScopeError(f"name: project {project} has a scope '{spec.name}' already")
    row = CalibrationScopeRow(
        project=project, name=spec.name, rubric=spec.rubric, options=spec.options(),
        every_labels=spec.every_labels, every_hours=spec.every_hours,
        audit_slice=spec.audit_slice, enabled=True, created_by=actor, created_at=utcnow(),
        labels_seen=0, runs=0,
    )  # fmt: skip
    session.add(row)
    session.flush()
    return row


def scopes(session: Session, project: str | None = None) -> list[CalibrationScopeRow]:
    """A project's scopes, or every enabled scope of every project (the runner's round)."""
    query = select(CalibrationScopeRow).order_by(CalibrationScopeRow.id)
    if project is None:
        query = query.where(CalibrationScopeRow.enabled.is_(True))
    else:
        query = query.where(CalibrationScopeRow.project == project)
    return list(session.scalars(query))


def find_scope(session: Session, project: str, name: str) -> CalibrationScopeRow:
    row = session.scalar(
        select(CalibrationScopeRow).where(
            CalibrationScopeRow.project == project, CalibrationScopeRow.name == name
        )
    )
    if row is None:
        raise ScopeError(f"name: project {project} has no scope '{name}'")
    return row


def remove_scope(session: Session, project: str, name: str) -> None:
    """The scope stops; its reports, thresholds and log stay."""
    session.delete(find_scope(session, project, name))


def sme_labels(session: Session, project: str, rubric: str) -> int:
    """Human grades in `project` of items judged under `rubric` (what `every_labels` counts)."""
    judged = exists().where(
        ResponseRow.project == project,
        ResponseRow.item_key == HumanGradeRow.item_id,
        JudgmentRow.response_id == ResponseRow.id,
        rubric_matches(JudgmentRow.rubric_ref, rubric),
    )
    return (
        session.scalar(
            select(func.count()).where(
                HumanGradeRow.project == project, HumanGradeRow.rater_kind == "human", judged
            )
        )
        or 0
    )


def why_due(scope: CalibrationScopeRow, labels: int, now: datetime) -> str | None:
    """Why the scope should run now, or None."""
    if scope.due_reason:
        return scope.due_reason
    if scope.every_labels and labels - scope.labels_seen >= scope.every_labels:
        return f"{labels - scope.labels_seen} new SME labels"
    if scope.every_hours and (
        scope.last_run_at is None or now - scope.last_run_at >= timedelta(hours=scope.every_hours)
    ):
        return "schedule"
    return None


def take_lease(
    session: Session, scope_id: int, owner: str, seconds: float, runs_seen: int | None = None
) -> bool:
    """The scope's lease for `owner` when nobody holds it (or a holder's ran out) and, given
    `runs_seen`, when no run has finished since the caller found the scope due: a process
    whose check read the scope just before another process's run ended would otherwise take
    the lease that run let go and run the scope a second time on the same labels."""
    now = utcnow()
    conditions = [
        CalibrationScopeRow.id == scope_id,
        or_(CalibrationScopeRow.lease_until.is_(None), CalibrationScopeRow.lease_until < now),
    ]
    if runs_seen is not None:
        conditions.append(CalibrationScopeRow.runs == runs_seen)
    taken = session.execute(
        update(CalibrationScopeRow)
        .where(*conditions)
        .values(lease_owner=owner, lease_until=now + timedelta(seconds=seconds))
    )
    return taken.rowcount == 1


def finish_run(
    session: Session,
    scope_id: int,
    owner: str,
    status: str,
    message: str,
    labels: int,
    report_id: str | None = None,
    summary: dict | None = None,
) -> None:
    """The run's outcome (with its report's `summary` for the dashboard), and the lease let
    go (only by its holder)."""
    values = {
        "lease_owner": None, "lease_until": None, "last_run_at": utcnow(),
        "last_status": status, "last_message": message, "due_reason": None,
        "runs": CalibrationScopeRow.runs + 1,
    }  # fmt: skip
    if status != "failed":
        values["labels_seen"] = labels
    if report_id is not None:
        values["last_report_id"] = report_id
        values["summary"] = summary
    session.execute(
        update(CalibrationScopeRow)
        .where(CalibrationScopeRow.id == scope_id, CalibrationScopeRow.lease_owner == owner)
        .values(**values)
    )


def mark_due(session: Session, scope_id: int, reason: str, audited_through: datetime) -> None:
    """Run the scope at the next round (an audit failed), and remember what was audited."""
    session.execute(
        update(CalibrationScopeRow)
        .where(CalibrationScopeRow.id == scope_id)
        .values(due_reason=reason[:64], audited_through=audited_through)
    )


def follow_revision(session: Session, project: str, old_ref: str, new_ref: str) -> int:
    """A template revision made `new_ref` live (service/alignment/): the scopes on the old
    version move to it, and every scope of the rubric runs at the next round. How many."""
    session.execute(
        update(CalibrationScopeRow)
        .where(CalibrationScopeRow.project == project, CalibrationScopeRow.rubric == old_ref)
        .values(rubric=new_ref)
    )
    rubric_id = new_ref.split("@")[0]
    moved = session.execute(
        update(CalibrationScopeRow)
        .where(
            CalibrationScopeRow.project == project,
            or_(
                CalibrationScopeRow.rubric == rubric_id,
                rubric_matches(CalibrationScopeRow.rubric, rubric_id),
            ),
        )
        .values(due_reason="template revised")
    )
    return moved.rowcount


def audited(session: Session, scope_id: int, through: datetime) -> None:
    session.execute(
        update(CalibrationScopeRow)
        .where(CalibrationScopeRow.id == scope_id)
        .values(audited_through=through)
    )


def get_scope(session: Session, scope_id: int) -> CalibrationScopeRow | None:
    return session.get(CalibrationScopeRow, scope_id)


def fresh_labels(session: Session, scope: CalibrationScopeRow) -> dict[str, datetime]:
    """SME grades of the scope's project stored after its last audit: item → when."""
    query = select(HumanGradeRow.item_id, HumanGradeRow.created_at).where(
        HumanGradeRow.project == scope.project, HumanGradeRow.rater_kind == "human"
    )
    if scope.audited_through is not None:
        query = query.where(HumanGradeRow.created_at > scope.audited_through)
    found: dict[str, datetime] = {}
    for item, at in session.execute(query):
        found[item] = max(at, found.get(item, at))
    return found
