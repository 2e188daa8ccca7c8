"""What a grade request ends as, below HTTP: refused before any judge call (and why, with
the field), graded, or failed; and the same outcome again when a retry replays it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from judges import (
    GradeRequest,
    GradeResult,
    GuardError,
    JudgeConfigError,
    RequestError,
    TemplateError,
)
from judges.batch import REFUSALS
from rubrics import PenaltyWeightedRubric, Rubric, RubricError, parse_rubric
from service.errors import NoJudgeAnswered, Rejected, ServiceError
from service.stores import requests
from service.stores.rubrics import RubricNotFound, find_rubric, save_rubric

RUBRIC_KIND_FOR = {"rubric": "penalty_weighted", "explanation": "scale"}
_RUBRIC_FIELDS = {"rubric_id", "rubric_version", "rubric_hash"}  # answered as `rubric`


class RubricKindError(ValueError):
    """The rubric does not fit the body's `kind`."""


# The field each kind of refusal is about, when the error does not name one itself.
_FIELD_OF = (
    (RubricNotFound, "rubric_id"),
    (RubricKindError, "rubric"),
    (RubricError, "rubric"),
    (GuardError, "candidate_model"),
    (JudgeConfigError, "judges"),
    (TemplateError, "rubric"),
    (RequestError, "rubric"),
)


# A refusal whose message starts with a request field ("reference: ...") is about that field.
_REQUEST_FIELDS = {*GradeRequest.model_fields, "rubric_id", "kind"}
_LEADING_FIELD = re.compile(r"^(\w+): ")


def rejection(exc: Exception) -> Rejected:
    """A request the grading core refuses, with the field it is about: the one the error
    names, else the one its message starts with, else the one its kind is about."""
    field = getattr(exc, "field", None)
    leading = _LEADING_FIELD.match(str(exc))
    if field is None and leading is not None and leading.group(1) in _REQUEST_FIELDS:
        field = leading.group(1)
    if field is None:
        field = next((name for kind, name in _FIELD_OF if isinstance(exc, kind)), None)
    message = str(exc)
    kind = "guard_refused" if isinstance(exc, GuardError) else "value_error"
    return Rejected(field, message.removeprefix(f"{field}: ") if field else message, kind)


REFUSED = (RubricNotFound, RubricError, RubricKindError, *REFUSALS)


def body_rubric(
    session: Session,
    project: str,
    body: Any,
    max_criteria: int,
    seen: dict[tuple[str, str], Rubric] | None = None,
    check: Callable[[Rubric], Any] = lambda rubric: None,
) -> Rubric:
    """The rubric a request body names or carries, resolved and stored in `project`, checked
    against its `kind` when the body gives one. `seen` remembers rubrics by (project,
    reference) within one transaction (many requests name the same). An inline rubric is
    stored only once `check` (its template) has passed."""
    seen = seen if seen is not None else {}
    if body.rubric is not None:
        inline = parse_rubric(body.rubric, source="rubric")
        check(inline)
        rubric, _ = save_rubric(session, project, inline)
    elif (project, body.rubric_id) in seen:
        rubric = seen[(project, body.rubric_id)]
    else:
        rubric, stored = find_rubric(session, project, body.rubric_id)
        if not stored:  # library rubrics: stored in the project on first use
            rubric, _ = save_rubric(session, project, rubric)
        seen[(project, body.rubric_id)] = rubric
    expected = RUBRIC_KIND_FOR[body.kind] if body.kind is not None else rubric.kind
    if rubric.kind != expected:
        raise RubricKindError(
            f"kind '{body.kind}' needs a {expected} rubric; '{rubric.id}' is {rubric.kind}"
        )
    if isinstance(rubric, PenaltyWeightedRubric) and len(rubric.criteria) > (max_criteria):
        raise RubricError(f"criteria: more than {max_criteria} criteria")
    return rubric


def outcome_of(request_id: str, result: GradeResult) -> tuple[str, dict[str, Any]]:
    """The outcome of a graded request and its response body (stored for replays)."""
    payload = {
        "request_id": request_id,
        "rubric": {
            "id": result.rubric_id,
            "version": result.rubric_version,
            "hash": result.rubric_hash,
        },
        **result.model_dump(mode="json", exclude=_RUBRIC_FIELDS),
    }
    if result.provider_outage:
        failing = ", ".join(f"{r.judge}: {r.error}" for r in result.results)
        payload["detail"] = f"no judge could answer ({failing})"
        return requests.OUTAGE, payload
    if result.status == "failed":
        payload["detail"] = "no judge produced a usable verdict; see results[].error"
        return requests.NO_VERDICT, payload
    return requests.GRADED, payload


def as_outcome(outcome: str, payload: dict[str, Any]) -> dict[str, Any] | ServiceError:
    if outcome == requests.GRADED:
        return payload
    if outcome == requests.REJECTED:
        return Rejected(
            payload.get("field"),
            str(payload.get("message", payload)),
            payload.get("type", "value_error"),
        )
    return NoJudgeAnswered(
        str(payload.get("detail", "no judge answered")), payload, outcome == requests.OUTAGE
    )


def replayed(replay: requests.Replay) -> dict[str, Any] | ServiceError:
    return as_outcome(replay.outcome, replay.result)
