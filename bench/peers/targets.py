"""The ratio targets of issue 4, judged on one run's results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Target", "evaluate", "realistic_targets"]


@dataclass
class Target:
    """One target: what it asks, what was measured, and whether it was met."""

    name: str
    wanted: str
    measured: str
    status: str  # "met", "missed" or "not measured"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Results:
    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    def cell(self, config: str, workload: str, concurrency: int) -> dict[str, Any] | None:
        for cell in self.results["cells"]:
            if (cell["config"], cell["workload"], cell["concurrency"]) == (
                config,
                workload,
                concurrency,
            ):
                found: dict[str, Any] = cell
                return found
        return None

    def load(self, config: str, workload: str, concurrency: int, key: str) -> float | None:
        cell = self.cell(config, workload, concurrency)
        return None if cell is None else float(cell["load"][key])

    def ttft(self, config: str, concurrency: int) -> float | None:
        cell = self.cell(config, "stream", concurrency)
        return None if cell is None or cell["ttft"] is None else float(cell["ttft"]["ttft_p50_ms"])

    def config(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.results["configs"].get(name) or {}
        return found


def _judge(name: str, wanted: str, measure: Callable[[], tuple[str, bool] | None]) -> Target:
    try:
        outcome = measure()
    except (TypeError, ZeroDivisionError, KeyError):
        outcome = None
    if outcome is None:
        return Target(name, wanted, "-", "not measured")
    measured, ok = outcome
    return Target(name, wanted, measured, "met" if ok else "missed")


def evaluate(results: dict[str, Any]) -> list[Target]:
    """Every target of issue 4 that one run can judge."""
    r = _Results(results)
    off = "gateway off"

    def vs_litellm() -> tuple[str, bool] | None:
        ours, peer = (
            r.load(off, "non-stream", 32, "rps"),
            r.load("litellm proxy", "non-stream", 32, "rps"),
        )
        if ours is None or peer is None:
            return None
        return f"{ours:.0f} / {peer:.0f} = {ours / peer:.1f}x", ours >= 20 * peer

    def vs_floor_rps() -> tuple[str, bool] | None:
        ours, floor = (
            r.load(off, "non-stream", 32, "rps"),
            r.load("aiohttp floor", "non-stream", 32, "rps"),
        )
        if ours is None or floor is None:
            return None
        return f"{ours:.0f} / {floor:.0f} = {ours / floor:.2f}x", ours >= 0.5 * floor

    def vs_floor_p99() -> tuple[str, bool] | None:
        ours = r.load(off, "non-stream", 32, "p99_ms")
        floor = r.load("aiohttp floor", "non-stream", 32, "p99_ms")
        if ours is None or floor is None:
            return None
        return f"{ours:.2f} / {floor:.2f} ms = {ours / floor:.2f}x", ours <= 2 * floor

    def off_overhead() -> tuple[str, bool] | None:
        ours, direct = (
            r.load(off, "non-stream", 1, "p50_ms"),
            r.load("direct", "non-stream", 1, "p50_ms"),
        )
        if ours is None or direct is None:
            return None
        return f"{ours:.3f} - {direct:.3f} = {ours - direct:.3f} ms", ours - direct <= 1.0

    def monitor_p50() -> tuple[str, bool] | None:
        ours, base = (
            r.load("gateway monitor", "non-stream", 1, "p50_ms"),
            r.load(off, "non-stream", 1, "p50_ms"),
        )
        if ours is None or base is None:
            return None
        return f"{ours:.3f} / {base:.3f} ms = {ours / base - 1:+.1%}", ours <= 1.10 * base

    monitor_cells = [c for c in results["cells"] if c["config"] == "gateway monitor"]

    def all_stored() -> tuple[str, bool] | None:
        if not monitor_cells:
            return None
        parts, ok = [], True
        for cell in monitor_cells:
            statuses = dict((cell["store"] or {}).get("statuses", {}))
            scored = statuses.pop("scored", 0)
            # wrk cuts streams still in flight when it stops: those have no text to score.
            statuses.pop("skipped:no_text", None)
            ok = ok and not statuses and scored >= cell["client_requests"]
            lost = ", ".join(f"{count} {status}" for status, count in statuses.items())
            parts.append(f"{scored}/{cell['client_requests']}" + (f" ({lost})" if lost else ""))
        return "scored/answered: " + ", ".join(parts), ok

    def drained() -> tuple[str, bool] | None:
        if not monitor_cells:
            return None
        times = [cell["drain_s"] for cell in monitor_cells]
        if any(value is None for value in times):
            return "not drained within the harness's wait", False
        return f"max {max(times):.3f} s (per cell: {', '.join(f'{t:.2f}' for t in times)})", max(
            times
        ) <= 1.0

    def ttft_overhead() -> tuple[str, bool] | None:
        ours, direct = r.ttft("gateway monitor", 1), r.ttft("direct", 1)
        if ours is None or direct is None:
            return None
        return f"{ours:.3f} - {direct:.3f} = {ours - direct:.3f} ms", ours - direct <= 1.0

    def identical() -> tuple[str, bool] | None:
        found = r.config("gateway monitor").get("frames_identical")
        if found is None:
            return None
        return ("identical" if found else "different"), bool(found)

    def orchestration() -> tuple[str, bool] | None:
        cell = r.cell("gateway enforce", "non-stream", 1)
        direct = r.load("direct", "non-stream", 1, "p50_ms")
        if cell is None or direct is None or not (cell["store"] or {}).get("judge_ms_p50"):
            return None
        total, judge = cell["load"]["p50_ms"], cell["store"]["judge_ms_p50"]
        own = total - direct - judge
        shown = f"{total:.2f} - {direct:.2f} (upstream) - {judge:.2f} (judge) = {own:.2f} ms"
        if own < 0:
            return shown + " (negative: the timings disagree)", False
        return shown, own <= 2.0

    def memory_growth() -> tuple[str, bool] | None:
        memory = results.get("memory")
        if not memory:
            return None
        first, second = memory["rss_mb"]
        return f"{first:.1f} -> {second:.1f} MB ({memory['growth']:+.1%})", second <= 1.10 * first

    def memory_vs_litellm() -> tuple[str, bool] | None:
        peer = r.config("litellm proxy").get("peak_rss_mb")
        ours = [
            r.config(f"gateway {mode}").get("peak_rss_mb") for mode in ("off", "monitor", "enforce")
        ]
        known = [value for value in ours if value]
        if not peer or not known:
            return None
        return f"{max(known):.0f} / {peer:.0f} MB = {max(known) / peer:.2f}", max(known) < peer / 3

    def judge_calls() -> tuple[str, bool] | None:
        counts: dict[str, int] = {}
        for cell in monitor_cells:
            for calls, rows in ((cell["store"] or {}).get("judge_calls") or {}).items():
                counts[calls] = counts.get(calls, 0) + rows
        if not counts:
            return None
        judged = {calls: rows for calls, rows in counts.items() if calls != "0"}
        shown = ", ".join(f"{rows} x {calls}" for calls, rows in sorted(judged.items()))
        return f"responses x calls: {shown or 'none judged'}", set(judged) <= {"3"}

    paced = results.get("paced") or {}

    def paced_value(config: str, workload: str, key: str) -> float | None:
        value = (paced.get(config) or {}).get(workload, {}).get(key)
        return float(value) if value is not None else None

    def paced_monitor_p50() -> tuple[str, bool] | None:
        ours = paced_value("gateway monitor", "non-stream", "p50_ms")
        base = paced_value(off, "non-stream", "p50_ms")
        if ours is None or base is None:
            return None
        return f"{ours:.3f} / {base:.3f} ms = {ours / base - 1:+.1%}", ours <= 1.10 * base

    def paced_ttft() -> tuple[str, bool] | None:
        ours = paced_value("gateway monitor", "stream", "ttft_p50_ms")
        direct = paced_value("direct", "stream", "ttft_p50_ms")
        if ours is None or direct is None:
            return None
        return f"{ours:.3f} - {direct:.3f} = {ours - direct:.3f} ms", ours - direct <= 1.0

    def cache() -> tuple[str, bool] | None:
        cache = results.get("cache")
        if not cache or not cache["scored"]:
            return None
        hits, scored = cache["hits"], cache["scored"]
        rps = cache["load"]["rps"]
        return f"{hits}/{scored} = {hits / scored:.1%} at {rps:.0f} req/s", hits / scored >= 0.9

    return [
        _judge("off c=32 throughput vs LiteLLM", ">= 20x", vs_litellm),
        _judge("off c=32 throughput vs aiohttp floor", ">= 0.5x", vs_floor_rps),
        _judge("off c=32 p99 vs aiohttp floor", "<= 2x", vs_floor_p99),
        _judge("off c=1 p50 overhead over direct", "<= 1.0 ms", off_overhead),
        _judge("monitor c=1 p50 vs off", "within +10%", monitor_p50),
        _judge("monitor c=1 p50 vs off, paced", "within +10%", paced_monitor_p50),
        _judge("monitor: every response's score stored", "all scored", all_stored),
        _judge("monitor: queue drained after load stops", "<= 1 s", drained),
        _judge("monitor stream c=1 TTFT overhead over direct", "<= 1 ms p50", ttft_overhead),
        _judge("monitor stream TTFT overhead over direct, paced", "<= 1 ms p50", paced_ttft),
        _judge("monitor stream frames vs upstream", "byte-identical", identical),
        _judge("enforce c=1 orchestration time", "<= 2 ms p50", orchestration),
        _judge("RSS after 20k vs 2k requests (off)", "within +10%", memory_growth),
        _judge("gateway peak RSS vs LiteLLM", "< 1/3", memory_vs_litellm),
        _judge("judge calls per judged response", "exactly 3", judge_calls),
        _judge("score cache hit rate, all responses repeat", ">= 90%", cache),
    ]


def realistic_targets(results: dict[str, Any]) -> list[Target]:
    """The targets of issue 10 (a slow, rate-limited judge), judged on one realistic run."""
    cells = results["cells"]

    def cell(mode: str, pipeline: str, rate: float) -> dict[str, Any] | None:
        for found in cells:
            if (found.get("mode"), found.get("pipeline"), found["rate"]) == (mode, pipeline, rate):
                result: dict[str, Any] = found
                return result
        return None

    def monitor_100() -> tuple[str, bool] | None:
        found = cell("monitor", "faithful", 100.0)
        if found is None:
            return None
        share, pending, overhead = (
            found["scored_within_10s"],
            found["pending_left"],
            found["overhead_p50_ms"],
        )
        measured = f"{share:.1%} scored within 10 s, {pending} pending, p50 +{overhead:g} ms"
        return measured, share >= 0.99 and pending == 0 and overhead <= 2

    def monitor_300() -> tuple[str, bool] | None:
        found = cell("monitor", "faithful", 300.0)
        if found is None:
            return None
        records = found["records"]
        scored = records.get("scored", 0)
        overloaded = records.get("skipped:overloaded", 0)
        rest = found["sent"] - scored - overloaded
        measured = (
            f"{scored} scored, {overloaded} skipped overloaded, {rest} other;"
            f" RSS {found['peak_rss_mb']:g} MB; settled in {found['settled_s']} s"
        )
        ok = rest == 0 and found["peak_rss_mb"] < 200 and found["settled_s"] is not None
        return measured, ok

    def round_trips(pipeline: str, limit: float) -> Callable[[], tuple[str, bool] | None]:
        def measure() -> tuple[str, bool] | None:
            found = cell("enforce", pipeline, 100.0) or cell("enforce", pipeline, 20.0)
            if found is None or found.get("round_trips") is None:
                return None
            return f"{found['round_trips']:g} at {found['rate']:g} req/s", (
                found["round_trips"] <= limit
            )

        return measure

    def no_429_errors() -> tuple[str, bool] | None:
        limited = [found for found in cells if found.get("mode")]
        if not limited:
            return None
        errors = sum(found["errors"] for found in limited)
        seen = sum(found["rate_limited"] for found in limited)
        return f"{errors} errors, {seen} 429s seen, across {len(limited)} cells", errors == 0

    return [
        _judge(
            "monitor, shipped config, 100 req/s",
            ">= 99% scored within 10 s, none pending, p50 overhead <= 2 ms",
            monitor_100,
        ),
        _judge(
            "monitor, 300 req/s",
            "all scored or skipped overloaded; RSS < 200 MB; drains",
            monitor_300,
        ),
        _judge("enforce round trips, defaults", "<= 2.2", round_trips("faithful", 2.2)),
        _judge("enforce round trips, single", "<= 1.2", round_trips("single", 1.2)),
        _judge("judge limited to 1.5x the call rate", "zero errors from 429s", no_429_errors),
    ]
