"""The judge-lanes report: its targets, judged on a run's results, and its table."""

from __future__ import annotations

from typing import Any

from bench.harness.report import fmt


def _stream(results: dict[str, Any], cell: str, key: str) -> dict[str, Any]:
    found = next(item for item in results["cells"] if item["cell"] == cell)
    return dict(next(stream for stream in found["streams"] if stream["key"] == key))


def _overhead(results: dict[str, Any], cell: str, direct_at: str) -> float | None:
    p50 = _stream(results, cell, "enforce")["p50_ms"]
    direct = results["direct"][direct_at]["p50_ms"]
    return None if p50 is None or direct is None else round(p50 - direct, 1)


def _found(results: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((item for item in results["cells"] if item["cell"] == name), None)


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 21's targets for the cells that ran, as measured."""
    rows: list[tuple[str, str, Any, bool]] = []
    if _found(results, "enforce alone 20") and _found(results, "enforce 50 + monitor 250"):
        base = _overhead(results, "enforce alone 20", "baseline")
        beside = _overhead(results, "enforce 50 + monitor 250", "full")
        ratio = round(beside / base, 2) if base and beside is not None else None
        rows.append(
            ("enforce beside monitor: p50 overhead / at 20 req/s alone", "≤ 1.3", ratio,
             ratio is not None and ratio <= 1.3)
        )  # fmt: skip
    if _found(results, "monitor two keys 280 + 20"):
        small = _stream(results, "monitor two keys 280 + 20", "small")["scored"]
        rows.append(
            ("two keys: the 20 req/s key scored", "≥ 99 %", small,
             small is not None and small >= 0.99)
        )  # fmt: skip
    for cell in results["cells"]:
        if cell["judge"].get("max_concurrency") != "auto":
            continue
        reached, share = cell["reached_80pct_s"], cell["share_429"]
        rows += [
            (f"{cell['cell']}: 80 % of the judge's allowance reached after", "≤ 30 s", reached,
             reached is not None and reached <= 30),
            (f"{cell['cell']}: 429s of judge calls", "< 1 %", share,
             share is not None and share < 0.01),
        ]  # fmt: skip
    return [
        {"name": name, "wanted": wanted, "measured": measured, "met": met}
        for name, wanted, measured, met in rows
    ]


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| cell | key | req/s | sent | p50 ms | p99 ms | scored | scored ≤10 s | skipped"
        " | errors | calls/resp | settled s | 429 share | 80 % of allowance at s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for direct in results["direct"].values():
        lines.append(
            f"| direct | - | {direct['rate']:g} | {direct['sent']} | {fmt(direct['p50_ms'])}"
            f" | {fmt(direct['p99_ms'])} | - | - | - | - | - | - | - | - |"
        )
    for cell in results["cells"]:
        for stream in cell["streams"]:
            records = stream.get("records") or {}
            skipped = sum(n for label, n in records.items() if label.startswith("skipped"))
            within = stream.get("scored_within_10s")
            values = [
                cell["cell"], stream["key"], stream["rate"], stream["sent"], stream["p50_ms"],
                stream["p99_ms"], stream["scored"], within, skipped, stream.get("errors"),
                stream.get("judge_calls_per_response"), cell["settled_s"], cell["share_429"],
                cell["reached_80pct_s"],
            ]  # fmt: skip
            lines.append("| " + " | ".join(fmt(value) for value in values) + " |")
    lines += [
        "",
        "| cell | lane | judge calls | mean wait for a slot, ms | mean judge answer, ms |",
        "|---|---|---|---|---|",
    ]
    for cell in results["cells"]:
        for lane, figures in (cell.get("lanes") or {}).items():
            lines.append(
                f"| {cell['cell']} | {lane} | {figures['calls']:g} | {figures['mean_wait_ms']:g}"
                f" | {figures.get('mean_answer_ms', 0):g} |"
            )
    lines += ["", "| target | wanted | measured | met |", "|---|---|---|---|"]
    for target in results.get("targets", []):
        met = "yes" if target["met"] else "no"
        lines.append(
            f"| {target['name']} | {target['wanted']} | {fmt(target['measured'])} | {met} |"
        )
    return "\n".join(lines)
