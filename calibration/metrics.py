"""Judge-versus-human metrics, written once for a batch of item weights.

Every metric is a function of per-item features summed with weights: the point estimate
uses weight 1 per item, a bootstrap resample uses how often each item was drawn. So one
matrix product `weights @ features` gives all resamples at once (no Python loop per
resample), and rank statistics come from weighted contingency tables because scores live
on a small grid of levels.

Definitions (DESIGN.md): ref_i = reference score of item i (mean of its human scores by
default); R = scale max - min. mad = mean |J_i - ref_i|; signed_error = mean (J_i - ref_i);
exact_match / judge_higher / judge_lower / within_one over (item, human) pairs; Kendall
tau-b, Spearman rho and Pearson r between J_i and ref_i (scipy's definitions, ties by
midranks); Krippendorff's alpha with humans plus the judge as coders, and humans alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

METRICS = (
    "n",
    "mad",
    "mad_pp",
    "signed_error",
    "signed_error_pp",
    "exact_match",
    "judge_higher",
    "judge_lower",
    "within_one",
    "kendall_tau",
    "spearman_rho",
    "pearson_r",
    "krippendorff_alpha",
    "human_alpha",
)
TOLERANCE = 1e-9
MAX_ORDINAL_VALUES = 40


@dataclass
class Features:
    """Per-item quantities of one judge, ready to be summed with any weights."""

    dense: np.ndarray  # (n_items, len(DENSE))
    table: sparse.csr_matrix  # (n_items, Lx*Ly) one-hot of (judge level, reference level)
    lx: int
    ly: int
    judge_alpha: AlphaFeatures
    human_alpha: AlphaFeatures


DENSE = (
    "count",
    "abs_diff",
    "diff",
    "pairs",
    "equal",
    "higher",
    "lower",
    "within1",
    "x",
    "y",
    "xx",
    "yy",
    "xy",
)
COL = {name: i for i, name in enumerate(DENSE)}


@dataclass
class AlphaFeatures:
    """Per-unit sums for Krippendorff's alpha.

    interval: columns (pairable count m, Σv, Σv², within-unit Σ_{i≠j}(v_i-v_j)²/(m-1));
    ordinal: the unit's coincidence matrix, flattened, over the value codes.
    """

    level: str
    data: sparse.csr_matrix | np.ndarray
    values: np.ndarray


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


def _codes(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    return np.searchsorted(levels, np.round(values, 9))


def judge_features(
    judge: np.ndarray, ref: np.ndarray, human: np.ndarray, level: str, values: np.ndarray
) -> Features:
    n = len(judge)
    ok = ~np.isnan(judge) & ~np.isnan(ref)
    x = np.where(ok, judge, 0.0)
    y = np.where(ok, ref, 0.0)
    pair = ok[:, None] & ~np.isnan(human)
    gap = np.where(pair, x[:, None] - np.nan_to_num(human), 0.0)
    dense = np.zeros((n, len(DENSE)))
    dense[:, COL["count"]] = ok
    dense[:, COL["abs_diff"]] = np.abs(x - y)
    dense[:, COL["diff"]] = x - y
    dense[:, COL["pairs"]] = pair.sum(1)
    dense[:, COL["equal"]] = (pair & (np.abs(gap) <= TOLERANCE)).sum(1)
    dense[:, COL["higher"]] = (pair & (gap > TOLERANCE)).sum(1)
    dense[:, COL["lower"]] = (pair & (gap < -TOLERANCE)).sum(1)
    dense[:, COL["within1"]] = (pair & (np.abs(gap) <= 1 + TOLERANCE)).sum(1)
    dense[:, COL["x"]] = x
    dense[:, COL["y"]] = y
    dense[:, COL["xx"]] = x * x
    dense[:, COL["yy"]] = y * y
    dense[:, COL["xy"]] = x * y
    xs = np.unique(np.round(judge[ok], 9))
    ys = np.unique(np.round(ref[ok], 9))
    lx, ly = max(len(xs), 1), max(len(ys), 1)
    rows = np.flatnonzero(ok)
    cells = _codes(judge[ok], xs) * ly + _codes(ref[ok], ys)
    table = sparse.csr_matrix((np.ones(len(rows)), (rows, cells)), shape=(n, lx * ly))
    with_judge = np.where(ok[:, None], np.column_stack([human, judge]), np.nan)
    humans_only = np.where(ok[:, None], human, np.nan)
    return Features(
        dense=dense,
        table=table,
        lx=lx,
        ly=ly,
        judge_alpha=alpha_features(with_judge, level, values),
        human_alpha=alpha_features(humans_only, level, values),
    )


def alpha_features(ratings: np.ndarray, level: str, values: np.ndarray) -> AlphaFeatures:
    """Per-unit alpha sums from an (units × coders) matrix with NaN for missing ratings."""
    present = ~np.isnan(ratings)
    m = present.sum(1).astype(float)
    pairable = m >= 2
    if level == "interval":
        v = np.where(present & pairable[:, None], ratings, 0.0)
        mm = np.where(pairable, m, 0.0)
        s1, s2 = v.sum(1), (v * v).sum(1)
        within = np.where(pairable, 2 * (mm * s2 - s1 * s1) / np.maximum(mm - 1, 1), 0.0)
        return AlphaFeatures(level, np.column_stack([mm, s1, s2, within]), values)
    if len(values) > MAX_ORDINAL_VALUES:
        raise ValueError(
            f"level: {len(values)} distinct scores is too many for an ordinal scale; "
            "use --level interval"
        )
    nv = len(values)
    counts = np.zeros((len(ratings), nv))
    units, coders = np.nonzero(present & pairable[:, None])
    np.add.at(counts, (units, _codes(ratings[units, coders], values)), 1.0)
    per_unit = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(nv)
    per_unit[:, idx, idx] -= counts
    per_unit /= np.maximum(m - 1, 1)[:, None, None]
    per_unit[~pairable] = 0.0
    return AlphaFeatures(level, sparse.csr_matrix(per_unit.reshape(len(ratings), nv * nv)), values)


def weighted_sums(weights: np.ndarray, matrix) -> np.ndarray:
    """weights (B, n) @ matrix (n, k) for dense or sparse matrices -> (B, k)."""
    if sparse.issparse(matrix):
        return np.asarray((matrix.T @ weights.T).T)
    return weights @ matrix


def metric_batch(
    weights: np.ndarray, feats: Features, scale_range: float, ordinal: bool
) -> dict[str, np.ndarray]:
    """Every metric of one judge for each row of `weights` (B resamples or one point)."""
    s = weighted_sums(weights, feats.dense)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = s[:, COL["count"]]
        mad = s[:, COL["abs_diff"]] / n
        signed = s[:, COL["diff"]] / n
        pairs = s[:, COL["pairs"]]
        out = {
            "n": n,
            "mad": mad,
            "mad_pp": 100 * mad / scale_range,
            "signed_error": signed,
            "signed_error_pp": 100 * signed / scale_range,
            "exact_match": s[:, COL["equal"]] / pairs,
            "judge_higher": s[:, COL["higher"]] / pairs,
            "judge_lower": s[:, COL["lower"]] / pairs,
            "within_one": s[:, COL["within1"]] / pairs if ordinal else np.full(len(n), np.nan),
            "pearson_r": _pearson(s, n),
        }
    tables = weighted_sums(weights, feats.table).reshape(-1, feats.lx, feats.ly)
    out["kendall_tau"] = kendall_tau_b(tables)
    out["spearman_rho"] = spearman_rho(tables)
    out["krippendorff_alpha"] = alpha(weights, feats.judge_alpha)
    out["human_alpha"] = alpha(weights, feats.human_alpha)
    return out


def _pearson(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    mx, my = s[:, COL["x"]] / n, s[:, COL["y"]] / n
    cov = s[:, COL["xy"]] / n - mx * my
    vx = s[:, COL["xx"]] / n - mx * mx
    vy = s[:, COL["yy"]] / n - my * my
    scale = np.sqrt(np.clip(vx, 0, None) * np.clip(vy, 0, None))
    return np.where(scale > TOLERANCE * np.maximum(np.abs(mx * my), 1), cov / scale, np.nan)


def kendall_tau_b(tables: np.ndarray) -> np.ndarray:
    """Tau-b from weighted contingency tables (B, Lx, Ly) with levels in ascending order."""
    b, lx, ly = tables.shape
    total = tables.sum((1, 2))
    # both-greater: sum over k > i, l > j
    ge = tables[:, ::-1, ::-1].cumsum(1).cumsum(2)[:, ::-1, ::-1]
    greater = np.zeros_like(tables)
    greater[:, :-1, :-1] = ge[:, 1:, 1:]
    # discordant partner: k > i, l < j
    gl = tables[:, ::-1, :].cumsum(1)[:, ::-1, :].cumsum(2)
    lesser = np.zeros_like(tables)
    lesser[:, :-1, 1:] = gl[:, 1:, :-1]
    concordant = (tables * greater).sum((1, 2))
    discordant = (tables * lesser).sum((1, 2))
    rows, cols = tables.sum(2), tables.sum(1)
    n0 = total * (total - 1) / 2
    n1 = (rows * (rows - 1) / 2).sum(1)
    n2 = (cols * (cols - 1) / 2).sum(1)
    denominator = np.sqrt(np.clip((n0 - n1) * (n0 - n2), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (concordant - discordant) / denominator, np.nan)


def spearman_rho(tables: np.ndarray) -> np.ndarray:
    """Spearman's rho as the Pearson correlation of midranks, from contingency tables."""
    total = tables.sum((1, 2))
    rows, cols = tables.sum(2), tables.sum(1)
    rank_x = np.cumsum(rows, 1) - rows + (rows + 1) / 2
    rank_y = np.cumsum(cols, 1) - cols + (cols + 1) / 2
    mean = ((total + 1) / 2)[:, None]
    dx, dy = rank_x - mean, rank_y - mean
    cov = np.einsum("bij,bi,bj->b", tables, dx, dy)
    var = (rows * dx * dx).sum(1) * (cols * dy * dy).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 0, cov / np.sqrt(var), np.nan)


def alpha(weights: np.ndarray, feats: AlphaFeatures) -> np.ndarray:
    """Krippendorff's alpha = 1 - (N - 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck per weight row."""
    sums = weighted_sums(weights, feats.data)
    with np.errstate(divide="ignore", invalid="ignore"):
        if feats.level == "interval":
            total, s1, s2, within = sums.T
            expected = 2 * (total * s2 - s1 * s1)
            result = 1 - (total - 1) * within / expected
            return np.where(expected > TOLERANCE, result, np.nan)
        nv = len(feats.values)
        coincidence = sums.reshape(-1, nv, nv)
        marginals = coincidence.sum(2)
        total = marginals.sum(1)
        delta = _ordinal_delta(marginals)
        observed = (coincidence * delta).sum((1, 2))
        expected = np.einsum("bc,bk,bck->b", marginals, marginals, delta)
        result = 1 - (total - 1) * observed / expected
        return np.where(expected > TOLERANCE, result, np.nan)


def _ordinal_delta(marginals: np.ndarray) -> np.ndarray:
    """δ²(c, k) = (Σ_{g=c..k} n_g - (n_c + n_k) / 2)² for each row of marginals."""
    cum = np.cumsum(marginals, 1)
    before = cum - marginals
    upper = cum[:, None, :] - before[:, :, None]  # Σ n_g for g from c to k, valid for c <= k
    index = np.arange(marginals.shape[1])
    span = np.where(index[:, None] <= index[None, :], upper, np.swapaxes(upper, 1, 2))
    delta = span - (marginals[:, :, None] + marginals[:, None, :]) / 2
    return delta * delta
