"""A nightly's trend section reads each earlier report's stored history point, never the
reports with their HTML (issue 39: 60 whole reports per nightly, +340 MB with 373 stored);
reports stored before points existed still count, from their JSON."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import delete, event

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import ReportPointRow
from service.stores.calibration import nightly_history, store_report

pytestmark = pytest.mark.db

DAY = datetime(2026, 11, 1)


def report(mad: float) -> dict:
    return {"judges": {"gpt-judge": {"overall": {"n": 40, "mad": mad, "signed_error": -mad}}}}


def test_the_trend_reads_points_not_reports_and_keeps_reports_without_one(migrated_db):
    engine = make_engine(migrated_db)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            ids = [
                store_report(session, "default", "nightly", "kinayat-explanation",
                             (report(0.1 * night), "<html>" + "x" * 100_000, "# md"),
                             (DAY + timedelta(days=night), DAY + timedelta(days=night + 1))).id
                for night in range(1, 4)
            ]  # fmt: skip
            store_report(session, "default", "adhoc", "kinayat-explanation",
                         (report(9.0), "<html>", "# md"))  # not a nightly: not in the trend
            # the oldest was stored before migration 0012 made points
            session.execute(delete(ReportPointRow).where(ReportPointRow.report_id == ids[0]))
        statements: list[str] = []
        event.listen(engine, "before_cursor_execute",
                     lambda *args: statements.append(args[2]))  # fmt: skip
        with session_scope(make_sessionmaker(engine)) as session:
            history = nightly_history(session, "default", "kinayat-explanation")
    finally:
        engine.dispose()
    assert [p["report"] for p in history] == ids  # oldest first, the pointless one included
    assert [p["at"] for p in history] == [
        (DAY + timedelta(days=night + 1)).isoformat() for night in range(1, 4)
    ]
    assert [p["judges"]["gpt-judge"]["mad"] for p in history] == pytest.approx([0.1, 0.2, 0.3])
    assert [p["judges"]["gpt-judge"]["n"] for p in history] == [40, 40, 40]
    read = " ".join(statements)
    assert "calibration_reports.html" not in read and "calibration_reports.markdown" not in read
    # one query for the trend, one for the single report without a point
    assert sum("FROM calibration_reports" in s for s in statements) == 2
