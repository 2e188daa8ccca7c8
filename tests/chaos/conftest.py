"""Fixtures of the chaos tests: the service over TestClient, as the HTTP tests use it, and
the database of a chaos run (SQLite, and PostgreSQL when CI provides it)."""

import pytest

from tests.conftest import POSTGRES_URL
from tests.integration.test_service_api import service  # noqa: F401  (a fixture, re-exported)

BACKENDS = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]


@pytest.fixture(params=BACKENDS)
def database(request, tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'qadi.db'}" if request.param == "sqlite" else POSTGRES_URL


@pytest.fixture
def sqlite_database(tmp_path) -> str:
    """For chaos tests whose hostile part is refused before any storage (the same code on
    either backend): the storage invariants under load are checked on both backends by the
    other chaos tests, so these run once (CI's time)."""
    return f"sqlite:///{tmp_path / 'qadi.db'}"
