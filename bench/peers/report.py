"""Writes a run's results: `<date>.json`, a Markdown table, and a bar chart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bench.harness.report import fmt

__all__ = ["markdown", "write_all"]


def _cell_row(cell: dict[str, Any], configs: dict[str, Any]) -> str:
    load, ttft, store = cell["load"], cell["ttft"] or {}, cell["store"] or {}
    monitor = ""
    if cell["config"] == "gateway monitor" and store:
        stored = fmt(store.get("stored_p50_ms"), 1)
        monitor = (
            f"{fmt(store.get('scored_per_s'), 1)}/s, stored p50 {stored} ms,"
            f" drain {fmt(cell['drain_s'], 2)} s, {fmt(store.get('judge_calls_mean'), 2)} calls,"
            f" {fmt(store.get('judge_tokens_mean'), 0)} tok"
        )
    elif cell["config"] == "gateway enforce" and store.get("judge_ms_p50") is not None:
        monitor = f"judge p50 {fmt(store['judge_ms_p50'], 2)} ms"
    errors = load["errors"] + load["non_2xx"]
    cpu = [
        fmt(cell["server_cpu"], 0),
        fmt(cell["fake_cpu"], 0),
        fmt(cell.get("judge_cpu"), 0),
        fmt(load["cpu_percent"], 0),
        fmt(cell.get("other_cpu"), 0),
    ]
    columns = [
        cell["config"],
        cell["workload"],
        str(cell["concurrency"]),
        fmt(load["rps"], 0),
        fmt(load["p50_ms"], 2),
        fmt(load["p90_ms"], 2),
        fmt(load["p99_ms"], 2),
        fmt(ttft.get("ttft_p50_ms"), 2),
        fmt(cell["peak_rss_mb"], 0),
        " / ".join(cpu),
        str(errors),
        monitor,
    ]
    return "| " + " | ".join(columns) + " |"


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown: the main table, unavailable peers, memory, and targets."""
    meta = results["meta"]
    lines = [
        f"# bench {meta['date']}",
        "",
        f"{meta['machine']}. wrk, 1 thread, {meta['plan']['duration']:g} s per cell after a"
        f" {meta['plan']['warmup']:g} s warm-up; streams have {meta['chunks']} content chunks;"
        f" TTFT from an aiohttp client over {meta['plan']['ttft_duration']:g} s."
        f" CPU is in % of one core; `other` is busy CPU that was none of ours."
        f" Whole run: {results['elapsed_s']:g} s. Code: {meta['source']['commit']}"
        + (
            f" plus uncommitted {', '.join(meta['source']['uncommitted'])}"
            if meta["source"]["uncommitted"]
            else ""
        )
        + ".",
        "",
        "| config | workload | c | req/s | p50 ms | p90 ms | p99 ms | TTFT p50 ms | peak RSS MB"
        " | CPU % server / fake / judge / wrk / other | errors | scoring |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_cell_row(cell, results["configs"]) for cell in results["cells"]]
    for name, config in results["configs"].items():
        if config.get("unavailable"):
            lines.append(f"| {name} | unavailable: {config['unavailable']} |" + " |" * 10)
    lines += ["", "Streams byte-identical to what the fake sent:"]
    for name, config in results["configs"].items():
        if "frames_identical" in config:
            sizes = config["stream_bytes"]
            lines.append(
                f"- {name}: {'yes' if config['frames_identical'] else 'no'}"
                f" ({sizes['client']} of {sizes['upstream']} bytes)"
            )
    memory = results.get("memory")
    if memory:
        lines += [
            "",
            f"Memory (gateway off, fresh process): RSS {memory['rss_mb'][0]} MB after"
            f" {memory['requests'][0]} requests, {memory['rss_mb'][1]} MB after"
            f" {memory['requests'][1]} ({memory['ok'][1]} answered 200).",
        ]
    cache = results.get("cache")
    if cache:
        lines += [
            "",
            f"Score cache (gateway monitor, c=32, every response the same text):"
            f" {cache['load']['rps']:.0f} req/s, {cache['hits']} of {cache['scored']} scored"
            f" responses were cache hits, queue drained {fmt(cache['drain_s'], 2)} s after.",
        ]
    paced = results.get("paced")
    if paced:
        rate = results["meta"]["plan"].get("paced_rate")
        lines += [
            "",
            f"Paced, c=1 at {fmt(rate, 0)} requests/s (one connection, `bench/harness/client.py`;"
            " direct and fresh off and monitor gateways side by side, taking turns; medians"
            " of the rounds), ms:",
            "",
            "| config | p50 | p99 | stream TTFT p50 | p50 per round | requests | errors |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, probe in paced.items():
            plain, stream = probe["non-stream"], probe["stream"]
            lines.append(
                f"| {name} | {fmt(plain['p50_ms'], 3)} | {fmt(plain['p99_ms'], 3)}"
                f" | {fmt(stream['ttft_p50_ms'], 3)}"
                f" | {', '.join(fmt(value, 2) for value in plain.get('round_p50_ms', []))}"
                f" | {plain['requests'] + stream['requests']}"
                f" | {plain['errors'] + stream['errors']} |"
            )
    lines += ["", "## Targets", "", "| target | wanted | measured | |", "|---|---|---|---|"]
    for target in results["targets"]:
        lines.append(
            f"| {target['name']} | {target['wanted']} | {target['measured']} | {target['status']} |"
        )
    return "\n".join(lines) + "\n"


def _chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    workloads = [("non-stream", 1), ("non-stream", 32), ("stream", 1), ("stream", 32)]
    configs = [name for name, data in results["configs"].items() if not data.get("unavailable")]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5))
    width = 0.8 / max(1, len(configs))
    for metric, axis, title in (
        ("rps", axes[0], "throughput (req/s, higher is better)"),
        ("p99_ms", axes[1], "p99 latency (ms, log scale, lower is better)"),
    ):
        for index, config in enumerate(configs):
            values = []
            for workload, concurrency in workloads:
                cells = [
                    c
                    for c in results["cells"]
                    if (c["config"], c["workload"], c["concurrency"])
                    == (config, workload, concurrency)
                ]
                values.append(cells[0]["load"][metric] if cells else 0)
            positions = [slot + index * width for slot in range(len(workloads))]
            axis.bar(positions, values, width, label=config)
        axis.set_xticks([slot + width * (len(configs) - 1) / 2 for slot in range(len(workloads))])
        axis.set_xticklabels([f"{w}\nc={c}" for w, c in workloads])
        axis.set_title(title)
        if metric == "p99_ms":
            axis.set_yscale("log")
        axis.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"bias-gateway bench {results['meta']['date']} ({results['meta']['machine']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_all(results: dict[str, Any], out_dir: Path) -> list[Path]:
    """Write `<date>.{json,md,png}` and copy them to `latest.*`; return the dated paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = results["meta"]["date"]
    paths = [out_dir / f"{stem}.json", out_dir / f"{stem}.md", out_dir / f"{stem}.png"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n")
    paths[1].write_text(markdown(results))
    _chart(results, paths[2])
    for path in paths:
        shutil.copyfile(path, out_dir / f"latest{path.suffix}")
    return paths
