"""Penalty-weighted scoring: the code, never the judge model, does the arithmetic.

score = 100 · clip((Σ met positive weights − Σ triggered negative weights)
                  / Σ positive weights, 0, 1)
The same function scores judge verdicts and SME per-criterion marks, so both land on one scale.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from rubrics.errors import RubricError
from rubrics.models import PenaltyWeightedRubric


class RubricScore(BaseModel):
    score: float
    raw_score: float
    clipped: bool
    clip_enabled: bool
    earned: float
    penalty: float
    possible: float


def score(rubric: PenaltyWeightedRubric, marks: Mapping[str, bool]) -> RubricScore:
    """Score per-criterion marks: id -> met (for a negative criterion: the error is present).

    Every criterion must be marked and no unknown id may appear: a partial verdict is not
    a grade, and guessing the missing marks would fabricate one.
    """
    ids = {c.id for c in rubric.criteria}
    missing = sorted(ids - set(marks))
    unknown = sorted(set(marks) - ids)
    problems = []
    if unknown:
        problems.append(f"unknown criterion ids {unknown}")
    if missing:
        problems.append(f"missing verdicts for {missing}")
    if problems:
        raise RubricError("criteria: " + "; ".join(problems))
    possible = possible_points(rubric)
    earned = sum(c.weight for c in rubric.criteria if c.kind == "positive" and marks[c.id])
    penalty = sum(c.weight for c in rubric.criteria if c.kind == "negative" and marks[c.id])
    final, raw = scaled(rubric, earned - penalty, possible)
    return RubricScore(
        score=final,
        raw_score=raw,
        clipped=final != raw,
        clip_enabled=rubric.clip,
        earned=earned,
        penalty=penalty,
        possible=possible,
    )


def possible_points(rubric: PenaltyWeightedRubric) -> float:
    """Σ positive weights: the points of an answer that meets every requirement."""
    return sum(c.weight for c in rubric.criteria if c.kind == "positive")


def scaled(rubric: PenaltyWeightedRubric, net: float, possible: float) -> tuple[float, float]:
    """(score, raw score) of `net` points (met positive weights less triggered negative
    ones) out of `possible`: on the 0–100 scale, clipped to it when the rubric clips."""
    raw = 100.0 * net / possible
    return (min(max(raw, 0.0), 100.0) if rubric.clip else raw), raw
