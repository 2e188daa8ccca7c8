"""calibration/alignment.py by hand: the folds are stratified, reproducible and disjoint;
the paired change of MAD has the t interval and one-sided p-value computed here with scipy;
equal differences fall back to the exact sign test; too few items certify nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calibration.alignment import MIN_ITEMS, certify, folds


def test_folds_are_stratified_reproducible_and_split_before_any_score():
    items = [f"i{k}" for k in range(30)]
    strata = {item: ("egy" if k < 10 else "lev") for k, item in enumerate(items)}
    first = folds(items, strata, 0.5, seed=3)
    assert folds(list(reversed(items)), strata, 0.5, seed=3) == first  # order-free
    held = [i for i, fold in first.items() if fold == "holdout"]
    assert sum(strata[i] == "egy" for i in held) == 5  # ⌈0.5 · 10⌉
    assert sum(strata[i] == "lev" for i in held) == 10  # ⌈0.5 · 20⌉
    assert folds(items, strata, 0.5, seed=4) != first  # another seed, another split


def test_the_mad_change_is_a_paired_t_with_a_one_sided_p():
    reference = np.array([3, 4, 2, 5, 1, 3, 4, 2], dtype=float)
    old = np.array([5, 5, 4, 3, 3, 5, 2, 4], dtype=float)
    new = np.array([3, 4, 3, 5, 2, 4, 4, 2], dtype=float)
    result = certify(reference, old, new)
    d = np.abs(new - reference) - np.abs(old - reference)
    mean, se = d.mean(), d.std(ddof=1) / math.sqrt(len(d))
    half = stats.t.ppf(0.975, len(d) - 1) * se
    assert result.mad.difference == pytest.approx(mean)
    assert result.mad.ci == pytest.approx([mean - half, mean + half])
    assert result.mad.p_value == pytest.approx(stats.t.cdf(mean / se, len(d) - 1))
    assert result.certified and result.verdict.startswith("certified")
    exact = (new == reference).astype(float) - (old == reference).astype(float)
    assert result.exact_match.difference == pytest.approx(exact.mean())


def test_equal_differences_use_the_exact_sign_test():
    reference = np.zeros(6)
    result = certify(reference, np.ones(6), np.zeros(6))  # every item 1 closer
    assert result.mad.ci is None and result.mad.p_value == pytest.approx(0.5**6)
    assert result.certified


def test_too_few_held_out_items_certify_nothing():
    n = MIN_ITEMS - 1
    result = certify(np.zeros(n), np.ones(n) * 2, np.zeros(n))
    assert not result.certified and "fewer than" in result.mad.note
