"""POST /judge and POST /judge/batch."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from service.api.deps import require
from service.api.schemas import (
    EXAMPLE_EXPLANATION_BODY,
    EXAMPLE_RUBRIC_BODY,
    BatchBody,
    BatchItemResult,
    BatchResponse,
    ExplanationJudgeBody,
    JudgeBody,
    JudgeResponse,
    RubricJudgeBody,
)

router = APIRouter(tags=["judge"])
_JUDGE_BODY: TypeAdapter = TypeAdapter(JudgeBody)

FAILURES = {
    401: {"description": "missing or invalid API key"},
    403: {"description": "the key lacks the 'judge' scope"},
    409: {"description": "Idempotency-Key reused with another body, or still in progress"},
    413: {"description": "request body over the size limit"},
    422: {"description": "invalid input; `detail[].loc` names the field"},
    502: {"description": "every judge failed; results[].error says why; no score"},
    503: {"description": "no judges configured"},
}


@router.post(
    "/judge",
    response_model=JudgeResponse,
    responses=FAILURES,
    summary="Grade one answer with a panel of judges",
)
async def judge(
    request: Request,
    body: Annotated[
        RubricJudgeBody | ExplanationJudgeBody,
        Body(
            discriminator="kind",
            openapi_examples={
                "rubric": {"summary": "penalty-weighted rubric", "value": EXAMPLE_RUBRIC_BODY},
                "explanation": {"summary": "1-5 explanation", "value": EXAMPLE_EXPLANATION_BODY},
            },
        ),
    ],
    idempotency_key: str | None = Header(default=None, max_length=256),
    key_id: int | None = Depends(require("judge")),
) -> JSONResponse:
    outcome = await request.app.state.judging.judge(body, idempotency_key, key_id)
    return JSONResponse(outcome.body, status_code=outcome.status_code, headers=outcome.headers)


@router.post(
    "/judge/batch",
    response_model=BatchResponse,
    responses=FAILURES,
    summary="Grade several answers; each item succeeds or fails on its own",
)
async def judge_batch(
    request: Request,
    body: BatchBody,
    idempotency_key: str | None = Header(default=None, max_length=200),
    key_id: int | None = Depends(require("judge")),
) -> JSONResponse:
    state = request.app.state
    limit = state.settings.max_batch_items
    if len(body.items) > limit:
        detail = [
            {
                "loc": ["body", "items"],
                "msg": f"{len(body.items)} items; the limit is {limit}",
                "type": "too_long",
            }
        ]
        return JSONResponse({"detail": detail}, status_code=422)

    async def one(index: int, raw: dict) -> BatchItemResult:
        try:
            item = _JUDGE_BODY.validate_python(raw)
        except ValidationError as exc:
            errors = [
                {"loc": ["body", "items", index, *e["loc"]], "msg": e["msg"], "type": e["type"]}
                for e in exc.errors(include_url=False, include_context=False, include_input=False)
            ]
            return BatchItemResult(index=index, status_code=422, body={"detail": errors})
        key = f"{idempotency_key}#{index}" if idempotency_key else None
        outcome = await state.judging.judge(item, key, key_id)
        return BatchItemResult(index=index, status_code=outcome.status_code, body=outcome.body)

    results = await asyncio.gather(*(one(i, raw) for i, raw in enumerate(body.items)))
    return JSONResponse(BatchResponse(results=list(results)).model_dump(mode="json"))
