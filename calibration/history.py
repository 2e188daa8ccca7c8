"""The trend of a judge over stored reports: overall MAD and signed error with their bootstrap
intervals, one point per report, oldest first (the JSON `history` of a nightly report, drawn
as a line with a CI band per judge); where the report has them, also the alt-test's winning
rate ω and advantage probability ρ with the trust map's verdict, the label multiplier of the
judge's corrected mean (calibration/estimate.py), and the selective thresholds with their
coverage (the dashboard's history, service/web/dashboard.py)."""

from __future__ import annotations

from typing import Any

from calibration.drift import DRIFT_METRICS
from calibration.estimate import label_multiplier


def history_point(report: dict[str, Any], at: str, report_id: str | None) -> dict[str, Any]:
    """One report's overall numbers per judge: `{report, at, judges: {J: {n, mad, mad_ci,
    signed_error, signed_error_ci, omega, rho, verdict, label_multiplier}}}` (the last three
    when the report has a trust map or corrected means)."""
    trust = {r["judge"]: r for r in (report.get("trust") or {}).get("rows", [])
             if r.get("stratum") == "overall"}  # fmt: skip
    estimates = (report.get("estimate") or {}).get("judges") or {}
    judges = {}
    for judge, data in report["judges"].items():
        block = data["overall"]
        point: dict[str, Any] = {"n": block["n"]}
        for metric in DRIFT_METRICS:
            point[metric] = block.get(metric)
            point[f"{metric}_ci"] = (block.get("ci") or {}).get(metric)
        if judge in estimates:
            point["label_multiplier"] = label_multiplier(estimates[judge]["overall"])
        if judge in trust:
            row = trust[judge]
            point |= {"omega": row.get("winning_rate"), "rho": row.get("advantage_probability"),
                      "verdict": row.get("verdict")}  # fmt: skip
        judges[judge] = point
    found = {"report": report_id, "at": at, "judges": judges}
    selective = report.get("selective")
    if selective:
        found["selective"] = {
            f"{row['evaluator']}|{row['stratum']}": {
                "threshold": row["result"]["threshold"],
                "coverage": row["result"]["coverage"],
                "n": row["result"]["n_calibration"],
            }
            for row in selective["rows"]
        }
    return found


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
