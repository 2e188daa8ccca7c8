"""The tables the migrations make are the tables the code maps (service/db/schema.py): after
`upgrade` to head, Alembic's autogenerate finds nothing to add, drop or change, on SQLite and
PostgreSQL. A migration that forgets a column, an index or a constraint the ORM declares (or
the reverse) fails here instead of in production."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from service.db.schema import Base

pytestmark = pytest.mark.db


def test_the_migrated_database_has_exactly_the_mapped_tables(migrated_db):
    engine = create_engine(migrated_db)
    try:
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()
    assert differences == []
