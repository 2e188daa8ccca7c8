"""Reading a judge's reply into a result: secrets redacted wherever the reply put them."""

from __future__ import annotations

import json

import pytest

from judges import Grader, GradeRequest, parse_config
from judges.client import Redactor
from judges.replies import judge_result, read_completion
from rubrics import library_rubric

SECRET = "tenant-password-42"


def reply(criteria: list[dict], rationale: str) -> dict:
    content = json.dumps({"criteria": criteria, "rationale": rationale})
    return {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}


def test_evidence_and_rationale_are_redacted_only_where_they_hold_a_secret():
    config = parse_config(
        {
            "model_list": [
                {
                    "model_name": "judge",
                    "litellm_params": {"model": "openai/gpt-4.1", "api_key": SECRET},
                }
            ],
            "qadi": {"guard": "off"},
        }
    )
    grader = Grader(config)
    rubric = library_rubric("iraqi-linguistic-shaku-maku")
    request = GradeRequest(rubric=rubric, prompt="p", response="r", candidate_model="m")
    plan = grader.plan(request)
    evidence = {
        "shaku_meaning": "explains shaku",
        "maku_meaning": f"quotes the key {SECRET}",
        "greeting_example": "token sk-abcdef0123456789 in the answer",
        "thanks_confusion": "",
        "msa_claim": "none",
    }
    criteria = [
        {"id": cid, "met": cid.endswith("meaning"), "evidence": text}
        for cid, text in evidence.items()
    ]
    payload = reply(criteria, f"fine, but it leaks {SECRET}")
    base = grader.unanswered("judge", plan, status="ok")
    result = judge_result(
        base, read_completion(payload), plan.template, request, Redactor([SECRET])
    )
    assert result.status == "ok" and result.score == pytest.approx(100 * 5 / 6)  # 3+2 of 6
    got = {c.id: c.evidence for c in result.criteria}
    assert got == {
        **evidence,
        "maku_meaning": "quotes the key [redacted]",
        "greeting_example": "token [redacted] in the answer",
    }
    assert result.rationale == "fine, but it leaks [redacted]"
    assert SECRET not in result.raw_reply and "sk-abcdef" not in result.raw_reply


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("key sk-abcdef0123456789 here", "key [redacted] here"),
        ("key sk_abcdef0123456789", "key [redacted]"),
        ("(qadi-abcdef0123456789)", "([redacted])"),
        ("qadi_abcdef0123456789.", "[redacted]."),
        ("a task-force_of_engineers", "a task-force_of_engineers"),  # no word starts "sk-"
        ("sk-short", "sk-short"),  # too short to be a key
        ("مفتاح sk-abcdef0123456789", "مفتاح [redacted]"),
        ("nothing key-like at all", "nothing key-like at all"),
    ],
)
def test_key_shaped_tokens_are_redacted_and_nothing_else(text, shown):
    assert Redactor([])(text) == shown
