"""The trend of a judge over stored nightly reports: overall MAD and signed error with their
bootstrap intervals, one point per report, oldest first (the JSON `history` of a nightly
report, drawn as a line with a CI band per judge)."""

from __future__ import annotations

from typing import Any

from calibration.drift import DRIFT_METRICS


def history_point(report: dict[str, Any], at: str, report_id: str | None) -> dict[str, Any]:
    """One report's overall numbers per judge: `{report, at, judges: {J: {n, mad, mad_ci,
    signed_error, signed_error_ci}}}`."""
    judges = {}
    for judge, data in report["judges"].items():
        block = data["overall"]
        point: dict[str, Any] = {"n": block["n"]}
        for metric in DRIFT_METRICS:
            point[metric] = block.get(metric)
            point[f"{metric}_ci"] = (block.get("ci") or {}).get(metric)
        judges[judge] = point
    return {"report": report_id, "at": at, "judges": judges}


def series(history: list[dict[str, Any]], judge: str, metric: str) -> dict[str, list]:
    """Dates, values and interval bounds of one judge's metric, skipping reports without it."""
    out: dict[str, list] = {"at": [], "value": [], "low": [], "high": []}
    for point in history:
        block = point["judges"].get(judge)
        if block is None or block.get(metric) is None:
            continue
        ci = block.get(f"{metric}_ci") or [block[metric], block[metric]]
        out["at"].append(point["at"])
        out["value"].append(block[metric])
        out["low"].append(ci[0])
        out["high"].append(ci[1])
    return out
