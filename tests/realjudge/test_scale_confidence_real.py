"""A user's own one-dimension 1–5 rubric, graded by a real judge with token confidence
(issue 38): vLLM serving SmolLM2-135M-Instruct, the neutral template (`scores_json`, one
`<dimension>_score` per dimension), json_schema structured output and 10 alternatives per
token, through `POST /judge` of the service; no test double in the path.

SmolLM2-135M is a weak judge: nothing here asserts that its scores are right. What must hold
is that the score's distribution is read at its value token as a rating's is, and stored with
the judgment: probabilities the server gave (summing to at most 1) over the scale's five
values, the expected score, and the verdict's confidence; a reply that is not a verdict has
neither, with its error.
"""

from __future__ import annotations

import json

import pytest

from service.cli.demo import SAMPLE
from tests.realjudge.conftest import real_judge_service

pytestmark = pytest.mark.timeout(3600)
RUBRIC = {
    "kind": "scale",
    "id": "explanation-faithfulness",
    "scale": {"min": 1, "max": 5},
    "dimensions": [{"id": "faithfulness", "anchors": {
        "5": "Says what the reference says, in other words",
        "3": "Part of the meaning, with mistakes",
        "1": "Wrong or unrelated"}}],
}  # fmt: skip
VALUES = {str(v) for v in range(1, 6)}


def test_a_one_dimension_scale_is_graded_with_its_distribution_and_confidence(
    local_judge_url, tmp_path
):
    service, _, _ = real_judge_service(tmp_path, local_judge_url)
    assert service.post("/rubrics", json=RUBRIC).status_code == 201
    items = [json.loads(line) for line in (SAMPLE / "explanations.jsonl").read_text().splitlines()]
    read = []
    for item in items[:4]:
        answer = service.post("/judge", json={
            "kind": "explanation", "rubric_id": RUBRIC["id"], "prompt": item["prompt"],
            "reference": item["reference"], "response": item["response"],
            "candidate_model": item["candidate_model"], "judges": ["smol"]})  # fmt: skip
        assert answer.status_code in (200, 502), answer.text
        [result] = answer.json()["results"]
        assert result["template"] == "neutral-scale@1"
        stored = service.get(f"/judgments/{result['id']}").json()
        if result["status"] != "ok":  # a reply that is no verdict: an error, no confidence
            assert result["score"] is None and stored["error"]
            continue
        probabilities = stored["probabilities"]
        assert probabilities == result["probabilities"]
        dist = probabilities["dimensions"]["faithfulness"]
        assert probabilities["rating"] == dist  # one dimension: read like a rating
        assert set(dist["probs"]) == VALUES and dist["chosen"] == str(int(result["score"]))
        assert 0 < dist["mass"] <= 1 + 1e-6
        assert sum(dist["probs"].values()) == pytest.approx(dist["mass"], abs=1e-5)
        assert dist["confidence"] == pytest.approx(dist["probs"][dist["chosen"]] / dist["mass"],
                                                   abs=1e-5)  # fmt: skip
        assert probabilities["confidence"] == dist["confidence"]
        # the expected score is the distribution's own mean, worked out here from its numbers
        mean = sum(int(v) * p for v, p in dist["probs"].items()) / dist["mass"]
        assert probabilities["expected"] == pytest.approx(mean, abs=1e-4)
        assert probabilities["unavailable"] is None
        read.append(probabilities["confidence"])
    assert read, "no reply of the real judge was a verdict"
    print(f"\nreal judge, one-dimension scale: confidences {read}")


def test_a_zero_to_ten_scale_gets_whole_value_probabilities_from_vllm(local_judge_url, tmp_path):
    """0–10: "1" begins "10", so no token's alternatives give the distribution; with
    `score_values` vLLM scores each of the 11 values as a whole (prompt_logprobs)."""
    service, _, _ = real_judge_service(tmp_path, local_judge_url,
                                       confidence={"score_values": True})  # fmt: skip
    rubric = {**RUBRIC, "id": "faithfulness-ten", "scale": {"min": 0, "max": 10}}
    assert service.post("/rubrics", json=rubric).status_code == 201
    item = json.loads((SAMPLE / "explanations.jsonl").read_text().splitlines()[0])
    answer = service.post("/judge", json={
        "rubric_id": "faithfulness-ten", "kind": "explanation", "prompt": item["prompt"],
        "reference": item["reference"], "response": item["response"],
        "candidate_model": item["candidate_model"], "judges": ["smol"]})  # fmt: skip
    assert answer.status_code in (200, 502), answer.text
    [result] = answer.json()["results"]
    if result["status"] != "ok":
        pytest.fail(f"the real judge gave no verdict to score: {result['error']}")
    probabilities = service.get(f"/judgments/{result['id']}").json()["probabilities"]
    assert probabilities["unavailable"] is None, probabilities
    dist = probabilities["rating"]
    assert set(dist["probs"]) == {str(v) for v in range(11)}
    assert dist["chosen"] == str(int(result["score"])) and 0 < dist["mass"] <= 1 + 1e-6
    assert probabilities["confidence"] == dist["confidence"] == result["confidence"]
    assert result["confidence_source"] == "token"
    mean = sum(int(v) * p for v, p in dist["probs"].items()) / dist["mass"]
    assert probabilities["expected"] == pytest.approx(mean, abs=1e-4)
    assert "prompt_logprobs" in probabilities["method"]
    print(f"\nreal judge, 0-10 scale: {dist}")
