"""The soak's report: `soak-<date>.{md,json,png}`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.harness.report import fmt, table
from bench.soak.figures import RESULTS, checks, targets
from bench.soak.traffic import KINDS, MISHAPS

__all__ = ["markdown", "write_chart", "write_results"]


def _cycle_rows(results: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for cycle in results["cycles"]:
        start = cycle["start"]
        stop = start + results["plan"]["burst"] + results["plan"]["gap"]
        mine = [s for s in results["samples"] if start <= s["t"] < stop]
        end = next((s for s in reversed(mine) if s["gap_end"]), None)
        loads = [s["load1"] for s in mine]
        others = [o for t, _, o in results["machine_cpu"][1:] if start <= t < stop]
        counts = cycle["results"]
        rows.append(
            [
                cycle["cycle"],
                f"{start / 60:.1f}",
                cycle["sent"],
                *(counts.get(result, 0) for result in RESULTS),
                cycle["p50_ms"],
                cycle["p99_ms"],
                cycle["reads_p99_ms"],
                max((s["rss_mb"] for s in mine), default=None),
                end and end["rss_mb"],
                max((s["fds"] for s in mine), default=None),
                end and end["fds"],
                max((s["tasks"] or 0 for s in mine), default=None),
                end and end["tasks"],
                max((s["queue_depth"] or 0 for s in mine), default=None),
                end and end["store_mb"],
                round(sum(loads) / len(loads), 2) if loads else None,
                round(sum(others) / len(others)) if others else None,
            ]
        )
    return rows


def markdown(results: dict[str, Any]) -> str:
    plan, meta, store = results["plan"], results["meta"], results["store"]
    windows = results["windows"]
    loads = [s["load1"] for s in results["samples"]]
    others = [others for _, _, others in results["machine_cpu"][1:]]
    mishaps = ", ".join(f"{name} {share:.0%}" for name, share in MISHAPS.items())
    lines = [
        f"# Soak, {meta['date']}",
        "",
        f"{meta['machine']}; commit {meta['commit']}. One `bias-gateway serve` (one worker,"
        " SQLite store in a temporary folder, `--log-level warning`, the shipped defaults"
        " otherwise) in front of two `bench.fakes.paced` processes, the upstream and the judge.",
        "",
        f"**The machine was shared**: other sessions ran tests meanwhile. Load average (1 min)"
        f" during the run: min {min(loads):g}, mean {sum(loads) / len(loads):.2f}, max"
        f" {max(loads):g}; CPU used by processes other than the soak's own: mean"
        f" {sum(others) / max(1, len(others)):.0f} %, max {max(others, default=0):.0f} % of one"
        " core (the per-cycle table and the plot show when). CPU of the soak's own"
        " processes, % of one core over the run: "
        + ", ".join(f"{name} {share:g}" for name, share in results.get("cpu", {}).items())
        + _quiet(meta)
        + ".",
        "",
        f"- **Load**: {plan['duration'] / 60:g} min, in cycles of {plan['burst']:g} s at"
        f" {plan['rate']:g} req/s (open loop: one request every 1/rate s on its own task,"
        f" whatever the answers do) and {plan['gap']:g} s idle; {results['sent']} requests."
        f" Sampled every {plan['sample_every']:g} s and 0.5 s before each gap ends.",
        "- **Mix** (by weight): "
        + ", ".join(f"{kind.name} {kind.weight:g}" for kind in KINDS)
        + f". Of model requests: {mishaps} (the last two on streams only).",
        "- **Keys**: monitor; enforce (streams buffered, blocks 422); enforce with live"
        " streams (`stream_policy: passthrough`); admin (searches and stats). Lookups use"
        " the key that made the request.",
        f"- **Fakes**: upstream first byte after {plan['ttft']:g} s, then {plan['chunks']}"
        f" pieces {plan['chunk_interval']:g} s apart (a whole answer after the same"
        f" total); judge {plan['judge_latency']:g} s ± {plan['jitter']:.0%} a call, every"
        f" {plan['judge_429_every']}th call a 429 with `x-ratelimit-reset-requests: 20ms`.",
        f"- **Latency** is each request's, to the last byte; the p99 figures are of model"
        f" answers (ok, blocked, upstream 500), not of streams cut on purpose; reads"
        f" (lookups, searches, stats) are shown apart. Warm-up: {plan['warmup_s']:.0f} s.",
        "",
        "## Targets",
        "",
        *table(
            ["target", "wanted", "measured", ""], ([t[k] for k in t] for t in results["targets"])
        ),
        "",
        f"The reads (lookups, searches, stats), which the p99 target leaves out: p99"
        f" {fmt(windows['first_reads_p99_ms'])} ms in the first {windows['seconds']:g} s,"
        f" {fmt(windows['last_reads_p99_ms'])} ms in the last (per cycle below).",
        "",
        *(
            [f"![RSS, descriptors, tasks, p99, backlog and load]({results['chart']})", ""]
            if results.get("chart")
            else []
        ),
        "## Checks",
        "",
        *table(["check", "wanted", "measured", ""], ([c[k] for k in c] for c in results["checks"])),
        "",
        f"Records at the end: {', '.join(f'{k} {v}' for k, v in sorted(store['statuses'].items()))}"
        "."
        f" Judge: {results['judge']}. Gateway peak RSS (VmHWM) {results['peak_rss_mb']} MB.",
        "",
    ]
    if results["unexpected"]:
        lines += ["Unexpected answers (the commonest):", ""]
        lines += [f"- {count} x {what}" for what, count in results["unexpected"].items()]
        lines.append("")
    lines += ["## By kind", ""]
    lines += table(
        ["kind", "sent", *RESULTS, "p50 ms", "p99 ms"],
        (
            [
                name,
                row["sent"],
                *(row["results"].get(r, 0) for r in RESULTS),
                row["p50_ms"],
                row["p99_ms"],
            ]
            for name, row in results["by_kind"].items()
        ),
    )
    lines += [
        "",
        "## Per cycle (one burst and its gap)",
        "",
        "`end`: the sample 0.5 s before the gap ends. `queue`: monitor jobs waiting"
        " (`bias_scoring_queue_depth`); `load`: the machine's 1-minute load average, and"
        " `others %`: the CPU of processes not the soak's, in % of one core, means of"
        " the cycle's samples.",
        "",
    ]
    lines += table(["#", "min", "sent", *RESULTS, "p50 ms", "p99 ms", "reads p99", "RSS MB peak",
         "RSS end", "fds peak", "fds end", "tasks peak", "tasks end", "queue peak",
         "store MB", "load", "others %"], _cycle_rows(results))  # fmt: skip
    log = results["gateway_log"]
    lines += ["", "## Gateway log", ""]
    lines += [f"- {count} x {message}" for message, count in log["messages"].items()] or ["- none"]
    lines += [f"- tracebacks: {log['tracebacks']}", ""]
    lines += ["<details><summary>Every sample</summary>", ""]
    fields = ["t", "phase", "rss_mb", "fds", "tasks", "cpu_percent", "queue_depth", "scorings",
              "judge_in_flight", "store_mb", "wal_mb", "load1", "client_in_flight", "requests",
              "p50_ms", "p99_ms", "served_mean_ms", "scrape_ms", "lag_ms"]  # fmt: skip
    lines += table(
        fields,
        (
            [s[f] if f != "phase" else s[f] + (" end" if s["gap_end"] else "") for f in fields]
            for s in results["samples"]
        ),
    )
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def _quiet(meta: dict[str, Any]) -> str:
    waited = meta.get("waited_quiet_s")
    if not waited:
        return ""
    if waited < 0:
        return "; it started without a quiet moment (the rest of the machine stayed busy)"
    return f"; it started after {waited:g} s of waiting for the rest of the machine to quieten"


def _phase(sample: dict[str, Any]) -> str:
    if sample["gap_end"] and sample["phase"] == "gap":
        return "gap end"
    return str(sample["phase"])


def write_chart(results: dict[str, Any], path: Path) -> Path | None:
    """RSS, descriptors, tasks, p99, backlog and load over time; idle gaps shaded."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    samples = results["samples"]
    minutes = [s["t"] / 60 for s in samples]
    panels = [
        ("RSS (MB)", ["rss_mb"]),
        ("open file descriptors", ["fds"]),
        ("asyncio tasks", ["tasks"]),
        ("interval p99 / p50 (ms)", ["p99_ms", "p50_ms"]),
        ("monitor queue / scorings", ["queue_depth", "scorings"]),
        ("load average (1 min)", ["load1"]),
    ]
    figure, axes = plt.subplots(3, 2, figsize=(13, 10), sharex=True)
    for axis, (title, fields) in zip(axes.flat, panels, strict=True):
        for start, stop, phase in results["phases"]:
            if phase == "gap":
                axis.axvspan(start / 60, stop / 60, color="0.9", lw=0)
        for field in fields:
            values = [s[field] if s[field] is not None else float("nan") for s in samples]
            axis.plot(minutes, values, lw=1, label=field)
        if len(fields) > 1:
            axis.legend(fontsize=8)
        axis.set_title(title, fontsize=10)
        axis.grid(alpha=0.3)
    for axis in axes[-1]:
        axis.set_xlabel("minutes into the run (grey: idle gaps)")
    meta = results["meta"]
    figure.suptitle(
        f"bias-gateway soak {meta['date']}: {results['plan']['rate']:g} req/s in bursts"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def write_results(results: dict[str, Any], out_dir: Path) -> tuple[list[Path], str]:
    """Judge the targets, then write `soak-<date>.{json,md,png}`; return the paths and the
    Markdown."""
    results["targets"] = targets(results)
    results["checks"] = checks(results)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"soak-{results['meta']['date']}"
    paths = [stem.with_suffix(".json"), stem.with_suffix(".md")]
    paths[0].write_text(json.dumps(results, indent=1) + "\n")
    chart = write_chart(results, stem.with_suffix(".png"))
    if chart is not None:
        results["chart"] = chart.name
        paths.append(chart)
    text = markdown(results)
    paths[1].write_text(text)
    return paths, text
