"""Fixtures of the chaos tests: the service over TestClient, as the HTTP tests use it, and
the database of a chaos run (SQLite, and PostgreSQL when CI provides it)."""

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

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


@dataclass(frozen=True)
class OwnPostgres:
    """A PostgreSQL server of one test's own: its URL, and the environment that makes
    .ci/postgres.sh act on it (halt, resume)."""

    url: str
    env: dict[str, str]

    def ctl(self, action: str) -> None:
        subprocess.run(
            ["bash", ".ci/postgres.sh", action],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
        )


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    """A server started for the test (.ci/postgres.sh, on a free port, a few seconds), for
    the chaos tests that stop a server or take every connection it has: CI's server may be
    shared with the suite's other process (`make test TEST_PROCESSES=2`), whose tests would
    fail with it, and no later test meets a server an outage test restarted."""
    port = free_port()
    data = f"/tmp/qadi-pg-{port}"
    env = {**os.environ, "QADI_PG_PORT": str(port), "QADI_PG_DATA": data}
    started = subprocess.run(
        ["bash", ".ci/postgres.sh", "start"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    server = OwnPostgres(re.search(r"QADI_TEST_POSTGRES_URL=(\S+)", started.stdout)[1], env)
    try:
        yield server
    finally:
        subprocess.run(["bash", ".ci/postgres.sh", "stop"], cwd=ROOT, env=env, capture_output=True)
        shutil.rmtree(data, ignore_errors=True)
