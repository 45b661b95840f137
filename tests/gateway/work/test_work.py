"""`gateway.work.payload`: the work a pending record carries, written and read back. Pure."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanContext, TraceFlags

from gateway.config import Settings
from gateway.scoring.request import ScoreRequest, job_from, work_for
from gateway.store import ScoreRecord
from gateway.wire.tools import ToolArgument
from gateway.work.payload import WORK_VERSION, WorkError, worker_id

SETTINGS = Settings.model_validate(
    {"policies": {"default": {"mode": "monitor"}, "strict": {"flag_threshold": 0.1}}}
)
SPAN = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0xB7AD6B7169203331,
    is_remote=False,
    trace_flags=TraceFlags(1),
)


def request(**fields: Any) -> ScoreRequest:
    defaults: dict[str, Any] = {
        "run_id": "r1",
        "policy": SETTINGS.policies["strict"],
        "policy_name": "strict",
        "mode": "monitor",
        "model": "gpt-x",
        "api": "responses",
        "key_name": "team",
        "stream": True,
        "truncated": True,
        "request_id": "req-1",
        "response_id": "resp_1",
        "chat_span": SPAN,
        "created_at": 12.5,
    }
    return ScoreRequest(**{**defaults, **fields})


def stored(job: ScoreRequest, work: object) -> ScoreRecord:
    """The pending record the store would hand a claimer for `job`."""
    return ScoreRecord(
        run_id=job.run_id,
        status="pending",
        created_at=job.created_at,
        model=job.model,
        api=job.api,
        key_name=job.key_name,
        mode=job.mode,
        stream=job.stream,
        partial=job.partial,
        truncated=job.truncated,
        request_id=job.request_id,
        response_id=job.response_id,
        work=work,  # type: ignore[arg-type]
    )


def test_a_job_survives_the_trip_through_the_store() -> None:
    original = request()
    work = work_for(original, ["Texte à juger.", "第二"])
    assert work == {
        "v": WORK_VERSION,
        "texts": ["Texte à juger.", "第二"],
        "policy": "strict",
        "trace": {
            "trace_id": f"{SPAN.trace_id:032x}",
            "span_id": f"{SPAN.span_id:016x}",
            "flags": 1,
        },
    }
    job, texts = job_from(stored(original, work), SETTINGS)
    assert texts == ["Texte à juger.", "第二"]
    assert job.policy == SETTINGS.policies["strict"]
    assert job.policy_name == "strict"
    for name in (
        "run_id",
        "mode",
        "model",
        "api",
        "key_name",
        "stream",
        "truncated",
        "request_id",
        "response_id",
        "created_at",
    ):
        assert getattr(job, name) == getattr(original, name), name
    # The evaluation span joins the request's trace, from another process.
    assert job.chat_span is not None
    assert (job.chat_span.trace_id, job.chat_span.span_id) == (SPAN.trace_id, SPAN.span_id)
    assert job.chat_span.is_remote
    assert job.chat_span.trace_flags.sampled


def test_no_trace_context_is_written_without_a_span() -> None:
    work = work_for(request(chat_span=None), ["t"])
    assert "trace" not in work
    job, _ = job_from(stored(request(), work), SETTINGS)
    assert job.chat_span is None


def test_the_tool_arguments_among_the_texts_survive_the_trip() -> None:
    arguments = (ToolArgument("send", "body", "Hi all"), ToolArgument("send", "", "raw"))
    work = work_for(request(tool_arguments=arguments), ["Sent."])
    assert work["tool_arguments"] == [["send", "body", "Hi all"], ["send", "", "raw"]]
    job, _ = job_from(stored(request(), work), SETTINGS)
    assert job.tool_arguments == arguments
    assert "tool_arguments" not in work_for(request(), ["t"])  # none: as before


@pytest.mark.parametrize("damaged", [[["send", "body"]], [["send", "body", 3]], "send", {}])
def test_damaged_tool_arguments_are_left_out_not_fatal(damaged: object) -> None:
    work = {"v": WORK_VERSION, "texts": ["t"], "tool_arguments": damaged}
    job, texts = job_from(stored(request(), work), SETTINGS)
    assert (texts, job.tool_arguments) == (["t"], ())


def test_a_policy_this_process_lacks_falls_back_to_its_default() -> None:
    work = work_for(request(policy_name="elsewhere"), ["t"])
    job, _ = job_from(stored(request(), work), SETTINGS)
    assert job.policy_name == "default"
    assert job.policy == SETTINGS.policies["default"]


@pytest.mark.parametrize(
    ("work", "message"),
    [
        (None, "unreadable work"),
        ({"v": 99, "texts": ["t"]}, "version 99"),
        ({"v": WORK_VERSION}, "no texts"),
        ({"v": WORK_VERSION, "texts": []}, "no texts"),
        ({"v": WORK_VERSION, "texts": ["ok", 3]}, "no texts"),
        ("not a dict", "unreadable work"),
    ],
)
def test_unreadable_work_raises_naming_the_run(work: object, message: str) -> None:
    with pytest.raises(WorkError, match=message) as raised:
        job_from(stored(request(), work), SETTINGS)
    assert "r1" in str(raised.value)


@pytest.mark.parametrize(
    "trace",
    [
        {"trace_id": "zz", "span_id": "01", "flags": 1},
        {"trace_id": "0" * 32, "span_id": "0" * 16},  # the invalid, all-zero context
        {"span_id": "01"},
        "0af7651916cd43dd8448eb211c80319c",
    ],
)
def test_a_damaged_trace_context_is_left_out_not_fatal(trace: object) -> None:
    work = {"v": WORK_VERSION, "texts": ["t"], "policy": "default", "trace": trace}
    job, texts = job_from(stored(request(), work), SETTINGS)
    assert texts == ["t"]
    assert job.chat_span is None


def test_worker_ids_differ_within_one_process() -> None:
    first, second = worker_id(), worker_id()
    assert first != second
    assert first.split(":")[:2] == second.split(":")[:2]  # host and pid
