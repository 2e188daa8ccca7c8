"""What the browser tests of the workbench share: the app under uvicorn in a thread, the page
checks every page passes (axe-core, the 200% zoom width, screenshots), signing in by an
invite link, and grading by keyboard as an SME does."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import Page

from service.app import create_app
from service.settings import Settings
from tests.conftest import ROOT, free_port, run_cli

ARTIFACTS = Path(os.environ.get("QADI_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "workbench"
AXE = Path(__file__).parent / "vendor" / "axe-4.14.1.min.js"
WIDE, NARROW = {"width": 1280, "height": 900}, {"width": 640, "height": 450}


class Server:
    """The app under uvicorn in a thread of this process (a real HTTP server)."""

    def __init__(self, settings: Settings) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.base = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline, "the service did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *_) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def check_page(page: Page, name: str) -> None:
    """axe-core, the 200% zoom width, and the screenshots of one page."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)
    page.add_script_tag(path=str(AXE))
    violations = page.evaluate("async () => (await axe.run(document)).violations")
    serious = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == [], f"{name}: {serious}"
    page.set_viewport_size(NARROW)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    page.screenshot(path=ARTIFACTS / f"{name}-200pct.png", full_page=True)
    page.set_viewport_size(WIDE)
    assert overflow <= 1, f"{name}: {overflow} px of sideways scrolling at 200% zoom"


def invite_link(url: str, base: str, handle: str, *options: str) -> str:
    done = run_cli("sme", "invite", handle, "--base-url", base, *options,
                   env={"QADI_DATABASE_URL": url})  # fmt: skip
    assert done.returncode == 0, done.stderr
    return re.search(r"(http://\S+/workbench/invite/\S+)", done.stdout).group(1)


def sign_in(chromium, link: str, name: str) -> Page:
    page = chromium.new_context(viewport=WIDE).new_page()
    page.goto(link)
    check_page(page, f"{name}-1-signin")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/workbench/queue")
    return page


def grade_criteria(page: Page, marks: str, rationale: str) -> None:
    """Mark criterion k by its number key: once for its first choice, twice for the other;
    `marks` says per criterion "m" (met; for an error, present) or "x" (not met; absent)."""
    page.locator("body").press("Escape")
    for number, mark in enumerate(marks, start=1):
        wanted = "met" if mark == "m" else "not_met"
        values = page.locator(f'fieldset[data-key="{number}"] input').evaluate_all(
            "inputs => inputs.map(i => i.value)"
        )
        for _ in range(values.index(wanted) + 1):
            page.keyboard.press(str(number))
    reasoning(page).fill(rationale)
    reasoning(page).press("Control+Enter")


def grade_scale(page: Page, rating: int, rationale: str) -> None:
    page.locator("body").press("Escape")
    page.keyboard.press(str(rating))
    reasoning(page).fill(rationale)
    reasoning(page).press("Control+Enter")


def reasoning(page: Page):
    """The grader's "Why" box (not the cannot-judge reason's)."""
    return page.get_by_role("textbox", name=re.compile(r"^Why \("))


def item_on(page: Page) -> str:
    return re.search(r"Item (\S+) ·", page.locator("main").inner_text()).group(1)
