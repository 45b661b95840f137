"""The soak's figures, its targets, and its report: `soak-<date>.{md,json,png}`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.soak_samples import percentile
from bench.soak_traffic import KINDS, MISHAPS, Outcome

__all__ = ["ANSWERED", "RESULTS", "markdown", "summarize", "targets", "write_results"]

ANSWERED = frozenset({"ok", "blocked", "upstream 500"})  # model answers whose latency counts
RESULTS = ("ok", "blocked", "upstream 500", "upstream cut", "client left", "unexpected")
RSS_GROWTH = 0.10
P99_RATIO = 1.2


def _latencies(outcomes: Iterable[Outcome]) -> list[float]:
    return [o.latency_ms for o in outcomes if o.family == "model" and o.result in ANSWERED]


def _reads(outcomes: Iterable[Outcome]) -> list[float]:
    return [o.latency_ms for o in outcomes if o.family in ("lookup", "search", "stats")]


def summarize(
    outcomes: Sequence[Outcome], laid: Sequence[tuple[float, float, str]], window: float
) -> dict[str, Any]:
    """What the requests came to: by kind, by cycle (a burst and its gap), and the
    model answers' p99 over the first and the last `window` seconds (by start)."""
    by_kind: dict[str, Any] = {}
    for kind in KINDS:
        mine = [o for o in outcomes if o.kind == kind.name]
        timed = _latencies(mine) if kind.family == "model" else [o.latency_ms for o in mine]
        by_kind[kind.name] = {
            "sent": len(mine),
            "results": dict(Counter(o.result for o in mine)),
            "p50_ms": percentile(timed, 0.5),
            "p99_ms": percentile(timed, 0.99),
        }
    cycles = []
    bursts = [(start, stop) for start, stop, phase in laid if phase == "burst"]
    ends = [stop for _, stop, phase in laid if phase == "gap"]
    for index, ((start, _), end) in enumerate(zip(bursts, ends, strict=True)):
        mine = [o for o in outcomes if start <= o.started < end]
        cycles.append(
            {
                "cycle": index + 1,
                "start": start,
                "sent": len(mine),
                "results": dict(Counter(o.result for o in mine)),
                "p50_ms": percentile(_latencies(mine), 0.5),
                "p99_ms": percentile(_latencies(mine), 0.99),
                "reads_p99_ms": percentile(_reads(mine), 0.99),
            }
        )
    end = laid[-1][1] if laid else 0.0
    first = [o for o in outcomes if o.started < window]
    last = [o for o in outcomes if o.started >= end - window]
    unexpected = Counter(f"{o.kind}: {o.detail}" for o in outcomes if o.result == "unexpected")
    return {
        "results": dict(Counter(o.result for o in outcomes)),
        "sent": len(outcomes),
        "by_kind": by_kind,
        "cycles": cycles,
        "unexpected": dict(unexpected.most_common(10)),
        "windows": {
            "seconds": window,
            "first_p99_ms": percentile(_latencies(first), 0.99),
            "last_p99_ms": percentile(_latencies(last), 0.99),
            "first_answers": len(_latencies(first)),
            "last_answers": len(_latencies(last)),
            "first_reads_p99_ms": percentile(_reads(first), 0.99),
            "last_reads_p99_ms": percentile(_reads(last), 0.99),
        },
    }


def _span(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:.0f} s"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _target(name: str, wanted: str, measured: str, met: bool | None) -> dict[str, str]:
    status = "not measured" if met is None else ("met" if met else "missed")
    return {"name": name, "wanted": wanted, "measured": measured, "status": status}


def _returns(samples: list[dict[str, Any]], field: str, name: str) -> dict[str, str]:
    ends = [s for s in samples if s["gap_end"] and s[field] is not None]
    if len(ends) < 2:
        return _target(name, "", "fewer than two gaps", None)
    baseline = ends[0][field]
    later = [s[field] for s in ends[1:]]
    over = [s for s in ends[1:] if s[field] > baseline]
    peak = max(s[field] for s in samples if s[field] is not None)
    measured = (
        f"{baseline:g} at the end of the first gap; {min(later):g}-{max(later):g} at the ends"
        f" of the other {len(later)}; peak {peak:g} in the bursts"
    )
    if over:
        times = ", ".join(f"{s['t']:g} s" for s in over[:5])
        measured += f"; above the baseline at {times}"
    return _target(name, f"every gap ends at <= {baseline:g}, the first gap's", measured, not over)


def targets(results: dict[str, Any]) -> list[dict[str, str]]:
    """The issue's four soak targets, judged on `results` (so a committed run can be again)."""
    samples = results["samples"]
    warmup = results["plan"]["warmup_s"]
    ends = [s for s in samples if s["gap_end"] and s["t"] >= warmup]
    if len(ends) >= 2:
        base, final = ends[0], ends[-1]
        growth = final["rss_mb"] / base["rss_mb"] - 1
        peak = max(s["rss_mb"] for s in samples if s["t"] >= warmup)
        rss = _target(
            "RSS after warm-up",
            f"grows by under {RSS_GROWTH:.0%}",
            f"{base['rss_mb']:.1f} MB at {base['t']:g} s (first gap after the {warmup:.0f} s"
            f" warm-up), {final['rss_mb']:.1f} MB at {final['t']:g} s ({growth:+.1%});"
            f" peak {peak:.1f} MB",
            growth < RSS_GROWTH,
        )
    else:
        rss = _target("RSS after warm-up", f"grows by under {RSS_GROWTH:.0%}", "too short", None)
    windows = results["windows"]
    first, last = windows["first_p99_ms"], windows["last_p99_ms"]
    span = _span(windows["seconds"])
    name = f"p99 latency, last {span} vs first {span}"
    if first and last:
        end = results["phases"][-1][1]
        busy = [(t, others) for t, _, others in results["machine_cpu"][1:]]
        early = [o for t, o in busy if t <= windows["seconds"]]
        late = [o for t, o in busy if t > end - windows["seconds"]]
        p99 = _target(
            name,
            f"within {P99_RATIO:g}x",
            f"{last:g} / {first:g} ms = {last / first:.2f}x (model answers:"
            f" {windows['last_answers']} and {windows['first_answers']}; other processes'"
            f" CPU, mean: {_mean(late):.0f} % and {_mean(early):.0f} % of a core)",
            last <= P99_RATIO * first,
        )
    else:
        p99 = _target(name, f"within {P99_RATIO:g}x", "-", None)
    return [
        rss,
        _returns(samples, "fds", "open file descriptors return to their baseline between bursts"),
        _returns(samples, "tasks", "asyncio tasks return to their baseline between bursts"),
        p99,
    ]


def checks(results: dict[str, Any]) -> list[dict[str, str]]:
    """What the harness checks besides the targets: answers as expected, records final."""
    store = results["store"]
    unexpected = results["results"].get("unexpected", 0)
    pending = sum(n for label, n in store["statuses"].items() if label.startswith("pending"))
    return [
        _target(
            "every answer is what its request should get",
            "0 unexpected",
            f"{unexpected} unexpected of {results['sent']}",
            unexpected == 0,
        ),
        _target(
            "every announced run id has a final record",
            "0 missing, 0 pending",
            f"{store['announced_without_record']} missing and {pending} pending of"
            f" {store['announced']}; settled {store['settled_s']} s after the load",
            store["announced_without_record"] == 0 and pending == 0,
        ),
    ]


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(value) for value in row) + " |" for row in rows]
    return lines


def _cycle_rows(results: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for cycle in results["cycles"]:
        start = cycle["start"]
        stop = start + results["plan"]["burst"] + results["plan"]["gap"]
        mine = [s for s in results["samples"] if start <= s["t"] < stop]
        end = next((s for s in reversed(mine) if s["gap_end"]), None)
        loads = [s["load1"] for s in mine]
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
            ]
        )
    return rows


def markdown(results: dict[str, Any]) -> str:
    plan, meta, store = results["plan"], results["meta"], results["store"]
    loads = [s["load1"] for s in results["samples"]]
    others = [others for _, _, others in results["machine_cpu"][1:]]
    mishaps = ", ".join(f"{name} {share:.0%}" for name, share in MISHAPS.items())
    lines = [
        f"# Soak, {meta['date']}",
        "",
        f"{meta['machine']}; commit {meta['commit']}. One `bias-gateway serve` (one worker,"
        " SQLite store in a temporary folder, `--log-level warning`, the shipped defaults"
        " otherwise) in front of two `bench.soak_fake` processes, the upstream and the judge.",
        "",
        f"**The machine was shared**: other sessions ran tests meanwhile. Load average (1 min)"
        f" during the run: min {min(loads):g}, mean {sum(loads) / len(loads):.2f}, max"
        f" {max(loads):g}; CPU used by processes other than the soak's own: mean"
        f" {sum(others) / max(1, len(others)):.0f} %, max {max(others, default=0):.0f} % of one"
        " core (the per-minute table and the plot show when).",
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
        *_table(
            ["target", "wanted", "measured", ""], ([t[k] for k in t] for t in results["targets"])
        ),
        "",
        *(
            [f"![RSS, descriptors, tasks, p99, backlog and load]({results['chart']})", ""]
            if results.get("chart")
            else []
        ),
        "## Checks",
        "",
        *_table(
            ["check", "wanted", "measured", ""], ([c[k] for k in c] for c in results["checks"])
        ),
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
    lines += _table(
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
        " (`bias_scoring_queue_depth`); `load`: the machine's 1-minute load average, mean of"
        " the cycle's samples.",
        "",
    ]
    lines += _table(
        ["#", "min", "sent", *RESULTS, "p50 ms", "p99 ms", "reads p99", "RSS MB peak",
         "RSS end", "fds peak", "fds end", "tasks peak", "tasks end", "queue peak",
         "store MB", "load"],
        _cycle_rows(results),
    )  # fmt: skip
    log = results["gateway_log"]
    lines += ["", "## Gateway log", ""]
    lines += [f"- {count} x {message}" for message, count in log["messages"].items()] or ["- none"]
    lines += [f"- tracebacks: {log['tracebacks']}", ""]
    lines += ["<details><summary>Every sample</summary>", ""]
    fields = ["t", "phase", "rss_mb", "fds", "tasks", "cpu_percent", "queue_depth", "scorings",
              "judge_in_flight", "store_mb", "wal_mb", "load1", "client_in_flight", "requests",
              "p50_ms", "p99_ms", "served_mean_ms", "scrape_ms", "lag_ms"]  # fmt: skip
    lines += _table(
        fields,
        (
            [s[f] if f != "phase" else s[f] + (" end" if s["gap_end"] else "") for f in fields]
            for s in results["samples"]
        ),
    )
    lines += ["", "</details>", ""]
    return "\n".join(lines)


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
