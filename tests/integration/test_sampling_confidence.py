"""Sampling confidence (judges/sampling.py) through the service, against the OpenAI-compatible
test double: a judge without token probabilities is called `samples` times at its
temperature; the verdict is the most common one and its confidence the share of samples that
give it; failures count against it; the samples are stored and cached with the judgment, and
`qadi regrade --dry-run` states their cost before any call."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import judges_config_data, run_cli
from tests.integration.test_service_api import IRAQI, Service, rubric_body, verdict


def sampling_config(server, samples: int = 5) -> dict:
    return {
        "model_list": [
            {
                "model_name": "sampled",
                "litellm_params": {"model": "openai/gpt-4.1-mini", "api_base": server.api_base,
                                   "api_key": "sk-test-secret-key-0009"},
                "confidence": {"source": "sampling", "samples": samples, "temperature": 0.9},
            }
        ],
        "qadi": {"num_retries": 0, "timeout": 5, "panel": ["sampled"]},
    }  # fmt: skip


@pytest.fixture
def sampled(migrated_db, llm_server, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(sampling_config(llm_server)))
    return Service(migrated_db, path), path


OTHER = {**IRAQI, "msa_claim": True}  # one mark apart: another verdict


def test_the_most_common_verdict_comes_back_with_the_share_that_gives_it(sampled, llm_server):
    judged, _ = sampled
    llm_server.script(
        {"content": verdict()}, {"content": verdict(OTHER)}, {"content": verdict()},
        {"content": "not json"}, {"content": verdict()},
    )  # fmt: skip
    answer = judged.post("/judge", json=rubric_body())
    assert answer.status_code == 200, answer.text
    [result] = answer.json()["results"]
    # 3 of 5 samples give IRAQI's marks; the parse error counts against it
    assert result["status"] == "ok" and result["confidence"] == pytest.approx(0.6)
    assert result["confidence_source"] == "sampling"
    assert {c["id"]: c["met"] for c in result["criteria"]} == IRAQI
    assert sorted(s["status"] for s in result["samples"]) == ["ok"] * 4 + ["parse_error"]
    assert result["probabilities"] is None and result["attempts"] == 5
    [listed] = judged.get("/judges").json()
    assert (listed["confidence_source"], listed["calls_per_verdict"]) == ("sampling", 5)
    bodies = [r for r in llm_server.requests() if r.get("model") == "gpt-4.1-mini"]
    assert len(bodies) == 5 and {b["temperature"] for b in bodies} == {0.9}
    stored = judged.get(f"/judgments/{result['id']}").json()
    assert stored["confidence_source"] == "sampling" and stored["samples"] == result["samples"]
    # the same request again: the stored verdict with its samples, no call
    again = judged.post("/judge", json=rubric_body()).json()["results"][0]
    assert again["cached"] and again["samples"] == result["samples"]
    assert again["confidence"] == pytest.approx(0.6)
    assert llm_server.calls() == 5


def test_no_sample_that_parses_is_a_failure_never_a_verdict(sampled, llm_server):
    judged, _ = sampled
    llm_server.script(*({"content": "I cannot grade this"} for _ in range(5)))
    answer = judged.post("/judge", json=rubric_body(metadata={"item_id": "irq-2"}))
    [result] = answer.json()["results"]
    assert result["status"] == "parse_error" and result["score"] is None
    assert result["confidence"] is None and result["confidence_source"] is None
    assert [s["status"] for s in result["samples"]] == ["parse_error"] * 5


def test_a_token_confidence_is_named_as_such(migrated_db, llm_server, tmp_path):
    path = tmp_path / "token.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    judged = Service(migrated_db, path)
    llm_server.script({"content": json.dumps({"rating": 4}),
                       "top_logprobs": {"4": {"4": 0.8, "3": 0.2}}})  # fmt: skip
    body = {
        "kind": "explanation", "prompt": "عين على عين", "response": "answer",
        "reference": "a reference", "candidate_model": "gpt-4o",
        "rubric_id": "kinayat-explanation", "judges": ["llama-judge"],
    }  # fmt: skip
    [result] = judged.post("/judge", json=body).json()["results"]
    assert result["confidence"] == pytest.approx(0.8) and result["confidence_source"] == "token"
    assert result["samples"] is None


def test_the_dry_run_states_the_samples_before_any_call(sampled, llm_server, migrated_db,
                                                        tmp_path):  # fmt: skip
    _, path = sampled
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(
        json.dumps({"item_id": f"a{i}", "prompt": "شنو معنى شكو؟", "response": f"answer {i}",
                    "candidate_model": "Qwen/Qwen2.5-7B-Instruct"}) + "\n" for i in range(3)))  # fmt: skip
    env = {"QADI_DATABASE_URL": migrated_db, "QADI_JUDGES_CONFIG": str(path)}
    estimate = run_cli("regrade", str(answers), "--rubric", "iraqi-linguistic-shaku-maku",
                       "--dry-run", env=env)  # fmt: skip
    assert estimate.returncode == 0, estimate.stderr
    summary = json.loads(estimate.stdout)
    assert summary["calls"] == 15 and summary["judges"]["sampled"]["calls_per_verdict"] == 5
    refused = run_cli("regrade", str(answers), "--rubric", "iraqi-linguistic-shaku-maku",
                      "--batch", str(tmp_path / "batch.jsonl"), env=env)  # fmt: skip
    assert refused.returncode != 0 and "sampling" in refused.stderr
    assert llm_server.calls() == 0


def test_a_verbalised_confidence_is_asked_for_read_and_marked(migrated_db, llm_server, tmp_path):
    config = sampling_config(llm_server)
    config["model_list"][0]["confidence"] = {"source": "verbalised"}
    path = tmp_path / "verbalised.yaml"
    path.write_text(yaml.safe_dump(config))
    judged = Service(migrated_db, path)
    stated = json.loads(verdict())
    llm_server.script({"content": json.dumps({**stated, "confidence": 0.7})},
                      {"content": verdict()})  # fmt: skip
    [result] = judged.post("/judge", json=rubric_body()).json()["results"]
    assert result["confidence"] == 0.7 and result["confidence_source"] == "verbalised"
    assert {c["id"]: c["met"] for c in result["criteria"]} == IRAQI
    [sent] = [r for r in llm_server.requests() if r.get("model") == "gpt-4.1-mini"]
    schema = sent["response_format"]["json_schema"]["schema"]
    assert "confidence" in schema["required"] and '"confidence"' in sent["messages"][-1]["content"]
    # asked for it and not given: a parse error, never a verdict with an invented confidence
    other = rubric_body(response="شكو يعني شنو", metadata={"item_id": "irq-3"})
    [missing] = judged.post("/judge", json=other).json()["results"]
    assert missing["status"] == "parse_error" and "'confidence'" in missing["error"]
    assert missing["confidence"] is None
