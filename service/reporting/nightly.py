"""What makes a calibration report a nightly one: the drift test against the previous nightly
report of the same scope and the trend over the stored ones (`qadi report nightly`, and a
calibration scope with a window that the service runs on its own schedule)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from calibration.drift import drift
from calibration.history import history_point


def with_drift_and_history(
    report: dict[str, Any],
    previous: tuple[str, dict[str, Any]] | None,
    history: list[dict[str, Any]],
    until: datetime,
) -> dict[str, Any]:
    """Add `drift` (against `previous`: its id and report) and `history` (the stored nightly
    points, then this one) to `report`; the drift found."""
    found = drift(report, previous[1] if previous else None)
    report["drift"] = {"previous_report": previous[0] if previous else None, **found}
    report["history"] = [*history, history_point(report, until.isoformat(), None)]
    return found
