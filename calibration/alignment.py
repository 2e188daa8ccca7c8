"""Revising a judge from the experts' disagreements, and certifying the revision on labels it
never saw (issue 37).

Tools that "align" a judge (LangSmith's align evaluator, MLflow's `align()`) score the revised
judge on the labels they tuned it on, which rewards fitting the noise. Here the SME-labelled
items are split **before** the revision, by item and stratified, into a training fold (its
disagreements inform the revision) and a held-out fold (only it certifies the revision); the
split is fixed by a seed and recorded, and the training items are marked so no later
calibration counts them as fresh.

Certification compares the old and the revised template on the held-out items, paired (each
item graded by both):

- **Primary endpoint, ΔMAD** = mean over items of |new − ref| − |old − ref| (negative: the
  revision is closer to the SMEs' reference), with a Student t interval on n − 1 df over the
  items, or CR1 with t(G − 1) over G clusters (answers to one prompt). **Certified** when the
  one-sided test of H0: ΔMAD ≥ 0 rejects at `level` (0.05): a revision that does not help is
  certified in at most `level` of held-out draws. When every difference is equal, the t test
  has no spread: an exact sign test is used instead (each item's improvement a fair coin
  under H0), and below MIN_ITEMS items nothing is certified.
- **Labels sampled unequally** (the SME queue's escalations and audits carry inclusion_prob):
  every mean is a Hájek mean weighted by 1/inclusion_prob, so the change is that of the
  population the labels were drawn from, with its linearised SE and t(min(units, Kish
  effective n) − 1) (the fold split itself is a uniform subsample: its constant factor
  cancels).
- Secondary, reported, not certified on: the change in exact-match rate (paired differences
  of agreement indicators, same interval rule). Cohen's κ and the alt-test verdicts of both
  templates come from the calibration report of the held-out fold (the service adds them).

Assumptions: the held-out items are exchangeable with the items the judge will grade (a
random, stratified part of the labelled ones), and the SMEs' reference does not depend on
which template graded the item (the SMEs grade blind to the judges).
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field
from scipy import special

from calibration.intervals import ratio_se, t_interval

MIN_ITEMS = 5  # held-out items (or clusters) below which nothing is certified
METHOD = (
    "paired differences over the held-out items: mean ± Student t(n − 1) × s/√n, or CR1 with "
    "t(G − 1) over prompt clusters; with unequal inclusion probabilities a Hájek mean, its "
    "linearised SE and t(min(units, Kish n) − 1); one-sided t test of H0: the revision does "
    "not improve"
)
SIGN_METHOD = "exact sign test (every paired difference equal; H0: each improves with p ½)"


def folds(
    items: Sequence[str], strata: Mapping[str, str], holdout: float, seed: int
) -> dict[str, Literal["train", "holdout"]]:
    """Each item's fold: in every stratum the items are ordered by a hash of (seed, item) and
    the first ⌈holdout · n⌉ held out, so the split is stratified, random, reproducible from
    the seed, and does not depend on any score."""
    by_stratum: dict[str, list[str]] = defaultdict(list)
    for item in sorted(set(items)):
        by_stratum[strata.get(item, "")].append(item)
    assigned: dict[str, Literal["train", "holdout"]] = {}
    for members in by_stratum.values():
        ordered = sorted(members, key=lambda item: _draw(seed, item))
        cut = math.ceil(holdout * len(ordered))
        for k, item in enumerate(ordered):
            assigned[item] = "holdout" if k < cut else "train"
    return assigned


def _draw(seed: int, item: str) -> str:
    return hashlib.sha256(f"{seed}\x1f{item}".encode()).hexdigest()


class PairedChange(BaseModel):
    """One metric of the revised template against the old one, on the same held-out items."""

    metric: str
    old: float
    new: float
    difference: float = Field(description="new − old")
    ci: list[float] | None
    p_value: float | None = Field(description="one-sided: the revision does not improve it")
    method: str | None
    units: int
    note: str | None = None


class Certification(BaseModel):
    """What the held-out fold says of the revision."""

    n_items: int
    level: float
    confidence: float
    certified: bool = Field(description="ΔMAD < 0 at `level` (the primary endpoint)")
    weighted: bool = Field(
        default=False, description="means weighted by 1/inclusion_prob (labels sampled unequally)"
    )
    verdict: str
    mad: PairedChange
    exact_match: PairedChange | None
    method: str = METHOD
    assumptions: list[str]


def certify(
    reference: np.ndarray,
    old: np.ndarray,
    new: np.ndarray,
    clusters: np.ndarray | None = None,
    level: float = 0.05,
    confidence: float = 0.95,
    ordinal: bool = True,
    weights: np.ndarray | None = None,
) -> Certification:
    """Compare the revised template (`new`) with the old one on the held-out items: each
    array holds one value per item (the SMEs' reference, each template's score). `weights`
    (1/inclusion_prob of labels sampled unequally) make every mean a Hájek mean of the
    population the labels were drawn from."""
    reference, old, new = (np.asarray(a, dtype=float) for a in (reference, old, new))
    codes = None if clusters is None else np.unique(np.asarray(clusters), return_inverse=True)[1]
    w = np.ones(len(reference)) if weights is None else np.asarray(weights, dtype=float)
    mad = _paired("mad", np.abs(old - reference), np.abs(new - reference), w, codes,
                  confidence, lower_is_better=True)  # fmt: skip
    exact = None
    if ordinal:
        exact = _paired("exact_match", (old == reference).astype(float),
                        (new == reference).astype(float), w, codes, confidence,
                        lower_is_better=False)  # fmt: skip
    certified = mad.p_value is not None and mad.p_value < level
    verdict = (
        f"certified: the revision lowers MAD by {-mad.difference:.3g} on {len(reference)} "
        f"held-out items (one-sided p = {mad.p_value:.3g} < {level:g})"
        if certified
        else "not certified: the held-out items do not show the revision closer to the SMEs "
        + (f"(one-sided p = {mad.p_value:.3g} ≥ {level:g})" if mad.p_value is not None
           else f"({mad.note})")
    )  # fmt: skip
    assumptions = [
        "the held-out items were split off before the revision, at random within strata, "
        "and are exchangeable with the items the judge will grade"
        + (" once weighted by 1/inclusion_prob" if weights is not None else ""),
        "the SMEs' reference is the same whichever template graded an item (they grade "
        "blind to the judges)",
    ]
    return Certification(
        n_items=len(reference), level=level, confidence=confidence, certified=certified,
        verdict=verdict, mad=mad, exact_match=exact, weighted=weights is not None,
        assumptions=assumptions,
    )  # fmt: skip


def _paired(
    metric: str,
    old: np.ndarray,
    new: np.ndarray,
    weights: np.ndarray,
    clusters: np.ndarray | None,
    confidence: float,
    lower_is_better: bool,
) -> PairedChange:
    """The paired change of a per-item metric (weighted means), its interval and the
    one-sided p-value of "the revision does not improve it"."""
    differences = new - old
    n = len(differences)
    total = float(weights.sum())
    common = {"metric": metric, "old": float(weights @ old) / total if n else math.nan,
              "new": float(weights @ new) / total if n else math.nan}  # fmt: skip
    value = float(weights @ differences) / total if n else math.nan
    se, units = ratio_se(weights * differences, weights, clusters)
    if units < MIN_ITEMS:
        note = f"{units} held-out unit(s), fewer than {MIN_ITEMS}: nothing is certified"
        return PairedChange(**common, difference=value, ci=None, p_value=None, method=None,
                            units=units, note=note)  # fmt: skip
    improving = -differences if lower_is_better else differences
    if se is None or se == 0:
        return PairedChange(**common, difference=value, ci=None, method=SIGN_METHOD,
                            p_value=_sign_test(improving), units=units,
                            note="every paired difference equal: no interval")  # fmt: skip
    kish = total**2 / float((weights**2).sum())  # unequal weights: fewer effective units
    df = min(units, kish) - 1
    ci = t_interval(value, se, df, confidence)
    statistic = (-value if lower_is_better else value) / se
    p_value = float(special.stdtr(df, -statistic))  # P(T ≥ statistic) under H0
    return PairedChange(**common, difference=value, ci=ci, p_value=p_value, method=METHOD,
                        units=units)  # fmt: skip


def _sign_test(improving: np.ndarray) -> float:
    """One-sided exact sign test over the items that changed (ties dropped)."""
    changed = improving[improving != 0]
    if changed.size == 0:
        return 1.0
    wins = int((changed > 0).sum())
    return float(special.bdtrc(wins - 1, changed.size, 0.5))  # P(X ≥ wins)
