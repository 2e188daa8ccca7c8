"""Agreement statistics from weighted tables, for a batch of item weights at once.

Each function takes sums over items already weighted by a resample's draw counts (a row
per resample), so the bootstrap is a matrix product, not a loop: rank correlations from
contingency tables of (judge level, reference level), Krippendorff's alpha from per-unit
coincidence matrices (ordinal), value counts and the coincidence diagonal (nominal) or moment
sums (interval), Cohen's kappa from per-human agreement counts and the two raters' label
counts. Every nominal feature grows linearly with the number of labels L (never L × L per
item), and more than `MAX_NOMINAL_LABELS` labels are refused with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

TOLERANCE = 1e-9
MAX_ORDINAL_VALUES = 40
MAX_NOMINAL_LABELS = 5000  # beyond it the per-resample label counts alone take gigabytes
CONFUSION_MAX_VALUES = 40  # kappa_features: L × L confusion blocks up to here, 3L columns above


@dataclass
class AlphaFeatures:
    """Per-unit sums for Krippendorff's alpha.

    interval: columns (pairable count m, Σv, Σv², within-unit Σ_{i≠j}(v_i-v_j)²/(m-1));
    nominal: columns (Σ_c n_uc(n_uc − 1)/(m − 1), the coincidence diagonal; n_u0 … n_u(L−1),
    the unit's value counts), since nominal δ needs only the diagonal and the marginals;
    ordinal: the unit's coincidence matrix, flattened, over the value codes.
    """

    level: str
    data: sparse.csr_matrix | np.ndarray
    values: np.ndarray


def codes(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Index of each value in the sorted grid `levels` (values rounded as the grid is)."""
    return np.searchsorted(levels, np.round(values, 9))


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
    if level == "ordinal" and len(values) > MAX_ORDINAL_VALUES:
        raise ValueError(
            f"level: {len(values)} distinct scores is too many for an ordinal scale; "
            "use --level interval"
        )
    check_labels(len(values))
    nv = len(values)
    units, coders = np.nonzero(present & pairable[:, None])
    cells = codes(ratings[units, coders], values)
    counts = sparse.csr_matrix(
        (np.ones(len(units)), (units, cells)), shape=(len(ratings), nv)
    )  # duplicates summed: n_uc
    if level == "nominal":
        squares = np.asarray(counts.multiply(counts).sum(1)).ravel()
        diagonal = (squares - m * pairable) / np.maximum(m - 1, 1)
        return AlphaFeatures(level, sparse.hstack([diagonal[:, None], counts]).tocsr(), values)
    counts = counts.toarray()
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
    """Krippendorff's alpha for each weight row."""
    return alpha_from_sums(weighted_sums(weights, feats.data), feats.level, len(feats.values))


def alpha_from_sums(sums: np.ndarray, level: str, n_values: int) -> np.ndarray:
    """alpha = 1 - (N - 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck from weighted per-unit sums."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if level == "interval":
            total, s1, s2, within = sums.T
            expected = 2 * (total * s2 - s1 * s1)
            result = 1 - (total - 1) * within / expected
            return np.where(expected > TOLERANCE, result, np.nan)
        if level == "nominal":  # δ = 1 off the diagonal: Σ o δ = N − Σ o_cc, Σ n n δ = N² − Σ n²
            marginals = sums[:, 1:]
            total = marginals.sum(1)
            observed = total - sums[:, 0]
            expected = total * total - (marginals * marginals).sum(1)
        else:
            coincidence = sums.reshape(len(sums), n_values, n_values)
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


def check_labels(n_labels: int) -> None:
    """Refuse a label set too large for agreement statistics (free text is not a label)."""
    if n_labels > MAX_NOMINAL_LABELS:
        raise ValueError(
            f"level: {n_labels} distinct labels, more than {MAX_NOMINAL_LABELS}: agreement "
            "statistics over so many labels would not fit in memory; group the labels "
            "(free text is not a label)"
        )


def kappa_features(
    judge_codes: np.ndarray, human_codes: np.ndarray, n_values: int
) -> sparse.csr_matrix:
    """Per human h, the counts whose weighted sums give h's Cohen's κ with the judge: an
    (items × m·width) matrix, one block per human. Up to `CONFUSION_MAX_VALUES` labels the
    block is the L × L confusion matrix (one entry per item and human: the cheapest product);
    above, 3L columns — the judge's label, then the human's label split by agreement — so the
    width grows with L, not L². NaN = missing."""
    items, raters = np.nonzero(~np.isnan(human_codes) & ~np.isnan(judge_codes)[:, None])
    judge = judge_codes[items].astype(int)
    human = human_codes[items, raters].astype(int)
    if n_values <= CONFUSION_MAX_VALUES:
        width = n_values * n_values
        rows, cols = items, raters * width + judge * n_values + human
    else:
        width = 3 * n_values
        base = raters * width
        rows = np.concatenate([items, items])
        split = np.where(judge == human, 2 * n_values, n_values)
        cols = np.concatenate([base + judge, base + split + human])
    shape = (len(judge_codes), human_codes.shape[1] * width)
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)


def mean_cohen_kappa(sums: np.ndarray, n_values: int) -> np.ndarray:
    """Mean over humans of Cohen's κ = (p_o − p_e) / (1 − p_e), from (B, m, width) sums of
    `kappa_features`; a human whose κ is undefined (no shared items, p_e = 1) is left out."""
    size = n_values
    if sums.shape[2] == size * size:
        confusion = sums.reshape(*sums.shape[:2], size, size)
        agree = np.trace(confusion, axis1=2, axis2=3)
        judge, human = confusion.sum(3), confusion.sum(2)
    else:
        judge = sums[:, :, :size]
        human = sums[:, :, size : 2 * size] + sums[:, :, 2 * size :]
        agree = sums[:, :, 2 * size :].sum(2)
    total = judge.sum(2)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = agree / total
        chance = (judge * human).sum(2) / (total * total)
        kappa = np.where(1 - chance > TOLERANCE, (observed - chance) / (1 - chance), np.nan)
    defined = np.isfinite(kappa)
    count = defined.sum(1)
    return np.where(count > 0, np.where(defined, kappa, 0).sum(1) / np.maximum(count, 1), np.nan)
