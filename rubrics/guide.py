"""A rubric as the SME grades it, in plain text for a spreadsheet cell (`qadi sme queue`).

The judge sees the rubric through its prompt template; an SME grading in a spreadsheet sees
only the file, so each queued row carries this text: a scale rubric's range and its anchors
per dimension (the level descriptions the score is read against), a penalty-weighted
rubric's criteria with the points each earns or loses and the formula rubrics/scoring.py
applies to them, so the SME's score is on the judge's scale."""

from __future__ import annotations

from rubrics.models import PenaltyWeightedRubric, Rubric
from rubrics.scoring import possible_points


def sme_guide(rubric: Rubric) -> str:
    """The rubric's id@version, title, and what a score means under it, one line each."""
    head = [f"{rubric.id}@{rubric.version}" + (f": {rubric.title}" if rubric.title else "")]
    if isinstance(rubric, PenaltyWeightedRubric):
        possible = possible_points(rubric)
        clip = ", clipped to 0-100" if rubric.clip else ""
        lines = [f"score = 100 * (points earned - points lost) / {possible:g}{clip}"]
        lines += [
            f"[{c.id}] {'earns' if c.kind == 'positive' else 'loses'} {c.weight:g} if met: {c.text}"
            for c in rubric.criteria
        ]
        return "\n".join(head + lines)
    lines = [f"score {rubric.scale.min}-{rubric.scale.max}"]
    for dimension in rubric.dimensions:
        lines.append(f"{dimension.id}:")
        lines += [f"  {level} = {text}" for level, text in sorted(dimension.anchors.items())]
    return "\n".join(head + lines)
