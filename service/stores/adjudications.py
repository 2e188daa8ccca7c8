"""Items two SMEs graded blind to each other (the overlap share of the queue), what each gave,
and how a lead or a senior SME settled the items they disagree on. The two labels stay as
they were: the outcome is kept beside them (sme_adjudications), one per item."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rubrics.labels import LabelGrade
from service.db.schema import (
    HumanGradeRow,
    ResponseRow,
    SmeAdjudicationRow,
    SmeAssignmentRow,
    SmeQueueRow,
    SmeRow,
    utcnow,
)
from service.stores.smes import Person


@dataclass(frozen=True)
class Label:
    rater: str
    score: float
    criteria: dict[str, bool] | None
    rationale: str | None


@dataclass
class DoubleLabelled:
    """An overlap item with the labels submitted so far and its adjudication, if any."""

    queue_id: int
    item_id: str
    rubric_ref: str
    prompt_id: int  # the question answered (items.id): answers to one prompt are a cluster
    labels: list[Label] = field(default_factory=list)
    outcome: dict[str, Any] | None = None

    @property
    def raters(self) -> list[str]:
        return [label.rater for label in self.labels]

    @property
    def complete(self) -> bool:
        """Both labels are in."""
        return len(self.labels) >= 2

    @property
    def disagree(self) -> bool:
        """Two labels that differ in score or in any criterion's mark."""
        if len(self.labels) < 2:
            return False
        first, second = self.labels[:2]
        return first.score != second.score or (first.criteria or {}) != (second.criteria or {})


def double_labelled(
    session: Session, project: str, queue_id: int | None = None
) -> list[DoubleLabelled]:
    """The project's overlap items with at least one submitted label (or just `queue_id`)."""
    query = (
        select(SmeQueueRow, ResponseRow.item_id, SmeRow.handle, HumanGradeRow)
        .join(ResponseRow, ResponseRow.id == SmeQueueRow.response_id)
        .join(SmeAssignmentRow, SmeAssignmentRow.queue_id == SmeQueueRow.id)
        .join(SmeRow, SmeRow.id == SmeAssignmentRow.sme_id)
        .join(HumanGradeRow, HumanGradeRow.id == SmeAssignmentRow.grade_id)
        .where(
            SmeQueueRow.project == project,
            SmeQueueRow.labels_wanted > 1,
            SmeAssignmentRow.status == "submitted",
        )
        .order_by(SmeQueueRow.id, SmeAssignmentRow.slot)
    )
    if queue_id is not None:
        query = query.where(SmeQueueRow.id == queue_id)
    items: dict[int, DoubleLabelled] = {}
    for queued, prompt_id, handle, grade in session.execute(query):
        item = items.setdefault(
            queued.id, DoubleLabelled(queued.id, queued.item_id, queued.rubric_ref, prompt_id)
        )
        item.labels.append(Label(handle, grade.score, grade.criteria, grade.rationale))
    if items:
        outcomes = session.execute(
            select(SmeAdjudicationRow, SmeRow.handle)
            .join(SmeRow, SmeRow.id == SmeAdjudicationRow.sme_id)
            .where(SmeAdjudicationRow.queue_id.in_(list(items)))
        )
        for outcome, handle in outcomes:
            items[outcome.queue_id].outcome = {
                "by": handle,
                "score": outcome.score,
                "criteria": outcome.criteria,
                "rationale": outcome.rationale,
                "at": outcome.created_at,
            }
    return list(items.values())


def adjudicate(
    session: Session, person: Person, queue_id: int, grade: LabelGrade, rationale: str
) -> bool:
    """Settle a disagreement (a later decision replaces an earlier one, and says who);
    False when the item is not a disagreement of this project, or she gave one of its labels
    (a senior SME does not settle her own disagreement)."""
    [item] = double_labelled(session, person.project, queue_id) or [None]
    if item is None or not item.disagree or person.handle in item.raters:
        return False
    row = session.scalar(select(SmeAdjudicationRow).where(SmeAdjudicationRow.queue_id == queue_id))
    if row is None:
        row = SmeAdjudicationRow(project=person.project, queue_id=queue_id)
        session.add(row)
    row.sme_id, row.score, row.criteria = person.id, grade.score, grade.criteria
    row.rationale, row.created_at = rationale or None, utcnow()
    session.flush()
    return True
