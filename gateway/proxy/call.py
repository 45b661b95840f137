"""One scored request's context: what it is, and the steps every delivery shares
(judge the texts or say why not, conclude a streamed answer, record the outcome on
the access line, refuse)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from starlette.responses import JSONResponse, Response

from gateway.config import Policy
from gateway.domain import Mode, SkipReason
from gateway.observability.access import CallState
from gateway.proxy.decisions import Decision, Refusal, bias_headers, skip_headers
from gateway.proxy.exchange import UpstreamCall
from gateway.proxy.surfaces import Surface, SurfaceRequest
from gateway.proxy.tap import StreamTap
from gateway.runtime.quotas import KeyQuota
from gateway.runtime.resources import Gateway
from gateway.scoring.outcome import Outcome
from gateway.scoring.request import ScoreRequest, with_tool_arguments
from gateway.scoring.window_judge import WindowJudge
from gateway.wire.tools import ToolArgument

__all__ = ["How", "ScoredCall", "unjudged", "without_type"]

How = Literal["submit", "score", "spawn"]  # queue it, judge it now, judge it as a task


def unjudged(texts: list[str], *, readable: bool, strict: bool) -> SkipReason | None:
    """Why an answer's texts will not be judged, or None when they will be. `strict`
    (whole answers and enforce): an answer with a part the gateway could not read is
    not judged at all, since the client would see text the judge did not."""
    if strict and not readable:
        return "unreadable"
    if texts:
        return None
    return "no_text" if readable else "unreadable"


def without_type(headers: dict[str, str]) -> dict[str, str]:
    """Upstream headers for a body the gateway writes itself (its own content-type)."""
    return {name: value for name, value in headers.items() if name != "content-type"}


@dataclass(slots=True)
class ScoredCall:
    """One scored request, from the upstream call to the recorded outcome."""

    gateway: Gateway
    state: CallState
    surface: Surface
    parsed: SurfaceRequest
    policy: Policy
    mode: Mode
    job: ScoreRequest
    upstream_call: UpstreamCall
    quota: KeyQuota | None = None  # the key's place, given back once the answer is sent

    @property
    def sampled(self) -> bool:
        return bool(self.job.run_id)

    @property
    def enforce(self) -> bool:
        return self.mode == "enforce"

    def finish(self, outcome: Outcome) -> dict[str, str]:
        state = self.state
        state.bias_status, state.verdict = outcome.status, outcome.verdict
        state.score, state.run_id = outcome.score, outcome.run_id
        return bias_headers(outcome)

    def skip_headers(self, upstream_status: int) -> dict[str, str] | None:
        """Headers for a response that will not be scored, or None when it will be."""
        if self.mode == "off":
            self.state.bias_status = "off"
            return {}
        reason: SkipReason | None = None
        if not self.sampled:
            reason = "not_sampled"
        elif upstream_status >= 400:
            reason = "upstream_error"
        if reason is None:
            return None
        self.gateway.metrics.skipped.labels(reason).inc()
        self.state.bias_status = "skipped"
        return skip_headers(reason)

    def refuse(self, decision: Decision, headers: dict[str, str]) -> Response:
        assert isinstance(decision, Refusal)
        return JSONResponse(
            self.surface.error_body(decision),
            status_code=decision.status,
            headers=without_type(headers),
        )

    def tap(self, *, parse: bool = True) -> StreamTap:
        reader = self.surface.reader(max_chars=self.gateway.settings.judge.max_text_chars)
        return StreamTap(reader, parse=parse)

    def answer_texts(self, body: Mapping[str, Any]) -> list[str]:
        """The texts of a readable whole answer to judge: its text, then its tool-call
        arguments (`judge_tool_arguments`), which the job learns for the record."""
        return self._with_tools(self.surface.texts(body), self.surface.tool_arguments(body))

    def stream_texts(self, tap: StreamTap, *, partial: bool = False) -> list[str]:
        """The texts a tap collected, with its tool-call arguments as `answer_texts` has
        them; the job learns the response id, any truncation, and whether the stream
        ended before its end."""
        self.job = replace(
            self.job,
            response_id=tap.reader.facts().response_id,
            truncated=self.job.truncated or tap.reader.truncated,
            partial=partial,
        )
        return self._with_tools(tap.texts(), tap.reader.tool_arguments())

    def _with_tools(self, texts: list[str], arguments: list[ToolArgument]) -> list[str]:
        self.job, texts = with_tool_arguments(self.job, texts, arguments)
        return texts

    async def settle(self, tap: StreamTap, *, partial: bool) -> Outcome:
        """Queue a finished stream's text for scoring, or record why there is none."""
        texts = self.stream_texts(tap, partial=partial)
        return await self.judge(texts, readable=tap.readable, strict=False, how="submit")

    def window_judge(self) -> WindowJudge:
        """The scoring side of this answer, should it be judged in windows."""
        return WindowJudge(self.gateway.scoring, self.job)

    async def conclude(
        self, tap: StreamTap, windows: WindowJudge | None, *, partial: bool
    ) -> Outcome:
        """A streamed answer's outcome, recorded: from its judged `windows`, or judged whole
        when none was (an answer shorter than one window costs no more than without)."""
        texts = self.stream_texts(tap, partial=partial)
        if windows is None:
            outcome = await self.judge(texts, readable=tap.readable, strict=True, how="score")
        elif not tap.readable:
            outcome = self.gateway.scoring.skip(self.job, "unreadable")
        else:
            outcome = await windows.conclude(self.job, texts)
        self.finish(outcome)
        return outcome

    async def judge(self, texts: list[str], *, readable: bool, strict: bool, how: How) -> Outcome:
        """The one place an answer's texts are judged, queued, or skipped with the reason."""
        scoring = self.gateway.scoring
        reason = unjudged(texts, readable=readable, strict=strict)
        if reason is not None:
            return scoring.skip(self.job, reason)
        if how == "submit":
            return scoring.submit(self.job, texts)
        if how == "score":
            return await scoring.score(self.job, texts)
        # Shielded: a client that leaves now must not cancel the record.
        return await asyncio.shield(scoring.spawn(self.job, texts))
