"""Adjusted p-values against hand-computed values, and their error rates under the null."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.multiplicity import adjust, reject
from tests.stats.conftest import Reps, check_rate

P = [0.01, 0.04, 0.03, 0.20]


def test_bh_matches_the_step_up_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.20 → m·p/k = 0.04, 0.06, 0.0533, 0.20 → running min from the top
    assert adjust(P, "bh") == pytest.approx([0.04, 0.0533333, 0.0533333, 0.20], rel=1e-5)


def test_holm_matches_the_step_down_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.20 → (m−k+1)·p = 0.04, 0.09, 0.08, 0.20 → running max
    assert adjust(P, "holm") == pytest.approx([0.04, 0.09, 0.09, 0.20])


def test_by_is_bh_times_the_harmonic_sum():
    harmonic = 1 + 1 / 2 + 1 / 3 + 1 / 4
    expected = [min(1.0, v * harmonic) for v in adjust(P, "bh")]
    assert adjust(P, "by") == pytest.approx(expected)


def test_an_undefined_p_counts_in_the_family_and_is_never_rejected():
    with_nan = adjust([0.01, None, float("nan")], "holm")
    assert with_nan == pytest.approx([0.03, 1.0, 1.0])
    assert reject([0.01, None], 0.05, "bh") == [True, False]


def test_unknown_procedure_is_named():
    with pytest.raises(ValueError, match="procedure: 'fdr'"):
        adjust([0.5], "fdr")  # type: ignore[arg-type]


@pytest.mark.parametrize("procedure", ["bh", "holm"])
def test_a_family_of_true_nulls_raises_any_alarm_at_most_at_the_level(procedure):
    """All 30 nulls true, independent uniform p: P(any rejection) ≤ q for both procedures
    (BH's FDR equals its FWER when every null is true)."""
    reps = Reps(fast=2000, long=20000).n
    rng = np.random.default_rng(7)
    alarms = sum(any(reject(rng.uniform(size=30), 0.05, procedure)) for _ in range(reps))
    check_rate(f"{procedure}: any alarm, 30 true nulls", alarms, reps, 0.05, "at_most")
