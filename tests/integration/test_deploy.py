"""Deployment files, checked statically and by running their exact command lines here
(no Docker engine runs on this machine): the compose start order (postgres healthy ->
one-shot migrate -> qadi once vLLM is healthy), the escaped database URL built by the image's
entrypoint, the reports volume, and the lock the image installs from (issue 16, item 14;
issue 18, part 3)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version

import httpx
import pytest
import yaml
from dockerfile_parse import DockerfileParser
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from sqlalchemy.engine import make_url

from judges import load_config
from tests.conftest import ROOT, free_port, wait_for_http

SECRET_LIKE = re.compile(r"(sk-[A-Za-z0-9]{8,}|qadi_[0-9a-f]{8}_|PASSWORD=\S+|API_KEY=\S+)")
ENTRYPOINT = ROOT / "deploy" / "entrypoint.py"
# every character that breaks a hand-written URL: @ ends the user info, : splits it, / starts
# the path, % starts an escape, # a fragment, ? a query
HOSTILE_PASSWORD = "p@ss:w/rd%41#x?y"
LOCK_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+) \\\n((?:[ \t]+--hash=sha256:[0-9a-f]{64}.*\n?)+)",
                      re.M)


def dockerfile() -> DockerfileParser:
    return DockerfileParser(path=str(ROOT / "Dockerfile"))


def instructions() -> list[tuple[str, str]]:
    return [(i["instruction"], i["value"]) for i in dockerfile().structure]


def compose() -> dict:
    return yaml.safe_load((ROOT / "deploy/compose.yaml").read_text())


def test_dockerfile_is_multistage_pinned_non_root_with_healthcheck_and_no_secrets():
    parsed = dockerfile()
    bases = [value for kind, value in instructions() if kind == "FROM"]
    assert len(bases) == 2 and all(re.match(r"python:3\.11\.\d+-slim", b) for b in bases)
    users = [value for kind, value in instructions() if kind == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert any(kind == "HEALTHCHECK" and "/healthz" in value for kind, value in instructions())
    for kind, value in instructions():
        assert not (kind == "ADD" and re.search(r"https?://", value)), value
    text = (ROOT / "Dockerfile").read_text()
    assert not SECRET_LIKE.search(text)
    env_keys = set(parsed.envs)
    assert not {k for k in env_keys if "KEY" in k or "PASSWORD" in k or "SECRET" in k}
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "tests"} <= set(ignored)


def test_the_image_serves_only_and_its_entrypoint_is_let_into_the_build():
    parsed = dockerfile()
    # migrations are compose's one-shot `migrate` service, never run on every start
    command = json.loads(parsed.cmd)
    assert "qadi serve" in command[-1] and "db upgrade" not in command[-1]
    (entrypoint,) = [json.loads(v) for kind, v in instructions() if kind == "ENTRYPOINT"]
    assert entrypoint == ["python", "/opt/qadi/entrypoint.py"]
    assert ("COPY", "deploy/entrypoint.py /opt/qadi/entrypoint.py") in instructions()
    ignored = (ROOT / ".dockerignore").read_text().split()
    # deploy/ stays out of the build context except the entrypoint (a later line wins)
    assert ignored.index("!deploy/entrypoint.py") > ignored.index("deploy")


def test_the_image_installs_exactly_the_locked_versions():
    """requirements.lock pins every runtime dependency of pyproject.toml (==, with hashes, in
    its declared range); the Dockerfile installs from it in hash-checking mode."""
    runs = [value for kind, value in instructions() if kind == "RUN"]
    locked = [r for r in runs if "requirements.lock" in r]
    assert len(locked) == 2 and all("--require-hashes" in r for r in locked)
    assert any("--no-deps" in r and "/qadi/" in r for r in runs)  # qadi itself adds nothing
    text = (ROOT / "requirements.lock").read_text()
    pins = {canonicalize_name(m[1]): Version(m[2]) for m in LOCK_PIN.finditer(text)}
    assert pins and len(pins) == text.count("==")  # every pin carries its hashes
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirement in map(Requirement, project["dependencies"]):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not locked"
        assert pins[name] in requirement.specifier, f"{name}=={pins[name]}"
    # the lock holds the versions the tests ran with (deploy/lock.sh constrains it so)
    assert pins["litellm"] == Version(version("litellm"))


def test_compose_services_reference_each_other():
    stack = compose()
    services = stack["services"]
    assert {"qadi", "postgres", "vllm", "nightly", "migrate"} <= set(services)
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/")):
                assert source in stack["volumes"], f"{name} uses undeclared volume {source}"
    assert "healthcheck" in services["postgres"]
    gpu = services["vllm"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"]
    assert services["vllm"]["image"].startswith("vllm/vllm-openai:")
    assert "--enable-prefix-caching" in services["vllm"]["command"]
    vllm_port = services["vllm"]["command"][services["vllm"]["command"].index("--port") + 1]
    assert services["qadi"]["environment"]["QADI_JUDGES_CONFIG"] == "/config/judges.yaml"
    mounted = [v for v in services["qadi"]["volumes"] if v.endswith("/config/judges.yaml:ro")]
    assert mounted and (ROOT / "deploy" / mounted[0].split(":")[0]).is_file()
    judges = load_config(ROOT / "deploy/judges.yaml")
    local = [e for e in judges.model_list if e.model.startswith("hosted_vllm/")]
    assert local and local[0].litellm_params["api_base"] == f"http://vllm:{vllm_port}/v1"
    for entry in judges.model_list:
        key = entry.litellm_params.get("api_key")
        assert key is None or key.startswith("os.environ/"), "keys come from the environment"
        if key:
            assert key.removeprefix("os.environ/") in services["qadi"]["environment"]
    assert not SECRET_LIKE.search((ROOT / "deploy/compose.yaml").read_text())


def healthcheck_url(service: dict) -> str:
    (url,) = re.findall(r"http://127\.0\.0\.1:\d+/\w+", " ".join(service["healthcheck"]["test"]))
    return url


def test_compose_starts_in_order_and_migrates_once():
    services = compose()["services"]
    migrate = services["migrate"]
    assert migrate["command"] == ["qadi", "db", "upgrade"] and migrate["restart"] == "no"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert services["qadi"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
        "vllm": {"condition": "service_healthy"},
    }
    assert services["nightly"]["depends_on"]["migrate"] == {
        "condition": "service_completed_successfully"
    }
    # vLLM's OpenAI server answers GET /health on the port it is started with
    command = services["vllm"]["command"]
    port = command[command.index("--port") + 1]
    assert healthcheck_url(services["vllm"]) == f"http://127.0.0.1:{port}/health"
    assert healthcheck_url(services["qadi"]).startswith("http://127.0.0.1:8000/")
    assert migrate["image"] == services["qadi"]["image"] == services["nightly"]["image"]


def test_compose_passes_the_database_as_parts_and_mounts_reports_where_written():
    services = compose()["services"]
    for name in ("migrate", "qadi", "nightly"):
        env = services[name]["environment"]
        assert "QADI_DATABASE_URL" not in env, f"{name}: a hand-written URL breaks on '@'"
        assert env["QADI_DB_HOST"] == "postgres" and env["QADI_DB_PORT"] == "5432"
        assert env["QADI_DB_PASSWORD"].startswith("${POSTGRES_PASSWORD")
        assert env["QADI_DB_USER"] == services["postgres"]["environment"]["POSTGRES_USER"]
        assert env["QADI_DB_NAME"] == services["postgres"]["environment"]["POSTGRES_DB"]
    nightly = services["nightly"]
    out_dir = nightly["command"][nightly["command"].index("--out-dir") + 1]
    for name in ("qadi", "nightly"):
        assert f"reports:{out_dir}" in services[name]["volumes"], name


def entrypoint_env(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, str(ENTRYPOINT), *command], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_entrypoint_escapes_the_password_it_builds_the_url_from():
    env = {"PATH": os.environ["PATH"], "QADI_DB_HOST": "postgres", "QADI_DB_PORT": "5432",
           "QADI_DB_USER": "qadi", "QADI_DB_NAME": "qadi", "QADI_DB_PASSWORD": HOSTILE_PASSWORD,
           "QADI_DATABASE_URL": "sqlite:////data/qadi.db"}  # the image's default, overridden
    printed = entrypoint_env(
        [sys.executable, "-c", "import os; print(os.environ['QADI_DATABASE_URL'])"], env
    ).strip()
    url = make_url(printed)
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+psycopg", "qadi", HOSTILE_PASSWORD, "postgres", 5432, "qadi"
    )
    # without parts the environment passes through untouched
    env = {"PATH": os.environ["PATH"], "QADI_DATABASE_URL": "sqlite:////data/qadi.db"}
    assert entrypoint_env(["sh", "-c", "echo $QADI_DATABASE_URL"], env) == "sqlite:////data/qadi.db\n"


def service_env(db_url: str, tmp_path) -> dict[str, str]:
    """The containers' environment here: SQLite by URL, or PostgreSQL by parts with a password
    that breaks any unescaped URL (the test server trusts local connections, so only the
    escaping decides whether the URL still names the right host and database)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QADI_")}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env['PATH']}"
    if db_url.startswith("sqlite"):
        return {**env, "QADI_DATABASE_URL": db_url}
    url = make_url(db_url)
    return {**env, "QADI_DB_HOST": url.host, "QADI_DB_PORT": str(url.port),
            "QADI_DB_USER": url.username, "QADI_DB_NAME": url.database,
            "QADI_DB_PASSWORD": HOSTILE_PASSWORD}


@pytest.mark.db
def test_the_exact_commands_run_outside_a_container(db_url, tmp_path):
    """Through the image's entrypoint: compose's migrate command, then the Dockerfile's CMD
    answering the compose healthcheck's path, then compose's nightly command."""
    services = compose()["services"]
    env = service_env(db_url, tmp_path)
    entry = [sys.executable, str(ENTRYPOINT)]
    migrated = subprocess.run([*entry, *services["migrate"]["command"]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    assert migrated.returncode == 0, migrated.stderr
    command = json.loads(dockerfile().cmd)
    assert command[:2] == ["sh", "-c"]
    port = free_port()
    process = subprocess.Popen(
        [*entry, *command],
        cwd=tmp_path,
        env={**env, "QADI_PORT": str(port), "QADI_WORKERS": "1"},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=180, process=process)
        probe = healthcheck_url(services["qadi"]).replace(":8000/", f":{port}/")
        answer = httpx.get(probe)
        assert answer.status_code == 200 and answer.json()["database"] == "ok"
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=20)
    nightly = [
        arg.replace("/reports", str(tmp_path / "reports"))
        for arg in services["nightly"]["command"]
    ]
    done = subprocess.run([*entry, *nightly], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "reports").glob("nightly-*.json"))
