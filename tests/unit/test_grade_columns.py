"""Grades kept as columns (calibration/columns.py) are the rows they stand for: iterated,
indexed and pivoted, they give what the same rows as pydantic objects give (issue 39: a
report over the database keeps millions of judgments this way)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.checks import CalibrationInputError, check_scale
from calibration.columns import GradeColumns, columns_of
from calibration.formats.interchange import GradeRow
from calibration.options import CalibrationOptions
from calibration.table import build_table, criteria_tables

FOOD = {"domain": "food", "candidate_model": "m1"}
TRAVEL = {"domain": "travel", "candidate_model": "m1"}
WITH_LANG = {"domain": "food", "lang": "ar"}


def judge(item, rater, score, confidence=None, attributes=FOOD, criteria=None):
    return GradeRow(item_id=item, rater=rater, rater_kind="judge", score=score,
                    confidence=confidence, attributes=attributes, criteria=criteria)  # fmt: skip


def human(item, rater, score, prob=None, attributes=None):
    return GradeRow(item_id=item, rater=rater, rater_kind="human", score=score,
                    inclusion_prob=prob, attributes=attributes or {})  # fmt: skip


JUDGE_ROWS = [
    judge("b", "j1", 4, 0.9, criteria={"c1": True, "c2": False}),
    judge("a", "j1", 2, None, criteria={"c1": False}),
    judge("a", "j2", 3, 0.6, attributes=TRAVEL),  # conflicts with a's first domain
    judge("c", "j2", 5, 0.7, attributes=WITH_LANG),
    judge("a", "j1", 1, 0.2, criteria={"c2": True}),  # the same cell again: the last counts
]
HUMAN_ROWS = [human("a", "h1", 2, 0.5), human("b", "h1", 4, 0.5, {"lang": "en"}),
              human("b", "h2", 5)]  # fmt: skip


def stored() -> GradeColumns:
    store = GradeColumns()
    for row in JUDGE_ROWS:
        key = tuple(sorted(row.attributes.items()))
        marks = None if row.criteria is None else tuple(sorted(row.criteria.items()))
        store.add_judge_row(row.item_id, row.rater, row.score, row.confidence,
                            row.attributes, key, row.criteria, marks)  # fmt: skip
    for row in HUMAN_ROWS:
        store.append(row)
    return store


def test_columns_read_back_as_the_rows_they_store():
    store = stored()
    rows = JUDGE_ROWS + HUMAN_ROWS
    assert len(store) == len(rows)
    assert [r.model_dump() for r in store] == [r.model_dump() for r in rows]
    assert store[1].model_dump() == rows[1].model_dump()
    assert store[-1].model_dump() == HUMAN_ROWS[-1].model_dump()
    assert [r.item_id for r in store[1:3]] == ["a", "a"]
    with pytest.raises(IndexError):
        store[len(rows)]


def test_a_table_from_columns_is_the_table_from_the_rows():
    from_rows = build_table(JUDGE_ROWS + HUMAN_ROWS)
    from_columns = build_table(stored())
    assert from_rows.items == from_columns.items == ["a", "b", "c"]
    assert from_rows.judges == ["j1", "j2"] and from_rows.humans == ["h1", "h2"]
    for name in ("human_scores", "judge_scores", "judge_confidence", "inclusion_prob"):
        assert np.array_equal(getattr(from_rows, name), getattr(from_columns, name),
                              equal_nan=True), name  # fmt: skip
    # the last row of a repeated cell counts; confidences belong to judges only
    assert from_columns.judge_scores[0].tolist() == [1.0, 3.0]
    assert from_columns.judge_confidence[0].tolist() == [0.2, 0.6]
    assert from_columns.attributes == from_rows.attributes
    assert from_columns.attributes[1] == {"domain": "food", "candidate_model": "m1", "lang": "en"}
    assert from_columns.conflicts == from_rows.conflicts == ["item a: domain is both 'food' and 'travel'"]


def test_criteria_tables_from_columns_hold_each_criterion_s_marks():
    from_rows = criteria_tables(JUDGE_ROWS + HUMAN_ROWS)
    from_columns = criteria_tables(stored())
    assert sorted(from_columns) == ["c1", "c2"]
    for name, table in from_columns.items():
        assert table.items == from_rows[name].items
        assert np.array_equal(table.judge_scores, from_rows[name].judge_scores, equal_nan=True)
    assert from_columns["c2"].items == ["a", "b"]
    assert from_columns["c2"].judge_scores[:, 0].tolist() == [1.0, 0.0]


def test_criteria_tables_of_human_marked_items_are_the_full_tables_agreement_reads():
    """A report's criteria read only items a human marked (issue 39: pivoting every judged
    item per criterion was its peak); the table of those is the full table's rows for them,
    with every judge that marked the criterion, one that marked only other items included."""
    marking = [GradeRow(item_id=i, rater="h1", rater_kind="human", score=s, criteria=c)
               for i, s, c in (("a", 2, {"c1": True}), ("b", 4, {"c1": False, "c2": True}))]
    rows = [*JUDGE_ROWS, judge("d", "j3", 2, criteria={"c1": True}), *HUMAN_ROWS, *marking]
    full, marked = criteria_tables(rows), criteria_tables(columns_of(rows), human_marked=True)
    assert marked["c1"].items == ["a", "b"] and marked["c2"].items == ["b"]
    assert "d" in full["c1"].items
    for name, table in marked.items():
        keep = np.isin(full[name].items, table.items)
        assert table.judges == full[name].judges == ["j1", "j3"][: len(table.judges)]
        assert table.humans == full[name].humans == ["h1"]
        for array in ("human_scores", "judge_scores", "judge_confidence", "inclusion_prob"):
            assert np.array_equal(getattr(table, array), getattr(full[name], array)[keep],
                                  equal_nan=True), (name, array)  # fmt: skip
        assert table.attributes == [a for a, k in zip(full[name].attributes, keep, strict=True) if k]
    assert np.isnan(marked["c1"].judge_scores[:, 1]).all()  # j3 marked only item d


def test_an_item_with_two_inclusion_probabilities_is_refused_from_columns_too():
    store = stored()
    store.append(human("a", "h2", 3, 0.25))
    with pytest.raises(ValueError, match="item a: inclusion_prob is both 0.5 and 0.25"):
        build_table(store)


def test_scores_outside_the_scale_are_named_row_by_row():
    rows = [judge("x", "j1", 7), judge("y", "j1", 3), human("z", "h1", 0)]
    with pytest.raises(CalibrationInputError) as refused:
        check_scale(columns_of(rows), CalibrationOptions(scale_min=1, scale_max=5))
    assert refused.value.problems == [
        "item x rater j1 score 7 is outside 1–5",
        "item z rater h1 score 0 is outside 1–5",
    ]
