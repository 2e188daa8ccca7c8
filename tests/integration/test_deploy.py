"""Deployment files, checked statically and by running their exact command lines here
(no Docker engine runs on this machine)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import httpx
import yaml
from dockerfile_parse import DockerfileParser

from judges import load_config
from tests.conftest import ROOT, free_port, wait_for_http

SECRET_LIKE = re.compile(r"(sk-[A-Za-z0-9]{8,}|qadi_[0-9a-f]{8}_|PASSWORD=\S+|API_KEY=\S+)")


def dockerfile() -> DockerfileParser:
    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    return parser


def compose() -> dict:
    return yaml.safe_load((ROOT / "deploy/compose.yaml").read_text())


def test_dockerfile_is_multistage_pinned_non_root_with_healthcheck_and_no_secrets():
    parsed = dockerfile()
    instructions = [(i["instruction"], i["value"]) for i in parsed.structure]
    bases = [value for kind, value in instructions if kind == "FROM"]
    assert len(bases) == 2 and all(re.match(r"python:3\.11\.\d+-slim", b) for b in bases)
    users = [value for kind, value in instructions if kind == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert any(kind == "HEALTHCHECK" and "/healthz" in value for kind, value in instructions)
    for kind, value in instructions:
        assert not (kind == "ADD" and re.search(r"https?://", value)), value
    text = (ROOT / "Dockerfile").read_text()
    assert not SECRET_LIKE.search(text)
    env_keys = set(parsed.envs)
    assert not {k for k in env_keys if "KEY" in k or "PASSWORD" in k or "SECRET" in k}
    assert "qadi db upgrade" in json.loads(parsed.cmd if parsed.cmd.startswith("[") else "[]")[-1]
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "tests"} <= set(ignored)


def test_compose_services_reference_each_other():
    stack = compose()
    services = stack["services"]
    assert {"qadi", "postgres", "vllm", "nightly"} <= set(services)
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
    for name in ("qadi", "nightly"):
        url = services[name]["environment"]["QADI_DATABASE_URL"]
        assert "@postgres:5432/" in url and "${POSTGRES_PASSWORD}" in url
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


def test_the_exact_commands_run_outside_a_container(tmp_path):
    """The Dockerfile's CMD (migrate, then serve) answers /healthz; the compose nightly command
    runs against the migrated database."""
    command = json.loads(dockerfile().cmd)
    assert command[:2] == ["sh", "-c"]
    port = free_port()
    env = {
        **os.environ,
        "QADI_DATABASE_URL": f"sqlite:///{tmp_path / 'qadi.db'}",
        "QADI_PORT": str(port),
        "QADI_WORKERS": "1",
        "QADI_JUDGES_CONFIG": "",
    }
    env.pop("QADI_JUDGES_CONFIG")
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env['PATH']}"
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", timeout=60, process=process)
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json() == {"status": "ok"}
        assert httpx.get(f"http://127.0.0.1:{port}/readyz").json()["database"] == "ok"
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=20)
    nightly = [
        arg.replace("/reports", str(tmp_path / "reports"))
        for arg in compose()["services"]["nightly"]["command"]
    ]
    done = subprocess.run(
        nightly, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "reports").glob("nightly-*.json"))
