"""The statistics of a probe run: how far a perturbation that should not matter moves each
judge, with a paired test, an interval, and a false-discovery-controlled decision across
judges × probes; and the marks a moved judge gets in the trust map.

Per cell (judge, probe), over the items where both grades exist (a failed call leaves its
pair out, counted, never imputed), with d_i = treated_i − baseline_i:

- effect: the mean change d̄, in the scale's points and in percent of its range;
- test: the paired sign-flip permutation test of d̄ (Fisher's randomisation test). Under
  "the perturbation does not matter" the two grades of an item are exchangeable, so each d_i
  is as likely to be −d_i. Zeros cannot change sign and drop out; with k non-zero changes
  the null distribution is all 2^k sign patterns when 2^k ≤ `permutations` (an exact test
  at any n, ties and discrete ratings included, where the t and the Wilcoxon tests rest on
  approximations), else `permutations` seeded Monte Carlo draws with p = (b + 1)/(B + 1).
  With `cluster`, whole clusters flip together (items sharing a prompt are not independent).
- interval: Student t on d (ddof 1, n − 1 df), or CR1 cluster-robust with t (G − 1) and at
  least two clusters. It is a normal approximation: when few items change (a rare, large
  effect) it can under-cover, which the JSON says; the decision uses the exact test. When
  every change is the same value c (no variance: all 0 for a judge nothing moves, all +1 for
  a rule-bound one), the t interval has zero width, which says nothing about the items not
  probed; the cell is flagged `degenerate` and its interval is a distribution-free bound
  instead: with all n changes equal to c, the share s of items whose change is c is at least
  s_lo = alpha^(1/n) (one-sided Clopper-Pearson, n of n), and every other change lies within
  the scale's range ±R, so the mean change lies in [c·s_lo − R(1 − s_lo), c·s_lo + R(1 − s_lo)]
  at confidence 1 − alpha (for items alike those probed; under `cluster` no interval).
- flips: the share of items whose grade changed, with a Clopper-Pearson exact interval,
  and the exact binomial sign test of up versus down flips (McNemar's exact test when the
  grade is a binary verdict).
- decision: Benjamini-Hochberg q-values over every cell of the run (calibration/
  multiplicity.py); a cell is `moved` when q ≤ the run's q.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats

from calibration.multiplicity import DESCRIPTIONS, Procedure, adjust

FEW_CHANGES = 10  # below this many changed items (or clusters) the t interval is rough
MEMORY_CELLS = 4_000_000  # permutation draws × units held at once


class ProbeStatsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    q: float = Field(default=0.05, gt=0, lt=1, description="false discovery rate of decisions")
    alpha: float = Field(default=0.05, gt=0, lt=1, description="intervals at 1 − alpha")
    procedure: Procedure = "bh"
    permutations: int = Field(default=20000, ge=999, le=1_000_000)
    cluster: str | None = Field(default=None, description="item attribute: flip its clusters")
    seed: int = 0


@dataclass
class CellInput:
    """The paired grades of one judge under one probe, and what left items out."""

    judge: str
    probe: str
    baseline: list[float] = field(default_factory=list)
    treated: list[float] = field(default_factory=list)
    attributes: list[dict[str, str]] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> items
    failed: Counter = field(default_factory=Counter)  # reason -> pairs

    def add(self, baseline: float, treated: float, attributes: dict[str, str]) -> None:
        self.baseline.append(float(baseline))
        self.treated.append(float(treated))
        self.attributes.append(attributes)


def method(options: ProbeStatsOptions) -> dict[str, str]:
    """Every number's method, for the JSON."""
    level = f"{100 * (1 - options.alpha):g}%"
    unit = f"clusters of '{options.cluster}'" if options.cluster else "items"
    interval = (
        f"{level} CR1 cluster-robust interval over {unit}, Student t (G − 1 df), G ≥ 2"
        if options.cluster
        else f"{level} Student t interval on the paired changes (ddof 1, n − 1 df)"
    )
    return {
        "effect": "mean of (treated − baseline) grade over items with both grades; failed "
        "calls leave their pair out (counted under `failed`), never imputed",
        "test": f"two-sided paired sign-flip permutation test of the mean change over {unit}: "
        f"exact (all 2^k sign patterns of the k non-zero units) when 2^k ≤ "
        f"{options.permutations}, else {options.permutations} seeded Monte Carlo draws, "
        "p = (b + 1)/(B + 1); assumes exchangeable grades under the null",
        "interval": interval + "; approximate, may under-cover when fewer than "
        f"{FEW_CHANGES} units change (flagged `few_changes`). When every change is equal "
        "(flagged `degenerate`, `ci_method` 'bounded'), the t interval would have zero "
        f"width; the interval is then c·s_lo ± R(1 − s_lo), with s_lo = alpha^(1/n) the "
        f"one-sided {level} Clopper-Pearson lower bound of the share of items changed by "
        "the common change c (n of n) and R the scale's range (no interval under a cluster)",
        "flips": f"share of items whose grade changed, {level} Clopper-Pearson exact interval",
        "sign_test": "exact two-sided binomial test of up vs down flips (exact McNemar for "
        "binary verdicts); reported, not part of the decision",
        "multiplicity": f"{DESCRIPTIONS[options.procedure]} over judges × probes, q = "
        f"{options.q}; a cell is `moved` when its q-value ≤ q",
    }


def sign_flip_p(
    units: np.ndarray, permutations: int, rng: np.random.Generator
) -> tuple[float, bool]:
    """Two-sided p of Σ units under random signs, and whether it is exact.

    The same test and p-value conventions as `scipy.stats.permutation_test` with
    `permutation_type="samples"` on one sample (two-sided p = 2 · the smaller one-sided p;
    exact when all 2^k patterns fit in `permutations`, else (b + 1)/(B + 1)), which the unit
    tests check; written out because SciPy's general machinery costs 5-25 ms a call, and
    the simulations in tests/stats run this tens of thousands of times.
    """
    units = units[units != 0]
    if units.size <= 1:
        # nothing, or one value, to flip: the observed sum is the most extreme of
        # {sum, -sum} on one side and the least on the other, so p = 2 · min(1, 1/2) = 1
        return 1.0, True
    observed = units.sum()
    # integer powers: 2.0**1024 overflows a float (issue 42.5: 500 at 1,024 changed pairs)
    exact = 2**units.size <= permutations
    if exact:
        bits = np.arange(2**units.size)[:, None] >> np.arange(units.size) & 1
        null = (2.0 * bits - 1.0) @ units
        draws, adjustment = null.size, 0
    else:
        chunk = max(1, MEMORY_CELLS // units.size)
        null = np.concatenate(
            [
                (
                    2.0 * rng.integers(0, 2, size=(min(chunk, permutations - start), units.size))
                    - 1.0
                )
                @ units
                for start in range(0, permutations, chunk)
            ]
        )
        draws, adjustment = permutations, 1
    tolerance = 100 * np.finfo(float).eps * abs(observed)
    less = (np.count_nonzero(null <= observed + tolerance) + adjustment) / (draws + adjustment)
    greater = (np.count_nonzero(null >= observed - tolerance) + adjustment) / (draws + adjustment)
    return float(min(1.0, 2 * min(less, greater))), exact


# Quantiles and binomial tests depend on a few small integers, and a family (or a
# simulation) asks for the same ones again and again: each is computed once.


@cache
def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """The exact binomial interval by its beta quantiles (what `binomtest(k, n)
    .proportion_ci()` finds by root search, at a fraction of the cost)."""
    low = stats.beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


@cache
def _t_quantile(df: int, alpha: float) -> float:
    return float(stats.t.ppf(1 - alpha / 2, df))


@cache
def _sign_test(up: int, flips: int) -> float:
    return float(stats.binomtest(up, flips).pvalue) if flips else 1.0


def _t_interval(d: np.ndarray, alpha: float) -> list[float] | None:
    if d.size < 2:
        return None
    half = _t_quantile(d.size - 1, alpha) * d.std(ddof=1) / np.sqrt(d.size)
    return [float(d.mean() - half), float(d.mean() + half)]


def _cr1_interval(d: np.ndarray, labels: np.ndarray, alpha: float) -> list[float] | None:
    """CR1: V = G/(G−1) · Σ_g (Σ_{i∈g} (d_i − d̄))² / n², t with G − 1 df."""
    groups = np.unique(labels)
    if groups.size < 2:
        return None
    residual_sums = np.array([np.sum(d[labels == g] - d.mean()) for g in groups])
    g = groups.size
    variance = g / (g - 1) * np.sum(residual_sums**2) / d.size**2
    half = _t_quantile(g - 1, alpha) * np.sqrt(variance)
    return [float(d.mean() - half), float(d.mean() + half)]


def cell_effect(
    cell: CellInput,
    scale: tuple[float, float],
    options: ProbeStatsOptions,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """The effect block of one cell (without its q-value)."""
    d = np.asarray(cell.treated, dtype=float) - np.asarray(cell.baseline, dtype=float)
    n = int(d.size)
    block: dict[str, Any] = {
        "judge": cell.judge,
        "probe": cell.probe,
        "n": n,
        "skipped": dict(cell.skipped),
        "failed": dict(cell.failed),
        **_strata(cell.attributes, d),
    }
    if n == 0:
        return {**block, "mean_change": None, "p": None, "undefined": "no complete pair"}
    up, down = int(np.sum(d > 0)), int(np.sum(d < 0))
    mean = float(d.mean())
    span = scale[1] - scale[0]
    degenerate = n >= 2 and bool(np.all(d == d[0]))
    if options.cluster:
        labels = np.array([a.get(options.cluster, f"\0{i}") for i, a in enumerate(cell.attributes)])
        units = np.array([d[labels == g].sum() for g in np.unique(labels)])
        interval = None if degenerate else _cr1_interval(d, labels, options.alpha)
        block["clusters"] = int(units.size)
    elif degenerate:
        units, interval = d, _bounded_interval(mean, n, span, options.alpha)
    else:
        units, interval = d, _t_interval(d, options.alpha)
    p, exact = sign_flip_p(units, options.permutations, rng)
    flips = up + down
    if degenerate:
        block["degenerate"] = (
            f"all {n} paired changes are {mean:+g}: the t interval would have zero width"
            + ("; no interval under a cluster" if options.cluster else "; bounded interval")
        )
    block.update(
        mean_change=mean,
        mean_change_pp=100 * mean / span if span else None,
        ci=interval,
        ci_method=None if interval is None else ("bounded" if degenerate else "t"),
        few_changes=int(np.sum(units != 0)) < FEW_CHANGES,
        p=p,
        exact=exact,
        flip_rate=flips / n,
        flip_ci=list(clopper_pearson(flips, n, options.alpha)),
        flips_up=up,
        flips_down=down,
        sign_test_p=_sign_test(up, flips),
    )
    if interval is None:
        if not options.cluster:
            block["undefined"] = "an interval needs at least two complete pairs"
        elif block["clusters"] < 2:
            block["undefined"] = "the cluster-robust interval needs at least two clusters"
        else:
            block["undefined"] = "every change is equal: the cluster-robust interval has zero width"
    return block


def _bounded_interval(change: float, n: int, span: float, alpha: float) -> list[float]:
    """All n changes equal `change`: the share of such items is at least alpha^(1/n) (the
    one-sided Clopper-Pearson bound for n of n); the rest change by at most ±span."""
    share = alpha ** (1 / n)
    return [change * share - span * (1 - share), change * share + span * (1 - share)]


def _strata(attributes: Sequence[dict[str, str]], d: np.ndarray) -> dict[str, dict[str, Any]]:
    """Where in a calibration report the probe applied, per ATTR=VALUE: `strata` (complete
    pairs) and `strata_change` (their mean change), so a stratum's trust-map mark states the
    effect on its own items, not the run's overall effect."""
    changes: dict[str, list[float]] = {}
    for item, change in zip(attributes, d, strict=True):
        for key, value in item.items():
            if key not in ("probe", "probe_of"):
                changes.setdefault(f"{key}={value}", []).append(float(change))
    ordered = sorted(changes.items())
    return {
        "strata": {name: len(found) for name, found in ordered},
        "strata_change": {name: float(np.mean(found)) for name, found in ordered},
    }


def probe_effects(
    cells: Sequence[CellInput], scale: tuple[float, float], options: ProbeStatsOptions
) -> list[dict[str, Any]]:
    """Every cell's effect, with its q-value and decision across the whole family."""
    rng = np.random.default_rng(options.seed)
    blocks = [cell_effect(cell, scale, options, rng) for cell in cells]
    q_values = adjust([b["p"] for b in blocks], options.procedure)
    for block, q in zip(blocks, q_values, strict=True):
        block["q"] = q if block["p"] is not None else None
        block["moved"] = block["p"] is not None and q <= options.q
    return blocks


MARKS = (
    "a judge moved by a probe (BH over the run's judges × probes) is marked on its overall "
    "row with the run's mean change and q; on a stratum's row with the mean change of that "
    "stratum's items, when they moved the same way; the decision is the run's, not re-tested "
    "per stratum"
)


def mark(cell: dict[str, Any], stratum: str = "overall") -> str | None:
    """How a moved judge is marked on a trust-map row: 'verbosity +0.60 points, q = 0.01'
    overall; in a stratum, the effect on that stratum's items beside the decision, which is
    the run's ('verbosity +0.75 points here (n = 12); moved overall +0.54, q = 0.01'), and no
    mark where the stratum's items did not move that way. A run stored before per-stratum
    changes says its mark is the overall one."""
    overall = f"{cell['mean_change']:+.2f}"
    if stratum == "overall":
        return f"{cell['probe']} {overall} points, q = {cell['q']:.2g}"
    decided = f"moved overall {overall}, q = {cell['q']:.2g}"
    here = (cell.get("strata_change") or {}).get(stratum)
    if "strata_change" not in cell:
        return f"{cell['probe']} {decided} (no per-stratum change in this run)"
    if here is None or here * cell["mean_change"] <= 0:
        return None
    return f"{cell['probe']} {here:+.2f} points here (n = {cell['strata'][stratum]}); {decided}"


def trust_marks(
    probe_report: dict[str, Any], strata: Sequence[str]
) -> dict[tuple[str, str], list[str]]:
    """(stratum, judge) → marks of the probes that moved the judge: 'overall' takes every
    moved probe of the judge, a stratum those whose items in it moved the same way."""
    marks: dict[tuple[str, str], list[str]] = {}
    for cell in probe_report.get("cells", []):
        if not cell.get("moved"):
            continue
        for stratum in strata:
            if stratum != "overall" and stratum not in cell["strata"]:
                continue
            text = mark(cell, stratum)
            if text is not None:
                marks.setdefault((stratum, cell["judge"]), []).append(text)
    return marks


def mark_trust_rows(report: dict[str, Any], probe_report: dict[str, Any]) -> dict[str, Any]:
    """A calibration report's trust rows with `probes` (marks) on the rows of moved judges,
    and `probe_run` naming the run; rows without a mark are left as they were."""
    rows = report.get("trust", {}).get("rows", [])
    marks = trust_marks(probe_report, sorted({row["stratum"] for row in rows}))
    for row in rows:
        found = marks.get((row["stratum"], row["judge"]))
        if found:
            row["probes"] = found
    report["probe_run"] = {
        "id": probe_report.get("id"),
        "created_at": probe_report.get("created_at"),
        "rubric": probe_report.get("rubric"),
        "marks": MARKS,
        "moved": [
            f"{c['judge']}/{c['probe']}" for c in probe_report.get("cells", []) if c.get("moved")
        ],
    }
    return report
