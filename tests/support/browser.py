"""Debian's headless Chromium, driven by Selenium through Debian's chromedriver.

`scripts/test` finds (or installs) both and exports `BIAS_TEST_BROWSER` as
"CHROMIUM CHROMEDRIVER"; without them the browser tests (marked `browser`) skip, or
fail where the run requires the browser (`pytest --require browser`). Selenium is given
the driver's path, so its own driver download (Selenium Manager) never runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.support.resources import missing

__all__ = ["browser_paths", "chromium"]


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver), from `BIAS_TEST_BROWSER` or PATH."""
    given = os.environ.get("BIAS_TEST_BROWSER", "").split()
    if len(given) == 2:
        return given[0], given[1]
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    return missing(
        "browser",
        os.environ.get("BIAS_TEST_BROWSER_SKIP")
        or "chromium and chromedriver not found (scripts/test installs them when it can)",
    )


@pytest.fixture
def chromium() -> Iterator[object]:
    """A headless Chromium window of 1280x900, closed after the test."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    profile = tempfile.mkdtemp(prefix="bias-chromium-")
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in CI containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
    ):
        options.add_argument(argument)
    session = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        yield session
    finally:
        session.quit()
        shutil.rmtree(profile, ignore_errors=True)
