"""Issue 37 in a real browser (Debian's chromium, Playwright), against the app under uvicorn,
judges on the TEST DOUBLE (the planted misreading of tests/integration/test_alignment.py):

the lead opens Alignment, chooses the rubric and the judge, and reads the disagreements with
the experts' reasons → `qadi align propose` revises the judge → the lead opens the revision,
reads its held-out certification, and approves it → POST /judge now grades with the revised
template. Each page passes axe-core and the 200% zoom check; screenshots under
test-artifacts/workbench/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import pytest
import yaml

from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.settings import Settings
from service.stores.keys import create_key
from tests.browser.workbench_pages import Server, check_page, invite_link, sign_in
from tests.conftest import ROOT
from tests.integration.test_alignment import (
    GUIDANCE,
    body,
    config,
    label,
    planted,
    reviser_writes,
)


@pytest.fixture
def labelled(llm_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'qadi.db'}"
    upgrade(url)
    llm_server.rules(*planted())
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(config(llm_server)))
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        keys = {scope: create_key(session, scope, [scope]) for scope in ("judge", "grades")}
    with Server(Settings(database_url=url, judges_config=path)) as server:

        def post(route: str, scope: str, json: dict) -> int:
            headers = {"Authorization": f"Bearer {keys[scope]}"}
            return httpx.post(server.base + route, json=json, headers=headers,
                              timeout=60).status_code  # fmt: skip

        label(post)
        yield server, keys, url, {"QADI_DATABASE_URL": url, "QADI_JUDGES_CONFIG": str(path)}


def test_the_lead_reads_the_disagreements_and_approves_a_certified_revision(
    labelled, llm_server, chromium
):
    server, keys, url, env = labelled
    lead = sign_in(chromium, invite_link(url, server.base, "lina", "--role", "lead"), "align")
    lead.get_by_role("link", name="Alignment").click()
    lead.wait_for_url("**/workbench/alignment")
    check_page(lead, "align-2-empty")
    assert "No revision proposed yet" in lead.locator("main").inner_text()
    lead.get_by_label("Rubric").select_option("support-reply")
    lead.get_by_label("Judge").select_option("judge")
    lead.get_by_role("button", name="Show the disagreements").click()
    lead.wait_for_url("**/workbench/alignment?*")
    check_page(lead, "align-3-disagreements")
    shown = lead.locator("main").inner_text()
    assert "judge higher by 4: 14 items" in shown and "padding, no substance" in shown
    with lead.expect_download() as download:
        lead.get_by_role("link", name="CSV").click()
    assert download.value.suggested_filename == "disagreements-support-reply-v1-judge.csv"

    reviser_writes(llm_server, GUIDANCE)
    # a process of its own, as a lead runs it (this thread runs Playwright's event loop)
    proposed = subprocess.run(
        [sys.executable, "-m", "service", "align", "propose", "--rubric", "support-reply",
         "--judge", "judge", "--reviser", "reviser"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proposed.returncode == 0, proposed.stderr
    lead.reload()
    lead.get_by_role("link", name=re.compile(r"^\d{4}-\d\d-\d\d")).click()
    lead.wait_for_url("**/workbench/alignment/runs/*")
    check_page(lead, "align-4-revision")
    page = lead.locator("main").inner_text()
    assert "certified: the revision lowers MAD" in page and "PADDING-RULE" in page
    lead.get_by_role("button", name="Approve this revision").click()
    lead.wait_for_load_state()
    check_page(lead, "align-5-approved")
    assert "support-reply@2 grades with it" in lead.locator("main").inner_text()

    answer = httpx.post(f"{server.base}/judge", json=body(99), timeout=60,
                        headers={"Authorization": f"Bearer {keys['judge']}"}).json()  # fmt: skip
    assert answer["rubric"]["version"] == 2 and answer["results"][0]["score"] == 1
