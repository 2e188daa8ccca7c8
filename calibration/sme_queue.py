"""Which unlabelled items SMEs should grade next (`qadi sme queue`), and with what probability.

The design (docs/statistics.md, "SME queue and inclusion probabilities"): a stratified sample
without replacement, the strata the values of `by` (one stratum without it).
1. Counts. First every stratum gets labels up to FLOOR (5) in all, counting the labels it has,
   the stratum with the fewest first, so that each stratum's variance can be estimated (with
   t on n − 1 df) before widths are compared. Then labels go one at a time to the stratum whose
   judge-corrected interval is predicted widest after the labels already queued for it (its
   best judge's predicted half-width, calibration/budget.py; a stratum where no judge has two
   labels yet is predicted from the human variance of all strata). The counts k_s depend on
   the labels so far, never on which items are drawn next.
2. Items. Inside a stratum the k_s items are drawn uniformly at random (seeded) from its M_s
   unlabelled judged items, so given the allocation each has probability k_s / M_s.
3. The probability written. `inclusion_prob` = (n_s + k_s) / N_s, with n_s the stratum's
   labels before this round and N_s its judged items (both without the items escalated at
   request time, labelled with certainty for themselves: design.certainty_units): the
   probability that an item of the stratum is labelled once this round's labels are in, which
   is what a Horvitz-Thompson weight needs. It is k_s / M_s composed with the earlier rounds
   (1 − Π(1 − k_r/M_r) telescopes to it) when the earlier labels of the stratum were
   themselves a uniform sample of it: labels of earlier rounds with the same `by`, or an
   initial random sample. Each row also carries `inclusion_stratum` ("ATTR=VALUE", or "all"),
   so that the estimate can combine rounds (calibration/design.py).
Restriction: rounds must share `by`. Rounds over different attributes do not compose into one
probability per stratum, so a queue over labels an earlier round drew with another `by` is
refused.

Why not the items the judges disagree on most: PPI's correction is the mean of Y − λf over
the labelled items, unbiased only when they are a known-probability sample of their stratum.
Labelling the most disputed items would over-weight exactly the items where the judge is off,
and the weights that undo it (active inference) would be extreme. Widths choose *how many*
labels a stratum gets; chance chooses *which*, with a probability the estimate weights by.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import special

from calibration.budget import BudgetModel
from calibration.design import STRATUM_COLUMN, certainty_units, stratum_key
from calibration.formats.interchange import SME_TEXTS, GradeRow, neutralise_formula
from calibration.metrics import reference_scores
from calibration.table import GradeTable, build_table

FLOOR = 5  # labels a stratum gets before widths are compared (t on 4 df; docs/statistics.md)
QUANTILE = 0.8  # widths compared at the budget's default quantile


@dataclass
class Stratum:
    """One stratum of the queue: its judged items, labels before, and labels queued now."""

    key: str
    judged: int
    labelled: int
    queued: int = 0

    @property
    def inclusion_prob(self) -> float:
        return (self.labelled + self.queued) / self.judged


@dataclass
class Queue:
    table: GradeTable
    order: list[int]  # table indices, in queue order
    strata: dict[str | None, Stratum]
    stratum_of: dict[int, str | None]  # table index -> its stratum value


def choose(
    rows: Iterable[GradeRow],
    k: int,
    by: str | None,
    alpha: float = 0.05,
    seed: int = 0,
    floor: int = FLOOR,
) -> Queue:
    """Up to k unlabelled, judged items, in queue order, with their strata."""
    return choose_from_table(build_table(rows), k, by, alpha, seed, floor)


def choose_from_table(
    table: GradeTable, k: int, by: str | None, alpha: float, seed: int, floor: int = FLOOR
) -> Queue:
    """`choose` on a built table (the simulations in tests/stats build tables directly)."""
    ref = reference_scores(table.human_scores, "mean", table.humans)
    judged = ~np.isnan(table.judge_scores).all(axis=1)
    _check_rounds(table, judged & ~np.isnan(ref), by)
    # items escalated at request time are labelled for themselves (certainty units, weight
    # 1): a stratum's probability is its queue share among its other items (design.py)
    judged &= ~certainty_units(table, judged & ~np.isnan(ref))
    values = [None if by is None else a.get(by) for a in table.attributes]
    rng = np.random.default_rng(seed)
    pools, curves, strata = {}, {}, {}
    for value in sorted({values[i] for i in np.flatnonzero(judged)}, key=str):
        mask = np.array([v == value for v in values], dtype=bool)
        pool = np.flatnonzero(mask & judged & np.isnan(ref))
        pools[value] = pool[rng.permutation(len(pool))]
        labelled = int((mask & judged & ~np.isnan(ref)).sum())
        strata[value] = Stratum(stratum_key(by, value), int((mask & judged).sum()), labelled)
        curves[value] = _widths(table, ref, mask, len(pool), alpha)
        if np.isinf(curves[value][-1]):
            curves[value] = _without_judge(ref, mask, len(pool), alpha)
    taken = _allocate(curves, strata, {v: len(p) for v, p in pools.items()}, k, floor)
    order = [int(pools[value][count]) for value, count in taken]
    for value, _ in taken:
        strata[value].queued += 1
    return Queue(table, order, strata, {i: values[i] for i in order})


def _check_rounds(table: GradeTable, labelled: np.ndarray, by: str | None) -> None:
    """Refuse a round whose strata differ from the earlier rounds' (see the docstring)."""
    earlier = {
        table.attributes[i][STRATUM_COLUMN]
        for i in np.flatnonzero(labelled)
        if STRATUM_COLUMN in table.attributes[i]
    }
    mine = stratum_key(by, "")
    other = sorted(k for k in earlier if k.partition("=")[0] != mine.partition("=")[0])
    if other:
        raise ValueError(
            f"by: earlier queue rounds drew labels by {other[0]!r}, this one by "
            f"{by or 'nothing'}: rounds over different strata have no common inclusion "
            "probability; queue with the same --by"
        )


def _widths(table: GradeTable, ref: np.ndarray, mask: np.ndarray, pool: int, alpha: float):
    """Predicted half-width after m more labels (m = 0..pool): the best judge's; ∞ if unknown."""
    best = np.full(pool + 1, np.inf)
    for j in range(len(table.judges)):
        scores = table.judge_scores[:, j]
        labelled = mask & ~np.isnan(scores) & ~np.isnan(ref)
        if labelled.sum() < 2:
            continue
        unlabelled = mask & ~np.isnan(scores) & np.isnan(ref)
        model = BudgetModel.from_arrays(ref[labelled], scores[labelled], scores[unlabelled])
        curve = model.ppi_halfwidths(alpha, QUANTILE, np.arange(int(unlabelled.sum()) + 1))
        best[: len(curve)] = np.minimum(best[: len(curve)], curve)
    return best


def _without_judge(ref: np.ndarray, mask: np.ndarray, pool: int, alpha: float) -> np.ndarray:
    """∞ until the stratum has two labels, then t_{n−1} √(Var(Y of all strata) / n)."""
    labelled = int((mask & ~np.isnan(ref)).sum()) + np.arange(pool + 1)
    known = ~np.isnan(ref)
    var_all = float(np.nanvar(ref, ddof=1)) if known.sum() > 1 else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = special.stdtrit(np.maximum(labelled - 1, 1), 1 - alpha / 2)
        return np.where(labelled >= 2, t * np.sqrt(var_all / labelled), np.inf)


def _allocate(
    curves: dict, strata: dict, sizes: dict, k: int, floor: int
) -> list[tuple[str | None, int]]:
    """The floor first (fewest labels first), then each label to the widest stratum."""
    given = dict.fromkeys(curves, 0)
    taken: list[tuple[str | None, int]] = []
    while len(taken) < k:
        short = [
            v for v in curves if strata[v].labelled + given[v] < floor and given[v] < sizes[v]
        ]
        if not short:
            break
        value = min(short, key=lambda v: (strata[v].labelled + given[v], str(v)))
        taken.append((value, given[value]))
        given[value] += 1
    heap = [(-curves[v][given[v]], str(v), v) for v in curves if given[v] < sizes[v]]
    heapq.heapify(heap)
    while heap and len(taken) < k:
        _, name, value = heapq.heappop(heap)
        taken.append((value, given[value]))
        given[value] += 1
        if given[value] < sizes[value]:
            heapq.heappush(heap, (-curves[value][given[value]], name, value))
    return taken


def queue_records(
    queue: Queue, texts: dict[str, dict[str, str | None]] | None = None, guide: str = ""
) -> list[dict[str, str]]:
    """Interchange rows with empty score, rater and rationale, ready for an SME to fill in:
    each with the texts she grades by (`texts`: item id -> question, answer, reference;
    `guide`: the rubric as she reads it) and its inclusion probability and stratum. Texts
    starting like a formula are quoted (neutralise_formula): a spreadsheet opens the file."""
    table = queue.table
    columns = sorted({key for i in queue.order for key in table.attributes[i]} - {STRATUM_COLUMN})
    records = []
    for i in queue.order:
        stratum = queue.strata[queue.stratum_of[i]]
        shown = (texts or {}).get(table.items[i], {})
        values = (shown.get("question"), shown.get("answer"), shown.get("reference"), guide)
        cells = zip(SME_TEXTS, values, strict=True)
        records.append(
            {
                "item_id": table.items[i],
                **{name: neutralise_formula(value or "") for name, value in cells},
                "score": "",
                "rater": "",
                "rationale": "",
                "rater_kind": "human",
                "inclusion_prob": repr(stratum.inclusion_prob),
                STRATUM_COLUMN: stratum.key,
                **{c: table.attributes[i].get(c, "") for c in columns},
            }
        )
    return records
