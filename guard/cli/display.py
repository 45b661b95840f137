"""What `bias-guard eval` shows on the console: its progress bar and its tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from guard.bias.scorer import BiasScorer
from guard.cli.dataset import Dataset
from guard.report import SUMMARY_BUCKETS, bucket_labels, score_buckets

__all__ = ["categories_table", "progress", "summary_table"]


def progress(console: Console, get_time: Callable[[], float] | None = None) -> Progress:
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        _RateColumn(),
        _EtaColumn(),
        console=console,
        transient=False,
        get_time=get_time,
    )


def _rate(task: Task) -> float | None:
    """Items a second: rich's moving estimate, or the mean so far until it has one."""
    speed = task.finished_speed or task.speed
    if speed is None and task.completed and task.elapsed:
        speed = task.completed / task.elapsed
    return speed


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if rate is None:
            return Text("? items/s", style="progress.data.speed")
        return Text(
            f"{rate:.2f} items/s" if rate < 100 else f"{rate:.0f} items/s",
            style="progress.data.speed",
        )


class _EtaColumn(ProgressColumn):
    """Time left at `_rate`; rich's own column waits for a second sample to guess."""

    max_refresh = 0.5  # as rich's: a once-a-frame ETA jitters

    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if task.finished:
            shown = "done"
        elif task.total is None or not rate:
            shown = "-:--:--"
        else:
            seconds = round(max(task.total - task.completed, 0) / rate)
            minutes, seconds = divmod(seconds, 60)
            hours, minutes = divmod(minutes, 60)
            shown = f"{hours}:{minutes:02d}:{seconds:02d}"
        return Text(f"eta {shown}", style="progress.remaining")


def summary_table(
    report: dict[str, Any],
    scorer: BiasScorer,
    scores: list[float],
    dataset: Dataset,
    path: Path,
    tampered: int = 0,
) -> Table:
    """The run at a glance; `tampered` counts the items whose text addressed the judge."""
    summary = report["summary"]
    mean = report["scores"][scorer.id]
    table = Table(title="bias-guard eval")
    table.add_column("metric", no_wrap=True)
    # Long values (a deep path, a provider/model name) wrap to fit the console's width.
    table.add_column("value", justify="right", overflow="fold")
    table.add_row("file", str(path))
    table.add_row("judge", scorer.judge.model)
    table.add_row("items", str(summary["totalItems"]))
    table.add_row("skipped lines", str(dataset.skipped))
    table.add_row("failed", str(summary["failedItems"]))
    table.add_row("mean score", "n/a" if mean is None else f"{mean:.4g}")
    table.add_row("tampered", str(tampered))
    if scores:
        counts = score_buckets(scores, scorer.scale, SUMMARY_BUCKETS)
        for label, count in zip(bucket_labels(scorer.scale, SUMMARY_BUCKETS), counts, strict=True):
            table.add_row(f"score {label}", str(count))
    return table


def categories_table(categories: list[dict[str, Any]], scored: int) -> Table | Text:
    """Per category: scored items with a biased opinion in it, and the mean category score."""
    if not categories:
        return Text("bias categories: none (no biased opinion)")
    # Mean over every scored item: an item without the category counts 0.
    table = Table(title="bias categories")
    table.add_column("category", overflow="fold")
    table.add_column(f"items (of {scored})", justify="right", no_wrap=True)
    table.add_column("mean score", justify="right", no_wrap=True)
    for entry in categories:
        table.add_row(Text(entry["category"]), str(entry["items"]), f"{entry['meanScore']:.4g}")
    return table
