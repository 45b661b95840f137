"""Prometheus metrics for `/metrics`.

Names follow Prometheus conventions (`_total`, `_seconds`). Each app owns its
registry, so several apps in one process (tests) do not collide. With
`--workers N`, `bias-gateway serve` sets `PROMETHEUS_MULTIPROC_DIR` and every
worker writes its values there; `/metrics` on any worker then reports the sum
over all workers (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from gateway.config import Settings
from gateway.observability.labels import ModelLabels

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144)


class Metrics:
    def __init__(
        self, *, aliases: Iterable[str] = (), model_cap: int = 50, scale: float = 1
    ) -> None:
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = CollectorRegistry(auto_describe=True)
        self.model = ModelLabels(aliases, model_cap)
        registry = self.registry
        self.requests = Counter(
            "gateway_requests_total",
            "HTTP requests by route, model, status and bias status.",
            ["route", "model", "status", "bias_status"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "gateway_request_duration_seconds",
            "Time from request to the end of the response, streams included.",
            ["route", "model"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.upstream_seconds = Histogram(
            "gateway_upstream_duration_seconds",
            "Upstream call time: to the whole body, or to the end of a stream.",
            ["model", "stream"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.ttft_seconds = Histogram(
            "gateway_upstream_time_to_first_chunk_seconds",
            "Streaming: time from the upstream request to its first chunk.",
            ["model"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.operation_seconds = Histogram(
            "gen_ai_client_operation_duration_seconds",
            "GenAI client operation duration (OTel gen_ai.client.operation.duration).",
            ["gen_ai_operation_name", "gen_ai_request_model", "role"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.token_usage = Histogram(
            "gen_ai_client_token_usage",
            "Tokens per GenAI call (OTel gen_ai.client.token.usage).",
            ["gen_ai_token_type", "gen_ai_request_model", "role"],
            buckets=_TOKENS,
            registry=registry,
        )
        self.bias_score = Histogram(
            "bias_score",
            "Bias scores of scored responses, on the 0..scale range.",
            ["model"],
            buckets=tuple(round(scale * step / 10, 6) for step in range(1, 11)),
            registry=registry,
        )
        self.verdicts = Counter(
            "bias_verdicts_total", "Verdicts reached.", ["model", "verdict"], registry=registry
        )
        self.key_verdicts = Counter(
            "bias_key_verdicts_total",
            "Verdicts reached, by API key name (`-` in open mode): each key's own bias rate.",
            ["key", "verdict"],
            registry=registry,
        )
        self.category_opinions = Counter(
            "bias_category_opinions_total",
            "Biased opinions by category (an opinion counts in each category it names).",
            ["category"],
            registry=registry,
        )
        self.tamper = Counter(
            "bias_tamper_total",
            "Scored answers whose text addressed the judge, by the kind of finding"
            " (an answer counts once in each kind it showed).",
            ["kind"],
            registry=registry,
        )
        self.judge_seconds = Histogram(
            "bias_judge_step_duration_seconds",
            "Judge time per scorer step (preprocess, analyze, generate_reason).",
            ["step"],
            buckets=_LATENCY,
            registry=registry,
        )
        self.judge_errors = Counter(
            "bias_judge_errors_total",
            "Failed scorings by error type.",
            ["error_type"],
            registry=registry,
        )
        self.judge_calls = Counter(
            "bias_judge_calls",
            "Judge calls made, by scorer step (a corrective retry counts).",
            ["step"],
            registry=registry,
        )
        self.judge_tokens = Counter(
            "bias_judge_tokens",
            "Judge tokens used, by scorer step and token type (input, output).",
            ["step", "type"],
            registry=registry,
        )
        self.judge_rate_limited = Counter(
            "bias_judge_rate_limited",
            "429 answers from the judge; each pauses every judge call of the process.",
            registry=registry,
        )
        self.judge_wait_seconds = Counter(
            "bias_judge_limiter_wait_seconds",
            "Time judge calls waited for a slot, a budget or a 429 pause.",
            registry=registry,
        )
        self.judge_in_flight = Gauge(
            "bias_judge_calls_in_flight",
            "Judge calls under way.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.judge_concurrency_limit = Gauge(
            "bias_judge_concurrency_limit",
            "Judge calls that may be in flight now (judge.limits.max_concurrency, or what"
            " auto found).",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.judge_lane_calls = Gauge(
            "bias_judge_lane_calls",
            "Judge calls let through since the start, by lane (enforce, monitor, explain).",
            ["lane"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.judge_lane_wait_seconds = Gauge(
            "bias_judge_lane_wait_seconds",
            "Seconds judge calls waited for the limiter since the start, by lane.",
            ["lane"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.judge_lane_answer_seconds = Gauge(
            "bias_judge_lane_answer_seconds",
            "Seconds the judge took to answer the calls let through since the start, by lane.",
            ["lane"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.scorings_in_flight = Gauge(
            "bias_scorings_in_flight",
            "Monitor-mode scorings under way.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.cache_lookups = Counter(
            "bias_cache_lookups_total",
            "Content-hash score cache lookups, by result (hit or miss).",
            ["result"],
            registry=registry,
        )
        self.queue_depth = Gauge(
            "bias_scoring_queue_depth",
            "Monitor-mode jobs waiting for a scoring worker.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.overload_rate = Gauge(
            "bias_overload_sample_rate",
            "The share of a key's monitored responses scored while overload sheds the rest.",
            ["key"],
            registry=registry,
        )
        self.overload_decisions = Counter(
            "bias_overload_decisions_total",
            "Monitored responses by key: scored, or shed while the judge could not keep up.",
            ["key", "decision"],
            registry=registry,
        )
        self.judge_batches = Counter(
            "bias_judge_batches_total",
            "Judge calls for a batch of monitored answers, by outcome (ok, retried_alone).",
            ["outcome"],
            registry=registry,
        )
        self.skipped = Counter(
            "bias_skipped_total", "Responses not scored, by reason.", ["reason"], registry=registry
        )
        self.key_limited = Counter(
            "gateway_key_limited_total",
            "Requests refused with 429 because their key was past a limit, by key name.",
            ["key", "limit"],
            registry=registry,
        )
        self.config_reloads = Counter(
            "gateway_config_reloads_total",
            "Config reloads (SIGHUP or POST /admin/reload), by outcome: ok or refused.",
            ["outcome"],
            registry=registry,
        )
        self.config_reload_ok = Gauge(
            "gateway_config_last_reload_successful",
            "0 after a config reload was refused (the running config is kept), 1 once one"
            " is applied again or while none was tried.",
            registry=registry,
            multiprocess_mode="livemin",
        )
        self.config_reload_ok.set(1)
        self.dropped = Counter(
            "bias_dropped_total", "Scoring jobs dropped, by reason.", ["reason"], registry=registry
        )
        self.work_claimed = Counter(
            "bias_work_claimed_total",
            "Pending scoring work claimed from the store (new, or left by a stopped process).",
            registry=registry,
        )
        self.work_expired = Counter(
            "bias_work_expired_total",
            "Pending records ended for good: attempts_exhausted, gateway_lost.",
            ["reason"],
            registry=registry,
        )
        self.work_pending = Gauge(
            "bias_work_pending",
            "Scoring work pending in the store, as this process last counted it.",
            registry=registry,
            multiprocess_mode="mostrecent",
        )
        self.store_buffered = Gauge(
            "bias_store_buffered_records",
            "Records and cache entries submitted and not yet stored (store.buffer_records "
            "bounds it; it grows while the store is away).",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.store_buffer_limit = Gauge(
            "bias_store_buffer_limit_records",
            "How many records bias_store_buffered_records may reach (store.buffer_records);"
            " past it the writer drops them.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.store_dropped = Counter(
            "bias_store_records_dropped_total",
            "Records the store's writer could not keep: buffer_full, rejected, shutdown.",
            ["reason"],
            registry=registry,
        )
        self.asyncio_tasks = Gauge(
            "gateway_asyncio_tasks",
            "asyncio tasks alive in the event loop of the process that answers the scrape,"
            " counted at scrape time (a count that only grows is a task leak).",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.pruned = Counter(
            "bias_store_pruned_total",
            "Records and cache entries pruned for being older than store.retention_days.",
            registry=registry,
        )
        self.probe_replays = Counter(
            "bias_probe_replays_total",
            "Live probe replays sent upstream, by outcome: answered or failed.",
            ["outcome"],
            registry=registry,
        )
        self.probe_tokens = Counter(
            "bias_probe_upstream_tokens_total",
            "Upstream tokens the live probe's replays used, as their usage reported them.",
            registry=registry,
        )
        self.probe_dropped = Counter(
            "bias_probe_replays_dropped_total",
            "Live probe replays not sent, by cap: max_per_minute or max_tokens_per_minute.",
            ["reason"],
            registry=registry,
        )

        self.reviews = Counter(
            "bias_reviews",
            "Reviewers' labels given, by label and by whether the judge agreed (flag or block"
            " is its biased).",
            ["label", "agrees"],
            registry=registry,
        )
        # The last judge canary's figures (`gateway.server.canary`), as the store keeps them.
        self.canary_f1 = Gauge(
            "bias_review_canary_f1",
            "F1 of the judge's verdicts against reviewers' labels at the last judge change,"
            " by judge (the one before and the one after).",
            ["judge"],
            registry=registry,
            multiprocess_mode="mostrecent",
        )
        self.canary_kappa = Gauge(
            "bias_review_canary_kappa",
            "Cohen's kappa of the judge's verdicts against reviewers' labels at the last"
            " judge change, by judge.",
            ["judge"],
            registry=registry,
            multiprocess_mode="mostrecent",
        )
        self.canary_drop = Gauge(
            "bias_review_canary_drop",
            "How far the last judge change lowered the agreement with reviewers, by figure"
            " (f1, kappa); negative when it rose.",
            ["figure"],
            registry=registry,
            multiprocess_mode="mostrecent",
        )
        self.canary_drop_limit = Gauge(
            "bias_review_canary_drop_limit",
            "The fall in F1 or kappa after a judge change that is warned of (review.canary_drop).",
            registry=registry,
            multiprocess_mode="mostrecent",
        )
        self.canary_rejudged = Gauge(
            "bias_review_canary_rejudged_records",
            "Labelled records the last judge canary judged again.",
            registry=registry,
            multiprocess_mode="mostrecent",
        )

    @classmethod
    def for_settings(cls, settings: Settings) -> Metrics:
        """The metrics of a gateway or scorer run on `settings`."""
        return cls(
            aliases=settings.models,
            model_cap=settings.telemetry.model_label_cap,
            scale=settings.judge.scale,
        )

    def render(self) -> bytes:
        with contextlib.suppress(RuntimeError):  # no running loop: the last count stands
            self.asyncio_tasks.set(len(asyncio.all_tasks()))
        if self.multiprocess:
            collected = CollectorRegistry()
            multiprocess.MultiProcessCollector(collected)  # type: ignore[no-untyped-call]
            return generate_latest(collected)
        return generate_latest(self.registry)

    @staticmethod
    def mark_process_dead() -> None:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
