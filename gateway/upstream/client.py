"""Calls to upstream models.

OpenAI-compatible upstreams are forwarded over one pooled aiohttp session,
which DESIGN.md §4 chose over httpx's own transport for its throughput
(`bench/`, the pass-through comparison).
Providers that need translation go through litellm, imported on first use.

All aiohttp and litellm exceptions are caught here and re-raised as
`gateway.errors.UpstreamError`s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from gateway.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from gateway.wire.sse import encode_event

__all__ = ["Target", "Upstream", "UpstreamResponse"]

# Response headers that describe the hop, not the content; never copied back to the client.
_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "date",
        "server",
        "proxy-authenticate",
        "trailer",
        "upgrade",
    }
)


_RENAMED = {"x-request-id": "x-upstream-request-id"}


@dataclass(frozen=True, slots=True)
class Target:
    """Where one request goes: an OpenAI-compatible `base_url`, or a litellm model."""

    base_url: str
    api_key: str | None
    timeout: float  # the whole call, to the last byte of a stream
    model: str | None = None  # the upstream's name for the model, when it differs
    litellm: str | None = None
    forward_client_auth: bool = False
    read_timeout: float | None = None  # the longest wait for one read; None: only `timeout`
    anthropic: bool = False  # an Anthropic-compatible server: `x-api-key`, `anthropic-version`
    version: str | None = None  # the `anthropic-version` sent when the client sends none
    # Enforced whole answers are asked for as streams (`prejudge: stream`, with usage).
    prejudge: bool = False
    route: str = "upstream"  # how the config names it: `upstream`, `anthropic`, an alias

    def auth_headers(self, client: Mapping[str, str]) -> dict[str, str]:
        """The credentials to send: the target's key, or the client's own when forwarded.

        Anthropic's SDK sends its key as `x-api-key` or (newer releases) as a
        bearer token; a forwarded key goes on under the name it came with.
        """
        if self.forward_client_auth:
            names = ("x-api-key", "authorization") if self.anthropic else ("authorization",)
            for name in names:
                if client.get(name):
                    return {name: client[name]}
            return {}
        if not self.api_key:
            return {}
        if self.anthropic:
            return {"x-api-key": self.api_key}
        return {"authorization": f"Bearer {self.api_key}"}


@dataclass(slots=True)
class UpstreamResponse:
    """An upstream answer: a whole `body`, or `chunks` to stream (then `aclose()` it)."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    chunks: AsyncIterator[bytes] | None = None
    _release: Any = field(default=None, repr=False)

    async def aclose(self) -> None:
        if self._release is not None:
            release, self._release = self._release, None
            release()

    async def read_all(self) -> bytes:
        """Read a streamed body to its end (used for upstream error bodies)."""
        if self.chunks is None:
            return self.body
        parts = [chunk async for chunk in self.chunks]
        await self.aclose()
        return b"".join(parts)


# An idle pooled connection is let go before the server would close it. Servers close
# idle ones after 5 s by default (uvicorn's --timeout-keep-alive, Node's
# server.keepAliveTimeout); aiohttp keeps them 15 s, so a request could be sent on a
# connection the server was closing, and fail "Server disconnected" (seen under load).
_KEEPALIVE_SECONDS = 4.0


class Upstream:
    """The pooled HTTP client to upstream models. Build it in the app's lifespan."""

    def __init__(self, *, connector_limit: int = 1000) -> None:
        self._connector_limit = connector_limit
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(
            limit=self._connector_limit,
            limit_per_host=0,
            ttl_dns_cache=300,
            keepalive_timeout=_KEEPALIVE_SECONDS,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            skip_auto_headers=("User-Agent",),
        )

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("Upstream.start() was not called")
        return self._session

    async def request(
        self,
        method: str,
        url: str | URL,
        *,
        body: bytes | None,
        headers: Mapping[str, str],
        timeout: float,
        stream: bool,
        read_timeout: float | None = None,
    ) -> UpstreamResponse:
        """Send one HTTP request; for `stream`, the body is left to be iterated.

        `timeout` bounds the whole call, a streamed body included; `read_timeout`
        also bounds each wait for data. A `URL` is sent exactly as built (no
        re-normalisation). Redirects are never followed: an upstream's 3xx goes
        back to the client as it is, so no request is ever sent somewhere the
        gateway did not route it.
        """
        client_timeout = aiohttp.ClientTimeout(
            total=timeout, sock_connect=timeout, sock_read=read_timeout
        )
        try:
            response = await self.session.request(
                method,
                url,
                data=body,
                headers=dict(headers),
                timeout=client_timeout,
                allow_redirects=False,
            )
            if not stream or response.status >= 400:
                try:
                    payload = await response.read()
                finally:
                    response.release()
                return UpstreamResponse(response.status, _copy_headers(response), payload)
        except TimeoutError as exc:
            raise UpstreamTimeout(f"upstream {_host(url)} timed out after {timeout:g}s") from exc
        except aiohttp.ClientPayloadError as exc:
            raise UpstreamProtocolError(f"upstream {_host(url)} sent a broken body") from exc
        except aiohttp.ClientError as exc:
            raise UpstreamUnavailable(f"upstream {_host(url)} unreachable: {exc}") from exc
        return UpstreamResponse(
            response.status,
            _copy_headers(response),
            chunks=_iter_chunks(response, url, timeout),
            _release=response.close,
        )

    async def call(
        self,
        target: Target,
        path: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        stream: bool,
    ) -> UpstreamResponse:
        """One model call: `path` (e.g. "/chat/completions") under the target's base URL.
        A litellm target serves chat completions only (the caller checks)."""
        if target.litellm is not None:
            return await _litellm_chat(target, body, stream=stream)
        url = target.base_url.rstrip("/") + path
        return await self.request(
            "POST",
            url,
            body=body,
            headers=headers,
            timeout=target.timeout,
            read_timeout=target.read_timeout,
            stream=stream,
        )


async def _iter_chunks(
    response: aiohttp.ClientResponse, url: str | URL, timeout: float
) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.content.iter_any():
            yield chunk
    except TimeoutError as exc:
        raise UpstreamTimeout(
            f"upstream {_host(url)} did not finish within {timeout:g}s or stalled"
        ) from exc
    except (aiohttp.ClientError, ConnectionError) as exc:
        unread = _unread(response.content)
        if unread:
            yield unread
        raise UpstreamProtocolError(f"upstream {_host(url)} broke off the stream") from exc
    finally:
        response.close()


def _unread(content: aiohttp.StreamReader) -> bytes:
    """The bytes an upstream sent before it broke off that no read had taken yet.

    aiohttp's reads raise a lost connection's error before they return the bytes
    buffered ahead of it (`StreamReader.readany` in aiohttp/streams.py), so a gateway
    slower than the upstream would lose them: neither forwarded nor judged. They are
    taken here without that check.
    """
    return content._read_nowait(-1)


def _copy_headers(response: aiohttp.ClientResponse) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in response.headers.items():
        lowered = name.lower()
        if lowered in _HOP_HEADERS:
            continue
        # The gateway sends its own x-request-id; the upstream's stays visible under its own name.
        headers[_RENAMED.get(lowered, lowered)] = value
    return headers


def _host(url: str | URL) -> str:
    return str(url).split("://", 1)[-1].split("/", 1)[0]


# -- litellm --------------------------------------------------------------------------


async def _litellm_chat(target: Target, body: bytes, *, stream: bool) -> UpstreamResponse:
    from guard.judge import import_litellm

    litellm = import_litellm()
    request = json.loads(body)
    request["model"] = target.litellm
    request["stream"] = stream
    if target.api_key:
        request["api_key"] = target.api_key
    if target.base_url:
        request["api_base"] = target.base_url
    request.setdefault("timeout", target.timeout)
    request["num_retries"] = 0
    request["max_retries"] = 0  # and none inside the provider SDK either
    try:
        result = await litellm.acompletion(**request)
    except Exception as exc:  # litellm raises provider-specific types; mapped below
        return _litellm_error(litellm, exc, target)
    headers = {"content-type": "text/event-stream" if stream else "application/json"}
    if not stream:
        return UpstreamResponse(200, headers, result.model_dump_json().encode())

    async def frames() -> AsyncIterator[bytes]:
        try:
            async for chunk in result:
                yield encode_event(chunk.model_dump_json())
        except Exception as exc:  # mid-stream provider failure
            raise UpstreamProtocolError(f"{target.litellm} broke off the stream: {exc}") from exc
        yield encode_event("[DONE]")

    return UpstreamResponse(200, {"content-type": "text/event-stream"}, chunks=frames())


def _caused_by_connection_failure(exc: BaseException) -> bool:
    """litellm reports a refused connection as a 500; the cause chain tells the truth."""
    current: BaseException | None = exc
    for _ in range(16):
        if current is None:
            return False
        if isinstance(current, ConnectionError | aiohttp.ClientConnectionError):
            return True
        if type(current).__name__ in {"APIConnectionError", "ConnectError"}:
            return True
        current = current.__cause__ or current.__context__
    return False


def _litellm_error(litellm: Any, exc: Exception, target: Target) -> UpstreamResponse:
    if isinstance(exc, litellm.Timeout):
        raise UpstreamTimeout(f"{target.litellm} timed out after {target.timeout:g}s") from exc
    status = getattr(exc, "status_code", None)
    if _caused_by_connection_failure(exc) or not isinstance(status, int):
        raise UpstreamUnavailable(f"{target.litellm} unreachable: {exc}") from exc
    message = str(getattr(exc, "message", exc))
    body = {"error": {"message": message, "type": type(exc).__name__, "param": None, "code": None}}
    return UpstreamResponse(status, {"content-type": "application/json"}, json.dumps(body).encode())
