"""Drift (issue 24 item 4): on two nights drawn from the same distribution at most 5% of
nights alarm; a shift of one judge in one stratum, large against its interval, is caught.

The old rule ("the new value left the old interval") alarmed on 17.6% of cells and 96.6% of
unchanged nights. Each night here: 4 judges, 300 items, 6 strata of 50 (56 cells: judge ×
{overall, 6 strata} × {MAD, signed error}), blocks computed by qadi's `block_metrics` with
the default intervals; `calibration.drift.drift` decides.
"""

from __future__ import annotations

import numpy as np

from calibration.drift import drift, drifted
from calibration.options import CalibrationOptions
from tests.stats.conftest import Reps, check_rate
from tests.stats.simulate import Judge, graded, report_of

JUDGES = {"j0": Judge(0.0, 0.8), "j1": Judge(0.3, 0.9), "j2": Judge(-0.2, 1.0), "j3": Judge(0.5, 0.7)}
OPTIONS = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0)


def night(rng, shift: float = 0.0):
    table = graded(rng, 300, JUDGES, strata=6)
    if shift:  # j0 turns lenient in stratum s2 only
        mask = table.mask("s", "s2")
        table.judge_scores[mask, 0] = np.clip(table.judge_scores[mask, 0] + shift, 1, 5)
    return report_of(table, OPTIONS, rng)


def test_unchanged_nights_alarm_at_most_five_percent_of_the_time():
    reps = Reps(fast=100, long=2000).n
    rng = np.random.default_rng(41)
    alarms = cells = 0
    for _ in range(reps):
        found = drift(night(rng), night(rng))
        alarms += drifted(found)
        cells += found["tested"]
    assert cells == reps * 56  # every cell of the night is tested
    check_rate("unchanged night raises a drift alarm", alarms, reps, 0.05, "at_most",
               "4 judges × 7 blocks × 2 metrics, 300 items")  # fmt: skip


def test_one_judge_shifted_in_one_stratum_is_caught():
    """j0's scores +1 in stratum s2 (50 items): its signed error moves ≈ 0.8, about three
    times the half-width of that stratum's 95% interval."""
    reps = Reps(fast=60, long=1000).n
    rng = np.random.default_rng(42)
    caught = ratio = 0.0
    for _ in range(reps):
        before, after = night(rng), night(rng, shift=1.0)
        found = drift(after, before)
        cell = ("j0", "s=s2", "signed_error")
        caught += any((c["judge"], c["stratum"], c["metric"]) == cell for c in found["changes"])
        old = before["judges"]["j0"]["strata"]["s=s2"]
        moved = after["judges"]["j0"]["strata"]["s=s2"]["signed_error"] - old["signed_error"]
        ratio += moved / ((old["ci"]["signed_error"][1] - old["ci"]["signed_error"][0]) / 2)
    check_rate("a one-stratum shift of one judge is caught", int(caught), reps, 0.8, "at_least",
               f"shift ≈ {ratio / reps:.1f} × the stratum's interval half-width")  # fmt: skip
