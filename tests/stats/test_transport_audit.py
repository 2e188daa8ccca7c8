"""The transportability audit (calibration/transport.py) with known truth: a slice of fresh
labels of trusted verdicts whose true disagreement is exactly α (the guarantee holds at its
edge) fails the audit in at most `level` of repetitions; a judge that drifted to 3α fails
it most of the time."""

from __future__ import annotations

import numpy as np

from calibration.transport import audit
from tests.stats.conftest import Reps, check_rate

ALPHA, LEVEL = 0.1, 0.05


def alarms(true_rate: float, n: int, reps: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    agree = rng.uniform(size=(reps, n)) >= true_rate
    return sum(not audit(row, ALPHA, LEVEL).passed for row in agree)


def test_a_guarantee_at_its_edge_fails_the_audit_at_most_at_the_level():
    reps = Reps(fast=2000, long=20000).n
    for n in (10, 30, 100):
        failed = alarms(ALPHA, n, reps, seed=n)
        check_rate("transport audit: false alarm", failed, reps, LEVEL, "at_most",
                   f"true disagreement = α = {ALPHA}, n = {n}")  # fmt: skip


def test_a_drifted_judge_fails_the_audit():
    reps = Reps(fast=1000, long=10000).n
    failed = alarms(3 * ALPHA, 50, reps, seed=7)
    check_rate("transport audit: drift caught", failed, reps, 0.9, "at_least",
               f"true disagreement 3α = {3 * ALPHA:g}, n = 50")  # fmt: skip


def test_the_audit_states_its_numbers():
    result = audit(np.array([True] * 18 + [False] * 2), ALPHA, LEVEL)
    # 2 of 20 disagree: p = P(Bin(20, 0.1) >= 2) = 1 - 0.9^20 - 20 * 0.1 * 0.9^19
    assert abs(result.p_value - (1 - 0.9**20 - 20 * 0.1 * 0.9**19)) < 1e-12
    assert (result.n, result.disagreements, result.passed) == (20, 2, True)
    assert audit(np.array([], dtype=bool), ALPHA).passed is None
