"""Drift between two calibration reports: a judge whose MAD or signed error, overall or in a
stratum, left the previous report's bootstrap interval (`qadi report nightly` exits 3 on it).

A stratum counts only when both reports hold at least `SMALL_N` of its items: below that the
intervals are too wide for a change to mean anything and every night would raise an alert.
"""

from __future__ import annotations

from typing import Any

from calibration.trust import SMALL_N

DRIFT_METRICS = ("mad", "signed_error")


def _blocks(judge: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"overall": judge["overall"], **judge.get("strata", {})}


def _change(judge, stratum, metric, now, before) -> dict[str, Any] | None:
    value = now.get(metric)
    interval = (before.get("ci") or {}).get(metric)
    if value is None or interval is None or interval[0] <= value <= interval[1]:
        return None
    return {
        "judge": judge,
        "metric": metric,
        "stratum": stratum,
        "value": value,
        "ci": (now.get("ci") or {}).get(metric),
        "previous": before.get(metric),
        "previous_ci": interval,
    }


def drift(current: dict[str, Any], previous: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every (judge, stratum, metric) whose value left the previous report's interval."""
    if previous is None:
        return []
    found = []
    for judge, data in current["judges"].items():
        before = previous["judges"].get(judge)
        if before is None:
            continue
        earlier = _blocks(before)
        for stratum, now in _blocks(data).items():
            then = earlier.get(stratum)
            if then is None:
                continue
            if stratum != "overall" and min(now["n"], then["n"]) < SMALL_N:
                continue
            for metric in DRIFT_METRICS:
                change = _change(judge, stratum, metric, now, then)
                if change is not None:
                    found.append(change)
    return found
