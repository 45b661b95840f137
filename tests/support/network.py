"""What the test suite's socket guard (tests/conftest.py) raises for a connect that
leaves the loopback."""

from __future__ import annotations


class NetworkRefused(RuntimeError):
    pass
