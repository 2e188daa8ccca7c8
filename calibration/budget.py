"""The SME label budget: how many more human labels make the interval's half-width at most
H *with a stated probability q* (default 0.8), with the judge (PPI++) and without it (the
human mean alone).

Model (docs/statistics.md, "Label budget"). The next m labels go to items the judge already
graded, drawn uniformly at random (as `qadi sme queue` does inside a stratum): n becomes
n + m, N becomes N − m, λ is re-tuned by PPI++'s rule and the moments are today's
(Var(Y), Var(f), Cov(Y, f) on the labels, Var(f) on all judged items). In the form of
calibration/ppi.py the PPI variance after m more labels is

    V(m) = σ²_r / (n + m) · D_r(m) · κ_q(m)  +  λ'² Var(f) / M · D_f  +  2 λ' Cov(r, f) / M

with r = Y − λ' f the rectified label, λ' = (1 + n/N) λ (= Cov(Y, f) / Var(f) until λ is
clipped at 1), M the judged items: the labels' part shrinks with m, the judge's mean over all
judged items is a floor no number of labels goes below. Three things make the future
half-width t_{ν'} √V' larger than a plug-in of today's moments, and the model carries each:

1. κ_q: the future variance estimate is random. With normal residuals and ν labelled degrees
   of freedom today, the residual variance after m more labels is s'² = (ν s² + σ² χ²_m) /
   (ν + m), χ²_m independent of s² (Cochran's theorem), so P(s'² ≤ s² (ν + m F_{q; m, ν}) /
   (ν + m)) = q exactly: the F pivot of a prediction bound for the variance of a future sample
   (Hahn, Meeker & Escobar 2017, "Statistical Intervals", 2nd ed., §4.6). κ_q is that factor.
2. The t quantile takes the future degrees of freedom, not today's.
3. D_r(m), with `--cluster`: labels pile up in clusters as they grow, and the labelled part's
   design effect is 1 + (b − 1) ρ (Kish 1965, "Survey Sampling", §5.4), b = Σ n_c² / n, whose
   expectation the model grows with m (uniform draws from the unlabelled items); ρ is the
   residuals' intra-cluster correlation, estimated from today's design effect when the labels
   hold at least MIN_PAIRS within-cluster pairs, and otherwise taken from the judge's scores
   over all judged items (the judge sees every item of a cluster; its correlation is at least
   the residual's whenever the judge tracks the truth's cluster effect, so the budget errs
   toward more labels). D_f, the judge mean's design effect, is today's. The df grow with the
   expected number of clusters holding labels, not with m.

Today's interval anchors the curve: the model's V and df at m = 0 are scaled to the reported
ones, so `halfwidth` is the reported half-width exactly. Without the judge the human mean may
need more labels than there are judged items; beyond them the model extrapolates with the
last design effect. A judge that saves less than 10% of the labels the human mean needs is
flagged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from calibration.ppi import MeanEstimate

WEAK_SAVING = 0.10
MIN_PAIRS = 20  # within-cluster label pairs below which ρ comes from the judge's scores
SEARCH_LIMIT = 10_000_000  # labels; beyond this the human-only budget says "not reachable"


@dataclass(frozen=True)
class Anchors:
    """Today's reported variance of each part, and the df: the curves start there."""

    labels: float  # the PPI's labelled (rectifier) part
    judge: float  # the PPI's judge-mean part
    cross: float  # the rest of the PPI's variance: the two parts' covariance in shared units
    human: float  # the human-only mean
    df_labels: float  # of the PPI's labelled part alone: how well its variance is known
    df_ppi: float
    df_human: float


@dataclass(frozen=True)
class Clusters:
    """The block's cluster structure, for growing the design effect and the df with m."""

    labelled: np.ndarray  # labels per cluster (every cluster of the block)
    unlabelled: np.ndarray  # unlabelled judged items per cluster
    rho_ppi: float  # intra-cluster correlation of the rectified labels
    rho_human: float  # ... of the human labels


@dataclass(frozen=True)
class BudgetModel:
    """What the predicted half-width curves are computed from: today's moments, and today's
    variance of each part of the reported intervals (the anchors; None: from the moments)."""

    n: int
    big_n: int
    var_y: float
    var_f: float  # on the labels
    cov: float
    var_all: float  # of the judge's scores on all judged items
    anchors: Anchors | None = None
    clusters: Clusters | None = None

    @classmethod
    def from_arrays(cls, y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> BudgetModel:
        """The model of three samples, not anchored to a reported interval (the queue
        compares strata by it before any estimate is made)."""
        return cls(**_moments(y, f, f_unlabelled))

    @classmethod
    def from_fit(cls, fit, clusters: np.ndarray | None, df_ppi: float) -> BudgetModel:
        """The model of one estimate block (calibration/estimate.py's Fit), anchored to the
        parts of its reported PPI and human-only intervals."""
        labels, *judge = (MeanEstimate(0.0, (part,)) for part in fit.ppi.parts)
        v_labels = labels.variance(clusters)
        v_judge = judge[0].variance(clusters) if judge else 0.0
        anchors = Anchors(
            labels=v_labels,
            judge=v_judge,
            cross=fit.ppi.variance(clusters) - v_labels - v_judge,
            human=fit.human.variance(clusters),
            df_labels=labels.df(clusters),
            df_ppi=df_ppi,
            df_human=fit.human.df(clusters),
        )
        structure = None if clusters is None else _structure(fit, clusters)
        return cls(**_moments(fit.y, fit.f, fit.f_unlabelled), anchors=anchors, clusters=structure)

    @property
    def total(self) -> int:
        return self.n + self.big_n

    def ppi_halfwidths(self, alpha: float, quantile: float, extra: np.ndarray) -> np.ndarray:
        """The q-quantile of the PPI half-width after m more labels, m in `extra` (≤ N)."""
        m = np.concatenate([[0], extra])
        rest = self.big_n - m
        with np.errstate(divide="ignore", invalid="ignore"):
            ceiling = np.where(rest > 0, self.total / np.maximum(rest, 1), 0.0)
            slope = self.cov / self.var_all if self.var_all > 0 else 0.0
            lam = np.clip(slope, 0.0, ceiling)
        residual = np.maximum(self.var_y - 2 * lam * self.cov + lam**2 * self.var_f, 0.0)
        labels = residual / (self.n + m) * self._design_effect(m, "ppi")
        judge = lam**2 * self.var_all / self.total
        cross = 2 * lam * (self.cov - lam * self.var_f) / self.total
        if self.anchors is not None:  # each part scaled to today's reported value
            labels = labels * _ratio(self.anchors.labels, labels[0])
            judge = judge * _ratio(self.anchors.judge, judge[0])
            cross = self.anchors.cross * _ratio(lam, lam[0])
        # one df is spent on λ: a fitted slope's residual variance has ν − 1 (Cochran 1977,
        # "Sampling Techniques", §7.3, the regression estimator's n − 2)
        fitted = max(self.anchors.df_labels - 1, 1) if self.anchors else max(self.n - 2, 1)
        df_now = (fitted, self.anchors.df_ppi if self.anchors else 0.0)
        return self._curve(np.maximum(labels + cross, 0.0), judge, m, alpha, quantile, df_now)

    def human_halfwidths(self, alpha: float, quantile: float, extra: np.ndarray) -> np.ndarray:
        """The same for the human mean alone; m may exceed the judged items."""
        m = np.concatenate([[0], extra])
        labels = self.var_y / (self.n + m) * self._design_effect(m, "human")
        if self.anchors is not None:
            labels = labels * _ratio(self.anchors.human, labels[0])
        df_now = (self.anchors.df_human,) * 2 if self.anchors else (0.0, 0.0)
        return self._curve(labels, np.zeros(len(m)), m, alpha, quantile, df_now)

    def _design_effect(self, m: np.ndarray, which: str) -> np.ndarray:
        if self.clusters is None:
            return np.ones(len(m))
        rho = self.clusters.rho_ppi if which == "ppi" else self.clusters.rho_human
        return 1 + (self._labels_per_cluster(m) - 1) * rho

    def _curve(self, labels, judge, m, alpha, quantile, df_now) -> np.ndarray:
        """Half-widths from the labels' and the judge's parts of V (index 0 is m = 0);
        `df_now` = today's df of the labels' part (for the pivot) and of the interval."""
        nu = self._labelled_df(m)
        if self.clusters is not None:  # the parts share clusters: the labels' df
            df = nu
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                pieces = labels**2 / nu + judge**2 / max(self.total - 1, 1)
                df = np.where(pieces > 0, (labels + judge) ** 2 / pieces, nu)
        labels_now, interval_now = df_now
        known = labels_now / nu[0] if labels_now > 0 else 1.0
        nu_now, gained = nu[0] * known, (nu - nu[0]) * known
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.clusters is None:  # today's labels stay in the future estimate
                pivot = special.fdtri(np.maximum(gained, 1e-9), nu_now, quantile)
                factor = (nu_now + gained * pivot) / (nu_now + gained)
            else:  # new labels change today's cluster sums: an estimate of its own
                factor = special.fdtri(nu_now + gained, nu_now, quantile)
            factor = np.where(gained > 0, factor, 1.0)
        stretch = interval_now / df[0] if interval_now > 0 and df[0] > 0 else 1.0
        t = special.stdtrit(np.maximum(df * stretch, 1e-9), 1 - alpha / 2)
        return (t * np.sqrt(np.maximum(labels * factor + judge, 0.0)))[1:]

    def _labelled_df(self, m: np.ndarray) -> np.ndarray:
        """The labels' df after m more, before anchoring: n + m − 1, or with clusters the
        expected number of clusters holding labels, minus one."""
        if self.clusters is None:
            return np.maximum(self.n + m - 1, 1).astype(float)
        return np.maximum(_clusters_reached(self.clusters, m) - 1, 1)

    def _labels_per_cluster(self, m: np.ndarray) -> np.ndarray:
        """b = E[Σ n_c²] / n after m more labels drawn uniformly from the unlabelled items
        (hypergeometric counts; beyond the judged items, the last value)."""
        if self.clusters is None:
            return np.ones(len(m))
        counts, pool = self.clusters.labelled.astype(float), self.clusters.unlabelled
        total = pool.sum()
        if total == 0:
            return np.full(len(m), np.sum(counts**2) / max(counts.sum(), 1))
        drawn = np.minimum(m, total).astype(float)
        p = pool / total
        s_nn, s_np, s_pp = np.sum(counts**2), np.sum(counts * p), np.sum(p**2)
        spread = drawn * (total - drawn) / max(total - 1, 1) * (1 - s_pp)
        return (s_nn + 2 * drawn * s_np + drawn**2 * s_pp + spread) / (counts.sum() + drawn)


def _ratio(anchor, model):
    """anchor / model where the model is positive (elementwise for arrays), else 1."""
    model = np.asarray(model, dtype=float)
    return np.where(model > 0, anchor / np.where(model > 0, model, 1.0), 1.0)


def _moments(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> dict[str, Any]:
    every = np.concatenate([f, f_unlabelled])
    two = len(y) > 1
    return {
        "n": len(y),
        "big_n": len(f_unlabelled),
        "var_y": float(np.var(y, ddof=1)) if two else 0.0,
        "var_f": float(np.var(f, ddof=1)) if two else 0.0,
        "cov": float(np.cov(y, f, ddof=1)[0, 1]) if two else 0.0,
        "var_all": float(np.var(every, ddof=1)) if len(every) > 1 else 0.0,
    }


def _clusters_reached(clusters: Clusters, m: np.ndarray) -> np.ndarray:
    """Expected clusters holding labels after m more uniform draws: a cluster with u of the
    U unlabelled items and no label stays empty with probability C(U − u, m) / C(U, m);
    beyond the judged items, growing in proportion to the labels."""
    counts, pool = clusters.labelled, clusters.unlabelled
    total = int(pool.sum())
    drawn = np.minimum(m, total).astype(float)
    reached = np.full(len(m), float((counts > 0).sum()))
    empty = pool[(counts == 0) & (pool > 0)]
    for u, k in zip(*np.unique(empty, return_counts=True), strict=True):
        with np.errstate(invalid="ignore"):
            log_stays = (
                special.gammaln(total - u + 1)
                - special.gammaln(np.maximum(total - u - drawn, 0) + 1)
                - special.gammaln(total + 1)
                + special.gammaln(total - drawn + 1)
            )  # fmt: skip
        reached += k * (1 - np.where(drawn <= total - u, np.exp(log_stays), 0.0))
    beyond = np.maximum(m - total, 0)
    return reached * (1 + beyond / max(counts.sum() + total, 1))


def _structure(fit, clusters: np.ndarray) -> Clusters:
    """Labels and unlabelled items per cluster of the block, and the two ρ."""
    _, dense = np.unique(clusters[fit.judged], return_inverse=True)
    size = int(dense.max()) + 1
    labelled = np.isin(fit.judged, fit.labelled)
    counts = np.bincount(dense[labelled], minlength=size)
    pool = np.bincount(dense[~labelled], minlength=size)
    if np.sum(counts * (counts - 1)) / 2 >= MIN_PAIRS:
        b_now = float(np.sum(counts**2) / counts.sum())
        return Clusters(
            counts, pool, _rho(fit.ppi.parts[0], clusters, b_now),
            _rho(fit.human.parts[0], clusters, b_now),
        )  # fmt: skip
    judge = _judge_icc(fit, clusters)
    var_y, var_f = float(np.var(fit.y, ddof=1)), float(np.var(fit.f, ddof=1))
    cov = float(np.cov(fit.y, fit.f, ddof=1)[0, 1])
    truth = judge * var_f * var_y / cov**2 if cov > 0 else judge
    return Clusters(counts, pool, judge, float(np.clip(truth, judge, 1.0)))


def _deff(part, clusters: np.ndarray) -> float:
    """Σ_c (Σ_{i∈c} ψ_i)² / Σ_i ψ_i²: one part's clustered over unclustered variance."""
    plain = float(np.sum(part.influence**2))
    if plain <= 0:
        return 1.0
    _, dense = np.unique(clusters[part.items], return_inverse=True)
    return float(np.sum(np.bincount(dense, weights=part.influence) ** 2)) / plain


def _rho(part, clusters: np.ndarray, b_now: float) -> float:
    """ρ from today's design effect of one labelled part, D = 1 + (b − 1) ρ."""
    if b_now - 1 <= 0:
        return 0.0
    return float(np.clip((_deff(part, clusters) - 1) / (b_now - 1), 0.0, 1.0))


def _judge_icc(fit, clusters: np.ndarray) -> float:
    """One-way ANOVA intra-cluster correlation of the judge's scores on its judged items."""
    scores = np.concatenate([fit.f, fit.f_unlabelled])
    _, dense = np.unique(
        clusters[np.concatenate([fit.labelled, fit.unlabelled])], return_inverse=True
    )
    sizes = np.bincount(dense)
    groups, total = len(sizes), len(scores)
    if groups < 2 or total <= groups:
        return 0.0
    means = np.bincount(dense, weights=scores) / sizes
    between = np.sum(sizes * (means - scores.mean()) ** 2) / (groups - 1)
    within = np.sum((scores - means[dense]) ** 2) / (total - groups)
    m0 = (total - np.sum(sizes**2) / total) / (groups - 1)
    denominator = between + (m0 - 1) * within
    return float(np.clip((between - within) / denominator, 0.0, 1.0)) if denominator > 0 else 0.0


def human_labels_needed(
    model: BudgetModel, alpha: float, target: float, quantile: float
) -> int | None:
    """Smallest total n' = n + m whose q-quantile half-width of the human mean is ≤ H, or
    None beyond SEARCH_LIMIT; the judged items first, then doubling and bisection (the
    curve decreases there)."""
    within = model.human_halfwidths(alpha, quantile, np.arange(model.big_n + 1))
    hit = np.flatnonzero(within <= target + 1e-12)
    if hit.size:
        return model.n + int(hit[0])

    def above(m: int) -> bool:
        return bool(model.human_halfwidths(alpha, quantile, np.array([m]))[0] > target)

    low, high = model.big_n, max(2 * model.big_n, model.n, 1)
    while above(high):
        low, high = high, 2 * high
        if high > SEARCH_LIMIT:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if above(mid) else (low, mid)
    return model.n + high


def label_budget(
    model: BudgetModel, alpha: float, target: float, quantile: float
) -> dict[str, Any]:
    """More labels needed with and without the judge, the share saved, and a warning."""
    curve = model.ppi_halfwidths(alpha, quantile, np.arange(model.big_n + 1))
    reached = np.flatnonzero(curve <= target + 1e-12)
    with_judge = int(reached[0]) if reached.size else None
    total = human_labels_needed(model, alpha, target, quantile)
    without = None if total is None else max(0, total - model.n)
    saved = None
    if with_judge is not None and without:
        saved = 1 - (model.n + with_judge) / (model.n + without)
    warning = None
    if with_judge is None:
        warning = (
            f"not reachable with this judge: labelling all {model.big_n} judged items leaves a "
            f"half-width of {curve[-1]:.4g} (at probability {quantile:g}); grade more items"
        )
    elif saved is not None and saved < WEAK_SAVING:
        warning = f"weak judge: saves {100 * saved:.1f}% of labels (< {100 * WEAK_SAVING:.0f}%)"
    clustered = (
        "; design effect 1 + (b-1)ρ grown as labels share clusters" if model.clusters else ""
    )
    return {
        "target_halfwidth": target,
        "quantile": quantile,
        "halfwidth": float(curve[0]),
        "more_labels_with_judge": with_judge,
        "more_labels_without_judge": without,
        "labels_saved_share": saved,
        "warning": warning,
        "method": f"the smallest m whose half-width is at most the target with probability "
        f"{quantile:g}: F pivot for the future residual variance, t with the future df, "
        f"λ re-tuned{clustered}",
        "assumption": "the next labels are drawn uniformly at random from the block's "
        "unlabelled judged items; residuals near normal",
    }
