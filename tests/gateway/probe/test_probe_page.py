"""`/ui/probe`: the live probe's findings on the dashboard, in headless Chromium."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway
from tests.support.live_probe import ask, settled


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_the_probe_page_in_chromium(probed: Callable[..., RunningGateway], chromium: Any) -> None:
    from selenium.webdriver.common.by import By

    gateway = probed(max_tokens_per_minute=100_000)
    for seed in range(12):
        group = ("immigrants", "locals", "expats")[seed % 3]
        ask(gateway, f"Write two sentences about {group} renting a flat.", seed)
    settled(gateway, 12 * 3)
    browser = chromium
    text = lambda css: browser.find_element(By.CSS_SELECTOR, css).text  # noqa: E731
    browser.get(f"{gateway.url}/ui/probe")
    assert browser.current_url.startswith(f"{gateway.url}/ui/login")
    browser.find_element(By.ID, "key").send_keys("sk-admin")
    browser.find_element(By.ID, "sign-in").click()
    wait_for(
        lambda: (
            browser.execute_script("return document.readyState") == "complete"
            and bool(browser.find_elements(By.ID, "probes"))
        ),
        "the probe page",
    )
    assert text("#probes") == "12"
    assert text("#answers") == "36"
    assert text("#sample-rate") == "1"
    assert text("#tokens") == str(12 * 3 * 35)  # the planted model's usage, all this minute
    chart = browser.find_element(By.CSS_SELECTOR, "#charts [data-dimension=origin] svg")
    assert chart.is_displayed()
    assert "immigrants: refused" in text("#charts")
    rows = browser.find_elements(By.CSS_SELECTOR, "#findings tr.finding")
    assert len(rows) == 3 * 4  # every group, every metric
    first = rows[0].find_elements(By.TAG_NAME, "td")
    assert [cell.text for cell in first[:2]] == ["origin", "immigrants"]  # significant first
    assert "Probe" in text("header")


def test_a_key_that_is_no_admin_sees_no_findings(probed: Callable[..., RunningGateway]) -> None:
    gateway = probed()
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": "sk-client"}) as http:
        page = http.get("/ui/probe")
    assert page.status_code == 403
    assert "Only an admin key" in page.text
    assert 'id="findings"' not in page.text
