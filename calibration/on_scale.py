"""Corrected means kept on the scale they are means of.

A mean of scores on [low, high] lies in [low, high], but an interval around it (and, at
small n, the PPI point itself: the human mean plus a correction) can run past either end:
[−18, 112] on a 0–100 scale. Every part of an estimate block (PPI, judge only, human only)
is clipped to the scale, and says so: `clipped_to_scale: true` beside the values, the values
as computed kept under `unclipped`. Clipping a confidence interval to the set the parameter
is known to lie in never lowers its coverage. Differences (`compare`) live on another range
and are left as they are.
"""

from __future__ import annotations

from typing import Any

PARTS = (None, "judge_only", "human_only")  # None: the PPI block itself


def clip_estimate(report: dict[str, Any], low: float, high: float) -> dict[str, Any]:
    """`report` (the estimate JSON) with every mean and interval on [low, high]."""
    for data in report.get("judges", {}).values():
        for block in [data["overall"], *data.get("strata", {}).values()]:
            for name in PARTS:
                part = block if name is None else block.get(name)
                if part is not None:
                    _clip(part, low, high)
    report["scale"] = {"min": low, "max": high}
    return report


def _clip(part: dict[str, Any], low: float, high: float) -> None:
    computed = {"estimate": part.get("estimate"), "ci": part.get("ci")}
    point, ci = computed["estimate"], computed["ci"]
    if point is not None:
        part["estimate"] = min(high, max(low, point))
    if ci is not None:
        part["ci"] = [min(high, max(low, ci[0])), min(high, max(low, ci[1]))]
    if part["estimate"] != point or part.get("ci") != ci:
        part["clipped_to_scale"] = True
        part["unclipped"] = computed
