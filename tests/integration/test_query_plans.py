"""The database does the narrowing (issue 39): a page after a cursor starts its index scan at
the cursor, on both databases, so a page near the end of a year of judgments costs what the
first page does. Checked on the plans each database makes for the API's own query."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from service.db.engine import make_engine
from service.db.filters import after, has_attribute
from service.db.schema import JudgmentRow
from service.stores.listings import _judgments
from service.stores.projects import Tenant

pytestmark = pytest.mark.db

CURSOR = (datetime(2026, 11, 1, 12, 0), "7f3c0000000000000000000000000000")


def plan(engine, query) -> str:
    """The plan the database chooses for `query`, as text (sequential scans off on PostgreSQL,
    whose planner takes one for any table this small; the question is what an index can do)."""
    compiled = query.compile(engine, compile_kwargs={"literal_binds": True})
    with Session(engine) as session:
        if engine.dialect.name == "postgresql":
            session.execute(text("SET enable_seqscan = off"))
            rows = session.execute(text(f"EXPLAIN {compiled}")).scalars()
            return "\n".join(rows)
        rows = session.execute(text(f"EXPLAIN QUERY PLAN {compiled}")).all()
        return "\n".join(str(row[-1]) for row in rows)


def page_plan(url: str, condition) -> str:
    """The plan of a GET /judgments page (50 rows, oldest first) narrowed by `condition`."""
    engine = make_engine(url)
    try:
        query = (
            _judgments(Tenant("default"))
            .where(condition)
            .order_by(JudgmentRow.created_at, JudgmentRow.id)
            .limit(50)
        )
        return plan(engine, query)
    finally:
        engine.dispose()


def test_a_page_after_a_cursor_starts_the_index_scan_at_the_cursor(migrated_db):
    found = page_plan(migrated_db, after(JudgmentRow.created_at, JudgmentRow.id, *CURSOR))
    if migrated_db.startswith("postgresql"):
        # the row comparison is the scan's index condition, not a filter over every entry
        [scan] = [line for line in found.splitlines() if "Index Cond: (((project)" in line]
        assert "AND (ROW(created_at, (id)::text) > ROW('2026-11-01 12:00:00'" in scan, found
        assert "Filter" not in found, found
    else:
        expected = "USING INDEX ix_judgments_project_created (project=? AND (created_at,id)>(?,?))"
        assert expected in found, found


def test_a_metadata_filter_is_answered_by_the_attribute_index_on_postgresql(migrated_db):
    """`metadata=domain=food` finds its answers by the GIN index (migration 0015); SQLite
    has no index of a JSON object's keys, so there it reads each answer's attributes (the
    stated limit, docs/explanation/performance.md)."""
    found = page_plan(migrated_db, has_attribute("domain", "food"))
    if migrated_db.startswith("postgresql"):
        assert "Bitmap Index Scan on ix_responses_attributes" in found, found
        assert "Index Cond: (attributes @> jsonb_build_object('domain'::text, 'food'::text))" in (
            found
        ), found
    else:
        assert "SCAN attr VIRTUAL TABLE INDEX" in found, found
