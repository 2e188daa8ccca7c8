"""Grade rows as columns: what a pivot into a GradeTable reads, one entry per row.

A report over the database reads millions of judgments (issue 39). As pydantic rows they
cost ~0.5 KB and ~3 µs each and were the whole of a report's memory; `GradeColumns` keeps a
judgment as a few numbers (an item code, a rater code, its score and confidence, codes of
its attributes and criteria marks: ~30 bytes), every distinct name, attribute dict and set
of marks once. It is still a sequence of rows: anything that iterates it gets GradeRows made
on the fly, while `build_table` and `criteria_tables` (calibration/table.py) pivot the
columns without making a row.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from calibration.formats.interchange import GradeRow, LabelRow, Row, stored_row


@dataclass(frozen=True)
class Columns:
    """Rows as the pivot reads them: codes into the name lists, one entry per row, in row
    order (a repeated (item, rater) keeps its last row; conflicts are named in row order)."""

    item_names: list[str]
    items: np.ndarray  # per row: code into item_names
    rater_names: list[str]
    raters: np.ndarray  # per row: code into rater_names
    human: np.ndarray  # per row: rater_kind == "human"
    scores: np.ndarray
    confidence: np.ndarray  # NaN where the row gave none
    attribute_sets: list[dict[str, str]]
    attributes: np.ndarray  # per row: code into attribute_sets
    mark_sets: list[dict[str, bool] | None]
    marks: np.ndarray  # per row: code into mark_sets
    probabilities: list[tuple[int, float]]  # (row, inclusion_prob) of the rows that carry one
    labels: list[str] | None = None  # level nominal: scores are codes into this list

    def take(self, keep: np.ndarray, scores: np.ndarray) -> Columns:
        """The rows of `keep` (a mask), scored by `scores` (one per row kept)."""
        index = np.flatnonzero(keep)
        return replace(
            self, items=self.items[index], raters=self.raters[index], human=self.human[index],
            scores=scores, confidence=self.confidence[index],
            attributes=self.attributes[index], marks=self.marks[index],
            probabilities=[(int(np.searchsorted(index, r)), p)
                           for r, p in self.probabilities if keep[r]],
        )  # fmt: skip


class _Codes:
    """Distinct values, each with its code; equal values share one object."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._codes: dict[Any, int] = {}

    def code(self, value: Any, key: Any = None) -> int:
        key = value if key is None else key
        found = self._codes.get(key)
        if found is None:
            found = self._codes[key] = len(self.values)
            self.values.append(value)
        return found


class GradeColumns(Sequence):
    """Judge rows stored as columns, then any rows appended (human grades: few, kept as they
    are). Read-only once built, like the rows it stands for."""

    def __init__(self) -> None:
        self._items, self._raters = _Codes(), _Codes()
        self._attribute_sets, self._mark_sets = _Codes(), _Codes()
        self._item, self._rater = array("i"), array("i")
        self._attributes, self._marks = array("i"), array("i")
        self._score, self._confidence = array("d"), array("d")
        self._rows: list[Row] = []

    def add_judge_row(
        self, item: str, rater: str, score: float, confidence: float | None,
        attributes: dict[str, str], attributes_key: Any, marks: dict[str, bool] | None,
        marks_key: Any,
    ) -> None:  # fmt: skip
        """One judge row; `attributes_key` and `marks_key` name the dicts (e.g. the JSON text
        they were read from) so equal ones are found without hashing a dict."""
        self._item.append(self._items.code(item))
        self._rater.append(self._raters.code(rater))
        self._score.append(score)
        self._confidence.append(np.nan if confidence is None else confidence)
        self._attributes.append(self._attribute_sets.code(attributes, attributes_key))
        self._marks.append(self._mark_sets.code(marks, marks_key))

    @property
    def item_names(self) -> list[str]:
        """The items of the rows coded so far, each once."""
        return self._items.values

    def append(self, row: Row) -> None:
        self._rows.append(row)

    def __len__(self) -> int:
        return len(self._item) + len(self._rows)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index >= len(self._item):
            return self._rows[index - len(self._item)]
        return self._row(index)

    def __iter__(self) -> Iterator[Row]:
        for index in range(len(self._item)):
            yield self._row(index)
        yield from self._rows

    def _row(self, index: int) -> GradeRow:
        confidence = self._confidence[index]
        return stored_row(
            item_id=self._items.values[self._item[index]],
            rater=self._raters.values[self._rater[index]],
            rater_kind="judge",
            score=self._score[index],
            criteria=self._mark_sets.values[self._marks[index]],
            confidence=None if np.isnan(confidence) else confidence,
            attributes=self._attribute_sets.values[self._attributes[index]],
        )

    def columns(self, score: Callable[[Row], float] = lambda row: row.score) -> Columns:
        """The judge rows' columns, then the appended rows' (coded in the same lists, their
        scores read by `score`)."""
        n, extra = len(self._item), self._rows
        items = _join(self._item, (self._items.code(r.item_id) for r in extra))
        raters = _join(self._rater, (self._raters.code(r.rater) for r in extra))
        attributes = _join(
            self._attributes,
            (self._attribute_sets.code(r.attributes, ("row", id(r.attributes))) for r in extra),
        )
        marks = _join(
            self._marks, (self._mark_sets.code(r.criteria, ("row", id(r.criteria))) for r in extra)
        )
        human = np.zeros(n + len(extra), bool)
        human[n:] = [r.rater_kind == "human" for r in extra]
        return Columns(
            item_names=self._items.values, items=items,
            rater_names=self._raters.values, raters=raters, human=human,
            scores=_floats(self._score, (score(r) for r in extra)),
            confidence=_floats(self._confidence, (_number(r.confidence) for r in extra)),
            attribute_sets=self._attribute_sets.values, attributes=attributes,
            mark_sets=self._mark_sets.values, marks=marks,
            probabilities=[(n + k, r.inclusion_prob) for k, r in enumerate(extra)
                           if r.inclusion_prob is not None],
        )  # fmt: skip


def columns_of(rows: Iterable[Row] | Columns) -> Columns:
    """Any rows as columns: a GradeColumns' own, or a list's (labels coded by their place
    in the sorted list of labels); columns as they are."""
    if isinstance(rows, Columns):
        return rows
    if isinstance(rows, GradeColumns):
        return rows.columns()
    store = GradeColumns()
    rows = list(rows)
    for row in rows:
        store.append(row)
    if rows and isinstance(rows[0], LabelRow):
        labels = sorted({r.score for r in rows})
        index = {label: k for k, label in enumerate(labels)}
        return replace(store.columns(lambda r: float(index[r.score])), labels=labels)
    return store.columns()


def _join(head: array, tail: Iterable[int]) -> np.ndarray:
    """A column's stored part (copied: the store may grow after) and its appended rows'."""
    return np.concatenate([np.array(head, dtype=np.int32), np.fromiter(tail, np.int32)])


def _floats(head: array, tail: Iterable[float]) -> np.ndarray:
    return np.concatenate([np.array(head, dtype=float), np.fromiter(tail, float)])


def _number(value: float | None) -> float:
    return np.nan if value is None else value
