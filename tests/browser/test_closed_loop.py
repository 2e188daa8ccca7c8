"""Issue 36's acceptance, in a real browser (Debian's chromium, Playwright), against the app
under uvicorn with its own recalibration loop running (every 0.5 s), judges on the TEST
DOUBLE with planted confidences:

POST /judge with `trust` escalates 20 items (nothing is calibrated yet) → the lead adds a
calibration scope on the dashboard → an SME grades the 20 items in the workbench by keyboard
→ recalibration runs by itself → the dashboard shows the new threshold, the trust map and
the change in the log → the next POST /judge on a like item answers `trusted` under that
guarantee. Each page passes axe-core and the 200% zoom check; screenshots under
test-artifacts/workbench/.
"""

from __future__ import annotations

import time

import httpx
import pytest
import yaml

from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.settings import Settings
from service.stores.keys import create_key
from tests.browser.workbench_pages import (
    Server,
    check_page,
    grade_scale,
    invite_link,
    item_on,
    sign_in,
)
from tests.integration.test_trust_at_request_time import body, judges, plant, truth

ITEMS = range(20)
LIKE = 30  # judged after the recalibration: the cheap judge sure, and right
CASCADE = {"alpha": 0.2, "delta": 0.2, "cascade": ["cheap", "strong"], "audit_rate": 0}


@pytest.fixture
def loop(llm_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'qadi.db'}"
    upgrade(url)
    rules = [rule for i in [*ITEMS, LIKE] for rule in plant(i, (truth(i), 0.97), (truth(i), 0.9))]
    llm_server.rules(*rules)
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges(llm_server)))
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        key = create_key(session, "pipeline", ["judge"])
    settings = Settings(database_url=url, judges_config=config, sme_overlap_share=0.0,
                        recalibration_interval_seconds=0.5)  # fmt: skip
    with Server(settings) as server:
        yield server, key, url


def judge(server, key: str, item: int) -> dict:
    answer = httpx.post(f"{server.base}/judge", json=body(item, trust=CASCADE),
                        headers={"Authorization": f"Bearer {key}"}, timeout=60)  # fmt: skip
    assert answer.status_code == 200, answer.text
    return answer.json()["trust"]


def test_escalations_are_graded_recalibration_runs_by_itself_and_the_next_item_is_trusted(
    loop, chromium
):
    server, key, url = loop
    assert all(judge(server, key, i)["status"] == "escalated" for i in ITEMS)

    lead = sign_in(chromium, invite_link(url, server.base, "lina", "--role", "lead"), "loop-lead")
    lead.goto(f"{server.base}/workbench/dashboard")
    check_page(lead, "loop-lead-2-dashboard")
    lead.get_by_label("Name (lowercase").fill("kinayat")
    lead.get_by_label("Rubric (id").fill("kinayat-explanation")
    lead.get_by_label("α: most disagreement").fill("0.2")
    lead.get_by_label("δ: chance").fill("0.2")
    lead.get_by_label("Cascades").fill("cheap,strong")
    lead.get_by_label("Recalibrate after").fill("20")
    lead.get_by_role("button", name="Add the scope").click()
    lead.wait_for_url("**/workbench/dashboard/kinayat")
    check_page(lead, "loop-lead-3-scope-before")
    assert "No guarantee yet" in lead.locator("main").inner_text()

    sme = sign_in(chromium, invite_link(url, server.base, "amira", "--tag", "dialect=gulf"),
                  "loop-sme")  # fmt: skip
    sme.get_by_role("button", name="Start grading").click()
    graded = 0
    while "/workbench/items/" in sme.url:
        item = int(item_on(sme).removeprefix("item-"))
        grade_scale(sme, truth(item), "Matches the reference.")
        sme.wait_for_load_state()
        graded += 1
    assert graded == len(ITEMS)

    deadline = time.monotonic() + 120
    while True:  # the service's own loop: nobody presses "Recalibrate now"
        lead.goto(f"{server.base}/workbench/dashboard/kinayat")
        text = lead.locator("main").inner_text()
        if "Last run" in text and ": ok." in text:
            break
        assert time.monotonic() < deadline, text[:2000]
        time.sleep(0.5)
    check_page(lead, "loop-lead-4-scope-after")
    row = lead.locator("section", has_text="applies now").locator("tr", has_text="cheap>strong")
    threshold = float(row.first.locator("td").nth(2).inner_text())
    assert 0 <= threshold <= 0.97  # all 20 labels agree: the walk reaches the grid's bottom
    log = lead.locator("section", has_text="Changes of the live guarantees").inner_text()
    assert f"none → {threshold:.3f}" in log and "20 new SME labels; service" in log

    trust = judge(server, key, LIKE)
    assert trust["status"] == "trusted" and trust["judge"] == "cheap"
    assert trust["guarantee"]["threshold"] == pytest.approx(threshold, abs=5e-4)
    assert trust["guarantee"]["n_calibration"] == len(ITEMS)
