"""The guarantees POST /judge applies, how they changed, and how they fared on fresh labels.

A live guarantee is the newest stored threshold of (rubric, evaluator, stratum, α, δ,
confidence) in a project (service/stores/trust.py `find_calibrations` reads the same rows).
Every stored report that replaces one is logged here with the old and new threshold, the
labels it rests on, what set it off and who (`guarantee_changes`); every slice of fresh
labels tested against one is kept too (`guarantee_audits`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from service.db.schema import (
    GuaranteeAuditRow,
    GuaranteeChangeRow,
    TrustThresholdRow,
    utcnow,
)

_SAME = 1e-9  # α and δ match a stored calibration's within this


@dataclass(frozen=True)
class Change:
    """What set a change off and who: `trigger` labels | schedule | audit | manual."""

    trigger: str = "manual"
    actor: str = "a report"
    scope: str | None = None


@dataclass(frozen=True)
class Live:
    """A live threshold row, as the dashboard and the audits read it."""

    evaluator: str
    stratum: str
    threshold: float | None
    report_id: str
    entry: dict[str, Any]
    since: datetime


def thresholds(
    project: str, rubric_id: str, alpha: float, delta: float, confidence: str
) -> Select:
    """The stored thresholds of a rubric for (α, δ, confidence source), newest first: what
POST /judge looks a calibration up in (service/stores/trust.py `find_calibrations`)."""
    return (
        select(TrustThresholdRow)
        .where(
            TrustThresholdRow.project == project,
            TrustThresholdRow.rubric_id == rubric_id,
            TrustThresholdRow.confidence == confidence,
            func.abs(TrustThresholdRow.alpha - alpha) < _SAME,
            func.abs(TrustThresholdRow.delta - delta) < _SAME,
        )
        .order_by(TrustThresholdRow.created_at.desc(), TrustThresholdRow.id.desc())
    )


def live(
    session: Session, project: str, rubric_id: str, alpha: float, delta: float, confidence: str
) -> dict[tuple[str, str], Live]:
    """The newest threshold of each (evaluator, stratum) for this rubric and (α, δ,
    confidence): what POST /judge applies now."""
    rows = session.scalars(thresholds(project, rubric_id, alpha, delta, confidence))
    found: dict[tuple[str, str], Live] = {}
    for row in rows:
        found.setdefault(
            (row.evaluator, row.stratum),
            Live(row.evaluator, row.stratum, row.threshold, row.report_id, row.entry,
                 row.created_at),  # fmt: skip
        )
    return found


def log_changes(
    session: Session, project: str, report_id: str, rows: list[dict[str, Any]],
    before: dict[tuple[str, str], Live], change: Change,
) -> int:  # fmt: skip
    """One log row per new threshold row that differs from what was live (a first one, or
    another threshold); the number logged."""
    logged = []
    now = utcnow()
    for row in rows:
        old = before.get((row["evaluator"], row["stratum"]))
        if old is not None and old.threshold == row["threshold"]:
            continue
        result = row["entry"]["threshold"]
        logged.append({
            "project": project, "report_id": report_id, "scope": change.scope,
            "rubric_id": row["rubric_id"], "evaluator": row["evaluator"],
            "stratum": row["stratum"], "alpha": row["alpha"], "delta": row["delta"],
            "confidence": row["confidence"],
            "old_threshold": old.threshold if old else None,
            "new_threshold": row["threshold"],
            "old_report_id": old.report_id if old else None,
            "coverage": result.get("coverage"), "n_calibration": result.get("n_calibration", 0),
            "trigger": change.trigger, "actor": change.actor, "created_at": now,
        })  # fmt: skip
    if logged:
        session.execute(GuaranteeChangeRow.__table__.insert(), logged)
    return len(logged)


def changes(
    session: Session, project: str, scope: str | None = None, limit: int = 100
) -> list[GuaranteeChangeRow]:
    """The latest changes of the project's live guarantees (of one scope's reports)."""
    query = select(GuaranteeChangeRow).where(GuaranteeChangeRow.project == project)
    if scope is not None:
        query = query.where(GuaranteeChangeRow.scope == scope)
    return list(
        session.scalars(
            query.order_by(GuaranteeChangeRow.created_at.desc(), GuaranteeChangeRow.id.desc())
            .limit(limit)
        )
    )


def record_audit(
    session: Session, project: str, scope: str, guarantee: Live, audit: dict[str, Any],
    labels_through: datetime,
) -> None:  # fmt: skip
    session.add(
        GuaranteeAuditRow(
            project=project, scope=scope, report_id=guarantee.report_id,
            evaluator=guarantee.evaluator, stratum=guarantee.stratum, audit=audit,
            passed=audit.get("passed"), labels_through=labels_through, created_at=utcnow(),
        )  # fmt: skip
    )


def audits(session: Session, project: str, scope: str, limit: int = 50) -> list[GuaranteeAuditRow]:
    return list(
        session.scalars(
            select(GuaranteeAuditRow)
            .where(GuaranteeAuditRow.project == project, GuaranteeAuditRow.scope == scope)
            .order_by(GuaranteeAuditRow.created_at.desc(), GuaranteeAuditRow.id.desc())
            .limit(limit)
        )
    )
