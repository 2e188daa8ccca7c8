"""Fixtures of the chaos tests: the service over TestClient, as the HTTP tests use it, and
the database of a chaos run (SQLite, and PostgreSQL when CI provides it)."""

import pytest

from tests.conftest import POSTGRES_URL
from tests.integration.test_service_api import service  # noqa: F401  (a fixture, re-exported)

BACKENDS = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]


@pytest.fixture(params=BACKENDS)
def database(request, tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'qadi.db'}" if request.param == "sqlite" else POSTGRES_URL
