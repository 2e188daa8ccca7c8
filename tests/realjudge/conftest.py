"""The real judge for these tests: vLLM serving SmolLM2-135M-Instruct on 127.0.0.1.

`.ci/run` starts it in the background (`.ci/vllm.sh start`) before `make test` and sets
QADI_LOCAL_JUDGE_URL, so its install and start overlap the rest of the suite; here the tests
wait for it (QADI_LOCAL_JUDGE_TIMEOUT seconds, default 1800, failing early if the start
failed). Without the variable (a developer's `make test`), the same script starts it here,
and stops it at the end unless it was already running. The suite hides the user's
QADI_VLLM_HOME (tests/conftest.py, so `qadi demo` never starts vLLM in a test); these tests
bring it back around each use of the script (`users_local_judge`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.conftest import users_local_judge


@pytest.fixture(scope="session")
def local_judge_url():
    from service import local_judge

    url = local_judge.url_from_environment()
    if url is not None:
        with users_local_judge():
            local_judge.wait_ready(url, float(os.environ.get("QADI_LOCAL_JUDGE_TIMEOUT", "1800")))
        yield url
        return
    with users_local_judge():
        already_running = local_judge.status().startswith("ready")
        url = local_judge.start()
    yield url
    if not already_running:
        with users_local_judge():
            local_judge.stop()


def real_judge_service(folder: Path, url: str, name: str = "smol", **entry: object):
    """A migrated SQLite database in `folder` and the HTTP service over it, its one judge the
    real local one (`entry`: fields over service.local_judge.judge_entry's); returns the
    service, the database URL and the judges file."""
    from service.db.engine import upgrade
    from service.local_judge import judge_entry
    from tests.integration.test_service_api import Service

    database = f"sqlite:///{folder / f'{name}.db'}"
    upgrade(database)
    config = folder / "judges.yaml"
    config.write_text(yaml.safe_dump({"model_list": [judge_entry(url, name=name, **entry)],
                                      "qadi": {"timeout": 300, "num_retries": 0}}))  # fmt: skip
    return Service(database, config), database, config

