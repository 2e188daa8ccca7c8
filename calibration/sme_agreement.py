"""How well the SMEs agree, and which SME grades higher or lower than her peers, from the
overlap items of the workbench (issue 35): the share of the queue that two SMEs grade blind
to each other. Every estimate and verdict qadi makes rests on these labels, so the lead needs
to know both whether the SMEs measure the same thing and whether one of them is lenient.

- **Agreement**: Krippendorff's α among the SMEs over the items with two labels or more
  (Krippendorff 2004, *Content Analysis*, 2nd ed., ch. 11; 2011, "Computing Krippendorff's
  Alpha-Reliability"), ordinal on a 1–5 scale, interval on 0–100 scores, with the interval
  rule of every agreement coefficient of a calibration report (`intervals.alpha_interval`:
  jackknife on Fisher's z over items or clusters, the bootstrap over items or clusters —
  Hayes & Krippendorff 2007 — where it cannot be formed), so the workbench and
  `qadi calibrate`'s `human_alpha` give one number and one interval on the same labels.
- **Leniency**: on each of her overlap items, her score minus the mean of the other SMEs'
  scores on that item (with two labels: the other SME's score); her leniency is the mean
  over her items, with value ± t(n − 1)·s/√n, or CR1 with t(G − 1) over the G clusters of
  her items (`intervals.ratio_se`, as the report's signed error). Positive: she grades
  higher than her peers.
- **Verdict**: lenient / harsh from the two-sided test of mean difference = 0 of the report's
  bias flags (`cell_tests.one_sample`: t on the same SE and df; the bounded-scale exact bound
  when every difference was equal; untested below `MIN_UNITS` units), then Holm across the
  SMEs. Holm, not the bias flags' Benjamini–Hochberg: the SMEs' tests are negatively
  dependent (every item's difference enters two SMEs' means with opposite signs), where BH's
  PRDS condition fails, and the family is small. Two SMEs who shared items only with each
  other ask one question (his leniency is hers with the sign turned), so the pair counts once.

No interval below `MIN_UNITS` items (or clusters): a t interval on 3 discrete differences has
no power and often no spread (`calibration.cell_tests`), and α's jackknife would rest on as
few leave-one-out values; 5 is also the cluster floor. A standard error of 0 (every
difference equal) is not certainty: no interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from calibration.agreement import alpha, alpha_features
from calibration.bootstrap import resample_weights
from calibration.cell_tests import METHODS as TESTS
from calibration.cell_tests import MIN_UNITS, Side, one_sample, too_few
from calibration.intervals import METHODS as INTERVALS
from calibration.intervals import alpha_interval, ratio_se, t_interval, too_few_clusters
from calibration.multiplicity import DESCRIPTIONS, Procedure, adjust

Level = Literal["ordinal", "interval"]
PROCEDURE: Procedure = "holm"
TOLERANCE = 1e-9

LENIENCY_METHODS: dict[str, str] = {
    "t": "mean of her differences ± Student t(n − 1) × s/√n over her n overlap items",
    "t_cr1": "mean of her differences ± Student t(G − 1) × CR1 cluster-robust standard "
    "error over the G clusters of her overlap items",
}
ALPHA_METHODS = ("jackknife_z", "bca", "bca_cluster", "percentile", "percentile_cluster")


class OverlapLabel(BaseModel):
    """One SME's score of one overlap item."""

    item_id: str
    rater: str
    score: float = Field(allow_inf_nan=False)


class Alpha(BaseModel):
    """Krippendorff's α among the SMEs over the items with two labels or more."""

    estimate: float | None
    ci: list[float] | None
    method: str | None = Field(description="a key of `methods.intervals`")
    level: Level
    units: int = Field(description="independent units: the paired items, or their clusters")
    undefined: str | None = Field(default=None, description="why there is no estimate")
    no_interval: str | None = Field(default=None, description="why there is no interval")


class Leniency(BaseModel):
    """One SME against her peers: the mean of (her score − the others' mean) on her items."""

    rater: str
    n_items: int
    units: int = Field(description="her items, or their clusters")
    mean_difference: float
    se: float | None
    ci: list[float] | None
    method: str | None = Field(description="a key of `methods.intervals`")
    no_interval: str | None = None
    test: str | None = Field(description="a key of `methods.tests`")
    p_value: float | None
    adjusted_p: float | None = Field(description="Holm across the SMEs (`procedure`)")
    untested: str | None = None
    flagged: Literal["lenient", "harsh"] | None = Field(
        description="adjusted_p ≤ 1 − confidence: lenient above 0, harsh below"
    )


class SmeAgreement(BaseModel):
    """The SMEs' agreement and leniency over the overlap items, every number with its method."""

    n_items: int = Field(description="overlap items with two labels or more")
    n_unpaired: int = Field(description="overlap items with one label so far, left out")
    n_raters: int
    n_clusters: int | None
    confidence: float
    alpha: Alpha
    raters: list[Leniency]
    procedure: str = Field(description="the multiple-comparison control of the flags")
    methods: dict[str, dict[str, str]]
    assumptions: list[str]
    notes: list[str]


def sme_agreement(
    labels: Iterable[OverlapLabel],
    level: Level,
    scale_min: float,
    scale_max: float,
    clusters: Mapping[str, str] | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> SmeAgreement:
    """α with its interval and each SME's leniency with its interval and flag.

    `clusters`: a cluster (e.g. the prompt) per item id, which makes the clusters the
    independent units of every interval; an item without one is its own cluster.
    `resamples` and `seed`: the bootstrap α falls back on where the jackknife cannot be
    formed. Raises ValueError, naming the field, on input it cannot read."""
    _check_options(level, scale_min, scale_max, confidence)
    items, raters, ratings = _table(list(labels), scale_min, scale_max)
    unpaired = int(((~np.isnan(ratings)).sum(1) == 1).sum())
    items, raters, ratings = _paired(items, raters, ratings)
    clustered = clusters is not None
    codes = _cluster_codes(items, clusters)
    agreement = _alpha(ratings, level, codes, clustered, confidence, resamples, seed)
    mirrors = _mirrors(ratings)
    leniency = _flag(
        [_leniency(r, raters[r], ratings, codes, clustered, confidence, scale_max - scale_min)
         for r in range(len(raters))],  # fmt: skip
        mirrors,
        1 - confidence,
    )
    return SmeAgreement(
        n_items=len(items),
        n_unpaired=unpaired,
        n_raters=len(raters),
        n_clusters=int(np.unique(codes).size) if clustered else None,
        confidence=confidence,
        alpha=agreement,
        raters=leniency,
        procedure=DESCRIPTIONS[PROCEDURE],
        methods={
            "intervals": {**{k: INTERVALS[k] for k in ALPHA_METHODS}, **LENIENCY_METHODS},
            "tests": {k: TESTS[k] for k in ("t", "bounded_constant")},
        },
        assumptions=_assumptions(level, clustered, confidence),
        notes=_notes(unpaired, [(raters[r], raters[s]) for r, s in mirrors.items()],
                     agreement, leniency),  # fmt: skip
    )


def _check_options(level: str, scale_min: float, scale_max: float, confidence: float) -> None:
    if level not in ("ordinal", "interval"):
        raise ValueError(f"level: '{level}' is not one of ordinal, interval")
    if not (np.isfinite(scale_min) and np.isfinite(scale_max) and scale_min < scale_max):
        raise ValueError(f"scale_max: {scale_max} must be above scale_min {scale_min}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence: {confidence} is not between 0 and 1")


def _table(
    labels: list[OverlapLabel], scale_min: float, scale_max: float
) -> tuple[list[str], list[str], np.ndarray]:
    """Items (first-seen order) × raters (sorted) of scores, NaN where a rater gave none."""
    items = list(dict.fromkeys(label.item_id for label in labels))
    raters = sorted({label.rater for label in labels})
    row = {item: i for i, item in enumerate(items)}
    column = {rater: r for r, rater in enumerate(raters)}
    ratings = np.full((len(items), len(raters)), np.nan)
    for k, label in enumerate(labels):
        if not scale_min - TOLERANCE <= label.score <= scale_max + TOLERANCE:
            raise ValueError(
                f"labels[{k}].score: {label.score:g} is outside the scale "
                f"{scale_min:g}–{scale_max:g}"
            )
        cell = row[label.item_id], column[label.rater]
        if not np.isnan(ratings[cell]):
            raise ValueError(
                f"labels[{k}]: a second label by '{label.rater}' on item '{label.item_id}' "
                "(an overlap item takes one label per SME)"
            )
        ratings[cell] = label.score
    return items, raters, ratings


def _cluster_codes(items: list[str], clusters: Mapping[str, str] | None) -> np.ndarray:
    """Each item's independent unit: itself, or its cluster (an item without one is its own)."""
    if clusters is None:
        return np.arange(len(items))
    found: dict[tuple[bool, str], int] = {}
    keys = [(True, clusters[i]) if i in clusters else (False, i) for i in items]
    return np.array([found.setdefault(key, len(found)) for key in keys], dtype=int)


def _paired(
    items: list[str], raters: list[str], ratings: np.ndarray
) -> tuple[list[str], list[str], np.ndarray]:
    """The items with two labels or more, and the raters with a label on one of them."""
    paired = (~np.isnan(ratings)).sum(1) >= 2
    ratings = ratings[paired]
    present = ~np.isnan(ratings).all(0)
    return (
        [item for item, keep in zip(items, paired, strict=True) if keep],
        [rater for rater, keep in zip(raters, present, strict=True) if keep],
        ratings[:, present],
    )


def _notes(
    unpaired: int, mirrored: list[tuple[str, str]], agreement: Alpha, leniency: list[Leniency]
) -> list[str]:
    """What a reader of the numbers should know: left-out items, a pair tested once, and
    why an interval or an estimate is missing."""
    out = []
    if unpaired:
        out.append(
            f"{unpaired} overlap item(s) have one label so far and are left out until the "
            "second SME grades them"
        )
    out += [
        f"{r} and {s} shared items only with each other: one's leniency is the other's with "
        "the sign turned, one test counted once in the Holm family"
        for r, s in mirrored
    ]
    out += [f"α: {text}" for text in (agreement.undefined, agreement.no_interval) if text]
    return out + [f"{row.rater}: {row.no_interval}" for row in leniency if row.no_interval]


def _alpha(
    ratings: np.ndarray,
    level: Level,
    codes: np.ndarray,
    clustered: bool,
    confidence: float,
    resamples: int,
    seed: int,
) -> Alpha:
    units = int(np.unique(codes).size)
    if len(ratings) == 0:
        return Alpha(estimate=None, ci=None, method=None, level=level, units=0,
                     undefined="no overlap item has two labels yet")  # fmt: skip
    values = np.unique(np.round(ratings[~np.isnan(ratings)], 9))
    feats = alpha_features(ratings, level, values)
    point = float(alpha(np.ones((1, len(ratings))), feats)[0])
    if not np.isfinite(point):
        return Alpha(estimate=None, ci=None, method=None, level=level, units=units,
                     undefined="every score is the same (no disagreement to expect)")  # fmt: skip
    if units < MIN_UNITS:
        reason = too_few_clusters(units) if clustered else too_few(units)
        return Alpha(estimate=point, ci=None, method=None, level=level, units=units,
                     no_interval=reason)  # fmt: skip
    rng = np.random.default_rng(seed)
    draws = resample_weights(rng, len(ratings), resamples, codes if clustered else None)
    samples = np.concatenate([alpha(w, feats) for w in draws]) if resamples else None
    paired = np.ones(len(ratings), dtype=bool)
    found = alpha_interval(feats, point, samples, codes, paired, clustered, confidence)
    missing = None
    if found.ci is None:
        missing = found.missing or (
            "the jackknife on Fisher's z cannot be formed (a leave-one-out α at ±1) and no "
            "resample defines α"
        )
    return Alpha(estimate=point, ci=found.ci, method=found.method, level=level, units=units,
                 no_interval=missing)  # fmt: skip


def _leniency(
    r: int,
    rater: str,
    ratings: np.ndarray,
    codes: np.ndarray,
    clustered: bool,
    confidence: float,
    scale_range: float,
) -> tuple[Leniency, Side]:
    """Her differences from the others' mean on her items, their mean, interval and test."""
    mine = ~np.isnan(ratings[:, r])
    rows = ratings[mine]
    others = (np.nansum(rows, 1) - rows[:, r]) / ((~np.isnan(rows)).sum(1) - 1)
    differences = rows[:, r] - others
    mean = float(differences.mean())
    unit_codes = codes[mine] if clustered else None
    se, units = ratio_se(differences, np.ones(len(differences)), unit_codes)
    side = Side(mean, se, units)
    test = one_sample(side, scale_range)
    ci, method, missing = None, None, None
    if units < MIN_UNITS:
        missing = too_few_clusters(units) if clustered else too_few(units)
    elif side.constant():
        missing = (
            f"all her {len(differences)} differences were {mean:g}: a standard error of 0 "
            "is not certainty, so no t interval (the test uses the bounded-scale exact bound)"
        )
    else:
        bounds = (-scale_range, scale_range)
        ci = t_interval(mean, se, units - 1, confidence, bounds)
        method = "t_cr1" if clustered else "t"
    lenient = Leniency(rater=rater, n_items=len(differences), units=units,
                       mean_difference=mean, se=se, ci=ci, method=method, no_interval=missing,
                       test=test.method, p_value=test.p, adjusted_p=None,
                       untested=test.untested, flagged=None)  # fmt: skip
    return lenient, side


def _mirrors(ratings: np.ndarray) -> dict[int, int]:
    """{r: s} for two SMEs who shared items only with each other, r after s: r's differences
    are s's with the sign turned, so r's test is s's and the family counts it once."""
    present = ~np.isnan(ratings)
    partners = [
        set(np.flatnonzero(present[present[:, r]].any(0))) - {r}
        for r in range(ratings.shape[1])
    ]
    return {
        r: s
        for r, found in enumerate(partners)
        for s in found
        if s < r and found == {s} and partners[s] == {r}
    }


def _flag(
    results: list[tuple[Leniency, Side]], mirrors: dict[int, int], level: float
) -> list[Leniency]:
    """Holm across the SMEs' tests (a mirrored pair once), then lenient / harsh where the
    adjusted p is at most `level`; an untested SME counts as p = 1 and is never flagged."""
    family = [r for r in range(len(results)) if r not in mirrors]
    adjusted = dict(zip(family, adjust([results[r][0].p_value for r in family], PROCEDURE),
                        strict=True))  # fmt: skip
    out = []
    for r, (lenient, side) in enumerate(results):
        q = adjusted[mirrors.get(r, r)] if lenient.p_value is not None else None
        flagged = None
        if q is not None and q <= level:
            flagged = "lenient" if side.value > 0 else "harsh"
        out.append(lenient.model_copy(update={"adjusted_p": q, "flagged": flagged}))
    return out


def _assumptions(level: Level, clustered: bool, confidence: float) -> list[str]:
    unit = "clusters" if clustered else "overlap items"
    out = [
        f"The {unit} are independent draws from the queue's items (the server chooses the "
        "overlap share by a hash of the item, not by its content), and the two SMEs of an "
        "item graded blind to each other.",
        "α treats the SMEs as interchangeable coders of the same items; it measures whether "
        "they grade alike, not whether either is right.",
        "A leniency is measured against the peers she shared items with, weighted by how many "
        "she shared with each: it says who grades higher than whom, not who is right.",
        f"The leniency interval assumes her mean difference is near normal on her {unit} "
        f"(t with units − 1 df; at least {MIN_UNITS} units).",
        f"The intervals are marginal at {confidence:g}; a flag needs the Holm-adjusted p "
        f"to be at most {1 - confidence:.2g}, so an interval can exclude 0 without a flag.",
    ]
    if level == "ordinal":
        out.append(
            "On an ordinal scale α uses only the scores' order; the differences count the "
            "scale's points as equally spaced."
        )
    if clustered:
        out.append("Items within a cluster may be correlated in any way; clusters are not.")
    return out
