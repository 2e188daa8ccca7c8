"""Templates through the service and the CLI (issue 26 items 2 and 5, issue 31 item 7): template
references are checked before anything is stored, a user's own scale rubric reaches the
judge with its anchors and question, and the template each grade came from is stored with
its hash. Judge calls go to the test double."""

from __future__ import annotations

import json
import time

import yaml

from tests.conftest import judges_config_data, run_cli
from tests.integration.test_service_api import Service, service  # noqa: F401  (fixture)

MY_SCALE = {
    "kind": "scale",
    "id": "support-reply",
    "scale": {"min": 1, "max": 5},
    "dimensions": [
        {"id": "helpfulness", "anchors": {"1": "Ignores the problem", "5": "Solves it fully"}}
    ],
}
USER_TEMPLATE = {
    "id": "support-judge",
    "version": 1,
    "output": "scores_json",
    "user": "{{ anchors }}\n{{ reply_format }}\nAsked: {{ prompt }}\nReplied: {{ answer }}",
}


def judge_body(**fields):
    body = {
        "kind": "explanation",
        "prompt": "My parcel never arrived.",
        "response": "Sorry! I have sent a new one today.",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric": MY_SCALE,
    }
    return {**body, **fields}


def test_post_rubrics_checks_the_template_reference_before_storing(service):  # noqa: F811
    for ref, message in (
        ("nope@1", "no template 'nope@1' (known: "),
        ("../../../etc/passwd@1", "is not a template reference"),
    ):
        answer = service.post("/rubrics", json={**MY_SCALE, "template": ref})
        assert answer.status_code == 422, answer.text
        [problem] = answer.json()["detail"]
        assert problem["loc"] == ["body", "template"] and message in problem["msg"]
    other_anchors = service.post("/rubrics", json={**MY_SCALE, "template": "kinayat-explanation@2"})
    assert other_anchors.status_code == 422
    assert other_anchors.json()["detail"][0]["msg"].startswith("anchors: kinayat-explanation@2")
    assert service.get("/rubrics/support-reply").status_code == 404  # none of them was stored
    assert service.post("/rubrics", json=MY_SCALE).json()["template"] == "neutral-scale@1"
    inline = service.post("/rubrics", json={**MY_SCALE, "template": USER_TEMPLATE})
    assert inline.status_code == 201 and inline.json()["version"] == 2
    assert service.get("/rubrics/support-reply@2").json()["template"] == USER_TEMPLATE


def test_an_inline_rubric_with_an_unknown_template_is_refused_and_not_stored(service):  # noqa: F811
    answer = service.post("/judge", json=judge_body(rubric={**MY_SCALE, "template": "nope@1"}))
    assert answer.status_code == 422
    [problem] = answer.json()["detail"]
    assert problem["loc"] == ["body", "rubric", "template"] and "nope@1" in problem["msg"]
    assert service.get("/rubrics/support-reply").status_code == 404


def test_a_users_scale_rubric_reaches_the_judge_with_its_anchors_and_question(
    service,  # noqa: F811
    llm_server,
):
    answer = service.post("/judge", json=judge_body())
    assert answer.status_code == 200, answer.text
    [sent] = llm_server.requests()
    system, user = (m["content"] for m in sent["messages"])
    assert "Arabic" not in system and "idiom" not in user
    assert "Solves it fully" in user and "Ignores the problem" in user
    assert "My parcel never arrived." in user
    [result] = answer.json()["results"]
    assert result["score"] == 3.0  # the double's default: the scale's middle
    stored = service.get(f"/judgments/{result['id']}").json()
    assert stored["template"] == "neutral-scale@1" and stored["template_hash"].startswith("sha256:")


def test_a_template_inline_in_the_request_is_used_and_recorded(service, llm_server):  # noqa: F811
    first = service.post("/judge", json=judge_body(template=USER_TEMPLATE))
    assert first.status_code == 200, first.text
    sent = llm_server.requests()[-1]["messages"]
    assert len(sent) == 1 and "Asked: <prompt-" in sent[0]["content"]
    [result] = first.json()["results"]
    stored = service.get(f"/judgments/{result['id']}").json()
    assert stored["template"] == "support-judge@1"
    changed = {**USER_TEMPLATE, "version": 2, "user": USER_TEMPLATE["user"] + "\nBe strict."}
    second = service.post("/judge", json=judge_body(template=changed))
    [again] = second.json()["results"]
    stored_again = service.get(f"/judgments/{again['id']}").json()
    assert stored_again["template"] == "support-judge@2"
    assert stored_again["template_hash"] != stored["template_hash"]
    dropped = {**USER_TEMPLATE, "user": "{{ anchors }} {{ reply_format }} {{ answer }}"}
    refused = service.post("/judge", json=judge_body(template=dropped))
    assert refused.status_code == 422
    [problem] = refused.json()["detail"]
    assert problem["loc"] == ["body", "prompt"] and "does not show it" in problem["msg"]


def test_qadi_judge_takes_a_template_file(migrated_db, llm_server, tmp_path):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(yaml.safe_dump(MY_SCALE))
    template = tmp_path / "support.yaml"
    template.write_text(yaml.safe_dump(USER_TEMPLATE))
    args = [
        "judge", "--rubric", str(rubric), "--prompt", "Where is my parcel?",
        "--response", "It ships today.", "--candidate-model", "qwen-2.5",
        "--config", str(config), "--template", str(template),
    ]  # fmt: skip
    args_json = [*args, "--json"]
    done = run_cli(*args_json, env={"QADI_DATABASE_URL": migrated_db})
    assert done.returncode == 0, done.stderr
    [result] = json.loads(done.stdout)["results"]
    assert result["template"] == "support-judge@1"
    assert "Asked: <prompt-" in llm_server.requests()[-1]["messages"][0]["content"]
    template.write_text(yaml.safe_dump({**USER_TEMPLATE, "user": "{{ answer }}"}))
    refused = run_cli(*args, env={"QADI_DATABASE_URL": migrated_db})
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: anchors: support-judge@1 never shows the rubric's anchors ({{ anchors }}); "
        "rubric 'support-reply' would be graded without them"
    )


def test_a_bare_number_is_a_parse_error_with_the_reply_kept(service, llm_server):  # noqa: F811
    """Issue 26 item 5: the README's contract is {"rating": N}; a bare `4` is not a grade
    (the *-paper rubrics keep their paper's free-text rule: test_grading_http)."""
    llm_server.script({"content": "4"})
    body = {
        "kind": "explanation",
        "response": "يعني يعمل الشيء علنا",
        "reference": "كناية عن الجهر",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": "kinayat-explanation",
    }
    answer = service.post("/judge", json=body)
    assert answer.status_code == 502
    [result] = answer.json()["results"]
    assert (result["status"], result["score"], result["raw_reply"]) == ("parse_error", None, "4")
    assert result["error"] == 'reply is a bare number; it must be {"rating": <integer>}'


def test_a_template_that_computes_too_much_is_a_422_naming_the_limit_at_once(service):  # noqa: F811
    """Issue 42 finding 1: four nested `**` cost 13 s of CPU (the worker froze) before its
    422; now the render stops at the number bound, and the same request without the
    freezing line is graded."""
    freezing = {**USER_TEMPLATE, "user": USER_TEMPLATE["user"] + " {{ ((((10)**64)**64)**64)**64 }}"}
    started = time.monotonic()
    refused = service.post("/judge", json=judge_body(template=freezing))
    assert time.monotonic() - started < 5  # a loaded CI machine; before: 13 s at least
    assert refused.status_code == 422, refused.text
    [problem] = refused.json()["detail"]
    assert problem["loc"] == ["body", "template"]
    assert "support-judge@1: a number the template computes is over 256 bits" in problem["msg"]
    assert service.get("/judgments").json()["items"] == []  # no call was made, nothing graded
    assert service.post("/judge", json=judge_body(template=USER_TEMPLATE)).status_code == 200
