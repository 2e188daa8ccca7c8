"""`qadi db retain` (issue 39): judgments older than N days lose their raw reply and
rationale, nothing a report reads, so the period's reports are unchanged; newer judgments
keep everything."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import JudgmentRow, utcnow
from service.stores.calibration import Selection, rows_from_db
from service.stores.projects import DEFAULT_PROJECT
from tests.conftest import ROOT, run_cli
from tests.integration.test_service_api import Service

pytestmark = pytest.mark.db

REFERENCE = "Nothing great is achieved alone; people must cooperate."
ANSWERS = [f"It means: {REFERENCE}", "It is about working together.", "One hand does not clap."]


def stored(url: str) -> tuple[dict, list, dict]:
    """Each judgment's kept fields by id, and the calibration rows and inputs of the rubric."""
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            judgments = {
                row.id: (row.score, row.confidence, row.probabilities, row.criteria,
                         row.raw_reply, row.rationale)
                for row in session.scalars(select(JudgmentRow))
            }  # fmt: skip
            rows, inputs = rows_from_db(
                session, DEFAULT_PROJECT, Selection(rubric="kinayat-explanation")
            )
    finally:
        engine.dispose()
    return judgments, [r.model_dump() for r in rows], inputs


def test_old_judgments_lose_raw_text_and_reports_stay_the_same(migrated_db):
    service = Service(migrated_db, ROOT / "service/sample/judges.yaml")
    for number, answer in enumerate(ANSWERS):
        body = {"rubric_id": "kinayat-explanation", "candidate_model": "gpt-4o",
                "response": answer, "reference": REFERENCE, "metadata": {"item_id": f"i{number}"}}
        assert service.post("/judge", json=body).status_code == 200
    grades = "item_id,rater,rater_kind,score\n" + "".join(
        f"i{n},expert-1,human,{5 - n}\n" for n in range(len(ANSWERS))
    )
    assert service.post("/grades", scope="grades", files={"file": ("g.csv", grades)}).is_success
    engine = make_engine(migrated_db)
    with session_scope(make_sessionmaker(engine)) as session:  # two of three made 100 days ago
        old = session.scalars(select(JudgmentRow.id).where(JudgmentRow.response_id != (
            select(JudgmentRow.response_id).order_by(JudgmentRow.created_at.desc()).limit(1)
            .scalar_subquery()))).all()  # fmt: skip
        session.execute(update(JudgmentRow).where(JudgmentRow.id.in_(old))
                        .values(created_at=utcnow() - timedelta(days=100)))  # fmt: skip
    engine.dispose()
    before_judgments, before_rows, before_inputs = stored(migrated_db)
    assert all(raw is not None and why is not None
               for *_, raw, why in before_judgments.values())  # fmt: skip

    refused = run_cli("db", "retain", env={"QADI_DATABASE_URL": migrated_db})
    assert refused.returncode == 2
    assert "--raw-days: give the age in days, or set QADI_RETAIN_RAW_DAYS" in refused.stderr
    done = run_cli("db", "retain", env={"QADI_DATABASE_URL": migrated_db,
                                         "QADI_RETAIN_RAW_DAYS": "30"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f": {len(old)} lost their raw reply and rationale" in done.stderr

    after_judgments, after_rows, after_inputs = stored(migrated_db)
    for judgment_id, (*kept, raw, why) in after_judgments.items():
        assert kept == list(before_judgments[judgment_id][:4])  # the verdict and all it carries
        if judgment_id in old:
            assert raw is None and why is None
        else:
            assert (raw, why) == before_judgments[judgment_id][4:]
    assert (after_rows, after_inputs) == (before_rows, before_inputs)
    again = run_cli("db", "retain", "--raw-days", "30", env={"QADI_DATABASE_URL": migrated_db})
    assert ": 0 lost their raw reply" in again.stderr  # nothing twice
