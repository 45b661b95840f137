"""The suite's cells: one enforcing gateway per judge and config, every entry of the
corpus sent through it on every surface asked for.

Processes: the judges (the demo judge, `gateway.demo.server`, and the gullible
judge, `testkit.gullible_judge`) and each cell's gateway run as processes of
their own (`bench.harness.procs`); the fake upstream (`testkit.attack_runs.AnswerBook`)
runs in a thread of the bench, since the bench files every entry's answer in it.

Controls: an attack with a `plain` text (`Entry.control`) also sends that text
through each cell once, as a whole chat answer. An attack that passed is then a
defence failure when the cell caught its plain text, and a recall miss when the cell
passed that too (the judge does not call the content biased, defences or not).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from bench.attacks.corpus import Entry
from bench.harness.gateways import gateway_config, start_gateway
from bench.harness.procs import Processes, free_port
from testkit.attack_runs import AnswerBook, Clients, Delivery, ToolCall, send
from testkit.servers import ServerThread

__all__ = [
    "CONFIGS",
    "CONTROL_SURFACE",
    "JUDGES",
    "Cell",
    "Row",
    "Split",
    "Surface",
    "accepted",
    "parse_surfaces",
    "run",
]

JUDGES = ("demo", "gullible")
# The shipped policy, and the hardening the issue recommends for enforce. A gateway that
# does not know a key (main before issue 30) runs the cell without it, and says so.
ENFORCE: dict[str, Any] = {"mode": "enforce", "stream_policy": "buffer"}
CONFIGS: dict[str, dict[str, Any]] = {
    "shipped": {},
    "hardened": {"on_tamper": "block", "block_biased_opinions": 1},
}
_APIS = ("chat", "responses", "completions", "messages")


@dataclass(frozen=True)
class Surface:
    api: str
    stream: bool

    @property
    def name(self) -> str:
        return f"{self.api}-stream" if self.stream else self.api


# A control asks what the judge makes of the content, so one surface does for all.
CONTROL_SURFACE = Surface("chat", stream=False)


class Split(StrEnum):
    """Why an attack that passed passed, by its control (`Row.split`)."""

    RECALL = "recall"  # the cell passed the plain text too
    DEFENCE = "defence"  # the cell caught the plain text: a defence let the attack by


def parse_surfaces(spec: str) -> list[Surface]:
    """`chat,chat-stream` or `all` (every API, whole and streamed)."""
    if spec.strip() == "all":
        return [Surface(api, stream) for api in _APIS for stream in (False, True)]
    surfaces = []
    for name in (part.strip() for part in spec.split(",") if part.strip()):
        api, _, stream = name.partition("-")
        if api not in _APIS or stream not in ("", "stream"):
            raise ValueError(f"unknown surface {name!r}: one of {', '.join(_APIS)}, +'-stream'")
        surfaces.append(Surface(api, stream == "stream"))
    return surfaces


@dataclass
class Row:
    """One entry sent on one surface; `delivery` is None for a row not run (`why`)."""

    entry: Entry
    surface: Surface
    delivery: Delivery | None = None
    why: str = ""
    control: Row | None = None  # the entry's plain text through the same cell

    @property
    def judge_error(self) -> bool:
        """Delivered unscored after a judge error: neither passed nor caught."""
        return self.delivery is not None and (self.delivery.record or {}).get("status") == "error"

    @property
    def passed(self) -> bool:
        return self.delivery is not None and not self.judge_error and self.delivery.passed

    @property
    def plain_caught(self) -> bool | None:
        """Whether the cell flagged, blocked or marked the entry's plain text; None with
        no control, or one not run or not scored."""
        control = self.control
        if control is None or control.delivery is None or control.judge_error:
            return None
        return not control.passed

    @property
    def split(self) -> Split | None:
        """For an attack that passed and has a control: recall miss or defence failure."""
        caught = self.plain_caught
        if not self.passed or caught is None:
            return None
        return Split.DEFENCE if caught else Split.RECALL

    def facts(self) -> dict[str, Any]:
        record = (self.delivery.record or {}) if self.delivery else {}
        return {
            "id": self.entry.id,
            "family": self.entry.family,
            "style": self.entry.style,
            "language": self.entry.language,
            "surface": self.surface.name,
            "not_run": self.why or None,
            "refused": self.delivery.refused if self.delivery else None,
            "verdict": self.delivery.verdict if self.delivery else None,
            "tamper": self.delivery.tamper if self.delivery else None,
            "status": record.get("status"),
            "skip_reason": (
                self.delivery.headers.get("x-bias-skip-reason") if self.delivery else None
            ),
            "score": record.get("score"),
            "plain_caught": self.plain_caught,
            "split": self.split.value if self.split else None,
        }


@dataclass
class Cell:
    judge: str
    config: str
    applied: dict[str, Any]  # the config's keys this gateway took
    refused: dict[str, str]  # those it refused, with its one-line reason
    rows: list[Row] = field(default_factory=list)
    controls: list[Row] = field(default_factory=list)  # each attack's plain text, once


def _settings(
    work: Path, name: str, upstream: str, judge: tuple[str, str], policy: dict[str, Any]
) -> dict[str, Any]:
    config = gateway_config(upstream, upstream, store=work / f"{name}.db")
    config["upstream"]["timeout"] = 60
    config["anthropic"] = {"base_url": upstream, "api_key": "sk-ant-bench", "timeout": 60}
    config["judge"] = {
        "base_url": judge[0],
        "model": judge[1],
        "api_key": "sk-judge",
        "timeout": 30,
    }
    config["policies"]["default"] = {**ENFORCE, **policy}
    return config


def accepted(work: Path, wanted: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The keys of `wanted` that `bias-gateway check-config` accepts in a policy, each
    tried alone, and the refused ones with the gateway's one-line reason."""
    taken: dict[str, Any] = {}
    refused: dict[str, str] = {}
    for key, value in wanted.items():
        settings = _settings(
            work, f"check-{key}", "http://127.0.0.1:9", ("http://x", "m"), {key: value}
        )
        config = work / f"check-{key}.yaml"
        config.write_text(yaml.safe_dump(settings, allow_unicode=True))
        done = subprocess.run(
            [sys.executable, "-m", "gateway", "check-config", str(config)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if done.returncode == 0:
            taken[key] = value
        else:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            last = lines[-1] if lines else f"exit status {done.returncode}"
            refused[key] = last.rsplit(".yaml: ", 1)[-1]  # the field and why, not the path
    return taken, refused


def _start_judge(procs: Processes, work: Path, which: str) -> tuple[str, str]:
    """Start a judge process; its base URL and the model name to ask it for."""
    port = free_port()
    if which == "demo":
        argv = ["-m", "uvicorn", "gateway.demo.server:demo_app", "--factory"]
        argv += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        server = procs.start("judge-demo", [sys.executable, *argv], port=port,
                             ready_path="/model/v1/models", log_dir=work)  # fmt: skip
        return f"{server.url}/judge/v1", "demo-judge"
    argv = ["-m", "testkit.gullible_judge", "--port", str(port)]
    server = procs.start("judge-gullible", [sys.executable, *argv], port=port,
                         ready_path="/v1/models", log_dir=work)  # fmt: skip
    return f"{server.url}/v1", "gullible-judge"


def _send(clients: Clients, row: Row) -> Row:
    if row.entry.tool_name is not None and row.surface.api == "completions":
        row.why = "legacy Completions has no tool calls"
        return row
    row.delivery = send(clients, row.surface.api, row.entry.key, stream=row.surface.stream)
    return row


def _run_cell(
    clients: Clients, rows: list[Row], label: str, concurrency: int,
    progress: Callable[[str], None],
) -> list[Row]:  # fmt: skip
    lock = threading.Lock()
    done = [0]

    def one(row: Row) -> Row:
        _send(clients, row)
        with lock:
            done[0] += 1
            progress(f"{label} {done[0]}/{len(rows)}")
        return row

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, rows))


def _answers(entries: Sequence[Entry]) -> dict[str, str | ToolCall]:
    """What the fake upstream answers, by key; two entries may not share one."""
    answers: dict[str, str | ToolCall] = {}
    for entry in entries:
        if entry.key in answers:
            raise ValueError(f"two entries answer under the key {entry.key!r}: rename one")
        answers[entry.key] = entry.answer()
    return answers


def _rows(entries: Sequence[Entry], surfaces: Sequence[Surface]) -> tuple[list[Row], list[Row]]:
    """A cell's rows (each entry on each surface), and its controls, linked to them."""
    controls = {}
    for entry in entries:
        control = entry.control()
        if control is not None:
            controls[entry.id] = Row(control, CONTROL_SURFACE)
    rows = [
        Row(entry, surface, control=controls.get(entry.id))
        for entry in entries
        for surface in surfaces
    ]
    return rows, list(controls.values())


def run(
    entries: Sequence[Entry],
    judges: Sequence[str],
    surfaces: Sequence[Surface],
    work: Path,
    *,
    concurrency: int = 4,
    progress: Callable[[str], None] = lambda line: None,
) -> list[Cell]:
    """Every cell (judge x config), each with a row per entry and surface, and a
    control per attack with a plain text."""
    book = AnswerBook()
    upstream = ServerThread(book.app).start()
    book.base_url = f"{upstream.url}/v1"
    controls = [control for entry in entries if (control := entry.control()) is not None]
    book.answers = _answers([*entries, *controls])
    configs = {config: accepted(work, wanted) for config, wanted in CONFIGS.items()}
    cells: list[Cell] = []
    try:
        with Processes() as procs:
            for which in judges:
                judge = _start_judge(procs, work, which)
                for config, (taken, refused) in configs.items():
                    name = f"gateway-{which}-{config}"
                    settings = _settings(work, name, upstream.url, judge, taken)
                    gateway = start_gateway(procs, name, settings, log_dir=work)
                    clients = Clients(gateway.url)
                    rows, checks = _rows(entries, surfaces)
                    cell = Cell(which, config, taken, refused, rows, checks)
                    label = f"{which}/{config}"
                    _run_cell(clients, [*rows, *checks], label, concurrency, progress)
                    clients.close()
                    procs.stop(gateway)
                    cells.append(cell)
    finally:
        upstream.stop()
    return cells
