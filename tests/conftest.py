"""Shared fixtures: the LLM test double as a real process, and judge configs pointing at it."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from xdist.scheduler import LoadScopeScheduling

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Every Grader builds a LiteLLM Router, which registers callbacks (its cooldown handler among
# them) in LiteLLM's process-global list, capped at 100 by default. A test process builds
# hundreds; past the cap a new Router silently loses its cooldowns. A service process builds
# one Router, so only the tests need the higher cap.
os.environ.setdefault("LITELLM_MAX_CALLBACKS", "100000")
ROOT = Path(__file__).resolve().parent.parent
# pytest-xdist sets COLUMNS in its worker processes (80, its own terminal's width); the suite
# reads qadi's tables as a run without a terminal prints them, at 160 columns
# (service/cli/app.py), whichever process it runs in.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)


def settled(read: Callable[[], Any], pause: float, unchanged: int) -> Any:
    """`read()` once it has returned the same value `unchanged` times in a row after the
    first, `pause` seconds apart: what a killed process left in flight has landed."""
    last, same = read(), 0
    while same < unchanged:
        time.sleep(pause)
        now = read()
        same, last = (same + 1 if now == last else 0), now
    return last


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout: float = 30.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process for {url} exited with {process.returncode}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout}s")


class LLMServer:
    """Handle on the test double: its URL and its control endpoints."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.api_base = f"{self.base}/v1"

    def reset(self) -> None:
        httpx.post(f"{self.base}/_control/reset").raise_for_status()

    def script(self, *replies: dict) -> None:
        httpx.post(f"{self.base}/_control/script", json=list(replies)).raise_for_status()

    def rules(self, *rules: dict) -> None:
        httpx.post(f"{self.base}/_control/rules", json=list(rules)).raise_for_status()

    def faults(self, **faults) -> None:
        httpx.post(f"{self.base}/_control/faults", json=faults).raise_for_status()

    def server(self, flavour: str, **rules: Any) -> None:
        """Follow the request rules of `flavour` (vllm, openai, llama-cpp-python,
        llama-server, ollama, ollama-0.4, lm-studio, plain; tests/llm_test_server.py
        ServerRules), with `rules` such as vLLM's max_logprobs."""
        body = {"flavour": flavour, **rules}
        httpx.post(f"{self.base}/_control/server", json=body).raise_for_status()

    def calls(self) -> int:
        return httpx.get(f"{self.base}/_control/calls").json()["count"]

    def settled_calls(self) -> int:
        """The call count once it stops moving: a request a client sent just before it was
        killed can still be read, and counted, after its death."""
        return settled(self.calls, pause=0.3, unchanged=1)

    def arrived(self) -> int:
        """The calls that reached the double, counted before their body is read: a call
        whose client gave up before the double read it counts here, not in `calls`."""
        return httpx.get(f"{self.base}/_control/calls").json()["arrived"]

    def settled_arrivals(self) -> int:
        """`arrived` once it stops moving: a call a client timed out on may reach a starved
        double after the client is done."""
        return settled(self.arrived, pause=0.5, unchanged=1)

    def calls_by_model(self) -> dict[str, int]:
        return httpx.get(f"{self.base}/_control/calls").json()["models"]

    def disconnected(self) -> list[str]:
        """Request ids (X-Request-Id) of the calls whose client went away before the reply."""
        return httpx.get(f"{self.base}/_control/calls").json()["disconnected"]

    def request_ids(self) -> list[str | None]:
        """The X-Request-Id header of each call received, in order."""
        return httpx.get(f"{self.base}/_control/calls").json()["request_ids"]

    def requests(self) -> list[dict]:
        return httpx.get(f"{self.base}/_control/calls", params={"bodies": True}).json()["requests"]


def start_llm_server() -> tuple[subprocess.Popen, LLMServer]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_test_server", "--port", str(port)], cwd=ROOT
    )
    server = LLMServer(port)
    wait_for_http(f"{server.base}/_control/calls", process=process)
    return process, server


@pytest.fixture(scope="session")
def llm_server_process():
    process, server = start_llm_server()
    yield server
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def llm_server(llm_server_process: LLMServer) -> LLMServer:
    llm_server_process.reset()
    return llm_server_process


# A service that takes a dead request's key over sooner: the request deadline counts four
# database waits (service/judging/limits.py request_deadline), here 3 s each instead of 10.
FAST_TAKEOVER = {"QADI_DATABASE_WAIT_SECONDS": "3"}

TRANSPORTS = ["litellm", "lean"]  # how a judge is called (judges/transport.py)


@pytest.fixture(params=TRANSPORTS)
def transport(request) -> str:
    """Each transport in turn, for the tests of the fault semantics both must keep."""
    return request.param


def judges_config_data(server: LLMServer, transport: str | None = None, **qadi) -> dict:
    """A panel spanning makers and both routes, all pointed at the test double; with
    `transport`, every judge is called by that one (each route's default otherwise)."""
    data = {
        "model_list": [
            {
                "model_name": "gpt-judge",
                "litellm_params": {
                    "model": "openai/gpt-4.1",
                    "api_base": server.api_base,
                    "api_key": "sk-test-secret-key-0001",
                },
                "substitute": "claude-judge",
            },
            {
                "model_name": "claude-judge",
                "litellm_params": {
                    "model": "openai/claude-3-5-sonnet",
                    "api_base": server.api_base,
                    "api_key": "sk-test-secret-key-0002",
                },
                "provider": "anthropic",
            },
            {
                "model_name": "llama-judge",
                "litellm_params": {
                    "model": "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct",
                    "api_base": server.api_base,
                },
            },
        ],
        "qadi": {"num_retries": 1, "timeout": 5, "panel": ["gpt-judge"], **qadi},
    }
    if transport is not None:
        for entry in data["model_list"]:
            entry["transport"] = transport
    return data


def target_models_file(directory: Path, server: LLMServer) -> Path:
    """Candidate models for benchmark runs, all answered by the test double; their makers
    (openai, anthropic, alibaba, meta) exercise the self-evaluation guard."""
    models = {
        "gpt-4o": {"model": "openai/gpt-4o", "api_key": "sk-test-candidate-01"},
        "claude-3-5-sonnet": {
            "model": "openai/claude-3-5-sonnet",
            "api_key": "sk-test-candidate-02",
        },
        "qwen": {"model": "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"},
        "vllm-llama": {"model": "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct"},
    }
    path = directory / "models.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "model_list": [
                    {"model_name": name, "litellm_params": {**params, "api_base": server.api_base}}
                    for name, params in models.items()
                ]
            }
        )
    )
    return path


@pytest.fixture
def judges_config(llm_server: LLMServer):
    from judges import parse_config

    return parse_config(judges_config_data(llm_server))


# --- databases -------------------------------------------------------------------------------
# Database tests run on SQLite always and on PostgreSQL when QADI_TEST_POSTGRES_URL is set
# (.ci/run sets it). Asked for PostgreSQL and unable to reach it, the run fails, never skips.


def worker_database(url: str | None) -> str | None:
    """CI's PostgreSQL database for this test process: under pytest-xdist (`make test`
    runs two processes) each worker has a database of its own on the same server,
    made on first use, since a test starts from a new database of that name
    (`recreate_postgres`), dropping the one the other worker's test would be using."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not url or not worker:
        return url
    from sqlalchemy import create_engine, make_url, text

    base = make_url(url)
    name = f"{base.database}_{worker}"
    engine = create_engine(base, isolation_level="AUTOCOMMIT")  # CREATE DATABASE needs it
    try:
        with engine.connect() as connection:
            exists = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
            if not exists:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


POSTGRES_URL = worker_database(os.environ.get("QADI_TEST_POSTGRES_URL"))
BACKENDS = ["sqlite", "postgresql"] if POSTGRES_URL else ["sqlite"]


# `make test` runs the suite in two processes (pytest-xdist), each test sent to whichever
# process is free, which keeps both busy to the end. The tests of a shared group run in the
# same process, one after the other: the real judge is one vLLM server on the CPU, and its
# tests' timeouts assume they have it to themselves. The grouping is this scheduler's, not
# `xdist_group` marks: pytest 9.2 ignores the node ids pytest-xdist 3.8 rewrites to carry
# them (pytest-dev/pytest-xdist#1386), so the marks silently grouped nothing.
SHARED_GROUPS = {"tests/realjudge/": "real-judge"}

# Modules whose tests share a module-scoped fixture that starts something (services, Ray, a
# documentation build, a browser): each is one unit of work too, so the fixture is made once
# rather than once in each process (test_workers' two services took 15 s, twice).
ONE_PROCESS_MODULES = (
    "tests/browser/test_report_pages.py",
    "tests/docs/test_site.py",
    "tests/integration/test_inspect.py",
    "tests/integration/test_proxy_config.py",
    "tests/integration/test_regrade_ray.py",
    "tests/integration/test_replicas.py",
    "tests/integration/test_workers.py",
)


def unit_of_work(nodeid: str) -> str:
    """What pytest-xdist sends to one process as a whole: a shared group, a module of
    ONE_PROCESS_MODULES, or else the test alone."""
    module = nodeid.split("::", 1)[0]
    if module in ONE_PROCESS_MODULES:
        return module
    return next((g for prefix, g in SHARED_GROUPS.items() if nodeid.startswith(prefix)), nodeid)


class SharedGroupScheduling(LoadScopeScheduling):
    """Every test its own unit of work but those of `unit_of_work`'s groups, sent in the
    order collected (not xdist's largest-unit-first, which would send the real judge's tests
    before its server is up)."""

    def __init__(self, config: pytest.Config, log=None) -> None:
        config.option.loadscopereorder = False
        super().__init__(config, log)

    def _split_scope(self, nodeid: str) -> str:
        return unit_of_work(nodeid)


class SharedGroupsPlugin:
    """pytest-xdist's scheduler hook, registered only where pytest-xdist is loaded (pytest
    refuses an unknown hook in a conftest, so `-p no:xdist` would fail otherwise)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log) -> SharedGroupScheduling:
        return SharedGroupScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(SharedGroupsPlugin(), "qadi-shared-groups")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The shared groups' tests go before the integration tests: the other process has those
    to run while one process runs a group's tests one by one (the real judge's take about
    five minutes), and the judge started with the run is up by then."""
    shared = tuple(SHARED_GROUPS)
    grouped = [item for item in items if item.nodeid.startswith(shared)]
    rest = [item for item in items if not item.nodeid.startswith(shared)]
    at = next((i for i, item in enumerate(rest) if item.nodeid.startswith("tests/integration/")),
              len(rest))  # fmt: skip
    items[:] = rest[:at] + grouped + rest[at:]


def pytest_generate_tests(metafunc):
    if "db_url" in metafunc.fixturenames:
        metafunc.parametrize("db_url", BACKENDS, indirect=True)


def reset_postgres(url: str) -> None:
    """An empty schema, and no connection left from an earlier test: engines a test dropped
    without disposing keep theirs open until garbage collection, and a long run would
    otherwise reach the server's max_connections (CI did, in the last tests)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    finally:
        engine.dispose()


@pytest.fixture
def db_url(request, tmp_path) -> str:
    """An empty, unmigrated database of the parametrized backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'qadi.db'}"
    recreate_postgres(POSTGRES_URL)
    return POSTGRES_URL


@pytest.fixture
def migrated_db(db_url: str, tmp_path_factory) -> str:
    """A database at the migrations' head: a copy of one this process migrated on first
    use (`migrated_copy`), not a migration per test (about 600 tests ask for one: ~0.3 s
    each on SQLite and on PostgreSQL, minutes of CI)."""
    migrated_copy(db_url, tmp_path_factory.getbasetemp())
    return db_url


# the migrated template of each backend, made once per test process
_TEMPLATES: dict[str, str] = {}


def migrated_copy(url: str, scratch: Path) -> None:
    """Fill the empty database at `url` with a copy of a migrated template (SQLite's in
    `scratch`). Each template is migrated by this run's code when first asked for (one left
    by an earlier run is replaced), so a copy is what `upgrade` would give."""
    if url.startswith("sqlite"):
        _copy_sqlite(url, scratch)
    else:
        _copy_postgres(url)


def _copy_sqlite(url: str, scratch: Path) -> None:
    """The template file copied into the database of `url` by SQLite's backup API."""
    from service.db.engine import upgrade

    if "sqlite" not in _TEMPLATES:
        template = scratch / "migrated-template.db"
        template.unlink(missing_ok=True)
        upgrade(f"sqlite:///{template}")
        _TEMPLATES["sqlite"] = str(template)
    with (
        closing(sqlite3.connect(_TEMPLATES["sqlite"])) as source,
        closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as copy,
    ):
        source.backup(copy)


def _copy_postgres(url: str) -> None:
    """The database of `url` made again from `<name>_template` (CREATE DATABASE TEMPLATE)."""
    from service.db.engine import upgrade

    if "postgresql" not in _TEMPLATES:
        template = f"{database_name(url)}_template"
        recreate_postgres(with_database(url, template))
        upgrade(with_database(url, template))
        _TEMPLATES["postgresql"] = template
    recreate_postgres(url, _TEMPLATES["postgresql"])


def database_name(url: str) -> str:
    from sqlalchemy import make_url

    return make_url(url).database


def with_database(url: str, name: str) -> str:
    """`url` naming the database `name` instead (its password kept)."""
    from sqlalchemy import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


def recreate_postgres(url: str, template: str | None = None) -> None:
    """The database of `url` dropped and made again, empty or as a copy of `template`, from
    the server's `postgres` database: 0.04 s. Emptying its schema over a connection to it
    and then dropping it took 0.3 s (measured; most likely DROP DATABASE ... FORCE waiting
    for the just-ended connection)."""
    from sqlalchemy import create_engine, text

    name = database_name(url)
    admin = create_engine(with_database(url, "postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            copy = f' TEMPLATE "{template}"' if template else ""
            connection.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    finally:
        admin.dispose()


# --- the CLI in-process -----------------------------------------------------------------------


class CliResult:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_cli(*args: str, env: dict[str, str] | None = None) -> CliResult:
    """Run `qadi ARGS` in this process (imports paid once); settings re-read from `env`."""
    from typer.testing import CliRunner

    from service.cli import app
    from service.settings import get_settings

    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        get_settings.cache_clear()
    return CliResult(result.exit_code, result.stdout, result.stderr)


def stored_grades(url: str) -> dict[tuple[str, str], dict]:
    """Every grade in the database as an interchange record, by (item_id, rater)."""
    from sqlalchemy import select

    from calibration.formats.interchange import to_records
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import HumanGradeRow
    from service.stores.grades import grade_from_row

    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            rows = [grade_from_row(r) for r in session.scalars(select(HumanGradeRow))]
    finally:
        engine.dispose()
    return {(r["item_id"], r["rater"]): r for r in to_records(rows)}


# --- a running qadi service (uvicorn process) -------------------------------------------------


class QadiServer:
    """A `qadi serve` process on 127.0.0.1 over a SQLite file, judging with the test double."""

    def __init__(self, base: str, keys: dict[str, str], database_url: str) -> None:
        self.base, self.keys, self.database_url = base, keys, database_url


@pytest.fixture(scope="session")
def qadi_server(llm_server_process: LLMServer, tmp_path_factory):
    from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
    from service.stores.keys import create_key

    folder = tmp_path_factory.mktemp("qadi-server")
    database_url = f"sqlite:///{folder / 'qadi.db'}"
    upgrade(database_url)
    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        keys = {"all": create_key(session, "client-tests", ["judge", "grades", "admin"])}
        keys["judge"] = create_key(session, "client-judge-only", ["judge"])
    config = folder / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server_process)))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "QADI_DATABASE_URL": database_url, "QADI_JUDGES_CONFIG": str(config)},
        stdout=subprocess.DEVNULL,
        stderr=(folder / "service.log").open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    wait_for_http(
        f"{base}/healthz", timeout=180, process=process
    )  # litellm imports slowly on a busy machine
    yield QadiServer(base, keys, database_url)
    process.terminate()
    process.wait(timeout=20)


@pytest.fixture(scope="session")
def openapi_document(tmp_path_factory) -> dict:
    """The service's OpenAPI document, from an app on a fresh migrated SQLite database."""
    from tests.client.openapi_models import openapi_document as build

    return build(tmp_path_factory.mktemp("openapi"))


# The user's local judge cache (.ci/vllm.sh), before the suite hides it; tests/realjudge use it.
USER_VLLM_HOME = os.environ.get("QADI_VLLM_HOME")


@pytest.fixture(scope="session", autouse=True)
def no_local_judge(tmp_path_factory) -> Path:
    """QADI_VLLM_HOME in an empty directory: `qadi demo` in a test finds no installed local
    judge, so it grades with the stand-ins and never starts vLLM on this machine (a start
    takes a minute and a port); tests/realjudge bring the user's back (`users_local_judge`)."""
    folder = tmp_path_factory.mktemp("no-local-judge")
    os.environ["QADI_VLLM_HOME"] = str(folder)
    return folder


@contextmanager
def users_local_judge():
    """The user's QADI_VLLM_HOME (or the script's default) while the block runs."""
    hidden = os.environ.pop("QADI_VLLM_HOME", None)
    if USER_VLLM_HOME is not None:
        os.environ["QADI_VLLM_HOME"] = USER_VLLM_HOME
    try:
        yield
    finally:
        os.environ.pop("QADI_VLLM_HOME", None)
        if hidden is not None:
            os.environ["QADI_VLLM_HOME"] = hidden


@pytest.fixture(scope="session", autouse=True)
def private_data_dir(tmp_path_factory) -> Path:
    """QADI_DATA_DIR (the default database, the demo key) in a temporary directory, for this
    process and the commands it starts, so no test touches the user's own qadi data."""
    folder = tmp_path_factory.mktemp("qadi-data")
    os.environ["QADI_DATA_DIR"] = str(folder)
    return folder


def commit_rounds(metrics_text: str) -> dict[tuple[str, str], float]:
    """(step, "count" | "sum") -> value of the group commit's round-size histogram
    (`qadi_commit_round_jobs`) in a `GET /metrics` text: its rounds and their requests."""
    return {
        (sample.labels["step"], sample.name.rsplit("_", 1)[1]): sample.value
        for family in text_string_to_metric_families(metrics_text)
        if family.name == "qadi_commit_round_jobs"
        for sample in family.samples
        if sample.name.endswith(("_count", "_sum"))
    }
