"""An SME's label of one answer, as the workbench takes it, turned into a grade by the same
rules that grade a judge's verdict: a penalty-weighted rubric's per-criterion marks are
scored by `rubrics.scoring.score`; a scale rubric's grade is the rating of its primary
dimension (as `judges.verdicts` takes a judge's). A label that leaves a criterion or a
dimension unmarked is not a grade: it is refused, naming what is missing, never completed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from rubrics.errors import RubricError
from rubrics.models import PenaltyWeightedRubric, Rubric
from rubrics.scoring import score


class HumanLabel(BaseModel):
    """What an SME marked: per criterion met / not met, or per dimension a rating."""

    model_config = ConfigDict(extra="forbid")

    marks: dict[str, bool] = Field(default_factory=dict)
    ratings: dict[str, int] = Field(default_factory=dict)
    rationale: str = Field(default="", max_length=20_000)


class LabelGrade(BaseModel):
    score: float
    criteria: dict[str, bool] | None  # per-criterion marks (penalty-weighted rubrics)


def grade_of(rubric: Rubric, label: HumanLabel) -> LabelGrade:
    """The grade a label gives under `rubric`; RubricError names what is missing or wrong."""
    if isinstance(rubric, PenaltyWeightedRubric):
        if label.ratings:
            raise RubricError("ratings: a penalty-weighted rubric is marked per criterion")
        return LabelGrade(score=score(rubric, label.marks).score, criteria=dict(label.marks))
    if label.marks:
        raise RubricError("marks: a scale rubric is rated per dimension")
    ids = [d.id for d in rubric.dimensions]
    missing = [i for i in ids if i not in label.ratings]
    unknown = sorted(set(label.ratings) - set(ids))
    if missing or unknown:
        problems = [f"no rating for {', '.join(missing)}"] if missing else []
        problems += [f"unknown dimensions {unknown}"] if unknown else []
        raise RubricError("ratings: " + "; ".join(problems))
    low, high = rubric.scale.min, rubric.scale.max
    outside = {d: r for d, r in label.ratings.items() if not low <= r <= high}
    if outside:
        raise RubricError(f"ratings: {outside} outside the scale {low}-{high}")
    return LabelGrade(score=float(label.ratings[rubric.primary_dimension]), criteria=None)
