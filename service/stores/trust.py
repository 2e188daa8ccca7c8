"""Selective judging in the database: the thresholds stored calibration reports fixed (what
POST /judge applies, judges/trust.py), a project's own (service/stores/projects.py). The
SME queue the escalations go to is service/stores/sme_queue.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from judges.trust import Calibration, TrustPolicy
from rubrics import split_ref
from service.db.schema import (
    ResponseRow,
    TrustThresholdRow,
    utcnow,
)

_SAME = 1e-9  # α and δ match a stored calibration's within this


def save_thresholds(
    session: Session, project: str, report_id: str, report: dict[str, Any]
) -> int:
    """The thresholds of a stored report that a request can be checked against: rows
    bound to one rubric version and one version of each judge (others cannot be applied)."""
    section = report.get("selective")
    if not section:
        return 0
    now = utcnow()
    values = [
        {
            "project": project,
            "report_id": report_id,
            "rubric_id": split_ref(row["binding"]["rubric_ref"])[0],
            "evaluator": row["evaluator"],
            "stratum": row["stratum"],
            "alpha": section["alpha"],
            "delta": section["delta"],
            "confidence": section["confidence"],
            "threshold": row["result"]["threshold"],
            "entry": {
                "report_id": report_id,
                "evaluator": row["evaluator"],
                "stratum": row["stratum"],
                "confidence": section["confidence"],
                "agreement": section["agreement"],
                "threshold": row["result"],
                "binding": row["binding"],
                "calibrated_at": now.isoformat(),
            },
            "created_at": now,
        }
        for row in section["rows"]
        if row.get("binding")
    ]
    if values:
        session.execute(insert(TrustThresholdRow), values)
    return len(values)


def find_calibrations(
    session: Session,
    project: str,
    rubric_id: str,
    evaluators: Iterable[str],
    stratum: str,
    policy: TrustPolicy,
) -> dict[str, Calibration]:
    """The project's newest calibration of each evaluator for this rubric, stratum, α, δ
    and confidence source; an evaluator never calibrated so is absent."""
    wanted = list(evaluators)
    rows = session.scalars(
        select(TrustThresholdRow)
        .where(
            TrustThresholdRow.project == project,
            TrustThresholdRow.rubric_id == rubric_id,
            TrustThresholdRow.evaluator.in_(wanted),
            TrustThresholdRow.stratum == stratum,
            TrustThresholdRow.confidence == policy.confidence,
            func.abs(TrustThresholdRow.alpha - policy.alpha) < _SAME,
            func.abs(TrustThresholdRow.delta - policy.delta) < _SAME,
        )
        .order_by(TrustThresholdRow.created_at.desc(), TrustThresholdRow.id.desc())
    )
    found: dict[str, Calibration] = {}
    for row in rows:
        if row.evaluator not in found:
            found[row.evaluator] = Calibration.model_validate(row.entry)
    return found



def stored_attribute(session: Session, project: str, item_id: str, attribute: str) -> str | None:
    """The value of `attribute` stored with the item's answer when it was first stored in
    `project` (a regrade, an import, or the first request that carried it); None when the
    item is not stored yet or was stored without it. A later request cannot change it."""
    attributes = session.scalar(
        select(ResponseRow.attributes)
        .where(ResponseRow.project == project, ResponseRow.item_key == item_id)
        .order_by(ResponseRow.id)
        .limit(1)
    )
    value = (attributes or {}).get(attribute)
    return None if value in (None, "") else str(value)
