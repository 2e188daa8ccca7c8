"""Fixtures of the browser tests: Debian's chromium driven by Playwright (`executable_path`:
no browser is downloaded; `.ci/run` installs chromium with apt-get when it is missing)."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import sync_playwright


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium")
    assert path, "Debian's chromium is needed: apt-get install -y chromium (.ci/run does)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path,
            args=["--no-sandbox", "--disable-background-networking", "--disable-component-update"],
        )
        yield browser
        browser.close()
