"""JSON columns on both backends, written by `service.json_text.column_text` and read by
`judges.payloads.decode_json` (the engines' serializers, issue 40): every value reads back as
`json.dumps` and `json.loads` would give it, and what msgspec would write otherwise (NaN,
a lone surrogate) is written by the standard library, kept or refused as before, never
turned into another value."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, insert, select
from sqlalchemy.exc import DBAPIError, StatementError

from service.db.engine import make_engine
from service.db.schema import JSONType

pytestmark = pytest.mark.db

VALUES = [
    {"text": "شلونك؟ شكو ماكو", "quote": 'a "b" \\ c', "controls": "\x01\t\n\u2028"},
    {"small": 1e-07, "large": 1e16, "third": 1 / 3, "power": 2.5e-05, "big": 2**62},
    {"nested": [[], {}, [{"a": [1, 2.5, "x", None, True]}]]},
]


def stored(url: str, value) -> object:
    """`value` written into a JSON column of a new table and read back."""
    engine = make_engine(url)
    table = Table("json_probe", MetaData(), Column("id", Integer, primary_key=True),
                  Column("value", JSONType))  # fmt: skip
    try:
        table.create(engine)
        with engine.begin() as connection:
            connection.execute(insert(table).values(id=1, value=value))
        with engine.connect() as connection:
            return connection.execute(select(table.c.value)).scalar_one()
    finally:
        table.drop(engine, checkfirst=True)
        engine.dispose()


@pytest.mark.parametrize("value", VALUES)
def test_a_json_column_reads_back_what_was_written(db_url, value):
    assert stored(db_url, value) == value


def test_a_nan_is_kept_by_sqlite_and_refused_by_postgresql_never_stored_as_null(db_url):
    """The stores refuse NaN before writing (service.db.values); below them the engine writes
    it as json.dumps does, so a defect shows instead of becoming a null."""
    if db_url.startswith("sqlite"):
        assert math.isnan(stored(db_url, {"score": math.nan})["score"])
        return
    with pytest.raises((DBAPIError, StatementError)):
        stored(db_url, {"score": math.nan})


def test_a_lone_surrogate_is_written_escaped_as_before(db_url):
    if db_url.startswith("sqlite"):
        assert stored(db_url, {"t": "\ud800"}) == {"t": "\ud800"}
        return
    with pytest.raises((DBAPIError, StatementError)):
        stored(db_url, {"t": "\ud800"})
