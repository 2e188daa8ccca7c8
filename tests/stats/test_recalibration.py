"""Automatic recalibration as labels arrive (issue 36), with known truth: what repeated looks
do to the request-time guarantee.

Labels arrive in batches; after each batch the threshold is fitted again on every label so
far (the service's scopes, service/recalibration/). Each fit is a valid fixed-sequence test
on its own labels, so each *look's* guarantee fails with probability ≤ δ however often the
service looks. What repeated looks do not keep is the chance that *some* look in the
sequence fails: that grows with the looks (it is the multiple-testing problem of peeking).
Spending δ over the looks, δ_t = 6δ/(π²t²) at the t-th fit (Σ δ_t = δ, a union bound), keeps
every look's guarantee at once at 1 − δ, for the coverage it costs — both measured here.
Anytime-valid confidence sequences (Howard et al. 2021; Waudby-Smith & Ramdas 2024) are the
published alternative that does not shrink δ_t this fast.
"""

from __future__ import annotations

import math

import numpy as np

from calibration.selective import calibrate_threshold
from tests.stats.conftest import Reps, check_rate, record
from tests.stats.test_selective import ALPHA, DELTA, calibrated_judge, population

BATCH, LOOKS = 40, 15  # 40 labels a look, 600 after the last


def spent(delta: float, look: int) -> float:
    """δ for the look-th fit (1-based) so that the fits' δ add up to at most δ."""
    return delta * 6 / (math.pi**2 * look**2)


def run(reps: int, spending: bool, seed: int) -> tuple[int, int, int, float]:
    """Failed looks, looks, repetitions with a failed look, and the mean coverage."""
    truth = population(calibrated_judge, 10)
    rng = np.random.default_rng(seed)
    failed_looks = sequences_failed = 0
    coverage = []
    for _ in range(reps):
        confidence, p_agree = calibrated_judge(rng, BATCH * LOOKS)
        agree = (rng.uniform(size=p_agree.shape) < p_agree).astype(float)
        any_failed = False
        for look in range(1, LOOKS + 1):
            n = BATCH * look
            delta = spent(DELTA, look) if spending else DELTA
            fit = calibrate_threshold(confidence[:n], agree[:n], ALPHA, delta)
            risk, covered = truth.at(fit.threshold, [0])
            failed = risk > ALPHA
            failed_looks += failed
            any_failed |= failed
            coverage.append(covered)
        sequences_failed += any_failed
    return failed_looks, reps * LOOKS, sequences_failed, float(np.mean(coverage))


def test_each_look_keeps_its_guarantee_however_often_the_service_recalibrates():
    reps = Reps(fast=60, long=1000).n
    failed, looks, sequences, coverage = run(reps, spending=False, seed=71)
    setting = f"{LOOKS} fits of 40 to 600 labels, δ each"
    check_rate("recalibration: a look's guarantee fails", failed, looks, DELTA, "at_most", setting)
    record("recalibration: some look of the sequence fails", sequences / reps, setting)
    record("recalibration: coverage", coverage, setting)


def test_spending_delta_over_the_looks_keeps_every_look_at_once():
    reps = Reps(fast=60, long=1000).n
    failed, looks, sequences, coverage = run(reps, spending=True, seed=72)
    setting = f"{LOOKS} fits, δ_t = 6δ/(π²t²)"
    check_rate("recalibration: some look of the sequence fails", sequences, reps, DELTA,
               "at_most", setting)  # fmt: skip
    record("recalibration: coverage", coverage, setting)
    assert failed / looks <= DELTA
