"""The test behind one cell of a report (a judge × stratum × metric): the bias flags'
one-sample test of signed error = 0 and the drift test's two-sample test of "no change",
each from a block's value, standard error, units and degrees of freedom.

Where the variance cannot be estimated the cell is untestable, never a discovery
(docs/statistics.md, "Small cells"):

- fewer than `MIN_UNITS` independent units on a side: the cell is untestable (p None, with
  the reason). A t-test on fewer than 5 discrete scores has at most 3 degrees of freedom and
  no power (at 3 items of a rounding judge its largest attainable t with any spread is 2 on 2
  df, p = 0.18), while 6–19% of such blocks have no spread at all; 5 is also the SME queue's
  label floor per stratum and the cluster floor (`calibration.intervals.MIN_CLUSTERS`).
- a standard error of 0 is not certainty: every unit had the same value, which a handful of
  discrete scores often do by chance (a rounding judge exactly at the human mean on 3 items,
  or 3/3 exact matches one night and 0/3 the next). Such a cell is tested exactly or not at
  all:
  - two samples, both constant (drift): the units of the two reports are then two groups of
    identical values, and the permutation test of "both reports' units come from one
    distribution" is Fisher's exact test of the 2 × 2 table (report × value) — p = 1 when
    the two values are equal, 2/C(2n, n) for n units on each side when they differ (Fisher
    1935, *The Design of Experiments*, §2; the two-sided p of scipy's `fisher_exact`);
  - two samples, one constant: Welch's test with the other side's variance alone (its level
    holds within Monte-Carlo error at 5–10 units of a rounding judge; a pooled variance,
    which lends the constant side the other's spread, rejected up to 13%);
  - one sample (bias): n units all equal to c. A variable with mean 0 bounded by the scale
    range R takes one value v ≠ 0 with probability at most R / (R + |v|) (its mass at v must
    be balanced below 0 within R), so P(n units all equal to some v with |v| ≥ |c|) ≤
    (R / (R + |c|))^(n − 1) under "signed error = 0": an exact (conservative) p-value that
    needs no variance. A judge exactly one point above the human on every one of 20 items of
    a 1–5 scale gets p ≤ 0.8^19 = 0.014; on 5 items, 0.41.
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy import special, stats

MIN_UNITS = 5
ZERO = 1e-12  # a standard error below this (relative to the value's scale) is zero

METHODS: dict[str, str] = {
    "t": "two-sided Student t-test of the value on its standard error (df of the block)",
    "welch": "Welch two-sample t-test on both reports' standard errors, "
    "Welch-Satterthwaite df",
    "welch_one_side": "Welch's test with one report's variance: the other report's units "
    "were all equal (standard error 0)",
    "fisher_exact": "Fisher's exact test: each report's units were all equal (standard "
    "error 0 on both sides); the permutation test of the units over the two reports",
    "bounded_constant": "every unit had the same signed error c (standard error 0): "
    "p = (R / (R + |c|))^(n − 1), the largest chance of that under a mean of 0 on a scale "
    "of range R",
}


@dataclass(frozen=True)
class Side:
    """One block's view of a metric: its value, SE, independent units and df of the SE."""

    value: float
    se: float | None
    units: int
    df: float | None = None

    @property
    def degrees(self) -> float:
        return float(self.df) if self.df is not None else float(self.units - 1)

    def constant(self) -> bool:
        return self.se is not None and self.se <= ZERO * max(1.0, abs(self.value))


@dataclass(frozen=True)
class CellTest:
    """A cell's p-value, its df and the method, or why it was not tested."""

    p: float | None
    df: float | None = None
    method: str | None = None
    untested: str | None = None


def too_few(units: int) -> str:
    return f"{units} unit(s), fewer than {MIN_UNITS}: the variance cannot be estimated"


def one_sample(side: Side, scale_range: float | None) -> CellTest:
    """Two-sided test of value = 0: t on the block's SE and df, or, when every unit had
    the same value, the bounded-scale exact bound (untestable without a scale range)."""
    if side.se is None:
        return CellTest(None, untested="no standard error")
    if side.units < MIN_UNITS:
        return CellTest(None, untested=too_few(side.units))
    if side.constant():
        if side.value == 0:
            return CellTest(1.0, method="bounded_constant")
        if not scale_range:
            return CellTest(None, untested="standard error 0 and no scale range to bound it")
        bound = (scale_range / (scale_range + abs(side.value))) ** (side.units - 1)
        return CellTest(float(min(1.0, bound)), method="bounded_constant")
    df = side.degrees
    if df <= 0:
        return CellTest(None, untested=f"{df:.2f} degrees of freedom")
    return CellTest(float(2 * special.stdtr(df, -abs(side.value) / side.se)), df, "t")


def two_sample(now: Side, then: Side) -> CellTest:
    """Two-sided test of "no change" between two reports' values of one cell."""
    if now.se is None or then.se is None:
        return CellTest(None, untested="no standard error in one of the reports")
    short = min(now.units, then.units)
    if short < MIN_UNITS:
        return CellTest(None, untested=too_few(short))
    if now.constant() and then.constant():
        if now.value == then.value:
            return CellTest(1.0, method="fisher_exact")
        table = [[now.units, 0], [0, then.units]]
        return CellTest(float(stats.fisher_exact(table).pvalue), method="fisher_exact")
    live = [s for s in (now, then) if not s.constant()]
    if any(s.degrees <= 0 for s in live):
        return CellTest(None, untested="a standard error with no degrees of freedom")
    variance = sum(s.se**2 for s in live)
    df = variance**2 / sum(s.se**4 / s.degrees for s in live)
    p = 2 * special.stdtr(df, -abs(now.value - then.value) / variance**0.5)
    return CellTest(float(p), float(df), "welch" if len(live) == 2 else "welch_one_side")
