"""Fixtures of the chaos tests: the service over TestClient, as the HTTP tests use it, and
the database of a chaos run (SQLite, and PostgreSQL when CI provides it)."""

import os
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.conftest import POSTGRES_URL, ROOT, free_port
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


class OwnPostgres:
    """A PostgreSQL server of one test's own, started on a free port (a few seconds):
    .ci/postgres.sh acts on it (start, halt, resume, stop) through the environment that
    names its port and data directory."""

    def __init__(self) -> None:
        port = free_port()
        self.data = f"/tmp/qadi-pg-{port}"
        self.env = {**os.environ, "QADI_PG_PORT": str(port), "QADI_PG_DATA": self.data}
        self.url = re.search(r"QADI_TEST_POSTGRES_URL=(\S+)", self.ctl("start"))[1]

    def ctl(self, action: str, check: bool = True) -> str:
        """`.ci/postgres.sh ACTION` on this server; what it printed."""
        done = subprocess.run(
            ["bash", ".ci/postgres.sh", action],
            cwd=ROOT,
            env=self.env,
            check=check,
            capture_output=True,
            text=True,
        )
        return done.stdout


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    """A server for the chaos tests that stop a server or take every connection it has:
    CI's server is shared with the suite's other process (`make test` runs two), whose
    tests would fail with it, and no later test meets a server an outage test restarted."""
    server = OwnPostgres()
    try:
        yield server
    finally:
        server.ctl("stop", check=False)
        shutil.rmtree(server.data, ignore_errors=True)
