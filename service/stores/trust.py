"""Selective judging in the database: the thresholds stored calibration reports fixed (what
POST /judge applies, judges/trust.py) and the SME queue of items escalated or audited at
request time; both a project's own (service/stores/projects.py)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from judges import GradeRequest
from judges.trust import Calibration, TrustOutcome, TrustPolicy
from rubrics import split_ref
from service.db.filters import after
from service.db.schema import (
    ItemRow,
    ResponseRow,
    SmeQueueRow,
    TrustThresholdRow,
    utcnow,
)
from service.stores.answers import ensure_responses, item_key
from service.stores.projects import Tenant

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


def enqueue(
    session: Session, project: str, queued: list[tuple[str, GradeRequest, TrustOutcome]]
) -> None:
    """Items for the project's SMEs (request id, the request, its trust outcome), in the
    caller's transaction: the same one that stores the request's judgments."""
    if not queued:
        return
    response_ids = ensure_responses(session, project, [request for _, request, _ in queued])
    now = utcnow()
    session.execute(
        insert(SmeQueueRow),
        [
            {
                "project": project,
                "request_id": request_id,
                "response_id": response_id,
                "item_id": item_key(request),
                "rubric_ref": f"{request.rubric.id}@{request.rubric.version}",
                "reason": outcome.queued.reason,
                "inclusion_prob": outcome.queued.inclusion_prob,
                "trust": outcome.model_dump(mode="json"),
                "attributes": {k: v for k, v in request.metadata.items() if k != "item_id"},
                "created_at": now,
            }
            for (request_id, request, outcome), response_id in zip(
                queued, response_ids, strict=True
            )
        ],
    )


def queued_items(
    session: Session,
    tenant: Tenant,
    reason: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    after_row: tuple[datetime, int] | None = None,
) -> list[dict[str, Any]]:
    """The SME queue the tenant may read, oldest first (after `after_row`, a (created_at,
    id) keyset cursor), each item with the texts an SME grades."""
    query = (
        select(SmeQueueRow, ResponseRow, ItemRow)
        .join(ResponseRow, SmeQueueRow.response_id == ResponseRow.id)
        .join(ItemRow, ResponseRow.item_id == ItemRow.id)
        .where(tenant.visible(SmeQueueRow.project))
        .order_by(SmeQueueRow.created_at, SmeQueueRow.id)
    )
    if reason is not None:
        query = query.where(SmeQueueRow.reason == reason)
    if since is not None:
        query = query.where(SmeQueueRow.created_at >= since)
    if after_row is not None:
        query = query.where(after(SmeQueueRow.created_at, SmeQueueRow.id, *after_row))
    if limit is not None:
        query = query.limit(limit)
    return [
        {
            "id": queued.id,
            "project": queued.project,
            "item_id": queued.item_id,
            "request_id": queued.request_id,
            "rubric_ref": queued.rubric_ref,
            "reason": queued.reason,
            "inclusion_prob": queued.inclusion_prob,
            "prompt": item.prompt,
            "reference": item.reference,
            "response": response.text,
            "candidate_model": response.candidate_model,
            "attributes": queued.attributes or {},
            "trust": queued.trust,
            "queued_at": queued.created_at,
        }
        for queued, response, item in session.execute(query)
    ]
