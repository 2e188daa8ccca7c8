"""The SME queue in the database: items escalated or audited at request time, each once per
(item, rubric version, reason), within a per-key budget, with what the workbench needs to
serve it (how many labels it wants, the expertise it goes to, its place in the order).

Why once: identical requests are cache hits that cost no judge call, so before issue 42.6 a
judge-scope key could add a queue row per request for free (100 requests: +100 rows with 2
backend calls). Why a budget: an item's id is the caller's, so varying it makes new items;
the budget bounds what one key can put in front of the SMEs in a day.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from judges import GradeRequest
from judges.trust import TrustOutcome
from service.db.filters import after
from service.db.schema import ItemRow, ResponseRow, SmeQueueRow, utcnow
from service.stores.answers import ensure_responses, item_key
from service.stores.projects import Tenant

BUDGET_WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class QueuePolicy:
    """How queued items are routed (service settings `sme_*`)."""

    overlap_share: float = 0.1  # items graded by two SMEs, for their agreement
    route_by: tuple[str, ...] = ("dialect",)  # attributes whose value needs that expertise
    per_key_per_day: int = 0  # 0: no budget


def uniform(*parts: str) -> float:
    """A uniform draw in [0, 1) fixed by `parts`: the same item gets the same draw in every
    process and on every retry, and different items independent ones."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return int(digest[:13], 16) / 16**13


def route_tag(attributes: dict[str, Any], route_by: Sequence[str]) -> str:
    """The expertise an item needs ("dialect=egy"): the first routing attribute it has, its
    spaces as "_" ("dialect=Gulf_Arabic"), as a person's tags are written."""
    for name in route_by:
        value = "_".join(str(attributes.get(name) or "").split())
        if value:
            return f"{name}={value}"
    return ""


def placement(project: str, item_id: str, rubric_ref: str, policy: QueuePolicy) -> dict:
    """How many labels an item wants and its place in the serving order, both fixed by the
    item (a random order keeps the labelled part of a round a random part of it)."""
    key = (project, item_id, rubric_ref)
    overlap = uniform("overlap", *key) < policy.overlap_share
    return {"labels_wanted": 2 if overlap else 1, "order_key": uniform("order", *key)}


def room_left(session: Session, project: str, api_key_id: int | None, per_day: int) -> int | None:
    """How many more items the key may queue in the last day's window (None: no budget)."""
    if per_day <= 0:
        return None
    key = (
        SmeQueueRow.api_key_id.is_(None)
        if api_key_id is None
        else SmeQueueRow.api_key_id == api_key_id
    )
    used = session.scalar(
        select(func.count()).where(
            SmeQueueRow.project == project,
            key,
            SmeQueueRow.created_at >= utcnow() - BUDGET_WINDOW,
        )
    )
    return max(0, per_day - (used or 0))


def enqueue(
    session: Session,
    project: str,
    queued: list[tuple[str, GradeRequest, TrustOutcome]],
    api_key_id: int | None,
    policy: QueuePolicy,
) -> None:
    """Items for the project's SMEs (request id, the request, its trust outcome), in the
    caller's transaction: the same one that stores the request's judgments. An item already
    queued for the same rubric version and reason stays as it is (the first request's)."""
    if not queued:
        return
    response_ids = ensure_responses(session, project, [request for _, request, _ in queued])
    now = utcnow()
    rows = {}
    for (request_id, request, outcome), response_id in zip(queued, response_ids, strict=True):
        item = item_key(request)
        rubric_ref = f"{request.rubric.id}@{request.rubric.version}"
        attributes = {k: v for k, v in request.metadata.items() if k != "item_id"}
        rows[(item, rubric_ref, outcome.queued.reason)] = {
            "project": project,
            "request_id": request_id,
            "response_id": response_id,
            "item_id": item,
            "rubric_ref": rubric_ref,
            "reason": outcome.queued.reason,
            "inclusion_prob": outcome.queued.inclusion_prob,
            "trust": outcome.model_dump(mode="json"),
            "attributes": attributes,
            "api_key_id": api_key_id,
            "route_tag": route_tag(attributes, policy.route_by),
            "status": "open",
            "created_at": now,
            **placement(project, item, rubric_ref, policy),
        }
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    ordered = [rows[key] for key in sorted(rows)]  # one lock order for concurrent writers
    session.execute(dialect.insert(SmeQueueRow).on_conflict_do_nothing(), ordered)


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
    return [_listed(queued, response, item) for queued, response, item in session.execute(query)]


def _listed(queued: SmeQueueRow, response: ResponseRow, item: ItemRow) -> dict[str, Any]:
    return {
        "id": queued.id,
        "project": queued.project,
        "item_id": queued.item_id,
        "request_id": queued.request_id,
        "rubric_ref": queued.rubric_ref,
        "reason": queued.reason,
        "inclusion_prob": queued.inclusion_prob,
        "inclusion_stratum": queued.inclusion_stratum,
        "labels_wanted": queued.labels_wanted,
        "route_tag": queued.route_tag,
        "status": queued.status,
        "prompt": item.prompt,
        "reference": item.reference,
        "response": response.text,
        "candidate_model": response.candidate_model,
        "attributes": queued.attributes or {},
        "trust": queued.trust,
        "queued_at": queued.created_at,
    }



def texts_of(session: Session, project: str, queue_id: int) -> dict[str, Any] | None:
    """The question, answer and reference of a queued item of `project`."""
    found = session.execute(
        select(ItemRow.prompt, ItemRow.reference, ResponseRow.text)
        .join(ResponseRow, ResponseRow.item_id == ItemRow.id)
        .join(SmeQueueRow, SmeQueueRow.response_id == ResponseRow.id)
        .where(SmeQueueRow.id == queue_id, SmeQueueRow.project == project)
    ).first()
    if found is None:
        return None
    prompt, reference, response = found
    return {"prompt": prompt, "reference": reference, "response": response}


def enqueue_sample(
    session: Session,
    project: str,
    rubric_ref: str,
    records: list[dict[str, str]],
    policy: QueuePolicy,
) -> int:
    """A calibration sample drawn from stored judgments (calibration/sme_queue.py `choose`,
    records with `item_id`, `inclusion_prob`, `inclusion_stratum`), queued for the workbench
    with reason `sample`; items already queued for it stay as they were. The number queued."""
    items = [r["item_id"] for r in records]
    answers = {}
    for item, response_id, attributes in session.execute(
        select(ResponseRow.item_key, ResponseRow.id, ResponseRow.attributes)
        .where(ResponseRow.project == project, ResponseRow.item_key.in_(items))
        .order_by(ResponseRow.id.desc())  # the first stored answer of a key wins below
    ):
        answers[item] = (response_id, attributes or {})
    now = utcnow()
    rows = []
    for record in records:
        if record["item_id"] not in answers:
            continue  # graded from a file, never stored: no texts for the SME to read
        response_id, attributes = answers[record["item_id"]]
        attributes = {k: v for k, v in attributes.items() if k != "item_id"}
        rows.append({
            "project": project, "request_id": None, "response_id": response_id,
            "item_id": record["item_id"], "rubric_ref": rubric_ref, "reason": "sample",
            "inclusion_prob": float(record["inclusion_prob"]),
            "inclusion_stratum": record.get("inclusion_stratum") or None,
            "trust": None, "attributes": attributes, "api_key_id": None,
            "route_tag": route_tag(attributes, policy.route_by), "status": "open",
            "created_at": now, **placement(project, record["item_id"], rubric_ref, policy),
        })  # fmt: skip
    if not rows:
        return 0
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    inserted = session.execute(
        dialect.insert(SmeQueueRow).on_conflict_do_nothing().returning(SmeQueueRow.id),
        sorted(rows, key=lambda row: row["item_id"]),
    )
    return len(inserted.all())
