"""Issue 41.8: grading the same (item, judge) again. Every request's verdict is stored with
the request (a cache hit as a copy marked `cached`), and a report counts each (item, judge)
once, with its latest verdict: the copies are the requests' record, not more evidence."""

from __future__ import annotations

from sqlalchemy import select

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import JudgmentRow
from service.stores.calibration import Selection, rows_from_db
from service.stores.projects import DEFAULT_PROJECT
from tests.conftest import ROOT
from tests.integration.test_service_api import Service

REFERENCE = "Nothing great is achieved alone; people must cooperate."
BODY = {
    "rubric_id": "kinayat-explanation", "candidate_model": "gpt-4o", "judges": ["stand-in-good"],
    "response": f"It means: {REFERENCE}", "reference": REFERENCE,
    "metadata": {"item_id": "asked-twice"},
}


def test_a_repeated_request_is_stored_as_a_cached_copy_and_counted_once(migrated_db):
    service = Service(migrated_db, ROOT / "service/sample/judges.yaml")
    answers = [service.post("/judge", json=BODY).json() for _ in range(3)]
    assert [a["results"][0]["cached"] for a in answers] == [False, True, True]
    assert {a["results"][0]["score"] for a in answers} == {5.0}
    csv = "item_id,rater,rater_kind,score\nasked-twice,expert-1,human,5\n"
    imported = service.post("/grades", scope="grades", files={"file": ("g.csv", csv)})
    assert imported.status_code == 200, imported.text

    engine = make_engine(migrated_db)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            stored = session.scalars(select(JudgmentRow).order_by(JudgmentRow.created_at)).all()
            # one row per request, each tied to its request; two are copies of the first
            assert [row.cached for row in stored] == [False, True, True]
            assert len({row.request_id for row in stored}) == 3
            rows, inputs = rows_from_db(
                session, DEFAULT_PROJECT, Selection(rubric="kinayat-explanation")
            )
    finally:
        engine.dispose()
    judged = [(r.item_id, r.rater) for r in rows if r.rater_kind == "judge"]
    assert judged == [("asked-twice", "stand-in-good")]  # once, however often it was asked
    assert [r.score for r in rows if r.rater_kind == "judge"] == [5.0]
