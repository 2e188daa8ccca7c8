"""Coverage of the metric intervals at small n and with few clusters (issue 24 item 9).

The rule (calibration/intervals.py): means and shares get value ± t(units − 1) × linearised
SE (ddof 1; CR1 with --cluster), the other metrics BCa up to 500 units. The percentile
bootstrap it replaces covered 0.84–0.94 at n = 10. Truth: the population value measured on
a million items drawn from the same model (tests/stats/simulate.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from calibration.blocks import block_metrics
from calibration.metrics import METRIC_UNITS
from calibration.options import CalibrationOptions
from tests.stats.conftest import Reps, check_rate
from tests.stats.simulate import Judge, graded, population

VALUES = np.arange(1.0, 6.0)
JUDGE = Judge(bias=0.3, noise=0.9)


def units(*names: str):
    return [m for m in METRIC_UNITS if m.name in ("n", *names)]


def covered(table, metrics, truth: dict[str, float], options, rng) -> dict[str, bool]:
    block = block_metrics(table, units(*metrics), "ordinal", VALUES, options, rng)["j"]
    out = {}
    for metric in metrics:
        interval = block["ci"][metric]
        out[metric] = interval is not None and interval[0] <= truth[metric] <= interval[1]
    return out


@pytest.mark.parametrize("n", [10, 20, 50])
def test_bootstrap_t_intervals_of_mad_and_signed_error_cover_at_small_n(n):
    """The default path (resamples given): bootstrap-t for means and shares up to 500 items;
    its tails need the resamples (1000 here; the default is 2000)."""
    reps = Reps(fast=300, long=4000).n
    mad, signed = population(JUDGE)
    truth = {"mad": mad, "signed_error": signed}
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=1000)
    rng = np.random.default_rng(100 + n)
    hits = {"mad": 0, "signed_error": 0}
    for _ in range(reps):
        for metric, ok in covered(graded(rng, n, {"j": JUDGE}), truth, truth, options, rng).items():
            hits[metric] += ok
    for metric, count in hits.items():
        check_rate(
            f"95% bootstrap-t interval covers the {metric}", count, reps, 0.95, "at_least",
            f"n = {n}",
        )


@pytest.mark.parametrize("n", [10, 50])
def test_t_intervals_without_resamples_cover_the_signed_error(n):
    """--bootstrap 0: value ± t(n − 1) × SE (ddof 1), the interval the drift test's SE gives."""
    reps = Reps(fast=400, long=4000).n
    truth = {"signed_error": population(JUDGE)[1]}
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0)
    rng = np.random.default_rng(150 + n)
    hits = sum(
        covered(graded(rng, n, {"j": JUDGE}), truth, truth, options, rng)["signed_error"]
        for _ in range(reps)
    )
    check_rate("95% t interval covers the signed error", hits, reps, 0.95, "at_least", f"n = {n}")


@pytest.mark.parametrize("clusters", [5, 10])
def test_cr1_t_intervals_cover_with_few_clusters(clusters):
    """Eight items per cluster sharing a judge offset N(0, 0.5): the items are not independent,
    the clusters are; CR1 with t(G − 1) degrees of freedom."""
    reps = Reps(fast=400, long=4000).n
    mad, signed = population(JUDGE, cluster_sd=0.5)
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0, cluster="c")
    rng = np.random.default_rng(200 + clusters)
    truth = {"mad": mad, "signed_error": signed}
    hits = {"mad": 0, "signed_error": 0}
    for _ in range(reps):
        table = graded(rng, 8 * clusters, {"j": JUDGE}, clusters=clusters, cluster_sd=0.5)
        for metric, ok in covered(table, truth, truth, options, rng).items():
            hits[metric] += ok
    for metric, count in hits.items():
        check_rate(
            f"95% CR1 t interval covers the {metric}", count, reps, 0.95, "at_least",
            f"{clusters} clusters of 8",
        )


def test_fewer_than_five_clusters_give_no_interval_and_say_why():
    rng = np.random.default_rng(3)
    table = graded(rng, 32, {"j": JUDGE}, clusters=4, cluster_sd=0.5)
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50, cluster="c")
    block = block_metrics(table, units("mad", "kendall_tau"), "ordinal", VALUES, options, rng)["j"]
    assert block["ci"]["mad"] is None and block["ci"]["kendall_tau"] is None
    assert block["no_interval"]["mad"].startswith("4 cluster(s), fewer than 5")
    assert block["mad"] is not None and block["units"] == 4


@pytest.mark.parametrize("n", [20, 50])
def test_bca_interval_of_kendall_tau_covers_at_small_n(n):
    """Kendall's τ-b is not a mean: BCa (jackknife acceleration) at ≤ 500 units. Truth: τ-b
    between the judge and the human mean on a million items (scipy)."""
    from scipy import stats

    reps = Reps(fast=150, long=1500).n
    big = graded(np.random.default_rng(7), 200_000, {"j": JUDGE})
    truth = {"kendall_tau": stats.kendalltau(big.judge_scores[:, 0], big.human_scores.mean(1))[0]}
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=400)
    rng = np.random.default_rng(300 + n)
    hits = 0
    for _ in range(reps):
        table = graded(rng, n, {"j": JUDGE})
        hits += covered(table, ["kendall_tau"], truth, options, rng)["kendall_tau"]
    check_rate("95% BCa interval covers Kendall τ-b", hits, reps, 0.95, "at_least", f"n = {n}")
