"""Hostile input (issue 13, items 4, 8, 9, 10; issue 42, items 4 and 9): each is a 422 naming
the field, or stored faithfully; never a 500, never a NaN score, never an error answer for
something stored."""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import json
import math
import threading

import pytest
from sqlalchemy import select, update

from calibration.formats.interchange import GradeRow
from judges import Grader, GradeRequest, parse_config
from judges.logprobs import TokenProbabilities
from judges.trust import TrustPolicy
from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import HumanGradeRow, JudgmentRow
from service.db.values import NonFiniteValue
from service.stores.grades import upsert_grades
from service.stores.judgments import project_batcher
from tests.conftest import judges_config_data, run_cli
from tests.integration.test_service_api import rubric_body

WEIGHTED = {
    "kind": "penalty_weighted",
    "id": "hostile-weights",
    "criteria": [
        {"id": "a", "kind": "positive", "weight": 1, "text": "gives the meaning"},
        {"id": "b", "kind": "negative", "weight": 1, "text": "wrong region"},
    ],
}


def post_json(service, path: str, text: str, scope: str = "judge"):
    """POST raw JSON text: Python's json would not write `Infinity` or a lone surrogate."""
    headers = {"content-type": "application/json"}
    return service.post(path, scope=scope, headers=headers, content=text.encode("utf-8"))


def upload_problems(service, content_type: str, text: str) -> list[str]:
    """The row problems of a refused grades upload."""
    headers = {"content-type": content_type}
    response = service.post("/grades", scope="grades", headers=headers, content=text)
    assert response.status_code == 422, response.text
    return [problem["msg"] for problem in response.json()["detail"]]


def deep(levels: int, kind: str = "dict") -> str:
    if kind == "dict":
        return '{"a": ' * levels + "1" + "}" * levels
    return "[" * levels + "]" * levels


def first_error(response) -> dict:
    assert response.status_code == 422, response.text
    return response.json()["detail"][0]


# --- item 4: non-finite numbers ----------------------------------------------------------


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_non_finite_weight_is_refused_and_the_rubric_not_stored(service, number):
    text = json.dumps(WEIGHTED).replace('"weight": 1,', f'"weight": {number},', 1)
    error = first_error(post_json(service, "/rubrics", text))
    assert error["loc"] == ["body", "criteria", 0, "weight"]
    assert "finite" in error["msg"]
    assert service.get("/rubrics/hostile-weights").status_code == 404


def test_non_finite_weight_in_an_inline_rubric_reaches_no_judge(service, llm_server):
    body = rubric_body(rubric=WEIGHTED, rubric_id=None)
    del body["rubric_id"]
    text = json.dumps(body).replace('"weight": 1,', '"weight": 1e999,', 1)
    error = first_error(post_json(service, "/judge", text))
    assert error["loc"] == ["body", "rubric", "criteria", 0, "weight"]
    assert llm_server.calls() == 0


def test_weights_whose_sum_overflows_are_refused(service):
    rubric = dict(WEIGHTED)
    rubric["criteria"] = [
        {"id": "a", "kind": "positive", "weight": 1.5e308, "text": "t"},
        {"id": "b", "kind": "positive", "weight": 1.5e308, "text": "t"},
    ]
    response = service.post("/rubrics", json=rubric)
    assert response.status_code == 422
    assert "finite" in response.json()["detail"][0]["msg"]
    assert service.get("/rubrics/hostile-weights").status_code == 404


# --- item 8: nesting, lone surrogates, NUL ---------------------------------------------------


@pytest.mark.parametrize("levels", [600, 5000])
@pytest.mark.parametrize(
    ("path", "template", "loc"),
    [
        ("/judge", "inline-rubric", ["body", "rubric", "metadata"]),
        ("/judge", "metadata", ["body", "metadata"]),
        ("/grades", "grades", ["body", "grades", 0, "extra"]),
        ("/rubrics", "rubric", ["body", "metadata"]),
    ],
)
def test_deep_nesting_is_a_422_naming_the_field(service, path, template, loc, levels):
    nested = deep(levels)
    if template == "grades":
        row = '{"item_id": "i", "rater": "r", "rater_kind": "human", "score": 1, "extra": '
        text = '{"grades": [' + row + nested + "}]}"
    elif template == "metadata":
        body = {k: v for k, v in rubric_body().items() if k != "metadata"}  # named once
        text = json.dumps(body)[:-1] + ', "metadata": ' + nested + "}"
    elif template == "rubric":
        text = json.dumps(WEIGHTED)[:-1] + ', "metadata": ' + nested + "}"
    else:
        body = rubric_body()
        del body["rubric_id"]
        text = json.dumps(body)[:-1] + ', "rubric": ' + json.dumps(WEIGHTED)[:-1]
        text += ', "metadata": ' + nested + "}}"
    scope = "grades" if path == "/grades" else "judge"
    error = first_error(post_json(service, path, text, scope))
    assert error["loc"][: len(loc)] == loc
    assert "nested deeper than 64" in error["msg"]


def test_deep_criteria_cell_in_a_csv_upload_is_a_422(service):
    """Deeper than json.loads can recurse (a 600-deep cell was already a type error)."""
    cell = deep(5000, "list")
    text = f'item_id,rater,rater_kind,score,criteria\ni,r,human,1,"{cell}"\n'
    assert upload_problems(service, "text/csv", text) == ["row 2: criteria: not a JSON object"]


@pytest.mark.parametrize(
    ("fragment", "loc", "message"),
    [
        (
            '"response": "an answer \\ud800 with a lone surrogate"',
            ["body", "response"],
            "surrogate",
        ),
        ('"metadata": {"\\udc00": "x"}', ["body", "metadata"], "a key contains a lone"),
        ('"response": "an answer with a NUL \\u0000 inside"', ["body", "response"], "NUL"),
        ('"metadata": {"dialect": "iraqi\\u0000"}', ["body", "metadata", "dialect"], "NUL"),
        ('"metadata": {"k\\u0000": "v"}', ["body", "metadata"], "a key contains a NUL"),
    ],
)
def test_unstorable_text_is_a_422_naming_the_field(service, llm_server, fragment, loc, message):
    body = rubric_body()
    del body["response"], body["metadata"]
    text = json.dumps(body)[:-1] + ", " + fragment + "}"
    error = first_error(post_json(service, "/judge", text))
    assert error["loc"] == loc and message in error["msg"]
    assert llm_server.calls() == 0


def test_nul_in_an_imported_grade_is_a_422(service):
    row = {"item_id": "i\u0000", "rater": "r", "rater_kind": "human", "score": 1}
    assert upload_problems(service, "application/jsonl", json.dumps(row) + "\n") == [
        "row 1: item_id: contains a NUL character at position 1"
    ]


@pytest.mark.parametrize(
    ("path", "params", "loc"),
    [
        ("/grades", {"item_id": "a\u0000"}, ["query", "item_id"]),
        ("/grades", {"attribute": "dialect=x\u0000"}, ["query", "attribute"]),
        ("/judgments", {"judge": "gpt\u0000"}, ["query", "judge"]),
        ("/judgments", {"metadata": "k\u0000=v"}, ["query", "metadata"]),
    ],
)
def test_nul_in_a_filter_is_a_422(service, path, params, loc):
    scope = "grades" if path == "/grades" else "admin"
    response = service.client.get(path, params=params, headers=service.headers(scope))
    assert first_error(response)["loc"] == loc


@pytest.mark.parametrize("path", ["/grades", "/judgments"])
def test_nul_in_a_cursor_is_a_422(service, path):
    raw = "2026-01-01T00:00:00|1\u0000"
    cursor = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    scope = "grades" if path == "/grades" else "admin"
    response = service.client.get(path, params={"cursor": cursor}, headers=service.headers(scope))
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "loc": ["query", "cursor"],
            "msg": "not a cursor returned by this API",
            "type": "value_error",
        }
    ]


def test_attribute_key_with_a_double_quote_is_filtered_faithfully(service):
    rows = [
        {"item_id": "i1", "rater": "r", "rater_kind": "human", "score": 1, 'a"b': "c"},
        {"item_id": "i2", "rater": "r", "rater_kind": "human", "score": 2, 'a"b': "d"},
    ]
    assert service.post("/grades", scope="grades", json=rows).status_code == 200
    response = service.get("/grades", scope="grades", params={"attribute": 'a"b=c'})
    assert response.status_code == 200
    assert [r["item_id"] for r in response.json()["items"]] == ["i1"]


def test_twenty_identical_concurrent_uploads_leave_one_row_per_pair(migrated_db):
    """Twenty threads upload the same 50 grades at the same moment: no IntegrityError, and
    the table holds the 50 pairs once each."""
    sessions = make_sessionmaker(make_engine(migrated_db))
    rows = [GradeRow(item_id=f"i{n}", rater="r", rater_kind="human", score=n) for n in range(50)]
    start = threading.Barrier(20)
    errors: list[BaseException] = []

    def upload() -> None:
        start.wait()
        try:
            with session_scope(sessions) as session:
                upsert_grades(session, "default", rows)
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever escaped
            errors.append(exc)

    threads = [threading.Thread(target=upload) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with session_scope(sessions) as session:
        from sqlalchemy import func, select

        from service.db.schema import HumanGradeRow

        assert session.scalar(select(func.count()).select_from(HumanGradeRow)) == 50


# --- item 9: exports ----------------------------------------------------------------------


def test_csv_export_streams_every_row(service):
    rows = [
        {"item_id": f"item-{n:04d}", "rater": "r", "rater_kind": "human", "score": n % 5}
        for n in range(1203)
    ]
    assert service.post("/grades", scope="grades", json=rows).json() == {
        "inserted": 1203,
        "updated": 0,
    }
    response = service.get("/grades", scope="grades", params={"format": "csv"})
    assert response.status_code == 200
    lines = response.text.strip().splitlines()
    assert len(lines) == 1 + 1203  # header + every row, though a JSON page holds 500
    assert lines[-1].startswith("item-1202,")


def test_csv_export_neutralises_formulas(service):
    row = {
        "item_id": '=HYPERLINK("http://x")',
        "rater": "@sum",
        "rater_kind": "human",
        "score": -1.5,
        "note": "+1",
        "dash": "-2+3",
        "tab": "\tcmd",
    }
    assert service.post("/grades", scope="grades", json=[row]).status_code == 200
    text = service.get("/grades", scope="grades", params={"format": "csv"}).text
    (exported,) = csv.DictReader(io.StringIO(text, newline=""))
    # By hand: each text cell starting with = + - @ or TAB gets a leading quote; the score
    # is a number and stays -1.5.
    assert exported == {
        "item_id": '\'=HYPERLINK("http://x")',
        "rater": "'@sum",
        "rater_kind": "human",
        "score": "-1.5",
        "criteria": "",
        "inclusion_prob": "",
        "confidence": "",
        "rationale": "",
        "project": "default",
        "note": "'+1",
        "dash": "'-2+3",
        "tab": "'\tcmd",
    }


# --- item 10: one criteria limit, judge names, open binding -----------------------------------


def test_rubrics_and_judge_share_the_criteria_limit(service):
    criteria = [{"id": f"c{n}", "kind": "positive", "weight": 1, "text": "t"} for n in range(101)]
    response = service.post("/rubrics", json={**WEIGHTED, "criteria": criteria})
    error = first_error(response)
    assert error["loc"] == ["body", "criteria"]
    assert error["msg"] == "101 criteria; the limit is 100"  # QADI_MAX_CRITERIA default
    assert service.get("/rubrics/hostile-weights").status_code == 404


def test_calibration_for_an_unknown_judge_names_judges(service):
    rows = [
        {"item_id": f"i{n}", "rater": rater, "rater_kind": "human", "score": n % 3}
        for n in range(6)
        for rater in ("h1", "h2")
    ]
    assert service.post("/grades", scope="grades", json=rows).status_code == 200
    body = {"judges": ["nobody"], "scale_min": 0, "scale_max": 2, "bootstrap": 0}
    response = service.post("/calibration/reports", scope="grades", json=body)
    assert first_error(response) == {
        "loc": ["body", "judges"],
        "msg": "no usable grade by ['nobody'] in this selection",
        "type": "value_error",
    }


def test_serve_refuses_auth_off_on_a_public_address(monkeypatch, migrated_db):
    started = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: started.append(kw["host"]))
    env = {"QADI_AUTH": "off", "QADI_DATABASE_URL": migrated_db}
    refused = run_cli("serve", "--host", "0.0.0.0", env=env)
    assert refused.returncode == 2 and "--insecure" in refused.stdout + refused.stderr
    assert run_cli("serve", "--host", "127.0.0.1", env=env).returncode == 0
    assert run_cli("serve", "--host", "0.0.0.0", "--insecure", env=env).returncode == 0
    assert run_cli("serve", "--host", "0.0.0.0", env={**env, "QADI_AUTH": "on"}).returncode == 0
    assert started == ["127.0.0.1", "0.0.0.0", "0.0.0.0"]


def test_the_schema_refuses_an_ok_judgment_without_a_score(tmp_path):
    """The CHECK on judgments (status 'ok' needs a score), as the model declares it; the
    migration that adds it to existing databases is separate."""
    from sqlalchemy import create_engine, insert
    from sqlalchemy.exc import IntegrityError

    from service.db.schema import Base, ItemRow, JudgmentRow, ProjectRow, ResponseRow

    engine = create_engine(f"sqlite:///{tmp_path / 'check.db'}")
    Base.metadata.create_all(engine)
    judgment = {
        "project": "default",
        "response_id": 1,
        "judge": "gpt-judge",
        "judge_model": "m",
        "status": "ok",
        "cache_key": "k",
        "rubric_ref": "r@1",
        "rubric_hash": "h",
        "template": "t@1",
        "template_hash": "h",
    }
    with engine.begin() as connection:
        connection.execute(insert(ProjectRow).values(name="default"))
        connection.execute(insert(ItemRow).values(id=1, content_hash="i", prompt="p"))
        connection.execute(
            insert(ResponseRow).values(
                id=1,
                project="default",
                content_hash="r",
                item_id=1,
                item_key="i",
                candidate_model="c",
                text="t",
            )  # fmt: skip
        )
        connection.execute(insert(JudgmentRow).values(id="a", score=3.0, **judgment))
        connection.execute(insert(JudgmentRow).values(id="b", **{**judgment, "status": "failed"}))
    with pytest.raises(IntegrityError, match="ck_judgments_ok_has_score"), engine.begin() as c:
        c.execute(insert(JudgmentRow).values(id="c", **judgment))


def test_grades_import_cli_refuses_a_nul(tmp_path, migrated_db):
    path = tmp_path / "grades.csv"
    path.write_text("item_id,rater,rater_kind,score\nitem\x00,r,human,1\n", encoding="utf-8")
    result = run_cli("grades", "import", str(path), env={"QADI_DATABASE_URL": migrated_db})
    assert result.returncode == 2
    # Row 2: the CSV parser numbers data rows from 2 (line 1 is the header).
    assert "row 2: item_id: contains a NUL character at position 4" in result.stdout + result.stderr


# --- issue 31.7: grades hygiene ---------------------------------------------------------------


@pytest.mark.parametrize("score", [True, False])
def test_a_boolean_score_is_refused_not_read_as_one_or_zero(service, score):
    row = {"item_id": "i1", "rater": "r", "rater_kind": "human", "score": score}
    refused = service.post("/grades", scope="grades", json={"grades": [row]})
    assert refused.status_code == 422
    [problem] = refused.json()["detail"]
    assert "row 1: score: a boolean is not a score" in problem["msg"]
    assert service.get("/grades", scope="grades").json()["items"] == []


def test_a_boolean_inclusion_prob_is_refused_not_read_as_one(service):
    row = {"item_id": "i1", "rater": "r", "rater_kind": "human", "score": 3,
           "inclusion_prob": True}  # fmt: skip
    refused = service.post("/grades", scope="grades", json={"grades": [row]})
    assert refused.status_code == 422
    [problem] = refused.json()["detail"]
    assert "row 1: inclusion_prob: a boolean is not a probability" in problem["msg"]
    assert service.get("/grades", scope="grades").json()["items"] == []


def test_a_csv_row_with_more_cells_than_its_header_is_refused_naming_the_row(service):
    text = "item_id,rater,rater_kind,score\ni1,r,human,3\ni2,r,human,4,iraqi,extra\n"
    refused = service.post(
        "/grades", scope="grades", content=text, headers={"Content-Type": "text/csv"}
    )
    assert refused.status_code == 422
    [problem] = refused.json()["detail"]
    assert problem["msg"].startswith("row 3: 2 cell(s) more than the header's columns")
    assert service.get("/grades", scope="grades").json()["items"] == []  # nothing half-stored


def test_duplicate_pairs_in_one_upload_are_reported_with_their_rows(service):
    text = (
        "item_id,rater,rater_kind,score\n"
        "i1,r,human,1\ni2,r,human,2\ni1,r,human,3\ni1,r,human,4\ni2,s,human,5\n"
    )
    uploaded = service.post(
        "/grades", scope="grades", content=text, headers={"Content-Type": "text/csv"}
    )
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json() == {
        "inserted": 3,
        "updated": 0,
        "duplicates": {
            "count": 2,
            "rows": [
                {"row": 4, "item_id": "i1", "rater": "r", "repeats_row": 2},
                {"row": 5, "item_id": "i1", "rater": "r", "repeats_row": 2},
            ],
        },
    }
    stored = service.get("/grades", scope="grades", params={"item_id": "i1"}).json()["items"]
    assert [g["score"] for g in stored] == [4.0]  # the last row of the pair, as documented
    again = service.post(
        "/grades",
        scope="grades",
        json=[{"item_id": "i1", "rater": "r", "rater_kind": "human", "score": 2}],
    )
    assert again.json() == {"inserted": 0, "updated": 1}  # no duplicates key when none


def test_duplicates_in_json_lines_are_numbered_by_line_as_errors_are(service):
    """Blank lines are skipped but counted: a duplicate is named by the line the file shows,
    the number a validation error in that file would give it."""
    line = '{{"item_id": "i1", "rater": "r", "rater_kind": "human", "score": {}}}'
    text = "\n".join([line.format(1), "", "", line.format(2), "", line.format("true")])
    headers = {"Content-Type": "application/jsonl"}
    refused = service.post("/grades", scope="grades", content=text, headers=headers)
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["msg"].startswith("row 6: score:")
    uploaded = service.post(
        "/grades", scope="grades", content=text.rsplit("\n", 2)[0], headers=headers
    )
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json()["duplicates"]["rows"] == [
        {"row": 4, "item_id": "i1", "rater": "r", "repeats_row": 1}
    ]


# --- issue 42.4: token probabilities that are not log-probabilities -------------------------


def explanation(marker: str) -> dict:
    """A 1-5 explanation graded by llama-judge, which asks for token probabilities."""
    return {
        "kind": "explanation",
        "response": f"answer {marker}",
        "reference": "كناية عن الطيبة",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": "kinayat-explanation",
        "judges": ["llama-judge"],
    }


def rated(marker: str, rating: int, alternatives: dict[str, float], raw: str | None = None):
    """A test-double rule: the reply to `marker`'s item, its rating token's alternatives,
    and (`raw`) the logprob a broken provider sends for that token, as JSON text."""
    reply = {"content": json.dumps({"rating": rating}), "top_logprobs": {str(rating): alternatives}}
    if raw is not None:
        reply["raw_logprobs"] = {str(rating): raw}
    return {"match": f"answer {marker}", "reply": reply}


def assert_grade_without_distribution(result: dict, score: float, raw: str) -> None:
    """The verdict's grade stands; its distribution is null, with the reason."""
    assert (result["status"], result["score"]) == ("ok", score)
    assert (result["expected_score"], result["confidence"]) == (None, None)
    probabilities = result["probabilities"]
    assert (probabilities["rating"], probabilities["expected"]) == (None, None)
    sent = {"1000": "1000.0", "NaN": "nan", "Infinity": "inf"}[raw]
    assert probabilities["unavailable"] == (
        f"token ' {int(score)}' has logprob {sent}, not a finite number <= 0: the judge's "
        "token probabilities are unusable"
    )


@pytest.mark.parametrize("raw", ["1000", "NaN", "Infinity"])
def test_a_broken_logprob_keeps_the_grade_without_a_distribution(service, llm_server, raw):
    """exp(1000) overflowed (500, then 409 for the key until abandoned); NaN and Infinity
    were stored (SQLite: every replay a 500; PostgreSQL: a 422 after the paid call)."""
    llm_server.rules(rated("broken", 4, {"4": 0.7, "3": 0.3}, raw))
    headers = {"Idempotency-Key": f"broken-{raw}"}
    first = service.post("/judge", json=explanation("broken"), headers=headers)
    assert first.status_code == 200, first.text
    [result] = first.json()["results"]
    assert_grade_without_distribution(result, 4.0, raw)
    stored = service.get(f"/judgments/{result['id']}").json()
    assert_grade_without_distribution(stored, 4.0, raw)
    replay = service.post("/judge", json=explanation("broken"), headers=headers)
    assert (replay.status_code, replay.json()) == (200, first.json())
    assert llm_server.calls() == 1


def test_a_broken_logprob_in_a_batch_costs_no_other_item(service, llm_server):
    """One item's logprob of 1000 turned the whole /judge/batch into a 500, losing the
    paid calls of the good ones."""
    llm_server.rules(
        rated("good-a", 4, {"4": 0.7, "3": 0.3}),
        rated("broken", 5, {"5": 0.9, "4": 0.1}, "1000"),
        rated("good-b", 2, {"2": 0.6, "1": 0.4}),
    )
    body = {"items": [explanation(m) for m in ("good-a", "broken", "good-b")]}
    headers = {"Idempotency-Key": "batch-with-a-broken-item"}
    first = service.post("/judge/batch", json=body, headers=headers)
    assert first.status_code == 200, first.text
    items = first.json()["results"]
    assert [item["status_code"] for item in items] == [200, 200, 200]
    good_a, broken, good_b = (item["body"]["results"][0] for item in items)
    assert (good_a["score"], good_a["expected_score"]) == (4.0, pytest.approx(3.7))
    assert (good_b["score"], good_b["expected_score"]) == (2.0, pytest.approx(1.6))
    assert_grade_without_distribution(broken, 5.0, "1000")
    stored = service.get("/judgments", scope="admin").json()["items"]
    assert sorted((j["score"], j["expected_score"]) for j in stored) == [
        (2.0, pytest.approx(1.6)), (4.0, pytest.approx(3.7)), (5.0, None)
    ]  # fmt: skip
    replay = service.post("/judge/batch", json=body, headers=headers)
    assert (replay.status_code, replay.json()) == (200, first.json())
    assert llm_server.calls() == 3


@pytest.fixture
def faulty_reader(monkeypatch):
    """A defect in the reader of token probabilities: an infinite expected score."""
    import judges.replies

    def faulty(*args):
        return TokenProbabilities(method="a defect", top_logprobs=1, expected=math.inf)

    monkeypatch.setattr(judges.replies, "read_probabilities", faulty)


def test_a_response_with_a_non_finite_number_is_never_stored(service, llm_server, faulty_reader):
    """The stores' own guard, for a defect upstream: a response to replay holding NaN or
    Infinity is refused (with its judgments), so nothing stored fails every later read."""
    llm_server.rules(rated("defect", 4, {"4": 0.7, "3": 0.3}))
    response = service.post("/judge", json=explanation("defect"))
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"] == (
        "this request's grade could not be stored (response.results[0].expected_score is inf, "
        "not a finite number: not stored)"
    )
    assert service.get("/judgments", scope="admin").json()["items"] == []


def test_a_judgment_with_a_non_finite_number_is_never_stored(
    migrated_db, llm_server, faulty_reader
):
    """The judgments store refuses it on every path that saves there (here `qadi regrade`'s
    and the benchmarks' batch core)."""
    llm_server.rules(rated("defect", 4, {"4": 0.7, "3": 0.3}))
    sessions = make_sessionmaker(make_engine(migrated_db))
    grader = Grader(parse_config(judges_config_data(llm_server)))
    batch = project_batcher(grader, sessions, "default")
    body = explanation("defect")
    request = GradeRequest(
        rubric=library_rubric(body.pop("rubric_id")), **{k: body[k] for k in body if k != "kind"}
    )
    with pytest.raises(NonFiniteValue, match="judgment.expected_score is inf"):
        asyncio.run(batch.grade_one(request))
    with session_scope(sessions) as session:
        assert session.scalars(select(JudgmentRow)).all() == []


# --- issue 42.9: estimates whose numbers are not finite -----------------------------------


def grade(item: str, rater: str, kind: str, score: float, **attributes) -> dict:
    return {"item_id": item, "rater": rater, "rater_kind": kind, "score": score, **attributes}


def labelled_grades(human_score, judge_score, n=10, labelled=5, inclusion_prob=None):
    """Judge J's score of items i0..i(n-1), the SME's of the first `labelled` (each label
    with `inclusion_prob` when given); each score a function of the item's number."""
    design = {} if inclusion_prob is None else {"inclusion_prob": inclusion_prob}
    rows = [grade(f"i{i}", "J", "judge", judge_score(i)) for i in range(n)]
    rows += [grade(f"i{i}", "sme", "human", human_score(i), **design) for i in range(labelled)]
    return rows


def estimate_cli(tmp_path, rows: list[dict], *options: str):
    """`qadi estimate` over `rows` written as JSON Lines."""
    path = tmp_path / "grades.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_cli("estimate", str(path), *options, "--out", str(tmp_path / "e.json"))


def refused_by_cli(done, message: str) -> None:
    """Exit 2 with the message on one line, no traceback, nothing written."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in " ".join(done.stderr.split()) and "Traceback" not in done.stderr


def test_an_inclusion_prob_too_small_to_weight_is_refused_at_every_door(service, tmp_path):
    """1e-320 is a denormal whose inverse (the label's weight) is infinite: the estimate
    answered 500. The floor is 1e-9 (a weight of at most a billion), named in the error."""
    rows = labelled_grades(lambda i: 1 + i % 3, lambda i: 1 + 2 * i % 5, inclusion_prob=0.5)
    tiny = [{**rows[-1], "inclusion_prob": 1e-320}, *rows[:-1]]
    message = (
        "row 1: inclusion_prob: 9.99989e-321 is below 1e-09, the smallest inclusion "
        "probability qadi weights by: a label may stand for at most a billion items"
    )
    answer = service.post("/estimates", scope="grades", json={"grades": tiny})
    assert first_error(answer) == {"loc": ["body", "grades"], "msg": message, "type": "value_error"}
    assert upload_problems(service, "application/json", json.dumps(tiny)) == [message]
    assert service.get("/grades", scope="grades").json()["items"] == []
    refused_by_cli(estimate_cli(tmp_path, tiny), message)
    at_floor = [{**rows[-1], "inclusion_prob": 1e-9}, *rows[:-1]]
    assert service.post("/estimates", scope="grades", json={"grades": at_floor}).status_code == 200
    with pytest.raises(ValueError, match="give 0 or at least 1e-09"):
        TrustPolicy(audit_rate=1e-12)  # an audited label carries the audit rate as its π


def test_scores_whose_arithmetic_overflows_are_a_422_naming_the_estimate(service, tmp_path):
    """±1e308 are finite scores, so they are stored; their squares are not. The estimate
    answered 500, inline and for every later estimate of the project over the database."""
    rows = labelled_grades(lambda i: (-1) ** i * 1e308, lambda i: (-1) ** (i + 1) * 1e308)
    message = (
        "judges.J.overall.effective_n cannot be computed (nan): its sums and squares overflow "
        "on these grades (the largest |score| is 1e+308)"
    )
    inline = service.post("/estimates", scope="grades", json={"grades": rows})
    assert first_error(inline) == {"loc": ["body", "grades"], "msg": message, "type": "value_error"}
    assert service.post("/grades", scope="grades", json=rows).json() == {
        "inserted": 15,
        "updated": 0,
    }
    from_database = service.post("/estimates", scope="grades", json={})
    assert first_error(from_database)["msg"] == message
    stored = service.get("/grades", scope="grades", params={"limit": 100}).json()["items"]
    assert sorted(abs(g["score"]) for g in stored) == [1e308] * 15  # nothing accepted is lost
    refused_by_cli(estimate_cli(tmp_path, rows), f"grades: {message}")


def test_a_legacy_inclusion_prob_below_the_floor_stays_readable(service):
    """A label stored before the floor keeps being listed; an estimate over it says what
    cannot be computed and why (it answered 500)."""
    rows = labelled_grades(
        lambda i: 1 + i % 3, lambda i: 1 + 2 * i % 5, labelled=4, inclusion_prob=0.5
    )
    assert service.post("/grades", scope="grades", json=rows).status_code == 200
    with session_scope(make_sessionmaker(make_engine(service.settings.database_url))) as session:
        session.execute(
            update(HumanGradeRow)
            .where(HumanGradeRow.item_id == "i0", HumanGradeRow.rater == "sme")
            .values(inclusion_prob=1e-320)
        )
    listed = service.get("/grades", scope="grades", params={"item_id": "i0", "rater": "sme"})
    assert listed.status_code == 200 and listed.json()["items"][0]["inclusion_prob"] < 1e-300
    answer = service.post("/estimates", scope="grades", json={})
    assert first_error(answer)["msg"] == (
        "judges.J.overall.estimate cannot be computed (nan): its sums and squares overflow on "
        "these grades (the largest |score| is 5, the smallest inclusion_prob 1e-320)"
    )


def test_a_compared_stratum_in_one_cluster_has_no_interval_and_says_why(service, tmp_path):
    """Compared with --cluster, a stratum whose labels share one prompt has no cluster-
    robust variance: as its own block says, the difference has no interval (it was NaN, a
    500), the other side's estimates stand."""
    a = labelled_grades(lambda i: 1 + i % 3, lambda i: 1 + 2 * i % 5, n=8, labelled=4)
    b = labelled_grades(lambda i: 1 + i % 2, lambda i: 2 + i % 3, n=4, labelled=2)
    rows = [{**r, "candidate_model": "A", "prompt": f"p{r['item_id'][1:]}"} for r in a]
    rows += [
        {**r, "item_id": "b" + r["item_id"], "candidate_model": "B", "prompt": "one"} for r in b
    ]
    options = {"by": ["candidate_model"], "compare": ["A", "B"], "cluster": "prompt"}
    answer = service.post("/estimates", scope="grades", json={"grades": rows, **options})
    assert answer.status_code == 200, answer.text
    judge = answer.json()["judges"]["J"]
    one_cluster = "the cluster-robust variance needs labelled items in at least two clusters"
    assert judge["strata"]["candidate_model=B"]["undefined"] == one_cluster
    compare = judge["compare"]
    assert (compare["ci"], compare["undefined"]) == (None, f"candidate_model=B: {one_cluster}")
    for part in ("judge_only", "human_only"):
        assert (compare[part]["ci"], compare[part]["undefined"]) == (None, one_cluster)
    assert compare["estimate"] == pytest.approx(
        judge["strata"]["candidate_model=A"]["estimate"]
        - judge["strata"]["candidate_model=B"]["estimate"]
    )
    assert judge["strata"]["candidate_model=A"]["ci"] is not None
    flags = ["--by", "candidate_model", "--compare", "A,B", "--cluster", "prompt"]
    done = estimate_cli(tmp_path, rows, *flags)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "e.json").read_text())["judges"]["J"]["compare"] == compare
