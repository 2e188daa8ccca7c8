"""The probe statistics against values worked by hand, SciPy's own permutation test, and the
trust-map marks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calibration.multiplicity import adjust
from calibration.probes import (
    CellInput,
    ProbeStatsOptions,
    mark_trust_rows,
    probe_effects,
    sign_flip_p,
)

OPTIONS = ProbeStatsOptions()


def cell(judge: str, probe: str, pairs, attributes=None) -> CellInput:
    made = CellInput(judge, probe)
    for i, (baseline, treated) in enumerate(pairs):
        made.add(baseline, treated, (attributes or [{}] * len(pairs))[i])
    return made


# six items up by one, one down, one unchanged
PAIRS = [(3, 4), (2, 3), (4, 4), (3, 4), (1, 2), (5, 4), (3, 4), (2, 3)]


def test_one_cell_by_hand():
    [block] = probe_effects([cell("j", "verbosity", PAIRS)], (1, 5), OPTIONS)
    d = np.array([1, 1, 0, 1, 1, -1, 1, 1.0])
    assert block["n"] == 8 and block["mean_change"] == pytest.approx(0.625)
    assert block["mean_change_pp"] == pytest.approx(100 * 0.625 / 4)
    # exact: 7 non-zero ±1 changes, |sum| ≥ 5 in 16 of the 128 sign patterns
    assert block["p"] == pytest.approx(16 / 128) and block["exact"]
    half = stats.t.ppf(0.975, 7) * d.std(ddof=1) / np.sqrt(8)
    assert block["ci"] == pytest.approx([0.625 - half, 0.625 + half])
    assert (block["flips_up"], block["flips_down"], block["flip_rate"]) == (6, 1, 7 / 8)
    # Clopper-Pearson by its beta quantiles
    assert block["flip_ci"] == pytest.approx(
        [stats.beta.ppf(0.025, 7, 2), stats.beta.ppf(0.975, 8, 1)]
    )
    assert block["sign_test_p"] == pytest.approx(16 / 128)  # 6 up vs 1 down, two-sided
    assert block["few_changes"] is True


@pytest.mark.parametrize("units", [[1.0, -2, 3, 1, 1, 2], [2.0, 2, 2, 2, -1, 3, 1, 1, 1, 2]])
def test_the_exact_sign_flip_p_equals_scipys_permutation_test(units):
    units = np.array(units)
    mine, exact = sign_flip_p(units, 20000, np.random.default_rng(0))
    theirs = stats.permutation_test(
        (units,), np.sum, permutation_type="samples", n_resamples=20000
    ).pvalue
    assert exact and mine == pytest.approx(theirs)


def test_a_monte_carlo_p_counts_the_observed_draw():
    units = np.ones(30)  # 2^30 patterns: drawn; none of 999 draws reaches 30 in size
    p, exact = sign_flip_p(units, 999, np.random.default_rng(1))
    assert not exact and p == pytest.approx(2 * 1 / 1000)


def test_clusters_flip_together():
    pairs = [(3, 4)] * 6
    attributes = [{"prompt": g} for g in "aabbcc"]
    options = ProbeStatsOptions(cluster="prompt")
    [block] = probe_effects([cell("j", "p", pairs, attributes)], (1, 5), options)
    assert block["clusters"] == 3 and block["p"] == pytest.approx(2 / 8)
    assert block["ci"] is not None  # no residual variance: the CR1 interval is the point
    [alone] = probe_effects([cell("j", "p", pairs, [{"prompt": "a"}] * 6)], (1, 5), options)
    assert alone["ci"] is None and "two clusters" in alone["undefined"]


def test_q_values_are_bh_over_every_cell_and_decide_moved():
    cells = [
        cell("a", "verbosity", [(2, 3)] * 12),  # p = 2/4096
        cell("a", "digits", PAIRS),  # p = 0.125
        cell("b", "verbosity", [(3, 3)] * 5),  # nothing changed: p = 1
        CellInput("b", "digits"),  # no complete pair: p undefined
    ]
    blocks = probe_effects(cells, (1, 5), OPTIONS)
    expected = adjust([2 / 4096, 0.125, 1.0, None], "bh")
    assert [b["q"] for b in blocks[:3]] == pytest.approx(expected[:3])
    assert blocks[3]["q"] is None and blocks[3]["undefined"] == "no complete pair"
    assert [b["moved"] for b in blocks] == [True, False, False, False]


def test_moved_judges_are_marked_on_the_trust_rows_of_strata_the_probe_applied_to():
    arabic = [{"language": "ar"}] * 12
    probe_report = {
        "id": "run1",
        "cells": probe_effects([cell("gpt", "verbosity", [(2, 3)] * 12, arabic)], (1, 5), OPTIONS),
    }
    report = {
        "trust": {
            "rows": [
                {"stratum": "overall", "judge": "gpt"},
                {"stratum": "language=ar", "judge": "gpt"},
                {"stratum": "language=en", "judge": "gpt"},
                {"stratum": "overall", "judge": "claude"},
            ]
        }
    }
    mark_trust_rows(report, probe_report)
    rows = report["trust"]["rows"]
    assert rows[0]["probes"] == ["verbosity +1.00 points, q = 0.00049"]
    assert rows[1]["probes"] == rows[0]["probes"]
    assert "probes" not in rows[2] and "probes" not in rows[3]
    assert report["probe_run"]["moved"] == ["gpt/verbosity"]
