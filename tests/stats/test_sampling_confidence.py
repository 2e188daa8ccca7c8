"""Request-time trust with sampling confidence, with known truth: the guarantee holds (the
true disagreement of trusted verdicts exceeds α in at most δ of repetitions), and what it
costs in coverage against token confidence on the same kind of items.

Each item has the judge's distribution over three verdicts: the right one with probability
r ~ Beta(3, 1.5), the two wrong ones sharing the rest at random. Token confidence reads that
distribution (the verdict is its most likely value, the confidence that value's probability);
sampling confidence draws k verdicts from it (judges/sampling.py: the most common, ties to the
first drawn; confidence = its share of the k). The SMEs give the right verdict with
probability 0.97 (else one of the wrong two), so an agreement probability is 0.97 for a right
verdict and 0.015 for a wrong one. Thresholds: calibration/selective.py, α = δ = 0.1.
"""

from __future__ import annotations

import numpy as np

from tests.stats.conftest import Reps, check_rate, record
from tests.stats.test_selective import DELTA, run

SME_RIGHT = 0.97


def _item_distributions(rng, n: int) -> np.ndarray:
    right = rng.beta(3, 1.5, n)
    split = rng.uniform(size=n)
    return np.c_[right, (1 - right) * split, (1 - right) * (1 - split)]


def _agreement(verdict: np.ndarray) -> np.ndarray:
    return np.where(verdict == 0, SME_RIGHT, (1 - SME_RIGHT) / 2)


def token_judge(rng, n):
    probs = _item_distributions(rng, n)
    verdict = probs.argmax(axis=1)
    return probs.max(axis=1)[:, None], _agreement(verdict)[:, None]


def sampled(k: int):
    def scenario(rng, n):
        probs = _item_distributions(rng, n)
        cumulative = probs.cumsum(axis=1)
        draws = (rng.uniform(size=(n, k, 1)) > cumulative[:, None, :2]).sum(axis=2)
        counts = np.stack([(draws == v).sum(axis=1) for v in range(3)], axis=1)
        first = np.stack([np.where((draws == v).any(axis=1), (draws == v).argmax(axis=1), k)
                          for v in range(3)], axis=1)  # fmt: skip
        verdict = _mode(counts, first)
        return (counts.max(axis=1) / k)[:, None], _agreement(verdict)[:, None]

    scenario.__name__ = f"sampled_{k}"
    return scenario


def _mode(counts: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The most common verdict of each item, a tie to the one drawn first."""
    return (counts * 1000 - first).argmax(axis=1)


SAMPLED_5, SAMPLED_10 = sampled(5), sampled(10)


def test_the_guarantee_holds_with_sampling_confidence_and_its_coverage_against_token():
    reps, n = Reps(fast=100, long=2000).n, 500
    coverage = {}
    for name, scenario in (("token", token_judge), ("sampling k=5", SAMPLED_5),
                           ("sampling k=10", SAMPLED_10)):  # fmt: skip
        failures, coverage[name], abstained, oracle = run(scenario, n, reps, [0], seed=40)
        setting = f"{name}, n={n} labels"
        check_rate("selective: guarantee fails", failures, reps, DELTA, "at_most", setting)
        record("selective: coverage", coverage[name], f"{setting}, oracle {oracle:.3f}")
    # k samples say less than the distribution itself: never more coverage than the tokens
    assert coverage["sampling k=5"] <= coverage["token"] + 0.02
    assert coverage["sampling k=5"] > 0  # yet a sampling judge is trusted on some items
