"""A gateway under real uvicorn for tests: `RunningGateway` and its clients, the settings
that point it at the fake upstream and judge, the default policy's fields, and traffic
helpers. The `make_gateway` fixture (tests/gateway/conftest.py) starts them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai

from gateway.config import Settings
from gateway.runtime.resources import Gateway
from testkit.fake_openai import JUDGE_MODEL, FakeOpenAI
from testkit.servers import ServerThread
from testkit.waiting import wait_for


@dataclass
class RunningGateway:
    server: ServerThread
    app: Any
    settings: Settings

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def state(self) -> Gateway:
        state: Gateway = self.app.state.gateway
        return state

    def client(self, api_key: str = "sk-client", **options: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=api_key, max_retries=0, **options)

    def async_client(self, api_key: str = "sk-client", **options: Any) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=f"{self.url}/v1", api_key=api_key, max_retries=0, **options
        )

    def http(self, api_key: str | None = None) -> httpx.Client:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def wait_for_score(
        self,
        run_id: str,
        *,
        timeout: float = 10,
        api_key: str | None = None,
        reason: bool = False,
    ) -> dict[str, Any]:
        """Poll the score endpoint, as a client would, until the status is final.

        With `reason`, also until a deferred explanation is no longer pending.
        """
        path = f"/v1/bias/scores/{run_id}"
        with self.http(api_key) as http:

            def final() -> dict[str, Any] | None:
                response = http.get(path)
                body = response.json() if response.status_code == 200 else {}
                done = body.get("status", "pending") != "pending"
                if done and not (reason and body.get("reason_status") == "pending"):
                    return dict(body)
                return None

            return wait_for(
                final, lambda: f"score {run_id} to be final: {http.get(path).text}", timeout=timeout
            )


def settings_for(fake: FakeOpenAI, tmp_path: Path, **overrides: Any) -> Settings:
    """Settings pointing the upstream and the judge at the fake; `overrides` merge on top."""
    data: dict[str, Any] = {
        "upstream": {"base_url": fake.base_url, "api_key": "sk-upstream-secret", "timeout": 10},
        # Anthropic's base URL has no /v1: the fake serves /v1/messages under its root.
        "anthropic": {
            "base_url": fake.base_url.removesuffix("/v1"),
            "api_key": "sk-ant-upstream-secret",
            "timeout": 10,
        },
        "judge": {"model": JUDGE_MODEL, "timeout": 5, "max_retries": 0},
        "store": {"path": str(tmp_path / "scores.db")},
        "queue": {"size": 100, "drain_deadline": 5},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return Settings.model_validate(data)


def policy(**fields: Any) -> dict[str, Any]:
    return {"policies": {"default": fields}}


async def send(gateway: RunningGateway, api_key: str, count: int) -> list[tuple[str, str]]:
    """`count` monitored chats at once: each answer's run id and text."""
    async with gateway.async_client(api_key) as client:
        answers = await asyncio.gather(
            *(
                client.chat.completions.with_raw_response.create(
                    model="m", messages=[{"role": "user", "content": "Hi"}]
                )
                for _ in range(count)
            )
        )
    return [
        (answer.headers["x-bias-run-id"], answer.parse().choices[0].message.content or "")
        for answer in answers
    ]
