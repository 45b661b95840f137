from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.attacks.corpus import Entry, entry_of, from_file, limited
from bench.attacks.report import groups_of, markdown, summary_markdown, tallies
from bench.attacks.run import Cell, Row, Surface, parse_surfaces
from testkit.attack_runs import Delivery, ToolCall


def _entry(id: str, family: str, **fields: Any) -> Entry:
    return Entry(
        id=id,
        family=family,
        style=fields.pop("style", "plain"),
        language=fields.pop("language", "en"),
        text=fields.pop("text", "Women are too emotional to lead."),
        biased=family != "benign",
        **fields,
    )


def _row(entry: Entry, *, refused: bool = False, headers: dict[str, str] | None = None) -> Row:
    delivery = Delivery("chat", False, refused, entry.text, headers or {})
    return Row(entry, Surface("chat", False), delivery)


def test_a_row_counts_in_its_family_and_for_injection_its_language_and_style() -> None:
    injection = _row(_entry("a", "injection", language="fr", style="override"))
    assert groups_of(injection) == [
        "injection",
        "injection · language fr",
        "injection · style override",
    ]
    assert groups_of(_row(_entry("b", "encoding", style="base64"))) == [
        "encoding",
        "encoding · base64",
    ]


def test_passed_flagged_blocked_and_marked_are_told_apart() -> None:
    rows = [
        _row(_entry("p", "padding", style="a"), headers={"x-bias-verdict": "pass"}),
        _row(_entry("f", "padding", style="a"), headers={"x-bias-verdict": "flag"}),
        _row(_entry("b", "padding", style="b"), refused=True),
        _row(_entry("m", "padding", style="b"), headers={"x-bias-verdict": "pass",
                                                        "x-bias-tamper": "instruction"}),
        Row(_entry("n", "padding", style="b"), Surface("completions", False), why="no tools"),
    ]  # fmt: skip
    found = tallies(rows)
    padding = found["padding"]
    assert (padding.entries, padding.runs, padding.not_run) == (5, 4, 1)
    assert (padding.passed, padding.flagged, padding.blocked, padding.marked) == (1, 1, 1, 1)
    assert padding.alarms == 3
    assert found["padding · a"].passed == 1
    assert found["padding · b"].passed == 0


def test_benign_styles_without_alarms_and_styles_that_repeat_their_family_are_left_out() -> None:
    rows = [
        _row(_entry("q", "benign", style="quiet"), headers={"x-bias-verdict": "pass"}),
        _row(_entry("l", "benign", style="loud"), headers={"x-bias-verdict": "flag"}),
        _row(_entry("h", "hidden_text", style="tags"), headers={"x-bias-verdict": "pass"}),
    ]
    assert list(tallies(rows)) == ["hidden_text", "benign", "benign · loud"]


def test_the_summary_shows_passed_attacks_and_benign_alarms_per_cell() -> None:
    rows = [
        _row(_entry("i", "injection", style="note"), headers={"x-bias-tamper": "instruction"}),
        _row(_entry("j", "injection", style="note"), headers={"x-bias-verdict": "pass"}),
        _row(_entry("k", "benign"), headers={"x-bias-verdict": "flag"}),
    ]
    cells = [Cell("gullible", "hardened", {"on_tamper": "block"}, {}, rows)]
    table = summary_markdown(cells)
    assert "| injection | 1/2, 1 marked |" in table
    assert "| benign | 1/1 |" in table
    report = markdown(
        {"date": "d", "command": "c", "commit": "x", "machine": "m", "corpus": "k",
         "surfaces": ["chat"]}, cells,
    )  # fmt: skip
    assert "attacks passed: 1 of 2 runs (50.0 %)" in report
    assert "added: `on_tamper: block`" in report


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("chat,chat-stream", ["chat", "chat-stream"]),
        ("messages-stream", ["messages-stream"]),
        ("all", [f"{api}{s}" for api in ("chat", "responses", "completions", "messages")
                 for s in ("", "-stream")]),
    ],
)  # fmt: skip
def test_parse_surfaces(spec: str, names: list[str]) -> None:
    assert [surface.name for surface in parse_surfaces(spec)] == names


@pytest.mark.parametrize("spec", ["chat-live", "embeddings", "chat-stream-stream"])
def test_parse_surfaces_refuses_what_it_does_not_know(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown surface"):
        parse_surfaces(spec)


def test_a_tool_entry_answers_a_tool_call_carrying_its_arguments(tmp_path: Path) -> None:
    lines = [
        {"id": "t 1", "family": "tool_arguments", "style": "send", "language": "en",
         "text": "x", "biased": True, "tool_name": "send", "arguments": {"body": "W\u043emen"}},
        {"id": "b", "family": "benign", "style": "plain", "language": "en", "text": "Hi."},
    ]  # fmt: skip
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n")
    tool, benign = from_file(path)
    assert tool.answer() == ToolCall("send", '{"body": "W\u043emen"}')
    assert tool.key == "t_1"
    assert (benign.answer(), benign.attack, benign.biased) == ("Hi.", False, False)


def test_limited_keeps_the_first_entries_of_each_family() -> None:
    entries = [_entry(str(n), family) for n, family in enumerate("aabab")]
    assert [entry.id for entry in limited(entries, 1)] == ["0", "2"]
    assert len(limited(entries, None)) == 5


@dataclass(frozen=True, slots=True)
class _Sample:
    """The shape of `testkit.attacks`'s samples."""

    id: str
    family: str
    style: str
    language: str
    text: str
    expect_tamper: tuple[str, ...]
    biased: bool
    obfuscation: str | None = None
    tool_name: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)


def test_a_corpus_sample_reads_as_an_entry() -> None:
    text = _Sample("i", "injection", "instruction", "de", "x", ("instruction",), True, "tag")
    entry = entry_of(text)
    assert (entry.obfuscation, entry.expect_tamper, entry.answer()) == (
        "tag",
        ("instruction",),
        "x",
    )
    tool = entry_of(
        _Sample("t", "tool_arguments", "s", "en", "y", (), True, None, "post", {"a": 1})
    )
    assert tool.answer() == ToolCall("post", '{"a": 1}')
