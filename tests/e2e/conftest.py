"""Browser tests: a real studio (runstudio: daphne, RQ workers) on a throwaway database, driven by Debian's Chromium."""

from pathlib import Path

import pytest
from django.conf import settings

from studio.testing import LiveStudio, launch_chromium

ARTIFACTS = Path(settings.BASE_DIR) / "artifacts" / "e2e"


@pytest.fixture(scope="module")
def studio():
    with LiveStudio() as live:
        yield live


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = launch_chromium(
            playwright,
            tmp_path_factory.mktemp("chromium-profile"),
            accept_downloads=True,
            viewport={"width": 1280, "height": 900},
        )
        context.set_default_timeout(30_000)
        yield context
        context.close()


@pytest.fixture(scope="module")
def page(browser):
    return browser.pages[0] if browser.pages else browser.new_page()


@pytest.fixture(scope="module")
def shot():
    """shot(page, name): a full-page screenshot kept under artifacts/e2e/NAME.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return lambda page, name: page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
