"""A calibrated jury with known truth: the request-time guarantee holds for it (the true
disagreement of its trusted verdicts exceeds α in at most δ of repetitions), and the coverage
it reaches against its best judge's own token confidence on the same items.

Three judges rate items 1–5 whose SME label is uniform. Item difficulty h ~ U(0, 1); judge j
is right with probability a_j·(1 − h/2) (a = 0.9, 0.75, 0.55: strong, fair, weak), else says
a uniformly random other value; its token confidence is that probability plus N(0, 0.1)
noise, clipped to [0.2, 1] (informative but not calibrated). A repetition labels n items: the
jury's weights are fitted on their fit third (calibration/jury.py), its threshold certified
on the rest (calibration/selective.py, α = δ = 0.1); the truth is measured with those weights
on a fixed population of 40,000 items.
"""

from __future__ import annotations

import functools

import numpy as np

from calibration.jury import fit, in_fit_fold, verdicts
from calibration.selective import calibrate_threshold
from tests.stats.conftest import Reps, check_rate, record

ALPHA, DELTA = 0.1, 0.1
ACCURACY = np.array([0.9, 0.75, 0.55])
CLASSES = [1.0, 2.0, 3.0, 4.0, 5.0]
MEMBERS = ["strong", "fair", "weak"]


def draw(rng, n: int):
    truth = rng.integers(1, 6, n).astype(float)
    right_p = ACCURACY[None, :] * (1 - rng.uniform(size=(n, 1)) / 2)
    right = rng.uniform(size=(n, 3)) < right_p
    other = (truth[:, None] - 1 + rng.integers(1, 5, (n, 3))) % 5 + 1  # another value
    votes = np.where(right, truth[:, None], other)
    confidence = np.clip(right_p + rng.normal(0, 0.1, (n, 3)), 0.2, 1.0)
    return votes, confidence, truth


@functools.cache
def population():
    return draw(np.random.default_rng(99), 40_000)


def risk_and_coverage(confidence, agree, threshold):
    if threshold is None:
        return 0.0, 0.0
    trusted = confidence >= threshold
    return (float(1 - agree[trusted].mean()) if trusted.any() else 0.0), float(trusted.mean())


def run(n: int, reps: int, seed: int):
    rng = np.random.default_rng(seed)
    pop_votes, pop_conf, pop_truth = population()
    failures, jury_cover, best_cover = 0, [], []
    for rep in range(reps):
        votes, conf, truth = draw(rng, n)
        fold = np.array([in_fit_fold(f"r{rep}-i{i}") for i in range(n)])
        jury = fit(MEMBERS, votes[fold], conf[fold], [{t} for t in truth[fold]], CLASSES)
        verdict, jury_conf = verdicts(jury, votes, conf)
        found = calibrate_threshold(jury_conf[~fold], (verdict == truth)[~fold].astype(float),
                                    ALPHA, DELTA)  # fmt: skip
        pop_verdict, pop_jury_conf = verdicts(jury, pop_votes, pop_conf)
        risk, covered = risk_and_coverage(pop_jury_conf, pop_verdict == pop_truth,
                                          found.threshold)  # fmt: skip
        failures += risk > ALPHA
        jury_cover.append(covered)
        # the strong judge alone, its token confidence, certified on all n labels
        alone = calibrate_threshold(conf[:, 0], (votes[:, 0] == truth).astype(float), ALPHA, DELTA)
        best_cover.append(risk_and_coverage(pop_conf[:, 0], pop_votes[:, 0] == pop_truth,
                                            alone.threshold)[1])  # fmt: skip
    return failures, float(np.mean(jury_cover)), float(np.mean(best_cover))


def test_the_guarantee_holds_for_a_jury_and_its_coverage_against_its_best_judge():
    reps = Reps(fast=60, long=1000).n
    for n in (300, 1000):
        failures, jury, best = run(n, reps, seed=n)
        setting = f"3 judges (accuracy .9/.75/.55), n={n} labels"
        check_rate("selective: guarantee fails", failures, reps, DELTA, "at_most",
                   f"jury, {setting}")  # fmt: skip
        record("selective: coverage", jury, f"jury, {setting}")
        record("selective: coverage", best, f"strong judge alone (token), {setting}")
