"""Drift between two calibration reports: a two-sample test of each change, controlled over
every cell of the night (`qadi report nightly` and `qadi report diff` exit 3 on it).

A cell is one judge × stratum (overall or ATTR=VALUE) × metric — MAD and signed error on a
numeric scale, exact match on labels — present in both reports. For each cell, Welch's test
of "the metric did not change": t = (new − old) / √(SE_new² + SE_old²) on Welch–Satterthwaite
degrees of freedom from each report's units − 1 (Welch 1947, "The generalization of
'Student's' problem when several different population variances are involved", Biometrika
34). It assumes the two windows are independent samples (disjoint judgments; an item graded in
both makes the test conservative) and each metric roughly normal over its units (the t
intervals' assumption). A design-weighted metric (labels from `qadi sme queue`) brings its own
Bell-McCaffrey df (`df` in the block). Small cells (`calibration.cell_tests`): a side with
fewer than `MIN_UNITS` units is untested (`untested` says why, p None, never a drift); when
both sides have standard error 0 (every unit equal, e.g. 3/3 exact matches, then 0/3) the cell
gets Fisher's exact test instead of a p of 0; when one side has, Welch's test with the other
side's variance. Each cell names its `test`.

The two-sided p-values of all cells of the night are adjusted with Benjamini–Hochberg
(`calibration.multiplicity`), and a cell drifts when its q-value is ≤ `DRIFT_Q`. On a night
where nothing changed, BH's false discovery rate is the probability of any alarm, so at most
5% of unchanged nights alarm; when a judge does drift it moves several cells at once (its
stratum, the overall value, MAD and signed error together), where BH's step-up keeps more
power than Holm's. Cells are positively dependent (strata inside the overall block, MAD with
signed error), the PRDS case in which BH keeps its rate (Benjamini & Yekutieli 2001); the
simulation in tests/stats/test_drift.py checks it.

A report stores each metric's `se` and `units`. An older report without them is still read:
its SE is the half-width of its stored interval over z(1 − (1 − confidence)/2) (exact for a
normal statistic, which its percentile interval approximated) and its units are n.
"""

from __future__ import annotations

from typing import Any

from scipy import stats

from calibration.cell_tests import METHODS as CELL_METHODS
from calibration.cell_tests import MIN_UNITS, CellTest, Side, two_sample
from calibration.multiplicity import DESCRIPTIONS, adjust

DRIFT_METRICS = ("mad", "signed_error")
LABEL_DRIFT_METRICS = ("exact_match",)
DRIFT_Q = 0.05
DRIFT_PROCEDURE = "bh"
METHOD = (
    "Welch two-sample t-test per judge × stratum × metric on each report's standard error "
    "(Fisher's exact test when both reports' units were all equal; untested below "
    f"{MIN_UNITS} units a side); {DESCRIPTIONS[DRIFT_PROCEDURE]} over every cell of the night "
    f"at q = {DRIFT_Q}"
)


def _blocks(judge: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"overall": judge["overall"], **judge.get("strata", {})}


def metrics_of(report: dict[str, Any]) -> tuple[str, ...]:
    level = (report.get("scale") or {}).get("level")
    return LABEL_DRIFT_METRICS if level == "nominal" else DRIFT_METRICS


def standard_error(
    block: dict[str, Any], metric: str, confidence: float
) -> tuple[float | None, int | None, str]:
    """(SE, units, source) of one metric: stored, or derived from an older report's interval."""
    stored = (block.get("se") or {}).get(metric)
    units = block.get("units")
    if stored is not None and units:
        return float(stored), int(units), "stored"
    interval = (block.get("ci") or {}).get(metric)
    if interval is None:
        return None, None, "none"
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2))
    return (interval[1] - interval[0]) / (2 * z), int(block.get("n") or 0), "interval"


def side(block: dict[str, Any], metric: str, confidence: float) -> tuple[Side | None, str]:
    """One report's view of a cell for the test (None without an SE), and the SE's source.
    A design-weighted metric carries its own df (Bell-McCaffrey); others have units − 1."""
    se, units, source = standard_error(block, metric, confidence)
    if se is None or units is None:
        return None, source
    df = (block.get("df") or {}).get(metric)
    return Side(float(block[metric]), se, units, df), source


def _confidence(report: dict[str, Any]) -> float:
    return float((report.get("options") or {}).get("confidence") or 0.95)


def _cell(judge, stratum, metric, now, then, current, previous) -> dict[str, Any] | None:
    value, before = now.get(metric), then.get(metric)
    if value is None or before is None:
        return None
    new, _ = side(now, metric, _confidence(current))
    old, source = side(then, metric, _confidence(previous))
    if new is None or old is None:
        found = CellTest(None, untested="no standard error in one of the reports")
    else:
        found = two_sample(new, old)
    return {
        "judge": judge,
        "stratum": stratum,
        "metric": metric,
        "value": value,
        "ci": (now.get("ci") or {}).get(metric),
        "se": None if new is None else new.se,
        "previous": before,
        "previous_ci": (then.get("ci") or {}).get(metric),
        "previous_se": None if old is None else old.se,
        "previous_se_source": source,
        "difference": value - before,
        "df": found.df,
        "p_value": found.p,
        "test": found.method,
        "untested": found.untested,
    }


def cells(current: dict[str, Any], previous: dict[str, Any]) -> list[dict[str, Any]]:
    """Every judge × stratum × metric the two reports share, with its Welch p-value."""
    found = []
    metrics = metrics_of(current)
    for judge, data in current["judges"].items():
        before = previous["judges"].get(judge)
        if before is None:
            continue
        earlier = _blocks(before)
        for stratum, now in _blocks(data).items():
            then = earlier.get(stratum)
            for metric in metrics if then is not None else ():
                cell = _cell(judge, stratum, metric, now, then, current, previous)
                if cell is not None:
                    found.append(cell)
    return found


def drift(current: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """The night's drift: every cell with its p and BH q-value, and the cells that drifted
    (`changes`). Without a previous report nothing is tested."""
    tested = cells(current, previous) if previous is not None else []
    adjusted = adjust([c["p_value"] for c in tested], DRIFT_PROCEDURE)
    for cell, q in zip(tested, adjusted, strict=True):
        cell["q_value"] = q if cell["p_value"] is not None else None
        cell["drift"] = cell["p_value"] is not None and q <= DRIFT_Q
    return {
        "method": METHOD,
        "procedure": DRIFT_PROCEDURE,
        "q": DRIFT_Q,
        "tested": sum(c["p_value"] is not None for c in tested),
        "untested": sum(c["p_value"] is None for c in tested),
        "tests": {m: CELL_METHODS[m] for m in ("welch", "welch_one_side", "fisher_exact")},
        "cells": tested,
        "changes": [c for c in tested if c["drift"]],
    }


def drifted(found: dict[str, Any]) -> bool:
    """The one rule both `qadi report nightly` and `qadi report diff` exit 3 on."""
    return bool(found["changes"])
