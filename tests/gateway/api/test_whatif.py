"""`GET /v1/bias/whatif` through the gateway: the hand-counted records of the store's
test, tenancy (a key counts only its own records; admin keys count all), strict
parameters and the thresholds' scale."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from gateway.store import ScoreRecord
from testkit.postgres import PgCluster
from testkit.waiting import wait_for
from tests.support.gateways import RunningGateway
from tests.support.store_records import RECORDS, T0
from tests.support.tcp_proxy import TcpProxy

MakeGateway = Callable[..., RunningGateway]
A, B, ADMIN = "sk-team-a-0123456789", "sk-team-b-0123456789", "sk-admin-0123456789"
KEYS = {
    "keys": [
        {"key": A, "name": "team-a"},
        {"key": B, "name": "team-b"},
        {"key": ADMIN, "name": "ops", "admin": True},
    ]
}
WINDOW = {"since": str(T0), "until": "2025-12-01T00:01:40Z"}  # T0 + 100 s


def filled(
    make_gateway: MakeGateway, records: list[ScoreRecord], **overrides: Any
) -> RunningGateway:
    gateway = make_gateway(**KEYS, **overrides)
    for record in records:
        gateway.state.store.submit(record)  # the API's reads flush first
    return gateway


def whatif(http: httpx.Client, **params: Any) -> dict[str, Any]:
    answer = http.get("/v1/bias/whatif", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def examples(body: dict[str, Any]) -> dict[str, list[str]]:
    return {verdict: [e["run_id"] for e in found] for verdict, found in body["examples"].items()}


def test_an_admin_counts_every_record_and_a_key_only_its_own(make_gateway: MakeGateway) -> None:
    gateway = filled(make_gateway, RECORDS)
    with gateway.http(ADMIN) as admin, gateway.http(A) as a, gateway.http(B) as b:
        everything = whatif(admin, flag=0.5, block=0.8, **WINDOW)
        assert everything["object"] == "bias.whatif"
        assert (everything["since"], everything["until"]) == (T0, T0 + 100)
        assert everything["thresholds"] == {"flag": 0.5, "block": 0.8}
        assert everything["scale"] == 1.0
        total = everything["total"]
        assert (total["records"], total["scored"], total["unscored"]) == (11, 7, 4)
        assert total["status"] == {
            "dropped": 1, "error": 1, "pending": 1, "scored": 7, "skipped": 1
        }  # fmt: skip
        assert total["actual"] == {"pass": 3, "flag": 3, "block": 1}
        assert total["would"] == {"pass": 2, "flag": 3, "block": 2}
        assert [(g["key"], g["records"]) for g in everything["groups"]["key"]] == [
            ("team-a", 5), ("team-b", 4), (None, 2)
        ]  # fmt: skip
        assert [(g["key"], g["would"]["block"]) for g in everything["groups"]["category"]] == [
            ("gender", 2), ("political", 1), ("racial_ethnic", 0)
        ]  # fmt: skip
        assert everything["groups_truncated"] == []
        assert examples(everything) == {"flag": ["r07", "r04", "r03"], "block": ["r02", "r01"]}
        block = everything["examples"]["block"][1]
        assert block == {
            "run_id": "r01", "created_at": T0 + 1, "score": 0.95, "verdict": "block",
            "key_name": "team-a", "model": "gpt-a", "mode": "enforce",
            "categories": ["gender", "political"], "prompt": None, "completion": None,
        }  # fmt: skip
        assert whatif(admin, flag=0.5, block=0.8, key="team-b", **WINDOW)["total"]["records"] == 4

        mine = whatif(a, flag=0.5, block=0.8, **WINDOW)
        assert mine["total"]["records"] == 5
        assert mine["total"]["actual"] == {"pass": 1, "flag": 1, "block": 1}
        assert mine["total"]["would"] == {"pass": 1, "flag": 0, "block": 2}
        assert [g["key"] for g in mine["groups"]["key"]] == ["team-a"]
        assert examples(mine) == {"flag": [], "block": ["r02", "r01"]}
        assert whatif(a, flag=0.5, block=0.8, key="team-a", **WINDOW) == mine
        theirs = whatif(b, flag=0.5, block=0.8, **WINDOW)
        assert (theirs["total"]["records"], theirs["total"]["would"]["flag"]) == (4, 3)
        assert examples(theirs) == {"flag": ["r07", "r04", "r03"], "block": []}

        refused = a.get("/v1/bias/whatif", params={"flag": 0.5, "block": 0.8, "key": "team-b"})
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "permission_denied"
    with gateway.http() as anonymous:
        assert (
            anonymous.get("/v1/bias/whatif", params={"flag": 0.5, "block": 0.8}).status_code == 401
        )


def test_filters_and_examples_through_the_api(make_gateway: MakeGateway) -> None:
    gateway = filled(make_gateway, RECORDS)
    with gateway.http(ADMIN) as admin:
        gender = whatif(admin, flag=0.5, block=0.8, category="gender", **WINDOW)
        assert (gender["total"]["records"], gender["total"]["would"]["block"]) == (3, 2)
        enforced = whatif(admin, flag=0.5, block=0.8, mode="enforce", **WINDOW)
        assert enforced["total"]["records"] == 1
        given_flag = whatif(admin, flag=0.5, block=0.8, verdict="flag", **WINDOW)
        assert given_flag["total"]["would"] == {"pass": 0, "flag": 2, "block": 1}
        one = whatif(admin, flag=0.5, block=0.8, examples=1, **WINDOW)
        assert examples(one) == {"flag": ["r07"], "block": ["r02"]}
        assert examples(whatif(admin, flag=0.5, block=0.8, examples=0, **WINDOW)) == {
            "flag": [], "block": []
        }  # fmt: skip
        # Equal thresholds: block wins, nothing is flagged.
        equal = whatif(admin, flag=0.8, block=0.8, **WINDOW)
        assert equal["total"]["would"] == {"pass": 5, "flag": 0, "block": 2}


def test_count_rules_through_the_api(make_gateway: MakeGateway) -> None:
    padded = [
        ScoreRecord("one", "scored", T0 + 1, score=0.1, verdict="pass", biased_opinions=1),
        ScoreRecord("two", "scored", T0 + 2, score=0.1, verdict="pass", biased_opinions=2),
        ScoreRecord("none", "scored", T0 + 3, score=0.0, verdict="pass", biased_opinions=0),
        ScoreRecord("old", "scored", T0 + 4, score=0.1, verdict="pass"),  # never counted
    ]
    gateway = filled(make_gateway, padded)
    with gateway.http(ADMIN) as admin:
        plain = whatif(admin, flag=0.5, block=0.8, **WINDOW)
        assert plain["total"]["would"] == {"pass": 4, "flag": 0, "block": 0}
        assert plain["biased_opinions"] == {"flag": None, "block": None}
        flagged = whatif(admin, flag=0.5, block=0.8, flag_biased_opinions=1, **WINDOW)
        assert flagged["total"]["would"] == {"pass": 2, "flag": 2, "block": 0}
        both = whatif(admin, flag=0.5, block=0.8, flag_biased_opinions=1,
                      block_biased_opinions=2, **WINDOW)  # fmt: skip
        assert both["total"]["would"] == {"pass": 2, "flag": 1, "block": 1}
        assert examples(both) == {"flag": ["one"], "block": ["two"]}
        assert both["biased_opinions"] == {"flag": 1, "block": 2}
        empty = whatif(admin, flag=0.5, block=0.8, flag_biased_opinions="", **WINDOW)
        assert empty["biased_opinions"]["flag"] is None  # an empty value is the rule off


def test_the_window_is_the_last_24_hours_unless_given(make_gateway: MakeGateway) -> None:
    now = time.time()
    recent = ScoreRecord("recent", "scored", now - 3600, score=0.9, verdict="block")
    old = ScoreRecord("old", "scored", now - 2 * 86400, score=0.9, verdict="block")
    gateway = filled(make_gateway, [recent, old])
    with gateway.http(ADMIN) as admin:
        body = whatif(admin, flag=0.5, block=0.8)
        assert body["until"] - body["since"] == 86400
        assert examples(body) == {"flag": [], "block": ["recent"]}
        longer = whatif(admin, flag=0.5, block=0.8, since=now - 3 * 86400)
        assert examples(longer) == {"flag": [], "block": ["recent", "old"]}


def test_thresholds_are_on_the_judges_scale(make_gateway: MakeGateway) -> None:
    record = ScoreRecord("r", "scored", T0 + 1, score=7.5, verdict="flag")
    gateway = filled(make_gateway, [record], judge={"scale": 10})
    with gateway.http(ADMIN) as admin:
        body = whatif(admin, flag=5, block=7, **WINDOW)
        assert body["scale"] == 10
        assert body["total"]["would"] == {"pass": 0, "flag": 0, "block": 1}
        assert whatif(admin, flag=5, block=8, **WINDOW)["total"]["would"]["flag"] == 1
        above = admin.get("/v1/bias/whatif", params={"flag": 5, "block": 11, **WINDOW})
        assert above.status_code == 400
        assert "0 to 10" in above.json()["error"]["message"]


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"flag": "0.9", "block": "0.5"}, "flag"),  # flag above block
        ({"flag": "0.5"}, "block"),
        ({"block": "0.8"}, "flag"),
        ({"flag": "0.5", "block": "1.5"}, "block"),
        ({"flag": "-0.1", "block": "0.8"}, "flag"),
        ({"flag": "nan", "block": "0.8"}, "flag"),
        ({"flag": "half", "block": "0.8"}, "flag"),
        ({"flag": "0.5", "block": "0.8", "examples": "51"}, "examples"),
        ({"flag": "0.5", "block": "0.8", "examples": "-1"}, "examples"),
        ({"flag": "0.5", "block": "0.8", "mode": "shadow"}, "mode"),
        ({"flag": "0.5", "block": "0.8", "limit": "5"}, "limit"),
        ({"flag": "0.5", "block": "0.8", "group_by": "key"}, "group_by"),
        ({"flag": "0.5", "block": "0.8", "since": "2026-12-02", "until": "2026-12-01"}, "since"),
        ({"flag": "0.5", "block": "0.8", "category": "Gender!"}, "category"),
        ({"flag": "0.5", "block": "0.8", "flag_biased_opinions": "0"}, "flag_biased_opinions"),
        ({"flag": "0.5", "block": "0.8", "block_biased_opinions": "1.5"}, "block_biased_opinions"),
        (
            {
                "flag": "0.5",
                "block": "0.8",
                "flag_biased_opinions": "3",
                "block_biased_opinions": "2",
            },
            "flag_biased_opinions",
        ),
    ],
)
def test_bad_parameters_answer_400_naming_them(
    make_gateway: MakeGateway, params: dict[str, str], param: str
) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        answer = http.get("/v1/bias/whatif", params=params)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)


def test_other_methods_answer_405(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    with gateway.http() as http:
        answer = http.post("/v1/bias/whatif", json={})
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET"


def test_the_search_api_takes_no_mode(make_gateway: MakeGateway) -> None:
    """`mode` is the what-if API's filter; the list and stats still refuse it as unknown."""
    gateway = make_gateway()
    with gateway.http() as http:
        for path in ("/v1/bias/scores", "/v1/bias/stats"):
            answer = http.get(path, params={"mode": "monitor"})
            assert answer.status_code == 400
            assert answer.json()["error"]["param"] == "mode"


def test_a_database_away_answers_503_and_back_the_counts(
    make_gateway: MakeGateway, pg_cluster: PgCluster, make_pg_url: Callable[[], str]
) -> None:
    """PostgreSQL behind a proxy that cuts every connection: the counts answer 503 in
    the envelope, not a traceback, and come back with the database."""
    proxy = TcpProxy(pg_cluster.host, pg_cluster.port).start()
    try:
        url = make_pg_url().replace(f":{pg_cluster.port}/", f":{proxy.port}/")
        gateway = filled(make_gateway, RECORDS, store={"url": url})
        params: dict[str, Any] = {"flag": 0.5, "block": 0.8, **WINDOW}
        with gateway.http(ADMIN) as admin:
            assert whatif(admin, **params)["total"]["records"] == 11
            proxy.cut()
            away = admin.get("/v1/bias/whatif", params=params)
            assert away.status_code == 503
            assert away.json()["error"]["code"] == "store_unavailable"
            proxy.restore()

            def counted() -> bool:
                answer = admin.get("/v1/bias/whatif", params=params)
                return answer.status_code == 200 and answer.json()["total"]["records"] == 11

            wait_for(counted, "the counts with the database back", timeout=30)
    finally:
        proxy.stop()
