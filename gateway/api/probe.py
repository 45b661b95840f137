"""`GET /v1/bias/probe/findings`: what the live probe found over a window.

Admin keys only (any key in open mode): the pairs span every key's traffic. The
filters are `since` and `until` (epoch seconds or ISO 8601; the last day by
default), `key` and `model`. The answer has the shape of `bias-guard probe
--json` (`guard.probe.record.probe_json`) and its findings come from the same
statistics (`guard.probe.stats.findings`), computed over the window's pairs:
each probe is one answer for the group the client named and one for each other
group it was replayed with. The cells hold no prompt and no answer: their
`prompt` is the pair's template id, `answer` is null; `samples` counts the probes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.api.search import in_window, parse_score_query, viewer_of
from gateway.errors import PermissionDenied
from gateway.runtime.resources import Gateway
from gateway.store.probes import ProbePair, ProbeQuery, ProbeSide
from guard.probe import Cell

__all__ = ["probe_cells", "probe_findings", "probe_record"]

_PARAMS = frozenset({"since", "until", "key", "model"})


async def probe_findings(request: Request) -> Response:
    gateway = cast(Gateway, request.app.state.gateway)
    if not viewer_of(gateway, request).sees_all:
        raise PermissionDenied("Only an admin key may read the live probe's findings.")
    window = in_window(parse_score_query(request.query_params, allowed=_PARAMS))
    assert window.since is not None
    assert window.until is not None
    query = ProbeQuery(window.since, window.until, key_name=window.key, model=window.model)
    pairs = await gateway.store.probe_pairs(query)
    # The permutation tests take a while on a wide window: off the event loop.
    record = await asyncio.to_thread(probe_record, pairs)
    record |= {
        "model": window.model,
        "judge": gateway.settings.judge.model,
        "suite": gateway.settings.probe.suite,
        "since": window.since,
        "until": window.until,
    }
    return JSONResponse(record)


def probe_record(pairs: Sequence[ProbePair]) -> dict[str, Any]:
    """`findings`, `cells` and `samples` of `pairs`: the CLI's record but what the probe's
    configuration says. CPU-bound: call it off the event loop."""
    from guard.probe import findings  # scipy: loaded on the first findings asked for

    cells = probe_cells(pairs)
    dimensions: dict[str, list[str]] = {}
    for cell in cells:
        groups = dimensions.setdefault(cell.dimension, [])
        if cell.group not in groups:
            groups.append(cell.group)
    found = findings(cells, dimensions)
    return {
        "findings": [finding.to_json() for finding in found],
        "cells": [{**cell.to_json(), "answer": None} for cell in cells],
        "samples": len({pair.probe_id for pair in pairs}),
    }


def probe_cells(pairs: Sequence[ProbePair]) -> list[Cell]:
    """The answers of `pairs` as the probe's statistics read them: each probe's side `a`
    once, and every side `b`; sample n is the n-th probe."""
    cells: list[Cell] = []
    probes: dict[str, int] = {}
    for pair in pairs:
        sample = probes.get(pair.probe_id)
        if sample is None:
            sample = probes[pair.probe_id] = len(probes)
            cells.append(_cell(pair, pair.a, sample))
        cells.append(_cell(pair, pair.b, sample))
    return cells


def _cell(pair: ProbePair, side: ProbeSide, sample: int) -> Cell:
    return Cell(
        dimension=pair.dimension,
        group=side.group,
        template=0,
        sample=sample,
        prompt=pair.template,
        seed=0,
        answer="",  # answered; its text is not kept
        refusal=side.refusal is not None,
        refusal_source=side.refusal,
        bias_score=side.score,
        biased_opinions=side.biased,
        length=side.length,
    )
