"""Client keys kept as their hash: accepted, compared by digest, never matched by the hash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pydantic
import pytest

from gateway.config import Settings, load_settings
from gateway.config.keyhash import hash_key
from tests.support.gateways import RunningGateway, policy

MakeGateway = Callable[..., RunningGateway]
CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
ALICE = "sk-alice-7f3a9c1e55d04b2a"
BOB = "sk-bob-0b8e21d4c6aa4f09"


def test_a_hashed_key_is_sha256_of_the_key() -> None:
    entry = hash_key(ALICE)
    assert entry.startswith("sha256:")
    assert len(entry) == len("sha256:") + 64
    assert entry != hash_key(BOB)


@pytest.mark.parametrize(
    "bad", ["sha256:", "sha256:abc", "sha256:" + "z" * 64, "sha256:" + "a" * 65]
)
def test_a_malformed_hash_is_refused(bad: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="64 hex digits"):
        Settings.model_validate({"keys": [{"name": "a", "key": bad}]})


def test_a_key_and_its_hash_are_one_key() -> None:
    with pytest.raises(pydantic.ValidationError, match="'a' and 'b' have the same key"):
        Settings.model_validate(
            {"keys": [{"name": "a", "key": ALICE}, {"name": "b", "key": hash_key(ALICE)}]}
        )


def test_keys_in_clear_are_named() -> None:
    settings = Settings.model_validate(
        {
            "keys": [{"name": "a", "key": ALICE}, {"name": "b", "key": hash_key(BOB)}],
            "api_keys": [hash_key("sk-third-9d2c")],
        }
    )
    assert settings.keys_in_clear() == ["a"]


def test_a_hashed_key_lets_its_key_in_and_not_its_hash(make_gateway: MakeGateway) -> None:
    admin = {"name": "ops", "key": hash_key(BOB), "admin": True}
    gateway = make_gateway(
        keys=[{"name": "alice", "key": hash_key(ALICE)}, admin], **policy(mode="off")
    )
    with httpx.Client(base_url=gateway.url, timeout=10) as http:

        def post(key: str) -> httpx.Response:
            return http.post(
                "/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {key}"}
            )

        assert post(ALICE).status_code == 200
        assert post(BOB).status_code == 200
        assert post(hash_key(ALICE)).status_code == 401  # the stored entry is not a key
        assert post("sk-someone-else").status_code == 401
        # An admin key kept as its hash reads every key's records, as in clear.
        listed = http.get("/v1/bias/scores?key=alice", headers={"authorization": f"Bearer {BOB}"})
        assert listed.status_code == 200


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def test_hash_key_prints_the_entry_and_never_the_key() -> None:
    done = _cli("hash-key", stdin=ALICE + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == hash_key(ALICE)
    assert ALICE not in done.stdout + done.stderr
    empty = _cli("hash-key", stdin="\n")
    assert empty.returncode == 2
    assert "no key on standard input" in empty.stderr


def test_check_config_warns_about_keys_in_clear(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"keys:\n  - {{name: plain, key: {ALICE}}}\n  - {{name: hashed, key: '{hash_key(BOB)}'}}\n"
    )
    assert [key.name for key in load_settings(config).all_keys()] == ["plain", "hashed"]
    done = _cli("check-config", str(config))
    assert done.returncode == 0, done.stderr
    assert "key 'plain' is kept in clear" in done.stderr
    assert "'hashed'" not in done.stderr
    assert ALICE not in done.stdout + done.stderr  # check-config masks the keys


def test_a_reviewer_or_an_admin_may_review() -> None:
    settings = Settings.model_validate(
        {
            "keys": [
                {"name": "plain", "key": ALICE},
                {"name": "reviewer", "key": BOB, "reviewer": True},
                {"name": "ops", "key": "sk-ops-5c1d9e0a7b3f4e21", "admin": True},
            ],
            "api_keys": ["sk-generated-9a8b7c6d5e4f3a21"],
        }
    )
    may_review = {key.name: key.may_review for key in settings.all_keys()}
    assert may_review == {"plain": False, "reviewer": True, "ops": True, "key-1": False}


@pytest.mark.parametrize("capture", ["false", "true", "review"])
def test_check_config_shows_reviewers_and_warns_when_they_would_see_no_text(
    tmp_path: Path, capture: str
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"store: {{capture_content: {capture}}}\n"
        f"keys:\n  - {{name: plain, key: '{hash_key(ALICE)}'}}\n"
        f"  - {{name: labeller, key: '{hash_key(BOB)}', reviewer: true}}\n"
    )
    done = _cli("check-config", str(config))
    assert done.returncode == 0, done.stderr
    shown = {key["name"]: key["reviewer"] for key in json.loads(done.stdout)["keys"]}
    assert shown == {"plain": False, "labeller": True}
    warned = "reviewer keys (labeller) will see records without their text" in done.stderr
    assert warned is (capture == "false")  # `review` keeps the text of what they review
