"""The store-queries report."""

from __future__ import annotations

import statistics

from bench.store.queries.cases import SLOW_MS, execution_ms
from bench.store.queries.engines import EngineResult, counts_line
from bench.store.queries.records import (
    DAYS,
    KEY_WEIGHTS,
    MODEL_WEIGHTS,
    MODELS,
    THE_KEY,
    THE_MODEL,
    Records,
)
from bench.store.queries.timing import Settings, Timing


def _plan_cell(timing: Timing) -> str:
    parts = []
    for plan in timing.plans:
        text = plan.summary or "-"
        if plan.full_scan:
            text = f"**{text}**"
        if plan.generic is not None:
            generic = plan.generic_summary
            text += f" (generic plan: {f'**{generic}**' if plan.generic_full_scan else generic})"
            custom_ms, generic_ms = execution_ms(plan.analyzed), execution_ms(plan.analyzed_generic)
            if custom_ms is not None and generic_ms is not None:
                text += (
                    f" [EXPLAIN ANALYZE: custom {custom_ms:,.1f} ms, generic {generic_ms:,.1f} ms]"
                )
        elif (custom_ms := execution_ms(plan.analyzed)) is not None:
            text += f" [EXPLAIN ANALYZE {custom_ms:,.1f} ms]"
        if plan.used:
            text += f" [ran: {plan.used}]"
        parts.append(f"{plan.label}: {text}" if len(timing.plans) > 1 else text)
    return "; ".join(parts).replace("|", "/")


def _table(timings: list[Timing], plans: bool = True) -> list[str]:
    head = "| case | median ms | p95 ms | runs | rows |" + (" plan |" if plans else "")
    lines = [head, "|" + "---|" * (6 if plans else 5)]
    for timing in timings:
        slow = " **slow**" if timing.median > SLOW_MS else ""
        cells = [
            timing.case + slow,
            f"{timing.median:,.1f}",
            f"{timing.p95:,.1f}",
            str(len(timing.times_ms)),
            str(timing.rows),
        ]
        if plans:
            cells.append(_plan_cell(timing))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render(
    date: str, source: str, settings: Settings, records: Records, results: list[EngineResult],
    machine: list[str],
) -> str:  # fmt: skip
    sizes = sorted(records.sizes) or [0]
    lines = [
        f"# Search and stats on {records.count:,} records ({date})",
        "",
        f"`python -m bench store_queries --records {records.count}` (`bench/store/queries/run.py`"
        f" says what runs and why). Code: {source}.",
        "",
        *(f"- {line}" for line in machine),
        f"- records: {records.count:,} over {DAYS} days ending at the run's start; 70 % scored"
        " (pass 80 % / flag 12 % / block 8 %), 17 % skipped, 6 % error, 6 % dropped, 1 % pending;"
        f" 20 keys ({THE_KEY}: {KEY_WEIGHTS[4] / sum(KEY_WEIGHTS):.1%}), 8 models"
        f" ({THE_MODEL}: {MODEL_WEIGHTS[MODELS.index(THE_MODEL)] / sum(MODEL_WEIGHTS):.0%});"
        f" `result` JSON of scored records {sizes[0]:,}-{sizes[-1]:,} bytes"
        f" (median {statistics.median(sizes):,.0f})",
        f"- each case: {settings.warmups} warm-ups, then {settings.runs} timed calls (fewer"
        f" once a case has used {settings.budget:g} s, at least 3) through the store class;"
        " a stats call is two queries (`stats_sql`, then `p90_sql`); median and p95 (between"
        f" ranks) in ms; **slow** is a median over {SLOW_MS:g} ms",
        "- plan: SQLite `EXPLAIN QUERY PLAN` (`walk <index>`: the whole index in order, which"
        " a LIMIT stops early; **FULL SCAN**: the table without an index); PostgreSQL `EXPLAIN`"
        " of the custom plan, and the generic plan when it differs (**SEQ SCAN**: a full scan)",
        "",
    ]
    for result in results:
        lines += [
            f"## {result.engine}",
            "",
            f"- load: {result.load_seconds:.0f} s ({records.count / result.load_seconds:,.0f}"
            f" records/s, triggers filling score_categories), then ANALYZE"
            f" {result.analyze_seconds:.0f} s; rows: {counts_line(result.counts)}",
            f"- size: {', '.join(result.sizes)}",
            *(f"- {note}" for note in result.notes),
            "",
            *_table(result.timings),
            "",
        ]
        for title, what, timings in result.experiments:
            lines += [f"### {result.engine}, {title}", "", what, "", *_table(timings), ""]
        if result.http:
            lines += [
                "Building a page of 50 in this process (`rows`: records, or bytes of the"
                " body), then through the gateway app (HTTP on 127.0.0.1, uvicorn in a thread"
                " of this process, its access log on stdout; stats with group_by runs the"
                " store's stats twice, total and groups, four queries, over the default"
                " window, the last 24 h):",
                "",
                *_table(result.http, plans=False),
                "",
            ]
    lines += ["## Plans", ""]
    for result in results:
        for timing in result.timings:
            lines += [f"### {result.engine}: {timing.case}", "", "```"]
            for plan in timing.plans:
                lines += [f"-- {plan.label}", *plan.lines]
                if plan.generic is not None:
                    lines += [f"-- {plan.label}, generic plan", *plan.generic]
                if plan.analyzed is not None:
                    lines += [f"-- {plan.label}, EXPLAIN (ANALYZE, BUFFERS)", *plan.analyzed]
                if plan.analyzed_generic is not None:
                    lines += [
                        f"-- {plan.label}, generic plan, EXPLAIN (ANALYZE, BUFFERS)",
                        *plan.analyzed_generic,
                    ]
                if plan.used:
                    lines.append(f"-- the store's prepared statement ran: {plan.used}")
            lines += ["```", ""]
    return "\n".join(lines)
