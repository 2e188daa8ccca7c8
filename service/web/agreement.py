"""The SMEs' agreement and leniency on the Team page: calibration/sme_agreement.py over the
double-labelled items of each rubric version (one scale at a time: ordinal for a 1–5 rubric,
interval for penalty-weighted 0–100 scores), answers to one prompt clustered together."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy.orm import Session

from calibration.sme_agreement import OverlapLabel, SmeAgreement, sme_agreement
from rubrics import PenaltyWeightedRubric
from service.stores.adjudications import DoubleLabelled
from service.stores.rubrics import RubricNotFound, get_rubric


def agreement_by_rubric(
    session: Session, project: str, overlap: list[DoubleLabelled]
) -> list[dict[str, Any]]:
    """Per rubric version with double-labelled items: its agreement, or why there is none."""
    by_rubric: dict[str, list[DoubleLabelled]] = defaultdict(list)
    for item in overlap:
        by_rubric[item.rubric_ref].append(item)
    found = []
    for rubric_ref, items in sorted(by_rubric.items()):
        try:
            rubric = get_rubric(session, project, rubric_ref)
        except RubricNotFound:
            found.append({"rubric_ref": rubric_ref, "result": None,
                          "problem": f"the rubric {rubric_ref} is not stored"})  # fmt: skip
            continue
        found.append({"rubric_ref": rubric_ref, **_agreement(rubric, items)})
    return found


def _agreement(rubric, items: list[DoubleLabelled]) -> dict[str, Any]:
    criteria = isinstance(rubric, PenaltyWeightedRubric)
    low, high = (0.0, 100.0) if criteria else (rubric.scale.min, rubric.scale.max)
    labels = [
        OverlapLabel(item_id=str(item.queue_id), rater=label.rater, score=label.score)
        for item in items
        for label in item.labels
    ]
    clusters = {str(item.queue_id): str(item.prompt_id) for item in items}
    try:
        result: SmeAgreement = sme_agreement(
            labels, "interval" if criteria else "ordinal", low, high, clusters
        )
    except ValueError as exc:  # a stored label off the rubric's scale: say so, do not guess
        return {"result": None, "problem": str(exc)}
    return {"result": result, "problem": None}
