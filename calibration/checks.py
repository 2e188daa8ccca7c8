"""What a calibration refuses before computing anything: scores outside the declared scale
(issue 16 item 4: a 0–100 sample mixed into a 1–5 report moved MAD from 0.744 to 1.170 with
only a note), `--by` attributes no grade carries (they used to give an empty strata block),
more strata than a report may have (issue 42.7), and judges with no human grade on any of
their items (issue 42.11).
"""

from __future__ import annotations

import numpy as np

from calibration.columns import Columns
from calibration.options import CalibrationOptions
from calibration.table import GradeTable

SHOWN = 10  # rows named in a message; the count says how many more


class CalibrationInputError(ValueError):
    """Refused input: `field` is the option or column at fault, `problems` one line each."""

    def __init__(self, field: str, problems: list[str]) -> None:
        self.field, self.problems = field, problems
        shown = "; ".join(problems[:SHOWN])
        more = f" (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        super().__init__(f"{field}: {shown}{more}")


def check_scale(columns: Columns, options: CalibrationOptions) -> None:
    """Every numeric score lies within [scale_min, scale_max]; the error names the rows."""
    if options.effective_level == "nominal":
        return
    low, high = options.scale_min, options.scale_max
    outside = np.flatnonzero(~((columns.scores >= low) & (columns.scores <= high)))
    if outside.size:
        raise CalibrationInputError(
            "score",
            [
                f"item {columns.item_names[columns.items[r]]} rater "
                f"{columns.rater_names[columns.raters[r]]} score {columns.scores[r]:g} is "
                f"outside {low:g}–{high:g}"
                for r in outside.tolist()
            ],
        )


def check_attributes(columns: Columns, options: CalibrationOptions) -> None:
    """Every `by` attribute is carried by at least one grade."""
    sets = columns.attribute_sets
    known = sorted({key for code in np.unique(columns.attributes).tolist() for key in sets[code]})
    unknown = [
        f"unknown attribute '{name}'; the grades carry {', '.join(known) or 'no attributes'}"
        for name in options.by
        if name not in known
    ]
    if unknown:
        raise CalibrationInputError("by", unknown)


def check_strata(table: GradeTable, options: CalibrationOptions) -> None:
    """At most `max_strata` strata over every `by` attribute, counted before any metric: each
    stratum costs a full set of metrics, bootstrap and alt-test (an attribute of 4,000 values
    took 118 s of CPU), and its numbers are series of GET /metrics."""
    if options.max_strata is None:
        return
    counts = {name: len(table.attribute_values(name)) for name in options.by}
    total = sum(counts.values())
    if total > options.max_strata:
        each = ", ".join(f"'{name}' has {n:,} values" for name, n in counts.items())
        raise CalibrationInputError(
            "by",
            [
                f"{total:,} strata ({each}); a report has at most {options.max_strata:,}: "
                "stratify by an attribute with fewer values, or narrow the selection"
            ],
        )


def check_pairs(table: GradeTable) -> None:
    """Judges are compared with humans on the items both graded: with no such item there is
    nothing to report, and the error says what is missing (it used to be numpy's "cannot
    reshape array of size 0")."""
    judged = ~np.isnan(table.judge_scores).all(axis=1)
    human = ~np.isnan(table.human_scores).all(axis=1)
    if not table.judges or (judged & human).any():
        return
    elsewhere = ""
    if human.any():
        elsewhere = f" (the human grades are on {int(human.sum()):,} other item(s))"
    raise CalibrationInputError(
        "grades",
        [
            f"no item has both a judge's grade and a human grade: {int(judged.sum()):,} item(s) "
            f"graded by {_names(table.judges)}, none of them by a human{elsewhere}; import the "
            "SMEs' grades of these items"
        ],
    )


def _names(names: list[str]) -> str:
    """The first SHOWN names, and how many more."""
    more = f" and {len(names) - SHOWN:,} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more
