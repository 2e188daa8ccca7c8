"""Selective judging in the database: the thresholds stored calibration reports fixed (what
POST /judge applies, judges/trust.py), a project's own (service/stores/projects.py). The
SME queue the escalations go to is service/stores/sme_queue.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from judges.trust import Calibration, TrustPolicy
from rubrics import split_ref
from service.db.schema import (
    ResponseRow,
    TrustThresholdRow,
    utcnow,
)
from service.stores.guarantees import Change, live, log_changes, thresholds


def save_thresholds(
    session: Session,
    project: str,
    report_id: str,
    report: dict[str, Any],
    change: Change | None = None,
    only_supported: bool = False,
) -> int:
    """The thresholds of a stored report that a request can be checked against: rows
    bound to one rubric version and one version of each judge (others cannot be applied).
    Each one that changes what POST /judge applies is logged (service/stores/guarantees.py),
    with `change` saying what set it off. `only_supported` leaves out the rows whose labels
    could not test a threshold (too few, or of an unusable design): automatic recalibration
    keeps the live guarantee there instead of turning it into an abstention."""
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
        if row.get("binding") and (row.get("supported", True) or not only_supported)
    ]
    if not values:
        return 0
    for rubric_id in {v["rubric_id"] for v in values}:
        before = live(session, project, rubric_id, section["alpha"], section["delta"],
                      section["confidence"])  # fmt: skip
        mine = [v for v in values if v["rubric_id"] == rubric_id]
        log_changes(session, project, report_id, mine, before, change or Change())
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
    query = thresholds(project, rubric_id, policy.alpha, policy.delta, policy.confidence)
    rows = session.scalars(
        query.where(
            TrustThresholdRow.evaluator.in_(list(evaluators)),
            TrustThresholdRow.stratum == stratum,
        )
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
