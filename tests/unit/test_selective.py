"""The selective-judging threshold on hand-built calibration sets (values computed by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.selective import (
    SPLIT_FROM,
    Chains,
    agreement_exact,
    agreement_within,
    calibrate_threshold,
    chain_plan,
    deciding_stage,
    disagreement_upper_bound,
    min_items,
)

FOUR_CHAINS = Chains((36, 72, 144, 288), 0.025)  # qadi's only procedure before issue 41


def test_min_items_is_the_smallest_perfect_record_that_passes():
    # 0.9^21 = 0.109 > 0.1, 0.9^22 = 0.098 ≤ 0.1
    assert min_items(0.1, 0.1) == 22
    # 0.8^13 = 0.055 > 0.05, 0.8^14 = 0.044 ≤ 0.05
    assert min_items(0.2, 0.05) == 14


def test_clopper_pearson_bound_of_a_perfect_record():
    # (1 − r)^22 = 0.1  →  r = 1 − 0.1^(1/22) = 0.09937
    assert disagreement_upper_bound(0, 22, 0.1) == pytest.approx(0.09937, abs=1e-5)
    assert disagreement_upper_bound(5, 5, 0.1) == 1.0


def test_a_small_calibration_set_runs_one_chain_at_the_full_delta():
    # one chain at δ = 0.1: 0.9^21 = 0.109 > 0.1, 0.9^22 = 0.098 ≤ 0.1
    assert SPLIT_FROM == 500
    assert chain_plan(499, 0.1, 0.1) == Chains((22,), 0.1)
    result = calibrate_threshold(np.full(10, 0.99), np.ones(10), alpha=0.1, delta=0.1)
    assert result.min_items == 22
    assert "1 chain at the full δ, started at 22 trusted items" in result.method


def test_a_large_calibration_set_runs_four_chains_at_their_share_of_delta():
    # four chains at δ/4 = 0.025: 0.9^35 = 0.0250 > 0.025, 0.9^36 = 0.0225 ≤ 0.025
    assert chain_plan(500, 0.1, 0.1) == FOUR_CHAINS
    # a larger min_items moves every start, not the level
    assert chain_plan(500, 0.1, 0.1, requested_min_items=50) == Chains((50, 100, 200, 400), 0.025)
    assert chain_plan(100, 0.1, 0.1, requested_min_items=50) == Chains((50,), 0.1)
    rng = np.random.default_rng(0)
    result = calibrate_threshold(rng.uniform(size=600), np.ones(600), alpha=0.1, delta=0.1)
    assert result.min_items == 36
    assert "4 chains at δ/4 each (Bonferroni), started at 36, 72, 144, 288" in result.method


def test_a_clean_confident_band_is_trusted_and_a_noisy_one_is_not():
    # 40 verdicts at confidence 0.95, all agreeing; 40 at 0.5, half disagreeing.
    # One chain (≥ 22 items, δ = 0.1): any t in (0.5, 0.95]: n = 40, k = 0,
    # p = 0.9^40 = 0.015 ≤ 0.1; at t = 0.5: n = 80, k = 20, p = P(Bin(80, 0.1) ≤ 20) ≈ 1 → stops.
    confidence = np.r_[np.full(40, 0.95), np.full(40, 0.5)]
    agree = np.r_[np.ones(40), np.tile([1.0, 0.0], 20)]
    result = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1)
    assert result.threshold == pytest.approx(0.501)
    assert (result.n_trusted, result.coverage, result.agreement) == (40, 0.5, 1.0)
    # Clopper-Pearson at 1 − δ with no disagreement: 1 − 0.1^(1/40)
    assert result.agreement_lower_bound == pytest.approx(0.1 ** (1 / 40), abs=1e-6)


def test_one_chain_trusts_a_small_clean_band_the_four_chains_cannot_test():
    # 30 verdicts at 0.95, all agreeing, above 370 at 0.5 of which half disagree.
    # One chain (≥ 22, δ = 0.1): t in (0.5, 0.95]: n = 30, k = 0, p = 0.9^30 = 0.042 ≤ 0.1.
    # Four chains (≥ 36, δ/4): 30 < 36, so the first testable t is 0.5 (n = 400, k = 185),
    # which fails: every chain stops at once and the judge abstains.
    confidence = np.r_[np.full(30, 0.95), np.full(370, 0.5)]
    agree = np.r_[np.ones(30), np.tile([1.0, 0.0], 185)]
    chosen = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1)
    old = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1, chains=FOUR_CHAINS)
    assert chosen.threshold == pytest.approx(0.501) and chosen.n_trusted == 30
    assert old.threshold is None and old.n_trusted == 0


def test_at_400_items_of_the_planted_model_the_chosen_procedure_trusts_more():
    """Issue 41, point 9: confidence c ~ U(0.2, 1), right with probability c, 400 items."""
    rng = np.random.default_rng(9)
    confidence = rng.uniform(0.2, 1.0, 400)
    agree = (rng.uniform(size=400) < confidence).astype(float)
    chosen = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1)
    old = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1, chains=FOUR_CHAINS)
    assert old.threshold is not None and chosen.threshold is not None
    assert chosen.n_trusted > old.n_trusted
    assert chosen.threshold < old.threshold


def test_when_no_threshold_passes_the_judge_abstains_on_everything():
    """The reference code would return its strictest candidate here; qadi trusts nothing."""
    confidence = np.linspace(0.5, 1.0, 100)
    agree = np.tile([1.0, 1.0, 0.0], 34)[:100]  # one in three disagrees at every confidence
    result = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1)
    assert result.threshold is None
    assert result.n_trusted == 0 and result.coverage == 0.0
    assert "no threshold passes" in (result.reason or "")


def test_too_few_calibration_items_abstain_with_the_reason():
    result = calibrate_threshold(np.full(10, 0.99), np.ones(10), alpha=0.1, delta=0.1)
    assert result.threshold is None and result.tested == 0
    assert "10 calibration item(s)" in (result.reason or "") and "≥ 22" in (result.reason or "")


def test_a_missing_confidence_is_never_trusted():
    confidence = np.r_[np.full(40, 0.9), np.full(5, np.nan)]
    agree = np.ones(45)
    result = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1)
    assert result.n_trusted == 40 and result.n_calibration == 45


def test_the_cascade_gives_each_item_to_the_first_stage_that_reaches_the_threshold():
    confidence = np.array([[0.9, 0.2], [0.3, 0.95], [0.1, 0.1], [np.nan, 0.8]])
    assert deciding_stage(confidence, 0.8).tolist() == [0, 1, -1, 1]
    assert deciding_stage(confidence, 0.25).tolist() == [0, 0, -1, 1]


def test_a_cascade_trusts_the_cheap_stage_where_it_is_sure_and_escalates_the_rest():
    # 40 items the cheap judge is sure of and right about; 40 it is unsure of (0.4) and
    # wrong on half, which the strong judge (0.9) gets right; 20 nobody is sure of.
    cheap = np.r_[np.full(40, 0.95), np.full(40, 0.4), np.full(20, 0.3)]
    strong = np.r_[np.full(40, 0.6), np.full(40, 0.9), np.full(20, 0.3)]
    agree_cheap = np.r_[np.ones(40), np.tile([1.0, 0.0], 20), np.zeros(20)]
    agree_strong = np.r_[np.ones(40), np.ones(40), np.zeros(20)]
    result = calibrate_threshold(
        np.c_[cheap, strong], np.c_[agree_cheap, agree_strong], 0.1, 0.1, ["cheap", "strong"]
    )
    # t ∈ (0.4, 0.9]: cheap decides its 40 sure items, strong the 40 the cheap one passes on,
    # all agree: n = 80, k = 0. At t = 0.4 the cheap judge keeps its 40 unsure items (half
    # wrong): n = 80, k = 20, p ≈ 1, the walk stops. λ̂ = 0.401.
    assert result.threshold == pytest.approx(0.401)
    assert result.stages == {"cheap": 40, "strong": 40}
    assert result.coverage == 0.8 and result.agreement == 1.0


def test_non_monotone_confidence_is_reported():
    rng = np.random.default_rng(3)
    confidence = rng.uniform(0, 1, 2000)
    # disagreement 5% below 0.6, 40% in [0.6, 0.8), 5% above: a bump in the middle
    p_disagree = np.where((confidence >= 0.6) & (confidence < 0.8), 0.4, 0.05)
    agree = (rng.uniform(size=2000) >= p_disagree).astype(float)
    result = calibrate_threshold(confidence, agree, alpha=0.1, delta=0.1, stage_names=["j"])
    assert result.monotonicity["j"].monotone is False
    assert "rises with confidence" in (result.monotonicity["j"].note or "")


def test_agreement_by_majority_and_by_tolerance():
    humans = np.array([[4, 4, 5], [3, 5, np.nan], [np.nan, np.nan, np.nan]], dtype=float)
    verdict = np.array([4, 5, 2], dtype=float)
    # item 2: modes 3 and 5 tie, the verdict 5 is one of them
    assert np.array_equal(agreement_exact(verdict, humans)[:2], [1.0, 1.0])
    assert np.isnan(agreement_exact(verdict, humans)[2])
    within = agreement_within(np.array([70.0, 80.0]), np.array([75.0, 90.0]), tolerance=5)
    assert within.tolist() == [1.0, 0.0]
