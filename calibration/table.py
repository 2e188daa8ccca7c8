"""Grades as matrices: items × raters, with each item's attributes (the strata).

Built once from interchange rows; every metric and the bootstrap work on these arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from calibration.formats.interchange import LabelRow, Row


@dataclass
class GradeTable:
    items: list[str]
    humans: list[str]
    judges: list[str]
    human_scores: np.ndarray  # (n_items, n_humans), NaN where missing
    judge_scores: np.ndarray  # (n_items, n_judges), NaN where missing
    attributes: list[dict[str, str]]
    conflicts: list[str] = field(default_factory=list)
    labels: list[str] | None = None  # level nominal: scores are codes into this list
    inclusion_prob: np.ndarray | None = None  # per item, NaN where no row carries one
    judge_confidence: np.ndarray | None = None  # like judge_scores: NaN where none was given

    def __post_init__(self) -> None:
        if self.inclusion_prob is None:
            self.inclusion_prob = np.full(len(self.items), np.nan)
        if self.judge_confidence is None:
            self.judge_confidence = np.full(self.judge_scores.shape, np.nan)

    @property
    def n_items(self) -> int:
        return len(self.items)

    def subset(self, mask: np.ndarray) -> GradeTable:
        keep = np.flatnonzero(mask)
        return GradeTable(
            items=[self.items[i] for i in keep],
            humans=self.humans,
            judges=self.judges,
            human_scores=self.human_scores[keep],
            judge_scores=self.judge_scores[keep],
            attributes=[self.attributes[i] for i in keep],
            labels=self.labels,
            inclusion_prob=self.inclusion_prob[keep],
            judge_confidence=self.judge_confidence[keep],
        )

    def attribute_values(self, name: str) -> list[str]:
        return sorted({a[name] for a in self.attributes if name in a})

    def mask(self, name: str, value: str) -> np.ndarray:
        return np.array([a.get(name) == value for a in self.attributes], dtype=bool)


def build_table(rows: Iterable[Row]) -> GradeTable:
    """Pivot rows; a repeated (item, rater) keeps the last score; attribute conflicts are noted.

    Label rows (level nominal) are coded by their position in the sorted list of labels."""
    rows = list(rows)
    if rows and isinstance(rows[0], LabelRow):
        labels = sorted({r.score for r in rows})
        index = {label: k for k, label in enumerate(labels)}
        table = _pivot(rows, lambda r: float(index[r.score]))
        table.labels = labels
        return table
    return _pivot(rows, lambda r: r.score)


def criteria_tables(rows: Iterable[Row]) -> dict[str, GradeTable]:
    """One table per criterion id: met = 1, not met = 0, from the rows' `criteria` marks."""
    rows = [r for r in rows if r.criteria]
    names = sorted({c for r in rows for c in r.criteria})
    return {
        name: _pivot(
            [r for r in rows if name in r.criteria], lambda r, c=name: float(r.criteria[c])
        )
        for name in names
    }


def _pivot(rows: list[Row], score: Callable[[Row], float]) -> GradeTable:
    items = sorted({r.item_id for r in rows})
    humans = sorted({r.rater for r in rows if r.rater_kind == "human"})
    judges = sorted({r.rater for r in rows if r.rater_kind == "judge"})
    both = set(humans) & set(judges)
    if both:
        raise ValueError(f"rater(s) {sorted(both)} appear both as human and as judge")
    item_index = {item: i for i, item in enumerate(items)}
    human_index = {h: j for j, h in enumerate(humans)}
    judge_index = {h: j for j, h in enumerate(judges)}
    human_scores = np.full((len(items), len(humans)), np.nan)
    judge_scores = np.full((len(items), len(judges)), np.nan)
    attributes: list[dict[str, str]] = [{} for _ in items]
    conflicts: list[str] = []
    probability = np.full(len(items), np.nan)
    confidence = np.full(judge_scores.shape, np.nan)
    for row in rows:
        i = item_index[row.item_id]
        if row.inclusion_prob is not None:
            _keep_probability(probability, i, row)
        if row.rater_kind == "human":
            human_scores[i, human_index[row.rater]] = score(row)
        else:
            j = judge_index[row.rater]
            judge_scores[i, j] = score(row)
            confidence[i, j] = np.nan if row.confidence is None else row.confidence
        for key, value in row.attributes.items():
            known = attributes[i].setdefault(key, value)
            if known != value:
                conflicts.append(f"item {row.item_id}: {key} is both '{known}' and '{value}'")
    return GradeTable(
        items, humans, judges, human_scores, judge_scores, attributes, conflicts,
        inclusion_prob=probability, judge_confidence=confidence,
    )  # fmt: skip


def _keep_probability(probability: np.ndarray, i: int, row: Row) -> None:
    """An item has one inclusion probability: the design's, whichever of its rows carries it.
    Two different ones cannot both be the design's, so the grades are refused."""
    known = probability[i]
    if not np.isnan(known) and not np.isclose(known, row.inclusion_prob, rtol=1e-9, atol=0):
        raise ValueError(
            f"grades: item {row.item_id}: inclusion_prob is both {known:g} and "
            f"{row.inclusion_prob:g} (one item, one labelling design)"
        )
    probability[i] = row.inclusion_prob
