"""Use-case errors become HTTP in one place (service/api/errors.py)."""

from __future__ import annotations

import json

from service.api.errors import error_response
from service.errors import (
    Busy,
    Conflict,
    NoJudgeAnswered,
    NotConfigured,
    RateLimited,
    Rejected,
    StorageUnavailable,
)


def body(response) -> object:
    return json.loads(response.body)


def test_a_rejected_field_is_a_422_naming_it_below_the_body_or_the_batch_item():
    response = error_response(Rejected("rubric.criteria", "101 criteria; the limit is 100"))
    assert response.status_code == 422
    assert body(response)["detail"][0]["loc"] == ["body", "rubric", "criteria"]
    item = error_response(Rejected("candidate_model", "unknown maker"), ("body", "items", 3))
    assert body(item)["detail"][0]["loc"] == ["body", "items", 3, "candidate_model"]
    assert body(error_response(Rejected(None, "no field"))) == {
        "detail": [{"loc": ["body"], "msg": "no field", "type": "value_error"}]
    }


def test_retryable_errors_carry_retry_after():
    cases = [
        (Conflict("in progress", retry_after=2), 409, "2", ["header", "Idempotency-Key"]),
        (Busy("busy"), 503, "1", []),
        (RateLimited("limit", 17), 429, "17", ["header", "Authorization"]),
        (StorageUnavailable("database down"), 503, "5", []),
    ]
    kinds = {409: "conflict", 429: "rate_limited", 503: "unavailable"}
    for error, status, retry_after, loc in cases:
        response = error_response(error)
        assert (response.status_code, response.headers["retry-after"]) == (status, retry_after)
        assert body(response) == {
            "detail": [{"loc": loc, "msg": error.message, "type": kinds[status]}]
        }
    conflict = error_response(Conflict("used with a different body"))
    assert conflict.status_code == 409 and "retry-after" not in conflict.headers
    assert error_response(NotConfigured("no judges")).status_code == 503


def test_no_judge_answered_is_503_on_an_outage_and_502_without_a_verdict_with_the_grade():
    payload = {"request_id": "r1", "status": "failed", "results": [], "detail": "x"}
    outage = error_response(NoJudgeAnswered("x", payload, outage=True))
    expected = {**payload, "detail": [{"loc": [], "msg": "x", "type": "unavailable"}]}
    assert (outage.status_code, outage.headers["retry-after"], body(outage)) == (503, "5", expected)
    unusable = error_response(NoJudgeAnswered("x", payload, outage=False))
    expected = {**payload, "detail": [{"loc": [], "msg": "x", "type": "no_verdict"}]}
    assert (unusable.status_code, body(unusable)) == (502, expected)
    assert "retry-after" not in unusable.headers
