"""qadi_client against a running `qadi serve` (a real uvicorn process on 127.0.0.1) whose judges
are the LLM test double: every method, pagination, typed errors and field errors."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from qadi_client import (
    AsyncQadiClient,
    AuthError,
    JudgesFailed,
    QadiClient,
    ValidationFailed,
)

from tests.integration.test_service_api import IRAQI, verdict

RUBRIC = "iraqi-linguistic-shaku-maku"


def answer(**overrides) -> dict:
    """A unique answer each call, so the judge cache never answers for the double."""
    return {
        "kind": "rubric",
        "prompt": "شنو معنى شكو؟",
        "response": f"شكو يعني شنو اكو ({uuid.uuid4().hex[:8]})",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": RUBRIC,
        "metadata": {"item_id": f"client-{uuid.uuid4().hex[:8]}", "dialect": "iraqi"},
        **overrides,
    }


@pytest.fixture
def qadi(qadi_server, llm_server):
    with QadiClient(qadi_server.base, api_key=qadi_server.keys["all"]) as client:
        yield client


def test_judge_returns_typed_scores_verdicts_and_skipped_judges(qadi, llm_server):
    # shaku (3) and maku (2) met, greeting (1) not, no negative triggered:
    # 100 * (3 + 2) / (3 + 2 + 1) = 83.33 (SME paper's penalty-weighted rule, DESIGN.md)
    llm_server.script({"content": verdict(IRAQI)})
    graded = qadi.judge(**answer(judges=["gpt-judge"]))
    assert graded.status == "ok"
    assert graded.aggregate.mean == pytest.approx(500 / 6)
    [result] = graded.results
    assert (result.judge, result.status) == ("gpt-judge", "ok")
    assert {c.id: c.met for c in result.criteria} == IRAQI
    assert graded.skipped == []


def test_self_evaluation_guard_is_visible_in_skipped(qadi, llm_server):
    llm_server.script({"content": verdict(IRAQI)})
    graded = qadi.judge(**answer(candidate_model="gpt-4o"))
    [skipped] = graded.skipped
    assert (skipped.judge, skipped.reason, skipped.substitute) == (
        "gpt-judge",
        "self_evaluation",
        "claude-judge",
    )
    assert [r.judge for r in graded.results] == ["claude-judge"]


def test_every_judge_failing_raises_with_the_reasons_and_no_score(qadi, llm_server):
    llm_server.script(*[{"content": "not a verdict"}] * 4)
    with pytest.raises(JudgesFailed) as raised:
        qadi.judge(**answer())
    failed = raised.value.response
    assert failed.aggregate is None
    assert {r.status for r in failed.results} == {"parse_error"}
    assert all(r.score is None for r in failed.results)


def test_server_field_errors_arrive_typed(qadi):
    # 'rubric_id' names a rubric the library does not hold: refused by the server, not locally
    with pytest.raises(ValidationFailed) as raised:
        qadi.judge(**answer(rubric_id="no-such-rubric"))
    assert raised.value.status_code == 422
    assert raised.value.field_errors and "no-such-rubric" in raised.value.field_errors[0].msg


def test_refused_grade_rows_name_the_row_and_field(qadi, tmp_path):
    path = tmp_path / "broken.csv"
    path.write_text("item_id,rater,rater_kind,score\na,h1,person,high\n")
    with pytest.raises(ValidationFailed) as raised:
        qadi.upload_grades(path)
    messages = [e.msg for e in raised.value.field_errors]
    assert any(m.startswith("row 2: rater_kind") for m in messages)
    assert any(m.startswith("row 2: score") for m in messages)


def test_a_key_without_the_scope_is_an_auth_error(qadi_server):
    row = {"item_id": "a", "rater": "h", "rater_kind": "human", "score": 1}
    with (
        QadiClient(qadi_server.base, api_key=qadi_server.keys["judge"]) as client,
        pytest.raises(AuthError) as raised,
    ):
        client.upload_grades([row])
    assert raised.value.status_code == 403


def test_judge_batch_items_succeed_or_fail_on_their_own(qadi, llm_server):
    llm_server.script({"content": verdict(IRAQI)})
    batch = qadi.judge_batch([answer(judges=["gpt-judge"]), {**answer(), "rubric_id": None,
                                                            "rubric": {"kind": "nonsense"}}])
    first, second = batch.results
    assert first.status_code == 200 and first.response.aggregate.mean == pytest.approx(500 / 6)
    assert second.status_code == 422 and second.response is None


def test_judgments_iterates_every_page(qadi, llm_server):
    tag = uuid.uuid4().hex[:8]
    for n in range(5):
        qadi.judge(**answer(metadata={"item_id": f"{tag}-{n}", "run": tag}))
    seen = list(qadi.judgments(page_size=2, metadata={"run": tag}))
    assert sorted(j.item_id for j in seen) == [f"{tag}-{n}" for n in range(5)]
    assert len({j.id for j in seen}) == 5


def test_upload_grades_from_rows_and_from_a_file_then_calibrate(qadi, llm_server, tmp_path):
    tag = uuid.uuid4().hex[:8]
    judged = {}
    for n, marks in enumerate([IRAQI, {**IRAQI, "maku_meaning": False}, {**IRAQI, "msa_claim": True}]):
        llm_server.script({"content": verdict(marks)})
        graded = qadi.judge(**answer(judges=["gpt-judge"], metadata={"item_id": f"{tag}-{n}", "run": tag}))
        judged[f"{tag}-{n}"] = graded.results[0].score
    rows = [{"item_id": item, "rater": "sme-1", "rater_kind": "human", "score": score}
            for item, score in judged.items()]
    assert qadi.upload_grades(rows).model_dump() == {
        "inserted": 3, "updated": 0, "duplicates": None, "unfilled": None}  # fmt: skip
    path = tmp_path / "second.csv"
    path.write_text("item_id,rater,rater_kind,score\n" + "".join(
        f"{item},sme-2,human,{score + 10}\n" for item, score in judged.items()))
    assert qadi.upload_grades(path).inserted == 3
    report = qadi.calibration_report(rubric=RUBRIC, metadata={"run": tag}, bootstrap=50)
    overall = report.judges["gpt-judge"]["overall"]
    # the judge equals sme-1 and is 10 below sme-2: |J - mean(h)| = 5 on every item
    assert report.n_items == 3 and overall["mad"] == pytest.approx(5.0)


def test_estimate_corrects_the_judge_mean_by_the_human_grades(qadi):
    # a judge 1 point too lenient on 4 items; humans graded 2 of them (item b: 3, d: 2)
    rows = [
        {"item_id": i, "rater": "judge-x", "rater_kind": "judge", "score": s}
        for i, s in (("a", 4), ("b", 4), ("c", 5), ("d", 3))
    ] + [
        {"item_id": "b", "rater": "sme", "rater_kind": "human", "score": 3},
        {"item_id": "d", "rater": "sme", "rater_kind": "human", "score": 2},
    ]
    estimate = qadi.estimate(grades=rows, scale_min=1, scale_max=5)
    overall = estimate.judges["judge-x"]["overall"]
    assert (overall["n_labelled"], overall["n_unlabelled"]) == (2, 2)
    assert overall["judge_only"]["estimate"] == 4.0  # (4 + 4 + 5 + 3) / 4
    assert overall["human_only"]["estimate"] == 2.5  # (3 + 2) / 2
    assert overall["estimate"] < overall["judge_only"]["estimate"]  # the leniency corrected


def test_async_client_grades_and_pages(qadi_server, llm_server):
    async def run():
        async with AsyncQadiClient(qadi_server.base, api_key=qadi_server.keys["all"]) as qadi:
            tag = uuid.uuid4().hex[:8]
            graded = await asyncio.gather(
                *(qadi.judge(**answer(metadata={"item_id": f"{tag}-{n}", "run": tag}))
                  for n in range(3))
            )
            stored = [j async for j in qadi.judgments(page_size=1, metadata={"run": tag})]
            return graded, stored

    graded, stored = asyncio.run(run())
    assert {g.status for g in graded} == {"ok"}
    assert {j.request_id for j in stored} == {g.request_id for g in graded}


def test_retries_reuse_one_idempotency_key_and_the_server_grades_once(qadi_server, llm_server):
    """A 503 in front of the real service (as a load balancer would answer) is retried with the
    same key; a second logical call gets a new key."""
    upstream = httpx.HTTPTransport()
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["Idempotency-Key"])
        if len(seen) == 1:
            return httpx.Response(503, json={"detail": "busy"}, headers={"Retry-After": "0"})
        return upstream.handle_request(request)

    with QadiClient(qadi_server.base, api_key=qadi_server.keys["all"],
                    transport=httpx.MockTransport(handler)) as qadi:
        calls = llm_server.calls()
        body = answer(judges=["gpt-judge"])
        first = qadi.judge(**body)
        assert len(seen) == 2 and seen[0] == seen[1]
        again = qadi.judge(idempotency_key=seen[0], **body)
    assert again.request_id == first.request_id  # the server answered from the first result
    assert llm_server.calls() == calls + 1
