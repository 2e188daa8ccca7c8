"""Issue 35's acceptance, in a real browser: Debian's chromium driven by Playwright (no
browser downloaded) against `qadi serve`'s app on 127.0.0.1, judges on the TEST DOUBLE.

POST /judge with `trust` escalates five items (two of them double-labelled) → the lead
invites two SMEs and herself with `qadi sme invite` → each SME signs in by her link and
grades by keyboard (penalty-weighted criteria and a 1–5 scale; one "cannot judge"), a page
reloaded halfway keeps its marks → the lead sees the SMEs' agreement and settles their one
disagreement → the grades are in the database with their design, per-criterion marks and
rationales, the adjudication beside them. Every page passes axe-core (vendored) without a
serious or critical violation, fits a 640 px wide window (1280 px at 200% zoom) without
sideways scrolling, and shows Arabic right to left in the shipped Arabic font. Screenshots
of each page are saved under test-artifacts/workbench/.
"""

from __future__ import annotations

import re

import httpx
import pytest
import yaml
from playwright.sync_api import Page
from sqlalchemy import select

from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import HumanGradeRow, SmeAdjudicationRow, SmeAssignmentRow
from service.settings import Settings
from service.stores.keys import create_key
from service.stores.sme_queue import QueuePolicy, placement
from tests.browser.workbench_pages import (
    Server,
    check_page,
    grade_criteria,
    grade_scale,
    invite_link,
    item_on,
    reasoning,
    sign_in,
)
from tests.conftest import judges_config_data
from tests.integration.workbench_setup import _criteria_reply, criteria_body, scale_body

OVERLAP = 0.5
RUBRICS = {"criteria": "iraqi-linguistic-shaku-maku@2", "scale": "kinayat-explanation@3"}


def item_ids(kind: str, overlap: bool, count: int) -> list[str]:
    """Item ids that the queue double-labels (or not) at OVERLAP: the choice is a hash of
    the item, fixed, so the test picks ids instead of hoping."""
    policy = QueuePolicy(overlap_share=OVERLAP)
    found = []
    for number in range(1000):
        item = f"{kind[0]}{'o' if overlap else 's'}{number}"
        wanted = placement("default", item, RUBRICS[kind], policy)["labels_wanted"]
        if (wanted == 2) == overlap:
            found.append(item)
        if len(found) == count:
            return found
    raise AssertionError("no such item id")


@pytest.fixture
def loop_world(llm_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'qadi.db'}"
    upgrade(url)
    llm_server.rules(
        {"match": "shaku", "reply": {"content": _criteria_reply()}},
        {"match": "cooperation", "reply": {"content": '{"rating": 4}'}},
    )
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        key = create_key(session, "pipeline", ["judge"])
    settings = Settings(database_url=url, judges_config=config, sme_overlap_share=OVERLAP)
    with Server(settings) as server:
        yield server, key, url


def grade_all(page: Page, name: str, plan: dict[str, tuple]) -> list[str]:
    """From the item page she is on, grade every item the queue gives her, as `plan` says
    per item id; the item ids in the order she got them."""
    seen = []
    while "/workbench/items/" in page.url:
        item = item_on(page)
        seen.append(item)
        kind, *args = plan[item]
        if len(seen) == 1:
            check_page(page, f"{name}-3-grade-{kind}")
            assert_arabic_right_to_left(page)
        if kind == "criteria":
            grade_criteria(page, *args)
        elif kind == "scale":
            grade_scale(page, *args)
        else:
            page.get_by_text("I cannot judge this item").click()
            page.get_by_label("Why not?").fill(args[0])
            page.get_by_role("button", name="Send it to another expert").click()
        page.wait_for_load_state()
    return seen


def assert_arabic_right_to_left(page: Page) -> None:
    question = page.locator("#h-question + div")
    assert question.evaluate("e => getComputedStyle(e).direction") == "rtl"
    assert page.evaluate(
        "async () => { await document.fonts.ready;"
        " return document.fonts.check('16px \"Noto Naskh Arabic\"', 'شكو'); }"
    )


def test_items_escalated_at_request_time_are_graded_and_settled_in_the_workbench(
    loop_world, chromium
):
    server, key, url = loop_world
    c_both, s_both = item_ids("criteria", True, 1)[0], item_ids("scale", True, 1)[0]
    c_one, (s_one, s_hard) = item_ids("criteria", False, 1)[0], item_ids("scale", False, 2)
    bodies = [criteria_body(c_both), scale_body(s_both), criteria_body(c_one),
              scale_body(s_one), scale_body(s_hard)]  # fmt: skip
    headers = {"Authorization": f"Bearer {key}"}
    for body in bodies:
        answer = httpx.post(f"{server.base}/judge", json=body, headers=headers, timeout=60)
        assert answer.json()["trust"]["queued"]["reason"] == "escalated", answer.text

    tags = ("--tag", "dialect=iraqi", "--tag", "dialect=gulf")
    amira = invite_link(url, server.base, "amira", "--name", "أميرة", *tags)
    badr = invite_link(url, server.base, "badr", "--name", "Badr", *tags)
    lina = invite_link(url, server.base, "lina", "--name", "Lina", "--role", "lead")

    first = sign_in(chromium, amira, "sme1")
    check_page(first, "sme1-2-queue")
    first.get_by_role("button", name="Start grading").click()
    # halfway through the first item, a reload: what she typed was saved as she typed
    reasoning(first).press_sequentially("first thoughts")
    first.wait_for_function("document.getElementById('draft-status').innerText.includes('saved')")
    first.reload()
    assert reasoning(first).input_value() == "first thoughts"
    plan_first = {
        c_both: ("criteria", "mmxxx", "يشرح شكو وماكو بدقة"),
        s_both: ("scale", 4, "Close to the reference."),
        c_one: ("criteria", "mxxxx", "Only shaku explained."),
        s_one: ("scale", 5, "Exactly the reference's meaning."),
        s_hard: ("cannot", "The proverb is new to me."),
    }
    assert sorted(grade_all(first, "sme1", plan_first)) == sorted(plan_first)
    check_page(first, "sme1-4-queue-done")

    second = sign_in(chromium, badr, "sme2")
    second.get_by_role("button", name="Start grading").click()
    plan_second = {
        c_both: ("criteria", "mmxxx", "Both words explained."),
        s_both: ("scale", 2, "Misses the point of cooperation."),
        s_hard: ("scale", 3, "Partly right."),
    }
    assert sorted(grade_all(second, "sme2", plan_second)) == sorted(plan_second)

    lead = sign_in(chromium, lina, "lead")
    lead.goto(f"{server.base}/workbench/team")
    check_page(lead, "lead-2-team")
    team = lead.locator("main").inner_text()
    assert "1 disagreement to settle" in team
    # the scale item's two grades, 4 and 2: amira +2 against badr, badr −2 (one pair)
    assert "Krippendorff's α (ordinal) = 0.00" in team
    assert re.search(r"amira\s+1\s+\+2\.00", team) and re.search(r"badr\s+1\s+-2\.00", team)
    lead.get_by_role("link", name="1 disagreement to settle").click()
    check_page(lead, "lead-3-disagreements")
    lead.get_by_role("link", name=s_both).click()
    check_page(lead, "lead-4-adjudicate")
    lead.locator("body").press("Escape")
    lead.keyboard.press("3")
    reasoning(lead).fill("The answer names cooperation but not its necessity.")
    lead.get_by_role("button", name="Record the outcome").click()
    lead.wait_for_url("**/workbench/adjudicate")
    assert "3 by lina" in lead.locator("main").inner_text()
    check_page(lead, "lead-5-settled")

    _check_database(url, c_both, s_both, c_one, s_one, s_hard)


def _check_database(url: str, c_both, s_both, c_one, s_one, s_hard) -> None:
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        grades = {(g.item_id, g.rater): g for g in session.scalars(select(HumanGradeRow))}
        cannot = session.scalars(
            select(SmeAssignmentRow).where(SmeAssignmentRow.status == "cannot_judge")
        ).all()
        [settled] = session.scalars(select(SmeAdjudicationRow)).all()
    assert sorted(grades) == sorted([
        (c_both, "amira"), (s_both, "amira"), (c_one, "amira"), (s_one, "amira"),
        (c_both, "badr"), (s_both, "badr"), (s_hard, "badr"),
    ])  # fmt: skip
    for grade in grades.values():
        assert grade.rater_kind == "human" and grade.inclusion_prob == 1.0
        assert grade.attributes["queue_reason"] == "escalated" and grade.rationale
    marks = grades[(c_both, "amira")].criteria
    assert marks == {"shaku_meaning": True, "maku_meaning": True, "greeting_example": False,
                     "thanks_confusion": False, "msa_claim": False}  # fmt: skip
    assert grades[(c_both, "amira")].rationale == "يشرح شكو وماكو بدقة"
    assert grades[(s_both, "amira")].score == 4 and grades[(s_both, "badr")].score == 2
    assert [(c.note, c.grade_id) for c in cannot] == [("The proverb is new to me.", None)]
    assert settled.score == 3 and "necessity" in settled.rationale
