"""A calibrated jury (calibration/jury.py) in the report and at request time: weights fitted
on the fit third only, a strong judge weighed above a coin-flipping one, the pooled verdict
and confidence worked by hand, the jury's own threshold row, and POST /judge's decision."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calibration.jury import JuryFit, fit, in_fit_fold, verdicts
from calibration.selective_report import SelectiveOptions, selective_section
from judges.trust import Calibration, TrustDecider, TrustPolicy
from tests.unit.test_trust_decisions import calibration, grades, result


def test_pooled_verdict_and_confidence_by_hand():
    jury = JuryFit(members=["a", "b"], classes=[1.0, 2.0, 3.0], weights={"a": 2.0, "b": 1.0},
                   confidence_weights={"a": 0.0, "b": 1.0}, n_fit=30)  # fmt: skip
    votes = np.array([[1.0, 2.0], [3.0, 3.0], [np.nan, np.nan]])
    conf = np.array([[0.9, 0.5], [np.nan, 1.0], [np.nan, np.nan]])
    verdict, confidence = verdicts(jury, votes, conf)
    # item 0: class 1 scores 2, class 2 scores 1 + 0.5, class 3 scores 0
    e = [math.exp(2), math.exp(1.5), 1.0]
    assert verdict[0] == 1.0 and confidence[0] == pytest.approx(e[0] / sum(e))
    # item 1: both vote 3: 2 + (1 + 1.0) = 4 against 0, 0
    assert verdict[1] == 3.0 and confidence[1] == pytest.approx(math.exp(4) / (math.exp(4) + 2))
    assert math.isnan(verdict[2]) and math.isnan(confidence[2])


def test_the_fit_weighs_a_good_judge_above_a_coin_flip():
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 400).astype(float)
    good = np.where(rng.random(400) < 0.85, truth, rng.integers(1, 6, 400))
    noise = rng.integers(1, 6, 400).astype(float)
    found = fit(["good", "noise"], np.c_[good, noise], np.full((400, 2), np.nan),
                [{t} for t in truth], [1.0, 2.0, 3.0, 4.0, 5.0])  # fmt: skip
    assert found.weights["good"] > 1.0 > found.weights["noise"] >= 0
    assert found.n_fit == 400


def test_the_report_fits_on_a_third_and_certifies_on_the_rest():
    rng = np.random.default_rng(8)
    n = 300
    truth = rng.integers(1, 6, n).astype(float)
    a = [(t if rng.random() < 0.9 else float(rng.integers(1, 6)), 0.9) for t in truth]
    b = [(t if rng.random() < 0.7 else float(rng.integers(1, 6)), 0.6) for t in truth]
    table = grades({"a": a, "b": b}, list(truth))
    options = SelectiveOptions(juries=[["a", "b"]], alpha=0.2, delta=0.1)
    section = selective_section(table, "ordinal", 4, "mean", [], options)
    [row] = [r for r in section.rows if r.evaluator == "jury:a+b"]
    fit_items = sum(in_fit_fold(item) for item in table.items)
    assert row.jury.n_fit == fit_items and 60 < fit_items < 140
    assert row.result.n_calibration == n - fit_items  # certified on the others only
    assert row.jury.weights["a"] > row.jury.weights["b"]
    assert "jury:a+b" in {s.evaluator for s in section.separation}


def test_juries_are_for_labels_and_ratings_with_their_own_confidences():
    table = grades({"a": [(4, 0.9)], "b": [(4, 0.9)]}, [4])
    with pytest.raises(ValueError, match="not interval scores"):
        selective_section(table, "interval", 4, "mean", [], SelectiveOptions(juries=[["a", "b"]]))
    with pytest.raises(ValueError, match="token confidence"):
        selective_section(table, "ordinal", 4, "mean", [],
                          SelectiveOptions(juries=[["a", "b"]], confidence="panel"))  # fmt: skip
    small = selective_section(table, "ordinal", 4, "mean", [], SelectiveOptions(juries=[["a", "b"]]))
    assert not [r for r in small.rows if r.evaluator.startswith("jury:")]
    assert any("fewer than 20" in note for note in small.notes)


def jury_calibration(threshold: float) -> Calibration:
    base = calibration("jury:a+b", threshold, judges=("a", "b"))
    jury = JuryFit(members=["a", "b"], classes=[3.0, 4.0], weights={"a": 2.0, "b": 1.0},
                   confidence_weights={"a": 0.0, "b": 0.0}, n_fit=30)  # fmt: skip
    return base.model_copy(update={"binding": base.binding.model_copy(update={"jury": jury})})


def test_at_request_time_the_jury_verdict_stands_when_its_confidence_passes():
    policy = TrustPolicy(alpha=0.1, delta=0.1, cascade=["jury:a+b"], audit_rate=0)
    results = [result("a", score=4.0), result("b", score=4.0)]
    # both vote 4: score 3 against 0 on two classes: confidence e^3 / (e^3 + 1) = 0.9526
    decided = TrustDecider(policy, "overall", {"jury:a+b": jury_calibration(0.95)},
                           ["a", "b"]).outcome(results, 0.5)  # fmt: skip
    assert decided.status == "trusted" and decided.judge == "jury:a+b" and decided.score == 4.0
    assert decided.guarantee.evaluator == "jury:a+b"
    split = [result("a", score=4.0), result("b", score=3.0)]  # e^2 / (e^2 + e) = 0.731
    escalated = TrustDecider(policy, "overall", {"jury:a+b": jury_calibration(0.95)},
                             ["a", "b"]).outcome(split, 0.5)  # fmt: skip
    assert escalated.status == "escalated" and escalated.judges[0].status == "abstained"
    assert escalated.judges[0].confidence == pytest.approx(math.exp(2) / (math.exp(2) + math.e),
                                                           abs=1e-6)  # fmt: skip
    moved = [result("a", score=4.0, template_hash="sha256:edited"), result("b", score=4.0)]
    stale = TrustDecider(policy, "overall", {"jury:a+b": jury_calibration(0.5)},
                         ["a", "b"]).outcome(moved, 0.5)  # fmt: skip
    assert stale.status == "escalated" and "prompt template changed" in stale.reason


def test_a_jury_stage_after_a_cheap_judge_decides_only_where_the_judge_abstains():
    policy = TrustPolicy(alpha=0.1, delta=0.1, cascade=["cheap", "jury:a+b"], audit_rate=0)
    calibrations = {"cheap>jury:a+b": jury_calibration(0.95)}
    stages = calibrations["cheap>jury:a+b"]
    stages.binding.stages.insert(0, calibration().binding.stages[0])  # cheap's version
    decider = TrustDecider(policy, "overall", calibrations, ["cheap", "a", "b"])
    assert decider.problem is None
    sure = result("cheap", score=4.0, confidence=0.99)
    assert decider.stop(sure)  # the cheap stage stands: the jury is never called
    unsure = [result("cheap", score=3.0, confidence=0.5), result("a", score=4.0),
              result("b", score=4.0)]  # fmt: skip
    decider = TrustDecider(policy, "overall", calibrations, ["cheap", "a", "b"])
    assert [decider.stop(r) for r in unsure] == [False, False, True]  # a jury waits for b
    outcome = decider.outcome(unsure, 0.5)
    assert outcome.status == "trusted" and outcome.judge == "jury:a+b" and outcome.score == 4.0
    assert [t.judge for t in outcome.judges] == ["cheap", "jury:a+b"]
    with pytest.raises(ValueError, match="cascade"):
        TrustPolicy(alpha=0.1, delta=0.1, cascade=["jury:a+b"], confidence="panel")


def test_a_jury_invents_no_verdict_from_votes_that_do_not_count():
    policy = TrustPolicy(alpha=0.1, delta=0.1, cascade=["jury:a+b"], audit_rate=0)
    # both say 1, which is none of the jury's classes (3, 4): the softmax would be uniform
    outside = TrustDecider(policy, "overall", {"jury:a+b": jury_calibration(0.5)},
                           ["a", "b"]).outcome([result("a", score=1.0), result("b", score=1.0)],
                                               0.5)  # fmt: skip
    assert outside.status == "escalated" and outside.judges[0].status == "no_verdict"
    # one judge of the jury failed: the calibrated jury decides with all its judges
    failed = TrustDecider(policy, "overall", {"jury:a+b": jury_calibration(0.5)},
                          ["a", "b"]).outcome([result("a", score=4.0),
                                               result("b", status="timeout")], 0.5)  # fmt: skip
    assert failed.status == "escalated" and "gave no verdict" in failed.judges[0].reason
    verdict, confidence = verdicts(jury_calibration(0.5).binding.jury,
                                   np.array([[4.0, np.nan]]), np.array([[0.9, np.nan]]))
    assert math.isnan(verdict[0]) and math.isnan(confidence[0])  # fmt: skip


def test_sampling_refuses_a_fixed_seed():
    from judges import JudgeConfigError, parse_config

    entry = {"model_name": "j", "litellm_params": {"model": "openai/gpt-4.1", "seed": 7},
             "confidence": {"source": "sampling"}}  # fmt: skip
    with pytest.raises(JudgeConfigError, match="seed would make them one answer repeated"):
        parse_config({"model_list": [entry]})

