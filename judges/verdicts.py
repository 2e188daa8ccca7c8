"""Strict parsing of judge replies. Anything that is not a complete, in-range verdict is a
`ParseFailure` carrying the reason; the caller records it with the raw reply and no score."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from calibration.formats.lines import UNIQUE_KEYS, RepeatedKey
from judges.models import CriterionVerdict
from judges.templates import PromptTemplate
from rubrics import PenaltyWeightedRubric, Rubric, RubricError, ScaleRubric, score


class ParseFailure(ValueError):
    """The reply is not a usable verdict."""


class Verdict(BaseModel):
    score: float
    raw_score: float | None = None
    clipped: bool | None = None
    dimensions: dict[str, float] = Field(default_factory=dict)
    criteria: list[CriterionVerdict] = Field(default_factory=list)
    rationale: str | None = None


_FENCED = re.compile(r"^\s*```(?:json|JSON| Json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


def parse_reply(template: PromptTemplate, rubric: Rubric, reply: str) -> Verdict:
    if template.output == "first_integer":
        return _first_integer(rubric, reply)
    if template.output == "rating_json":
        return _rating(rubric, reply)
    data = json_object(reply)
    if template.output == "criteria_json":
        if not isinstance(rubric, PenaltyWeightedRubric):
            raise ParseFailure("criteria verdict for a rubric that has no criteria")
        return _criteria(rubric, data)
    if not isinstance(rubric, ScaleRubric):
        raise ParseFailure("scale verdict for a rubric that has no scale")
    return _scores(rubric, data)


def json_object(reply: str) -> dict[str, Any]:
    """A JSON object, alone or in one markdown code fence; nothing else is accepted."""
    match = _FENCED.match(reply)
    text = match.group(1) if match else reply
    try:
        # a key named twice says two things; taking the last would pick one silently (31.4)
        data = UNIQUE_KEYS.decode(text)
    except RepeatedKey as exc:
        raise ParseFailure(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ParseFailure(f"reply is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise ParseFailure(f"reply is JSON but not an object ({type(data).__name__})")
    return data


def _criteria(rubric: PenaltyWeightedRubric, data: dict[str, Any]) -> Verdict:
    items = data.get("criteria")
    if not isinstance(items, list):
        raise ParseFailure("reply has no 'criteria' list")
    verdicts: list[CriterionVerdict] = []
    marks: dict[str, bool] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ParseFailure(f"criteria[{i}] is not an object")
        cid, met = item.get("id"), item.get("met")
        if not isinstance(cid, str):
            raise ParseFailure(f"criteria[{i}].id is missing or not a string")
        if not isinstance(met, bool):
            raise ParseFailure(f"criteria[{i}].met for '{cid}' is not true/false")
        if cid in marks:
            raise ParseFailure(f"criterion '{cid}' is judged twice")
        marks[cid] = met
        evidence = item.get("evidence", "")
        evidence = evidence if isinstance(evidence, str) else ""
        verdicts.append(CriterionVerdict(id=cid, met=met, evidence=evidence))
    try:
        result = score(rubric, marks)
    except RubricError as exc:
        raise ParseFailure(str(exc)) from None
    rationale = data.get("rationale")
    return Verdict(
        score=result.score,
        raw_score=result.raw_score,
        clipped=result.clipped,
        criteria=verdicts,
        rationale=rationale if isinstance(rationale, str) else None,
    )


def _scores(rubric: ScaleRubric, data: dict[str, Any]) -> Verdict:
    dimensions: dict[str, float] = {}
    for dim in rubric.dimensions:
        key = f"{dim.id}_score"
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParseFailure(f"'{key}' is missing or not a number")
        if not rubric.scale.min <= value <= rubric.scale.max:
            raise ParseFailure(
                f"'{key}' = {value} is outside {rubric.scale.min}-{rubric.scale.max}"
            )
        dimensions[dim.id] = float(value)
    return Verdict(score=dimensions[rubric.primary_dimension], dimensions=dimensions)


def _rating(rubric: Rubric, reply: str) -> Verdict:
    """Exactly one rating, `{"rating": N}` as the schema asks (alone or in one code fence).

    Anything else is a parse failure, never a grade (issue 13.5): a refusal that mentions a
    number, "3 or 4", a float, extra keys, and a bare `4` too (issue 26.5: the contract is the
    JSON object; only the `*-paper` rubrics read free text, by their paper's rule).
    """
    if not isinstance(rubric, ScaleRubric):
        raise ParseFailure("rating verdict for a rubric that has no scale")
    if _BARE_NUMBER.fullmatch(reply.strip()):
        raise ParseFailure('reply is a bare number; it must be {"rating": <integer>}')
    data = json_object(reply)
    if set(data) != {"rating"}:
        raise ParseFailure(f'reply must be exactly {{"rating": <integer>}}, has {sorted(data)}')
    value = data["rating"]
    lo, hi = rubric.scale.min, rubric.scale.max
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ParseFailure(f"rating {value!r} is not an integer in {lo}-{hi}")
    dim = rubric.primary_dimension
    return Verdict(score=float(value), dimensions={dim: float(value)})


_BARE_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _first_integer(rubric: Rubric, reply: str) -> Verdict:
    """Kinayat's rule, for reproducing the paper only: the first whitespace token that is a
    digit string within the scale: `next(int(tok) for tok in reply.split() if tok.isdigit()
    and 1 <= int(tok) <= 5)` (seed notes /work/shared/seeds/notes/000_kinayat.md line 293,
    metrics.llm_judge_score). Template kinayat-explanation@1, rubric kinayat-explanation-paper.
    It turns "I cannot rate this; there are 2 problems" into 2, which is why the service
    uses `_rating`."""
    if not isinstance(rubric, ScaleRubric):
        raise ParseFailure("integer verdict for a rubric that has no scale")
    lo, hi = rubric.scale.min, rubric.scale.max
    for token in reply.split():
        if token.isdigit():
            try:
                value = int(token)
            except ValueError:
                continue
            if lo <= value <= hi:
                dim = rubric.primary_dimension
                return Verdict(score=float(value), dimensions={dim: float(value)})
    raise ParseFailure(f"no whitespace-separated integer in {lo}-{hi} in the reply")
