"""The trust map: which judge may replace the SMEs on which subset, and which is best there.

Per (stratum, judge): the verdict, its reason, winning rate ω, advantage probability ρ, and a
bias flag. Judges are ranked within a stratum by ρ (ties by the smaller MAD); the best judge
of a stratum is the top-ranked one marked "replace", else null.

"replace" is decided over the whole report (docs/statistics.md, "Alt-test and the trust map"):
the authors control the false discovery rate within one alt-test, but a report asks the
question once per judge × stratum. Each cell with ≥ 3 tested annotators gets the p-value of
"the judge beats at least half of the tested annotators": the Bonferroni partial-conjunction
p-value (m − u + 1)·p_(u), u = ⌈m/2⌉ (Benjamini & Heller 2008, "Screening for partial
conjunction hypotheses", Biometrics 64(4), valid under any dependence), from each annotator's
`p_verdict` (the t-test with the null's least variance, `calibration.alt_test`). Holm's
step-down runs over every such cell of the report. A cell is "replace" only when the
authors' test passes there, its Holm-adjusted p is ≤ q, and the judge is not degenerate
(`calibration.degenerate`). Holm bounds the probability of any false "replace" in the report
by q under any dependence, and that bound survives intersecting with the other conditions;
a false "replace" is what a lead pays for (the humans are stopped), so the family-wise rate
is the one to control.

Bias: a cell is lenient / harsh when the signed error differs from 0 by the t-test on its
standard error (units − 1 degrees of freedom; `calibration.cell_tests`, which also says what
a block too small or without spread gets) after Benjamini–Hochberg over every (judge,
stratum) cell of the report at q: a flag points at where to look, so the false discovery rate
is the one to control, and with every judge unbiased BH's FDR is the chance of any flag.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from calibration.alt_test import MIN_ANNOTATORS, AltTestResult, Q
from calibration.cell_tests import MIN_UNITS, CellTest, Side, one_sample
from calibration.degenerate import chance_reason
from calibration.multiplicity import DESCRIPTIONS, adjust
from calibration.report import JudgeReport, MetricBlock, TrustMap, TrustRow, Verdict

SMALL_N = 50  # the authors advise 50-100 instances (nitaytech/AltTest README, "Quick Start")
REPLACE_PROCEDURE = "holm"
BIAS_PROCEDURE = "bh"
PROCEDURES = {
    "replace": (
        "partial conjunction (Benjamini & Heller 2008, Bonferroni) of 'beats at least half of "
        "the tested annotators' per judge × stratum, from the annotators' t-tests with the "
        "variance floored at ε(1 − ε) (its least value under the null); "
        f"{DESCRIPTIONS[REPLACE_PROCEDURE]} over the report's cells; and the authors' "
        "alt-test passes; and the judge is not degenerate"
    ),
    "bias": (
        "two-sided t-test of signed error = 0 (units − 1 df, or the design-weighted block's "
        "Bell-McCaffrey df); a block whose units all had the same signed error gets the "
        f"bounded-scale exact bound instead, one with fewer than {MIN_UNITS} units is untested "
        f"(`bias_untested`); {DESCRIPTIONS[BIAS_PROCEDURE]} over the report's judge × stratum "
        "cells"
    ),
}


def partial_conjunction(p_values: list[float | None]) -> float | None:
    """p of 'at least ⌈m/2⌉ of the m annotator nulls are false': (m − u + 1) · p_(u)."""
    m = len(p_values)
    if m == 0:
        return None
    u = math.ceil(m / 2)
    ordered = sorted(1.0 if p is None or math.isnan(p) else p for p in p_values)
    return min(1.0, (m - u + 1) * ordered[u - 1])


def cell_p(result: AltTestResult) -> float | None:
    """The replace p-value of one cell; None when fewer than 3 annotators were tested."""
    if result.tested < MIN_ANNOTATORS:
        return None
    return partial_conjunction([t.p_verdict for t in result.annotators])


def bias_side(block: MetricBlock) -> Side | None:
    """The signed error of one block as the bias test reads it, or None without a value."""
    value = block.signed_error  # type: ignore[attr-defined]
    if value is None or block.units is None:
        return None
    return Side(value, block.se.get("signed_error"), block.units, block.df.get("signed_error"))


class Flag(NamedTuple):
    flag: str | None
    p: float | None
    q: float | None
    test: str | None
    untested: str | None


def bias_flags(cells: dict[Any, Side | None], scale_range: float | None) -> dict[Any, Flag]:
    """Per cell (a report's judge × stratum): the test of signed error = 0
    (`calibration.cell_tests.one_sample`), Benjamini–Hochberg over all the cells given,
    lenient / harsh when q ≤ `Q`. A cell whose variance cannot be estimated is untested."""
    found = {
        key: one_sample(cell, scale_range) if cell is not None else CellTest(None)
        for key, cell in cells.items()
    }
    keys = list(found)  # an untested cell counts as p = 1 (calibration/multiplicity.py)
    adjusted = adjust([found[key].p for key in keys], BIAS_PROCEDURE)
    q = {key: v for key, v in zip(keys, adjusted, strict=True) if found[key].p is not None}
    out: dict[Any, Flag] = {}
    for key, test in found.items():
        flagged = q.get(key) is not None and q[key] <= Q
        flag = ("lenient" if cells[key].value > 0 else "harsh") if flagged else None
        out[key] = Flag(flag, test.p, q.get(key), test.method, test.untested)
    return out


def _order(item: tuple[str, AltTestResult, MetricBlock]) -> tuple[float, float]:
    _, result, block = item
    rho = result.advantage_probability
    mad = block.mad  # type: ignore[attr-defined]
    return (-(rho if rho is not None else -1.0), mad if mad is not None else float("inf"))


def missing(result: AltTestResult, min_items: int) -> str | None:
    """What an insufficient verdict lacks, in numbers ("1 of 3 annotators testable (the next
    has 12 of 30 items)"); None when enough annotators were tested."""
    if result.tested >= MIN_ANNOTATORS:
        return None
    text = f"{result.tested} of {MIN_ANNOTATORS} annotators testable"
    if result.skipped:
        closest = max(s.n for s in result.skipped)
        text += f" (the next has {closest} of {min_items} items)"
    return text


def _cells(judges: dict[str, JudgeReport]) -> list[tuple[str, list]]:
    """(stratum, [(judge, alt-test, metrics)] ranked) for overall and each stratum."""
    strata = ["overall", *sorted({s for j in judges.values() for s in j.alt_test.strata})]
    out = []
    for stratum in strata:
        entries = []
        for name, judge in judges.items():
            if stratum == "overall":
                entries.append((name, judge.alt_test.overall, judge.overall))
            elif stratum in judge.alt_test.strata and stratum in judge.strata:
                entries.append((name, judge.alt_test.strata[stratum], judge.strata[stratum]))
        out.append((stratum, sorted(entries, key=_order)))
    return out


def _adjusted(values: dict[Any, float | None], procedure) -> dict[Any, float | None]:
    keys = [k for k, v in values.items() if v is not None]
    return dict(zip(keys, adjust([values[k] for k in keys], procedure), strict=True))


def decide(
    result: AltTestResult, block: MetricBlock, level: str, q_value: float | None, family: int
) -> tuple[Verdict, str | None]:
    """The verdict of one cell and the first reason it is not "replace"."""
    if result.tested < MIN_ANNOTATORS:
        skipped = "; ".join(s.reason for s in result.skipped[:2])
        return "insufficient", (
            f"{result.tested} annotator(s) testable, fewer than {MIN_ANNOTATORS}"
            + (f" ({skipped})" if skipped else "")
        )
    if result.degenerate:
        return "not_replacement", result.degenerate
    if not result.passed:
        return "not_replacement", f"alt-test not passed: ω = {result.winning_rate:.2f} < 0.5"
    chance = chance_reason(block.model_dump(), level)
    if chance:
        return "not_replacement", chance
    if q_value is None or q_value > Q:
        shown = "—" if q_value is None else f"{q_value:.3g}"
        return "not_replacement", (
            f"passes the alt-test, but not after Holm over the report's {family} judge × "
            f"stratum decisions (adjusted p = {shown} > {Q})"
        )
    return "replace", None


def trust_map(
    judges: dict[str, JudgeReport],
    epsilon: float,
    level: str,
    min_items: int,
    scale_range: float | None = None,
) -> TrustMap:
    """`scale_range`: max − min of the scale, which bounds the bias test of a block without
    spread (None on labels, which have no signed error)."""
    cells = _cells(judges)
    replace_p = {(s, n): cell_p(r) for s, entries in cells for n, r, _ in entries}
    biases = bias_flags(
        {(s, n): bias_side(b) for s, entries in cells for n, _, b in entries}, scale_range
    )
    replace_q = _adjusted(replace_p, REPLACE_PROCEDURE)
    family = len(replace_q)
    rows: list[TrustRow] = []
    best: dict[str, str | None] = {}
    for stratum, entries in cells:
        best[stratum] = None
        for rank, (name, result, block) in enumerate(entries, start=1):
            key = (stratum, name)
            decided, reason = decide(result, block, level, replace_q.get(key), family)
            if decided == "replace" and best[stratum] is None:
                best[stratum] = name
            rows.append(
                TrustRow(
                    stratum=stratum,
                    judge=name,
                    verdict=decided,
                    reason=reason,
                    winning_rate=result.winning_rate,
                    advantage_probability=result.advantage_probability,
                    p_replace=replace_p[key],
                    q_replace=replace_q.get(key),
                    bias=biases[key].flag,
                    bias_p=biases[key].p,
                    bias_q=biases[key].q,
                    bias_test=biases[key].test,
                    bias_untested=biases[key].untested,
                    rank=rank,
                    tested=result.tested,
                    small_n=min((a.n for a in result.annotators), default=0) < SMALL_N,
                    missing=missing(result, min_items),
                )
            )
    return TrustMap(epsilon=epsilon, q=Q, rows=rows, best=best, procedures=PROCEDURES)
