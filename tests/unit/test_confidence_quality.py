"""How well a confidence separates the verdicts the SMEs agree with (calibration/
confidence_quality.py): AUROC against scikit-learn's, DeLong's variance and ECE worked out
by hand in the comments, and every case with no number says why."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from calibration.confidence_quality import auroc, auroc_interval, separation


def test_auroc_is_scikit_learns_with_ties():
    rng = np.random.default_rng(3)
    confidence = rng.choice([0.2, 0.4, 0.6, 0.8, 1.0], size=60)  # many ties
    agree = rng.random(60) < confidence
    assert auroc(confidence, agree) == pytest.approx(roc_auc_score(agree, confidence))


def test_newcombes_method_5_interval_worked_by_hand():
    confidence = np.array([0.9, 0.8, 0.7, 0.85, 0.6])
    agree = np.array([True, True, False, False, False])
    # pairs (agreed, disputed): .9 beats all three, .8 beats .7 and .6: AUROC 5/6
    assert auroc(confidence, agree) == pytest.approx(5 / 6)
    m, n, z = 2, 3, stats.norm.ppf(0.975)
    half = (m + n) / 2

    def hanley_mcneil(t):  # Newcombe (2006) eq. for Method 5, N* = (m + n) / 2
        q = 1 + (half - 1) * (1 - t) / (2 - t) + (half - 1) * t / (1 + t)
        return t * (1 - t) / (m * n) * q

    low, high = auroc_interval(confidence, agree, 0.95)
    for end in (low, high):  # the ends solve (A - θ)² = z² V(θ)
        assert (5 / 6 - end) ** 2 == pytest.approx(z * z * hanley_mcneil(end), abs=1e-6)
    assert 0 < low < 5 / 6 < high < 1
    # an AUROC of 1 still has an interval: [low, 1]
    perfect_low, perfect_high = auroc_interval(np.array([0.9, 0.8, 0.3]),
                                               np.array([True, True, False]), 0.95)  # fmt: skip
    assert 0 < perfect_low < 1 and perfect_high == 1


def test_ece_and_reliability_bins_worked_by_hand():
    confidence = np.array([0.95, 0.91, 0.55, 0.52, 0.58])
    agree = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    found = separation("j", "token", confidence, agree, 0.95)
    # bin [.9, 1]: mean confidence .93, agreement .5; bin [.5, .6): .55, 2/3
    assert [(b.low, b.n) for b in found.bins] == [(0.5, 3), (0.9, 2)]
    assert found.bins[1].mean_confidence == pytest.approx(0.93)
    expected = (3 * abs(0.55 - 2 / 3) + 2 * abs(0.93 - 0.5)) / 5
    assert found.ece == pytest.approx(expected, abs=1e-6)
    assert found.n == 5 and found.n_agree == 3 and found.source == "token"
    assert 0 < found.ece_calibrated_reference < 1


def test_cases_without_a_number_say_why():
    nothing = separation("j", "token", np.array([np.nan, np.nan]), np.array([1.0, 0.0]), 0.95)
    assert nothing.n == 0 and nothing.auroc is None and "no labelled item" in nothing.note
    unanimous = separation("j", "token", np.array([0.9, 0.6]), np.array([1.0, 1.0]), 0.95)
    assert unanimous.auroc is None and "agreed with every verdict" in unanimous.note
    assert unanimous.ece is not None  # calibration is still measured
    # an item whose agreement is unknown (no SME label) does not count
    partial = separation("j", "token", np.array([0.9, 0.4, 0.7]), np.array([1.0, 0.0, np.nan]),
                         0.95)  # fmt: skip
    assert partial.n == 2
