"""The judge canary on real gateways, on SQLite and PostgreSQL: labelled records (labelled
through the review API), a restart or a reload with a changed judge, the records judged
again in the explanation lane, and the agreement before and after in
`GET /v1/bias/reviews/canary`, the metrics and the log."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from structlog.testing import capture_logs

from gateway.config import load_settings
from gateway.server.app import create_app
from gateway.server.canary import labelled
from gateway.server.reload import ServedFrom
from gateway.store import ScoreRecord
from gateway.store.reviews import Review, Reviewed
from guard.limits import Lane
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI, Fault
from testkit.servers import ServerThread
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway, settings_for
from tests.support.lane_judge import LaneJudge
from tests.support.resources import ENGINES

MakeGateway = Callable[..., RunningGateway]
CHAT = {"model": "m", "messages": [{"role": "user", "content": "Tell me about engineers."}]}
ADMIN, TEAM = "sk-admin", "sk-team"
KEYS = [
    {"key": ADMIN, "name": "ops", "admin": True},
    {"key": TEAM, "name": "team", "reviewer": True},
]
POLICY = {"default": {"mode": "monitor", "flag_threshold": 0.5, "block_threshold": 0.9}}
# Three records the old judge flagged and reviewers found biased, three it passed and
# they found fair: before, F1 and kappa are 1.
RECORDS = [(f"north-{n}", 1.0, "flag", "biased") for n in range(3)] + [
    (f"calm-{n}", 0.0, "pass", "unbiased") for n in range(3)
]


def _record(run_id: str, score: float, verdict: str) -> ScoreRecord:
    result = {
        "preprocessStepResult": {"opinions": ["an opinion"]},
        "analyzeStepResult": {
            "results": [
                {"result": "yes", "reason": "r", "categories": ["geographical"]}
                if score
                else {"result": "no", "reason": "r"}
            ]
        },
    }
    return ScoreRecord(
        run_id, "scored", time.time(), key_name="team", score=score, verdict=verdict,
        result=result, completion=f"The text of {run_id}.", review_rank=2 if score else 4,
    )  # fmt: skip


def _store(engine: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if engine == "postgresql":
        return {"url": request.getfixturevalue("pg_url")}
    return {"path": str(tmp_path / "canary.db")}


def _label(gateway: RunningGateway) -> None:
    for run_id, score, verdict, _ in RECORDS:
        gateway.state.store.submit(_record(run_id, score, verdict))
    with gateway.http(TEAM) as http:
        for run_id, _, _, label in RECORDS:
            body: dict[str, Any] = {"label": label}
            if run_id == "north-0":  # and its opinion, for the per-category figures
                body["opinions"] = [{"index": 0, "biased": True, "categories": ["geographical"]}]
            answer = http.post(f"/v1/bias/scores/{run_id}/review", json=body)
            assert answer.status_code == 201, answer.text


def _finished(http: httpx.Client, timeout: float = 10) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        report: dict[str, Any] = http.get("/v1/bias/reviews/canary").json()
        return report if report.get("status") == "finished" else None

    return wait_for(done, lambda: http.get("/v1/bias/reviews/canary").text, timeout=timeout)


def _disagree(fake: FakeOpenAI) -> None:
    """The new judge finds nothing biased: every label `biased` is now missed."""
    fake.judge_model = "judge-2"
    fake.verdicts_for = {}
    fake.verdicts = [("no", "Fair.")]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_restart_with_a_changed_judge_reports_the_agreement_falling(
    engine: str,
    request: pytest.FixtureRequest,
    fake_openai: FakeOpenAI,
    make_gateway: MakeGateway,
    tmp_path: Path,
) -> None:
    config = {"keys": KEYS, "policies": POLICY, "store": _store(engine, request, tmp_path)}
    first = make_gateway(**config)
    with first.http(ADMIN) as http:
        recorded = wait_for(lambda: http.get("/v1/bias/reviews/canary").json()["judge"])
    assert recorded["model"] == JUDGE_MODEL
    assert recorded["endpoint"] == fake_openai.base_url
    _label(first)
    first.state.store.submit(_record("unlabelled", 1.0, "flag"))
    first.server.stop()

    _disagree(fake_openai)
    with capture_logs() as logs:
        second = make_gateway(**config, judge={"model": "judge-2"})
        with second.http(ADMIN) as http:
            report = _finished(http)
            with second.http(TEAM) as team:
                assert team.get("/v1/bias/reviews/canary").status_code == 403
            scrape = http.get("/metrics").text

    assert report["judge"]["before"]["model"] == JUDGE_MODEL
    assert report["judge"]["after"]["model"] == "judge-2"
    assert report["started_at"] <= report["finished_at"]
    assert (report["labelled"], report["rejudged"], report["errors"]) == (6, 6, 0)
    assert report["before"]["judge"] == {
        "precision": 1.0, "recall": 1.0, "f1": 1.0, "flagged": 0.5, "kappa": 1.0,
        "tp": 3, "fp": 0, "fn": 0, "tn": 3,
    }  # fmt: skip
    assert report["after"]["judge"] == {
        "precision": None, "recall": 0.0, "f1": 0.0, "flagged": 0.0, "kappa": 0.0,
        "tp": 0, "fp": 0, "fn": 3, "tn": 3,
    }  # fmt: skip
    # The same fields as the agreement endpoint's.
    assert {"reviewed", "judge", "categories", "thresholds", "reaching", "best_f1"} <= set(
        report["after"]
    )
    # The labelled opinion: the old judge named its category, the new one finds no bias.
    geographical = report["before"]["categories"]["geographical"]
    assert (geographical["tp"], geographical["fn"]) == (1, 0)
    geographical = report["after"]["categories"]["geographical"]
    assert (geographical["tp"], geographical["fn"]) == (0, 1)
    assert report["drop"] == {"f1": 1.0, "kappa": 1.0}
    assert (report["canary_drop"], report["exceeded"]) == (0.1, True)
    # Judged again by the new judge: two calls each (extract, judge), none for the record
    # nobody labelled, and nothing new stored.
    rejudged = [r for r in fake_openai.requests if r.body.get("model") == "judge-2"]
    assert len(rejudged) == 12
    assert not any("unlabelled" in str(r.body) for r in rejudged)
    warned = [line for line in logs if line["event"].startswith("agreement with reviewers fell")]
    assert len(warned) == 1
    assert warned[0]["log_level"] == "warning"
    assert (warned[0]["f1_before"], warned[0]["f1_after"]) == (1.0, 0.0)
    after = f"judge-2@{fake_openai.base_url}#"
    assert f'bias_review_canary_f1{{judge="{after}' in scrape
    assert 'bias_review_canary_drop{figure="kappa"} 1.0' in scrape
    assert "bias_review_canary_drop_limit 0.1" in scrape
    assert "bias_review_canary_rejudged_records 6.0" in scrape

    # The same judge again: no canary; the last report and its figures stay.
    second.server.stop()
    calls = len(fake_openai.requests)
    third = make_gateway(**config, judge={"model": "judge-2"})
    with third.http(ADMIN) as http:
        assert http.get("/v1/bias/reviews/canary").json()["started_at"] == report["started_at"]
        assert 'bias_review_canary_drop{figure="f1"} 1.0' in http.get("/metrics").text
    assert len(fake_openai.requests) == calls


def test_a_canary_cut_short_by_a_stop_runs_again_at_the_next_start(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway, tmp_path: Path
) -> None:
    config = {"keys": KEYS, "policies": POLICY}
    first = make_gateway(**config)
    _label(first)
    first.server.stop()

    _disagree(fake_openai)
    fake_openai.judge_open.clear()  # the new judge holds every call
    second = make_gateway(**config, judge={"model": "judge-2"})
    try:
        with second.http(ADMIN) as http:
            wait_for(lambda: http.get("/v1/bias/reviews/canary").json()["status"] == "running")
            wait_for(lambda: fake_openai.judge_in_flight > 0, "a held judge call")
        second.server.stop()
    finally:
        fake_openai.judge_open.set()

    third = make_gateway(**config, judge={"model": "judge-2"})
    with third.http(ADMIN) as http:
        report = _finished(http)
    assert (report["rejudged"], report["exceeded"]) == (6, True)
    assert report["judge"]["before"]["model"] == JUDGE_MODEL


def test_a_rate_limited_new_judge_checks_every_record_at_its_pace(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """The new judge answers 429 above two calls a second: the canary's twelve calls wait
    their turns (the limiter reads the reset hint), none is counted as an error, and the
    gateway answers its clients meanwhile."""
    config = {"keys": KEYS, "policies": POLICY}
    first = make_gateway(**config)
    _label(first)
    first.server.stop()

    _disagree(fake_openai)
    fake_openai.judge_max_rps = 2
    second = make_gateway(**config, judge={"model": "judge-2"})
    with second.http(ADMIN) as http:
        wait_for(lambda: fake_openai.rate_limited > 0, "a judge call refused with a 429")
        served = http.post("/v1/chat/completions", json=CHAT)
        assert served.status_code == 200
        report = _finished(http, timeout=60)  # twelve calls at two a second: six seconds at least
    assert (report["labelled"], report["rejudged"], report["errors"]) == (6, 6, 0)
    assert report["exceeded"] is True


def test_a_failing_new_judge_is_reported_as_unchecked_not_as_a_drop(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    """Every call to the new judge fails: each record is an error, the figures after are
    empty, no drop is claimed (nothing was measured), and no warning is logged."""
    config = {"keys": KEYS, "policies": POLICY}
    first = make_gateway(**config)
    _label(first)
    first.server.stop()

    _disagree(fake_openai)
    fake_openai.fail(*(Fault(step="preprocess", status=500) for _ in range(200)))
    with capture_logs() as logs:
        second = make_gateway(**config, judge={"model": "judge-2"})
        with second.http(ADMIN) as http:
            report = _finished(http, timeout=60)
    assert (report["labelled"], report["rejudged"], report["errors"]) == (6, 0, 6)
    assert report["after"]["reviewed"] == 0
    assert report["drop"] == {"f1": None, "kappa": None}
    assert report["exceeded"] is False
    assert not [line for line in logs if line["event"].startswith("agreement with reviewers")]


def test_without_labelled_texts_the_canary_says_it_checked_nothing(
    fake_openai: FakeOpenAI, make_gateway: MakeGateway
) -> None:
    config = {"keys": KEYS, "policies": POLICY}
    first = make_gateway(**config)
    first.state.store.submit(dataclasses.replace(_record("north-0", 1.0, "flag"), completion=None))
    with first.http(TEAM) as http:
        assert http.post("/v1/bias/scores/north-0/review", json={"label": "biased"}).is_success
    first.server.stop()

    _disagree(fake_openai)
    with capture_logs() as logs:
        second = make_gateway(**config, judge={"model": "judge-2"})
        with second.http(ADMIN) as http:
            report = _finished(http)
    assert (report["labelled"], report["rejudged"], report["exceeded"]) == (0, 0, False)
    assert any(line["event"].startswith("no labelled record with its text") for line in logs)
    assert not [r for r in fake_openai.requests if r.body.get("model") == "judge-2"]


def test_a_reload_that_changes_the_judge_runs_the_canary(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    settings = settings_for(fake_openai, tmp_path, keys=KEYS, policies=POLICY)
    path = tmp_path / "gateway.yaml"
    data = settings.model_dump(mode="json", exclude_defaults=True)
    data["keys"] = KEYS
    path.write_text(yaml.safe_dump(data))
    app = create_app(load_settings(path), served=ServedFrom(str(path), "127.0.0.1", 0))
    server = ServerThread(app, lifespan="on").start()
    gateway = RunningGateway(server, app, settings)
    try:
        _label(gateway)
        with gateway.http(ADMIN) as http:
            assert wait_for(lambda: http.get("/v1/bias/reviews/canary").json()["judge"])
            assert http.get("/v1/bias/reviews/canary").json()["status"] == "none"
            _disagree(fake_openai)
            data["judge"]["model"] = "judge-2"
            data["review"] = {"canary_drop": 0.5, "canary_size": 4}
            path.write_text(yaml.safe_dump(data))
            assert http.post("/admin/reload").json()["outcome"] == "ok"
            report = _finished(http)
    finally:
        server.stop()
    # The four newest labels: the last three records labelled and one before them.
    assert (report["labelled"], report["rejudged"]) == (4, 4)
    assert report["judge"]["after"]["model"] == "judge-2"
    assert report["canary_drop"] == 0.5
    assert report["exceeded"] is True


def test_the_canary_takes_each_records_newest_label_with_its_text_newest_first() -> None:
    def item(run_id: str, at: float, label: str, text: str | None = "text") -> Reviewed:
        review = Review(run_id, "someone", None, label, None, None, at)
        return Reviewed(review, 0.5, "flag", None, None, text)

    reviewed = [
        item("a", 1, "biased"),
        item("b", 2, "unbiased"),
        item("a", 3, "unbiased"),
        item("c", 4, "biased", text=None),  # its text was not kept
        item("d", 5, "biased"),
    ]
    picked = labelled(reviewed, 10)
    assert [(i.review.run_id, i.review.label) for i in picked] == [
        ("d", "biased"),
        ("a", "unbiased"),
        ("b", "unbiased"),
    ]
    assert [i.review.run_id for i in labelled(reviewed, 2)] == ["d", "a"]


def test_the_canarys_calls_go_in_the_explanation_lane_behind_an_enforced_answer(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """One judge slot: the canary holds it and queues the rest of its records; an enforced
    answer arriving then is judged next, before the canary's waiting calls."""
    fake_openai.reply = "An enforced reply."
    overrides = {
        "keys": KEYS,
        "policies": {**POLICY, "strict": {"mode": "enforce"}},
        "review": {"canary_size": 6},
    }
    settings = settings_for(fake_openai, tmp_path, **overrides)
    app = create_app(settings, judge=LaneJudge())
    first = ServerThread(app, lifespan="on").start()
    try:
        _label(RunningGateway(first, app, settings))
    finally:
        first.stop()

    lane_judge = LaneJudge(max_concurrency=1, model="lane-judge-2")
    lane_judge.gate.clear()
    keys = [*KEYS, {"key": "sk-strict", "name": "strict", "policy": "strict"}]
    settings = settings_for(fake_openai, tmp_path, **{**overrides, "keys": keys})
    server = ServerThread(create_app(settings, judge=lane_judge), lifespan="on").start()
    limiter = lane_judge.limiter
    try:
        wait_for(lambda: limiter.waiting >= 5, lambda: f"{limiter.waiting} canary calls waiting")
        headers = {"authorization": "Bearer sk-strict"}
        with httpx.Client(base_url=server.url, timeout=30) as http, ThreadPoolExecutor(1) as pool:
            answer = pool.submit(http.post, "/v1/chat/completions", json=CHAT, headers=headers)
            wait_for(lambda: limiter.waiting >= 6, "the enforced answer's judge call")
            lane_judge.gate.set()
            assert answer.result(timeout=30).headers["x-bias-status"] == "scored"
            http.headers["authorization"] = f"Bearer {ADMIN}"
            report = _finished(http)
    finally:
        lane_judge.gate.set()
        server.stop()

    assert report["rejudged"] == 6
    canary = [seen for seen in lane_judge.seen if "The text of" in seen.text]
    assert len(canary) == 12  # two calls for each of six records
    assert {(seen.lane, seen.key) for seen in canary} == {(Lane.EXPLAIN, "team")}
    enforced = [seen for seen in lane_judge.seen if "enforced reply" in seen.text]
    assert {seen.lane for seen in enforced} == {Lane.ENFORCE}
    # The canary's first call held the slot; the enforced answer's came next, before the
    # canary's calls that were waiting already.
    assert lane_judge.seen[0] is canary[0]
    assert lane_judge.seen[1] is enforced[0]
