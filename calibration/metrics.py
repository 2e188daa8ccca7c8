"""Judge-versus-human metrics, one registered unit each (see `calibration.registry`).

Definitions (DESIGN.md "Calibration metrics"): ref_i = reference score of item i (mean of
its human scores by default); R = scale max - min. mad = mean |J_i - ref_i|; signed_error =
mean (J_i - ref_i); exact_match / judge_higher / judge_lower / within_one over (item, human)
pairs; Kendall tau-b, Spearman rho and Pearson r between J_i and ref_i (scipy's definitions,
ties by midranks); Krippendorff's alpha with humans plus the judge as coders, and humans
alone; cohen_kappa = mean over humans of Cohen's kappa between the judge and that human on
their shared items. With level nominal the scores are label codes: only n, exact_match,
cohen_kappa and the alphas apply.

To add a metric: write its features (if new) and one `Metric(...)` in `METRIC_UNITS`.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from calibration.agreement import (
    TOLERANCE,
    alpha_features,
    alpha_from_sums,
    codes,
    kappa_features,
    kendall_tau_b,
    mean_cohen_kappa,
    spearman_rho,
)
from calibration.correlation import moment_columns, pearson_with_se
from calibration.registry import Feature, JudgeInputs, Metric, Moments, Ratio

NUMERIC = frozenset({"ordinal", "interval"})
LABELS = frozenset({"nominal", "ordinal"})
NOT_FOR_LABELS = "a numeric metric; nominal labels have no order or distance"
MAX_RANK_CELLS = 100_000  # (judge levels × reference levels): 0-100 scores × means of 3 fit


def reference_scores(human: np.ndarray, reference: str, humans: list[str]) -> np.ndarray:
    """ref_i: mean (default) or median of an item's human scores, or one named rater's."""
    if reference == "mean":
        counts = (~np.isnan(human)).sum(axis=1)
        total = np.nansum(human, axis=1)
        return np.where(counts > 0, total / np.maximum(counts, 1), np.nan)
    if reference == "median":
        out = np.full(human.shape[0], np.nan)
        has = (~np.isnan(human)).any(axis=1)
        out[has] = np.nanmedian(human[has], axis=1)
        return out
    if reference not in humans:
        raise ValueError(f"reference: '{reference}' is not mean, median or a human rater {humans}")
    return human[:, humans.index(reference)].copy()


def _x(d: JudgeInputs) -> np.ndarray:
    return np.where(d.ok, d.judge, 0.0)


def _y(d: JudgeInputs) -> np.ndarray:
    return np.where(d.ok, d.ref, 0.0)


def _gap(d: JudgeInputs) -> np.ndarray:
    return np.where(d.pair, _x(d)[:, None] - np.nan_to_num(d.human), 0.0)


def _pairs_where(test):
    return lambda d: (d.pair & test(_gap(d))).sum(1)


def _too_many_pairs(d: JudgeInputs) -> bool:
    xs, ys = d.rank_levels
    return len(xs) * len(ys) > MAX_RANK_CELLS


def _rank_table(d: JudgeInputs):
    """One-hot of (judge level, reference level) per item, for the rank correlations; empty
    when there are too many distinct pairs for a table per resample (the metric is null)."""
    if _too_many_pairs(d):
        return sparse.csr_matrix((len(d.ok), 1))
    xs, ys = d.rank_levels
    lx, ly = max(len(xs), 1), max(len(ys), 1)
    rows = np.flatnonzero(d.ok)
    cells = codes(d.judge[d.ok], xs) * ly + codes(d.ref[d.ok], ys)
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cells)), shape=(len(d.ok), lx * ly))


def _rank_metric(statistic):
    """A rank correlation from the weighted contingency tables; NaN without a table."""

    def value(sums: dict[str, np.ndarray], d: JudgeInputs) -> np.ndarray:
        if _too_many_pairs(d):
            return np.full(len(sums["rank_table"]), np.nan)
        xs, ys = d.rank_levels
        return statistic(sums["rank_table"].reshape(-1, max(len(xs), 1), max(len(ys), 1)))

    return value


def _judge_alpha(d: JudgeInputs):
    with_judge = np.where(d.ok[:, None], np.column_stack([d.human, d.judge]), np.nan)
    return alpha_features(with_judge, d.level, d.values).data


def _human_alpha(d: JudgeInputs):
    return alpha_features(np.where(d.ok[:, None], d.human, np.nan), d.level, d.values).data


def _kappa_counts(d: JudgeInputs):
    judge = np.where(d.ok, codes(np.nan_to_num(d.judge), d.values), np.nan)
    human = np.where(d.pair, codes(np.nan_to_num(d.human), d.values), np.nan)
    return kappa_features(judge, human, len(d.values))


FEATURES: dict[str, Feature] = {
    "count": Feature(lambda d: d.ok.astype(float)),
    "abs_diff": Feature(lambda d: np.abs(_x(d) - _y(d))),
    "diff": Feature(lambda d: _x(d) - _y(d)),
    "pairs": Feature(lambda d: d.pair.sum(1)),
    "equal": Feature(_pairs_where(lambda g: np.abs(g) <= TOLERANCE)),
    "higher": Feature(_pairs_where(lambda g: g > TOLERANCE)),
    "lower": Feature(_pairs_where(lambda g: g < -TOLERANCE)),
    "within1": Feature(_pairs_where(lambda g: np.abs(g) <= 1 + TOLERANCE)),
    "x": Feature(_x),
    "y": Feature(_y),
    "xx": Feature(lambda d: _x(d) ** 2),
    "yy": Feature(lambda d: _y(d) ** 2),
    "xy": Feature(lambda d: _x(d) * _y(d)),
    "rank_table": Feature(_rank_table, vector=False),
    "judge_alpha": Feature(_judge_alpha, vector=False),
    "human_alpha": Feature(_human_alpha, vector=False),
    "kappa_counts": Feature(_kappa_counts, vector=False),
}


def _pearson(s: dict[str, np.ndarray], _: JudgeInputs) -> np.ndarray:
    n = s["count"]
    mx, my = s["x"] / n, s["y"] / n
    cov = s["xy"] / n - mx * my
    vx = s["xx"] / n - mx * mx
    vy = s["yy"] / n - my * my
    scale = np.sqrt(np.clip(vx, 0, None) * np.clip(vy, 0, None))
    return np.where(scale > TOLERANCE * np.maximum(np.abs(mx * my), 1), cov / scale, np.nan)


def _correlation_reason(d: JudgeInputs) -> str:
    if d.ok.sum() < 2:
        return "fewer than two items"
    if _too_many_pairs(d):
        xs, ys = d.rank_levels
        return (
            f"{len(xs)} × {len(ys)} distinct (judge, reference) scores: too many for the "
            f"rank-table bootstrap (at most {MAX_RANK_CELLS:,}); round the scores"
        )
    if np.ptp(d.judge[d.ok]) == 0:
        return "the judge's scores are constant"
    return "the reference scores are constant"


def human_alpha_reason(human: np.ndarray) -> str:
    if human.size == 0 or (~np.isnan(human)).sum(1).max(initial=0) < 2:
        return "fewer than two human ratings on every item"
    return "no variation among the human ratings (expected disagreement is 0)"


def _numeric(name: str, needs: tuple[str, ...] = (), value=None, **extra) -> Metric:
    """A metric of score differences or correlations: null for nominal labels."""
    return Metric(name, value, needs, levels=NUMERIC, inapplicable=NOT_FOR_LABELS, **extra)


def _share(column: str) -> dict:
    """A share of (item, human) pairs: a ratio of item sums, between 0 and 1."""
    return {"ratio": Ratio(column, "pairs"), "bounds": (0.0, 1.0)}


def _percent_of_scale(d: JudgeInputs) -> float:
    return 100 / d.scale_range


POSITIVE = (0.0, float("inf"))


METRIC_UNITS: tuple[Metric, ...] = (
    Metric("n", lambda s, _: s["count"], ("count",)),
    _numeric("mad", ratio=Ratio("abs_diff", "count"), bounds=POSITIVE),
    _numeric("mad_pp", ratio=Ratio("abs_diff", "count", _percent_of_scale), bounds=POSITIVE),
    _numeric("signed_error", ratio=Ratio("diff", "count")),
    _numeric("signed_error_pp", ratio=Ratio("diff", "count", _percent_of_scale)),
    Metric("exact_match", **_share("equal")),
    _numeric("judge_higher", **_share("higher")),
    _numeric("judge_lower", **_share("lower")),
    Metric(
        "within_one",
        **_share("within1"),
        levels=frozenset({"ordinal"}),
        inapplicable="within_one is defined for ordinal scales only",
    ),
    _numeric(
        "kendall_tau",
        ("rank_table",),
        _rank_metric(kendall_tau_b),
        undefined=_correlation_reason,
        jackknife_z=True,
    ),
    _numeric(
        "spearman_rho",
        ("rank_table",),
        _rank_metric(spearman_rho),
        undefined=_correlation_reason,
        jackknife_z=True,
    ),
    _numeric(
        "pearson_r",
        ("count", "x", "y", "xx", "yy", "xy"),
        _pearson,
        undefined=_correlation_reason,
        moments=Moments(moment_columns, pearson_with_se),
    ),
    Metric(
        "cohen_kappa",
        lambda s, d: mean_cohen_kappa(
            s["kappa_counts"].reshape(len(s["kappa_counts"]), d.human.shape[1], -1), len(d.values)
        ),
        ("kappa_counts",),
        levels=LABELS,
        inapplicable="Cohen's kappa compares labels; an interval scale has none",
        undefined=lambda _: "chance agreement is 1 for every human (a single label in use)",
        jackknife_z=True,
    ),
    Metric(
        "krippendorff_alpha",
        lambda s, d: alpha_from_sums(s["judge_alpha"], d.level, len(d.values)),
        ("judge_alpha",),
        jackknife_z=True,
    ),
    Metric(
        "human_alpha",
        lambda s, d: alpha_from_sums(s["human_alpha"], d.level, len(d.values)),
        ("human_alpha",),
        undefined=lambda d: human_alpha_reason(d.human[d.ok]),
        jackknife_z=True,
    ),
)
METRICS = tuple(m.name for m in METRIC_UNITS)
