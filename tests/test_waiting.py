"""`answering`: the wait for a server process, which fails at once if it exits."""

from __future__ import annotations

import subprocess
import sys

import pytest

from testkit.fake_openai import FakeOpenAI
from testkit.waiting import answering, wait_for


def test_a_server_that_exited_fails_the_wait_at_once_with_its_output() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "print('port in use')"], stdout=subprocess.PIPE, text=True
    )
    process.wait()
    check = answering(process, "http://127.0.0.1:9/", "the server", lambda: "port in use")
    with pytest.raises(RuntimeError, match="the server exited with 0: port in use"):
        wait_for(check, "never", timeout=5)


def test_a_live_process_waits_until_the_url_answers(fake_openai: FakeOpenAI) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    try:
        assert answering(process, f"{fake_openai.base_url}/models", "x", str)() is True
        assert answering(process, "http://127.0.0.1:9/", "x", str)() is False  # refused
    finally:
        process.kill()
        process.wait()
