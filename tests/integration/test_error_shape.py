"""One error shape everywhere (issue 16 item 8): FastAPI's `{"detail": [{loc, msg, type}]}`
for every status the API answers with, `loc` naming the field itself, and every route's
error responses documented with that schema in OpenAPI."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import judges_config_data
from tests.integration.test_service_api import Service, rubric_body, verdict


@pytest.fixture
def service(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return Service(migrated_db, path, max_body_bytes=4000, rate_limit_per_minute=3)


def problems(response, status: int) -> list[dict]:
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail, detail
    for item in detail:
        assert isinstance(item["loc"], list) and isinstance(item["msg"], str), item
        assert isinstance(item["type"], str), item
    return detail


def test_every_status_has_the_one_shape_and_names_where_the_problem_is(service, llm_server):
    client = service.client
    [missing] = problems(client.post("/judge", json=rubric_body()), 401)
    assert missing["loc"] == ["header", "Authorization"] and missing["type"] == "unauthorized"
    [scope] = problems(service.post("/grades", scope="judge", json=[]), 403)
    assert scope["loc"] == ["header", "Authorization"] and "'grades' scope" in scope["msg"]
    [route] = problems(client.get("/no-such-route"), 404)
    assert route["type"] == "not_found"
    [judgment] = problems(service.get("/judgments/nope"), 404)
    assert judgment["loc"] == ["path", "judgment_id"]
    problems(client.delete("/healthz"), 405)
    [big] = problems(service.post("/judge", json=rubric_body(response="x" * 5000)), 413)
    assert big["loc"] == ["body"] and big["type"] == "too_large"

    # a top-level field of /judge is ["body", FIELD]: the `kind` tag ("rubric") is no part of it
    extra = problems(service.post("/judge", json={**rubric_body(), "item_id": "a"}), 422)
    assert [e["loc"] for e in extra] == [["body", "item_id"]]
    absent = problems(service.post("/judge", json={"kind": "rubric", "response": "x"}), 422)
    assert ["body", "candidate_model"] in [e["loc"] for e in absent]
    assert not [e for e in absent if e["loc"][:2] == ["body", "rubric"]]

    llm_server.script({"content": verdict()})
    headers = {"Idempotency-Key": "shape-1"}
    assert service.post("/judge", json=rubric_body(), headers=headers).status_code == 200
    other = rubric_body(response="another answer")
    [conflict] = problems(service.post("/judge", json=other, headers=headers), 409)
    assert conflict["loc"] == ["header", "Idempotency-Key"] and conflict["type"] == "conflict"
    # the key's limit is 3 a minute: within a few more requests one is refused
    answers = [service.post("/judge", json=rubric_body()) for _ in range(4)]
    refused = [a for a in answers if a.status_code == 429]
    assert refused, [a.status_code for a in answers]
    [limited] = problems(refused[0], 429)
    assert limited["loc"] == ["header", "Authorization"] and limited["type"] == "rate_limited"
    assert int(refused[0].headers["retry-after"]) > 0


def test_no_judge_configured_and_a_failed_grade_keep_the_shape(migrated_db, tmp_path):
    unconfigured = Service(migrated_db, None)
    [problem] = problems(unconfigured.post("/judge", json=rubric_body()), 503)
    assert problem["loc"] == [] and problem["type"] == "unavailable"


def test_every_error_response_in_openapi_has_the_error_schema(service):
    document = service.client.get("/openapi.json").json()
    checked = secured = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if int(status) < 400:
                    continue
                schema = answer["content"]["application/json"]["schema"]["$ref"]
                expected = "FailedGradeBody" if status == "502" else "ErrorBody"
                assert schema.endswith(f"/{expected}"), (method, path, status)
                checked += 1
            if operation.get("security"):  # an API key is needed: refusals are documented
                assert {"401", "403"} <= set(operation["responses"]), (method, path)
                secured += 1
    assert checked > 40 and secured > 10
    error = document["components"]["schemas"]["ErrorItem"]
    assert set(error["required"]) == {"loc", "msg", "type"}
