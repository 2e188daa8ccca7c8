"""Grades as matrices: items × raters, with each item's attributes (the strata).

Built once from interchange rows; every metric and the bootstrap work on these arrays.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from calibration.columns import Columns, columns_of
from calibration.formats.interchange import Row


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
        """The items of `mask`; every item: the table itself (tables are read, never
        written), not a copy of millions of items' arrays and lists (issue 39: the overall
        block copied the whole table, ~0.3 GB at 10M judgments)."""
        if mask.all():
            return self
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


def build_table(rows: Iterable[Row] | Columns) -> GradeTable:
    """Pivot rows; a repeated (item, rater) keeps the last score; attribute conflicts are noted.

    Label rows (level nominal) are coded by their position in the sorted list of labels."""
    columns = columns_of(rows)
    if not columns.pivoted:
        table = _pivot(columns)
        table.labels = columns.labels
        columns.pivoted.append(table)
    return columns.pivoted[0]


def criteria_tables(
    rows: Iterable[Row] | Columns, human_marked: bool = False
) -> dict[str, GradeTable]:
    """One table per criterion id: met = 1, not met = 0, from the rows' `criteria` marks.

    `human_marked`: only the items a human marked for the criterion, with every judge that
    marked it anywhere (a column of its own, empty where it marked none of them). That is all
    agreement reads (an item no human marked pairs no marks), and pivoting every judged item
    once per criterion was a report's peak memory at 10M judgments (issue 39)."""
    columns = columns_of(rows)
    names = sorted({c for marks in columns.mark_sets if marks for c in marks})
    tables = {}
    for name in names:
        met = np.array([_mark(marks, name) for marks in columns.mark_sets])[columns.marks]
        keep, judges = ~np.isnan(met), None
        if human_marked:
            by_humans = np.zeros(len(columns.item_names), bool)
            by_humans[columns.items[keep & columns.human]] = True
            judges = columns.raters[keep & ~columns.human]
            keep &= by_humans[columns.items]
        tables[name] = _pivot(columns.take(keep, met[keep]), judges)
    return tables


def _mark(marks: dict[str, bool] | None, name: str) -> float:
    return float(marks[name]) if marks and name in marks else np.nan


def _pivot(columns: Columns, listed_judges: np.ndarray | None = None) -> GradeTable:
    """Columns into matrices, with a column for each judge of `listed_judges` (rater codes)
    too. A report over the database pivots millions of rows (issue 39): the last row of a
    repeated (item, rater) found with one unbuffered `maximum.at`, the cells filled in one
    assignment, no sort of the rows (`np.unique` took 7-20 s over 10M codes). Attributes
    are walked in row order, as conflicts are named in it, and only for rows whose
    attributes differ from their item's first row's."""
    items, at = _sorted_codes(columns.item_names, columns.items)
    humans, human_at = _sorted_codes(columns.rater_names, columns.raters[columns.human])
    judges, judge_at = _sorted_codes(
        columns.rater_names, columns.raters[~columns.human], listed_judges
    )
    both = set(humans) & set(judges)
    if both:
        raise ValueError(f"rater(s) {sorted(both)} appear both as human and as judge")
    width = len(humans) + len(judges)
    cells = at.astype(_index_type(len(items) * width), copy=False) * width
    cells[columns.human] += human_at
    cells[~columns.human] += len(humans) + judge_at
    # the last row of each cell (-1: none)
    rows = _index_type(len(cells))
    last_of = np.full(len(items) * width, -1, rows)
    np.maximum.at(last_of, cells, np.arange(len(cells), dtype=rows))
    filled = np.flatnonzero(last_of >= 0)
    last = last_of[filled]
    del last_of, cells
    scores = np.full(len(items) * width, np.nan)
    scores[filled] = columns.scores[last]
    confidence = np.full(len(items) * width, np.nan)
    confidence[filled] = columns.confidence[last]
    scores = scores.reshape(len(items), width)
    confidence = confidence.reshape(len(items), width)
    probability = np.full(len(items), np.nan)
    for row, value in columns.probabilities:
        _keep_probability(probability, int(at[row]), items[at[row]], value)
    attributes, conflicts = _attributes(columns, at, len(items))
    return GradeTable(
        items, humans, judges, scores[:, : len(humans)], scores[:, len(humans) :], attributes,
        conflicts, inclusion_prob=probability, judge_confidence=confidence[:, len(humans) :],
    )  # fmt: skip


def _sorted_codes(
    names: list[str], codes: np.ndarray, listed: np.ndarray | None = None
) -> tuple[list[str], np.ndarray]:
    """The names `codes` (and `listed`) use, sorted, and each code's position among them (a
    mask finds the used codes: no sort of millions of codes)."""
    present = np.zeros(len(names), bool)
    present[codes] = True
    if listed is not None:
        present[listed] = True
    used = sorted(np.flatnonzero(present).tolist(), key=names.__getitem__)
    position = np.empty(len(names), _index_type(len(names)))
    position[used] = np.arange(len(used))
    return [names[k] for k in used], position[codes]


def _index_type(size: int) -> type:
    """The narrowest index type for `size` positions: int32 halves the pivot's arrays over
    millions of rows."""
    return np.int32 if size < 2**31 else np.int64


def _attributes(columns: Columns, at: np.ndarray, n_items: int) -> tuple[list[dict], list[str]]:
    """Each item's attributes, the union of its rows' (the first value of a key kept), and
    a line for every row that gives a key another value, in row order. An item's attributes
    are its first row's dict, shared (tables are read, never written), copied only when a
    later row adds a key; a row with its item's first dict changes nothing and is skipped."""
    sets, codes = columns.attribute_sets, columns.attributes
    first = codes[np.unique(at, return_index=True)[1]]  # every item has a row
    attributes = [sets[code] for code in first.tolist()]
    conflicts: list[str] = []
    for row in np.flatnonzero(codes != first[at]).tolist():
        i, given = int(at[row]), sets[codes[row]]
        known = attributes[i]
        added = {key: value for key, value in given.items() if key not in known}
        for key, value in given.items():
            if key in known and known[key] != value:
                item = columns.item_names[columns.items[row]]
                conflicts.append(f"item {item}: {key} is both '{known[key]}' and '{value}'")
        if added:
            attributes[i] = {**known, **added}
    return attributes, conflicts


def _keep_probability(probability: np.ndarray, i: int, item: str, value: float) -> None:
    """An item has one inclusion probability: the design's, whichever of its rows carries it.
    Two different ones cannot both be the design's, so the grades are refused."""
    known = probability[i]
    if not np.isnan(known) and not np.isclose(known, value, rtol=1e-9, atol=0):
        raise ValueError(
            f"grades: item {item}: inclusion_prob is both {known:g} and "
            f"{value:g} (one item, one labelling design)"
        )
    probability[i] = value
