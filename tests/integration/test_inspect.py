"""The Inspect AI scorer end to end, offline: Inspect's `mockllm` model is the solver, a running
qadi service on 127.0.0.1 grades with the LLM test double as judge. The `.eval` log that run
writes is then imported with `qadi grades import --from inspect`."""

from __future__ import annotations

import json
import math

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import edit_score, read_eval_log, write_eval_log
from inspect_ai.log._edit import ProvenanceData
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import ScoreEdit, match
from inspect_ai.solver import generate
from qadi_client.inspect import qadi_scorer

from tests.conftest import run_cli, stored_grades
from tests.integration.test_service_api import IRAQI, verdict

# The double answers by a substring of the judge prompt, which fences each sample's input.
# Penalty-weighted scores (DESIGN.md; weights shaku 3, maku 2, greeting 1 positive; thanks 2,
# msa 2 negative):
#   ALPHA: shaku, maku met          -> 100 * 5/6 = 83.33
#   BETA:  shaku, greeting met      -> 100 * 4/6 = 66.67
#   GAMMA: the reply is not a verdict -> parse error -> unscored (never 0)
# mean over scored samples = (83.33 + 66.67) / 2 = 75.0
BETA = {**IRAQI, "maku_meaning": False, "greeting_example": True}
SAMPLES = [
    Sample(id="alpha", input="ALPHA: شنو معنى شكو؟", target="شكو يعني شنو اكو",
           metadata={"dialect": "iraqi"}),
    Sample(id="beta", input="BETA: شنو معنى ماكو؟", target="ماكو = ما في",
           metadata={"dialect": "iraqi"}),
    Sample(id="gamma", input="GAMMA: شكو ماكو؟", target="شنو الأخبار",
           metadata={"dialect": "iraqi"}),
]


def mock_answer(messages, tools, tool_choice, config) -> ModelOutput:
    """mockllm's reply with its usage given, so Inspect does not reach for tiktoken's
    vocabulary (a download) to count tokens offline."""
    output = ModelOutput.from_content(model="mockllm", content="شكو يعني شنو اكو")
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


@pytest.fixture(scope="module")
def inspect_run(qadi_server, llm_server_process, tmp_path_factory):
    llm_server_process.reset()
    llm_server_process.rules(
        {"match": "ALPHA", "reply": {"content": verdict(IRAQI)}},
        {"match": "BETA", "reply": {"content": verdict(BETA)}},
        {"match": "GAMMA", "reply": {"content": "not a verdict"}},
    )
    task = Task(
        dataset=SAMPLES,
        solver=generate(),
        scorer=[
            qadi_scorer(
                rubric="iraqi-linguistic-shaku-maku",
                url=qadi_server.base,
                api_key=qadi_server.keys["all"],
            ),
            match(),  # Inspect's own letter grades (C/I), imported beside qadi's
        ],
    )
    log_dir = tmp_path_factory.mktemp("inspect-logs")
    solver_model = get_model("mockllm/gpt-4o", custom_outputs=mock_answer)
    [log] = eval(task, model=solver_model, log_dir=str(log_dir), display="none")
    llm_server_process.reset()
    return log


def test_scores_are_qadi_grades_and_a_parse_failure_is_unscored(inspect_run):
    assert inspect_run.status == "success", inspect_run.error
    scores = {s.id: s.scores["qadi_scorer"] for s in inspect_run.samples}
    assert scores["alpha"].value == pytest.approx(500 / 6)
    assert scores["beta"].value == pytest.approx(400 / 6)
    assert math.isnan(scores["gamma"].value) and scores["gamma"].reason == "judges_failed"
    result = next(r for r in inspect_run.results.scores if r.name == "qadi_scorer")
    assert result.metrics["mean"].value == pytest.approx(75.0)  # the unscored one left out


def test_the_guard_sees_the_solver_model_and_verdicts_are_in_metadata(inspect_run):
    alpha = next(s for s in inspect_run.samples if s.id == "alpha").scores["qadi_scorer"]
    # mockllm/gpt-4o is an OpenAI model: the OpenAI judge is skipped for its substitute
    [skipped] = alpha.metadata["skipped"]
    assert (skipped["judge"], skipped["reason"]) == ("gpt-judge", "self_evaluation")
    assert alpha.metadata["criteria"] == {"claude-judge": IRAQI}
    assert alpha.explanation == "claude-judge: r"


def test_every_sample_is_stored_with_the_solver_model(inspect_run, qadi_server):
    from qadi_client import QadiClient

    with QadiClient(qadi_server.base, api_key=qadi_server.keys["all"]) as qadi:
        stored = list(qadi.judgments(candidate_model="mockllm/gpt-4o"))
    by_item = {j.item_id: j.status for j in stored}
    assert by_item["alpha"] == "ok" and by_item["beta"] == "ok"
    assert by_item["gamma"] == "parse_error"


def test_the_scorer_is_registered_with_inspect():
    from importlib.metadata import entry_points

    from inspect_ai._util.registry import registry_info

    scorer = qadi_scorer(rubric="x")
    assert registry_info(scorer).name.endswith("qadi_scorer")
    assert "qadi_client.inspect" in {e.value for e in entry_points(group="inspect_ai")}


def test_import_an_inspect_log_as_judge_and_human_rows(inspect_run, migrated_db, tmp_path):
    log = read_eval_log(inspect_run.location)
    # an SME corrects beta's score in Inspect; that edit is a human grade
    edit_score(log, "beta", "qadi_scorer",
               ScoreEdit(value=50.0, provenance=ProvenanceData(author="sme-iq-1")))
    path = tmp_path / "edited.eval"
    write_eval_log(log, str(path))
    env = {"QADI_DATABASE_URL": migrated_db}
    done = run_cli("grades", "import", "--from", "inspect", str(path), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) | {"file": None} == {
        "file": None, "rows": 6, "inserted": 6, "updated": 0, "skipped": 1}
    assert "sample gamma (epoch 1): scorer qadi_scorer: unscored (judges_failed)" in done.stderr
    rows = stored_grades(migrated_db)
    assert rows[("alpha", "qadi_scorer")]["score"] == pytest.approx(500 / 6)
    assert rows[("beta", "qadi_scorer")]["score"] == pytest.approx(400 / 6)  # the original
    assert rows[("beta", "sme-iq-1")] | {"score": None} == {
        "item_id": "beta", "rater": "sme-iq-1", "rater_kind": "human", "score": None,
        "benchmark": log.eval.task, "candidate_model": "mockllm/gpt-4o", "dialect": "iraqi",
        "epoch": "1", "project": "default"}
    assert rows[("beta", "sme-iq-1")]["score"] == 50.0
    # match(): alpha's output equals its target (C = 1), beta's does not (I = 0), as Inspect's
    # value_to_float maps them
    assert (rows[("alpha", "match")]["score"], rows[("beta", "match")]["score"]) == (1.0, 0.0)
    assert rows[("gamma", "match")]["rater_kind"] == "judge"


def test_with_trust_an_escalated_sample_is_unscored_and_waits_in_the_sme_queue(
    qadi_server, llm_server_process, tmp_path
):
    """No calibration report has fixed a threshold on this service: no verdict may stand
    without an SME, so every sample is escalated: unscored (never 0), and queued."""
    from qadi_client import QadiClient

    llm_server_process.reset()
    llm_server_process.rules({"match": "ALPHA", "reply": {"content": verdict(IRAQI)}})
    task = Task(
        dataset=SAMPLES[:1],
        solver=generate(),
        scorer=qadi_scorer(
            rubric="iraqi-linguistic-shaku-maku",
            url=qadi_server.base,
            api_key=qadi_server.keys["all"],
            trust={"alpha": 0.1, "delta": 0.1},
        ),
    )
    solver_model = get_model("mockllm/gpt-4o", custom_outputs=mock_answer)
    [log] = eval(task, model=solver_model, log_dir=str(tmp_path), display="none")
    llm_server_process.reset()
    [sample] = log.samples
    score = sample.scores["qadi_scorer"]
    assert math.isnan(score.value) and score.reason == "escalated"
    assert "no calibration of claude-judge" in score.explanation
    assert score.metadata["trust"]["queued"] == {"reason": "escalated", "inclusion_prob": 1.0}
    with QadiClient(qadi_server.base, api_key=qadi_server.keys["all"]) as qadi:
        queued = {q.request_id: q for q in qadi.sme_queue(reason="escalated")}
    item = queued[score.metadata["request_id"]]
    assert (item.item_id, item.inclusion_prob, item.reason) == ("alpha", 1.0, "escalated")


def test_a_trusted_verdict_is_the_score_not_the_panel_mean():
    from qadi_client.inspect import _trusted_score
    from qadi_client.models import JudgeResponse

    result = {"judge": "cheap", "model": "m", "status": "ok", "score": 2.0, "cache_key": "k",
              "template": "t@1", "template_hash": "h", "rubric_ref": "r@1", "rubric_hash": "rh",
              "criteria": [], "dimensions": {}, "stand_in": False}
    policy = {"alpha": 0.1, "delta": 0.1}
    guarantee = {
        "statement": "P(disagree) ≤ 0.1", "alpha": 0.1, "delta": 0.1, "method": "fst",
        "evaluator": "cheap", "stratum": "overall", "threshold": 0.8, "n_calibration": 50,
        "coverage": 0.7, "report_id": "r1", "calibrated_at": "2026-11-26T00:00:00",
        "agreement": {"rule": "exact", "tolerance": 0}, "rubric_ref": "r@1",
        "rubric_hash": "rh", "judges": []}
    graded = JudgeResponse.model_validate({
        "request_id": "q1", "status": "ok", "rubric": {"id": "r", "version": 1, "hash": "rh"},
        "candidate_model": "c", "candidate_maker": "x",
        "aggregate": {"n": 2, "mean": 3.0, "median": 3.0, "min": 2.0, "max": 4.0, "spread": 2.0,
                      "stdev": 1.4},
        "results": [result, {**result, "judge": "other", "score": 4.0}], "skipped": [],
        "trust": {"status": "trusted", "judge": "cheap", "score": 2.0, "stratum": "overall",
                  "policy": policy, "judges": [], "guarantee": guarantee},
    })  # fmt: skip
    score = _trusted_score(graded, "the answer")
    assert score.value == 2.0  # cheap's verdict stands; the panel mean (3.0) does not
    assert score.explanation == "trusted: cheap (P(disagree) ≤ 0.1)"
