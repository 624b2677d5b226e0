"""Browser tests: a real studio (runstudio: daphne, RQ workers) on a throwaway database, driven by Debian's Chromium."""

from pathlib import Path

import pytest
from django.conf import settings

from studio.testing import LiveStudio, launch_chromium, log_in

ARTIFACTS = Path(settings.BASE_DIR) / "artifacts" / "e2e"
# Reported by the page itself, so that nothing Chromium blocks goes unseen (it also logs its own line). Tests wait
# with Playwright's expect(), never wait_for_function, whose polling evaluates a string the policy forbids.
REPORT_VIOLATIONS = """document.addEventListener("securitypolicyviolation", (e) =>
  console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI + " at " + e.sourceFile));"""


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


@pytest.fixture(scope="module")
def violations(browser):
    """Every Content-Security-Policy complaint the browser logs on this module's page."""
    browser.add_init_script(REPORT_VIOLATIONS)
    return []


@pytest.fixture(scope="module")
def watched_page(page, studio, violations):
    """The module's page, signed in, its CSP complaints collected in `violations`."""
    page.on(
        "console",
        lambda message: (
            violations.append(message.text)
            if "Content Security Policy" in message.text or "CSP violation" in message.text
            else None
        ),
    )
    log_in(page, studio)
    return page
