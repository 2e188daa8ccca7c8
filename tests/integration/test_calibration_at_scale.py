"""Calibration from the database at scale (issue 39): the rows and inputs a report is made
of are those main made before the change, on both databases; reports from the database equal
reports from the same grades in a file; `qadi estimate --from-db`."""

from __future__ import annotations

import csv
import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import insert

from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import HumanGradeRow, ItemRow, JudgmentRow, ResponseRow
from service.stores.calibration import Selection, rows_from_db
from service.stores.projects import DEFAULT_PROJECT
from tests.conftest import run_cli
from tests.perf.judgment_db import populate

pytestmark = pytest.mark.db

# rows_from_db's output over `populate(url, 3000, seed=3)`, captured on main at f8c3a87
# (before the SQL-side selection), identical on SQLite and PostgreSQL there
GOLDEN = json.loads(Path("tests/data/rows_from_db_golden.json").read_text(encoding="utf-8"))
SELECTIONS = {
    "rubric": {"rubric": "kinayat-explanation"},
    "scale_both": {"scale": (1.0, 5.0), "score": "both"},
    "narrowed": {
        "judges": ["judge-good", "judge-noisy"], "metadata": {"domain": "food"},
        "since": datetime(2026, 1, 3), "until": datetime(2026, 1, 8), "score": "expected",
    },
    "everything": {},
}  # fmt: skip


def digest(rows) -> str:
    text = json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_rows_and_inputs_equal_those_captured_before_the_change(db_url):
    populate(db_url, 3000, seed=3)
    engine = make_engine(db_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            for name, selection in SELECTIONS.items():
                rows, inputs = rows_from_db(session, DEFAULT_PROJECT, Selection(**selection))
                expected = GOLDEN[name]
                assert inputs == expected["inputs"], name
                assert list(inputs["failed_judgments_excluded"]) == list(
                    expected["inputs"]["failed_judgments_excluded"]
                ), name
                assert (len(rows), digest(rows)) == (expected["rows"], expected["digest"]), name
    finally:
        engine.dispose()
