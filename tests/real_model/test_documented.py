"""The commands docs/real-model.md gives a new user, run as they stand: the server from
`scripts/real-model serve`, then the shipped config/gateway.yaml pointed at it.

With each server slot's context at 2,048 tokens, the judge's prompt for an answer of a
few hundred words did not fit and every such score failed (`JudgeUnavailable`); this
asks for an answer that long and checks that its score comes back.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from testkit.servers import free_port
from testkit.waiting import answering, wait_for
from tests.support.real_model import MODEL, SLOW

pytestmark = pytest.mark.real_model  # left out of the gate: scripts/test --real-model

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "real-model.md"
HEADING = "## The gateway in front of it"
OLD_SLOT_CONTEXT = 2048  # each slot's context before it was raised


def documented_commands() -> str:
    """The first `sh` block under HEADING in docs/real-model.md, as written there."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(HEADING) :]
    found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert found, f"no sh block under {HEADING!r} in {DOC}"
    return found.group(1)


@pytest.fixture
def documented_gateway(tmp_path: Path) -> Iterator[str]:
    """The documented lines run by bash from the checkout; only where the gateway listens
    and keeps its scores is set beside them, so that the test takes no fixed port and
    writes nothing into the checkout. Yields the gateway's URL."""
    port = free_port()
    env = {
        **os.environ,
        # `bias-gateway` as the checkout's environment installs it, from this checkout.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "GATEWAY_PORT": str(port),
        "BIAS_STORE_PATH": str(tmp_path / "scores.db"),
    }
    log = tmp_path / "documented.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", documented_commands()],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # bash and the gateway it runs, stopped together
        )
    url = f"http://127.0.0.1:{port}"
    try:
        ready = answering(process, f"{url}/readyz", "the documented gateway", log.read_text)
        wait_for(ready, "the documented gateway to be ready", timeout=SLOW, interval=0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        # `serve` left the model's server running in the background, as the docs say.
        subprocess.run([str(ROOT / "scripts" / "real-model"), "stop"], check=False)


def test_the_documented_commands_score_a_long_answer(documented_gateway: str) -> None:
    client = openai.OpenAI(base_url=f"{documented_gateway}/v1", api_key="none", timeout=SLOW)
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": "Write a long story about engineers from many countries."}
        ],
        # Long enough for the judge to read the first BIAS_JUDGE_MAX_TEXT_CHARS of it.
        max_tokens=1500,
        temperature=0,
    )
    answer = raw.parse()
    assert answer.choices[0].message.content
    assert raw.headers["x-bias-status"] == "pending"  # the shipped mode: monitor
    run_id = raw.headers["x-bias-run-id"]

    with httpx.Client(base_url=documented_gateway, timeout=30) as http:

        def final() -> dict[str, Any] | None:
            body: dict[str, Any] = http.get(f"/v1/bias/scores/{run_id}").json()
            return body if body.get("status", "pending") != "pending" else None

        record = wait_for(final, f"score {run_id} to be final", timeout=SLOW, interval=0.5)
    assert record["status"] == "scored", (record["status"], record.get("status_reason"))
    result = record["result"]
    assert result["analyzeStepResult"] is not None
    assert 0 <= record["score"] <= 1
    # The premise: a judge call this answer needed would not have fit an old slot.
    steps = result["usageByStep"]
    needed = max(step["promptTokens"] + step["completionTokens"] for step in steps.values())
    assert needed > OLD_SLOT_CONTEXT, steps
