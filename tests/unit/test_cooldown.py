"""The judge cooldown (judges/client.py `Cooldown`): an outage rests a judge; transient faults,
even many of them early in a window, do not."""

from __future__ import annotations

import random

from judges.client import Cooldown


def rests_after(outcomes: list[bool], **options) -> int | None:
    """The call after which the judge rests (1-based), or None."""
    cooldown = Cooldown(min_fails=3, seconds=30.0, **options)
    for n, ok in enumerate(outcomes, start=1):
        cooldown.record("j", ok)
        if cooldown.resting("j") > 0:
            return n
    return None


def test_an_outage_rests_the_judge_after_its_first_failures():
    assert rests_after([False] * 5) == 3  # min_fails failures, every call of the window


def test_half_of_few_calls_failing_is_not_an_outage():
    # 3 of the first 6 calls: a half, which 20% transient faults give one time in ten;
    # P(Bin(6, 1/2) >= 3) = 42/64 is far above the test's 5%
    assert rests_after([True, False, True, False, True, False]) is None


def test_a_sustained_failure_rate_above_one_half_rests_the_judge():
    # two failures in every three calls (False, False, True, ...): after 23 calls 16 failed,
    # P(Bin(23, ½) ≥ 16) = 0.047, the first count under 5% (after 20 calls, 14: 0.058)
    pattern = [False, False, True] * 20
    assert rests_after(pattern) == 23


def test_twenty_percent_transient_faults_rarely_rest_a_judge():
    """Over 300 calls at 20% faults, a run rests the judge only when its first three calls
    all fail (0.8%): 400 runs see few rests (a binomial 1% bound: at most 10 expected ≤ 4)."""
    rested = 0
    for seed in range(400):
        rng = random.Random(seed)
        rested += rests_after([rng.random() >= 0.2 for _ in range(300)]) is not None
    assert rested <= 10, rested
