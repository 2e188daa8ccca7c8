"""The grading form as the browser sends it, read into an SME's label (rubrics/labels.py)
and into the draft kept while she works.

Fields: `mark.<criterion id>` = met | not_met (penalty-weighted rubrics),
`rating.<dimension id>` = a whole number (scale rubrics), `rationale`. A control she has
not touched is absent: the label has no mark for it, and a label with a gap is refused by
the rubric's rule, never completed with a default.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData

from rubrics import PenaltyWeightedRubric, Rubric
from rubrics.labels import HumanLabel

MARKS = {"met": True, "not_met": False}
MAX_FIELD_CHARS = 20_000


class FormProblem(ValueError):
    """A field the browser sent that no control of the page could have sent."""


def controls(rubric: Rubric, draft: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """What the rubric's controls (templates/_controls.html.j2) are drawn from: criteria or a
    scale's values, checked as `draft` says, with the problems of the last submission."""
    criteria = isinstance(rubric, PenaltyWeightedRubric)
    values = [] if criteria else range(rubric.scale.min, rubric.scale.max + 1)
    return {"rubric": rubric, "criteria": criteria, "values": values, "draft": draft,
            "problems": problems}  # fmt: skip


def draft_of(form: FormData, rubric: Rubric) -> dict[str, Any]:
    """What she has marked so far, as stored between saves (only the rubric's own ids)."""
    draft: dict[str, Any] = {"rationale": _text(form.get("rationale"))}
    if isinstance(rubric, PenaltyWeightedRubric):
        ids = [c.id for c in rubric.criteria]
        draft["marks"] = {i: form.get(f"mark.{i}") for i in ids if form.get(f"mark.{i}") in MARKS}
    else:
        given = {d.id: form.get(f"rating.{d.id}") for d in rubric.dimensions}
        draft["ratings"] = {k: v for k, v in given.items() if v}
    return draft


def label_of(form: FormData, rubric: Rubric) -> HumanLabel:
    """The label the form gives; FormProblem for a value no control offers."""
    draft = draft_of(form, rubric)
    if isinstance(rubric, PenaltyWeightedRubric):
        marks = {k: MARKS[v] for k, v in draft["marks"].items()}
        return HumanLabel(marks=marks, rationale=draft["rationale"])
    ratings = {}
    for dimension, value in draft["ratings"].items():
        if not str(value).lstrip("-").isdigit():
            raise FormProblem(f"rating.{dimension}: '{value}' is not one of the scale's values")
        ratings[dimension] = int(value)
    return HumanLabel(ratings=ratings, rationale=draft["rationale"])


def _text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    if len(value) > MAX_FIELD_CHARS:
        raise FormProblem(f"rationale: longer than {MAX_FIELD_CHARS} characters")
    return value.replace("\x00", "")
