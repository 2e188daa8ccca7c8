"""Migrations on both databases, the CLI commands, and the real server process end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import yaml
from sqlalchemy import func, inspect, select, text

from service.db.engine import current_revision, downgrade, head_revision, make_engine, upgrade
from service.db.schema import ResponseRow
from tests.conftest import (
    ROOT,
    database_name,
    free_port,
    judges_config_data,
    migrated_copy,
    recreate_postgres,
    wait_for_http,
    with_database,
)

TABLES = {
    "rubrics",
    "items",
    "responses",
    "grade_requests",
    "judgments",
    "human_grades",
    "api_keys",
}


def qadi(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_migrations_up_and_down(db_url):
    engine = make_engine(db_url)
    upgrade(db_url)
    assert current_revision(engine) == head_revision(db_url)
    assert set(inspect(engine).get_table_names()) >= TABLES
    downgrade(db_url, "base")
    assert current_revision(engine) is None
    assert not TABLES & set(inspect(make_engine(db_url)).get_table_names())
    upgrade(db_url)
    assert set(inspect(make_engine(db_url)).get_table_names()) >= TABLES


def described(url: str) -> dict:
    """A database's schema (each table's columns, indexes and foreign keys), its revision and
    its rows of the tables migrations fill (projects)."""
    engine = make_engine(url)
    try:
        seen = inspect(engine)
        tables = {
            table: (
                [(c["name"], str(c["type"]), c["nullable"]) for c in seen.get_columns(table)],
                sorted((i["name"], tuple(i["column_names"])) for i in seen.get_indexes(table)),
                sorted(str(f["referred_table"]) for f in seen.get_foreign_keys(table)),
            )
            for table in seen.get_table_names()
        }
        with engine.connect() as connection:
            projects = sorted(connection.execute(text("SELECT name FROM projects")).scalars())
        return {"tables": tables, "revision": current_revision(engine), "projects": projects}
    finally:
        engine.dispose()


def test_the_suites_migrated_copy_is_what_upgrade_makes(db_url, tmp_path):
    """`migrated_db` copies a template this test process migrated (tests/conftest.py): the
    copy must be the database `upgrade` makes, table for table."""
    migrated_copy(db_url, tmp_path)
    if db_url.startswith("sqlite"):
        fresh = f"sqlite:///{tmp_path / 'upgraded.db'}"
    else:
        fresh = with_database(db_url, f"{database_name(db_url)}_upgraded")
        recreate_postgres(fresh)
    upgrade(fresh)
    copied = described(db_url)
    assert copied["revision"] == head_revision(db_url) and copied["projects"] == ["default"]
    assert set(copied["tables"]) >= TABLES
    assert copied == described(fresh)


def test_cli_db_keys_and_grades_import(db_url, tmp_path):
    env = {"QADI_DATABASE_URL": db_url}
    assert "run `qadi db upgrade`" in qadi("serve", "--port", "1", env=env).stderr
    assert qadi("db", "upgrade", env=env).returncode == 0
    head = head_revision(db_url)
    assert qadi("db", "current", env=env).stdout.split() == ["current:", head, "head:", head]
    created = qadi("keys", "create", "--scopes", "judge,grades", "--name", "ci", env=env)
    assert created.returncode == 0
    key = created.stdout.strip()
    assert key.startswith("qadi_")
    listed = qadi("keys", "list", env=env)
    assert key.split("_")[1] in listed.stdout and key not in listed.stdout
    bad_scope = qadi("keys", "create", "--scopes", "root", env=env)
    assert bad_scope.returncode == 2 and "scopes: unknown ['root']" in bad_scope.stderr
    grades = tmp_path / "grades.csv"
    grades.write_text(
        "item_id,rater,rater_kind,score,dialect\na,h1,human,3,iraqi\na,j1,judge,4,iraqi\n"
    )
    imported = qadi("grades", "import", str(grades), env=env)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["inserted"] == 2
    broken = tmp_path / "broken.csv"
    broken.write_text("item_id,rater,rater_kind,score\na,h1,person,high\n")
    refused = qadi("grades", "import", str(broken), env=env)
    assert refused.returncode == 2
    assert "row 2: rater_kind" in refused.stderr and "row 2: score" in refused.stderr
    assert qadi("keys", "revoke", key.split("_")[1], env=env).returncode == 0


def test_demo_loads_the_sample(db_url):
    done = qadi("demo", "--no-serve", env={"QADI_DATABASE_URL": db_url})
    assert done.returncode == 0, done.stderr
    assert "{'answers': 156, 'rubrics': 3}" in done.stderr
    again = qadi("demo", "--no-serve", env={"QADI_DATABASE_URL": db_url})
    assert again.returncode == 0, again.stderr
    engine = make_engine(db_url)
    with engine.connect() as connection:
        stored = connection.execute(select(func.count()).select_from(ResponseRow)).scalar()
    engine.dispose()
    assert stored == 156  # loaded once however often the demo starts


def test_qadi_serve_grades_end_to_end(migrated_db, llm_server, tmp_path):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    env = {"QADI_DATABASE_URL": migrated_db}
    key = qadi("keys", "create", "--scopes", "judge", env=env).stdout.strip()
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service",
            "serve",
            "--port",
            str(port),
            "--judges-config",
            str(config),
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/healthz", process=process, timeout=180)
        body = {
            "kind": "rubric",
            "response": "شكو يعني شنو اكو",
            "candidate_model": "qwen-2.5",
            "rubric_id": "iraqi-linguistic-shaku-maku",
            "metadata": {"item_id": "e2e"},
        }
        response = httpx.post(
            f"{base}/judge", json=body, timeout=30, headers={"Authorization": f"Bearer {key}"}
        )
        assert response.status_code == 200, response.text
        judgment_id = response.json()["results"][0]["id"]
        stored = httpx.get(f"{base}/judgments/{judgment_id}", headers={"X-API-Key": key}).json()
        assert stored["item_id"] == "e2e" and stored["status"] == "ok"
        assert llm_server.calls() == 1
    finally:
        process.terminate()
        process.wait(timeout=20)
