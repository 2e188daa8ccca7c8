"""Whole-value probabilities (judges/value_scoring.py) with a scorer written by hand: each
candidate reply tokenised as characters (one token per character), log-probabilities planted
on the characters after the reply's common prefix; expected numbers in the comments."""

from __future__ import annotations

import asyncio
import math

import pytest

from judges import JudgeConfigError, parse_config
from judges.value_scoring import prompt_tokens, score_values
from rubrics import parse_rubric


def scale(*dimensions: str, top: int = 10):
    return parse_rubric({"kind": "scale", "id": "s", "version": 1,
                         "scale": {"min": 0, "max": top},
                         "dimensions": [{"id": d} for d in dimensions]})  # fmt: skip


def scorer_from(planted: dict[str, float], seen: list[str] | None = None):
    """Tokens are characters; the reply's last characters after `prefix` get log P planted
    per candidate suffix (a suffix not planted gets log 1e-6)."""

    async def scorer(reply: str):
        if seen is not None:
            seen.append(reply)
        for suffix, p in planted.items():
            if reply.endswith(suffix):
                body = reply[: -len(suffix)]
                # every character of the suffix shares its probability: they sum to log p
                share = math.log(p) / len(suffix)
                return [(c, 0.0) for c in body] + [(c, share) for c in suffix]
        return [(c, 0.0) for c in reply[:-2]] + [(c, math.log(1e-6) / 2) for c in reply[-2:]]

    return scorer


def run(*args):
    return asyncio.run(score_values(*args))


def test_ten_and_one_are_told_apart_by_what_follows_them():
    reply = '{"rating": 10}'
    seen: list[str] = []
    found = run(reply, scale("q"), "rating_json", {"q": 10.0},
                scorer_from({"10}": 0.6, "1}": 0.3, "9}": 0.05}, seen))  # fmt: skip
    assert seen[0] == '{"rating": 0}' and len(seen) == 11  # one call per allowed value
    # mass .95 + 8 values at 1e-6
    assert found.rating.probs["10"] == pytest.approx(0.6, abs=1e-6)
    assert found.rating.probs["1"] == pytest.approx(0.3, abs=1e-6)
    assert found.rating.confidence == pytest.approx(0.6 / (0.95 + 8e-6), abs=1e-5)
    # expected: (10*.6 + 1*.3 + 9*.05 + tiny) / mass
    assert found.expected == pytest.approx((6 + 0.3 + 0.45) / 0.95, abs=1e-3)
    assert "prompt_logprobs" in found.method and found.unavailable is None


def test_dimensions_are_scored_in_order_each_given_the_earlier_ones():
    reply = '{"a_score": 7, "b_score": 3}'
    seen: list[str] = []
    found = run(reply, scale("a", "b"), "scores_json", {"a": 7.0, "b": 3.0},
                scorer_from({"7,": 0.5, "6,": 0.25, "3}": 0.8, "4}": 0.2}, seen))  # fmt: skip
    # b is scored after the judge's own a = 7
    assert '{"a_score": 7, "b_score": 3}' in seen and '{"a_score": 7, "b_score": 0}' in seen
    # renormalised over the allowed values: a .5 / .75, b .8 / 1 (the others near 0)
    assert found.dimensions["a"].confidence == pytest.approx(2 / 3, abs=1e-4)
    assert found.dimensions["b"].confidence == pytest.approx(0.8, abs=1e-4)
    assert found.confidence == pytest.approx(2 / 3 * 0.8, abs=1e-4)  # the chain rule
    assert found.rating is None


def test_a_value_the_server_did_not_score_leaves_no_distribution():
    async def failing(reply: str):
        return None

    found = run('{"rating": 4}', scale("q"), "rating_json", {"q": 4.0}, failing)
    assert found.confidence is None and "did not score every value" in found.unavailable
    elsewhere = run('{"rating": 4}', scale("q"), "rating_json", {"q": 5.0},
                    scorer_from({}))  # fmt: skip
    assert "cannot be found" in elsewhere.unavailable


def test_vllm_prompt_logprobs_are_read_and_broken_ones_refused():
    payload = {"prompt_logprobs": [None, {"12": {"logprob": -0.5, "rank": 1}},
                                   {"33": {"logprob": -1.25, "rank": 2}}]}  # fmt: skip
    assert prompt_tokens(payload) == [("12", -0.5), ("33", -1.25)]
    broken = {"prompt_logprobs": [None, {"12": {"logprob": float("nan")}}]}
    assert prompt_tokens(broken) is None and prompt_tokens({"choices": []}) is None


def test_only_vllm_routes_may_score_values():
    entry = {"model_name": "j", "litellm_params": {"model": "openai/gpt-4.1"},
             "confidence": {"score_values": True}}  # fmt: skip
    with pytest.raises(JudgeConfigError, match="only vLLM"):
        parse_config({"model_list": [entry]})
    sampling = {**entry, "litellm_params": {"model": "hosted_vllm/m"},
                "confidence": {"source": "sampling", "score_values": True}}  # fmt: skip
    with pytest.raises(JudgeConfigError, match="token confidence only"):
        parse_config({"model_list": [sampling]})


def test_the_dry_run_counts_the_scoring_calls():
    from judges import GradeRequest
    from judges.grading import PlannedGrade
    from judges.templates import load_template
    from service.regrading.local import calls_per_verdict

    [entry] = parse_config({"model_list": [{
        "model_name": "j", "litellm_params": {"model": "hosted_vllm/m"},
        "confidence": {"score_values": True}}]}).model_list  # fmt: skip
    rubric = scale("a", "b")  # two dimensions of 0-10
    request = GradeRequest(rubric=rubric, response="x", candidate_model="m")
    plan = PlannedGrade(request, load_template("neutral-scale@1"), None, "h", None)
    assert calls_per_verdict(entry, plan) == 1 + 2 * 11
