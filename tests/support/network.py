"""The test suite's socket guard: only loopback connects are allowed, any other raises
`NetworkRefused`. tests/conftest.py installs it for the whole session; the LiteLLM proxy's
launcher (tests/support/litellm_proxy.py) for good in its own process."""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The C base class that declares connect/connect_ex: the patched functions must
    # accept it as `self`, or they are not substitutes for the methods they replace.
    from _socket import socket as RawSocket


class NetworkRefused(RuntimeError):
    pass


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check(address: Any) -> None:
    if not isinstance(address, tuple):
        return  # AF_UNIX and friends
    host = address[0]
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        if host == "localhost":
            return
    raise NetworkRefused(f"tests may not reach the network: connect to {address!r} refused")


def guarded_connect(self: RawSocket, address: Any) -> None:
    _check(address)
    _real_connect(self, address)


def guarded_connect_ex(self: RawSocket, address: Any) -> int:
    _check(address)
    return _real_connect_ex(self, address)


def refuse_the_network() -> None:
    """Install the guard in this process: loopback only."""
    # Patching methods on the class is the point here, and mypy forbids it outright.
    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]


def allow_the_network() -> None:
    """Take the guard out again."""
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]
