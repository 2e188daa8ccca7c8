"""Issue 16 item 5: every report page in a real browser. Debian's `chromium`, driven headless
by Playwright for Python (`executable_path`: no browser is downloaded), opens the
calibration, nightly and bench HTML at 1400 × 900, checks there is no horizontal overflow
and that the trust map (the bench headline table) is on the first screen, and saves a
screenshot of each first screen and full page under `test-artifacts/browser/`
(`QADI_TEST_ARTIFACTS` moves it). `.ci/run` installs chromium with apt-get when it is missing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from benchmarks.report import to_html as bench_html
from calibration.calibrate import CalibrationOptions, calibrate
from calibration.drift import drift
from calibration.history import history_point
from service.reporting.calibration import build_report, render_report
from tests.conftest import ROOT
from tests.perf.bench_calibration import synthetic_rows

WIDTH, HEIGHT = 1400, 900
ARTIFACTS = Path(os.environ.get("QADI_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "browser"
OPTIONS = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=100, by=["dialect", "category"])


@pytest.fixture(scope="module")
def page():
    browser_path = shutil.which("chromium")
    assert browser_path, "Debian's chromium is needed: apt-get install -y chromium (.ci/run does)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        yield browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        browser.close()


def open_page(page, name: str, html: str) -> dict[str, int]:
    """Load the page from a file, save its screenshots, and measure it."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    page.screenshot(path=ARTIFACTS / f"{name}-first-screen.png")
    page.screenshot(path=ARTIFACTS / f"{name}-full.png", full_page=True)
    return page.evaluate(
        """() => ({
            scroll: document.documentElement.scrollWidth,
            inner: window.innerWidth,
            height: window.innerHeight,
        })"""
    )


def bottom_of(page, selector: str) -> float:
    return page.evaluate(f"document.querySelector({selector!r}).getBoundingClientRect().bottom")


def nightly_html() -> str:
    """A third nightly report: two stored before it, the judges drifting on the last."""
    history = []
    previous = None
    for night, seed in enumerate((7, 8, 9)):
        rows = synthetic_rows(240, seed=seed)
        if night == 2:  # judge0 turns lenient: +1 wherever there is room
            rows = [
                r.model_copy(update={"score": min(5.0, r.score + 1)}) if r.rater == "judge0" else r
                for r in rows
            ]
        report = calibrate(rows, OPTIONS, {"source": "database"})
        report["drift"] = {"previous_report": f"r{night}", **drift(report, previous)}
        history.append(history_point(report, f"2026-11-0{night + 1}T02:00:00", f"r{night + 1}"))
        report["history"] = list(history)
        previous = report
    assert report["drift"]["changes"], "the scenario must draw the drift banner"
    return render_report(report, rows, OPTIONS)[2]


def assert_fits(measured: dict[str, int], name: str) -> None:
    assert measured["scroll"] <= measured["inner"], f"{name} overflows horizontally: {measured}"


def test_calibration_report_fits_and_opens_on_the_trust_map(page):
    html = build_report(synthetic_rows(400), OPTIONS, {"source": "synthetic.csv"})[2]
    measured = open_page(page, "calibration", html)
    assert_fits(measured, "calibration")
    assert bottom_of(page, "table.trust") <= measured["height"]


def test_nightly_report_fits_with_drift_banner_and_trend(page):
    measured = open_page(page, "nightly", nightly_html())
    assert_fits(measured, "nightly")
    assert bottom_of(page, "#drift") <= bottom_of(page, "table.trust") <= measured["height"]
    assert page.locator("#trend img").count() == 1


def bench_summary() -> dict:
    """A MIDI-like multiple-choice task with many breakdown cells and long notes, and a
    skipped one: the widest a bench page gets."""
    tiers = {
        f"{tier}×{context}": {"n": 40, "accuracy": 0.55, "stderr": 0.08, "published": 0.6}
        for tier in ("High", "Medium", "Low")
        for context in ("sentence", "paragraph", "dialogue", "none")
    }
    return {
        "midi-mcq": {
            "n": 480, "accuracy": 0.5729166666666666, "stderr": 0.0226, "items": 480,
            "parse_failures": 3, "errors": 0, "missing_records": 0, "published": 0.575,
            "records": 500, "selected": 480, "prompt_fallback": ["ar", "fa", "ur"],
            "tier_macro": {"High": 0.61, "Medium": 0.55, "Low": 0.51},
            "breakdowns": {"tier×context": tiers},
        },
        "midas-mcq": {"skipped": "MIDAS is released outside the hub: give --data-dir " * 3},
    }  # fmt: skip


def test_bench_report_fits_and_opens_on_the_headline_table(page):
    run = {
        "run": "0b6f0e4c", "suite": "midi", "model": "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "mode": "generate", "seed": 0, "created": "2026-11-23 13:00", "summary": bench_summary(),
    }  # fmt: skip
    measured = open_page(page, "bench", bench_html([run]))
    assert_fits(measured, "bench")
    assert bottom_of(page, "table.headline") <= measured["height"]
    assert "57.29 ± 2.26" in page.inner_text("table.headline")
