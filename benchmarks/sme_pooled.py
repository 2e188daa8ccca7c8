"""The SME cross-evaluation's headline numbers over several target runs pooled (seed 004
pools five targets): per judge, MAD on cultural minus MAD on linguistic prompts with its
interval, and per dialect, how lenient the SMEs and each judge are.

MAD_j = mean |judge − SME| over judge j's evaluations, in percentage points (scores are on
0-100), micro over evaluations (notes/004_sme_crosseval.md l. 226-229, 274-276); the paper's
gap: "MAD_cultural − MAD_linguistic ∈ [1.83, 4.78] pp" for every judge (l. 249, 288-289).

The interval (the paper gives none) treats prompts, not answers, as the independent units,
since every target answers each prompt: each category's MAD is a ratio over its prompts (sum
of |errors| / evaluations), whose linearised standard error is CR1 over the prompts
(calibration.intervals.ratio_se); the two categories share no prompt, so the gap's variance
is the sum, on Welch–Satterthwaite degrees of freedom from each category's prompts − 1, and
the interval is Student t (docs/statistics.md, "Clusters"). With fewer than MIN_CLUSTERS
prompts in a category there is no interval, and the reason says so: the paper's six prompts a
category are just above it, and a percentile bootstrap over six units covers far less than
it claims.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import numpy as np

from calibration.formats.interchange import GradeRow
from calibration.intervals import MIN_CLUSTERS, ratio_se, t_interval, too_few_clusters

CATEGORIES = ("cultural", "linguistic")
DIALECT_CAVEAT = (
    "dialect gaps mix the targets' knowledge with the SMEs' leniency: the paper stresses "
    "that Iraqi and Egyptian SMEs need not grade alike"
)


@dataclass(frozen=True)
class Evaluation:
    judge: str
    answer: str  # "<SME item>|<target>"
    prompt: str  # the SME item, shared by every target's answer
    dialect: str
    category: str
    judge_score: float
    sme_score: float


def evaluations(rows: list[GradeRow]) -> list[Evaluation]:
    """Judge grades paired with the mean SME grade of the same answer."""
    human: dict[str, list[float]] = defaultdict(list)
    attributes: dict[str, dict[str, str]] = defaultdict(dict)
    for row in rows:
        attributes[row.item_id].update(row.attributes)
        if row.rater_kind == "human":
            human[row.item_id].append(row.score)
    out = []
    for row in rows:
        if row.rater_kind != "judge" or row.item_id not in human:
            continue
        attrs = attributes[row.item_id]
        out.append(
            Evaluation(
                judge=row.rater,
                answer=row.item_id,
                prompt=attrs.get("bench_item", row.item_id.split("|")[0]),
                dialect=attrs.get("dialect", "unknown"),
                category=attrs.get("category", "unknown"),
                judge_score=row.score,
                sme_score=fmean(human[row.item_id]),
            )
        )
    return out


def _per_prompt(evals: list[Evaluation]) -> tuple[np.ndarray, np.ndarray]:
    """Sum of |error| and number of evaluations per prompt, prompts in sorted order."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for e in evals:
        sums[e.prompt][0] += abs(e.judge_score - e.sme_score)
        sums[e.prompt][1] += 1
    ordered = [sums[p] for p in sorted(sums)]
    return np.array([s for s, _ in ordered]), np.array([n for _, n in ordered])


GAP_METHOD = (
    "welch_t_cr1: Δ ± t(ν)·√(SE_cultural² + SE_linguistic²), each SE the linearised CR1 "
    "standard error of a category's MAD over its prompts, ν Welch–Satterthwaite from each "
    "category's prompts − 1"
)


def category_gap(evals: list[Evaluation], confidence: float = 0.95) -> dict[str, Any]:
    """ΔMAD = MAD_cultural − MAD_linguistic of one judge's evaluations, with its interval
    (GAP_METHOD), or the reason it has none."""
    blocks = {c: _per_prompt([e for e in evals if e.category == c]) for c in CATEGORIES}
    cells = {
        c: {
            "n": int(n.sum()),
            "prompts": len(n),
            "mad_pp": float(s.sum() / n.sum()) if n.sum() else None,
        }
        for c, (s, n) in blocks.items()
    }
    if any(cell["mad_pp"] is None for cell in cells.values()):
        return {**cells, "delta_mad_pp": None, "ci": None, "method": None}
    delta = cells["cultural"]["mad_pp"] - cells["linguistic"]["mad_pp"]
    found = {"delta_mad_pp": delta, "ci": None, "method": GAP_METHOD}
    fewest = min(cell["prompts"] for cell in cells.values())
    if fewest < MIN_CLUSTERS:
        return {**cells, **found, "missing": too_few_clusters(fewest)}
    sides = [(ratio_se(s, n, None)[0], len(n) - 1) for s, n in blocks.values()]
    variance = sum(se**2 for se, _ in sides)
    if variance == 0:  # every prompt's MAD is its category's: nothing to estimate a spread from
        return {
            **cells,
            **found,
            "missing": "every prompt's MAD equals its category's: no variance",
        }
    df = variance**2 / sum(se**4 / units for se, units in sides if se > 0)
    return {**cells, **found, "ci": t_interval(delta, variance**0.5, df, confidence)}


def dialect_leniency(evals: list[Evaluation]) -> dict[str, Any]:
    """Per dialect: the SMEs' mean grade and each judge's mean and signed error (judge −
    SME, pp; positive = more lenient than the SMEs)."""
    out: dict[str, Any] = {}
    for dialect in sorted({e.dialect for e in evals}):
        mine = [e for e in evals if e.dialect == dialect]
        answers = {e.answer: e.sme_score for e in mine}
        out[dialect] = {
            "answers": len(answers),
            "sme_mean": fmean(answers.values()),
            "judges": {
                judge: {
                    "n": len(js),
                    "judge_mean": fmean(e.judge_score for e in js),
                    "signed_error_pp": fmean(e.judge_score - e.sme_score for e in js),
                }
                for judge in sorted({e.judge for e in mine})
                for js in [[e for e in mine if e.judge == judge]]
            },
        }
    return out


def pooled(rows: list[GradeRow], confidence: float = 0.95) -> dict[str, Any]:
    evals = evaluations(rows)
    judges = sorted({e.judge for e in evals})
    return {
        "evaluations": len(evals),
        "category_gap": {
            j: category_gap([e for e in evals if e.judge == j], confidence) for j in judges
        },
        "dialect_leniency": dialect_leniency(evals),
        "caveat": DIALECT_CAVEAT,
    }
