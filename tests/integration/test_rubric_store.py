"""Which rubric a bare id means when the database holds an older version than the library,
and an inline rubric stored again with every request."""

from __future__ import annotations

import uuid

from rubrics import library_rubric, parse_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import RubricRow
from service.stores.rubrics import get_rubric, save_rubric


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


def test_an_inline_rubric_sent_again_is_one_object_parsed_once(migrated_db, monkeypatch):
    """POST /judge stores an inline rubric with every request: the stored version it matches
    is handed out as one object per content hash, parsed once, so what is made once per
    rubric object (its rendered blocks) is made once, not per request (issue 40)."""
    from service.stores import rubrics as store

    ident = f"team-inline-{uuid.uuid4().hex[:8]}"
    inline = library_rubric("iraqi-linguistic-shaku-maku").model_copy(update={"id": ident})
    sessions = make_sessionmaker(make_engine(migrated_db))
    with session_scope(sessions) as session:
        first, created = save_rubric(session, "default", inline)
    assert created and first.version == inline.version
    parsed = []
    monkeypatch.setattr(store, "parse_rubric", lambda body: parsed.append(body) or
                        parse_rubric(body))  # fmt: skip
    again = []
    for _ in range(3):
        with session_scope(sessions) as session:
            again.append(save_rubric(session, "default", inline))
    assert [created for _, created in again] == [False, False, False]
    assert again[0][0] is again[1][0] is again[2][0]
    assert again[0][0] == first
    assert len(parsed) <= 1
    changed = inline.model_copy(update={"title": "a new title"})
    with session_scope(sessions) as session:
        newer, created = save_rubric(session, "default", changed)
    assert created and newer.version == first.version + 1 and newer.title == "a new title"
