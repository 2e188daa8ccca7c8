"""Judges that must never be marked "replace", whatever their alt-test says.

The alt-test counts a tie as a win for both sides, so a judge that always answers the
majority label ties with every human who does too, and at 90% prevalence passes almost
always; a judge that copies one annotator sits inside the reference the others are scored
against and passes always. Three checks, each with the reason the trust map prints:

- constant: one score on every item of the block;
- near-constant: one score on at least `NEAR_CONSTANT_SHARE` of the items while the humans give
  that score at least `NEAR_CONSTANT_GAP` less often — far more uniform than the people it
  would replace (a judge right to answer the majority label often is not: the humans agree);
- a copy: the judge's scores equal one annotator's on at least `COPY_SHARE` of their
  (≥ `COPY_MIN_ITEMS`) shared items, at least `COPY_GAP` more often than they equal any other
  annotator's — one annotator stands out, as a copy does and a judge near the consensus does not;
- no agreement beyond chance: the judge's chance-corrected agreement with the humans (Cohen's
  κ, mean over humans, for labels and ordinal scales; Pearson r with the reference on interval
  scales) has an interval reaching 0 or below — a near-constant judge, or a guesser, whose
  agreement is what its label frequencies earn by chance (Cohen 1960, "A coefficient of
  agreement for nominal scales", Educ. Psychol. Meas. 20(1)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibration.formatting import fmt
from calibration.scoring import AlignContext

NEAR_CONSTANT_SHARE = 0.95
NEAR_CONSTANT_GAP = 0.05
COPY_SHARE = 0.95
COPY_GAP = 0.05
COPY_MIN_ITEMS = 10
TOLERANCE = 1e-9
CHANCE_METRIC = {"nominal": "cohen_kappa", "ordinal": "cohen_kappa", "interval": "pearson_r"}


def _shown(value: float, context: AlignContext | None) -> str:
    labels = context.labels if context else None
    return repr(labels[int(value)]) if labels is not None else f"{value:g}"


def constant_reason(judge: np.ndarray, humans: np.ndarray, context=None) -> str | None:
    scored = judge[~np.isnan(judge) & (~np.isnan(humans)).any(1)]
    if scored.size < 2 or np.ptp(scored) > TOLERANCE:
        return None
    return f"constant: the judge gave {_shown(scored[0], context)} on all {scored.size} items"


def near_constant_reason(judge: np.ndarray, humans: np.ndarray, context=None) -> str | None:
    scored = ~np.isnan(judge) & (~np.isnan(humans)).any(1)
    if scored.sum() < 2:
        return None
    values, counts = np.unique(judge[scored], return_counts=True)
    top = values[np.argmax(counts)]
    share = counts.max() / scored.sum()
    labels = humans[scored][~np.isnan(humans[scored])]
    human_share = float(np.mean(np.abs(labels - top) <= TOLERANCE)) if labels.size else 1.0
    if share < NEAR_CONSTANT_SHARE or share - human_share < NEAR_CONSTANT_GAP:
        return None
    return (
        f"near-constant: the judge gave {_shown(top, context)} on {share:.0%} of "
        f"{int(scored.sum())} items, the humans on {human_share:.0%} of their scores"
    )


def copy_reason(judge: np.ndarray, humans: np.ndarray, names: list[str]) -> str | None:
    shares = []
    for j, name in enumerate(names):
        shared = ~np.isnan(judge) & ~np.isnan(humans[:, j])
        if shared.sum() >= COPY_MIN_ITEMS:
            same = np.abs(judge[shared] - humans[shared, j]) <= TOLERANCE
            shares.append((float(same.mean()), int(shared.sum()), name))
    if len(shares) < 2:
        return None
    shares.sort(reverse=True)
    (top, n, name), (second, _, other) = shares[0], shares[1]
    if top < COPY_SHARE or top - second < COPY_GAP:
        return None
    return (
        f"reproduces annotator {name}: the same score on {top:.0%} of {n} shared items "
        f"(next closest, {other}: {second:.0%})"
    )


def raw_degeneracy(
    judge: np.ndarray, humans: np.ndarray, names: list[str], context: AlignContext | None = None
) -> str | None:
    """Constant, near-constant or a copy of one annotator, from the block's scores."""
    return (
        constant_reason(judge, humans, context)
        or near_constant_reason(judge, humans, context)
        or copy_reason(judge, humans, names)
    )


def chance_reason(block: dict[str, Any], level: str) -> str | None:
    """No agreement beyond chance shown: the chance-corrected metric's interval does not
    exceed 0, or there is no interval to test it with (a point value above 0 is not a test;
    κ's jackknife interval needs at most 500 units or resamples, r's needs |r| < 1)."""
    metric = CHANCE_METRIC[level]
    value = block.get(metric)
    interval = (block.get("ci") or {}).get(metric)
    name = "Cohen's κ" if metric == "cohen_kappa" else "Pearson r"
    if value is None:
        return f"no agreement beyond chance shown: {name} is undefined here"
    if interval is None:
        why = (block.get("no_interval") or {}).get(metric) or "run with --bootstrap > 0"
        return f"no agreement beyond chance shown: {name} = {fmt(value)} has no interval ({why})"
    if interval[0] > 0:
        return None
    shown = f"{fmt(value)} [{fmt(interval[0])}, {fmt(interval[1])}]"
    return f"no agreement beyond chance shown: {name} with the humans {shown}"
