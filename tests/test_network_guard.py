import socket

import httpx
import pytest

from tests.support.network import NetworkRefused


@pytest.mark.parametrize("address", [("1.1.1.1", 443), ("10.0.0.1", 80), ("2606:4700::1111", 443)])
def test_outbound_connections_are_refused(address: tuple[str, int]) -> None:
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(NetworkRefused):
        sock.connect(address)


def test_http_clients_cannot_reach_the_internet() -> None:
    with pytest.raises(NetworkRefused):
        httpx.get("http://93.184.215.14/", timeout=2)


def test_loopback_is_allowed() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.socket() as client:
            client.connect(server.getsockname())
