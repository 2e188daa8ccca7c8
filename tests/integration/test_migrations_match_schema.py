"""The tables the migrations make are the tables the code maps (service/db/schema.py): after
`upgrade` to head, Alembic's autogenerate finds nothing to add, drop or change, on SQLite and
PostgreSQL. A migration that forgets a column, an index or a constraint the ORM declares (or
the reverse) fails here instead of in production."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine

from service.db.schema import POSTGRESQL_ONLY_INDEXES, Base

pytestmark = pytest.mark.db


def made_on(dialect: str):
    """Alembic's filter of the mapped objects a `dialect` database has: every one, but the
    PostgreSQL-only indexes elsewhere (they are `ddl_if`, which Alembic does not read)."""

    def include(obj, name, type_, reflected, compare_to) -> bool:
        return not (type_ == "index" and name in POSTGRESQL_ONLY_INDEXES and dialect != "postgresql")

    return include


def test_the_migrated_database_has_exactly_the_mapped_tables(migrated_db):
    engine = create_engine(migrated_db)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"include_object": made_on(connection.dialect.name)}
            )
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    assert differences == []
