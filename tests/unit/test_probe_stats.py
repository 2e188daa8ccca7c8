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


def test_a_cell_whose_changes_are_all_equal_is_flagged_with_a_bounded_interval():
    """18 items all up by exactly one point (a rule-bound judge): the t interval would be
    [+1, +1]. The share of items changed by +1 is at least the one-sided 95% Clopper-Pearson
    bound for 18 of 18, and the others change by at most the scale's range (4 points)."""
    from calibration.render.probes import change_text

    [moved, still] = probe_effects(
        [cell("j", "self_preference", [(3, 4)] * 18), cell("j", "digits", [(2, 2)] * 24)],
        (1, 5),
        OPTIONS,
    )
    share = stats.beta.ppf(0.05, 18, 1)  # lower bound of a binomial share at 18 of 18
    assert moved["ci"] == pytest.approx([share - 4 * (1 - share), share + 4 * (1 - share)])
    assert moved["ci"][0] > 0.2 and moved["ci"][1] < 1.5  # about [+0.23, +1.46]
    assert moved["ci_method"] == "bounded" and "all 18 paired changes are +1" in moved["degenerate"]
    assert moved["p"] < 0.001  # 2^18 sign patterns: 20000 seeded draws, p = 2 (b + 1)/(B + 1)
    assert change_text(moved) == f"+1.00 [{moved['ci'][0]:+.2f}, {moved['ci'][1]:+.2f}] all 18 equal"
    nothing = stats.beta.ppf(0.05, 24, 1)
    assert still["ci"] == pytest.approx([-4 * (1 - nothing), 4 * (1 - nothing)])
    assert still["degenerate"] and still["p"] == 1.0
    [varied] = probe_effects([cell("j", "verbosity", PAIRS)], (1, 5), OPTIONS)
    assert "degenerate" not in varied and varied["ci_method"] == "t"
    clustered = OPTIONS.model_copy(update={"cluster": "prompt"})
    attributes = [{"prompt": str(i % 3)} for i in range(18)]
    [grouped] = probe_effects([cell("j", "p", [(3, 4)] * 18, attributes)], (1, 5), clustered)
    assert grouped["ci"] is None and "zero width" in grouped["undefined"]


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
    # every change equal: a CR1 interval would be the point [+1, +1], so there is none
    assert block["ci"] is None and "zero width" in block["undefined"] and block["degenerate"]
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


def test_moved_judges_are_marked_with_each_strata_own_effect():
    """Arabic items all up by one, English items unchanged: the overall mark carries the
    run's effect (+0.60 over 20 items); the Arabic row its own (+1.00 over 12), and the
    English row none, though the probe applied to its items (issue 28 audit)."""
    arabic, english = [{"language": "ar"}] * 12, [{"language": "en"}] * 8
    pairs = [(2, 3)] * 12 + [(3, 3)] * 8
    probe_report = {
        "id": "run1",
        "cells": probe_effects([cell("gpt", "verbosity", pairs, arabic + english)], (1, 5), OPTIONS),
    }
    [moved] = probe_report["cells"]
    assert moved["strata"] == {"language=ar": 12, "language=en": 8}
    assert moved["strata_change"] == {"language=ar": 1.0, "language=en": 0.0}
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
    q = f"{moved['q']:.2g}"  # 12 changes of +1: exact p = 2/4096, alone in its family
    assert q == "0.00049"
    assert rows[0]["probes"] == [f"verbosity +0.60 points, q = {q}"]
    assert rows[1]["probes"] == [f"verbosity +1.00 points here (n = 12); moved overall +0.60, q = {q}"]
    assert "probes" not in rows[2] and "probes" not in rows[3]
    assert report["probe_run"]["moved"] == ["gpt/verbosity"]
    assert "not re-tested per stratum" in report["probe_run"]["marks"]


def drawn(truth: float, draws: int) -> float:
    """Five standard errors of a drawn two-sided p (twice a drawn share near truth / 2)."""
    return 5 * 2 * np.sqrt(truth / 2 * (1 - truth / 2) / draws)


@pytest.mark.parametrize("size", [1024, 1025, 5000])
def test_a_sign_flip_p_of_1024_changes_and_more_is_drawn_with_the_binomial_answer(size):
    """Issue 42.5: 2^k for k ≥ 1,024 changes overflowed a float and the run answered 500.
    Past 2^k > permutations the test is the Monte Carlo one it states; with changes of ±1
    the sum is 2·ups − k, so the exact answer is the two-sided binomial test of the ups."""
    draws = 20000
    rng = np.random.default_rng(size)
    ones, exact = sign_flip_p(np.ones(size), draws, rng)  # no draw reaches the observed sum
    assert not exact and ones == pytest.approx(2 / (draws + 1))
    for ups in (size // 2, size // 2 + int(0.9 * np.sqrt(size))):  # z about 0 and 1.8
        units = np.array([1.0] * ups + [-1.0] * (size - ups))
        p, exact = sign_flip_p(rng.permutation(units), draws, rng)
        truth = stats.binomtest(ups, size).pvalue
        assert not exact and p == pytest.approx(truth, abs=drawn(truth, draws)), (ups, truth)
    assert 0.03 < truth < 0.15


def test_a_sign_flip_p_of_1030_mixed_changes_agrees_with_scipys_monte_carlo():
    rng = np.random.default_rng(7)
    units = rng.choice([-2.0, -1, 1, 2, 3], size=1030, p=[0.25, 0.27, 0.25, 0.2, 0.03])
    mine, exact = sign_flip_p(units, 20000, rng)
    theirs = stats.permutation_test(
        (units,), np.sum, permutation_type="samples", n_resamples=20000, random_state=1
    ).pvalue
    assert not exact and 0.01 < theirs < 0.5
    assert mine == pytest.approx(theirs, abs=np.sqrt(2) * drawn(theirs, 20000))


def test_a_cell_of_1024_changed_pairs_gets_its_effect_and_states_the_drawn_test():
    pairs = [(2, 3)] * 1000 + [(3, 2)] * 24 + [(3, 3)] * 10
    [block] = probe_effects([cell("j", "verbosity", pairs)], (1, 5), OPTIONS)
    assert block["n"] == 1034 and (block["flips_up"], block["flips_down"]) == (1000, 24)
    assert block["mean_change"] == pytest.approx(976 / 1034)
    assert block["exact"] is False and block["p"] == pytest.approx(2 / 20001)
    assert block["moved"] and block["few_changes"] is False
