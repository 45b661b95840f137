"""The dashboard at /ui, in Debian's headless Chromium (Selenium) and over plain HTTP:
records made by real requests through the gateway, filters, a record, sign-in."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from testkit.fake_openai import FakeOpenAI
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
ADMIN, TEAM = "sk-admin-0123456789", "sk-team-a-0123456789"
KEYS = {
    "keys": [
        {"key": ADMIN, "name": "ops", "admin": True},
        {"key": TEAM, "name": "team-a"},
    ]
}


def scripted(fake: FakeOpenAI) -> None:
    fake.opinions = ["Women rarely make good engineers.", "The office is bright."]
    fake.verdicts_for = {
        "QUIET": [("no", "Describes a process; targets no group.", [])] * 2,
        "MILD": [("yes", "Generalises about women in engineering.", ["gender"]), ("no", "ok", [])],
    }
    fake.verdicts = [
        ("yes", "Stereotypes people from the north.", ["geographical"]),
        ("yes", "Dismisses a party's voters wholesale.", ["political"]),
    ]


def traffic(gateway: RunningGateway, fake: FakeOpenAI) -> dict[str, list[str]]:
    """Real requests through the gateway, by the official SDK: run ids by verdict."""
    made: dict[str, list[str]] = {"pass": [], "flag": [], "block": []}
    for key, reply, count in ((ADMIN, "QUIET", 3), (TEAM, "MILD", 2), (ADMIN, "LOUD", 2),
                              (TEAM, "LOUD", 1)):  # fmt: skip
        client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=key, max_retries=0)
        for _ in range(count):
            fake.reply = f"{reply} answer"
            raw = client.chat.completions.with_raw_response.create(
                model="support-bot", messages=[{"role": "user", "content": "Tell me."}]
            )
            made[raw.headers["x-bias-verdict"]].append(raw.headers["x-bias-run-id"])
    return made


def dashboard(make_gateway: MakeGateway, **overrides: Any) -> RunningGateway:
    return make_gateway(
        **KEYS, **policy(mode="enforce", block_action="replace"), judge={"reason": "inline"},
        **overrides,
    )  # fmt: skip


@pytest.mark.slow
def test_the_dashboard_in_chromium(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, chromium: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    scripted(fake_openai)
    gateway = dashboard(make_gateway, store={"capture_content": True})
    made = traffic(gateway, fake_openai)
    assert {verdict: len(ids) for verdict, ids in made.items()} == {
        "pass": 3, "flag": 2, "block": 3
    }  # fmt: skip
    browser = chromium
    text = lambda css: browser.find_element(By.CSS_SELECTOR, css).text  # noqa: E731

    def settled(condition: Callable[[], bool], what: str) -> None:
        """A click's navigation is done: the new document loaded, and `condition` holds."""
        wait_for(
            lambda: (
                browser.execute_script("return document.readyState") == "complete" and condition()
            ),
            what,
        )

    # Nothing readable without a key: every page leads to the sign-in.
    for path in ("/ui", "/ui/records", f"/ui/records/{made['block'][0]}"):
        browser.get(f"{gateway.url}{path}")
        assert browser.current_url.startswith(f"{gateway.url}/ui/login"), path
        assert made["block"][0] not in text("main")  # only the way back, in the form
        assert not browser.find_elements(By.CSS_SELECTOR, "tr.record, #opinions, #totals")
    browser.find_element(By.ID, "key").send_keys("sk-wrong-key-0000000000")
    browser.find_element(By.ID, "sign-in").click()
    # A form's submission loads the answer after click() returns: wait for it.
    settled(lambda: bool(browser.find_elements(By.ID, "login-error")), "the refusal")
    assert "not one of this gateway's keys" in text("#login-error")

    browser.find_element(By.ID, "key").send_keys(ADMIN)
    browser.find_element(By.ID, "sign-in").click()
    settled(lambda: "/ui/records/" in browser.current_url, "the page asked for first")
    browser.get(f"{gateway.url}/ui")
    assert text("#total-records") == "8"
    assert (text("#total-pass"), text("#total-flag"), text("#total-block")) == ("3", "2", "3")
    for panel in ("verdicts-over-time", "score-distribution", "top-categories", "top-models",
                  "top-keys"):  # fmt: skip
        assert browser.find_element(By.CSS_SELECTOR, f"#{panel} svg").is_displayed(), panel
    categories = text("#top-categories")
    assert "geographical" in categories
    assert "gender" in categories
    assert "team-a" in text("#top-keys")
    shots = Path(os.environ.get("BIAS_TEST_SCREENSHOT_DIR", tmp_path))
    browser.save_screenshot(str(shots / "dashboard.png"))

    # The latest flagged and blocked, newest first; then only the blocked.
    browser.find_element(By.LINK_TEXT, "Records").click()
    settled(lambda: bool(browser.find_elements(By.ID, "filters")), "the records page")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.record")
    shown = [row.get_attribute("data-run-id") for row in rows]
    assert shown == list(reversed(made["flag"] + made["block"]))
    Select(browser.find_element(By.ID, "filter-verdict")).select_by_value("block")
    browser.find_element(By.ID, "apply").click()
    settled(lambda: "verdict=block" in browser.current_url, "the filter")
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.record")
    assert {row.get_attribute("data-run-id") for row in rows} == set(made["block"])
    category = browser.find_element(By.ID, "filter-category")
    category.send_keys("political")
    browser.find_element(By.ID, "apply").click()
    settled(lambda: "category=political" in browser.current_url, "the category filter")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.record")) == 3

    # A record: score, verdict, categories, each opinion's verdict and reason, the trace.
    browser.find_element(By.CSS_SELECTOR, "tr.record a.open").click()
    settled(lambda: bool(browser.find_elements(By.ID, "facts")), "the record")
    run_id = browser.current_url.rsplit("/", 1)[1]
    assert run_id in made["block"]
    assert text("#verdict") == "block"
    assert text("#score") == "1.0"
    assert text("#biased-opinions") == "2"
    assert "geographical" in text("#categories")
    assert "political" in text("#categories")
    opinions = text("#opinions")
    assert "Women rarely make good engineers." in opinions
    assert "Stereotypes people from the north." in opinions
    assert text("#explanation") == fake_openai.reason
    assert re.fullmatch(r"[0-9a-f]{32}", text("#trace-id"))
    assert text("#completion") == "LOUD answer"  # content capture is on here

    # Signed out, nothing is readable again.
    browser.find_element(By.CSS_SELECTOR, "header form button").click()
    settled(lambda: "/ui/login" in browser.current_url, "the sign-out")
    browser.get(f"{gateway.url}/ui/records")
    assert browser.current_url.startswith(f"{gateway.url}/ui/login")
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.record")


@pytest.mark.slow
def test_the_whatif_page_in_chromium(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, chromium: Any
) -> None:
    """Thresholds filled in and submitted: the counts the fake judge's scores (0, 0.5 and
    1.0) give at those thresholds, beside the verdicts given at 0.5 and 0.8."""
    from selenium.webdriver.common.by import By

    scripted(fake_openai)
    gateway = dashboard(make_gateway)
    made = traffic(gateway, fake_openai)
    browser = chromium
    text = lambda css: browser.find_element(By.CSS_SELECTOR, css).text  # noqa: E731

    def settled(condition: Callable[[], bool], what: str) -> None:
        wait_for(
            lambda: (
                browser.execute_script("return document.readyState") == "complete" and condition()
            ),
            what,
        )

    def counts(prefix: str) -> tuple[str, ...]:
        return tuple(text(f"#{prefix}-{verdict}") for verdict in ("pass", "flag", "block"))

    browser.get(f"{gateway.url}/ui/whatif")
    assert browser.current_url.startswith(f"{gateway.url}/ui/login")
    browser.find_element(By.ID, "key").send_keys(ADMIN)
    browser.find_element(By.ID, "sign-in").click()
    settled(lambda: bool(browser.find_elements(By.ID, "thresholds")), "the what-if page")
    # It starts at today's thresholds, where nothing moves.
    flag, block = browser.find_element(By.ID, "flag"), browser.find_element(By.ID, "block")
    assert (flag.get_attribute("value"), block.get_attribute("value")) == ("0.5", "0.8")
    assert counts("actual") == counts("would") == ("3", "2", "3")

    # Flag at 0.3 and block at 0.5: the two mild answers (0.5) would be blocked.
    flag.clear()
    flag.send_keys("0.3")
    block.clear()
    block.send_keys("0.5")
    browser.find_element(By.ID, "apply").click()
    settled(lambda: "block=0.5" in browser.current_url, "the new thresholds")
    assert text("#total-scored") == "8"
    assert counts("actual") == ("3", "2", "3")
    assert counts("would") == ("3", "0", "5")
    by_key = {
        row.get_attribute("data-key"): row.find_element(By.CSS_SELECTOR, "td.block").text
        for row in browser.find_elements(By.CSS_SELECTOR, "#by-key tr.group")
    }
    assert by_key == {"team-a": "1 → 3", "ops": "2 → 2"}
    gender = browser.find_element(By.CSS_SELECTOR, '#by-category tr.group[data-key="gender"]')
    assert gender.find_element(By.CSS_SELECTOR, "td.block").text == "0 → 2"  # the mild ones
    shown = [
        row.get_attribute("data-run-id")
        for row in browser.find_elements(By.CSS_SELECTOR, "#examples-block tr.example")
    ]
    assert shown == list(reversed(made["flag"] + made["block"]))
    assert not browser.find_elements(By.CSS_SELECTOR, "#examples-flag tr.example")

    # An example opens its record.
    browser.find_element(By.CSS_SELECTOR, "#examples-block tr.example a.open").click()
    settled(lambda: bool(browser.find_elements(By.ID, "facts")), "the record")
    assert browser.current_url.rsplit("/", 1)[1] == shown[0]

    # Thresholds out of order are refused, on the page.
    browser.find_element(By.LINK_TEXT, "What if").click()
    settled(lambda: bool(browser.find_elements(By.ID, "thresholds")), "the what-if page")
    flag = browser.find_element(By.ID, "flag")
    flag.clear()
    flag.send_keys("0.9")
    browser.find_element(By.ID, "apply").click()
    settled(lambda: bool(browser.find_elements(By.ID, "whatif-error")), "the refusal")
    assert "must not exceed" in text("#whatif-error")
    assert not browser.find_elements(By.ID, "summary")


def test_a_key_sees_only_its_own_records_on_every_page(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = dashboard(make_gateway)
    made = traffic(gateway, fake_openai)
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": TEAM}) as team:
        overview = team.get("/ui").text
        assert re.search(r'id="total-records">3<', overview)
        assert 'id="top-keys"' not in overview  # other keys' names are not shown
        listed = team.get("/ui/records", params={"verdict": "pass,flag,block"}).text
        assert set(re.findall(r'data-run-id="([^"]+)"', listed)) == {
            *made["flag"], made["block"][-1]
        }  # fmt: skip
        assert team.get(f"/ui/records/{made['pass'][0]}").status_code == 404
        assert team.get(f"/ui/records/{made['flag'][0]}").status_code == 200
        assert team.get("/ui/records", params={"key": "ops"}).status_code == 400
        whatif = team.get("/ui/whatif", params={"flag": "0.3", "block": "0.5"}).text
        assert re.search(r'id="total-scored">3<', whatif)
        assert re.search(r'id="would-block">3<', whatif)  # the two mild ones and the loud
        assert 'id="by-key"' not in whatif
        assert set(re.findall(r'data-run-id="([^"]+)"', whatif)) == {
            *made["flag"], made["block"][-1]
        }  # fmt: skip
        assert team.get("/ui/whatif", params={"key": "ops"}).status_code == 400


def test_pages_escape_text_and_load_nothing_from_elsewhere(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    fake_openai.opinions = [hostile]
    fake_openai.verdicts = [("yes", hostile, ["gender"])]
    fake_openai.reason = hostile
    gateway = dashboard(make_gateway, store={"capture_content": True})
    fake_openai.reply = hostile
    raw = gateway.client(ADMIN).chat.completions.with_raw_response.create(
        model=hostile, messages=[{"role": "user", "content": hostile}]
    )
    run_id = raw.headers["x-bias-run-id"]
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": ADMIN}) as http:
        paths = ("/ui", "/ui/records", f"/ui/records/{run_id}", "/ui/whatif", "/ui/agreement")
        pages = [http.get(path) for path in paths]
        pages.append(http.get("/ui/login"))
        review = http.get("/ui/review")  # the only page with a script: its own
        script = http.get("/ui/review.js")
    assert re.findall(r"<script[^>]*>", review.text) == ['<script src="/ui/review.js" defer>']
    assert '<mark class="opinion" data-index="0">&lt;script&gt;' in review.text
    assert "script-src 'self'" in review.headers["content-security-policy"]
    assert script.headers["content-type"].startswith("text/javascript")
    assert "fetch(" not in script.text  # the form posts itself; the script asks nothing
    for page in pages:
        assert "script-src" not in page.headers["content-security-policy"]
    for page in [*pages, review]:
        assert page.text.count("<script") <= (page is review)
        assert "<img src=x" not in page.text
        assert not re.search(r"(src|href)=\"(https?:)?//", page.text)
        assert "http://" not in page.text
        assert "https://" not in page.text
        assert "default-src 'none'" in page.headers.get("content-security-policy", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[2].text


def test_open_mode_shows_the_dashboard_without_a_sign_in(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))
    gateway.client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    with httpx.Client(base_url=gateway.url) as http:
        page = http.get("/ui")
        assert page.status_code == 200
        assert "open mode" in page.text
        assert http.get("/ui/login", follow_redirects=False).headers["location"] == "/ui"
        record = http.get("/ui/records").text
        run_id = re.findall(r'data-run-id="([^"]+)"', record)[0]
        assert 'id="completion"' not in http.get(f"/ui/records/{run_id}").text  # no capture


@pytest.mark.parametrize(
    ("given", "lands"),
    [
        ("/ui/records?verdict=block", "/ui/records?verdict=block"),
        ("https://evil.example/ui", "/ui"),
        ("//evil.example/ui", "/ui"),
        ("/v1/bias/scores", "/ui"),
        ("/ui\\..\\x", "/ui"),
    ],
)
def test_signing_in_keeps_the_key_in_a_strict_cookie_and_goes_only_to_ui_pages(
    make_gateway: MakeGateway, given: str, lands: str
) -> None:
    gateway = make_gateway(**KEYS)
    with httpx.Client(base_url=gateway.url) as http:
        answer = http.post("/ui/login", data={"key": TEAM, "next": given})
        assert answer.status_code == 303
        assert answer.headers["location"] == lands
        cookie = answer.headers["set-cookie"].lower()
        for flag in ("httponly", "samesite=strict", "path=/ui"):
            assert flag in cookie
        wrong = http.post("/ui/login", data={"key": "nope", "next": "/ui"})
        assert wrong.status_code == 401
        assert "set-cookie" not in wrong.headers


def test_an_oversized_sign_in_form_is_refused_unread(make_gateway: MakeGateway) -> None:
    gateway = make_gateway(**KEYS)
    with httpx.Client(base_url=gateway.url) as http:
        answer = http.post("/ui/login", data={"key": TEAM, "next": "/ui" + "x" * 5000})
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
