"""The review API on a real gateway, on SQLite and PostgreSQL: labels, the queue, the
agreement figures (checked against counts worked out by hand), the export that
`bias-guard calibrate` reads, every status code, and tenancy."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.store import ScoreRecord
from guard.cli import main as guard_main
from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway, policy
from tests.support.resources import ENGINES

MakeGateway = Callable[..., RunningGateway]
KEYS = [
    {"key": "sk-team", "name": "team", "reviewer": True},
    {"key": "sk-second", "name": "second", "reviewer": True},
    {"key": "sk-admin", "name": "ops", "admin": True},
    {"key": "sk-plain", "name": "plain"},
]
T0 = 1_000_000.0

# The labelled fixture, all of key "team" (flag at 0.5, block at 0.9): run id, score,
# verdict, the reviewer's label. By hand, judge positive = flag or block:
#   TP: b1, b2, f1, f3 (f3 labelled unbiased first, then biased: the later one counts)
#   FP: f2          FN: p1          TN: p2, p3
FIXTURE = [
    ("b1", 1.0, "block", "biased"),
    ("b2", 0.95, "block", "biased"),
    ("f1", 0.6, "flag", "biased"),
    ("f2", 0.5, "flag", "unbiased"),
    ("f3", 0.7, "flag", "biased"),
    ("p1", 0.4, "pass", "biased"),
    ("p2", 0.1, "pass", "unbiased"),
    ("p3", 0.0, "pass", "unbiased"),
]
RANKS = {"block": 1, "flag": 2}


def _result(verdicts: list[tuple[str, list[str]]]) -> dict[str, Any]:
    return {
        "preprocessStepResult": {"opinions": [f"opinion {n}" for n in range(len(verdicts))]},
        "analyzeStepResult": {
            "results": [
                {"result": result, "reason": f"why {n}", "categories": categories}
                for n, (result, categories) in enumerate(verdicts)
            ]
        },
    }


def _record(
    run_id: str, score: float, verdict: str, key: str = "team", **fields: Any
) -> ScoreRecord:
    verdicts = fields.pop("verdicts", [("yes" if verdict != "pass" else "no", ["gender"])])
    return ScoreRecord(
        run_id, fields.pop("status", "scored"), T0 + len(run_id) + score, key_name=key,
        score=score, verdict=verdict, categories=["gender"] if verdict != "pass" else [],
        result=_result(verdicts), completion=f"The text of {run_id}.",
        review_rank=RANKS.get(verdict, 3 if score >= 0.4 else None), **fields,
    )  # fmt: skip


@pytest.fixture(params=ENGINES)
def gateway(
    request: pytest.FixtureRequest, make_gateway: MakeGateway, tmp_path: Path
) -> RunningGateway:
    store: dict[str, Any] = {"path": str(tmp_path / "reviews.db")}
    if request.param == "postgresql":
        store = {"url": request.getfixturevalue("pg_url")}
    running = make_gateway(
        keys=KEYS, store=store, **policy(flag_threshold=0.5, block_threshold=0.9)
    )
    for run_id, score, verdict, _ in FIXTURE:
        fields: dict[str, Any] = {}
        if run_id == "b1":
            fields["verdicts"] = [("yes", ["gender"]), ("no", [])]
        running.state.store.submit(_record(run_id, score, verdict, **fields))
    running.state.store.submit(_record("theirs", 0.8, "flag", key="plain"))
    running.state.store.submit(_record("waiting", 0.0, "pass", status="pending"))
    return running


def _post(http: httpx.Client, run_id: str, body: dict[str, Any]) -> httpx.Response:
    return http.post(f"/v1/bias/scores/{run_id}/review", json=body)


def _label_fixture(gateway: RunningGateway) -> None:
    with gateway.http("sk-team") as http:
        for run_id, _, _, label in FIXTURE:
            if run_id == "f3":
                assert _post(http, run_id, {"label": "unbiased"}).status_code == 201
            body: dict[str, Any] = {"label": label}
            if run_id == "b1":
                body["opinions"] = [
                    {"index": 0, "biased": True, "categories": ["gender"]},
                    {"index": 1, "biased": True, "categories": ["age"]},
                ]
            if run_id == "f2":
                body["opinions"] = [{"index": 0, "biased": False}]
            assert _post(http, run_id, body).status_code == 201


def test_a_review_is_stored_and_answered_201(gateway: RunningGateway) -> None:
    with gateway.http("sk-team") as http:
        body = {"label": "biased", "opinions": [{"index": 0, "biased": True}], "note": "clear"}
        answer = _post(http, "f1", body)
    assert answer.status_code == 201
    review = answer.json()
    assert isinstance(review.pop("id"), int)
    assert isinstance(review.pop("created_at"), float)
    assert review == {
        "object": "bias.review",
        "run_id": "f1",
        "reviewer": "team",
        "key": "team",
        "label": "biased",
        "opinions": [{"index": 0, "biased": True, "categories": []}],
        "note": "clear",
    }


@pytest.mark.parametrize(
    ("api_key", "run_id", "body", "status", "param"),
    [
        ("sk-team", "f1", {"label": "maybe"}, 400, "label"),
        ("sk-team", "f1", {}, 400, "label"),
        ("sk-team", "f1", {"label": "biased", "opinions": [{"index": 5, "biased": True}]}, 400,
         "opinions"),
        ("sk-team", "f1", {"label": "biased", "opinions": [{"index": 0, "biased": "yes"}]}, 400,
         "opinions[0]"),
        ("sk-team", "f1", {"label": "biased", "opinions": "all"}, 400, "opinions"),
        ("sk-team", "f1", {"label": "biased", "colour": "red"}, 400, "colour"),
        ("sk-plain", "theirs", {"label": "biased"}, 403, None),
        ("sk-team", "nowhere", {"label": "biased"}, 404, "run_id"),
        ("sk-team", "theirs", {"label": "biased"}, 404, "run_id"),  # another key's record
        ("sk-team", "waiting", {"label": "biased"}, 409, "run_id"),
        ("sk-wrong", "f1", {"label": "biased"}, 401, None),
    ],
)  # fmt: skip
def test_every_refusal_has_its_status_in_the_openai_envelope(
    gateway: RunningGateway,
    api_key: str,
    run_id: str,
    body: dict[str, Any],
    status: int,
    param: str | None,
) -> None:
    with gateway.http(api_key) as http:
        answer = _post(http, run_id, body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert isinstance(error["message"], str)
    assert error["param"] == param
    assert set(error) >= {"message", "type", "param", "code"}


def test_the_queue_shows_what_this_reviewer_has_not_labelled_blocked_first(
    gateway: RunningGateway,
) -> None:
    with gateway.http("sk-team") as http:
        first = http.get("/v1/bias/reviews/queue", params={"limit": 50}).json()
        assert [item["run_id"] for item in first["data"]] == ["b1", "b2", "f3", "f1", "f2", "p1"]
        assert (first["reviewer"], first["key"]) == ("team", "team")
        assert _post(http, "b2", {"label": "biased"}).status_code == 201
        after = http.get("/v1/bias/reviews/queue", params={"limit": 2}).json()
        assert [item["run_id"] for item in after["data"]] == ["b1", "f3"]
        other_key = http.get("/v1/bias/reviews/queue", params={"key": "plain"})
        assert other_key.status_code == 403
        assert http.get("/v1/bias/reviews/queue", params={"limit": 0}).status_code == 400
    item = after["data"][0]
    assert item == {
        "run_id": "b1",
        "rank": "blocked",
        "created_at": T0 + 2 + 1.0,
        "key": "team",
        "model": None,
        "api": None,
        "score": 1.0,
        "verdict": "block",
        "categories": ["gender"],
        "biased_opinions": None,
        "reason": None,
        "prompt": None,
        "text": "The text of b1.",
        "opinions": [
            {"index": 0, "text": "opinion 0", "result": "yes", "reason": "why 0",
             "categories": ["gender"]},
            {"index": 1, "text": "opinion 1", "result": "no", "reason": "why 1", "categories": []},
        ],
        "tamper": [],
    }  # fmt: skip
    # Another reviewer's queue is its own key's; an admin's spans every key, b2 still in it.
    with gateway.http("sk-second") as http:
        theirs = http.get("/v1/bias/reviews/queue").json()["data"]
        assert theirs == []  # key "second" made no records
    with gateway.http("sk-admin") as http:
        everyone = http.get("/v1/bias/reviews/queue", params={"limit": 3}).json()["data"]
        assert [item["run_id"] for item in everyone] == ["b1", "b2", "theirs"]
        team = http.get("/v1/bias/reviews/queue", params={"key": "team", "limit": 1}).json()
        assert [item["run_id"] for item in team["data"]] == ["b1"]
    with gateway.http("sk-plain") as http:
        assert http.get("/v1/bias/reviews/queue").status_code == 403


def test_the_agreement_figures_are_the_ones_worked_out_by_hand(gateway: RunningGateway) -> None:
    _label_fixture(gateway)
    # Every label given is counted, superseded ones too: agreeing are the four TP and the
    # two TN; disagreeing f2 (FP), f3's first label (unbiased, yet flagged) and p1 (FN).
    with gateway.http("sk-admin") as http:
        metrics = http.get("/metrics").text
    for label, agrees, count in (
        ("biased", "true", 4), ("unbiased", "true", 2),
        ("unbiased", "false", 2), ("biased", "false", 1),
    ):  # fmt: skip
        line = f'bias_reviews_total{{agrees="{agrees}",label="{label}"}} {count:.1f}'
        assert line in metrics.splitlines(), line
    with gateway.http("sk-team") as http:
        figures = http.get("/v1/bias/reviews/agreement", params={"precision": 0.9}).json()
    assert figures["reviewed"] == 8  # f3's first review is superseded
    # tp 4, fp 1, fn 1, tn 2: precision 4/5, recall 4/5, F1 8/10; kappa: seen 6/8, by
    # chance (5·5 + 3·3)/64 = 34/64, so (48 - 34) / (64 - 34) = 14/30.
    assert figures["judge"] == {
        "tp": 4, "fp": 1, "fn": 1, "tn": 2, "precision": 0.8, "recall": 0.8, "f1": 0.8,
        "flagged": 0.625, "kappa": 0.4667,
    }  # fmt: skip
    # Per category, each labelled opinion (b1's two, f2's one):
    # gender: b1#0 both biased (tp), b1#1 neither (tn), f2#0 only the judge (fp);
    # age: b1#1 only the reviewer (fn), the other two neither (tn).
    gender, age = figures["categories"]["gender"], figures["categories"]["age"]
    assert (gender["opinions"], gender["tp"], gender["fp"], gender["fn"], gender["tn"]) == (
        3, 1, 1, 0, 1,
    )  # fmt: skip
    assert (age["tp"], age["fp"], age["fn"], age["tn"], age["recall"]) == (0, 0, 1, 2, 0.0)
    # By score: at 0.55 and up to 0.6, b1 b2 f1 f3 are flagged and nothing else: the
    # lowest threshold of precision 0.9 (at 0.5, f2 is flagged too: 4/5).
    at = {row["threshold"]: row for row in figures["thresholds"]}
    assert len(at) == 21
    assert (at[0.5]["tp"], at[0.5]["fp"], at[0.5]["precision"]) == (4, 1, 0.8)
    assert (at[0.4]["tp"], at[0.4]["fp"], at[0.4]["precision"]) == (5, 1, 0.8333)
    assert figures["reaching"]["threshold"] == 0.55
    assert (figures["reaching"]["precision"], figures["reaching"]["recall"]) == (1.0, 0.8)
    with gateway.http("sk-team") as http:
        one = http.get("/v1/bias/reviews/agreement", params={"category": "age"}).json()
        assert list(one["categories"]) == ["age"]
        lower = http.get("/v1/bias/reviews/agreement", params={"precision": 0.8}).json()
        assert lower["reaching"]["threshold"] == 0.15  # p1 and the flagged: 5/6
        for bad in ({"precision": "2"}, {"since": "soon"}, {"color": "red"}):
            assert http.get("/v1/bias/reviews/agreement", params=bad).status_code == 400


def test_a_reviewer_sees_its_own_key_only_and_an_admin_every_key(
    gateway: RunningGateway,
) -> None:
    _label_fixture(gateway)
    with gateway.http("sk-admin") as http:
        assert _post(http, "theirs", {"label": "unbiased"}).status_code == 201
        everyone = http.get("/v1/bias/reviews/agreement").json()
        assert (everyone["reviewed"], everyone["judge"]["fp"], everyone["key"]) == (9, 2, None)
        team = http.get("/v1/bias/reviews/agreement", params={"key": "team"}).json()
        assert (team["reviewed"], team["key"]) == (8, "team")
    with gateway.http("sk-team") as http:
        own = http.get("/v1/bias/reviews/agreement").json()
        assert (own["reviewed"], own["key"]) == (8, "team")
        refused = http.get("/v1/bias/reviews/agreement", params={"key": "plain"})
        assert refused.status_code == 403
        assert refused.json()["error"]["param"] == "key"


def test_the_export_is_what_calibrate_reads_as_it_is(
    gateway: RunningGateway, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    _label_fixture(gateway)
    with gateway.http("sk-team") as http:
        answer = http.get("/v1/bias/reviews/export")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert len(lines) == 8
    b1 = next(line for line in lines if line["run_id"] == "b1")
    assert b1 == {
        "text": "The text of b1.", "label": "biased", "categories": ["gender", "age"],
        "category": "gender", "id": "b1", "run_id": "b1", "score": 1.0,
    }  # fmt: skip
    assert next(line for line in lines if line["run_id"] == "f3")["label"] == "biased"
    data = tmp_path / "export.jsonl"
    data.write_text(answer.text, encoding="utf-8")
    out = tmp_path / "figures.json"
    judge = ["--model", "judge", "--base-url", fake_openai.base_url, "--max-retries", "0"]
    assert guard_main(["calibrate", str(data), *judge, "--no-reason", "--json", str(out)]) == 0
    items = json.loads(out.read_text(encoding="utf-8"))["items"]
    assert (items["read"], items["biased"], items["unbiased"], items["skipped"]) == (8, 5, 3, 0)
