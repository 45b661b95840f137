"""The search, stats and lookup APIs through the gateway: filters, paging, strict
parameters, and tenancy (each key sees its own records; admin keys see all)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from gateway.api.search import parse_time
from gateway.errors import BadRequest
from testkit.fake_openai import FakeOpenAI
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
KEYS = {
    "keys": [
        {"key": "sk-team-a-0123456789", "name": "team-a"},
        {"key": "sk-team-b-0123456789", "name": "team-b"},
        {"key": "sk-admin-0123456789", "name": "ops", "admin": True},
    ]
}
A, B, ADMIN = "sk-team-a-0123456789", "sk-team-b-0123456789", "sk-admin-0123456789"


def chat(http: httpx.Client, text: str = "hi", model: str = "m") -> str:
    answer = http.post(
        "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": text}]},
    )
    assert answer.status_code == 200, answer.text
    return answer.headers["x-bias-run-id"]


def listed(http: httpx.Client, **params: Any) -> dict[str, Any]:
    answer = http.get("/v1/bias/scores", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_each_key_sees_its_own_records_and_admin_sees_all(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    gateway = make_gateway(**KEYS, **policy(mode="enforce", block_action="replace"))
    with gateway.http(A) as a, gateway.http(B) as b, gateway.http(ADMIN) as admin:
        mine = [chat(a) for _ in range(3)]
        theirs = [chat(b) for _ in range(2)]
        assert {r["run_id"] for r in listed(a)["data"]} == set(mine)
        assert {r["run_id"] for r in listed(b)["data"]} == set(theirs)
        assert {r["run_id"] for r in listed(admin)["data"]} == set(mine + theirs)
        assert {r["run_id"] for r in listed(admin, key="team-b")["data"]} == set(theirs)
        # Another key's run id does not exist, for a non-admin key.
        other = a.get(f"/v1/bias/scores/{theirs[0]}")
        assert other.status_code == 404
        assert other.json()["error"]["code"] == "not_found"
        assert a.get(f"/v1/bias/scores/{mine[0]}").status_code == 200
        assert admin.get(f"/v1/bias/scores/{theirs[0]}").status_code == 200
        refused = a.get("/v1/bias/scores", params={"key": "team-b"})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "permission_denied"
        assert a.get("/v1/bias/scores", params={"key": "team-a"}).status_code == 200
        # Stats are scoped alike.
        assert a.get("/v1/bias/stats").json()["total"]["records"] == 3
        assert admin.get("/v1/bias/stats").json()["total"]["records"] == 5
        assert a.get("/v1/bias/stats", params={"key": "team-b"}).status_code == 403
    with gateway.http() as anonymous:
        assert anonymous.get("/v1/bias/scores").status_code == 401
        assert anonymous.get("/v1/bias/stats").status_code == 401


def test_filters_paging_and_stats_through_the_api(
    make_gateway: MakeGateway, fake_openai: FakeOpenAI
) -> None:
    fake_openai.verdicts_for = {
        "QUIET-REPLY": [("no", "No group is targeted.", []), ("no", "Fine.", [])],
        "MIXED-REPLY": [("yes", "Gender stereotype.", ["gender"]), ("no", "Fine.", [])],
    }
    fake_openai.verdicts = [("yes", "Geographical.", ["geographical"])] * 2
    fake_openai.opinions = ["first", "second"]
    gateway = make_gateway(**policy(mode="enforce", block_action="replace"))
    with gateway.http() as http:
        fake_openai.reply = "QUIET-REPLY"
        passes = [chat(http) for _ in range(3)]
        fake_openai.reply = "MIXED-REPLY"
        flags = [chat(http, model="other") for _ in range(2)]
        fake_openai.reply = "LOUD-REPLY"  # the default verdicts: geographical, block
        blocks = [chat(http) for _ in range(4)]

        assert {r["run_id"] for r in listed(http, verdict="flag")["data"]} == set(flags)
        assert {r["run_id"] for r in listed(http, category="gender")["data"]} == set(flags)
        assert {r["run_id"] for r in listed(http, category="geographical")["data"]} == set(blocks)
        assert {r["run_id"] for r in listed(http, model="other")["data"]} == set(flags)
        assert {r["run_id"] for r in listed(http, min_score=0.8)["data"]} == set(blocks)
        assert listed(http, status="pending")["data"] == []
        # Newest first, two at a time, to the end.
        seen, cursor = [], None
        while True:
            page = listed(http, limit=2, **({"cursor": cursor} if cursor else {}))
            seen += [record["run_id"] for record in page["data"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(reversed(passes + flags + blocks))
        record = listed(http, limit=1)["data"][0]
        assert record["categories"] == ["geographical"]
        assert "work" not in record

        stats = http.get("/v1/bias/stats", params={"group_by": "verdict"}).json()
        assert stats["total"]["records"] == 9
        assert stats["total"]["verdict"] == {"pass": 3, "flag": 2, "block": 4}
        everything = listed(http, limit=200)["data"]
        assert stats["total"]["judge"]["calls"] == sum(r["judge_calls"] or 0 for r in everything)
        assert stats["total"]["judge"]["calls"] > 0
        assert {g["key"]: g["records"] for g in stats["groups"]} == {
            "block": 4,
            "pass": 3,
            "flag": 2,
        }
        by_category = http.get("/v1/bias/stats", params={"group_by": "category"}).json()
        assert {g["key"]: g["records"] for g in by_category["groups"]} == {
            "geographical": 4,
            "gender": 2,
        }
        hours = http.get("/v1/bias/stats", params={"group_by": "hour"}).json()
        assert sum(g["records"] for g in hours["groups"]) == 9
        assert hours["groups"][-1]["key"] == float(int(time.time() // 3600) * 3600)
        # A window that holds nothing.
        empty = http.get("/v1/bias/stats", params={"until": "2020-01-01T00:00:00Z"}).json()
        assert empty["total"]["records"] == 0
        assert empty["total"]["score"] == {"mean": None, "p90": None, "sampled": False}


@pytest.mark.parametrize(
    ("path", "params", "param"),
    [
        ("/v1/bias/scores", {"verdicts": "block"}, "verdicts"),
        ("/v1/bias/scores", {"verdict": "blocked"}, "verdict"),
        ("/v1/bias/scores", {"status": "done"}, "status"),
        ("/v1/bias/scores", {"limit": "0"}, "limit"),
        ("/v1/bias/scores", {"limit": "201"}, "limit"),
        ("/v1/bias/scores", {"limit": "ten"}, "limit"),
        ("/v1/bias/scores", {"min_score": "-1"}, "min_score"),
        ("/v1/bias/scores", {"min_score": "nan"}, "min_score"),
        ("/v1/bias/scores", {"since": "yesterday"}, "since"),
        ("/v1/bias/scores", {"since": "2026-12-02", "until": "2026-12-01"}, "since"),
        ("/v1/bias/scores", {"cursor": "not-a-cursor"}, "cursor"),
        ("/v1/bias/scores", {"category": "Gender!"}, "category"),
        ("/v1/bias/stats", {"group_by": "week"}, "group_by"),
        ("/v1/bias/stats", {"limit": "5"}, "limit"),
    ],
)
def test_bad_parameters_answer_400_naming_them(
    make_gateway: MakeGateway, path: str, params: dict[str, str], param: str
) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        answer = http.get(path, params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param


def test_the_new_routes_answer_other_methods_405(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        for path in ("/v1/bias/scores", "/v1/bias/stats"):
            answer = http.post(path, json={})
            assert answer.status_code == 405
            assert answer.headers["allow"] == "GET"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1764547200", 1764547200.0),
        ("1764547200.5", 1764547200.5),
        ("2025-12-01T00:00:00Z", 1764547200.0),
        ("2025-12-01T01:00:00+01:00", 1764547200.0),
        ("2025-12-01T00:00:00", 1764547200.0),  # no zone: UTC
        ("2025-12-01", 1764547200.0),
    ],
)
def test_times_are_epoch_seconds_or_iso_8601(value: str, seconds: float) -> None:
    assert parse_time(value, "since") == seconds


@pytest.mark.parametrize("value", ["inf", "soon", "2025-13-01", ""])
def test_bad_times_are_refused(value: str) -> None:
    with pytest.raises(BadRequest):
        parse_time(value, "since")
