"""The SME cross-evaluation's headline numbers over several target runs pooled (seed 004
pools five targets): per judge, MAD on cultural minus MAD on linguistic prompts with a
bootstrap interval, and per dialect, how lenient the SMEs and each judge are.

MAD_j = mean |judge − SME| over judge j's evaluations, in percentage points (scores are on
0-100), micro over evaluations (notes/004_sme_crosseval.md l. 226-229, 274-276); the paper's
gap: "MAD_cultural − MAD_linguistic ∈ [1.83, 4.78] pp" for every judge (l. 249, 288-289).
The interval resamples prompts with replacement within each category (the paper gives none;
prompts, not answers, are the independent units since every target answers each prompt).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import numpy as np

from calibration.bootstrap import percentile_interval
from calibration.formats.interchange import GradeRow

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


def category_gap(evals: list[Evaluation], resamples: int, seed: int) -> dict[str, Any]:
    """ΔMAD = MAD_cultural − MAD_linguistic of one judge's evaluations, with its interval."""
    blocks = {c: _per_prompt([e for e in evals if e.category == c]) for c in CATEGORIES}
    cells = {
        c: {"n": int(n.sum()), "mad_pp": float(s.sum() / n.sum()) if n.sum() else None}
        for c, (s, n) in blocks.items()
    }
    if any(cell["mad_pp"] is None for cell in cells.values()):
        return {**cells, "delta_mad_pp": None, "ci": None}
    rng = np.random.default_rng(seed)
    mads = []
    for s, n in blocks.values():
        draws = rng.integers(0, len(s), size=(resamples, len(s)))
        mads.append(s[draws].sum(axis=1) / n[draws].sum(axis=1))
    delta = cells["cultural"]["mad_pp"] - cells["linguistic"]["mad_pp"]
    ci = percentile_interval(mads[0] - mads[1]) if resamples else None
    return {**cells, "delta_mad_pp": delta, "ci": ci}


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


def pooled(rows: list[GradeRow], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    evals = evaluations(rows)
    judges = sorted({e.judge for e in evals})
    return {
        "evaluations": len(evals),
        "category_gap": {
            j: category_gap([e for e in evals if e.judge == j], resamples, seed) for j in judges
        },
        "dialect_leniency": dialect_leniency(evals),
        "caveat": DIALECT_CAVEAT,
    }
