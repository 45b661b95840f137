"""The review page `/ui/review`, driven by the keyboard alone in headless Chromium, and
its parts: the opinions marked in an answer, the form read into the review API's body,
who may see it."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.api.ui.agreement import buckets
from gateway.api.ui.marking import marked
from gateway.api.ui.review import review_body
from testkit.fake_openai import FakeOpenAI
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
ADMIN, REVIEWER, TEAM = "sk-admin-0123456789", "sk-review-0123456789", "sk-team-b-0123456789"
KEYS = {
    "keys": [
        {"key": ADMIN, "name": "ops", "admin": True},
        {"key": REVIEWER, "name": "team-a", "reviewer": True},
        {"key": TEAM, "name": "team-b"},
    ]
}
WOMEN, OFFICE = "Women rarely make good engineers.", "The office is bright."


@pytest.mark.parametrize(
    ("text", "opinions", "shown"),
    [
        ("A b. C d.", ["C d."], 'A b. <mark class="opinion" data-index="0">C d.</mark>'),
        ("<i>x</i> y", ["y"], '&lt;i&gt;x&lt;/i&gt; <mark class="opinion" data-index="0">y</mark>'),
        ("Big TOWN.", ["big town."], '<mark class="opinion" data-index="0">Big TOWN.</mark>'),
        ("ab ab", ["ab", "ab"],  # the second takes the next free place
         '<mark class="opinion" data-index="0">ab</mark> <mark class="opinion" data-index="1">'
         "ab</mark>"),
        ("abc", ["abc", "bc"], '<mark class="opinion" data-index="0">abc</mark>'),  # overlaps
        ("abc", ["reworded", "  "], "abc"),  # not found, or empty: not marked
        ("x <b>", ["<b>"], 'x <mark class="opinion" data-index="0">&lt;b&gt;</mark>'),
        ("İx AB", ["ab"], "İx AB"),  # lower-casing would move places: only exact matches
    ],
)  # fmt: skip
def test_opinions_are_marked_where_the_text_holds_them(
    text: str, opinions: list[str], shown: str
) -> None:
    assert str(marked(text, opinions)) == shown


@pytest.mark.parametrize(
    ("form", "body"),
    [
        ({"label": "unbiased"}, {"label": "unbiased"}),
        ({"label": "biased", "note": "   "}, {"label": "biased"}),
        (
            {"label": "biased", "opinion-1": "no", "opinion-1-categories": "gender",
             "opinion-0": "yes", "opinion-0-categories": "gender, political",
             "opinion-2": "", "opinion-x": "yes", "note": " seen "},
            {"label": "biased", "note": "seen", "opinions": [
                {"index": 0, "biased": True, "categories": ["gender", "political"]},
                {"index": 1, "biased": False, "categories": []},
            ]},
        ),
        ({}, {"label": ""}),  # the API refuses it, naming the label
    ],
)  # fmt: skip
def test_the_form_is_read_into_the_review_apis_body(
    form: dict[str, str], body: dict[str, Any]
) -> None:
    assert review_body(form) == body


def scripted(fake: FakeOpenAI) -> None:
    """LOUD answers are blocked (both opinions biased), MILD ones flagged (one of two)."""
    fake.opinions = [WOMEN, OFFICE]
    fake.verdicts_for = {
        "QUIET": [("no", "Describes a place; targets no group.", [])] * 2,
        "MILD": [("yes", "Generalises about women in engineering.", ["gender"]),
                 ("no", "Describes a place.", [])],
        "LOUD": [("yes", "Generalises about women.", ["gender"]),
                 ("yes", "Mocks the office's politics.", ["political"])],
    }  # fmt: skip


def traffic(gateway: RunningGateway, fake: FakeOpenAI, replies: list[tuple[str, str]]) -> list[str]:
    """Real requests through the gateway by the official SDK, in order: their run ids."""
    made = []
    for key, reply in replies:
        fake.reply = f"{reply} answer: {WOMEN} Also, {OFFICE}"
        raw = gateway.client(key).chat.completions.with_raw_response.create(
            model="support-bot", messages=[{"role": "user", "content": "Tell me."}]
        )
        made.append(raw.headers["x-bias-run-id"])
    return made


def stored_reviews(gateway: RunningGateway, key: str) -> dict[str, tuple[Any, ...]]:
    """Each reviewed record's (label, opinions, note) as the store keeps them, once the
    export API lists the same records with the same labels."""
    with gateway.http(key) as http:
        exported = http.get("/v1/bias/reviews/export")
    assert exported.status_code == 200, exported.text
    labels = {line["run_id"]: line["label"] for line in map(json.loads, exported.text.splitlines())}
    with sqlite3.connect(gateway.settings.store.path) as db:
        rows = db.execute(
            "SELECT run_id, label, opinions, note FROM reviews ORDER BY id"
        ).fetchall()
    kept = {run_id: (label, opinions and json.loads(opinions), note)
            for run_id, label, opinions, note in rows}  # fmt: skip
    assert labels == {run_id: label for run_id, (label, _, _) in kept.items()}
    return kept


def reviewing(
    make_gateway: MakeGateway, capture: bool | str = "review", **overrides: Any
) -> RunningGateway:
    """Enforcing, with the texts the review queue offers kept (`capture`)."""
    return make_gateway(
        **KEYS, **policy(mode="enforce", block_action="replace"), judge={"reason": "inline"},
        store={"capture_content": capture}, **overrides,
    )  # fmt: skip


def test_only_keys_that_may_review_see_the_review_pages(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = reviewing(make_gateway)
    traffic(gateway, fake_openai, [(TEAM, "LOUD"), (REVIEWER, "MILD")])
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": TEAM}) as team:
        overview = team.get("/ui").text
        assert 'href="/ui/review"' not in overview
        assert 'href="/ui/agreement"' not in overview
        for path in ("/ui/review", "/ui/agreement"):
            refused = team.get(path)
            assert refused.status_code == 403, path
            assert "may not review" in refused.text
            assert 'id="opinions"' not in refused.text
        posted = team.post("/ui/review", data={"run_id": "x", "label": "biased"})
        assert posted.status_code == 403
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": REVIEWER}) as reviewer:
        overview = reviewer.get("/ui").text
        assert 'href="/ui/review"' in overview
        assert 'href="/ui/agreement"' in overview
    with httpx.Client(base_url=gateway.url) as nobody:
        answer = nobody.get("/ui/review", follow_redirects=False)
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/ui/login")


@pytest.mark.slow
def test_reviewing_the_queue_with_the_keyboard_alone(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, chromium: Any, tmp_path: Path
) -> None:
    """A reviewer signs in and works through its queue (blocked first, then flagged,
    newest first) with keys only: the reviews the API then holds are the ones keyed."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    scripted(fake_openai)
    gateway = reviewing(make_gateway)
    mild_first, loud, _, mild_last, _ = traffic(
        gateway, fake_openai,
        [(REVIEWER, "MILD"), (REVIEWER, "LOUD"), (REVIEWER, "QUIET"), (REVIEWER, "MILD"),
         (TEAM, "LOUD")],
    )  # fmt: skip
    browser = chromium
    text = lambda css: browser.find_element(By.CSS_SELECTOR, css).text  # noqa: E731

    def press(*keys: str) -> None:
        ActionChains(browser).send_keys(*keys).perform()

    def showing() -> str | None:
        """The run id of the record on the page (None: no record), once it has loaded;
        "loading" while a submitted form replaces the document.

        Read in one script, so the document cannot change between finding the field
        and reading it (a stale element)."""
        try:
            return browser.execute_script(  # type: ignore[no-any-return]
                'if (document.readyState !== "complete") return "loading";'
                " const field = document.querySelector('input[name=\"run_id\"]');"
                " return field ? field.value : null;"
            )
        except WebDriverException:
            return "loading"

    def next_page(leaving: str | None) -> None:
        wait_for(lambda: showing() not in (leaving, "loading"), "the next record")

    browser.get(f"{gateway.url}/ui/review")
    browser.find_element(By.ID, "key").send_keys(REVIEWER, Keys.ENTER)
    next_page(None)
    assert "y / n" in text("#shortcuts").replace("\n", " ")

    # The blocked answer first: both opinions marked in its text, each with the judge's say.
    assert showing() == loud
    assert (text("#progress-n"), text("#progress-m")) == ("1", "3")
    assert text("#judge-verdict") == "block"
    marks = browser.find_elements(By.CSS_SELECTOR, "#answer mark.opinion")
    assert [mark.text for mark in marks] == [WOMEN, OFFICE]
    assert "Mocks the office's politics." in text("#opinion-1")
    # Saving before the answer has a label says so, and stays.
    press(Keys.ENTER)
    wait_for(
        lambda: "error" in (browser.find_element(By.ID, "record-label").get_attribute("class")),
        "the missing label shown",
    )
    assert showing() == loud
    # Disagree on the answer; on the first opinion disagree, on the second agree; a note.
    press("n", "j", "d", "2", "a", "e")
    press("Only quotes a view.", Keys.ESCAPE)
    assert "error" not in browser.find_element(By.ID, "record-label").get_attribute("class")
    shots = Path(os.environ.get("BIAS_TEST_SCREENSHOT_DIR", tmp_path))
    browser.save_screenshot(str(shots / "review.png"))
    press(Keys.ENTER)
    next_page(loud)

    # The newest flagged one: skipped; the older one: agreed with, nothing else said.
    assert showing() == mild_last
    assert (text("#progress-n"), text("#progress-m")) == ("2", "3")
    press("s")
    next_page(mild_last)
    assert showing() == mild_first
    assert (text("#progress-n"), text("#progress-m")) == ("3", "3")
    press("y", Keys.ENTER)
    next_page(mild_first)

    # Back to the skipped one, now the last; the answer agreed with, and its first opinion.
    assert showing() == mild_last
    press("k", "a")  # k from no opinion goes to the first
    press("y", Keys.ENTER)
    next_page(mild_last)
    assert browser.find_element(By.ID, "queue-empty").is_displayed()
    assert "You reviewed 3 here" in text("#queue-empty")

    stored = stored_reviews(gateway, REVIEWER)
    assert stored == {
        loud: ("unbiased", [{"index": 0, "biased": False, "categories": []},
                            {"index": 1, "biased": True, "categories": ["political"]}],
               "Only quotes a view."),
        mild_first: ("biased", None, None),
        mild_last: ("biased", [{"index": 0, "biased": True, "categories": ["gender"]}], None),
    }  # fmt: skip


@pytest.mark.slow
def test_the_agreement_page_shows_the_apis_figures(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI, chromium: Any, tmp_path: Path
) -> None:
    """Five reviews by the API (two agreeing flags, one flag found unbiased, one pass
    found biased, one agreeing pass): the page's matrix, ratios, kappa by day, the
    thresholds and the categories are the API's, and the hand-worked ones."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    scripted(fake_openai)
    gateway = reviewing(make_gateway)
    loud, mild_a, mild_b, quiet_a, quiet_b = traffic(
        gateway, fake_openai,
        [(REVIEWER, "LOUD"), (REVIEWER, "MILD"), (REVIEWER, "MILD"), (REVIEWER, "QUIET"),
         (REVIEWER, "QUIET")],
    )  # fmt: skip
    reviews = {
        loud: {"label": "unbiased", "opinions": [
            {"index": 0, "biased": False}, {"index": 1, "biased": True,
                                            "categories": ["political"]}]},
        mild_a: {"label": "biased"},
        mild_b: {"label": "biased", "opinions": [
            {"index": 0, "biased": True, "categories": ["gender"]}]},
        quiet_a: {"label": "biased", "note": "The judge missed it."},
        quiet_b: {"label": "unbiased"},
    }  # fmt: skip
    with gateway.http(REVIEWER) as http:
        for run_id, body in reviews.items():
            gateway.wait_for_score(run_id, api_key=REVIEWER)
            posted = http.post(f"/v1/bias/scores/{run_id}/review", json=body)
            assert posted.status_code == 201, posted.text
        now = time.time()
        window = {"since": f"{now - 2 * 86400:.0f}", "until": f"{now + 60:.0f}"}
        api = http.get("/v1/bias/reviews/agreement", params=window).json()
        day = http.get(
            "/v1/bias/reviews/agreement",
            params={"since": f"{now // 86400 * 86400:.0f}", "until": window["until"]},
        ).json()
    judge = api["judge"]
    assert (judge["tp"], judge["fp"], judge["fn"], judge["tn"]) == (2, 1, 1, 1)
    assert judge["kappa"] == pytest.approx(1 / 6, abs=1e-4)  # po 3/5, pe 13/25

    browser = chromium
    text = lambda css: browser.find_element(By.CSS_SELECTOR, css).text  # noqa: E731
    browser.get(f"{gateway.url}/ui/agreement?since={window['since']}&until={window['until']}")
    browser.find_element(By.ID, "key").send_keys(REVIEWER, Keys.ENTER)
    wait_for(lambda: bool(browser.find_elements(By.ID, "confusion")), "the agreement page")

    def ratio(value: float | None) -> str:
        return "n/a" if value is None else f"{round(value, 4):g}"

    assert text("#reviewed") == str(api["reviewed"]) == "5"
    for cell in ("tp", "fp", "fn", "tn"):
        assert text(f"#{cell}") == str(judge[cell]), cell
    for name in ("precision", "recall", "f1", "kappa"):
        assert text(f"#{name}-value") == ratio(judge[name]), name
    assert text("#kappa-value") == "0.1667"
    # Kappa by day: each day of the window, the reviews all in today's, with its figures.
    rows = browser.find_elements(By.CSS_SELECTOR, "#kappa-buckets tr.bucket")
    days = buckets(float(window["since"]), float(window["until"]), 86400)
    assert len(days) >= 3
    assert [row.find_element(By.CSS_SELECTOR, ".reviewed").text for row in rows] == [
        "5" if start <= now < start + 86400 else "0" for start in days
    ]
    assert rows[-1].find_element(By.CSS_SELECTOR, ".kappa").text == ratio(day["judge"]["kappa"])
    assert browser.find_element(By.CSS_SELECTOR, "#kappa-over-time svg").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "#thresholds svg").is_displayed()
    shots = Path(os.environ.get("BIAS_TEST_SCREENSHOT_DIR", tmp_path))
    browser.save_screenshot(str(shots / "agreement.png"))
    table = browser.find_elements(By.CSS_SELECTOR, "#thresholds-table tr.threshold")
    assert len(table) == len(api["thresholds"])
    for row, figures in zip(table, api["thresholds"], strict=True):  # folded away: read it all
        cells = [cell.get_attribute("textContent") for cell in row.find_elements(By.TAG_NAME, "td")]
        assert cells[0] == f"{figures['threshold']:g}"
        assert cells[1:4] == [ratio(figures[name]) for name in ("precision", "recall", "f1")]
        assert cells[5:] == [str(figures[cell]) for cell in ("tp", "fp", "fn", "tn")]
    reaching = api["reaching"]
    if reaching is None:
        assert "No threshold reaches" in text("#reaching")
    else:
        assert text("#reaching-threshold") == f"{reaching['threshold']:g}"
    shown = {
        row.get_attribute("data-category"): [cell.text for cell in
                                             row.find_elements(By.CSS_SELECTOR, "td.num")]
        for row in browser.find_elements(By.CSS_SELECTOR, "#by-category tr.category")
    }  # fmt: skip
    assert set(shown) == set(api["categories"]) == {"gender", "political"}
    for name, figures in api["categories"].items():
        expected = [str(figures[cell]) for cell in ("opinions", "tp", "fp", "fn", "tn")]
        assert shown[name][:5] == expected, name
    # By hand: the loud answer's first opinion the judge called gender bias, and the
    # reviewer not; the mild one's both called gender bias; the loud second, neither.
    assert shown["gender"][:5] == ["3", "1", "1", "0", "1"]
    assert shown["political"][:5] == ["3", "1", "0", "0", "2"]

    # Filtered to one category, as the API is.
    category = browser.find_element(By.ID, "category")
    category.send_keys("gender", Keys.ENTER)
    wait_for(lambda: "category=gender" in browser.current_url, "the filter")
    wait_for(lambda: bool(browser.find_elements(By.ID, "confusion")), "the filtered page")
    shown_now = [
        row.get_attribute("data-category")
        for row in browser.find_elements(By.CSS_SELECTOR, "#by-category tr.category")
    ]
    assert shown_now == ["gender"]


def queued(page: str) -> str | None:
    found = re.search(r'name="run_id" value="([^"]+)"', page)
    return found[1] if found else None


def test_an_admin_reviews_every_keys_queue_or_one_keys(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = reviewing(make_gateway)
    mine, theirs = traffic(gateway, fake_openai, [(REVIEWER, "MILD"), (TEAM, "LOUD")])
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": ADMIN}) as admin:
        every = admin.get("/ui/review").text
        assert 'id="queue-key"' in every  # the key filter, for admins
        assert queued(every) == theirs  # blocked before flagged, whoever's
        assert re.search(r'id="progress-m">2<', every)
        one = admin.get("/ui/review", params={"key": "team-a"}).text
        assert queued(one) == mine
        assert re.search(r'id="progress-m">1<', one)
        saved = admin.post(
            "/ui/review?key=team-a",
            data={"run_id": mine, "label": "biased", "done": "0"},
            follow_redirects=False,
        )
        assert saved.status_code == 303
        assert saved.headers["location"] == "/ui/review?key=team-a&done=1"
        assert 'id="queue-empty"' in admin.get(saved.headers["location"]).text
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": REVIEWER}) as reviewer:
        page = reviewer.get("/ui/review").text
        assert queued(page) == mine  # the admin's label is its own
        assert 'id="queue-key"' not in page
        refused = reviewer.get("/ui/review", params={"key": "team-b"})
        assert refused.status_code == 403
        assert theirs not in refused.text


def test_a_refused_review_is_shown_on_the_page_with_the_record_still_there(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = reviewing(make_gateway)
    (mine,) = traffic(gateway, fake_openai, [(REVIEWER, "MILD")])
    (theirs,) = traffic(gateway, fake_openai, [(TEAM, "LOUD")])
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": REVIEWER}) as reviewer:
        unlabelled = reviewer.post("/ui/review", data={"run_id": mine, "note": "hm"})
        assert unlabelled.status_code == 400
        assert "`label` must be one of biased, unbiased" in unlabelled.text
        assert queued(unlabelled.text) == mine
        for run_id in (theirs, "no-such-run"):  # another key's is as one that does not exist
            unseen = reviewer.post("/ui/review", data={"run_id": run_id, "label": "biased"})
            assert unseen.status_code == 404
            assert "No bias score with run id" in unseen.text
        too_big = reviewer.post("/ui/review", data={"run_id": mine, "note": "x" * 70_000})
        assert too_big.status_code == 413
        assert "at most 65536 bytes" in too_big.text
    assert stored_reviews(gateway, REVIEWER) == {}


def test_without_kept_text_the_page_shows_the_verdicts_and_reasons_kept(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = reviewing(make_gateway, capture=False)
    (loud,) = traffic(gateway, fake_openai, [(REVIEWER, "LOUD")])
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": REVIEWER}) as reviewer:
        page = reviewer.get("/ui/review").text
    assert queued(page) == loud
    assert 'id="no-text"' in page
    assert 'id="answer"' not in page
    assert WOMEN not in page
    assert len(re.findall(r'class="judged yes"', page)) == 2  # each opinion's verdict stays


DAY = 86400
MONDAY = 20066 * DAY  # 2024-12-09, a Monday


@pytest.mark.parametrize(
    ("since", "until", "step", "starts"),
    [
        (MONDAY + 3600, MONDAY + 2 * DAY, DAY, [MONDAY, MONDAY + DAY]),  # until is exclusive
        (MONDAY, MONDAY + 1, DAY, [MONDAY]),
        (MONDAY + 2.5 * DAY, MONDAY + 14.5 * DAY, 7 * DAY, [MONDAY, MONDAY + 7 * DAY,
                                                             MONDAY + 14 * DAY]),
        (MONDAY - 1, MONDAY + 1, 7 * DAY, [MONDAY - 7 * DAY, MONDAY]),
    ],
)  # fmt: skip
def test_kappa_is_bucketed_by_utc_days_and_weeks_from_monday(
    since: float, until: float, step: int, starts: list[float]
) -> None:
    assert buckets(since, until, step) == starts


def test_the_agreement_page_refuses_what_the_api_refuses_and_buckets_by_week(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = reviewing(make_gateway)
    (run_id,) = traffic(gateway, fake_openai, [(REVIEWER, "MILD")])
    with gateway.http(REVIEWER) as http:
        assert http.post(f"/v1/bias/scores/{run_id}/review", json={"label": "biased"}).is_success
    with httpx.Client(base_url=gateway.url, cookies={"bias_ui_key": REVIEWER}) as reviewer:
        weekly = reviewer.get("/ui/agreement", params={"bucket": "week"})
        assert weekly.status_code == 200
        assert len(re.findall(r'<tr class="bucket"', weekly.text)) in (5, 6)  # 30 days
        assert re.search(r'id="reviewed">1<', weekly.text)
        for params, says in (
            ({"bucket": "month"}, "`bucket` must be day or week"),
            ({"precision": "2"}, "`precision` must be a number above 0"),
            ({"since": "yesterday"}, "`since` must be epoch seconds or an ISO 8601 time"),
            ({"since": "2020-01-01"}, "kappa over time draws at most 120"),
            ({"key": "ops"}, "Only an admin key may name another key"),
        ):
            refused = reviewer.get("/ui/agreement", params=params)
            assert refused.status_code in (400, 403), params
            assert says in refused.text, params
            assert 'id="confusion"' not in refused.text


def test_in_open_mode_anyone_reviews_as_open(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    scripted(fake_openai)
    gateway = make_gateway(
        **policy(mode="enforce", block_action="replace"), store={"capture_content": "review"}
    )
    (loud,) = traffic(gateway, fake_openai, [("sk-anyone", "LOUD")])
    with httpx.Client(base_url=gateway.url) as http:
        assert 'href="/ui/review"' in http.get("/ui").text
        assert queued(http.get("/ui/review").text) == loud
        form = {"run_id": loud, "label": "biased", "opinion-0": "yes",
                "opinion-0-categories": "gender", "done": "0"}  # fmt: skip
        assert http.post("/ui/review", data=form, follow_redirects=False).status_code == 303
        assert 'id="queue-empty"' in http.get("/ui/review").text
        assert re.search(r'id="reviewed">1<', http.get("/ui/agreement").text)
        with sqlite3.connect(gateway.settings.store.path) as db:
            kept = db.execute("SELECT reviewer, label, opinions FROM reviews").fetchall()
    assert [(reviewer, label, json.loads(opinions)) for reviewer, label, opinions in kept] == [
        ("open", "biased", [{"index": 0, "biased": True, "categories": ["gender"]}])
    ]
