"""A config read again, applied to a running process: what may change live, what keeps
its running value until a restart, what changed (said without a secret), and the
`Gateway` new requests use.

Everything here is synchronous: the caller swaps the result in with no `await`
between reading the old state and publishing the new, so a request sees one config
or the other, never a mix. A request in flight keeps the `Gateway` it started with.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from gateway.config import KeySettings, Settings
from gateway.runtime.lifecycle import Judges, build_scorer
from gateway.runtime.resources import Gateway

__all__ = ["RESTART_ONLY", "changes", "keep_running", "reconfigured"]

# What the process built once at its start from these: the listening socket, the store
# and its writer, the queue's places and slots, the exporters and the metric buckets,
# the judge limiter every judge shares, and the score cache.
RESTART_ONLY: tuple[str, ...] = (
    "server.host",
    "server.port",
    "store",
    "queue",
    "telemetry",
    "judge.limits.max_concurrency",
    "judge.limits.concurrency_start",
    "judge.limits.concurrency_ceiling",
    "judge.limits.max_pause",
    "judge.limits.max_requests_per_minute",
    "judge.limits.max_tokens_per_minute",
    "judge.cache",
)


def keep_running(running: Settings, loaded: Settings) -> tuple[Settings, list[str]]:
    """`loaded`, with every `RESTART_ONLY` setting at its running value; and the dotted
    names of those `loaded` would have changed (`store.path`, `queue.size`)."""
    effective = loaded
    differing: list[str] = []
    for dotted in RESTART_ONLY:
        path = tuple(dotted.split("."))
        now, asked = _get(running, path), _get(loaded, path)
        if now == asked:
            continue
        fields = _differing_fields(now, asked)  # a section: name the fields within it
        differing.extend([f"{dotted}.{name}" for name in fields] if fields else [dotted])
        effective = _replaced(effective, path, now)
    return effective, differing


def changes(old: Settings, new: Settings) -> dict[str, str]:
    """The top-level settings that differ, each described without a secret: keys by
    count and name, named policies and routes by name, sections by the fields changed."""
    described: dict[str, str] = {}
    for name in type(old).model_fields:
        if name == "api_keys":
            continue  # counted with `keys`, which lists both
        if name == "keys":
            said = _keys_changed(old.all_keys(), new.all_keys())
        else:
            said = _changed(getattr(old, name), getattr(new, name))
        if said is not None:
            described[name] = said
    return described


def reconfigured(gateway: Gateway, settings: Settings, judges: Judges) -> Gateway:
    """The `Gateway` new requests use under `settings`: new keys, policies, samplers,
    routes and limits over the running one's clients, store and metrics; its `Scoring`
    judges new work as `settings.judge` says, with a new judge if they changed it."""
    updated = Gateway.build(
        settings,
        upstream=gateway.upstream,
        store=gateway.store,
        scoring=gateway.scoring,
        telemetry=gateway.telemetry,
        metrics=gateway.metrics,
        previous=gateway,
    )
    scorer = build_scorer(settings, judges.for_settings(settings))
    # Past here nothing can fail: the running gateway is untouched if anything above did.
    gateway.scoring.reconfigure(scorer, settings)
    gateway.metrics.model.add_aliases(settings.models)
    updated.ready = gateway.ready
    return updated


def _get(settings: Settings, path: tuple[str, ...]) -> Any:
    value: Any = settings
    for name in path:
        value = getattr(value, name)
    return value


def _replaced(model: BaseModel, path: tuple[str, ...], value: Any) -> Any:
    head, *rest = path
    inner = value if not rest else _replaced(getattr(model, head), tuple(rest), value)
    return model.model_copy(update={head: inner})


def _differing_fields(old: Any, new: Any) -> list[str]:
    if not isinstance(old, BaseModel) or not isinstance(new, BaseModel):
        return []
    return [name for name in type(old).model_fields if getattr(old, name) != getattr(new, name)]


def _changed(old: Any, new: Any) -> str | None:
    if old == new:
        return None
    if isinstance(old, BaseModel):
        return ", ".join(_differing_fields(old, new))
    if isinstance(old, dict) and isinstance(new, dict):
        return _named_changes(old, new, len(old), len(new))
    return f"{old!r} -> {new!r}"  # a plain value: a bool or a name, never a secret


def _keys_changed(old: list[KeySettings], new: list[KeySettings]) -> str | None:
    if old == new:
        return None
    before = {key.name: key for key in old}
    after = {key.name: key for key in new}
    return _named_changes(before, after, len(old), len(new))


def _named_changes(before: dict[str, Any], after: dict[str, Any], was: int, now: int) -> str:
    """`3 -> 4 (added: b; removed: a; changed: c)`: counts and names only."""
    added = [name for name in after if name not in before]
    removed = [name for name in before if name not in after]
    changed = [name for name in after if name in before and before[name] != after[name]]
    parts = [
        f"{what}: {', '.join(names)}"
        for what, names in (("added", added), ("removed", removed), ("changed", changed))
        if names
    ]
    return f"{was} -> {now}" + (f" ({'; '.join(parts)})" if parts else "")
