"""Design weights of the human labels: who chose which items got labelled, and with what
probability, so that every estimate can weight a label by the inverse of it.

Two columns of the grades interchange carry the design:
- `inclusion_prob` (calibration/formats/interchange.py): the probability the design gave the item of
  being labelled, in [1e-9, 1] (MIN_INCLUSION_PROB there);
- `inclusion_stratum` (an attribute, "ATTR=VALUE", or "all"): the stratum that probability
  belongs to; `qadi sme queue --by ATTR` writes both (calibration/sme_queue.py).

The rule (docs/statistics.md, "SME queue and inclusion probabilities"):

1. No label carries either column: the labels are taken to be a simple random sample of the
   judged items (uniform weights), the assumption PPI makes; the JSON says so.
2. Labels queued by `qadi sme queue` (an `inclusion_stratum`): the queue draws, in each
   stratum s of one attribute, k_s of the stratum's M_s unlabelled judged items uniformly at
   random, so given the allocation an item's chance of being drawn is k_s / M_s. Rounds
   compose: an item of s is unlabelled after rounds 1..R with probability
   Π_r (1 − k_{s,r} / M_{s,r}) = (N_s − n_s) / N_s, because M_{s,r+1} = M_{s,r} − k_{s,r}. So
   after any number of rounds over the same strata, with the stratum's earlier labels (if any)
   a uniform sample of it, every label of s has the same inclusion probability
   π_s = n_s / N_s: n_s labelled of the stratum's N_s judged items. The queue writes exactly
   this for its round ((n_s + k_s) / N_s); the estimate recomputes it from the labels present
   (a label queued in an earlier round carries that round's smaller value, and a stratum that
   got no label this round carries none), and warns where the recorded and present values
   differ (queued items not labelled yet, items judged since). Weighting by 1/π_s is the
   stratified (post-stratified) estimator; π_s is computed per judge, over that judge's items.
   Rounds over *different* attributes do not compose this way: the estimate says so and falls
   back to rule 3.
3. Labels that carry an `inclusion_prob` of the user's own design: weighted by 1/π as given
   (Horvitz-Thompson weights, normalised in calibration/ppi.py: the Hájek form). Labels
   without one among labels with one have no known weight: estimates over them are undefined
   and the JSON says why, never silently uniform.

Why the estimate normalises (Hájek) rather than dividing by the number of judged items
(Horvitz-Thompson): it is invariant to a common scale error in π and has the smaller variance
when the strata differ (Särndal, Swensson & Wretman 1992, §5.7); ppi_py also rescales its
weights to mean 1, but in each sample separately, which under a label-selection design would
need weights 1/(1 − π) for the unlabelled sample too (calibration/ppi.py avoids that by using
the judge's mean over all judged items, which needs no weight).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibration.table import GradeTable

STRATUM_COLUMN = "inclusion_stratum"
WHOLE = "all"  # the stratum key of a queue run without --by
MISSING = (
    "labelled item(s) without inclusion_prob among labels that have one: their design is unknown"
)
EMPTY = "no labelled item in queue stratum"
UNIFORM_BESIDE_ESCALATIONS = (
    "escalated labels (π = 1) weight 1; the labels without inclusion_prob a uniform random "
    "sample of the other judged items (1/π, π = their share of them)"
)


@dataclass
class Weights:
    """One judge's design weights: d_i per table item (NaN where unknown), or None (uniform)."""

    weights: np.ndarray | None
    empty: dict[str, np.ndarray] = field(default_factory=dict)  # stratum -> its unlabelled items
    rule: str = "uniform"

    def subset(self, mask: np.ndarray) -> Weights:
        """The same design seen from a block of the table (a `--by` stratum)."""
        if self.weights is None:
            return self
        empty = {key: members[mask] for key, members in self.empty.items()}
        return Weights(self.weights[mask], empty, self.rule)

    def problem(self, labelled: np.ndarray, judged: np.ndarray) -> str | None:
        """Why the labels of a block (`labelled`, `judged`: masks or indices into the
        table) cannot be weighted, or None: a label of unknown design, or judged items of
        a queue stratum that has no label to stand for them."""
        if self.weights is None:
            return None
        unknown = int(np.isnan(self.weights[labelled]).sum())
        if unknown:
            return f"{unknown} {MISSING}"
        empty = [key for key, members in self.empty.items() if members[judged].any()]
        if empty:
            return f"{EMPTY} {', '.join(empty)}: its items cannot be represented"
        return None


def stratum_key(attribute: str | None, value: str | None) -> str:
    """The `inclusion_stratum` value the queue writes: 'ATTR=VALUE' or 'all'."""
    return WHOLE if attribute is None else f"{attribute}={value or ''}"


def _attribute(key: str) -> str | None:
    return None if key == WHOLE else key.partition("=")[0]


def _keys(table: GradeTable) -> np.ndarray:
    return np.array([a.get(STRATUM_COLUMN) for a in table.attributes], dtype=object)


def _queue_attribute(table: GradeTable, labelled: np.ndarray) -> tuple[bool, str | None]:
    """(True, the one attribute the queue rounds used) or (False, None): no queue, or rounds
    over several attributes (whose probabilities do not compose)."""
    keys = _keys(table)[labelled]
    found = {_attribute(k) for k in keys if k is not None}
    if len(found) != 1:
        return False, None
    return True, found.pop()


def _values(table: GradeTable, attribute: str | None) -> np.ndarray:
    if attribute is None:
        return np.full(table.n_items, WHOLE, dtype=object)
    keys = [stratum_key(attribute, a.get(attribute)) for a in table.attributes]
    return np.array(keys, dtype=object)


def certainty_units(table: GradeTable, labelled: np.ndarray) -> np.ndarray:
    """Labels with inclusion probability 1 and no queue stratum: items escalated at request
    time (judges/trust.py), labelled because the judge was unsure, each standing for itself
    only. Beside queue labels they are certainty units: weight 1, and a queue stratum's
    share is its labels among its *other* items (the queue draws from the unlabelled ones),
    instead of letting items chosen for their low confidence stand for the stratum."""
    unkeyed = np.array([k is None for k in _keys(table)], dtype=bool)
    return labelled & unkeyed & (table.inclusion_prob == 1.0)


def judge_weights(table: GradeTable, judged: np.ndarray, labelled: np.ndarray) -> Weights:
    """Design weights for one judge: `judged` its items, `labelled` those with a reference."""
    probability = table.inclusion_prob
    keyed = labelled & np.array([k is not None for k in _keys(table)], dtype=bool)
    recorded = labelled & ~np.isnan(probability)
    if not keyed.any() and not recorded.any():
        return Weights(None)
    queued, attribute = _queue_attribute(table, labelled)
    if queued:
        strata = _values(table, attribute)
        certain = certainty_units(table, labelled)
        weights = np.full(table.n_items, np.nan)
        weights[certain] = 1.0
        empty = {}
        for key in np.unique(strata[judged]):
            members = judged & (strata == key) & ~certain
            n_s = int((members & labelled).sum())
            if n_s:
                weights[members & labelled] = members.sum() / n_s
            elif members.any():
                empty[str(key)] = members
        name = "the whole table" if attribute is None else attribute
        rule = f"1/π with π = labelled share of each stratum of {name}"
        if certain.any():
            rule += " (escalated labels, π = 1, counted apart: weight 1)"
        return Weights(weights, empty, rule)
    certain = certainty_units(table, labelled)
    bare = labelled & np.isnan(probability)
    if certain.any() and bare.any() and not (recorded & ~certain).any():
        # labels without a design (rule 1: a uniform sample) beside escalations: the former
        # a uniform sample of the judged items that were not escalated
        weights = np.full(table.n_items, np.nan)
        weights[certain] = 1.0
        weights[bare] = (judged & ~certain).sum() / bare.sum()
        return Weights(weights, {}, UNIFORM_BESIDE_ESCALATIONS)
    weights = np.where(recorded, 1 / np.where(recorded, probability, 1.0), np.nan)
    return Weights(weights, {}, "1/inclusion_prob as recorded")


def table_weights(table: GradeTable, ref: np.ndarray) -> dict[str, Weights]:
    """Every judge's design weights over the whole table (before it is cut into blocks,
    since π_s counts the judge's judged items of each queue stratum); {} when no label
    carries a design (uniform)."""
    out = {}
    for j, judge in enumerate(table.judges):
        judged = ~np.isnan(table.judge_scores[:, j])
        out[judge] = judge_weights(table, judged, judged & ~np.isnan(ref))
    return out if any(w.weights is not None for w in out.values()) else {}


def summary(table: GradeTable, ref: np.ndarray) -> dict[str, Any]:
    """The design over the table (items any judge graded): the JSON's `design` block, with
    every way the recorded probabilities fall short said in `warnings`."""
    judged = np.zeros(table.n_items, bool)
    if table.judges:
        judged = ~np.isnan(table.judge_scores).all(axis=1)
    labelled = judged & ~np.isnan(ref)
    found = judge_weights(table, judged, labelled)
    with_prob = int((labelled & ~np.isnan(table.inclusion_prob)).sum())
    out: dict[str, Any] = {
        "weights": found.rule,
        "labelled_items": int(labelled.sum()),
        "with_inclusion_prob": with_prob,
        "warnings": [],
    }
    if found.weights is None:
        out["assumption"] = "no label carries inclusion_prob: the labels are taken to be a "
        out["assumption"] += "simple random sample of the judged items"
        return out
    queued, attribute = _queue_attribute(table, labelled)
    if queued:
        out["strata"] = _strata(table, judged, labelled, attribute, out["warnings"])
        loose = labelled & ~np.isnan(table.inclusion_prob)
        loose &= np.array([k is None for k in _keys(table)], dtype=bool)
        certain = certainty_units(table, labelled)
        if certain.any():
            out["certainty_units"] = int(certain.sum())
        if (loose & ~certain).any():
            out["warnings"].append(
                f"{int((loose & ~certain).sum())} labelled item(s) carry an inclusion_prob "
                f"below 1 but no {STRATUM_COLUMN} (audited at request time, or another "
                "design): weighted by their queue stratum's labelled share, which is exact "
                "only when that design sampled the stratum at the same rate"
            )
        bare = labelled & np.isnan(table.inclusion_prob)
        bare &= np.array([k is None for k in _keys(table)], dtype=bool)
        if bare.any():
            out["warnings"].append(
                f"mixed design: {int(bare.sum())} labelled item(s) in queue strata carry no "
                "inclusion_prob: they are taken to be a uniform random sample of their "
                "stratum (as the queue's rounds assume); labels picked any other way (by hand, "
                "by score) bias every weighted value"
            )
        return out
    if found.rule == UNIFORM_BESIDE_ESCALATIONS:
        out["assumption"] = (
            "the labels without inclusion_prob are taken to be a simple random sample of the "
            "judged items other than the escalated ones"
        )
        return out
    keys = {k for k in _keys(table)[labelled] if k is not None}
    if keys:
        attributes = sorted(str(_attribute(k)) for k in keys)
        out["warnings"].append(
            f"labels were queued over different strata ({', '.join(sorted(set(attributes)))}): "
            "their inclusion probabilities do not combine by stratum share, so each label is "
            "weighted by its own recorded inclusion_prob"
        )
    unknown = int((labelled & np.isnan(found.weights)).sum())
    if unknown:
        out["warnings"].append(
            f"{unknown} of {int(labelled.sum())} {MISSING}; estimates over them are undefined"
        )
    return out


def _strata(table, judged, labelled, attribute, warnings: list[str]) -> dict[str, Any]:
    """Per queue stratum: items, labels, the labelled share (π used) and the last recorded π."""
    strata = _values(table, attribute)
    out = {}
    certain = certainty_units(table, labelled)
    for key in sorted(np.unique(strata[judged])):
        members = judged & (strata == key) & ~certain
        n_s, big_n = int((members & labelled).sum()), int(members.sum())
        probs = table.inclusion_prob[members & labelled]
        recorded = float(np.nanmax(probs)) if np.isfinite(probs).any() else None
        out[str(key)] = {
            "items": big_n,
            "labelled": n_s,
            "inclusion_prob": n_s / big_n,
            "recorded_inclusion_prob": recorded,
        }
        if n_s == 0:
            warnings.append(f"{key}: {big_n} judged item(s), none labelled: {EMPTY}")
        elif recorded is not None and round(recorded * big_n) != n_s:
            warnings.append(
                f"{key}: the last queue recorded inclusion_prob {recorded:.4g} "
                f"(≈{round(recorded * big_n)} of {big_n} items) but {n_s} are labelled "
                "(queued items not labelled yet, or items judged since): weights use the "
                f"labelled share {n_s / big_n:.4g}"
            )
    return out


def equal_probability_sample(
    table: GradeTable, labelled: np.ndarray
) -> tuple[np.ndarray | None, str | None]:
    """The labelled items thinned to an equal-probability sample of the judged items, and a
    note saying so; (None, why) when the labels' design is unknown or leaves items
    unrepresented.

    For a test that needs the labelled items to be a random sample of the items it will be
    applied to (the exact binomial test of selective thresholds, calibration/selective.py),
    which weights cannot fix: label i, drawn with probability π_i, is kept with probability
    π_min / π_i, so every judged item is labelled and kept with probability π_min, the
    same for all (Poisson thinning). The draw is a hash of the item id, so a report is
    reproducible and a later report keeps the same items. Labels of a uniform design (no
    inclusion probabilities) are kept whole."""
    judged = ~np.isnan(table.judge_scores).all(axis=1)
    labelled = labelled & judged
    found = judge_weights(table, judged, labelled)
    if found.weights is None:
        return labelled, None
    problem = found.problem(labelled, judged)
    if problem is not None:
        return None, f"no threshold: {problem}"
    probability = np.where(labelled, 1 / np.where(labelled, found.weights, 1.0), np.nan)
    smallest = float(np.nanmin(probability))
    if smallest >= 1.0 and (judged & ~labelled).any():
        # every label is certain (escalations, no audit): the other items had no known
        # chance of a label, perhaps none (audit_rate 0): nothing represents them
        return None, (
            f"no threshold: the {int(labelled.sum())} labels were all escalated (inclusion "
            "probability 1) and the verdicts trusted at request time were never sampled; "
            "audit a share of them (trust audit_rate > 0) or label a random sample"
        )
    if np.allclose(probability[labelled], smallest):
        return labelled, None
    draws = np.array([_unit_draw(item) for item in table.items])
    kept = labelled & (draws < smallest / np.where(labelled, probability, 1.0))
    note = (
        f"the labels were drawn with unequal inclusion probabilities (an SME queue, "
        f"escalations or audits): thresholds rest on an equal-probability sample of them, "
        f"each label kept with probability π_min/π (π_min = {smallest:.3g}): "
        f"{int(kept.sum())} of {int(labelled.sum())} labels"
    )
    return kept, note


def _unit_draw(item: str) -> float:
    """A uniform draw in [0, 1) fixed by the item id."""
    return int(hashlib.sha256(item.encode()).hexdigest()[:13], 16) / 16**13

