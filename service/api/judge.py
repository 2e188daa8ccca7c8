"""POST /judge and POST /judge/batch."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Body, Header, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from service.api.deps import JudgeKey, JudgingDep
from service.api.errors import error_response, error_responses, field_error, http_error
from service.api.formats import FastJSONResponse
from service.api.schemas import (
    EXAMPLE_EXPLANATION_BODY,
    EXAMPLE_RUBRIC_BODY,
    BatchBody,
    BatchItemResult,
    BatchResponse,
    JudgeBody,
    JudgeResponse,
)
from service.errors import ServiceError

router = APIRouter(tags=["judge"])

FAILURES = error_responses(
    401,
    403,
    409,
    413,
    422,
    429,
    502,
    503,
    _503="every judge's provider failed, the service is at capacity, the database is "
    "unavailable, or no judges are configured; see Retry-After",
)


def _own(key: str | None) -> str | None:
    """A client's Idempotency-Key, refused when it holds '#': a batch's items are kept under
    'key#index', so such a key could meet another request's item (its result, or a 409)."""
    if key is not None and "#" in key:
        raise http_error(
            422, ["header", "Idempotency-Key"], "must not contain '#' (kept for a batch's items)"
        )
    return key


@router.post(
    "/judge",
    response_model=JudgeResponse,
    responses=FAILURES,
    summary="Grade one answer with a panel of judges",
)
async def judge(
    body: Annotated[
        JudgeBody,
        Body(
            openapi_examples={
                "rubric": {"summary": "penalty-weighted rubric", "value": EXAMPLE_RUBRIC_BODY},
                "explanation": {"summary": "1-5 explanation", "value": EXAMPLE_EXPLANATION_BODY},
            },
        ),
    ],
    judging: JudgingDep,
    caller: JudgeKey,
    idempotency_key: str | None = Header(default=None, max_length=256),
) -> JSONResponse:
    return FastJSONResponse(
        await judging.judge(body, _own(idempotency_key), caller.key_id, caller.project)
    )


@router.post(
    "/judge/batch",
    response_model=BatchResponse,
    responses=FAILURES,
    summary="Grade several answers; each item succeeds or fails on its own",
)
async def judge_batch(
    request: Request,
    body: BatchBody,
    judging: JudgingDep,
    caller: JudgeKey,
    idempotency_key: str | None = Header(default=None, max_length=200),
) -> JSONResponse:
    idempotency_key = _own(idempotency_key)
    limit = request.app.state.settings.max_batch_items
    if len(body.items) > limit:
        message = f"{len(body.items)} items; the limit is {limit}"
        return JSONResponse(field_error(["body", "items"], message, "too_long"), 422)
    results: list[BatchItemResult | None] = [None] * len(body.items)
    valid, keys = [], []
    for index, raw in enumerate(body.items):
        try:
            valid.append((index, JudgeBody.model_validate(raw)))
        except ValidationError as exc:
            errors = [
                {"loc": ["body", "items", index, *e["loc"]], "msg": e["msg"], "type": e["type"]}
                for e in exc.errors(include_url=False, include_context=False, include_input=False)
            ]
            results[index] = BatchItemResult(index=index, status_code=422, body={"detail": errors})
            continue
        keys.append(f"{idempotency_key}#{index}" if idempotency_key else None)
    outcomes = await judging.judge_many(
        [item for _, item in valid], keys, caller.key_id, caller.project
    )
    for (index, _), outcome in zip(valid, outcomes, strict=True):
        if isinstance(outcome, ServiceError):
            response = error_response(outcome, ("body", "items", index))
            results[index] = BatchItemResult(
                index=index, status_code=response.status_code, body=json.loads(response.body)
            )
        else:
            results[index] = BatchItemResult(index=index, status_code=200, body=outcome)
    return FastJSONResponse(BatchResponse(results=results).model_dump(mode="json"))
