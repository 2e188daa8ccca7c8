"""GET/POST /rubrics: versioned rubrics (a changed body is a new version)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse

from judges.fit import template_of
from judges.templates import BUNDLED, TemplateError
from rubrics import RubricError, parse_rubric, rubric_hash
from service.api.deps import JudgeKey
from service.api.errors import error_responses, http_error, invalid
from service.db.engine import session_scope
from service.stores.rubrics import (
    RubricNotFound,
    get_rubric,
    list_rubrics,
    rubric_versions,
    save_rubric,
)

router = APIRouter(tags=["rubrics"], responses=error_responses(401, 403, 404, 422, 503))
# Stored rubrics are the caller's project's (an admin key's too: rubric ids resolve in one
# namespace, the one its grading uses), with the bundled library shared read-only.

EXAMPLE = {
    "kind": "penalty_weighted",
    "id": "egyptian-proverb-meaning",
    "criteria": [
        {"id": "meaning", "kind": "positive", "weight": 2, "text": "Gives the proverb's meaning"},
        {"id": "usage", "kind": "positive", "weight": 1, "text": "Says when it is used"},
        {"id": "levant", "kind": "negative", "weight": 1, "text": "Attributes it to the Levant"},
    ],
}


def _with_hash(rubric) -> dict[str, Any]:
    return {**rubric.model_dump(mode="json"), "hash": rubric_hash(rubric)}


@router.get("/rubrics", summary="Stored and bundled rubrics with their latest versions")
def index(request: Request, caller: JudgeKey) -> list[dict[str, Any]]:
    with session_scope(request.app.state.sessions) as session:
        return list_rubrics(session, caller.project)


@router.get("/rubrics/{rubric_ref}", summary="A rubric by 'id' (latest) or 'id@version'")
def show(rubric_ref: str, request: Request, caller: JudgeKey) -> dict[str, Any]:
    with session_scope(request.app.state.sessions) as session:
        try:
            return _with_hash(get_rubric(session, caller.project, rubric_ref))
        except (RubricNotFound, RubricError) as exc:
            raise http_error(404, ["path", "rubric_ref"], str(exc)) from None


@router.get("/rubrics/{rubric_id}/versions", summary="Every stored version of a rubric")
def versions(rubric_id: str, request: Request, caller: JudgeKey) -> list[dict[str, Any]]:
    with session_scope(request.app.state.sessions) as session:
        found = rubric_versions(session, caller.project, rubric_id)
    if not found:
        raise http_error(404, ["path", "rubric_id"], f"no stored rubric '{rubric_id}'")
    return [_with_hash(r) for r in found]


@router.post(
    "/rubrics",
    status_code=201,
    summary="Store a rubric; the same body returns the existing version (200)",
    responses={200: {"description": "identical to a stored version"}, **error_responses(413)},
)
def create(
    request: Request,
    caller: JudgeKey,
    body: dict[str, Any] = Body(openapi_examples={"rubric": {"value": EXAMPLE}}),
) -> JSONResponse:
    criteria = body.get("criteria")
    limit = request.app.state.settings.max_criteria  # the same limit POST /judge enforces
    if isinstance(criteria, list) and len(criteria) > limit:
        message = f"{len(criteria)} criteria; the limit is {limit}"
        raise http_error(422, ["body", "criteria"], message)
    try:
        rubric = parse_rubric(body, source="body")
    except RubricError as exc:
        raise invalid(str(exc)) from None
    grader = request.app.state.grader
    try:  # an unknown template, or one that would drop the rubric's anchors, is not stored
        template_of(rubric, grader.templates if grader is not None else BUNDLED, field="template")
    except TemplateError as exc:
        raise http_error(422, ["body", "template"], str(exc).removeprefix("template: ")) from None
    with session_scope(request.app.state.sessions) as session:
        stored, created = save_rubric(session, caller.project, rubric)
        # Rendered before the commit: if the answer cannot be built, nothing is stored.
        response = JSONResponse(_with_hash(stored), status_code=201 if created else 200)
    return response
