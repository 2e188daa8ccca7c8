"""The HTTP service over TestClient: persistence, cache, idempotency, auth, limits, versioning."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.db.engine import (
    NotMigratedError,
    make_engine,
    make_sessionmaker,
    session_scope,
)
from service.settings import Settings
from service.stores.keys import create_key
from tests.conftest import commit_rounds, judges_config_data

IRAQI = {
    "shaku_meaning": True,
    "maku_meaning": True,
    "greeting_example": False,
    "thanks_confusion": False,
    "msa_claim": False,
}


def verdict(marks=IRAQI) -> str:
    return json.dumps(
        {
            "criteria": [{"id": k, "met": v, "evidence": "e"} for k, v in marks.items()],
            "rationale": "r",
        }
    )


def rubric_body(**overrides):
    body = {
        "kind": "rubric",
        "prompt": "شنو معنى شكو؟",
        "response": "شكو يعني شنو اكو",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": "iraqi-linguistic-shaku-maku",
        "metadata": {"item_id": "irq-1", "dialect": "iraqi", "category": "linguistic"},
    }
    return {**body, **overrides}


class Service:
    """The app in this process. Reports and estimates compute in the request's thread unless
    a test asks for worker processes (`report_workers=1`): a test client never runs the app's
    lifespan, so a worker it started would idle until its pool is collected."""

    def __init__(self, url, config_path, **settings):
        settings = {"report_workers": 0, **settings}
        self.settings = Settings(database_url=url, judges_config=config_path, **settings)
        self.app = create_app(self.settings)
        self.client = TestClient(self.app)
        engine = make_engine(url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                self.keys = {
                    scope: create_key(session, f"test-{scope}", [scope])
                    for scope in ("judge", "grades", "admin")
                }
        finally:
            engine.dispose()

    def headers(self, scope="judge", **extra):
        return {"Authorization": f"Bearer {self.keys[scope]}", **extra}

    def post(self, path, scope="judge", headers=None, **kwargs):
        return self.client.post(path, headers={**self.headers(scope), **(headers or {})}, **kwargs)

    def get(self, path, scope="judge", **kwargs):
        return self.client.get(path, headers=self.headers(scope), **kwargs)


@pytest.fixture
def service(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return Service(migrated_db, path)


def test_rubric_grade_is_persisted_with_all_fields(service, llm_server):
    llm_server.script({"content": verdict()})
    response = service.post("/judge", json=rubric_body())
    assert response.status_code == 200, response.text
    body = response.json()
    [result] = body["results"]
    assert result["judge"] == "gpt-judge" and result["score"] == pytest.approx(500 / 6)
    stored = service.get(f"/judgments/{result['id']}").json()
    assert stored["status"] == "ok"
    assert stored["score"] == pytest.approx(500 / 6)
    assert stored["raw_reply"] == verdict()
    assert {c["id"]: c["met"] for c in stored["criteria"]} == IRAQI
    assert stored["rationale"] == "r"
    assert (stored["prompt_tokens"], stored["completion_tokens"]) == (100, 20)
    assert stored["cost_usd"] > 0  # LiteLLM's price for gpt-4.1
    assert stored["latency_ms"] > 0
    assert stored["rubric_ref"] == "iraqi-linguistic-shaku-maku@2"
    assert stored["rubric_hash"] == body["rubric"]["hash"]
    assert stored["template"] == "arabic-sme-criteria@1" and stored["template_hash"].startswith(
        "sha256:"
    )
    assert stored["cache_key"].startswith("sha256:")
    assert stored["item_id"] == "irq-1" and stored["metadata"]["dialect"] == "iraqi"
    assert stored["request_id"] == body["request_id"]
    assert stored["cached"] is False


def test_explanation_grade_is_persisted(service, llm_server):
    llm_server.script({"content": '{"rating": 4}'})
    body = {
        "kind": "explanation",
        "response": "يعني يعمل الشيء علنا",
        "reference": "كناية عن الجهر",
        "candidate_model": "gpt-4o",
        "rubric_id": "kinayat-explanation",
    }
    response = service.post("/judge", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["skipped"][0]["reason"] == "self_evaluation"
    [result] = data["results"]
    assert (result["judge"], result["score"]) == ("claude-judge", 4.0)
    stored = service.get(f"/judgments/{result['id']}").json()
    assert stored["dimensions"] == {"accuracy": 4.0}
    assert stored["raw_reply"] == '{"rating": 4}'


def test_kind_must_match_the_rubric(service):
    response = service.post("/judge", json=rubric_body(rubric_id="kinayat-explanation"))
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "rubric"]


def test_kind_may_be_left_to_the_rubric(service, llm_server):
    """A user's own 1-5 rubric sent without `kind` (issue 41.2): the rubric says what it is."""
    own = {"kind": "scale", "id": "helpfulness", "scale": {"min": 1, "max": 5},
           "dimensions": [{"id": "helpfulness"}]}  # fmt: skip
    llm_server.script({"content": '{"helpfulness_score": 4}'})
    body = {k: v for k, v in rubric_body(rubric=own).items() if k not in ("kind", "rubric_id")}
    answer = service.post("/judge", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["score"] == 4.0
    llm_server.script({"content": verdict()})
    criteria = {k: v for k, v in rubric_body().items() if k != "kind"}
    assert service.post("/judge", json=criteria).status_code == 200


def test_identical_request_is_cached_without_a_backend_call(service, llm_server):
    first = service.post("/judge", json=rubric_body()).json()
    second = service.post("/judge", json=rubric_body()).json()
    assert llm_server.calls() == 1
    assert second["results"][0]["cached"] is True
    assert second["results"][0]["score"] == first["results"][0]["score"]
    assert second["results"][0]["id"] != first["results"][0]["id"]


def test_idempotent_retry_returns_the_first_result(service, llm_server):
    headers = {"Idempotency-Key": "req-42"}
    first = service.post("/judge", json=rubric_body(), headers=headers)
    again = service.post("/judge", json=rubric_body(), headers=headers)
    assert again.status_code == 200
    assert again.json() == first.json()
    assert llm_server.calls() == 1
    other = service.post("/judge", json=rubric_body(response="غير"), headers=headers)
    assert other.status_code == 409
    assert "different body" in other.json()["detail"][0]["msg"]


def test_auth_401_403_and_open_health(service):
    assert service.client.post("/judge", json=rubric_body()).status_code == 401
    bad = service.client.post("/judge", json=rubric_body(), headers={"X-API-Key": "qadi_00_x"})
    assert bad.status_code == 401
    wrong_scope = service.post("/judge", scope="grades", json=rubric_body())
    assert wrong_scope.status_code == 403
    assert "'judge' scope" in wrong_scope.json()["detail"][0]["msg"]
    assert service.client.get("/healthz").status_code == 200
    assert service.client.get("/readyz").json()["database"] == "ok"
    assert service.client.get("/metrics").status_code == 200
    assert service.post("/judge", scope="admin", json=rubric_body()).status_code == 200


def test_auth_off_must_be_explicit(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    open_service = Service(migrated_db, path, auth="off")
    assert open_service.client.post("/judge", json=rubric_body()).status_code == 200


def test_limits_413_and_422_name_the_problem(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    small = Service(migrated_db, path, max_body_bytes=2000, max_text_chars=300, max_criteria=3)
    big = small.post("/judge", json=rubric_body(response="x" * 5000))
    assert big.status_code == 413
    assert "2000-byte limit" in big.json()["detail"][0]["msg"]
    long = small.post("/judge", json=rubric_body(response="x" * 400))
    assert long.status_code == 422
    assert long.json()["detail"][0]["loc"] == ["body", "response"]
    assert "limit is 300" in long.json()["detail"][0]["msg"]
    criteria = [{"id": f"c{i}", "kind": "positive", "weight": 1, "text": "t"} for i in range(4)]
    many = small.post(
        "/judge",
        json=rubric_body(
            rubric_id=None, rubric={"kind": "penalty_weighted", "id": "r", "criteria": criteria}
        ),
    )
    assert many.status_code == 422
    assert many.json()["detail"][0]["loc"] == ["body", "rubric", "criteria"]
    both = small.post("/judge", json=rubric_body(rubric={"kind": "penalty_weighted"}))
    assert both.status_code == 422
    assert "exactly one of 'rubric'" in json.dumps(both.json())
    missing = small.post("/judge", json={"kind": "rubric", "response": "x"})
    assert missing.status_code == 422
    # a top-level field's loc, not prefixed by the `kind` tag (issue 16 item 8)
    assert ["body", "candidate_model"] in [e["loc"] for e in missing.json()["detail"]]


def test_invalid_inline_rubric_names_the_field(service):
    rubric = {
        "kind": "penalty_weighted",
        "id": "r",
        "criteria": [{"id": "a", "kind": "positive", "weight": -1, "text": "t"}],
    }
    response = service.post("/judge", json=rubric_body(rubric_id=None, rubric=rubric))
    assert response.status_code == 422
    assert "criteria.0.weight" in response.json()["detail"][0]["msg"]


def test_backend_failure_is_persisted_and_answered_503(service, llm_server):
    llm_server.script(*[{"status": 500}] * 4)
    response = service.post("/judge", json=rubric_body())
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    body = response.json()
    assert "gpt-judge: InternalServerError" in body["detail"][0]["msg"]
    assert "claude-judge: InternalServerError" in body["detail"][0]["msg"]
    # the unavailable judge's substitute stood in, and failed too
    assert [(u["judge"], u["substitute"]) for u in body["unavailable"]] == [
        ("gpt-judge", "claude-judge"),
        ("claude-judge", None),
    ]
    assert [r["judge"] for r in body["results"]] == ["gpt-judge", "claude-judge"]
    assert body["status"] == "failed" and body["aggregate"] is None
    assert body["results"][0]["score"] is None
    assert "InternalServerError" in body["results"][0]["error"]
    assert "sk-test-secret" not in response.text
    stored = service.get("/judgments", params={"status": "backend_error"}).json()["items"]
    assert sorted(j["id"] for j in stored) == sorted(r["id"] for r in body["results"])
    assert all(j["score"] is None for j in stored)


def test_parse_error_is_persisted_without_score(service, llm_server):
    llm_server.script({"content": "full marks!"})
    response = service.post("/judge", json=rubric_body())
    assert response.status_code == 502
    stored = service.get("/judgments", params={"status": "parse_error"}).json()["items"]
    assert stored[0]["raw_reply"] == "full marks!" and stored[0]["score"] is None


def test_rubric_versioning(service):
    rubric = {
        "kind": "penalty_weighted",
        "id": "egy-proverb",
        "criteria": [{"id": "a", "kind": "positive", "weight": 1, "text": "meaning"}],
    }
    first = service.post("/rubrics", json=rubric)
    assert first.status_code == 201 and first.json()["version"] == 1
    same = service.post("/rubrics", json=rubric)
    assert same.status_code == 200 and same.json()["version"] == 1
    changed = {
        **rubric,
        "criteria": [
            *rubric["criteria"],
            {"id": "b", "kind": "negative", "weight": 1, "text": "msa"},
        ],
    }
    second = service.post("/rubrics", json=changed)
    assert second.status_code == 201 and second.json()["version"] == 2
    assert second.json()["hash"] != first.json()["hash"]
    assert len(service.get("/rubrics/egy-proverb@1").json()["criteria"]) == 1
    assert service.get("/rubrics/egy-proverb").json()["version"] == 2
    assert [r["version"] for r in service.get("/rubrics/egy-proverb/versions").json()] == [1, 2]
    listed = {r["id"]: r for r in service.get("/rubrics").json()}
    assert listed["egy-proverb"]["latest_version"] == 2
    assert "kinayat-explanation" in listed
    assert service.get("/rubrics/nope").status_code == 404
    invalid = service.post("/rubrics", json={**rubric, "criteria": []})
    assert invalid.status_code == 422
    assert invalid.json()["detail"][0]["loc"][:2] == ["body", "criteria"]


def test_judgments_filtering_and_pagination(service, llm_server):
    for i in range(5):
        dialect = "iraqi" if i % 2 == 0 else "egyptian"
        model = "Qwen/Qwen2.5-7B-Instruct" if i < 3 else "mistralai/Mistral-7B-Instruct-v0.3"
        body = rubric_body(
            response=f"answer {i}",
            candidate_model=model,
            metadata={"item_id": f"it-{i}", "dialect": dialect},
        )
        assert service.post("/judge", json=body).status_code == 200
    everything = service.get("/judgments").json()["items"]
    assert len(everything) == 5
    iraqi = service.get("/judgments", params={"metadata": "dialect=iraqi"}).json()["items"]
    assert sorted(j["item_id"] for j in iraqi) == ["it-0", "it-2", "it-4"]
    mistral = service.get(
        "/judgments", params={"candidate_model": "mistralai/Mistral-7B-Instruct-v0.3"}
    ).json()["items"]
    assert sorted(j["item_id"] for j in mistral) == ["it-3", "it-4"]
    assert len(service.get("/judgments", params={"judge": "claude-judge"}).json()["items"]) == 0
    assert (
        len(
            service.get("/judgments", params={"rubric": "iraqi-linguistic-shaku-maku@2"}).json()[
                "items"
            ]
        )
        == 5
    )
    assert (
        len(service.get("/judgments", params={"rubric": "kinayat-explanation"}).json()["items"])
        == 0
    )
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = service.get("/judgments", params=params).json()
        seen += [j["id"] for j in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [j["id"] for j in everything]
    assert service.get("/judgments", params={"metadata": "nokey"}).status_code == 422
    assert service.get("/judgments", params={"cursor": "!!"}).status_code == 422
    assert service.get("/judgments/does-not-exist").status_code == 404


def test_filters_cannot_inject_sql(service, llm_server):
    service.post("/judge", json=rubric_body())
    hostile = "x' OR '1'='1"
    for params in (
        {"judge": hostile},
        {"candidate_model": hostile},
        {"metadata": f"dialect={hostile}"},
        {"metadata": f"{hostile}=1"},
    ):
        response = service.get("/judgments", params=params)
        assert response.status_code == 200
        assert response.json()["items"] == []


def test_batch_has_per_item_errors(service, llm_server):
    items = [
        rubric_body(),
        {"kind": "rubric", "response": "no model"},
        rubric_body(response="second answer"),
    ]
    response = service.post("/judge/batch", json={"items": items})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status_code"] for r in results] == [200, 422, 200]
    assert results[1]["body"]["detail"][0]["loc"][:3] == ["body", "items", 1]
    assert llm_server.calls() == 2


def test_grades_json_and_csv_upload_and_query(service):
    rows = [
        {
            "item_id": "irq-1",
            "rater": "sme-1",
            "rater_kind": "human",
            "score": 50,
            "dialect": "iraqi",
            "criteria": {"shaku_meaning": True},
        }
    ]
    assert service.post("/grades", scope="grades", json={"grades": rows}).json() == {
        "inserted": 1,
        "updated": 0,
    }
    csv_text = "item_id,rater,rater_kind,score,dialect\nirq-1,sme-2,human,75,iraqi\negy-1,sme-3,human,10,egyptian\n"
    uploaded = service.post(
        "/grades", scope="grades", content=csv_text, headers={"Content-Type": "text/csv"}
    )
    assert uploaded.json() == {"inserted": 2, "updated": 0}
    files = {
        "file": ("g.csv", "item_id,rater,rater_kind,score\nirq-1,sme-1,human,60\n", "text/csv")
    }
    assert service.post("/grades", scope="grades", files=files).json() == {
        "inserted": 0,
        "updated": 1,
    }
    # a header without rows is an upload of nothing (it once inserted a row of defaults: 500)
    empty = service.post(
        "/grades",
        scope="grades",
        content="item_id,rater,rater_kind,score\n",
        headers={"Content-Type": "text/csv"},
    )
    assert (empty.status_code, empty.json()) == (200, {"inserted": 0, "updated": 0})
    iraqi = service.get("/grades", scope="grades", params={"attribute": "dialect=iraqi"}).json()
    assert sorted((g["rater"], g["score"]) for g in iraqi["items"]) == [("sme-2", 75.0)]
    listed = service.get("/grades", scope="grades", params={"item_id": "irq-1"}).json()["items"]
    assert {g["rater"]: g["score"] for g in listed} == {"sme-1": 60.0, "sme-2": 75.0}
    as_csv = service.get("/grades", scope="grades", params={"format": "csv"})
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert as_csv.text.splitlines()[0].startswith("item_id,rater,rater_kind,score")
    bad = service.post(
        "/grades",
        scope="grades",
        json=[{"item_id": "a", "rater": "r", "rater_kind": "robot", "score": "x"}],
    )
    assert bad.status_code == 422
    assert any("row 1: rater_kind" in p["msg"] for p in bad.json()["detail"])
    assert service.post("/grades", scope="judge", json={"grades": rows}).status_code == 403


def test_judges_endpoint_reports_reachability(service):
    judges = {j["name"]: j for j in service.get("/judges").json()}
    assert judges["gpt-judge"]["maker"] == "openai"
    assert judges["gpt-judge"]["substitute"] == "claude-judge"
    assert judges["llama-judge"]["maker"] == "meta"
    assert judges["claude-judge"]["reachable"] is True


def test_metrics_count_judge_calls_and_cache_hits(service, llm_server):
    service.post("/judge", json=rubric_body())
    service.post("/judge", json=rubric_body())
    text = service.client.get("/metrics").text
    assert 'qadi_judge_calls_total{judge="gpt-judge",project="default",status="ok"}' in text
    assert 'qadi_judge_cache_hits_total{judge="gpt-judge",project="default"}' in text
    assert "qadi_judge_call_duration_seconds_bucket" in text
    assert 'qadi_http_requests_total{method="POST",route="/judge",status="200"}' in text


def test_metrics_count_the_group_commits_rounds_and_their_requests(service, llm_server):
    before = commit_rounds(service.client.get("/metrics").text)
    for _ in range(2):  # one after the other: each request is a round of its own, per step
        assert service.post("/judge", json=rubric_body()).status_code == 200
    after = commit_rounds(service.client.get("/metrics").text)
    for step in ("prepare", "finish"):
        assert after[step, "count"] - before.get((step, "count"), 0) == 2
        assert after[step, "sum"] - before.get((step, "sum"), 0) == 2


def test_no_judges_configured_is_503(migrated_db):
    app = create_app(Settings(database_url=migrated_db, auth="off"))
    response = TestClient(app).post("/judge", json=rubric_body())
    assert response.status_code == 503
    assert "QADI_JUDGES_CONFIG" in response.json()["detail"][0]["msg"]


def test_service_refuses_an_unmigrated_database(db_url):
    with pytest.raises(NotMigratedError, match="run `qadi db upgrade`"):
        create_app(Settings(database_url=db_url))


def test_openapi_docs_have_examples(service):
    spec = service.client.get("/openapi.json").json()
    judge = spec["paths"]["/judge"]["post"]
    assert set(judge["requestBody"]["content"]["application/json"]["examples"]) == {
        "rubric",
        "explanation",
    }
    assert "text/csv" in spec["paths"]["/grades"]["post"]["requestBody"]["content"]
    assert service.client.get("/docs").status_code == 200
