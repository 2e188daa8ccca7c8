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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
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
    # the GradeTable pivoted from these columns, once built (calibration/table.py): a report
    # reads it for its metrics, then again for its plots and its estimate section
    pivoted: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)

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

    def known(self, key: Any) -> bool:
        return key in self._codes

    def release(self) -> None:
        """Forget the lookup, keep the values: for 3.3M item names it is ~0.2 GB, and
        nothing is coded once the columns are made (a store then only reads; coding after
        fails, rather than give a known value a second code)."""
        self._codes = None  # type: ignore[assignment]


class GradeColumns(Sequence):
    """Grade rows stored as columns, in the order they came: judge rows added from a
    judgment's values (`add_judge_row`), any GradeRow appended (the human grades: half a
    million as pydantic objects held ~0.5 GB at 10M judgments, issue 39). Read-only once
    built, like the rows it stands for; its columns are made once and shared."""

    def __init__(self) -> None:
        self._items, self._raters = _Codes(), _Codes()
        self._attribute_sets, self._mark_sets = _Codes(), _Codes()
        # what a judge row never has: (rater_kind, inclusion_prob, rationale, project)
        self._rests = _Codes()
        self._rests.code(_JUDGE_REST)
        self._item, self._rater = array("i"), array("i")
        self._attributes, self._marks, self._rest = array("i"), array("i"), array("i")
        self._score, self._confidence = array("d"), array("d")
        self._columns: Columns | None = None

    def add_judge_row(
        self, item: str, rater: str, score: float, confidence: float | None,
        attributes: dict[str, str], attributes_key: Any, marks: dict[str, bool] | None,
        marks_key: Any,
    ) -> None:  # fmt: skip
        """One judge row; `attributes_key` and `marks_key` name the dicts (e.g. the JSON text
        they were read from) so equal ones are found without hashing a dict."""
        self._add(item, rater, score, confidence, attributes, attributes_key, marks, marks_key, 0)

    def append(self, row: GradeRow, score: float | None = None) -> None:
        """Any row (`score`: its score as a number when it is not one, a label's code);
        equal attribute dicts and criteria marks are kept once, as a judge row's are."""
        marks_key = None if row.criteria is None else ("row", tuple(row.criteria.items()))
        rest = (row.rater_kind, row.inclusion_prob, row.rationale, row.project)
        self._add(
            row.item_id, row.rater, row.score if score is None else score, row.confidence,
            row.attributes, ("row", tuple(row.attributes.items())), row.criteria, marks_key,
            self._rests.code(rest),
        )  # fmt: skip

    def _add(
        self, item: str, rater: str, score: float, confidence: float | None,
        attributes: dict[str, str], attributes_key: Any, marks: dict[str, bool] | None,
        marks_key: Any, rest: int,
    ) -> None:  # fmt: skip
        self._columns = None
        self._item.append(self._items.code(item))
        self._rater.append(self._raters.code(rater))
        self._score.append(score)
        self._confidence.append(np.nan if confidence is None else confidence)
        self._attributes.append(self._attribute_sets.code(attributes, attributes_key))
        self._marks.append(self._mark_sets.code(marks, marks_key))
        self._rest.append(rest)

    @property
    def item_names(self) -> list[str]:
        """The items of the rows coded so far, each once."""
        return self._items.values

    def has_item(self, item: str) -> bool:
        """Whether a row so far grades `item` (without a set of millions of names); asked
        while the store is built, before its columns are made."""
        if self._columns is not None:
            raise RuntimeError("the columns are made: the store no longer looks items up")
        return self._items.known(item)

    def __len__(self) -> int:
        return len(self._item)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._row(index)

    def __iter__(self) -> Iterator[Row]:
        for index in range(len(self._item)):
            yield self._row(index)

    def _row(self, index: int) -> GradeRow:
        confidence = self._confidence[index]
        values = {
            "item_id": self._items.values[self._item[index]],
            "rater": self._raters.values[self._rater[index]],
            "score": self._score[index],
            "criteria": self._mark_sets.values[self._marks[index]],
            "confidence": None if np.isnan(confidence) else confidence,
            "attributes": self._attribute_sets.values[self._attributes[index]],
        }
        rest = self._rest[index]
        if rest == 0:
            return stored_row(rater_kind="judge", **values)
        kind, probability, rationale, project = self._rests.values[rest]
        return GradeRow.model_construct(
            rater_kind=kind, inclusion_prob=probability, rationale=rationale, project=project,
            **values,
        )  # fmt: skip

    def columns(self) -> Columns:
        """The rows' columns, made once (a report pivots them for its table, its criteria
        and its plots)."""
        if self._columns is None:
            rests = self._rests.values
            rest = _view(self._rest)
            human = np.array([kind == "human" for kind, *_ in rests])[rest]
            carries = np.array([probability is not None for _, probability, *_ in rests])
            with_probability = np.flatnonzero(carries[rest])
            self._columns = Columns(
                item_names=self._items.values, items=_view(self._item),
                rater_names=self._raters.values, raters=_view(self._rater), human=human,
                scores=_view(self._score), confidence=_view(self._confidence),
                attribute_sets=self._attribute_sets.values, attributes=_view(self._attributes),
                mark_sets=self._mark_sets.values, marks=_view(self._marks),
                probabilities=[(row, rests[self._rest[row]][1])
                               for row in with_probability.tolist()],
            )  # fmt: skip
            self._items.release()
        return self._columns


_JUDGE_REST = ("judge", None, None, None)


def columns_of(rows: Iterable[Row] | Columns) -> Columns:
    """Any rows as columns: a GradeColumns' own, or a list's (labels coded by their place
    in the sorted list of labels); columns as they are."""
    if isinstance(rows, Columns):
        return rows
    if isinstance(rows, GradeColumns):
        return rows.columns()
    store = GradeColumns()
    rows = list(rows)
    if rows and isinstance(rows[0], LabelRow):
        labels = sorted({r.score for r in rows})
        index = {label: k for k, label in enumerate(labels)}
        for row in rows:
            store.append(row, float(index[row.score]))
        return replace(store.columns(), labels=labels)
    for row in rows:
        store.append(row)
    return store.columns()


def _view(column: array) -> np.ndarray:
    """A column's numbers without a copy (10M judgments: ~0.25 GB saved). The store cannot
    grow once viewed (the array refuses to resize while a view holds it): rows are added
    while the store is built, then only read."""
    return np.frombuffer(column, dtype=np.dtype(column.typecode))  # 'i', 'd': numpy's codes
