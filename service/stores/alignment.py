"""Judge alignment in the database: the labelled items a revision learns from and is certified
on (the judge's verdict beside the SMEs' labels and reasons), the alignment runs, and their
approval, which makes the candidate template live as a new rubric version."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from judges import JudgeResult
from rubrics import Rubric, rubric_hash
from service.db.filters import rubric_matches
from service.db.schema import (
    AlignmentGradeRow,
    AlignmentRunRow,
    HumanGradeRow,
    ItemRow,
    JudgmentRow,
    ResponseRow,
    utcnow,
)
from service.stores.chunks import chunked
from service.stores.judgments import insert_judgments, row_values
from service.stores.rubrics import save_rubric


@dataclass
class Labelled:
    """An SME-labelled item with the judge's latest verdict under the rubric."""

    item_id: str
    response_id: int
    prompt: str
    response: str
    reference: str | None
    candidate_model: str
    attributes: dict[str, Any]
    judge_score: float
    judge_marks: dict[str, bool]
    judge_rationale: str | None
    template_hash: str
    smes: list[dict[str, Any]] = field(default_factory=list)  # rater, score, marks, rationale

    @property
    def reference_score(self) -> float:
        """The SMEs' mean score (the reference of every report)."""
        return sum(s["score"] for s in self.smes) / len(self.smes)

    @property
    def inclusion_prob(self) -> float | None:
        """The chance the item was sent to the SMEs, when its labels carry one (the SME
        queue's escalations and audits are drawn unequally)."""
        return next((s["inclusion_prob"] for s in self.smes if s["inclusion_prob"]), None)


def labelled_items(
    session: Session, project: str, rubric: str, judge: str, template_hash: str | None = None
) -> list[Labelled]:
    """The items of `project` the judge graded under `rubric` ('id@version') that SMEs
    labelled, each with the judge's latest ok verdict (of one template, when given)."""
    labelled = select(HumanGradeRow.item_id).where(
        HumanGradeRow.project == project, HumanGradeRow.rater_kind == "human"
    )
    query = (
        select(JudgmentRow, ResponseRow, ItemRow)
        .join(ResponseRow, ResponseRow.id == JudgmentRow.response_id)
        .join(ItemRow, ItemRow.id == ResponseRow.item_id)
        .where(
            JudgmentRow.project == project,
            JudgmentRow.judge == judge,
            JudgmentRow.status == "ok",
            rubric_matches(JudgmentRow.rubric_ref, rubric),
            ResponseRow.item_key.in_(labelled),
        )
        .order_by(JudgmentRow.created_at, JudgmentRow.id)
    )
    if template_hash is not None:
        query = query.where(JudgmentRow.template_hash == template_hash)
    found: dict[str, Labelled] = {}
    for judgment, response, item in session.execute(query):
        found[response.item_key] = Labelled(
            item_id=response.item_key, response_id=response.id, prompt=item.prompt,
            response=response.text, reference=item.reference,
            candidate_model=response.candidate_model,
            attributes={k: v for k, v in (response.attributes or {}).items() if k != "item_id"},
            judge_score=judgment.score,
            judge_marks={c["id"]: bool(c["met"]) for c in judgment.criteria or [] if "id" in c},
            judge_rationale=judgment.rationale, template_hash=judgment.template_hash,
        )  # fmt: skip
    for chunk in chunked(sorted(found)):
        grades = session.scalars(
            select(HumanGradeRow)
            .where(
                HumanGradeRow.project == project,
                HumanGradeRow.rater_kind == "human",
                HumanGradeRow.item_id.in_(chunk),
            )
            .order_by(HumanGradeRow.item_id, HumanGradeRow.rater)
        )
        for grade in grades:
            found[grade.item_id].smes.append({
                "rater": grade.rater, "score": grade.score, "marks": grade.criteria or {},
                "rationale": grade.rationale, "inclusion_prob": grade.inclusion_prob,
            })  # fmt: skip
    return [item for item in found.values() if item.smes]


def create_run(
    session: Session, project: str, grades: dict[str, tuple[int, JudgeResult]], **values: Any
) -> AlignmentRunRow:
    """Store a run and the candidate's verdict on each held-out item (item -> its response
    id and the judge result)."""
    row = AlignmentRunRow(project=project, created_at=utcnow(), **values)
    session.add(row)
    session.flush()
    if grades:
        session.execute(insert(AlignmentGradeRow), [
            {"run_id": row.id, "item_id": item, "response_id": response_id,
             "result": result.model_dump(mode="json")}
            for item, (response_id, result) in sorted(grades.items())
        ])  # fmt: skip
    return row


def run_grades(session: Session, run_id: str) -> dict[str, tuple[int, JudgeResult]]:
    rows = session.scalars(select(AlignmentGradeRow).where(AlignmentGradeRow.run_id == run_id))
    return {row.item_id: (row.response_id, JudgeResult(**row.result)) for row in rows}


def get_run(session: Session, project: str, run_id: str) -> AlignmentRunRow | None:
    row = session.get(AlignmentRunRow, run_id)
    return row if row is not None and row.project == project else None


def runs(session: Session, project: str, limit: int = 50) -> list[AlignmentRunRow]:
    return list(
        session.scalars(
            select(AlignmentRunRow)
            .where(AlignmentRunRow.project == project)
            .order_by(AlignmentRunRow.created_at.desc())
            .limit(limit)
        )
    )


def approve(session: Session, run: AlignmentRunRow, revised: Rubric, actor: str) -> str:
    """Make the candidate live: the rubric as a new version whose template is the candidate
    (what POST /judge then grades with by the rubric's id), and the candidate's verdicts on
    the held-out fold filed as that version's first judgments, so its calibrations start
    from them. The new version's ref."""
    stored, _ = save_rubric(session, run.project, revised)
    new_ref, new_hash = f"{stored.id}@{stored.version}", rubric_hash(stored)
    rows = [
        row_values(run.project, result.model_copy(update={
            "rubric_ref": new_ref, "rubric_hash": new_hash}), None, response_id)
        for response_id, result in run_grades(session, run.id).values()
    ]  # fmt: skip
    if rows:
        insert_judgments(session, rows)
    run.status, run.approved_at, run.approved_by = "approved", utcnow(), actor
    run.approved_rubric_ref = new_ref
    return new_ref


def training_items(session: Session, project: str, rubric: str) -> set[str]:
    """The items whose labels revised the template an approved run made live under `rubric`
    (an 'id@version', or every version of an id): no calibration of it counts them."""
    query = select(AlignmentRunRow.folds).where(
        AlignmentRunRow.project == project,
        AlignmentRunRow.status == "approved",
        rubric_matches(AlignmentRunRow.approved_rubric_ref, rubric),
    )
    return {
        item for folds in session.scalars(query) for item, fold in folds.items() if fold == "train"
    }
