"""Small cells (issue 24, audit D1): a standard error of 0 is not certainty.

One SME, 20 strata of 3 items (and of 5, where the exact tests take over), a judge that
rounds: its score is round(truth + noise), unbiased by symmetry (truth uniform on 1–5,
symmetric noise and clipping; tests/stats/simulate.py). Three items often carry the same
error, so a stratum's signed error has SE 0; read as certainty it gave p = 0 and the old rule
flagged the unbiased judge lenient/harsh in about a fifth of reports and raised drift on
about two nights in five. The same with labels: 3/3 exact matches one night and 0/3 the next
gave p = 0. The rule now (calibration/cell_tests.py): fewer than 5 units a side is untested,
never a discovery; SE 0 on both sides of a drift cell gets Fisher's exact test, on one side
Welch's test with the other side's variance; a bias cell with SE 0 gets the bounded-scale
exact bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from calibration.cell_tests import MIN_UNITS, Side, one_sample, two_sample
from calibration.drift import drift, drifted
from calibration.options import CalibrationOptions
from calibration.table import GradeTable
from calibration.trust import bias_flags
from tests.stats.conftest import Reps, check_rate
from tests.stats.simulate import Judge, graded, labelled, report_of

OPTIONS = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0)
NOMINAL = CalibrationOptions(level="nominal", bootstrap=0)
ROUNDING = {"j": Judge(0.0, 0.6)}


def numeric_night(rng, size: int):
    table = graded(rng, 20 * size, ROUNDING, humans=1, strata=20)
    return report_of(table, OPTIONS, rng)


def nominal_night(rng, size: int):
    """Three labels, one SME 85% accurate, a judge 80% accurate: exact match per stratum."""
    n = 20 * size
    judge, human = labelled(rng, 1, n, 1, np.full(3, 1 / 3), 0.85, 0.8)
    table = GradeTable(
        items=[f"i{i}" for i in range(n)],
        humans=["sme"],
        judges=["j"],
        human_scores=human[0],
        judge_scores=judge[0][:, None],
        attributes=[{"s": f"s{i % 20}"} for i in range(n)],
    )
    names = ("n", "exact_match")
    return report_of(table, NOMINAL, rng, "nominal", names, np.arange(3.0))


def any_flag(report) -> bool:
    cells = {
        stratum: Side(block["signed_error"], block["se"]["signed_error"], block["units"])
        for stratum, block in {"overall": report["judges"]["j"]["overall"],
                               **report["judges"]["j"]["strata"]}.items()  # fmt: skip
    }
    return any(flag.flag for flag in bias_flags(cells, 4.0).values())


@pytest.mark.parametrize("size", [3, 5])
def test_an_unbiased_rounding_judge_is_not_flagged_in_small_strata(size: int):
    reps = Reps(fast=300, long=4000).n
    rng = np.random.default_rng(700 + size)
    flagged = sum(any_flag(numeric_night(rng, size)) for _ in range(reps))
    check_rate("unbiased rounding judge flagged lenient/harsh", flagged, reps, 0.05, "at_most",
               f"1 SME, 20 strata of {size} items")  # fmt: skip


@pytest.mark.parametrize("size", [3, 5])
@pytest.mark.parametrize("kind", ["numeric", "nominal"])
def test_unchanged_nights_with_small_strata_rarely_alarm(kind: str, size: int):
    reps = Reps(fast=300, long=4000).n
    rng = np.random.default_rng(720 + size + (kind == "nominal"))
    night = numeric_night if kind == "numeric" else nominal_night
    alarms = 0
    for _ in range(reps):
        found = drift(night(rng, size), night(rng, size))
        alarms += drifted(found)
        untested = [c for c in found["cells"] if c["p_value"] is None]
        assert all(c["untested"] and not c["drift"] for c in untested)
    metric = "MAD and signed error" if kind == "numeric" else "exact match (3 labels)"
    check_rate(f"unchanged night raises drift ({kind})", alarms, reps, 0.05, "at_most",
               f"1 SME, 20 strata of {size} items, {metric}")  # fmt: skip


def test_a_constant_cell_is_tested_exactly_not_as_certain():
    """The exact tests still find what is really there, and give what Fisher's test and the
    bound give by hand."""
    few = Side(1.0, 0.0, 3)
    assert one_sample(few, 4.0).p is None and "fewer than 5" in one_sample(few, 4.0).untested
    # 20 items all +1 on a 1-5 scale: (4 / 5)^19
    assert one_sample(Side(1.0, 0.0, 20), 4.0).p == pytest.approx(0.8**19)
    assert one_sample(Side(0.0, 0.0, 20), 4.0).p == 1.0
    # exact match 20/20 then 0/20: Fisher's two-sided p = 2 / C(40, 20)
    found = two_sample(Side(1.0, 0.0, 20), Side(0.0, 0.0, 20))
    assert found.method == "fisher_exact" and found.p == pytest.approx(2 / 137846528820)
    # 5/5 then 0/5: 2 / C(10, 5)
    assert two_sample(Side(1.0, 0.0, 5), Side(0.0, 0.0, 5)).p == pytest.approx(2 / 252)
    assert two_sample(Side(1.0, 0.0, MIN_UNITS - 1), Side(0.0, 0.0, 9)).p is None
