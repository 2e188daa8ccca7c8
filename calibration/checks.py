"""What a calibration refuses before computing anything: scores outside the declared scale
(issue 16 item 4: a 0–100 sample mixed into a 1–5 report moved MAD from 0.744 to 1.170 with
only a note) and `--by` attributes no grade carries (they used to give an empty strata block).
"""

from __future__ import annotations

from collections.abc import Sequence

from calibration.formats.interchange import Row
from calibration.options import CalibrationOptions

SHOWN = 10  # rows named in a message; the count says how many more


class CalibrationInputError(ValueError):
    """Refused input: `field` is the option or column at fault, `problems` one line each."""

    def __init__(self, field: str, problems: list[str]) -> None:
        self.field, self.problems = field, problems
        shown = "; ".join(problems[:SHOWN])
        more = f" (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        super().__init__(f"{field}: {shown}{more}")


def check_scale(rows: Sequence[Row], options: CalibrationOptions) -> None:
    """Every numeric score lies within [scale_min, scale_max]; the error names the rows."""
    if options.effective_level == "nominal":
        return
    low, high = options.scale_min, options.scale_max
    outside = [
        f"item {r.item_id} rater {r.rater} score {r.score:g} is outside {low:g}–{high:g}"
        for r in rows
        if not low <= r.score <= high
    ]
    if outside:
        raise CalibrationInputError("score", outside)


def check_attributes(rows: Sequence[Row], options: CalibrationOptions) -> None:
    """Every `by` attribute is carried by at least one grade."""
    known = sorted({key for r in rows for key in r.attributes})
    unknown = [
        f"unknown attribute '{name}'; the grades carry {', '.join(known) or 'no attributes'}"
        for name in options.by
        if name not in known
    ]
    if unknown:
        raise CalibrationInputError("by", unknown)
