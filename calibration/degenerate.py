"""Judges that must never be marked "replace", whatever their alt-test says.

The alt-test counts a tie as a win for both sides, so a judge that always answers the
majority label ties with every human who does too, and at 90% prevalence passes almost
always; a judge that copies one annotator sits inside the reference the others are scored
against and passes always. Three checks, each with the reason the trust map prints:

- constant: one score on every item of the block;
- near-constant: one score on at least `NEAR_CONSTANT_SHARE` of the items while the humans give
  that score at least `NEAR_CONSTANT_GAP` less often — far more uniform than the people it
  would replace (a judge right to answer the majority label often is not: the humans agree);
- an all-but-exact copy of one annotator: the judge's scores equal one annotator's on at least
  `COPY_SHARE` of their (≥ `COPY_MIN_ITEMS`) shared items, at least `COPY_GAP` more often than
  any other annotator's (an exact copy of a very accurate annotator is close to the truth, so
  the test below has little to see, yet it is no independent judge);
- a partial copy of one annotator a: the judge agrees with a more than its
  agreement with the other annotators implies. The leave-one-out alt-test scores the judge
  against annotator h_j by its agreement with the *other* annotators, a among them, so every
  bit of agreement with a beyond what the truth explains wins the judge the tests of all the
  others (measured: 3 annotators 75% accurate, a judge equal to one of them on 70% of the
  items and 56% accurate was "replace" in 20 of 20 reports, an independent judge as accurate
  in 8 of 20). Under the alt-test's own premise —
  raters err independently given the item's true label — the chance-corrected agreement of
  two raters factorises, e_uv = λ_u·λ_v (for labels with symmetric errors, e_uv = P(u = v) −
  Σ_k p_u(k)p_v(k) = δ_u δ_v (1 − Σ_k π_k²), δ the rater's accuracy over chance; for scores
  e_uv is their covariance, λ the loading on the truth), so for the judge J and annotators a,
  b, c the tetrad difference e_Ja·e_bc − e_Jb·e_ac is 0 whatever the raters' accuracies
  (Spearman 1904; the vanishing tetrads of a one-factor model, Bollen & Ting 1993, "Confirmatory
  tetrad analysis", Sociological Methodology 23). A copy of a raises e_Ja alone. The test: the
  mean of those tetrads over the pairs (b, c) of other annotators, over its delete-a-group
  jackknife SE (≤ `COPY_GROUPS` groups of items, or the clusters), one-sided t; Bonferroni over
  the annotators at `COPY_ALPHA`. An honest judge is flagged in at most 5% of blocks (tests/
  stats/test_alt_test_rates.py measures it), the price being a "not_replacement" there;
- no agreement beyond chance: the judge's chance-corrected agreement with the humans (Cohen's
  κ, mean over humans, for labels and ordinal scales; Pearson r with the reference on interval
  scales) has an interval reaching 0 or below — a near-constant judge, or a guesser, whose
  agreement is what its label frequencies earn by chance (Cohen 1960, "A coefficient of
  agreement for nominal scales", Educ. Psychol. Meas. 20(1)).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from calibration.formatting import fmt
from calibration.scoring import AlignContext

NEAR_CONSTANT_SHARE = 0.95
NEAR_CONSTANT_GAP = 0.05
COPY_SHARE = 0.95
COPY_GAP = 0.05
COPY_ALPHA = 0.05
COPY_MARGIN = 0.25  # share of an annotator's idiosyncrasy a judge must reproduce
COPY_MIN_ITEMS = 10
COPY_GROUPS = 200
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


def _pair_sums(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, n_groups: int, labels: int | None
):
    """The sums whose ratios give the chance-corrected agreement of two raters on their
    shared items, over all items (row 0) and leaving out each group of `groups` in turn
    (rows 1..`n_groups`): for labels, Σ[x = y] − Σ_k n_x(k) n_y(k) / n (the numerator of
    Cohen's κ); for numbers, their covariance. A left-out group's sums are the total less
    the group's, not a weight matrix of groups × items (issue 39: 0.27 GB at 165k labelled
    items)."""
    shared = ~np.isnan(x) & ~np.isnan(y)
    xs, ys = np.where(shared, x, 0.0), np.where(shared, y, 0.0)
    if labels is None:
        columns = [shared, xs, ys, xs * ys]
    else:
        codes = np.arange(labels)
        one_x = (xs[:, None] == codes) & shared[:, None]
        one_y = (ys[:, None] == codes) & shared[:, None]
        columns = [shared, shared & (np.abs(xs - ys) <= TOLERANCE), *one_x.T, *one_y.T]
    matrix = np.column_stack(columns).astype(float)
    total = matrix.sum(axis=0)
    in_group = [np.bincount(groups, weights=column, minlength=n_groups) for column in matrix.T]
    sums = np.vstack([total, total - np.column_stack(in_group)])
    n = sums[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        if labels is None:
            return sums[:, 3] / n - sums[:, 1] * sums[:, 2] / n**2, shared.sum()
        k = labels
        chance = (sums[:, 2 : 2 + k] * sums[:, 2 + k :]).sum(axis=1) / n**2
        return sums[:, 1] / n - chance, shared.sum()


def _jackknife_groups(units: np.ndarray) -> tuple[np.ndarray, int]:
    """Each item's group for a delete-a-group jackknife SE: at most `COPY_GROUPS` groups of
    units (units themselves when fewer), and how many groups there are."""
    _, codes = np.unique(units, return_inverse=True)
    groups = min(int(codes.max()) + 1 if codes.size else 0, COPY_GROUPS)
    return codes % max(groups, 1), groups


def copy_test(
    judge: np.ndarray,
    humans: np.ndarray,
    names: list[str],
    labels: int | None,
    clusters: np.ndarray | None = None,
) -> list[tuple[str, float, float, float]]:
    """Per annotator a with ≥ 2 others: (name, one-sided p, the judge's chance-corrected
    agreement e_Ja with a, the agreement its agreement with the others implies).

    Tested: e_Ja − implied > `COPY_MARGIN` · ψ_a, with implied = mean over pairs (b, c) of the
    other annotators of e_Jb·e_ac / e_bc, and ψ_a = e_aa − mean of e_ab·e_ac / e_bc the part
    of a's own variation the truth does not explain (its idiosyncrasy). A judge copying a on
    a share s of the items adds s·ψ_a; a margin of a quarter of ψ_a keeps honest judges under
    a model that only nearly holds (scores clipped at the scale's ends, errors not quite
    symmetric) from being called copies once there are items enough to see the misfit."""
    raters = np.column_stack([judge, humans])
    units = np.arange(len(judge)) if clusters is None else clusters
    codes, groups = _jackknife_groups(units[~np.isnan(judge)])
    raters = raters[~np.isnan(judge)]
    if groups < 3:
        return []
    m = humans.shape[1]
    e: dict[tuple[int, int], np.ndarray] = {}
    for u in range(m + 1):
        for v in range(u, m + 1):
            values, shared = _pair_sums(raters[:, u], raters[:, v], codes, groups, labels)
            if shared >= COPY_MIN_ITEMS:
                e[(u, v)] = e[(v, u)] = values
    out = []
    for a in range(1, m + 1):
        others = [b for b in range(1, m + 1) if b != a]
        pairs = [
            (b, c)
            for b in others
            for c in others
            if b != c and {(0, a), (a, a), (b, c), (0, b), (a, b), (a, c)} <= e.keys()
        ]
        if not pairs:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            implied = np.mean([e[(0, b)] * e[(a, c)] / e[(b, c)] for b, c in pairs], axis=0)
            common = np.mean([e[(a, b)] * e[(a, c)] / e[(b, c)] for b, c in pairs], axis=0)
            excess = e[(0, a)] - implied - COPY_MARGIN * (e[(a, a)] - common)
            spread = excess[1:] - excess[1:].mean()
            se = float(np.sqrt((groups - 1) / groups * np.sum(spread**2)))
        if not implied[0] > 0:
            continue  # a judge at or below chance: nothing to copy (the chance check's case)
        if not np.isfinite(excess[0]) or not np.isfinite(se) or se <= 0:
            continue
        p = float(stats.t.sf(excess[0] / se, groups - 1))
        out.append((names[a - 1], p, float(e[(0, a)][0]), float(implied[0])))
    return out


def identical_reason(judge: np.ndarray, humans: np.ndarray, names: list[str]) -> str | None:
    """An exact or all-but-exact copy: the same score as one annotator on ≥ `COPY_SHARE` of
    their shared items and ≥ `COPY_GAP` more often than as any other annotator."""
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


def copy_reason(
    judge: np.ndarray,
    humans: np.ndarray,
    names: list[str],
    labels: int | None,
    clusters: np.ndarray | None = None,
) -> str | None:
    """An all-but-exact copy (`identical_reason`), or agreement with one annotator beyond
    what the judge's agreement with the others implies (`copy_test`, Bonferroni over the
    annotators at `COPY_ALPHA`)."""
    identical = identical_reason(judge, humans, names)
    if identical:
        return identical
    found = copy_test(judge, humans, names, labels, clusters)
    if not found:
        return None
    name, p, seen, implied = min(found, key=lambda row: row[1])
    adjusted = min(1.0, p * len(found))
    if adjusted > COPY_ALPHA:
        return None
    kind = "agreement beyond chance" if labels is not None else "covariance"
    return (
        f"reproduces annotator {name}: its {kind} with {name} ({seen:.3f}) exceeds what its "
        f"agreement with the other annotators implies ({implied:.3f}); tetrad test p = "
        f"{adjusted:.2g} after Bonferroni over {len(found)} annotators"
    )


def raw_degeneracy(
    judge: np.ndarray,
    humans: np.ndarray,
    names: list[str],
    context: AlignContext | None = None,
    clusters: np.ndarray | None = None,
) -> str | None:
    """Constant, near-constant or a copy of one annotator, from the block's scores."""
    labels = len(context.labels) if context is not None and context.labels is not None else None
    return (
        constant_reason(judge, humans, context)
        or near_constant_reason(judge, humans, context)
        or copy_reason(judge, humans, names, labels, clusters)
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
