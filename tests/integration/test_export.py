"""`qadi export` (issue 39): the project's judgments, grades and reports as Parquet files
partitioned by day, streamed a batch at a time, read back as one dataset with the values the
database holds."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow.dataset as ds
import pytest
from sqlalchemy import select, update

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import HumanGradeRow, JudgmentRow
from service.stores import exports
from tests.conftest import ROOT, run_cli
from tests.integration.test_service_api import Service

pytestmark = pytest.mark.db

REFERENCE = "Nothing great is achieved alone; people must cooperate."
DAYS = (datetime(2026, 11, 27, 23, 59), datetime(2026, 11, 28, 0, 1))


def test_export_writes_each_day_apart_and_reads_back_equal(migrated_db, tmp_path, monkeypatch):
    service = Service(migrated_db, ROOT / "service/sample/judges.yaml")
    for number in range(4):
        body = {"rubric_id": "kinayat-explanation", "candidate_model": "gpt-4o",
                "response": f"Answer {number}: {REFERENCE}", "reference": REFERENCE,
                "metadata": {"item_id": f"i{number}", "domain": "proverbs"}}
        assert service.post("/judge", json=body).status_code == 200
    grades = "item_id,rater,rater_kind,score,rationale\n" + "".join(
        f"i{n},expert-1,human,{5 - n},قال الخبير\n" for n in range(4)
    )
    assert service.post("/grades", scope="grades", files={"file": ("g.csv", grades)}).is_success
    engine = make_engine(migrated_db)
    with session_scope(make_sessionmaker(engine)) as session:  # two days, a minute apart
        ids = session.scalars(select(JudgmentRow.id).order_by(JudgmentRow.created_at)).all()
        for position, judgment_id in enumerate(ids):
            session.execute(update(JudgmentRow).where(JudgmentRow.id == judgment_id).values(
                created_at=DAYS[position % 2] + timedelta(microseconds=position)))  # fmt: skip
        stored = {row.id: (row.judge, row.score, row.confidence, row.rationale)
                  for row in session.scalars(select(JudgmentRow))}  # fmt: skip
        graded = {(row.item_id, row.score, row.rationale)
                  for row in session.scalars(select(HumanGradeRow))}  # fmt: skip
    engine.dispose()
    monkeypatch.setattr(exports, "BATCH", 5)  # several batches, as a big table would be
    env = {"QADI_DATABASE_URL": migrated_db}
    done = run_cli("export", str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stderr
    assert f"judgments: {len(stored)} records" in done.stderr

    judgments = tmp_path / "out" / "judgments"
    assert sorted(p.name for p in judgments.iterdir()) == ["day=2026-11-27", "day=2026-11-28"]
    assert len(list(judgments.rglob("*.parquet"))) >= 3  # written a batch at a time
    table = ds.dataset(judgments, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(stored)
    read = {r["id"]: (r["judge"], r["score"], r["confidence"], r["rationale"])
            for r in table.to_pylist()}  # fmt: skip
    assert read == stored
    days = {r["id"]: (str(r["day"]), r["created_at"].date().isoformat()) for r in table.to_pylist()}
    assert all(day == created for day, created in days.values())
    assert all('"domain": "proverbs"' in r["attributes"] for r in table.to_pylist())
    grades_read = ds.dataset(tmp_path / "out" / "grades", format="parquet").to_table()
    assert {(r["item_id"], r["score"], r["rationale"]) for r in grades_read.to_pylist()} == graded

    again = run_cli("export", str(tmp_path / "out"), "--tables", "grades", env=env)
    assert again.returncode == 2 and "grades: not empty; export into a new folder" in again.stderr
    wrong = run_cli("export", str(tmp_path / "new"), "--tables", "judgments,answers", env=env)
    assert "--tables: 'answers' is not a table; give judgments, grades, reports" in wrong.stderr
