"""The benchmark databases of tests/perf/judgment_db.py (issue 39): copies grown in SQL keep
items distinct and each answer's keys its own, and the service can still write after a
build (its id sequences past the ids the generator wrote)."""

from __future__ import annotations

from datetime import timedelta
from typing import get_args

import pytest
from sqlalchemy import func, select

from judges.models import CallStatus
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import HumanGradeRow, ItemRow, JudgmentRow, ResponseRow
from service.stores.projects import DEFAULT_PROJECT
from tests.perf.judgment_db import START, grow, populate

pytestmark = pytest.mark.db


def test_copies_have_their_own_items_answers_and_days(db_url):
    base = populate(db_url, 600, days=2)
    if db_url.startswith("sqlite"):
        with pytest.raises(SystemExit, match="--copies: PostgreSQL only"):
            grow(db_url, 3, days=2)
        return
    grown = grow(db_url, 3, days=2)
    assert grown == {
        "items": 3 * base["items"],
        "answers": 3 * base["answers"],
        "judgments": 3 * base["judgments"],
        "grades": 3 * base["grades"],
    }
    engine = make_engine(db_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            keys = session.scalars(select(ItemRow.content_hash)).all()
            assert len(set(keys)) == len(keys)
            pairs = session.execute(
                select(ResponseRow.id, ResponseRow.item_key, ResponseRow.attributes, ItemRow).join(
                    ItemRow, ItemRow.id == ResponseRow.item_id
                )
            ).all()
            for _, key, attributes, item in pairs:
                assert key == item.content_hash == attributes["item_id"]
                assert attributes.get("probe_of", keys[0]) in keys
            graded = set(session.scalars(select(HumanGradeRow.item_id)))
            assert graded <= set(keys)
            assert 3 * len(graded) == grown["grades"]  # three SMEs grade each of them
            first, last = session.execute(
                select(func.min(JudgmentRow.created_at), func.max(JudgmentRow.created_at))
            ).one()
            assert first == START - timedelta(days=4)  # the second copy, two spans earlier
            assert START + timedelta(days=1) < last < START + timedelta(days=2)
            copied = session.scalars(
                select(JudgmentRow).where(JudgmentRow.response_id > base["answers"])
            ).all()
            assert all(j.rationale is None and j.raw_reply is None for j in copied)
            assert all("x" in j.id for j in copied)
    finally:
        engine.dispose()


def test_the_service_can_add_items_and_answers_after_a_build(db_url):
    base = populate(db_url, 300)
    engine = make_engine(db_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            item = ItemRow(content_hash="new-item", prompt="?", reference=None)
            session.add(item)
            session.flush()
            session.add(
                ResponseRow(
                    project=DEFAULT_PROJECT,
                    content_hash="new-answer",
                    item_id=item.id,
                    item_key="new-item",
                    candidate_model="m",
                    text="a",
                    attributes={},
                )  # fmt: skip
            )
            session.add(
                HumanGradeRow(
                    project=DEFAULT_PROJECT,
                    item_id="new-item",
                    rater="sme-9",
                    rater_kind="human",
                    score=3.0,
                )
            )
        with session_scope(make_sessionmaker(engine)) as session:
            assert session.scalar(select(func.count()).select_from(ItemRow)) == base["items"] + 1
    finally:
        engine.dispose()


def test_every_stored_status_is_one_the_api_lists(db_url):
    """A failure is stored as the service stores one: GET /judgments answered 500 on the
    generator's `provider_error`, a status no judge call has."""
    populate(db_url, 3000)
    engine = make_engine(db_url)
    try:
        with engine.connect() as connection:
            stored = set(connection.scalars(select(JudgmentRow.status).distinct()))
    finally:
        engine.dispose()
    assert stored == set(get_args(CallStatus)) - {"timeout"}
