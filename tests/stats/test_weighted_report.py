"""A calibration report over labels chosen by `qadi sme queue` (issue 24, audit D2).

The queue sends labels to the strata whose intervals are widest, so the labelled items are
not a uniform sample of the judged ones; a report that averages them as if they were is
biased (measured: signed error 0.144 [−0.02, 0.31] against a true 0.485). The report now
weights its means and shares by the design (Hájek, `t_hajek`), the way `qadi estimate` does.
The population: three strata of 600 / 300 / 100 judged items with judge biases +0.8 / +0.2 /
−0.3, 30 uniform labels, then two queue rounds of 60 (tests/stats/test_estimates.py). The
truth is the signed error over all 1000 judged items of each draw: the number the report
claims to estimate.
"""

from __future__ import annotations

import numpy as np

from calibration import design
from calibration.blocks import block_metrics
from calibration.metrics import METRIC_UNITS, reference_scores
from calibration.options import CalibrationOptions
from tests.stats.conftest import Reps, check_rate, check_value
from tests.stats.test_estimates import grade_table, queue_population, run_queue

METRICS = [m for m in METRIC_UNITS if m.name in ("n", "mad", "signed_error")]
OPTIONS = CalibrationOptions(scale_min=-2, scale_max=8, level="interval", bootstrap=200)


def queued(rng, rep: int):
    y, f, labelled, attributes = queue_population(rng)
    table = grade_table(y, f, labelled, attributes)
    for round_ in range(2):
        table = run_queue(table, y, 60, seed=1000 * rep + round_)
    return table, float(np.mean(f - y))


def test_signed_error_is_weighted_by_the_queue_design():
    reps = Reps(fast=150, long=3000).n
    rng = np.random.default_rng(380)
    errors, plain_errors, hits, methods = [], [], 0, set()
    for rep in range(reps):
        table, truth = queued(rng, rep)
        ref = reference_scores(table.human_scores, "mean", table.humans)
        weights = design.table_weights(table, ref)
        block = block_metrics(table, METRICS, "interval", np.array([]), OPTIONS, rng, weights)["J"]
        plain = block_metrics(table, METRICS, "interval", np.array([]), OPTIONS, rng)["J"]
        errors.append(block["signed_error"] - truth)
        plain_errors.append(plain["signed_error"] - truth)
        low, high = block["ci"]["signed_error"]
        hits += low <= truth <= high
        methods.add(block["ci_method"]["signed_error"])
        assert block["df"]["signed_error"] <= block["units"] - 1
    setting = "strata of 600/300/100 items, 30 uniform labels + 2 queue rounds of 60"
    check_rate("95% t_hajek interval covers the judged items' signed error", hits, reps, 0.95,
               "at_least", setting)  # fmt: skip
    check_value("bias of the weighted signed error", float(np.mean(errors)), 0.03, setting)
    assert methods == {"t_hajek"}
    assert np.mean(plain_errors) < -0.2  # the unweighted value really is biased here
