"""Which interval each metric gets, and how: Student t on a linearised standard error for
means and shares (design-weighted where the labels carry a design), Fisher's z for the
correlations and agreement coefficients, BCa or percentile bootstrap where those cannot be
formed.

The rule (docs/statistics.md, "Metric intervals"), decided per judge and block from the
block's labelled units (calibration/blocks.py drops items no human scored):

- A share of (item, human) pairs (exact match, judge higher/lower, within ±1) gets the
  Korn–Graubard interval: Clopper–Pearson on the effective sample size p(1 − p)/SE² of its
  linearised (or CR1) SE, df-adjusted (`korn_graubard_interval`); the bootstrap-t it
  replaces covered 0.55 at a share of 0.99 with 30 items.
- A metric that is a ratio of item sums (MAD, signed error, and the shares' SE:
  `Metric.ratio`) has the linearised (delta-method) standard error of a ratio
  with ddof 1, or CR1 with `--cluster` (G/(G − 1), Cameron & Miller 2015, "A Practitioner's
  Guide to Cluster-Robust Inference", J. Human Resources 50(2), §II.C and §VI.C). Its
  interval is the studentized bootstrap (bootstrap-t: Efron & Tibshirani 1993, §12.5; Hall
  1988, "Theoretical comparison of bootstrap confidence intervals", Ann. Statist. 16(3))
  over at most `BCA_MAX_UNITS` resampled items — second-order accurate, and asymmetric
  where the metric is skewed (MAD at n = 10: a symmetric t interval covers 0.93) — joined
  with the t interval (never narrower than it); value ± t(units − 1) · SE above 500 items,
  with `--cluster`, or without resamples. With design weights (`inclusion_prob`) it is the
  Hájek ratio with the HC2/CR2 variance and Bell–McCaffrey df of `qadi estimate`
  (`hajek_interval`).
- Pearson's r: the studentized bootstrap on Fisher's z with each resample's delta-method SE
  (calibration/correlation.py), joined with z ± t(n − 1)·SE (`fisher_z_interval`); BCa
  covered 0.93 at n = 10–50.
- τ-b, ρ, κ and α: tanh(z ± t(U − 1)·SE_jack) on z = atanh(value), SE_jack the
  leave-one-unit-out jackknife SE (`jackknife_z_interval`; no resamples needed); BCa covered
  κ 0.89, α 0.92 and τ-b, ρ 0.944 at n = 10.
- Where those cannot be formed (a jackknife value at ±1, more than `BCA_MAX_UNITS` units,
  fewer than `MIN_CLUSTERS` clusters for the jackknife): the BCa bootstrap (Efron 1987,
  "Better Bootstrap Confidence Intervals", JASA 82(397); Efron & Tibshirani 1993, §14.3)
  up to `BCA_MAX_UNITS` units, the percentile interval above.
- With `--cluster`, fewer than `MIN_CLUSTERS` clusters give no interval (the reason is in
  the block's `no_interval`): CR1 with t(G − 1) and the cluster bootstrap both undercover badly
  there.

Every interval names its method in the report JSON (`ci_method`), and each block stores the
standard error of each metric (`se`) and its independent `units` (and a weighted metric its
`df`), so two reports can be compared by a two-sample test (`calibration.drift`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from calibration.agreement import AlphaFeatures, alpha
from calibration.bootstrap import (
    bca_interval,
    bootstrap_se,
    jackknife_weights,
    percentile_interval,
)
from calibration.ppi import classical_mean
from calibration.registry import Metric, Prepared

BCA_MAX_UNITS = 500
MIN_CLUSTERS = 5

METHODS: dict[str, str] = {
    "bootstrap_t": "studentized bootstrap: quantiles of (resampled value − value) / resampled "
    "linearised SE, times the linearised SE, joined with the t interval (ratio metrics, "
    "≤ 500 items)",
    "t": "value ± Student t(n − 1) × linearised standard error of the ratio (ddof 1)",
    "korn_graubard": "shares of (item, human) pairs: Clopper-Pearson on the effective sample "
    "size p(1 − p)/SE² of the linearised SE, df-adjusted (Korn & Graubard 1998)",
    "korn_graubard_cr1": "shares: Clopper-Pearson on the effective sample size p(1 − p)/SE² "
    "of the CR1 cluster-robust SE, df-adjusted to G − 1 (Korn & Graubard 1998)",
    "t_cr1": "value ± Student t(G − 1) × cluster-robust CR1 standard error (G clusters)",
    "t_hajek": "labels weighted by their design (1/inclusion probability, Hájek ratio); "
    "value ± Student t(ν) × HC2 standard error, ν the Bell-McCaffrey df",
    "t_hajek_cr2": "labels weighted by their design (Hájek ratio); value ± Student t(ν) × "
    "CR2 cluster-robust standard error, ν the Bell-McCaffrey df",
    "bootstrap_t_z": "Pearson r: studentized bootstrap on Fisher's z = atanh(r) with each "
    "resample's delta-method SE, joined with z ± t(n − 1)·SE, back through tanh (≤ 500 items)",
    "t_z": "Pearson r: tanh(z ± t(n − 1)·SE), z = atanh(r), SE the delta-method "
    "(nonparametric) SE of z",
    "jackknife_z": "τ-b, ρ, κ, α: tanh(z ± t(U − 1)·SE), z = atanh(value), SE the "
    "leave-one-unit-out jackknife SE of z over the U units (items, or clusters)",
    "bca": "bias-corrected and accelerated bootstrap over items (jackknife acceleration)",
    "bca_cluster": "bias-corrected and accelerated bootstrap over clusters",
    "percentile": "percentile bootstrap over items",
    "percentile_cluster": "percentile bootstrap over clusters",
}


@dataclass(frozen=True)
class Interval:
    """One metric's interval with its method, and the standard error the drift test reads."""

    ci: list[float] | None
    se: float | None
    method: str | None
    missing: str | None = None  # why there is no interval although the value exists
    df: float | None = None  # a design-weighted metric's Bell-McCaffrey df (else units − 1)


def units_of(present: np.ndarray, clusters: np.ndarray | None) -> int:
    """Independent units among the items in `present`: the items, or their clusters."""
    if clusters is None:
        return int(present.sum())
    return int(np.unique(clusters[present]).size)


def ratio_se(
    numerator: np.ndarray, denominator: np.ndarray, clusters: np.ndarray | None
) -> tuple[float | None, int]:
    """Linearised SE of Σa / Σb over items (ddof 1), or CR1 over clusters, and the units.

    e_i = a_i − r·b_i; Var = G/(G − 1) · Σ_g (Σ_{i∈g} e_i)² / (Σ b)². With one item per
    cluster this is s²/n of a mean, so ddof 1 and CR1 are one formula."""
    present = denominator > 0
    units = units_of(present, clusters)
    total = float(denominator.sum())
    if units < 2 or total <= 0:
        return None, units
    ratio = float(numerator.sum()) / total
    residual = np.where(present, numerator - ratio * denominator, 0.0)
    if clusters is not None:
        residual = np.bincount(clusters, weights=residual)
    variance = units / (units - 1) * float((residual**2).sum()) / total**2
    return float(np.sqrt(max(variance, 0.0))), units


def t_interval(
    value: float, se: float, df: float, confidence: float, bounds=None
) -> list[float]:
    """value ± t(df) · se, clipped to the metric's range when it has one."""
    half = float(special.stdtrit(df, (1 + confidence) / 2)) * se  # scipy's t.ppf, fast
    low, high = value - half, value + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return [low, high]


def too_few_clusters(units: int) -> str:
    return (
        f"{units} cluster(s), fewer than {MIN_CLUSTERS}: a cluster-robust interval is not "
        "reliable here"
    )


def bootstrap_method(units: int, clustered: bool) -> str:
    """BCa up to `BCA_MAX_UNITS` units, percentile above; `_cluster` when clusters resample."""
    name = "bca" if units <= BCA_MAX_UNITS else "percentile"
    return f"{name}_cluster" if clustered else name


def ratio_interval(
    metric: Metric,
    value: float,
    prepared: Prepared,
    clusters: np.ndarray | None,
    confidence: float,
    moments: np.ndarray | None = None,
) -> Interval:
    """The interval of a ratio metric from its linearised (or CR1) standard error: the
    bootstrap-t when resampled `moments` are given (small unclustered blocks), else t."""
    ratio = metric.ratio
    se, units = ratio_se(
        prepared.feature(ratio.numerator), prepared.feature(ratio.denominator), clusters
    )
    if clusters is not None and units < MIN_CLUSTERS:
        return Interval(None, None, None, too_few_clusters(units))
    if se is None:
        return Interval(None, None, None, f"{units} unit(s): no variance to estimate")
    factor = ratio.factor(prepared.inputs)
    se *= factor
    if ratio.denominator == "pairs":  # a share of (item, human) pairs
        pairs = float(prepared.feature("pairs").sum())
        ci = korn_graubard_interval(value, se, pairs, units, confidence)
        return Interval(ci, se, "korn_graubard" if clusters is None else "korn_graubard_cr1")
    t_ci = t_interval(value, se, units - 1, confidence, metric.bounds)
    if moments is not None and se > 0:
        pivots = studentized(moments, value / factor, units)
        ci = bootstrap_t_interval(pivots, value, se, confidence, metric.bounds)
        if ci is not None:  # never narrower than t: the bootstrap-t extends the skewed side
            return Interval([min(ci[0], t_ci[0]), max(ci[1], t_ci[1])], se, "bootstrap_t")
    return Interval(t_ci, se, "t" if clusters is None else "t_cr1")


def korn_graubard_interval(
    share: float, se: float, n: float, units: int, confidence: float
) -> list[float]:
    """Clopper–Pearson on the effective sample size of a share estimated from clustered
    pairs (Korn & Graubard 1998, Survey Methodology 24(2):193–201): n* = p(1 − p)/SE², at
    most n (and n when p is 0 or 1, where SE is 0), times (t_{n−1}/t_{units−1})² for the SE's
    degrees of freedom; x* = p·n*. It stays inside [0, 1] and keeps its coverage at shares
    near 0 or 1, where the studentized bootstrap's resamples have no spread (issue 41.5: a
    share of 0.987 got [0.000, 1.000], and at 0.99 with 30 items it covered 0.55)."""
    inside = 0 < share < 1 and se > 0
    effective = min(n, share * (1 - share) / se**2) if inside else n
    if units > 1 and n > 1:
        tail = (1 + confidence) / 2
        effective *= (stats.t.ppf(tail, n - 1) / stats.t.ppf(tail, units - 1)) ** 2
    x = share * effective
    alpha = 1 - confidence
    low = 0.0 if x <= 0 else float(stats.beta.ppf(alpha / 2, x, effective - x + 1))
    high = 1.0 if x >= effective else float(stats.beta.ppf(1 - alpha / 2, x + 1, effective - x))
    return [low, high]


def hajek_interval(
    metric: Metric,
    prepared: Prepared,
    weights: np.ndarray,
    clusters: np.ndarray | None,
    confidence: float,
) -> tuple[float | None, Interval]:
    """The design-weighted value of a ratio metric, Σ d·a / Σ d·b (Hájek), and its t
    interval: the weighted mean of a/b with weights d·b, its HC2 (CR2 with clusters)
    variance and Bell-McCaffrey df — `qadi estimate`'s human-only mean (calibration/ppi.py),
    so a report and an estimate over the same labels agree. `weights`: d per item."""
    ratio = metric.ratio
    a, b = prepared.feature(ratio.numerator), prepared.feature(ratio.denominator)
    present = (b > 0) & prepared.inputs.ok
    items = np.flatnonzero(present)
    units = units_of(present, clusters)
    mass = weights[items] * b[items]
    factor = ratio.factor(prepared.inputs)
    if items.size == 0 or mass.sum() <= 0:
        return None, Interval(None, None, None)
    fit = classical_mean(a[items] / b[items], items, mass)
    value = factor * fit.estimate
    if clusters is not None and units < MIN_CLUSTERS:
        return value, Interval(None, None, None, too_few_clusters(units))
    if units < 2:
        return value, Interval(None, None, None, f"{units} unit(s): no variance to estimate")
    se, df = factor * float(np.sqrt(fit.variance(clusters))), fit.df(clusters)
    if df <= 0:
        return value, Interval(None, se, None, "the design weights leave no degrees of freedom")
    method = "t_hajek" if clusters is None else "t_hajek_cr2"
    ci = t_interval(value, se, df, confidence, metric.bounds)
    return value, Interval(ci, se, method, df=df)


def studentized(moments: np.ndarray, ratio: float, units: int) -> np.ndarray:
    """T* = (r* − r) / SE* per resample, SE* the linearised SE on the resample itself, from
    the resampled sums of (a, b, a², ab, b²): Σ w (a − r* b)² = S_aa − 2r* S_ab + r*² S_bb."""
    a, b, aa, ab, bb = moments.T
    with np.errstate(divide="ignore", invalid="ignore"):
        resampled = a / b
        spread = np.clip(aa - 2 * resampled * ab + resampled**2 * bb, 0, None)
        se = np.sqrt(units / (units - 1) * spread) / b
        pivots = (resampled - ratio) / se
    # a resample without spread: ±inf on its side of the estimate, 0 on it
    side = np.sign(resampled - ratio)
    with np.errstate(invalid="ignore"):
        pivots = np.where(se > 0, pivots, np.where(side == 0, 0.0, side * np.inf))
    return pivots[np.isfinite(resampled)]


def bootstrap_t_interval(
    pivots: np.ndarray, value: float, se: float, confidence: float, bounds=None
) -> list[float] | None:
    """[θ − T*_(1−α/2)·SE, θ − T*_(α/2)·SE], an infinite end clipped to the metric's bound;
    None (fall back to t) when an end stays infinite."""
    if pivots.size == 0:
        return None
    quantiles = [(1 + confidence) / 2, (1 - confidence) / 2]
    upper_q, lower_q = np.quantile(pivots, quantiles, method="nearest")  # inf-safe
    low, high = value - upper_q * se, value - lower_q * se
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return [float(low), float(high)]


def _on_z(value: float) -> bool:
    """Fisher's z = atanh(value) is finite: a correlation-like value strictly inside ±1."""
    return bool(np.isfinite(value) and abs(value) < 1)


def fisher_z_interval(
    metric: Metric,
    value: float,
    prepared: Prepared,
    confidence: float,
    resampled: np.ndarray | None,
) -> Interval | None:
    """Pearson's r on Fisher's z with the delta-method SE (calibration/correlation.py):
    the studentized bootstrap on z from the resampled moment sums (`bootstrap_t_z`), joined
    with z ± t(n − 1)·SE, or that t interval alone without resamples (`t_z`); back through
    tanh. None when z or the SE is not finite (|r| = 1), for the bootstrap to decide."""
    moments = metric.moments
    point = moments.columns(prepared.inputs).sum(axis=0)[None, :]
    r, se_r = (float(v[0]) for v in moments.value_se(point))
    units = int(prepared.inputs.ok.sum())
    if not _on_z(r) or not np.isfinite(se_r) or se_r <= 0 or units < 3:
        return None
    z, se = float(np.arctanh(r)), se_r / (1 - r * r)
    low, high = t_interval(z, se, units - 1, confidence)
    method = "t_z"
    if resampled is not None:
        rs, ses = moments.value_se(resampled)
        keep = np.isfinite(rs) & (np.abs(rs) < 1) & np.isfinite(ses)
        zs = np.arctanh(rs[keep])
        with np.errstate(divide="ignore", invalid="ignore"):
            pivots = (zs - z) / (ses[keep] / (1 - rs[keep] ** 2))
        side = np.sign(zs - z)
        with np.errstate(invalid="ignore"):
            pivots = np.where(ses[keep] > 0, pivots, np.where(side == 0, 0.0, side * np.inf))
        ci = bootstrap_t_interval(pivots, z, se, confidence)
        if ci is not None:
            low, high, method = min(low, ci[0]), max(high, ci[1]), "bootstrap_t_z"
    # SE of r from the z interval's half-width: what the drift test would read
    return Interval([float(np.tanh(low)), float(np.tanh(high))], se_r, method)


def jackknife_z_interval(
    value: float, jackknife: np.ndarray | None, units: int, confidence: float
) -> Interval | None:
    """τ-b, ρ, κ and α: tanh(z ± t(U − 1)·SE_jack(z)), z = atanh(value), SE_jack the
    leave-one-unit-out jackknife SE of z over the U units holding the judge's items (Efron &
    Tibshirani 1993, §11.2; Fisher's transformation makes the statistic near-normal). None
    when the jackknife is missing or leaves ±1 (for the bootstrap to decide)."""
    if jackknife is None or units < 3 or jackknife.size != units or not _on_z(value):
        return None
    if not all(_on_z(v) for v in jackknife):
        return None
    zs = np.arctanh(jackknife)
    se_z = float(np.sqrt((units - 1) / units * np.sum((zs - zs.mean()) ** 2)))
    if se_z <= 0:
        return None
    z = float(np.arctanh(value))
    low, high = t_interval(z, se_z, units - 1, confidence)
    return Interval([float(np.tanh(low)), float(np.tanh(high))], se_z * (1 - value**2),
                    "jackknife_z")  # fmt: skip


def bootstrap_interval(
    samples: np.ndarray | None,
    point: float,
    jackknife: np.ndarray | None,
    units: int,
    clustered: bool,
    confidence: float,
) -> Interval:
    """BCa up to `BCA_MAX_UNITS` units (percentile if the jackknife cannot define it, e.g. a
    left-out unit makes the metric undefined), percentile above; None without resamples."""
    if samples is None:
        return Interval(None, None, None)  # --bootstrap 0: no interval was asked for
    if clustered and units < MIN_CLUSTERS:
        return Interval(None, None, None, too_few_clusters(units))
    se = bootstrap_se(samples)
    method = bootstrap_method(units, clustered)
    ci = None
    if method.startswith("bca") and jackknife is not None:
        ci = bca_interval(samples, point, jackknife, confidence)
    if ci is None:
        method = method.replace("bca", "percentile")
        ci = percentile_interval(samples, confidence)
    if ci is None:
        return Interval(None, se, None, "no resample defines this metric")
    return Interval(ci, se, method)


def alpha_interval(
    feats: AlphaFeatures,
    point: float,
    samples: np.ndarray | None,
    codes: np.ndarray,
    pairable: np.ndarray,
    clustered: bool,
    confidence: float,
) -> Interval:
    """Krippendorff's α among raters by the rule of every agreement coefficient, so the
    humans' α of a report and the SMEs' α of the workbench are one number on one set of
    labels: the jackknife on Fisher's z over the units holding pairable items (at least
    `MIN_CLUSTERS` clusters), BCa or percentile bootstrap from the resampled `samples` where
    it cannot be formed. `codes`: each item's unit (itself, or its cluster)."""
    left_out = np.unique(codes[pairable])
    units = int(left_out.size)
    jack = None
    if 0 < units <= BCA_MAX_UNITS:
        jack = np.concatenate([alpha(w, feats) for w in jackknife_weights(codes, left_out)])
    found = None
    if not clustered or units >= MIN_CLUSTERS:
        found = jackknife_z_interval(point, jack, units, confidence)
    if found is not None:
        return found
    return bootstrap_interval(samples, point, jack, units, clustered, confidence)
