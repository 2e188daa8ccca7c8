"""Which rubric a bare id means when the database holds an older version than the library."""

from __future__ import annotations

from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import RubricRow
from service.stores.rubrics import get_rubric


def test_a_newer_bundled_version_wins_over_the_stored_one(migrated_db):
    bundled = library_rubric("kinayat-explanation")
    assert bundled.version == 3  # the structured-rating judge, scale first; v1 was the paper's rule
    v1 = bundled.model_copy(update={"version": 1, "template": "kinayat-explanation@1"})
    sessions = make_sessionmaker(make_engine(migrated_db))
    with session_scope(sessions) as session:
        session.add(
            RubricRow(
                project="default",
                rubric_id=v1.id,
                version=1,
                kind=v1.kind,
                content_hash="sha256:v1",
                body=v1.model_dump(mode="json"),
            )
        )
    with session_scope(sessions) as session:
        assert get_rubric(session, "default", "kinayat-explanation").template == (
            "kinayat-explanation@3"
        )
        assert get_rubric(session, "default", "kinayat-explanation@1").template == (
            "kinayat-explanation@1"
        )
