"""The grading core end to end over HTTP to the LLM test double (a real local process)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys

import pytest

from judges import BatchGrader, Grader, GradeRequest, InMemoryJudgmentStore, parse_config
from rubrics import library_rubric
from tests.conftest import ROOT, judges_config_data


def core(config, store=None) -> BatchGrader:
    """The grading core as every path uses it, over an in-memory store."""
    return BatchGrader(Grader(config), store if store is not None else InMemoryJudgmentStore())


def run(batch: BatchGrader, **fields):
    defaults = {
        "prompt": "ما معنى شكو؟",
        "response": "شكو يعني شنو اكو",
        "candidate_model": "qwen-2.5",
    }
    rubric = library_rubric(fields.pop("rubric", "iraqi-linguistic-shaku-maku"))
    return asyncio.run(batch.grade_one(GradeRequest(rubric=rubric, **{**defaults, **fields})))


def verdict(**marks) -> str:
    return json.dumps(
        {
            "criteria": [{"id": k, "met": v, "evidence": "e"} for k, v in marks.items()],
            "rationale": "because",
        }
    )


IRAQI_MARKS = {
    "shaku_meaning": True,
    "maku_meaning": False,
    "greeting_example": True,
    "thanks_confusion": False,
    "msa_claim": False,
}


def test_rubric_grade_end_to_end(judges_config, llm_server):
    llm_server.script({"content": verdict(**IRAQI_MARKS)})
    store = InMemoryJudgmentStore()
    result = run(core(judges_config, store), judges=["claude-judge"])
    [judge] = result.results
    assert judge.status == "ok"
    assert judge.score == pytest.approx(100 * 4 / 6)  # shaku 3 + greeting 1 of 6
    assert {c.id: c.met for c in judge.criteria} == IRAQI_MARKS
    assert judge.rationale == "because"
    assert (judge.prompt_tokens, judge.completion_tokens) == (100, 20)
    assert result.aggregate.mean == pytest.approx(100 * 4 / 6)
    assert store.saved == [judge]
    [sent] = llm_server.requests()
    assert sent["temperature"] == 0
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["criteria"]
    user = sent["messages"][-1]["content"]
    assert re.search(r"<answer-([0-9a-f]{16})>\nشكو يعني شنو اكو\n</answer-\1>", user)


def test_kinayat_grade_end_to_end(judges_config, llm_server):
    llm_server.script({"content": '{"rating": 4}'})
    result = run(
        core(judges_config),
        rubric="kinayat-explanation",
        reference="كناية عن الجهر بالشيء",
        response="يعني يعمل الحاجة قدام الناس",
        judges=["claude-judge"],
    )
    assert result.results[0].status == "ok"
    assert result.results[0].score == 4.0
    assert result.results[0].dimensions == {"accuracy": 4.0}
    [sent] = llm_server.requests()
    user = sent["messages"][0]["content"]
    assert re.search(
        r"Gold Explanation: <gold_explanation-(\w{16})>\nكناية عن الجهر بالشيء\n", user
    )
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["rating"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]


def test_kinayat_paper_rule_end_to_end(judges_config, llm_server):
    llm_server.script({"content": "4"})
    result = run(
        core(judges_config),
        rubric="kinayat-explanation-paper",
        reference="كناية عن الجهر بالشيء",
        response="يعني يعمل الحاجة قدام الناس",
        judges=["claude-judge"],
    )
    assert result.results[0].score == 4.0
    [sent] = llm_server.requests()
    assert "Gold Explanation: كناية عن الجهر بالشيء\n" in sent["messages"][0]["content"]
    assert "response_format" not in sent


def test_fann_or_flop_grade_end_to_end(judges_config, llm_server):
    llm_server.script(
        {"content": '{"faithfulness_score": 4, "fluency_score": 5, "overall_score": 4}'}
    )
    result = run(
        core(judges_config),
        rubric="fann-or-flop-explanation",
        reference=json.dumps(["شرح 1", "شرح 2"]),
        response=json.dumps(["تفسير 1", "تفسير 2"]),
        judges=["llama-judge"],
        metadata={"item_id": "poem_1", "title": "t"},
    )
    [judge] = result.results
    assert (judge.status, judge.score) == ("ok", 4.0)
    assert judge.dimensions == {"faithfulness": 4.0, "fluency": 5.0, "overall": 4.0}
    assert llm_server.requests()[0]["model"] == "meta-llama/Llama-3.1-8B-Instruct"


def on(transport: str, server, **qadi):
    """The panel of judges_config_data, every judge called by `transport`."""
    return parse_config(judges_config_data(server, transport, **qadi))


def test_malformed_json_is_a_parse_error_with_raw_reply_and_no_score(llm_server, transport):
    llm_server.script({"content": "The answer deserves full marks."})
    store = InMemoryJudgmentStore()
    result = run(core(on(transport, llm_server), store), judges=["claude-judge"])
    [judge] = result.results
    assert judge.status == "parse_error"
    assert judge.score is None
    assert judge.raw_reply == "The answer deserves full marks."
    assert "not valid JSON" in judge.error
    assert result.status == "failed"
    assert result.aggregate is None
    assert store.saved[0].status == "parse_error"


def test_500_then_success_is_one_retry(llm_server, transport):
    llm_server.script({"status": 500}, {"content": verdict(**IRAQI_MARKS)})
    result = run(core(on(transport, llm_server)), judges=["claude-judge"])
    assert result.results[0].status == "ok"
    assert llm_server.calls() == 2


def test_persistent_500_is_a_backend_error_after_bounded_retries(llm_server, transport):
    llm_server.script(*[{"status": 500}] * 5)
    result = run(core(on(transport, llm_server)), judges=["claude-judge"])
    [judge] = result.results
    assert (judge.status, judge.score) == ("backend_error", None)
    assert "InternalServerError" in judge.error
    assert "sk-test-secret" not in judge.error
    assert llm_server.calls() == 2  # the first call and num_retries=1


def test_timeout_is_an_error(llm_server, transport):
    config = on(transport, llm_server, timeout=0.5, num_retries=0)
    llm_server.script({"delay": 3, "content": verdict(**IRAQI_MARKS)})
    result = run(core(config), judges=["claude-judge"])
    [judge] = result.results
    assert (judge.status, judge.score) == ("timeout", None)
    assert result.status == "failed"


def test_gpt_candidate_is_graded_by_the_substitute(judges_config, llm_server):
    result = run(core(judges_config), candidate_model="gpt-4o")  # default panel: gpt-judge
    assert [r.judge for r in result.results] == ["claude-judge"]
    assert result.skipped[0].judge == "gpt-judge"
    assert result.skipped[0].reason == "self_evaluation"
    assert llm_server.requests()[0]["model"] == "claude-3-5-sonnet"


def test_hosted_vllm_llama_judge_skipped_for_llama_candidate(judges_config, llm_server):
    result = run(
        core(judges_config),
        candidate_model="meta-llama/Llama-3.1-70B-Instruct",
        judges=["llama-judge", "claude-judge"],
    )
    assert [r.judge for r in result.results] == ["claude-judge"]
    assert [s.judge for s in result.skipped] == ["llama-judge"]
    assert llm_server.calls() == 1


def test_panel_aggregates_mean_median_spread(judges_config, llm_server):
    llm_server.rules(
        {"match": "<answer-", "reply": {"content": verdict(**IRAQI_MARKS)}},
    )
    result = run(
        core(judges_config),
        candidate_model="qwen-2.5",
        judges=["gpt-judge", "claude-judge", "llama-judge"],
    )
    assert result.status == "ok"
    assert result.aggregate.n == 3
    assert result.aggregate.spread == 0.0
    assert result.aggregate.median == pytest.approx(100 * 4 / 6)


def test_cached_verdict_makes_no_second_call(judges_config, llm_server):
    batch = core(judges_config)
    first = run(batch, judges=["claude-judge"])
    second = run(batch, judges=["claude-judge"])
    assert first.results[0].cached is False
    assert second.results[0].cached is True
    assert second.results[0].score == first.results[0].score
    assert llm_server.calls() == 1


def test_cli_judge_prints_a_grade_with_criteria(tmp_path, llm_server, migrated_db):
    import yaml

    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    llm_server.script({"content": verdict(**IRAQI_MARKS)})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "service",
            "judge",
            "--rubric",
            "iraqi-linguistic-shaku-maku",
            "--prompt",
            "ما معنى شكو؟",
            "--response",
            "شكو يعني شنو اكو",
            "--candidate-model",
            "gpt-4o",
            "--config",
            str(config),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "QADI_DATABASE_URL": migrated_db},  # `qadi judge` stores
    )
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["results"][0]["judge"] == "claude-judge"
    assert {c["id"]: c["met"] for c in printed["results"][0]["criteria"]} == IRAQI_MARKS
    assert printed["skipped"][0]["reason"] == "self_evaluation"


def test_cli_judge_unknown_maker_is_a_clear_error(tmp_path, llm_server):
    import yaml

    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "service",
            "judge",
            "--rubric",
            "iraqi-linguistic-shaku-maku",
            "--response",
            "x",
            "--candidate-model",
            "house-model-7",
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2
    assert "house-model-7" in done.stderr and "maker is unknown" in done.stderr
