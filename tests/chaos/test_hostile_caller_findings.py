"""A hostile caller's findings of 2026-12-02, each now a clear 422 in the one error shape (or
a scope round that goes on): rubric versions past six digits or not in ASCII digits, bodies
that are not JSON or not UTF-8, validation errors that echoed their input, keys and columns
named twice (the last value was kept silently), attributes that are objects, scores with
'_', Idempotency-Keys that could meet a batch's items, and scope schedules that overflow."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from service.stores.scopes import ScopeSpec
from tests.integration.test_service_api import rubric_body

RUBRIC = "iraqi-linguistic-shaku-maku"
GRADE = '{"item_id": "hc-1", "rater": "r1", "rater_kind": "human", "score": 50%s}'


def one_error(response, status: int = 422) -> dict:
    """The response's only error item, in the one shape and nothing else (no `input`)."""
    assert response.status_code == status, response.text
    [item] = response.json()["detail"]
    assert set(item) == {"loc", "msg", "type"}, item
    return item


def stored_grades(service) -> int:
    return len(service.get("/grades", scope="grades").json()["items"])


@pytest.mark.parametrize("version", ["99999999999999999999", "1000000", "²", "①", "٢"])
def test_a_rubric_version_past_six_ascii_digits_names_the_field(service, llm_server, version):
    judged = service.post("/judge", json=rubric_body(rubric_id=f"{RUBRIC}@{version}"))
    error = one_error(judged)
    assert error["loc"] == ["body", "rubric_id"] and "whole number" in error["msg"]
    batch = service.post("/judge/batch", json={"items": [rubric_body(rubric_id=f"{RUBRIC}@{version}")]})
    assert batch.status_code == 200, batch.text
    [item] = batch.json()["results"]
    assert item["status_code"] == 422
    looked_up = service.get(f"/rubrics/{RUBRIC}@{version}")
    assert looked_up.status_code == 404 and set(looked_up.json()["detail"][0]) == {
        "loc", "msg", "type"}  # fmt: skip
    assert llm_server.calls() == 0


def test_a_stored_rubric_version_past_six_digits_is_refused(service):
    body = {"kind": "scale", "id": "hc-scale", "version": 10**7, "scale": {"min": 1, "max": 5},
            "dimensions": [{"id": "q", "text": "quality"}]}  # fmt: skip
    error = one_error(service.post("/rubrics", scope="admin", json=body))
    assert error["loc"] == ["body", "version"]


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/octet-stream"])
def test_a_body_not_sent_as_json_says_so(service, content_type):
    headers = {"content-type": content_type} if content_type else {}
    for body in (b"\xff\xfe not text", b'{"kind": "scale"}'):
        error = one_error(service.post("/rubrics", scope="admin", content=body, headers=headers))
        assert error["loc"] == ["body"]
        assert "Content-Type: application/json" in error["msg"], error
        assert (content_type or "no Content-Type") in error["msg"]


@pytest.mark.parametrize(
    ("body", "words"),
    [(b"\xff", "not UTF-8"), (b'{"kind": "rubric",', "not valid JSON"), (b"[1, 2", "line 1")],
)
def test_json_that_cannot_be_read_is_a_422_naming_the_body(service, body, words):
    headers = {"content-type": "application/json"}
    error = one_error(service.post("/judge", content=body, headers=headers))
    assert error["loc"] == ["body"] and words in error["msg"]


@pytest.mark.parametrize("query", ["limit=-1", "since=2020-13-45", "limit=abc"])
def test_a_query_error_does_not_echo_its_input(service, query):
    error = one_error(service.get(f"/judgments?{query}"))
    assert error["loc"][0] == "query"


def refused_upload(service, content_type: str, text: str) -> str:
    """The one error of a refused grades upload, once nothing of it was stored."""
    headers = {"content-type": content_type}
    error = one_error(service.post("/grades", scope="grades", content=text, headers=headers))
    assert stored_grades(service) == 0
    return error["msg"]


def test_a_key_named_twice_in_a_json_body_is_refused_and_nothing_stored(service):
    text = '{"grades": [%s]}' % (GRADE % ', "score": 60')
    assert "'score' appears twice" in refused_upload(service, "application/json", text)
    lines = (GRADE % "") + "\n" + (GRADE % ', "score": 70').replace("hc-1", "hc-2")
    said = refused_upload(service, "application/jsonl", lines)
    assert said.startswith("row 2: key 'score' appears twice"), said


@pytest.mark.parametrize(("row", "words"), [
    ("item_id,rater,rater_kind,score,score\nhc-1,r1,human,50,60\n", "['score'] more than once"),
    ("item_id,rater,rater_kind,score\nhc-1,r1,human,1_000\n", "'1_000' is not a number"),
])  # fmt: skip
def test_a_csv_that_would_lose_or_misread_a_value_is_refused(service, row, words):
    """A column named twice kept its last cell; float() read '1_000' as 1000."""
    assert words in refused_upload(service, "text/csv", row)


@pytest.mark.parametrize(("extra", "words"), [
    (', "dialect": {"x": 1}', "dialect: an attribute is text or a number, not an object"),
    (', "attributes": {"dialect": ["a"]}', "dialect: an attribute is text or a number, not a list"),
])  # fmt: skip
def test_an_attribute_that_is_an_object_or_a_list_is_refused(service, extra, words):
    row = GRADE.replace('"score": 50%s', f'"score": 50{extra}')
    response = service.post("/grades", scope="grades", json={"grades": [json.loads(row)]})
    assert words in one_error(response)["msg"]
    assert stored_grades(service) == 0


def test_an_idempotency_key_with_a_hash_is_refused_on_both_routes(service, llm_server):
    headers = {"Idempotency-Key": "kX#0"}
    for path, body in (("/judge", rubric_body()), ("/judge/batch", {"items": [rubric_body()]})):
        error = one_error(service.post(path, json=body, headers=headers))
        assert error["loc"] == ["header", "Idempotency-Key"] and "'#'" in error["msg"]
    assert llm_server.calls() == 0


@pytest.mark.parametrize(
    "schedule",
    [{"every_hours": math.inf}, {"every_hours": 1e-300}, {"every_hours": 24 * 367},
     {"every_labels": 10**20}, {"window_hours": math.inf, "every_hours": 24}],
)  # fmt: skip
def test_a_schedule_no_clock_or_column_can_hold_is_refused(schedule):
    with pytest.raises(ValidationError) as refused:
        ScopeSpec(name="s", rubric=RUBRIC, alpha=0.1, delta=0.1, **schedule)
    [error] = refused.value.errors()
    assert error["loc"][0] in schedule
