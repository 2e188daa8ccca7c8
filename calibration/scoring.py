"""Alignment scorings of the alt-test, one registered unit each.

A scoring says how well a rater's label x on item i agrees with the other humans' labels R_i:
S(x, R_i), higher is better (Calderon, Reichart, Dror, "The Alternative Annotator Test for
LLM-as-a-Judge", ACL 2025, §3.1), and may weight the items of a comparison. The alt-test
compares S(judge, R_i) with S(human j, R_i) item by item (`calibration.alt_test`).

- `accuracy` (published): mean_r 1[x = r].
- `neg_rmse` (published): −sqrt(mean_r (x − r)²).
  Both reproduce the authors' `accuracy` and `neg_rmse` (github.com/nitaytech/AltTest).
- `balanced_accuracy`: accuracy with each item weighted by the inverse frequency of its
  leave-one-out majority label among the annotator's items (inverse probability weighting,
  the paper's Appendix C.1 "Handling Imbalanced Labels"; a tie between majority labels splits
  the item between them). Every label class then weighs the same, so agreeing on the majority
  label — which a constant judge earns by chance, and which counts as a tie the judge wins —
  no longer decides the test: the chance-corrected scoring (as balanced accuracy is, where
  every constant labeller scores 1/L).
- `jaccard`: mean_r |x ∩ r| / |x ∪ r| over set-valued labels written `a|b|c` or as a JSON
  list (`["a", "b"]`): the similarity variant SIM of §3.1 for structured labels, where a
  partly right tag set is better than a wrong one.

To add a scoring: write `align(x, others, context) -> (n,)` (x: the rater's label per item,
others: (n, k) the other humans' labels, NaN where missing; labels are codes into
`context.labels` at level nominal), optionally `weights(others, context) -> (n,)`, and add a
`ScoringUnit` to `SCORINGS`; `--alt-scoring NAME` and the API's `alt_scoring` accept it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class AlignContext:
    """What a scoring may need beyond the numbers: the label strings of nominal codes."""

    labels: list[str] | None = None


Align = Callable[[np.ndarray, np.ndarray, AlignContext], np.ndarray]
Weights = Callable[[np.ndarray, AlignContext], np.ndarray]
ALL_LEVELS = frozenset({"nominal", "ordinal", "interval"})


@dataclass(frozen=True)
class ScoringUnit:
    name: str
    align: Align
    description: str
    levels: frozenset[str] = ALL_LEVELS
    weights: Weights | None = None
    published: bool = False  # reproduces the authors' code exactly


def _present(others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    present = ~np.isnan(others)
    return present, present.sum(1)


def accuracy(x: np.ndarray, others: np.ndarray, _: AlignContext) -> np.ndarray:
    present, count = _present(others)
    return (present & (others == x[:, None])).sum(1) / count


def neg_rmse(x: np.ndarray, others: np.ndarray, _: AlignContext) -> np.ndarray:
    present, count = _present(others)
    squared = np.where(present, (others - x[:, None]) ** 2, 0.0).sum(1)
    return -np.sqrt(squared / count)


def majority_weights(others: np.ndarray, _: AlignContext) -> np.ndarray:
    """Inverse-frequency weights of each item's majority label among `others` (ties split
    the item between the tied labels), scaled to mean 1: every class sums to the same."""
    present = ~np.isnan(others)
    values, codes = np.unique(others[present], return_inverse=True)
    counts = np.zeros((len(others), max(len(values), 1)))
    rows = np.nonzero(present)[0]
    np.add.at(counts, (rows, codes), 1.0)
    top = counts == counts.max(1, keepdims=True)
    membership = top / top.sum(1, keepdims=True)
    totals = membership.sum(0)
    used = totals > 0
    per_class = np.divide(membership, totals, out=np.zeros_like(membership), where=used)
    return per_class.sum(1) * len(others) / max(int(used.sum()), 1)


def tags(label: str) -> frozenset[str]:
    """A structured label as a set of tags: a JSON list, or tags separated by '|'."""
    text = label.strip()
    if text.startswith("["):
        try:
            return frozenset(str(t).strip() for t in json.loads(text))
        except (ValueError, TypeError):
            pass
    return frozenset(t.strip() for t in text.split("|") if t.strip())


def jaccard(x: np.ndarray, others: np.ndarray, context: AlignContext) -> np.ndarray:
    """Mean Jaccard similarity of the tag sets, evaluated once per distinct label pair."""
    if context.labels is None:
        raise ValueError("alt_scoring: jaccard compares labels; use --level nominal")
    similarity = _jaccard_table(tuple(context.labels))
    present, count = _present(others)
    xs = np.repeat(x[:, None], others.shape[1], axis=1)[present].astype(int)
    rs = others[present].astype(int)
    values = np.zeros(others.shape)
    values[present] = [similarity(a, b) for a, b in zip(xs, rs, strict=True)]
    return values.sum(1) / count


def _jaccard_table(labels: tuple[str, ...]) -> Callable[[int, int], float]:
    sets = [tags(label) for label in labels]

    @lru_cache(maxsize=65536)
    def similarity(a: int, b: int) -> float:
        union = sets[a] | sets[b]
        return len(sets[a] & sets[b]) / len(union) if union else 1.0

    return similarity


SCORINGS: tuple[ScoringUnit, ...] = (
    ScoringUnit("accuracy", accuracy, "share of the other humans with the same label",
                published=True),
    ScoringUnit("neg_rmse", neg_rmse, "minus the root mean squared distance to the other "
                "humans' scores", levels=frozenset({"ordinal", "interval"}), published=True),
    ScoringUnit("balanced_accuracy", accuracy, "accuracy with every majority-label class "
                "weighted equally (inverse probability weights, paper Appendix C.1)",
                weights=majority_weights),
    ScoringUnit("jaccard", jaccard, "mean Jaccard similarity of tag sets ('a|b' or a JSON "
                "list) to the other humans' labels", levels=frozenset({"nominal"})),
)  # fmt: skip
BY_NAME = {unit.name: unit for unit in SCORINGS}
ScoringName = Literal.__getitem__(tuple(BY_NAME))  # type: ignore[misc]


def scoring_unit(name: str) -> ScoringUnit:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"alt_scoring: '{name}' is not one of {sorted(BY_NAME)}") from None
