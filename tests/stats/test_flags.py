"""Lenient / harsh flags (issue 24 item 8): an unbiased judge in a 10-stratum report is
flagged at most at the level; a biased one is still flagged.

The old rule (the signed error's 95% interval excludes 0, per cell, no adjustment) flagged an
unbiased judge in 83% of 10-stratum reports. The rule now (`calibration.trust.bias_flags`):
t-test of signed error = 0 per judge × stratum, Benjamini–Hochberg over the report's cells.
Each report: 400 items in 10 strata of 40, judges on the 1–5 scale whose population signed
error is 0 by symmetry (truth uniform on 1–5, symmetric noise and clipping) unless biased.
"""

from __future__ import annotations

import numpy as np

from calibration.cell_tests import Side
from calibration.options import CalibrationOptions
from calibration.trust import bias_flags
from tests.stats.conftest import Reps, check_rate, check_value
from tests.stats.simulate import Judge, graded, report_of

OPTIONS = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=0)


def flags(report) -> dict:
    cells = {
        (judge, stratum): Side(block["signed_error"], block["se"]["signed_error"], block["units"])
        for judge, data in report["judges"].items()
        for stratum, block in {"overall": data["overall"], **data["strata"]}.items()
    }
    return bias_flags(cells, 4.0)


def test_unbiased_judges_are_flagged_at_most_at_the_level():
    reps = Reps(fast=120, long=2000).n
    judges = {"a": Judge(0.0, 0.8), "b": Judge(0.0, 1.0), "c": Judge(0.0, 1.2)}
    rng = np.random.default_rng(51)
    any_flag = first_judge = 0
    for _ in range(reps):
        found = flags(report_of(graded(rng, 400, judges, strata=10), OPTIONS, rng))
        any_flag += any(flag.flag for flag in found.values())
        first_judge += any(flag.flag for (judge, _), flag in found.items() if judge == "a")
    setting = "3 unbiased judges, overall + 10 strata of 40 items"
    check_rate("an unbiased judge is flagged lenient/harsh", first_judge, reps, 0.05, "at_most",
               setting)  # fmt: skip
    check_rate("any judge of the report is flagged", any_flag, reps, 0.05, "at_most", setting)


def test_among_biased_judges_false_flags_stay_a_small_share_and_bias_is_found():
    """Benjamini–Hochberg bounds the expected share of false flags among the flags (FDR) at
    5%, whatever the other judges do; a judge 0.5 points lenient is flagged overall."""
    reps = Reps(fast=80, long=1000).n
    judges = {"lenient": Judge(0.5, 0.9), "harsh": Judge(-0.3, 0.9), "fair": Judge(0.0, 0.9)}
    rng = np.random.default_rng(52)
    shares, found_lenient = [], 0
    for _ in range(reps):
        found = flags(report_of(graded(rng, 400, judges, strata=10), OPTIONS, rng))
        flagged = [key for key, flag in found.items() if flag.flag]
        false = [key for key in flagged if key[0] == "fair"]
        wrong_way = [k for k in flagged if k[0] != "fair" and found[k].flag != {
            "lenient": "lenient", "harsh": "harsh"}[k[0]]]  # fmt: skip
        shares.append((len(false) + len(wrong_way)) / max(len(flagged), 1))
        found_lenient += found[("lenient", "overall")].flag == "lenient"
    check_rate("a judge 0.5 lenient is flagged overall", found_lenient, reps, 0.95, "at_least",
               "400 items")  # fmt: skip
    # the target 0.05 plus three Monte-Carlo standard errors of the realised mean share
    bound = 0.05 + 3 * float(np.std(shares, ddof=1)) / np.sqrt(reps)
    check_value("share of false flags (FDR), 0.05 + 3 MC s.e.", float(np.mean(shares)), bound,
                "lenient +0.5, harsh −0.3, fair judge; 10 strata")  # fmt: skip
